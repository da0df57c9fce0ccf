/// Checked big-endian reads over a received datagram.
///
/// Every read returns nil when the bytes run out instead of trapping, so parsers can say "more
/// bytes needed" and callers turn that into ``ProtocolError/Code/truncated`` for a datagram, which
/// can never grow.
public struct ByteReader: Sendable {
    /// The bytes being read.
    public let bytes: [UInt8]
    /// Index of the next unread byte.
    public private(set) var readerIndex: Int
    /// Where reading stops: the end of `bytes`, or of the prefix being read.
    private let endIndex: Int

    /// Starts reading `bytes` at `start`.
    public init(_ bytes: [UInt8], start: Int = 0) {
        self.init(bytes, prefix: bytes.count, start: start)
    }

    /// Starts reading the first `count` bytes of `bytes` at `start`, as if nothing followed them.
    init(_ bytes: [UInt8], prefix count: Int, start: Int = 0) {
        precondition((0...bytes.count).contains(count), "the prefix lies within the bytes")
        self.bytes = bytes
        self.endIndex = count
        self.readerIndex = Swift.min(Swift.max(start, 0), count)
    }

    /// How many bytes are left.
    public var readableBytes: Int { endIndex - readerIndex }

    /// Reads a big-endian unsigned integer, or nil when too few bytes are left.
    public mutating func readInteger<T: FixedWidthInteger & UnsignedInteger>(as: T.Type = T.self) -> T? {
        let size = MemoryLayout<T>.size
        guard readableBytes >= size else { return nil }
        let value = bytes.withUnsafeBytes {
            T(bigEndian: $0.loadUnaligned(fromByteOffset: readerIndex, as: T.self))
        }
        readerIndex += size
        return value
    }

    /// Reads `count` bytes, or nil when fewer are left. A negative count yields nil.
    public mutating func readBytes(_ count: Int) -> [UInt8]? {
        readSlice(count).map { Array($0) }
    }

    /// The next `count` bytes in place, without a copy, or nil when fewer are left. A negative count
    /// yields nil.
    public mutating func readSlice(_ count: Int) -> ArraySlice<UInt8>? {
        guard count >= 0, readableBytes >= count else { return nil }
        let slice = bytes[readerIndex..<(readerIndex + count)]
        readerIndex += count
        return slice
    }

    /// Reads everything that is left.
    public mutating func readRemaining() -> [UInt8] {
        let slice = Array(bytes[readerIndex..<endIndex])
        readerIndex = endIndex
        return slice
    }

    /// Reads a big-endian IEEE 754 double, or nil when too few bytes are left.
    public mutating func readDouble() -> Double? {
        readInteger(as: UInt64.self).map { Double(bitPattern: $0) }
    }
}

/// Big-endian writes for building datagrams.
public struct ByteWriter: Sendable {
    /// The bytes written so far.
    public private(set) var bytes: [UInt8]

    /// Starts an empty buffer with room for `capacity` bytes.
    public init(capacity: Int = 64) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Appends a big-endian unsigned integer.
    public mutating func writeInteger<T: FixedWidthInteger & UnsignedInteger>(_ value: T) {
        // Byte by byte: appending a raw buffer instead costs more for these few bytes.
        let size = MemoryLayout<T>.size
        for offset in stride(from: size - 1, through: 0, by: -1) {
            bytes.append(UInt8(truncatingIfNeeded: value >> (offset * 8)))
        }
    }

    /// Appends raw bytes.
    public mutating func writeBytes(_ data: some Sequence<UInt8>) {
        bytes.append(contentsOf: data)
    }

    /// Appends a big-endian IEEE 754 double.
    public mutating func writeDouble(_ value: Double) {
        writeInteger(value.bitPattern)
    }
}

/// Where encoders write big-endian fields: a ``ByteWriter``, which grows as it goes, or a
/// ``FixedSizeByteWriter`` over memory already sized for everything written.
///
/// Fields are written one call each: a variadic writer over a parameter pack is not specialized,
/// and each of its writes went through the integer protocols' witnesses.
protocol ByteSink {
    /// Appends a big-endian unsigned integer.
    mutating func writeInteger<T: FixedWidthInteger & UnsignedInteger>(_ value: T)
    /// Appends raw bytes.
    mutating func writeBytes(_ data: some Sequence<UInt8>)
}

extension ByteWriter: ByteSink {}

/// Big-endian writes into memory sized beforehand for exactly what is written: a sealed datagram,
/// whose frames are encoded where they will be encrypted. Each write is a store, with no array to
/// check for uniqueness and room, byte by byte, as ``ByteWriter`` must.
struct FixedSizeByteWriter: ByteSink {
    private let buffer: UnsafeMutableRawBufferPointer
    /// How many bytes have been written.
    private(set) var count = 0

    /// Writes into `buffer` from its start.
    init(_ buffer: UnsafeMutableRawBufferPointer) { self.buffer = buffer }

    /// Whether every byte of the buffer has been written.
    var isFull: Bool { count == buffer.count }

    mutating func writeInteger<T: FixedWidthInteger & UnsignedInteger>(_ value: T) {
        let size = MemoryLayout<T>.size
        precondition(size <= buffer.count - count, "a write past the end of the sized buffer")
        buffer.storeBytes(of: value.bigEndian, toByteOffset: count, as: T.self)
        count += size
    }

    mutating func writeBytes(_ data: some Sequence<UInt8>) {
        let copied = data.withContiguousStorageIfAvailable { source in
            precondition(source.count <= buffer.count - count, "a write past the end of the sized buffer")
            UnsafeMutableRawBufferPointer(rebasing: buffer[count..<(count + source.count)])
                .copyMemory(from: UnsafeRawBufferPointer(source))
            return source.count
        }
        if let copied {
            count += copied
        } else {
            for byte in data { writeInteger(byte) }
        }
    }
}

extension ByteReader {
    // The field names are autoclosures: a diagnostic is built only when a read fails, not for every
    // field of every datagram that parses.

    /// Reads an integer or throws ``ProtocolError/Code/truncated`` naming `field`.
    mutating func require<T: FixedWidthInteger & UnsignedInteger>(
        _ field: @autoclosure () -> String, as type: T.Type
    ) throws(ProtocolError) -> T {
        guard let value = readInteger(as: type) else {
            throw ProtocolError(
                .truncated, "\(field()): needs \(MemoryLayout<T>.size) bytes, \(readableBytes) left")
        }
        return value
    }

    /// Reads `count` bytes or throws ``ProtocolError/Code/truncated`` naming `field`.
    mutating func requireBytes(_ field: @autoclosure () -> String, count: Int) throws(ProtocolError)
        -> [UInt8]
    {
        Array(try requireSlice(field(), count: count))
    }

    /// The next `count` bytes in place, or throws ``ProtocolError/Code/truncated`` naming `field`.
    mutating func requireSlice(_ field: @autoclosure () -> String, count: Int) throws(ProtocolError)
        -> ArraySlice<UInt8>
    {
        guard let value = readSlice(count) else {
            throw ProtocolError(.truncated, "\(field()): needs \(count) bytes, \(readableBytes) left")
        }
        return value
    }

    /// Reads a finite double or throws (truncated, or malformed for NaN and infinities).
    mutating func requireFiniteDouble(_ field: @autoclosure () -> String) throws(ProtocolError) -> Double {
        guard let value = readDouble() else {
            throw ProtocolError(.truncated, "\(field()): needs 8 bytes, \(readableBytes) left")
        }
        guard value.isFinite else { throw ProtocolError(.malformed, "\(field()): not a finite number") }
        return value
    }

    /// Throws ``ProtocolError/Code/trailingBytes`` unless everything was read.
    func requireEnd(_ message: @autoclosure () -> String) throws(ProtocolError) {
        guard readableBytes == 0 else {
            throw ProtocolError(.trailingBytes, "\(message()): \(readableBytes) bytes after the last field")
        }
    }
}

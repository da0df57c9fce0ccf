import Foundation

/// Where a device is and which way it points, in a room frame shared by all devices.
///
/// `x` and `y` are centimetres; `heading` is degrees, 0° along +x, counter-clockwise positive. The
/// heading is the direction the device's ranging antenna faces (the top edge of the phone).
///
/// The components are read-only so that every pose passes through the initialiser, which keeps them
/// finite and the heading normalized: the wire encoding relies on both.
public struct Pose: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// Position along the room's x axis, in centimetres.
    public let x: Double
    /// Position along the room's y axis, in centimetres.
    public let y: Double
    /// Facing direction in degrees, normalized to `[0, 360)`.
    public let heading: Double

    /// The largest |x| or |y| that local input (flags, scenario files, arrow keys) may give a pose:
    /// 1 km, well inside what the wire encoding can carry.
    public static let roomLimit = 100_000.0

    /// Creates a pose; the heading is normalized to `[0, 360)`.
    public init(x: Double, y: Double, heading: Double) {
        precondition(x.isFinite && y.isFinite && heading.isFinite, "pose components must be finite")
        self.x = x
        self.y = y
        self.heading = Self.normalizedDegrees(heading)
    }

    /// A pose whose components are already finite and whose heading is already in `[0, 360)`, as a
    /// decoded one's are: normalizing it again, a floating-point remainder, would change nothing.
    private init(x: Double, y: Double, normalizedHeading heading: Double) {
        self.x = x
        self.y = y
        self.heading = heading
    }

    /// Straight-line distance to `other`, in centimetres.
    public func distance(to other: Pose) -> Double {
        ((other.x - x) * (other.x - x) + (other.y - y) * (other.y - y)).squareRoot()
    }

    /// Absolute angle, in `[0, 180]` degrees, between this device's heading and the direction to
    /// `other`: 0 when pointing straight at it. Two poses at the same spot give 0.
    public func bearing(to other: Pose) -> Double {
        let dx = other.x - x
        let dy = other.y - y
        guard dx != 0 || dy != 0 else { return 0 }
        let direction = atan2(dy, dx) * 180 / Double.pi
        return Self.angularDifference(direction, heading)
    }

    /// This pose moved `distance` centimetres along its heading (backwards when negative).
    public func moved(forward distance: Double) -> Pose {
        let radians = heading * Double.pi / 180
        return Pose(x: x + distance * cos(radians), y: y + distance * sin(radians), heading: heading)
    }

    /// This pose turned by `degrees`, counter-clockwise when positive.
    public func turned(by degrees: Double) -> Pose {
        Pose(x: x, y: y, heading: heading + degrees)
    }

    /// Whether both coordinates are within ``roomLimit``.
    public var isInsideRoom: Bool {
        abs(x) <= Self.roomLimit && abs(y) <= Self.roomLimit
    }

    /// A pose facing `other` exactly, at this pose's position.
    public func facing(_ other: Pose) -> Pose {
        let dx = other.x - x
        let dy = other.y - y
        guard dx != 0 || dy != 0 else { return self }
        return Pose(x: x, y: y, heading: atan2(dy, dx) * 180 / Double.pi)
    }

    public var description: String {
        String(format: "(%.1f cm, %.1f cm, %.1f deg)", x, y, heading)
    }

    /// `degrees` wrapped into `[0, 360)`.
    public static func normalizedDegrees(_ degrees: Double) -> Double {
        let wrapped = degrees.truncatingRemainder(dividingBy: 360)
        let positive = wrapped < 0 ? wrapped + 360 : wrapped
        return positive >= 360 ? 0 : positive  // -1e-20 + 360 rounds to 360.
    }

    /// The smallest absolute angle between two directions, in `[0, 180]`.
    public static func angularDifference(_ first: Double, _ second: Double) -> Double {
        let difference = normalizedDegrees(first - second)
        return difference > 180 ? 360 - difference : difference
    }

    /// The signed turn in `(-180, 180]` that takes direction `from` to direction `to` the short way.
    public static func shortestTurn(from: Double, to: Double) -> Double {
        let difference = normalizedDegrees(to - from)
        return difference > 180 ? difference - 360 : difference
    }
}

/// The pose as carried in ranging frames: 8 bytes, big-endian.
///
/// | size | field                                                              |
/// |------|--------------------------------------------------------------------|
/// | 3    | x in millimetres, signed 24-bit two's complement, ±8,388,607       |
/// | 3    | y in millimetres, the same                                         |
/// | 2    | heading in hundredths of a degree, 0...35999                       |
///
/// Millimetres keep the quantization error (at most 0.5 mm per axis) far below the ranging noise.
/// The range is symmetric: the one 24-bit pattern beyond it, 0x800000 (−8,388,608 mm), is malformed,
/// so every pose that decodes encodes again to the same 8 bytes.
extension Pose {
    /// The encoded size in bytes.
    public static let encodedLength = 8
    /// The largest |x| or |y| that can be encoded, in centimetres.
    public static let encodableCoordinateLimit = 838_860.7
    /// The 24-bit pattern with no positive counterpart, refused by the decoder.
    static let unpairedNegative: UInt32 = 0x80_0000

    /// The 8-byte encoding. The coordinates must be within `encodableCoordinateLimit`.
    public func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: Self.encodedLength)
        encode(into: &writer)
        return writer.bytes
    }

    /// Appends the 8-byte encoding to `writer`. The coordinates must be within
    /// `encodableCoordinateLimit`.
    public func encode(into writer: inout ByteWriter) {
        write(to: &writer)
    }

    /// Appends the 8-byte encoding to `writer`, whichever kind it is (``encode(into:)`` for any
    /// sink).
    func write(to writer: inout some ByteSink) {
        precondition(
            abs(x) <= Self.encodableCoordinateLimit && abs(y) <= Self.encodableCoordinateLimit,
            "pose outside the encodable room")
        func writeMillimetres(_ coordinate: Double) {
            let raw = UInt32(bitPattern: Int32((coordinate * 10).rounded()))
            writer.writeInteger(UInt8(truncatingIfNeeded: raw >> 16))
            writer.writeInteger(UInt16(truncatingIfNeeded: raw))
        }
        writeMillimetres(x)
        writeMillimetres(y)
        // Rounding 359.996° gives 36000, which is 0°.
        writer.writeInteger(UInt16(Int((heading * 100).rounded()) % 36_000))
    }

    /// Why a received pose was rejected.
    public struct DecodingError: Error, Equatable, Sendable, CustomStringConvertible {
        /// The kind of problem.
        public enum Code: String, Equatable, Sendable {
            /// Fewer than 8 bytes.
            case truncated
            /// More than 8 bytes.
            case trailingBytes
            /// A coordinate is the unpaired 0x800000, or the heading is not below 360°.
            case malformed
        }

        /// The kind of problem.
        public let code: Code
        /// One line saying what was wrong.
        public let diagnostic: String

        public var description: String { diagnostic }
    }

    /// Decodes the 8-byte encoding from a peer; throws for a wrong length, a coordinate of 0x800000 or
    /// a heading out of range.
    public init(decoding bytes: some Collection<UInt8>) throws(DecodingError) {
        let count = bytes.count
        guard count == Self.encodedLength else {
            throw DecodingError(
                code: count < Self.encodedLength ? .truncated : .trailingBytes,
                diagnostic: "pose: needs \(Self.encodedLength) bytes, got \(count)")
        }
        // The eight bytes as one big-endian integer: x in the top 24 bits, then y, then the heading;
        // no array for a pose in every RANGING frame, and one load when the bytes lie together.
        var raw: UInt64 = 0
        if let word = bytes.withContiguousStorageIfAvailable({
            UInt64(bigEndian: UnsafeRawBufferPointer($0).loadUnaligned(as: UInt64.self))
        }) {
            raw = word
        } else {
            for byte in bytes { raw = raw << 8 | UInt64(byte) }
        }
        func signed24(_ shift: UInt64, _ axis: String) throws(DecodingError) -> Double {
            let unsigned = UInt32(truncatingIfNeeded: raw >> shift) & 0xFF_FFFF
            guard unsigned != Self.unpairedNegative else {
                throw DecodingError(
                    code: .malformed,
                    diagnostic: "pose: \(axis) is 0x800000, outside the symmetric range ±8388607 mm")
            }
            // Shift the 24-bit value to the top and back down to extend its sign.
            return Double(Int32(bitPattern: unsigned << 8) >> 8) / 10
        }
        let hundredths = UInt16(truncatingIfNeeded: raw)
        guard hundredths < 36_000 else {
            throw DecodingError(
                code: .malformed,
                diagnostic: "pose: heading \(hundredths) hundredths of a degree is not below 36000")
        }
        self.init(
            x: try signed24(40, "x"), y: try signed24(16, "y"), normalizedHeading: Double(hundredths) / 100)
    }
}

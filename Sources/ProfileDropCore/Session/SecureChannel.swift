import ProfileDropNoise

/// The encrypted unicast channel of one exchange session after the Noise handshake.
///
/// Each datagram is sealed with the sender's transport key at nonce = packet number, with the
/// cleartext header as associated data. Received packets pass the replay window, then
/// authentication, and only then touch any state.
struct SecureChannel {
    let sessionID: UInt64
    let peerAddress: PeerAddress
    private let sender: CipherState
    private let receiver: CipherState
    private(set) var nextPacketNumber: UInt64 = 0
    private(set) var replay = ReplayWindow()
    /// Where packets are opened, one after another, and their frames decoded from: as long as the
    /// longest plaintext so far. No array per packet; a chunk frame still holding a slice of it when
    /// the next packet is opened makes that one open into a copy.
    private var plaintextBuffer: [UInt8] = []

    init(sessionID: UInt64, peerAddress: PeerAddress, transport: NoiseTransport) {
        self.sessionID = sessionID
        self.peerAddress = peerAddress
        self.sender = transport.sender
        self.receiver = transport.receiver
    }

    /// Seals `frames` into one datagram for the peer.
    mutating func seal(_ frames: [Frame]) -> OutgoingDatagram {
        seal(frames.span)
    }

    /// Seals `frames` into one datagram for the peer. A span, read by index, lends each frame where
    /// it lies: iterating a collection copies every frame and retains its payload.
    mutating func seal(_ frames: Span<Frame>) -> OutgoingDatagram {
        let packetNumber = nextPacketNumber
        nextPacketNumber += 1
        let headerSize = WireConstants.secureHeaderSize
        var payloadLength = 0
        for index in frames.indices { payloadLength += frames[index].encodedSize }
        precondition(
            payloadLength > 0 && payloadLength <= WireConstants.maxFramePayload, "frame payload size")
        let ciphertextLength = payloadLength + WireConstants.tagSize
        let size = headerSize + ciphertextLength
        // Built on the stack and copied once into an array reserved at its exact size: most packets
        // are a few dozen bytes, and a buffer for the largest datagram is too big for the
        // allocator's fast path. (`[UInt8](byteCount:)` zeroes its array through a general append
        // first, which at these sizes costs more than the copy: 11 k instructions per exchange.)
        // The header and the frames are stored in place and sealed where they lie: no array grows
        // under them byte by byte.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(size)
        withUnsafeTemporaryAllocation(byteCount: size, alignment: 8) { datagram in
            let header = UnsafeMutableRawBufferPointer(rebasing: datagram[..<headerSize])
            SecurePacket.writeHeader(
                into: header, sessionID: sessionID, packetNumber: packetNumber,
                ciphertextLength: ciphertextLength)
            let payload = UnsafeMutableRawBufferPointer(
                rebasing: datagram[headerSize..<(headerSize + payloadLength)])
            var writer = FixedSizeByteWriter(payload)
            for index in frames.indices { frames[index].write(to: &writer) }
            precondition(writer.isFull, "frames encode to their encoded size")
            do {
                // In place: libsodium allows the ciphertext to start where the plaintext does.
                try sender.encrypt(
                    nonce: packetNumber, ad: UnsafeRawBufferPointer(header),
                    plaintext: UnsafeRawBufferPointer(payload),
                    into: UnsafeMutableRawBufferPointer(rebasing: datagram[headerSize...]))
            } catch {
                // Only nonce 2^64-1 or an oversized payload can fail; both are excluded above.
                preconditionFailure("sealing a packet failed")
            }
            bytes.append(contentsOf: UnsafeRawBufferPointer(datagram))
        }
        return OutgoingDatagram(destination: .unicast(peerAddress), bytes: bytes)
    }

    /// Authenticates and decrypts `packet`, decodes its frames, and records its number.
    /// - Throws: `.replayed`/`.tooOld` (window), `.authenticationFailed` (forged or corrupted), or a
    ///   malformed payload's error, without changing anything, so the session opens packets on its
    ///   own channel rather than on a copy.
    mutating func open(_ packet: SecurePacket) throws(ProtocolError) -> [Frame] {
        var frames: [Frame] = []
        try open(packet, appendingTo: &frames)
        return frames
    }

    /// Opens `packet` like ``open(_:)``, appending its frames to `frames`, which a failure may
    /// leave holding some of them.
    mutating func open(_ packet: SecurePacket, appendingTo frames: inout [Frame]) throws(ProtocolError) {
        try replay.check(packet.packetNumber)
        let length = packet.ciphertext.count - WireConstants.tagSize
        if length > plaintextBuffer.count {
            plaintextBuffer.append(contentsOf: repeatElement(0, count: length - plaintextBuffer.count))
        }
        // The header is rebuilt on the stack as associated data: no array per packet.
        let opened = withUnsafeTemporaryAllocation(byteCount: WireConstants.secureHeaderSize, alignment: 8) {
            header in
            packet.writeHeader(into: header)
            return packet.ciphertext.withUnsafeBytes { ciphertext in
                plaintextBuffer.withUnsafeMutableBytes { buffer in
                    // Too short for a tag fails as a packet that does not authenticate.
                    guard length >= 0 else { return false }
                    do {
                        try receiver.decrypt(
                            nonce: packet.packetNumber, ad: UnsafeRawBufferPointer(header),
                            ciphertext: ciphertext,
                            into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<length]))
                        return true
                    } catch {
                        return false
                    }
                }
            }
        }
        guard opened else {
            throw ProtocolError(.authenticationFailed, "packet \(packet.packetNumber) failed authentication")
        }
        try Frame.decodeAll(plaintextBuffer, prefix: length, appendingTo: &frames)
        replay.record(packet.packetNumber)
    }
}

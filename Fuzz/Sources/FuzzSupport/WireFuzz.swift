import ProfileDropCore

/// The wire decoder fuzz target: one input is one received datagram, and also one decrypted
/// SECURE payload, one handshake-parameter block, one card encoding and (its first 8 bytes) one
/// pose. Whatever any decoder accepts must encode again to exactly the bytes it came from.
public enum WireFuzz {
    /// Decodes `bytes` every way a peer's bytes are decoded and checks that accepted input
    /// round-trips exactly and rejected input is rejected consistently.
    public static func run(_ bytes: [UInt8]) -> FuzzFindings {
        var findings = FuzzFindings()
        checkDatagram(bytes, &findings)
        checkFrames(bytes, &findings)
        checkParameters(bytes, &findings)
        checkCard(bytes, &findings)
        checkPose(bytes, &findings)
        return findings
    }

    static func checkDatagram(_ bytes: [UInt8], _ findings: inout FuzzFindings) {
        var streaming = ByteReader(bytes)
        let streamed: Result<Packet?, ProtocolError> = Result { () throws(ProtocolError) in
            try streaming.readPacket()
        }
        do {
            let packet = try Packet(datagram: bytes)
            findings.check(packet.encoded() == bytes, "datagram does not re-encode to its bytes: \(packet)")
            findings.check(
                (try? streamed.get()) == packet && streaming.readableBytes == 0,
                "streaming read disagrees with the datagram parse")
            if case .secure(let secure) = packet {
                findings.check(
                    (WireConstants.tagSize...SecurePacket.maxCiphertext).contains(secure.ciphertext.count),
                    "accepted a ciphertext of \(secure.ciphertext.count) bytes")
                findings.check(secure.header == Array(bytes.prefix(22)), "SECURE header is not the prefix")
            }
        } catch {
            if bytes.count > WireConstants.maxDatagramSize {
                findings.check(error.code == .oversized, "long datagram rejected as \(error.code.name)")
                return
            }
            switch streamed {
            case .success(nil):
                findings.check(error.code == .truncated, "incomplete datagram rejected as \(error.code.name)")
            case .success(.some):
                findings.check(
                    error.code == .trailingBytes, "packet plus bytes rejected as \(error.code.name)")
            case .failure(let streamError):
                findings.check(streamError == error, "streaming error \(streamError) differs from \(error)")
            }
        }
    }

    static func checkFrames(_ bytes: [UInt8], _ findings: inout FuzzFindings) {
        do {
            let frames = try Frame.decodeAll(bytes)
            findings.check(!frames.isEmpty, "decoded an empty frame list")
            findings.check(Frame.encode(frames) == bytes, "frames do not re-encode to their bytes")
            for case .cardSack(let sack) in frames {
                // Any index must be answerable without trapping.
                for index in [-1, 0, Int(sack.cumulative), Int(sack.cumulative) + 255, Int.max / 2] {
                    _ = sack.covers(index)
                }
            }
            for case .consent(_, let offer?) in frames {
                findings.check(
                    offer.chunkCount >= 1 && offer.chunkCount <= Int(UInt16.max),
                    "accepted an offer of \(offer.chunkCount) chunks")
            }
        } catch {
            if bytes.isEmpty {
                findings.check(error.code == .malformed, "empty payload rejected as \(error.code.name)")
            }
            // The incremental reader must stop at the same place: a valid prefix, then the error.
            var reader = ByteReader(bytes)
            var streamError: ProtocolError?
            var incomplete = false
            while reader.readableBytes > 0 {
                do {
                    guard try reader.readFrame() != nil else {
                        incomplete = true
                        break
                    }
                } catch {
                    streamError = error
                    break
                }
            }
            if incomplete {
                findings.check(error.code == .truncated, "incomplete frame rejected as \(error.code.name)")
            } else if let streamError {
                findings.check(
                    streamError == error, "streaming frame error \(streamError) differs from \(error)")
            } else {
                findings.check(bytes.isEmpty, "frames rejected whole but read one by one")
            }
        }
    }

    static func checkParameters(_ bytes: [UInt8], _ findings: inout FuzzFindings) {
        guard let parameters = try? HandshakeParameters(decoding: bytes) else { return }
        findings.check(parameters.encoded() == bytes, "handshake parameters do not re-encode")
        findings.check(parameters.receiveWindow > 0, "accepted a zero receive window")
    }

    static func checkCard(_ bytes: [UInt8], _ findings: inout FuzzFindings) {
        guard let card = try? ProfileCard(decoding: bytes) else { return }
        findings.check(card.encoded() == bytes, "a decoded card does not re-encode to its bytes")
    }

    static func checkPose(_ bytes: [UInt8], _ findings: inout FuzzFindings) {
        guard let pose = try? Pose(decoding: bytes.prefix(Pose.encodedLength)) else { return }
        findings.check(
            pose.encoded() == Array(bytes.prefix(Pose.encodedLength)), "pose \(pose) does not re-encode")
    }
}

import ProfileDropCapture
import ProfileDropCore
import Testing

/// One packet per input (PROTOCOL.md 6.3): what a session sends in answer to one input (a datagram,
/// a timer, a decision) goes out as one SECURE packet, seen in the happy path's decrypted frames.
struct PacketCoalescingTests {
    /// The SECURE packets each device sent, with their frames, grouped by the input that caused
    /// them; from golden capture `name`, replayed.
    static func packetsByInput(_ name: String) throws -> [String: [[[Frame]]]] {
        guard let golden = GoldenCaptures.all.first(where: { $0.name == name }) else {
            Issue.record("no golden capture \(name)")
            return [:]
        }
        let capture = try CaptureFile.read(path: golden.capturePath)
        var byDevice: [String: [[[Frame]]]] = [:]
        for device in capture.devices {
            var inputs: [[[Frame]]] = []
            let result = try Replay.run(device) { entry in
                switch entry.kind {
                case .input: inputs.append([])
                case .sent(let datagram):
                    guard datagram.bytes.count > 3, datagram.bytes[3] == PacketType.secure.rawValue else {
                        return
                    }
                    guard let frames = entry.frames, !inputs.isEmpty else {
                        Issue.record("\(entry.device): a SECURE packet not decrypted, or before any input")
                        return
                    }
                    inputs[inputs.count - 1].append(frames)
                case .start, .event: break
                }
            }
            #expect(result == .identical(datagrams: device.outbound.count))
            byDevice[device.record.name] = inputs
        }
        #expect(byDevice.count == 2)
        return byDevice
    }

    @Test func everyInputOfACleanExchangeSendsAtMostOnePacket() throws {
        for (device, inputs) in try Self.packetsByInput("happy-path").sorted(by: { $0.key < $1.key }) {
            let crowded = inputs.filter { $0.count > 1 }
            #expect(crowded.isEmpty, "\(device): \(crowded.map { $0.map { $0.map(\.type) } })")
            // Not a run that sent nothing: ranging rounds, the card and CLOSE or its answer.
            #expect(inputs.filter { !$0.isEmpty }.count > 10)
        }
    }

    @Test func aSmallCardTravelsOnceWithTheFactsInFrontOfIt() throws {
        for (device, inputs) in try Self.packetsByInput("happy-path").sorted(by: { $0.key < $1.key }) {
            let packets = inputs.joined()
            let withChunks = packets.filter { $0.contains { $0.type == .cardChunk } }
            // The card is one chunk, sent once: a chunk that arrived beside the CONSENT that began
            // the peer's transfer was kept, not dropped and probed for again.
            #expect(withChunks.count == 1, "\(device) sent \(withChunks.count) packets with chunks")
            guard let packet = withChunks.first else { continue }
            let types = packet.map(\.type)
            #expect(types.contains(.bond), "\(device): \(types)")
            #expect(types.contains(.receipt), "\(device): \(types)")
            #expect(types.last == .cardChunk, "\(device): \(types)")
        }
    }

    @Test func aTimeoutsTwoProbesTravelInTwoPackets() throws {
        var probedInputs = 0
        for (device, inputs) in try Self.packetsByInput("lossy-link").sorted(by: { $0.key < $1.key }) {
            for packets in inputs {
                let chunkCounts = packets.map { $0.filter { $0.type == .cardChunk }.count }
                #expect(chunkCounts.allSatisfy { $0 <= 1 }, "\(device): \(chunkCounts) chunks per packet")
                if chunkCounts.filter({ $0 == 1 }).count >= 2 { probedInputs += 1 }
            }
        }
        // The lossy run lost a chunk and probed for it: one input sent two packets with a chunk.
        #expect(probedInputs >= 1)
    }
}

import Foundation
import ProfileDropCapture
import ProfileDropCore
import Testing

/// The replay engine against damaged captures.
struct ReplayTests {
    /// The golden happy-path capture, with the last tag byte of one of alice's SECURE payloads
    /// flipped (and its UDP checksum with it: a packet that is not framed as a capture frames it
    /// makes the file malformed).
    @Test func flippedOutboundByteIsReportedAsDivergence() throws {
        let path = GoldenCaptures.all[0].capturePath
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let capture = try CaptureFile(bytes: bytes)
        let alice = capture.devices[0]
        let victimIndex = try #require(
            alice.outbound.firstIndex { $0.payload.count > 30 && $0.payload[3] == 7 })
        let datagram = alice.outbound[victimIndex]
        let victim = datagram.payload
        let frame = IPv4UDP.frame(victim, from: datagram.source, to: datagram.destination)
        let offset = try #require(firstOffset(of: frame, in: bytes))
        var changed = victim
        changed[changed.count - 1] ^= 0x80
        let reframed = IPv4UDP.frame(changed, from: datagram.source, to: datagram.destination)
        bytes.replaceSubrange(offset..<(offset + frame.count), with: reframed)
        let damaged = try CaptureFile(bytes: bytes)
        let result = try Replay.run(damaged.devices[0])
        guard case .diverged(let divergence) = result else {
            Issue.record("replay did not notice the flipped byte: \(result)")
            return
        }
        #expect(divergence.device == "alice")
        #expect(divergence.reason.contains("datagram \(victimIndex) "))
        let recorded = try #require(divergence.recorded)
        let replayed = try #require(divergence.replayed)
        #expect(replayed == victim)
        #expect(recorded.count == victim.count && recorded.last == victim.last.map { $0 ^ 0x80 })
        // The other device never sent that datagram, so it still replays identically.
        #expect(
            try Replay.run(damaged.devices[1]) == .identical(datagrams: damaged.devices[1].outbound.count))
    }

    @Test func everyTruncationOfASmallCaptureIsAnError() throws {
        var run = try TwoDeviceRun(options: CaptureOptions(keylog: true))
        run.run(until: Instant.zero + .milliseconds(400))
        let bytes = run.recorder.fileBytes()
        #expect(bytes.count < 8192)
        let full = try CaptureFile(bytes: bytes)
        for device in full.devices {
            let key = TwoDeviceRun.staticKey(Int(device.record.interfaceID))
            #expect(try Replay.run(device, staticKey: key) == .identical(datagrams: device.outbound.count))
        }
        for length in 0..<bytes.count {
            do {
                let capture = try CaptureFile(bytes: Array(bytes[0..<length]))
                for device in capture.devices {
                    _ = try Replay.run(
                        device, staticKey: TwoDeviceRun.staticKey(Int(device.record.interfaceID)))
                }
                Issue.record("a capture cut at \(length) of \(bytes.count) bytes replayed")
            } catch {
                #expect(!error.diagnostic.isEmpty && !error.diagnostic.contains("\n"))
            }
        }
    }

    /// A single-bit flip anywhere in a small capture ends in a typed error, a divergence, or an
    /// identical replay (bits replay does not read: padding, timestamps, inbound copies), never a
    /// trap; and every flip inside a recorded outbound datagram is caught.
    @Test func everyBitFlipIsHandled() throws {
        var run = try TwoDeviceRun(options: CaptureOptions(keylog: true))
        run.run(until: Instant.zero + .milliseconds(400))
        let bytes = run.recorder.fileBytes()
        let payloads = outboundPayloadOffsets(bytes)
        #expect(payloads.count > 100)
        // Replay time grows with the file, so a sample: every 7th payload byte, every 13th other.
        let positions = bytes.indices.filter { payloads.contains($0) ? $0 % 7 == 0 : $0 % 13 == 0 }
        for position in positions {
            var damaged = bytes
            damaged[position] ^= 0x01
            var caught = false
            do {
                let capture = try CaptureFile(bytes: damaged)
                for device in capture.devices {
                    let key = TwoDeviceRun.staticKey(Int(device.record.interfaceID) % 2)
                    if case .diverged = try Replay.run(device, staticKey: key) { caught = true }
                }
            } catch {
                #expect(!error.diagnostic.contains("\n"))
                caught = true
            }
            if payloads.contains(position) { #expect(caught, "flip at \(position) went unnoticed") }
        }
    }

    /// Offsets of the UDP payload bytes of outbound Enhanced Packet Blocks, found by walking the
    /// little-endian blocks this writer produces.
    private func outboundPayloadOffsets(_ bytes: [UInt8]) -> Set<Int> {
        func u32(_ offset: Int) -> Int {
            (0..<4).reduce(0) { $0 | Int(bytes[offset + $1]) << (8 * $1) }
        }
        var offsets: Set<Int> = []
        var block = 0
        while block + 12 <= bytes.count {
            let length = u32(block + 4)
            if u32(block) == 6 {
                let captured = u32(block + 20)
                let options = block + 28 + (captured + 3) / 4 * 4
                if u32(options) & 0xFFFF == 2, u32(options + 4) == 2 {
                    offsets.formUnion((block + 28 + IPv4UDP.headerLength)..<(block + 28 + captured))
                }
            }
            block += length
        }
        return offsets
    }

    @Test func missingEndRecordMeansCutShort() throws {
        var run = try TwoDeviceRun(options: CaptureOptions(keylog: true))
        run.run(until: Instant.zero + .milliseconds(400))
        let blocks = try PcapngReader.read(run.recorder.fileBytes())
        var writer = PcapngWriter()
        // Drop the two end records, which are the last blocks.
        for block in blocks.dropFirst().dropLast(2) { writer.append(block) }
        let capture = try CaptureFile(bytes: writer.bytes)
        #expect(throws: CaptureError.self) {
            try Replay.run(capture.devices[0], staticKey: TwoDeviceRun.staticKey(0))
        }
    }

    private func firstOffset(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        return (0...(haystack.count - needle.count)).first {
            haystack[$0..<($0 + needle.count)].elementsEqual(needle)
        }
    }
}

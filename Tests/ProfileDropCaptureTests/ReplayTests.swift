import Foundation
import ProfileDropCapture
import ProfileDropCore
import Testing

/// The replay engine against damaged captures.
struct ReplayTests {
    /// The golden happy-path capture, with the first byte that differs between two SECURE payloads
    /// of alice's flipped.
    @Test func flippedOutboundByteIsReportedAsDivergence() throws {
        let path = GoldenCaptures.all[0].capturePath
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let capture = try CaptureFile(bytes: bytes)
        let alice = capture.devices[0]
        let victimIndex = try #require(
            alice.outbound.firstIndex { $0.payload.count > 30 && $0.payload[3] == 7 })
        let victim = alice.outbound[victimIndex].payload
        let offset = try #require(firstOffset(of: victim, in: bytes))
        let flipped = offset + victim.count - 1  // the last tag byte
        bytes[flipped] ^= 0x80
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

import FuzzDriver
import FuzzSupport
import ProfileDropCapture
import ProfileDropCore

#if canImport(Glibc)
    import Glibc
#endif

/// Captures with more recorded inputs than this are parsed but not replayed (FUZZ_REPLAY_INPUTS).
let replayInputLimit = getenv("FUZZ_REPLAY_INPUTS").flatMap { Int(String(cString: $0)) } ?? 300

/// The capture reader fuzz target: one input is one pcapng file. Beyond "no trap": every rejection
/// is a ``CaptureError``; what the reader accepts, the writer writes back into something the reader
/// reads again identically; and an accepted capture replays without trapping (replay either runs or
/// throws a ``CaptureError``).
func checkCapture(_ bytes: [UInt8]) -> FuzzFindings {
    var findings = FuzzFindings()
    _ = IPv4UDP.unframe(bytes)
    if let blocks = try? PcapngReader.read(bytes) {
        let littleEndian = blocks.allSatisfy { block in
            if case .section(let section) = block { !section.bigEndian } else { true }
        }
        if littleEndian, case .section(let section)? = blocks.first {
            var writer = PcapngWriter(userApplication: section.userApplication)
            for block in blocks.dropFirst() { writer.append(block) }
            do {
                let once = try PcapngReader.read(writer.bytes)
                var again = PcapngWriter(userApplication: section.userApplication)
                for block in once.dropFirst() { again.append(block) }
                findings.check(
                    (try? PcapngReader.read(again.bytes)) == once, "pcapng write and read is not stable")
            } catch {
                findings.fail("the reader rejects what the writer wrote: \(error)")
            }
        }
    }
    guard let capture = try? CaptureFile(bytes: bytes) else { return findings }
    findings.check(capture.packetCount >= 0, "negative packet count")
    for device in capture.devices {
        for datagram in device.outbound {
            findings.check(datagram.payload.count <= 65_535, "an outbound payload longer than UDP allows")
        }
    }
    // Replay rebuilds a device from the file's configuration, a hostile one included, and must not
    // trap. It is by far the slowest step, so only the first device of short captures replays.
    if let device = capture.devices.first, device.inputs.count <= replayInputLimit {
        _ = try? Replay.run(device)
    }
    return findings
}

FuzzDriver.run(target: "capture", checkCapture)

import Foundation
import ProfileDropCapture
import ProfileDropCore
import ProfileDropCrypto
import ProfileDropSimulator

/// The golden captures in Captures/: how each is produced from a deterministic simulated run.
///
/// Run `PROFILEDROP_REGENERATE_CAPTURES=1 swift test --filter GoldenCaptureTests` to rewrite them.
enum GoldenCaptures {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let directory = packageRoot.appendingPathComponent("Captures")

    /// One golden capture.
    struct Golden: Sendable, CustomStringConvertible {
        /// The file name without extension; the scenario is Captures/scenarios/<name>.json.
        var name: String
        /// Flip one ciphertext byte of the first SECURE datagram delivered to the second device.
        var tamper = false
        /// Message types tshark must find in the file.
        var expectedTypes: [String]

        var description: String { name }
        var capturePath: String { directory.appendingPathComponent("\(name).pcapng").path }
        var scenarioPath: String { directory.appendingPathComponent("scenarios/\(name).json").path }
    }

    static let all: [Golden] = [
        Golden(
            name: "happy-path",
            expectedTypes: ["BEACON", "QUERY", "PROBE", "PROBE_ACK", "INVITE", "ACCEPT", "CONFIRM", "SECURE"]),
        Golden(name: "lossy-link", expectedTypes: ["BEACON", "INVITE", "ACCEPT", "CONFIRM", "SECURE"]),
        Golden(name: "out-of-range", expectedTypes: ["BEACON", "INVITE", "ACCEPT", "CONFIRM", "SECURE"]),
        Golden(name: "declined", expectedTypes: ["BEACON", "INVITE", "ACCEPT", "CONFIRM", "SECURE"]),
        Golden(
            name: "tampered", tamper: true,
            expectedTypes: ["BEACON", "INVITE", "ACCEPT", "CONFIRM", "SECURE"]),
        Golden(
            name: "simultaneous-invite", expectedTypes: ["BEACON", "INVITE", "ACCEPT", "CONFIRM", "SECURE"]),
    ]

    /// Runs the golden's scenario with every device captured and returns the capture and the report.
    static func generate(_ golden: Golden, keylog: Bool = true) throws -> (
        bytes: [UInt8], report: SimulationReport
    ) {
        let scenario = try Scenario.load(contentsOf: golden.scenarioPath)
        let recorder = CaptureRecorder(options: CaptureOptions(keylog: keylog))
        let report = Simulation.run(scenario: scenario) { context in
            TamperingDevice(
                inner: capturingCoreDevice(context: context, recorder: recorder),
                armed: golden.tamper && context.index == 1)
        }
        return (recorder.fileBytes(), report)
    }
}

/// The simulator's core device built as a ``CapturingDevice`` (static key from the device's seed
/// material, every draw on the tape), with every input and output recorded.
func capturingCoreDevice(context: DeviceContext, recorder: CaptureRecorder) -> CapturingDevice {
    CapturingDevice(
        configuration: context.coreConfiguration,
        random: DeterministicRandom(seedMaterial: context.seedMaterial), now: .zero,
        localAddress: context.localAddress, name: context.spec.name,
        recorder: recorder, staticKey: .seedMaterial(context.staticKeySeedMaterial))
}

/// Composes over any device: flips the last byte (part of the tag) of the first SECURE datagram
/// it receives, before the wrapped device (and so its recorder) sees it.
struct TamperingDevice<Inner: SansIODevice>: WrappingDevice {
    var inner: Inner
    var armed: Bool

    mutating func handleDatagram(_ bytes: [UInt8], from source: PeerAddress, at time: Instant) {
        var bytes = bytes
        if armed, bytes.count > 4, bytes[3] == PacketType.secure.rawValue, let last = bytes.indices.last {
            // A corrupted tag byte: the receiver must drop the datagram and carry on.
            bytes[last] ^= 0x01
            armed = false
        }
        inner.handleDatagram(bytes, from: source, at: time)
    }
}

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
            name: "happy-path", expectedTypes: ["BEACON", "QUERY", "INVITE", "ACCEPT", "CONFIRM", "SECURE"]),
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
            CapturingSimulatedDevice(
                context: context, recorder: recorder, tamper: golden.tamper && context.index == 1)
        }
        return (recorder.fileBytes(), report)
    }
}

/// The real protocol core behind the simulator's device interface, wrapped in a
/// ``CapturingDevice``: the same construction as the simulator's `CoreDeviceAdapter` (static key
/// from the device's seed material), with every input and output recorded.
struct CapturingSimulatedDevice: SimulatedDevice {
    private var device: CapturingDevice
    private let nodeCount: Int
    private let directory: PeerDirectory
    private var tamper: Bool
    private var sessionPeer: DeviceID?

    init(context: DeviceContext, recorder: CaptureRecorder, tamper: Bool) {
        let configuration = DeviceConfiguration(
            card: context.spec.card, consent: .askUser, staticKey: context.staticKey,
            timeouts: context.timeouts, gate: context.options.gate)
        device = CapturingDevice(
            configuration: configuration, random: DeterministicRandom(seedMaterial: context.seedMaterial),
            now: .zero, localAddress: PeerAddress(ipv4: context.ipv4, port: context.port),
            name: context.spec.name,
            recorder: recorder, staticKey: .seedMaterial(context.staticKeySeedMaterial))
        nodeCount = context.nodeCount
        directory = context.directory
        self.tamper = tamper
    }

    var identity: UInt64 { device.device.deviceID.rawValue }
    var nextDeadline: Instant? { device.nextDeadline }
    var isClosed: Bool { device.isClosed }

    mutating func receive(_ bytes: [UInt8], from source: Int, at time: Instant) {
        var bytes = bytes
        if tamper, bytes.count > 4, bytes[3] == PacketType.secure.rawValue, let last = bytes.indices.last {
            // A corrupted tag byte: the receiver must drop the datagram and carry on.
            bytes[last] ^= 0x01
            tamper = false
        }
        let address = PeerAddress(ipv4: DeviceContext.ipv4(ofNode: source), port: DeviceContext.simulatedPort)
        device.handleDatagram(bytes, from: address, at: time)
    }

    mutating func timeout(at time: Instant) { device.handleTimeout(at: time) }

    mutating func updatePose(_ pose: Pose, at time: Instant) { device.updatePose(pose, at: time) }

    mutating func decide(accept: Bool, at time: Instant) {
        device.decide(accept ? .share : .decline, at: time)
    }

    mutating func pollTransmit() -> (destination: NetworkDestination, bytes: [UInt8])? {
        guard let datagram = device.pollTransmit() else { return nil }
        switch datagram.destination {
        case .multicast:
            return (.multicast, datagram.bytes)
        case .unicast(let address):
            let node =
                address.port == DeviceContext.simulatedPort
                ? DeviceContext.node(ofIPv4: address.ipv4, nodeCount: nodeCount) : nil
            return (.unicast(node ?? nodeCount), datagram.bytes)
        }
    }

    mutating func pollEvent() -> SimulatedDeviceEvent? {
        while let event = device.pollEvent() {
            switch event {
            case .connecting(let peer, _), .secured(let peer, _):
                sessionPeer = peer
                return SimulatedDeviceEvent(.note, text: Describe.event(event).name)
            case .consentRequested(let peer):
                return SimulatedDeviceEvent(
                    .consentRequested(peer: directory.node(of: peer.rawValue)), text: "asks")
            case .cardReceived(let card):
                let node = sessionPeer.flatMap { directory.node(of: $0.rawValue) }
                return SimulatedDeviceEvent(.cardReceived(card, peer: node), text: "card received")
            case .closed(let reason):
                let exchanged = reason == .exchanged
                return SimulatedDeviceEvent(
                    .closed(CloseOutcome(exchanged: exchanged, reason: reason.description)),
                    text: "closed: \(reason)")
            case .advertising, .peerFound, .peerBusy, .ranging, .inRange, .exchanging, .acknowledged,
                .sessionEnded, .datagramRejected:
                return SimulatedDeviceEvent(.note, text: Describe.event(event).name)
            }
        }
        return nil
    }
}

import Foundation
import ProfileDropCrypto
import Testing

@testable import FuzzSupport
@testable import ProfileDropCore

/// Replays every stored fuzz input (FuzzCases/<target>/*) through the same harness code the libFuzzer
/// targets run (FuzzCases/Harness links to Fuzz/Sources/FuzzSupport), so a fixed crash stays fixed
/// in the normal test run.
@Suite struct FuzzRegressionTests {
    static let casesDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("FuzzCases")

    /// The stored inputs of one target, sorted by name.
    static func cases(_ target: String) -> [(name: String, bytes: [UInt8])] {
        let directory = casesDirectory.appendingPathComponent(target)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { !$0.hasPrefix(".") }.sorted().compactMap { name in
            guard let data = FileManager.default.contents(atPath: directory.appendingPathComponent(name).path)
            else { return nil }
            return (name, Array(data))
        }
    }

    /// Each stored input of each target runs through that target's harness and breaks nothing.
    @Test(arguments: ["wire", "noise", "device"])
    func storedCasesKeepEveryInvariant(target: String) {
        let harness: ([UInt8]) -> FuzzFindings
        switch target {
        case "wire": harness = WireFuzz.run
        case "noise": harness = NoiseFuzz.run
        default: harness = DeviceFuzz.run
        }
        let cases = Self.cases(target)
        #expect(!cases.isEmpty, "no stored \(target) inputs under \(Self.casesDirectory.path)")
        for (name, bytes) in cases {
            let findings = harness(bytes)
            #expect(findings.violations.isEmpty, "\(target)/\(name): \(findings.violations)")
        }
    }

    /// The device target starts from honest runs against the scripted peer; they must really reach
    /// every phase, or the fuzzer would start shallow.
    @Test func honestPrefixesReachTheEndOfAnExchange() {
        let outcomes = DeviceFuzz.prefixes.map { $0.last?.device.closedReason }
        #expect(outcomes == [.exchanged, nil, .exchanged, .declined(by: .local)])
        let sharing = DeviceFuzz.prefixes[0]
        #expect(sharing.last?.peer.session.verifiedPeerCard != nil, "the peer got the device's card")
        #expect(sharing.last?.findings.violations.isEmpty == true)
        #expect(sharing.contains { $0.device.stage == .exchanging })
    }

    /// Every stored input, taken as one datagram, is either accepted or rejected by a fresh device
    /// with exactly the ``ProtocolError`` the decoder reports, and the rejection is counted.
    @Test func everyCaseAsADatagramIsATypedRejection() {
        let all = ["wire", "noise", "device"].flatMap { Self.cases($0) }
        var random = DeterministicRandom(seed: 7)
        let configuration = DeviceConfiguration(
            card: nil, consent: .share, staticKey: X25519.PrivateKey(using: &random))
        for (name, bytes) in all {
            var device = Device(
                configuration: configuration, random: DeterministicRandom(seed: 8), now: .zero,
                localAddress: PeerAddress(10, 0, 0, 1, port: 5000))
            while device.pollEvent() != nil {}
            device.handleDatagram(bytes, from: PeerAddress(10, 0, 0, 9, port: 5000), at: .zero)
            var rejections: [ProtocolError] = []
            while let event = device.pollEvent() {
                if case .datagramRejected(let error) = event { rejections.append(error) }
            }
            let counters = device.counters
            #expect(counters.datagramsReceived == 1, "\(name)")
            #expect(counters.datagramsAccepted + counters.datagramsRejected == 1, "\(name)")
            do {
                _ = try Packet(datagram: bytes)
            } catch {
                #expect(rejections.map(\.code) == [error.code], "\(name): \(rejections) vs \(error)")
                #expect(counters.rejected(error.code) == 1, "\(name)")
            }
        }
    }
}

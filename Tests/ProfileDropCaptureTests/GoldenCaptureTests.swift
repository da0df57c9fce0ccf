import Foundation
import ProfileDropCapture
import ProfileDropCore
import ProfileDropSimulator
import Testing

// simulate --capture's own recorder, so that the test exercises the shipped code.
@testable import ProfileDropCLI

/// Every golden capture replays identically; with PROFILEDROP_REGENERATE_CAPTURES=1 they are
/// rewritten first from their deterministic simulated runs.
@Suite(.serialized)
struct GoldenCaptureTests {
    static var regenerate: Bool {
        ProcessInfo.processInfo.environment["PROFILEDROP_REGENERATE_CAPTURES"] == "1"
    }

    @Test(arguments: GoldenCaptures.all)
    func replaysIdentically(_ golden: GoldenCaptures.Golden) throws {
        if Self.regenerate {
            let (bytes, report) = try GoldenCaptures.generate(golden)
            #expect(report.violations.isEmpty, "\(report.violations)")
            try Data(bytes).write(to: URL(fileURLWithPath: golden.capturePath))
        }
        let capture = try CaptureFile.read(path: golden.capturePath)
        #expect(capture.devices.count == 2)
        var events: [String: [DeviceEvent]] = [:]
        var compared = 0
        var secure = 0
        var sentUndecrypted = 0
        var receivedUndecrypted = 0
        var decryptedFrames: [Frame] = []
        for device in capture.devices {
            let result = try Replay.run(device) { entry in
                let bytes: [UInt8]
                let sent: Bool
                switch entry.kind {
                case .event(let event):
                    events[entry.device, default: []].append(event)
                    return
                case .sent(let datagram): (bytes, sent) = (datagram.bytes, true)
                case .input(.datagram(let received, _)): (bytes, sent) = (received, false)
                case .start, .input: return
                }
                guard bytes.count > 3, bytes[3] == PacketType.secure.rawValue else { return }
                secure += 1
                if let frames = entry.frames {
                    decryptedFrames += frames
                } else if sent {
                    sentUndecrypted += 1
                } else {
                    receivedUndecrypted += 1
                }
            }
            guard case .identical(let datagrams) = result else {
                let advice =
                    "if the protocol core changed on purpose, regenerate: "
                    + "PROFILEDROP_REGENERATE_CAPTURES=1 swift test --filter GoldenCaptureTests"
                Issue.record("\(golden.name): \(result); \(advice)")
                continue
            }
            #expect(datagrams == device.outbound.count)
            compared += datagrams
        }
        #expect(compared > 0)
        // The re-derived session keys open every SECURE datagram the devices sent, and every one
        // they received except those they dropped too (tampered, or before the handshake ended).
        let rejected = events.values.joined().filter { event in
            if case .datagramRejected = event { return true }
            return false
        }.count
        #expect(secure > 0)
        #expect(sentUndecrypted == 0)
        #expect(receivedUndecrypted <= rejected)
        #expect(receivedUndecrypted >= (golden.tamper ? 1 : 0))
        #expect(decryptedFrames.contains { if case .ranging = $0 { true } else { false } })
        if golden.name == "declined" {
            #expect(decryptedFrames.contains(.consent(.decline, nil)))
        }
        // Every datagram speaks wire version 3 (protocol 2.1).
        #expect(
            capture.devices.allSatisfy { $0.outbound.allSatisfy { $0.payload[2] == WireConstants.version } })
        // Version 2 pairing, decrypted: IDENT and PROOF in the first SECURE datagrams, the code's
        // COMMIT, NONCE and REVEAL once both devices are in range, BOND once both users agreed.
        let pairing: Set<FrameType> = [.ident, .proof, .commit, .nonce, .reveal, .bond]
        let expectedPairing: Set<FrameType>
        switch golden.name {
        case "out-of-range": expectedPairing = [.ident, .proof]  // never in range: no code, no bond
        case "declined": expectedPairing = [.ident, .proof, .commit, .nonce, .reveal]  // no bond
        default: expectedPairing = pairing
        }
        #expect(Set(decryptedFrames.map(\.type)).intersection(pairing) == expectedPairing)
        let codes = capture.devices.map { device in
            events[device.record.name, default: []].compactMap { event -> String? in
                if case .verified(let verification) = event { return verification.code }
                return nil
            }
        }
        if expectedPairing.contains(.reveal) {
            // Both users were shown one code, the same.
            #expect(codes.map(\.count) == [1, 1] && codes[0] == codes[1])
        } else {
            #expect(codes.allSatisfy { $0.isEmpty })
        }
        // The BONDs carry the resolving keys the keylogs hold, and each device remembers the other's.
        let identities = Set(capture.devices.compactMap { $0.secrets?.identity?.resolvingKey })
        #expect(identities.count == 2)
        let bonded = Set(
            decryptedFrames.compactMap { frame -> [UInt8]? in
                if case .bond(let resolvingKey, _) = frame { return resolvingKey }
                return nil
            })
        let remembered = Set(
            events.values.joined().compactMap { event -> [UInt8]? in
                if case .peerRemembered(let peer) = event { return peer.resolvingKey }
                return nil
            })
        #expect(bonded == (expectedPairing.contains(.bond) ? identities : []))
        #expect(remembered == bonded)
        let closes = capture.devices.compactMap { device in
            events[device.record.name]?.compactMap { event -> CloseReason? in
                if case .closed(let reason) = event { return reason }
                return nil
            }.first
        }
        switch golden.name {
        case "happy-path", "lossy-link", "simultaneous-invite", "tampered":
            #expect(closes == [.exchanged, .exchanged])
        case "declined":
            #expect(closes.contains(.declined(by: .local)) && closes.contains(.declined(by: .peer)))
        case "out-of-range":
            #expect(closes == [.outOfRange, .outOfRange])
        default:
            Issue.record("no expectation for \(golden.name)")
        }
        let handshakes = capture.devices.map { device in
            device.outbound.map(\.payload).filter { $0.count > 3 && [3, 4].contains($0[3]) }
        }
        if golden.name == "lossy-link" {
            // INVITE and ACCEPT are retransmitted byte-identical when lost.
            let retransmissions = handshakes.map { $0.count - Set($0).count }.reduce(0, +)
            #expect(retransmissions > 0)
        }
        if golden.name == "simultaneous-invite" {
            // Both devices invited: each sent an INVITE (type 3) of its own session.
            #expect(handshakes.allSatisfy { messages in messages.contains { $0[3] == 3 } })
        }
        if golden.tamper {
            let rejected = events.values.joined().contains { event in
                if case .datagramRejected(let reason) = event { return reason.code == .authenticationFailed }
                return false
            }
            #expect(rejected, "the tampered datagram was not rejected")
        }
    }

    @Test func generationIsDeterministic() throws {
        let golden = GoldenCaptures.all[0]
        let first = try GoldenCaptures.generate(golden).bytes
        let second = try GoldenCaptures.generate(golden).bytes
        #expect(first == second)
    }
}

/// Recording the simulator's unchanged core devices from the outside.
struct RecordedSimulationTests {
    @Test(arguments: [GoldenCaptures.all[0], GoldenCaptures.all[1]])
    func recordedCoreDevicesReplayAndLeaveTheRunUnchanged(_ golden: GoldenCaptures.Golden) throws {
        let scenario = try Scenario.load(contentsOf: golden.scenarioPath)
        let plain = Simulation.run(scenario: scenario)
        let recorder = CaptureRecorder(options: CaptureOptions(keylog: true))
        let recorded = Simulation.run(scenario: scenario) {
            CapturingDevice(
                $0.makeCoreDevice(), name: $0.spec.name, recorder: recorder,
                randomSeedMaterial: $0.seedMaterial, staticKey: .seedMaterial($0.staticKeySeedMaterial))
        }
        #expect(recorded.transcript == plain.transcript)
        let capture = try CaptureFile(bytes: recorder.fileBytes())
        #expect(capture.devices.count == scenario.devices.count)
        for device in capture.devices {
            #expect(try Replay.run(device) == .identical(datagrams: device.outbound.count))
            #expect(device.outbound.count == plain.devices[Int(device.record.interfaceID)].sentDatagrams)
        }
    }
}

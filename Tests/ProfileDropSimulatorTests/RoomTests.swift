import ProfileDropCore
import ProfileDropCrypto
import Testing

@testable import ProfileDropSimulator

/// A raw participant: sends what it was scripted to send at its wake-up time, keeps what it hears.
private struct ScriptSpeaker: DatagramSpeaker {
    var script: [(at: Instant, datagram: OutgoingDatagram)] = []
    var outbox: [OutgoingDatagram] = []
    var received: [(bytes: [UInt8], source: PeerAddress, time: Instant)] = []

    var nextDeadline: Instant? { script.first?.at }

    mutating func receive(_ bytes: [UInt8], from source: PeerAddress, at time: Instant) {
        received.append((bytes, source, time))
    }

    mutating func handleTimeout(at time: Instant) {
        while let first = script.first, first.at <= time {
            outbox.append(first.datagram)
            script.removeFirst()
        }
    }

    mutating func pollTransmit() -> OutgoingDatagram? { outbox.isEmpty ? nil : outbox.removeFirst() }
}

private let addresses = (1...3).map { PeerAddress(10, 0, 0, UInt8($0), port: 4000) }

/// Three speakers; the first sends `payloads` to the second at t=0 (or multicast).
private func room(
    sending payloads: [[UInt8]], multicast: Bool = false, hook: (any DatagramHook)? = nil
) -> Room {
    var room = Room(latency: .milliseconds(5), hook: hook)
    let destination: Destination = multicast ? .multicast : .unicast(addresses[1])
    let script = payloads.map { (Instant.zero, OutgoingDatagram(destination: destination, bytes: $0)) }
    room.add(speaker: ScriptSpeaker(script: script), at: addresses[0])
    room.add(speaker: ScriptSpeaker(), at: addresses[1])
    room.add(speaker: ScriptSpeaker(), at: addresses[2])
    return room
}

private func heard(_ room: Room, _ member: Int) -> [(
    bytes: [UInt8], source: PeerAddress, time: Instant
)] {
    (room.speaker(member) as? ScriptSpeaker)?.received ?? []
}

@Suite struct RoomTests {
    @Test func withoutAHookEveryCopyArrivesAfterTheLatency() {
        var room = room(sending: [[1], [2]])
        room.run(until: Instant.zero + .seconds(1))
        #expect(heard(room, 1).map(\.bytes) == [[1], [2]])
        #expect(
            heard(room, 1).allSatisfy {
                $0.time == Instant.zero + .milliseconds(5) && $0.source == addresses[0]
            })
        #expect(heard(room, 2).isEmpty && heard(room, 0).isEmpty)
        #expect(room.now == Instant.zero + .seconds(1))
    }

    @Test func multicastReachesEveryOtherParticipant() {
        var room = room(sending: [[7]], multicast: true)
        room.run(until: Instant.zero + .seconds(1))
        #expect(heard(room, 1).map(\.bytes) == [[7]] && heard(room, 2).map(\.bytes) == [[7]])
        #expect(heard(room, 0).isEmpty)
    }

    @Test func hookDrops() {
        var room = room(sending: [[1], [2], [3]], hook: ClosureHook { $0.bytes == [2] ? .drop : .deliver })
        room.run(until: Instant.zero + .seconds(1))
        #expect(heard(room, 1).map(\.bytes) == [[1], [3]])
    }

    @Test func hookAlters() {
        var room = room(
            sending: [[1], [2]], hook: ClosureHook { $0.bytes == [2] ? .alter([9, 9]) : .deliver })
        var altered: [Bool] = []
        while let step = room.step() {
            if case .delivered(let copy) = step { altered.append(copy.altered) }
        }
        #expect(heard(room, 1).map(\.bytes) == [[1], [9, 9]])
        #expect(altered == [false, true])
    }

    @Test func hookDelays() {
        var room = room(
            sending: [[1], [2]], hook: ClosureHook { $0.bytes == [1] ? .delay(.milliseconds(20)) : .deliver })
        room.run(until: Instant.zero + .seconds(1))
        // The delayed copy is overtaken.
        #expect(heard(room, 1).map(\.bytes) == [[2], [1]])
        #expect(
            heard(room, 1).map(\.time) == [Instant.zero + .milliseconds(5), Instant.zero + .milliseconds(25)])
    }

    @Test func hookDuplicates() {
        var room = room(
            sending: [[1], [2]], hook: ClosureHook { $0.bytes == [1] ? .duplicate(3) : .deliver })
        room.run(until: Instant.zero + .seconds(1))
        #expect(heard(room, 1).map(\.bytes) == [[1], [1], [1], [2]])
        #expect(room.deliveredCount == 4)
    }

    @Test func hookSchedulesArrivalsFromAnotherSource() {
        let stranger = PeerAddress(192, 168, 1, 1, port: 9)
        var room = room(
            sending: [[1]],
            hook: ClosureHook { copy in
                .arrivals([
                    Arrival(copy, at: copy.sentAt + .milliseconds(3), bytes: [6], from: stranger),
                    Arrival(copy, at: copy.sentAt + .milliseconds(1)),
                ])
            })
        room.run(until: Instant.zero + .seconds(1))
        #expect(heard(room, 1).map(\.bytes) == [[1], [6]])
        #expect(heard(room, 1).map(\.source) == [addresses[0], stranger])
    }

    @Test func hookSchedulesOneArrivalLikeAListOfOne() {
        let stranger = PeerAddress(192, 168, 1, 1, port: 9)
        func heardWith(_ verdict: @escaping (InFlightDatagram, Arrival) -> DatagramVerdict) -> [String] {
            var room = room(
                sending: [[1], [2]],
                hook: ClosureHook { copy in
                    let arrival =
                        copy.bytes == [1]
                        ? Arrival(copy, at: copy.sentAt + .milliseconds(9), bytes: [7], from: stranger)
                        : Arrival(copy, at: copy.sentAt + .milliseconds(1))
                    return verdict(copy, arrival)
                })
            room.run(until: Instant.zero + .seconds(1))
            return heard(room, 1).map { "\($0.bytes) from \($0.source) at \($0.time)" }
        }
        let single = heardWith { _, arrival in .arrival(arrival) }
        #expect(single == heardWith { _, arrival in .arrivals([arrival]) })
        #expect(single.count == 2 && single[0].hasPrefix("[2]") && single[1].hasPrefix("[7]"))
    }

    @Test func hookNamesAnArrivalTimeAloneAndTheCopyArrivesUnchangedThen() {
        // [1] at 3 ms, [2] at a time already past when it is sent: at once, after [1] is not.
        var direct = room(
            sending: [[1], [2]],
            hook: ClosureHook { copy in
                copy.bytes == [1] ? .arriveAt(copy.sentAt + .milliseconds(3)) : .arriveAt(Instant.zero)
            })
        var altered: [Bool] = []
        while let step = direct.step() {
            if case .delivered(let copy) = step { altered.append(copy.altered) }
        }
        #expect(heard(direct, 1).map(\.bytes) == [[2], [1]])
        #expect(heard(direct, 1).map(\.time) == [Instant.zero, Instant.zero + .milliseconds(3)])
        #expect(heard(direct, 1).allSatisfy { $0.source == addresses[0] })
        #expect(altered == [false, false])
        // The same as an Arrival that names only the time.
        var viaArrival = room(
            sending: [[1], [2]],
            hook: ClosureHook { copy in
                .arrival(Arrival(copy, at: copy.bytes == [1] ? copy.sentAt + .milliseconds(3) : Instant.zero))
            })
        viaArrival.run(until: Instant.zero + .seconds(1))
        #expect(
            heard(viaArrival, 1).map { "\($0.bytes) \($0.time)" }
                == heard(direct, 1).map { "\($0.bytes) \($0.time)" })
    }

    @Test func hookRefusesAtArrival() {
        struct Closing: DatagramHook {
            var refused = 0
            mutating func route(_ copy: InFlightDatagram) -> DatagramVerdict { .deliver }
            mutating func arrives(_ copy: InFlightDatagram, at time: Instant) -> Bool {
                guard copy.bytes == [2] else { return true }
                refused += 1
                return false
            }
        }
        var room = room(sending: [[1], [2]], hook: Closing())
        var lost: [[UInt8]] = []
        while let step = room.step() {
            if case .lost(let copy) = step { lost.append(copy.bytes) }
        }
        #expect(heard(room, 1).map(\.bytes) == [[1]] && lost == [[2]])
        #expect((room.hook as? Closing)?.refused == 1)
    }

    @Test func injectionsArriveFromAnyAddressAndSkipTheHook() {
        let spoofed = PeerAddress(10, 9, 9, 9, port: 1)
        var room = room(sending: [], hook: ClosureHook { _ in .drop })
        room.inject([4, 2], from: spoofed, to: 2, after: .milliseconds(7))
        room.inject([5], from: addresses[0], to: 1)
        room.run(until: Instant.zero + .seconds(1))
        #expect(heard(room, 2).map(\.bytes) == [[4, 2]] && heard(room, 2).map(\.source) == [spoofed])
        #expect(heard(room, 2).map(\.time) == [Instant.zero + .milliseconds(7)])
        #expect(heard(room, 1).map(\.bytes) == [[5]] && heard(room, 1).map(\.source) == [addresses[0]])
    }

    @Test func equalTimesDeliverBeforeAlarmsBeforeDeadlines() {
        var room = Room(latency: .milliseconds(5))
        let at = Instant.zero + .milliseconds(5)
        room.add(
            speaker: ScriptSpeaker(script: [
                (Instant.zero, OutgoingDatagram(destination: .unicast(addresses[1]), bytes: [1]))
            ]),
            at: addresses[0])
        room.add(
            speaker: ScriptSpeaker(script: [(at, OutgoingDatagram(destination: .multicast, bytes: [2]))]),
            at: addresses[1])
        room.setAlarm(42, at: at)
        var order: [String] = []
        while let step = room.step(notAfter: at) {
            switch step {
            case .delivered(let copy): order.append("delivered \(copy.bytes)")
            case .lost: order.append("lost")
            case .alarm(let tag): order.append("alarm \(tag)")
            case .timeout(let member): order.append("timeout \(member)")
            }
        }
        #expect(order == ["timeout 0", "delivered [1]", "alarm 42", "timeout 1"])
    }

    @Test func aRawParticipantTalksToARealDevice() {
        var random = DeterministicRandom(seed: 5)
        let configuration = DeviceConfiguration(
            card: try? ProfileCard(
                name: "Bori", age: 3, sex: .female, neutered: true, size: .small, keywords: [], owner: "o"),
            consent: .share, staticKey: X25519.PrivateKey(using: &random))
        let deviceAddress = PeerAddress(10, 0, 0, 1, port: 4000)
        let speakerAddress = PeerAddress(10, 0, 0, 7, port: 4000)
        let fakeID = DeviceID(rawValue: 5)
        var room = Room(latency: .milliseconds(2), keepsEventLog: true)
        let device = room.add(
            Device(
                configuration: configuration, random: DeterministicRandom(seed: 6), now: .zero,
                localAddress: deviceAddress),
            at: deviceAddress)
        // The speaker announces itself as an idle peer at 100 ms.
        let beacon = Packet.beacon(Beacon(deviceID: fakeID, port: 4000, busy: false, sequence: 1)).encoded()
        let speaker = room.add(
            speaker: ScriptSpeaker(
                script: [
                    (
                        Instant.zero + .milliseconds(100),
                        OutgoingDatagram(destination: .multicast, bytes: beacon)
                    )
                ]),
            at: speakerAddress)
        room.updatePose(Pose(x: 0, y: 0, heading: 0), of: device)
        room.run(until: Instant.zero + .seconds(2))
        let heardPackets = heard(room, speaker).compactMap { try? Packet(datagram: $0.bytes) }
        #expect(heard(room, speaker).allSatisfy { $0.source == deviceAddress })
        #expect(
            heardPackets.contains { if case .beacon = $0 { true } else { false } }, "its multicast beacons")
        // The invitation starts with a PROBE, unicast to the speaker, which never echoes it, so no
        // INVITE follows (PROTOCOL.md 5, "Return routability").
        #expect(
            heardPackets.contains { if case .probe = $0 { true } else { false } },
            "an invitation's PROBE unicast to the speaker")
        #expect(!heardPackets.contains { if case .invite = $0 { true } else { false } })
        #expect(
            room.eventLog[device].contains { if case .peerFound = $0 { true } else { false } },
            "the device found the speaker")
        #expect(room.eventLog[speaker].isEmpty)
    }
}

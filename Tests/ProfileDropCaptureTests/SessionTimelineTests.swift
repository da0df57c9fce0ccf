import Foundation
import ProfileDropCapture
import ProfileDropCore
import Testing

/// `SessionTimeline` built from the golden captures: what it says about each kind of session.
struct SessionTimelineTests {
    static func golden(_ name: String) throws -> (capture: CaptureFile, timeline: SessionTimeline) {
        let path = GoldenCaptures.directory.appendingPathComponent("\(name).pcapng").path
        let capture = try CaptureFile.read(path: path)
        return (capture, try SessionTimeline(capture: capture, title: name))
    }

    @Test func aHappyPathExchangesWithBothGatesOpenAndEveryDatagramDelivered() throws {
        let (capture, timeline) = try Self.golden("happy-path")
        #expect(timeline.lanes.map(\.name) == ["alice", "bob"])
        #expect(timeline.lanes.allSatisfy { $0.isCaptured })
        #expect(timeline.outcome == "alice: exchanged · bob: exchanged")
        #expect(timeline.diagnosis.isEmpty)
        // One arrow per datagram sent, and each one the other device received.
        #expect(timeline.datagrams.count == capture.devices.map(\.outbound.count).reduce(0, +))
        let sentBy = timeline.datagrams.map(\.sender)
        #expect(sentBy.filter { $0 == 0 }.count == capture.devices[0].outbound.count)
        #expect(
            timeline.datagrams.filter { $0.fate == .delivered }.allSatisfy { $0.receiver == 1 - $0.sender })
        #expect(timeline.datagrams.filter { $0.fate == .altered || $0.rejection != nil }.isEmpty)
        #expect(zip(timeline.datagrams, timeline.datagrams.dropFirst()).allSatisfy { $0.sentAt <= $1.sentAt })
        #expect(timeline.datagrams.contains { $0.type == "INVITE" })
        #expect(timeline.datagrams.contains { $0.frames.contains("CARD_CHUNK 0") })
        for track in timeline.tracks {
            #expect(track.exchanged)
            #expect(track.gateOpen.count == 1)
            // The gate opened on in-band estimates, and stayed open until the device closed.
            let open = try #require(track.gateOpen.first)
            #expect(open.end != nil)
            let inside = track.samples.filter { $0.time >= open.start }
            #expect(!inside.isEmpty)
            #expect(inside.allSatisfy { timeline.band.distance.contains($0.distance) && $0.bearing <= 30 })
            #expect(track.progress.last.map { $0.acknowledged == $0.total && $0.total > 0 } == true)
            #expect(track.retransmissions.isEmpty)
        }
        #expect(timeline.band.distance == 5...10)
        #expect(timeline.band.maximumBearing == 30)
        #expect(timeline.marks.contains { $0.text == "closed: exchanged" && $0.kind == .success })
    }

    @Test func outOfRangeNeverOpensAGateAndSaysWhy() throws {
        let (_, timeline) = try Self.golden("out-of-range")
        #expect(timeline.outcome == "alice: out of range · bob: out of range")
        for track in timeline.tracks {
            #expect(track.gateOpen.isEmpty)
            #expect(!track.samples.isEmpty)
            #expect(track.samples.allSatisfy { $0.distance > 10 })
            #expect(track.progress.isEmpty)
        }
        let why = try #require(timeline.diagnosis.first)
        #expect(why.hasPrefix("neither gate opened: alice measured 1"))
        #expect(why.hasSuffix("(band 5–10 cm, ≤ 30°)"))
        // Two sessions ran (the ranging windows ran out, and the devices tried again): two lines.
        #expect(timeline.tracks.allSatisfy { $0.samples.filter(\.startsLine).count == 2 })
        #expect(timeline.marks.contains { $0.text.hasPrefix("session ended: ") && $0.kind == .failure })
    }

    @Test func aDeclinedSessionNamesWhoDeclined() throws {
        let (_, timeline) = try Self.golden("declined")
        #expect(timeline.outcome == "alice: declined by peer · bob: declined by us")
        #expect(timeline.diagnosis.first == "bob's user declined")
        #expect(
            timeline.marks.contains { $0.text == "user: decline" && $0.lane == 1 && $0.kind == .decision })
        #expect(timeline.tracks.allSatisfy { !$0.gateOpen.isEmpty && $0.progress.isEmpty })
    }

    /// A gate that opened and closed because the estimates left the band (a peer walking away)
    /// ends its span there and says so.
    @Test func aGateClosedByAFarEstimateSaysWhereThePeerWent() throws {
        let capture = try CaptureFile.read(
            path: GoldenCaptures.directory.appendingPathComponent("happy-path.pcapng").path)
        var builder = SessionTimeline.Builder(title: "walked away")
        for device in capture.devices {
            _ = try Replay.run(device) { entry in
                builder.add(entry)
                // One far estimate right after the gate opened, as a peer that walked off gives.
                if case .event(.inRange) = entry.kind {
                    builder.add(
                        ReplayEntry(
                            time: entry.time + .milliseconds(125), device: entry.device,
                            kind: .event(.ranging(distanceCm: 40, bearingDeg: 3))))
                }
            }
        }
        let timeline = builder.timeline()
        for track in timeline.tracks {
            let span = try #require(track.gateOpen.first)
            #expect(span.end.map { $0 - span.start } == .milliseconds(125))
        }
        #expect(timeline.diagnosis.isEmpty, "both exchanged: nothing to explain")
        var failed = timeline
        failed.tracks[0].exchanged = false
        #expect(failed.diagnosis.first?.hasPrefix("alice's gate closed at ") == true, "\(failed.diagnosis)")
        #expect(failed.diagnosis.first?.hasSuffix(" s: the peer was estimated at 40 cm, 3°") == true)
    }

    @Test func aLossyLinkShowsLostDuplicatedAndRetransmittedDatagrams() throws {
        let (capture, timeline) = try Self.golden("lossy-link")
        #expect(timeline.datagrams.count == capture.devices.map(\.outbound.count).reduce(0, +))
        let lost = timeline.datagrams.filter { $0.fate == .notReceived }
        #expect(lost.count > 10)
        #expect(lost.allSatisfy { $0.receivedAt == nil && $0.receiver == 1 - $0.sender })
        #expect(timeline.datagrams.contains { $0.copies > 1 })
        #expect(timeline.tracks.contains { !$0.retransmissions.isEmpty })
        #expect(timeline.tracks.allSatisfy { $0.exchanged })
        // Every receipt of a device is accounted for by exactly one arrow (duplicates as copies).
        let receipts = capture.devices.map { device in
            device.inputs.filter { if case .datagram = $0.input { true } else { false } }.count
        }.reduce(0, +)
        #expect(timeline.datagrams.map(\.copies).reduce(0, +) == receipts)
    }

    @Test func aTamperedDatagramIsAlteredAndDropped() throws {
        let (_, timeline) = try Self.golden("tampered")
        let altered = timeline.datagrams.filter { $0.fate == .altered }
        #expect(altered.count == 1)
        #expect(altered.first?.type == "SECURE")
        #expect(altered.first?.receiver == 1)
        #expect(altered.first?.rejection == "authentication-failed")
        #expect(timeline.diagnosis.isEmpty)
    }

    /// A capture of one device (as `share` writes): its peer becomes a lane of its own, seen from
    /// outside, and what it received from it are arrows too.
    @Test func oneCapturedDeviceGetsItsPeerAsAnUncapturedLane() throws {
        let (capture, _) = try Self.golden("happy-path")
        let alice = try #require(capture.device("alice"))
        var builder = SessionTimeline.Builder(title: "alice")
        _ = try Replay.run(alice) { builder.add($0) }
        let timeline = builder.timeline()
        #expect(timeline.lanes.count == 2)
        #expect(timeline.lanes[1].isCaptured == false)
        #expect(timeline.lanes[1].name == "10.0.0.2:47474")
        let received = alice.inputs.filter { if case .datagram = $0.input { true } else { false } }.count
        #expect(timeline.datagrams.count == alice.outbound.count + received)
        #expect(timeline.datagrams.filter { $0.sender == 0 }.allSatisfy { $0.fate == .unknown })
        // What arrived comes before what alice answered at the same instant.
        #expect(
            zip(timeline.datagrams, timeline.datagrams.dropFirst()).allSatisfy { earlier, later in
                earlier.sentAt < later.sentAt || !(earlier.sender == 0 && later.sender == 1)
            })
        #expect(timeline.tracks.count == 1)
    }

    /// Datagrams from many devices that were not captured (a busy network): a few lanes of their
    /// own, then one shared lane, and still one arrow per datagram.
    @Test func manyOutsideAddressesShareALane() throws {
        let (capture, _) = try Self.golden("happy-path")
        let alice = try #require(capture.device("alice"))
        let beacon = try #require(capture.device("bob")?.outbound.first?.payload)
        var builder = SessionTimeline.Builder(title: "alice on a busy network")
        _ = try Replay.run(alice) { builder.add($0) }
        for host in UInt8(20)..<UInt8(30) {
            builder.add(
                ReplayEntry(
                    time: .zero + .seconds(1), device: "alice",
                    kind: .input(.datagram(bytes: beacon, source: PeerAddress(10, 0, 0, host, port: 47_474))))
            )
        }
        let timeline = builder.timeline()
        let outside = timeline.lanes.filter { !$0.isCaptured }
        #expect(outside.count == SessionTimeline.maximumUncapturedLanes + 1)
        #expect(outside.last?.name == "other addresses")
        let received = alice.inputs.filter { if case .datagram = $0.input { true } else { false } }.count
        #expect(timeline.datagrams.count == alice.outbound.count + received + 10)
        let shared = try #require(timeline.lanes.indices.last)
        #expect(timeline.datagrams.filter { $0.sender == shared }.count == 8)
        let svg = TimelineSVG.render(timeline)
        #expect(svg.contains(">other addresses</text>"))
        #expect(svg.components(separatedBy: ">not captured</text>").count - 1 == outside.count)
    }

    @Test func theSameCaptureGivesTheSameTimeline() throws {
        let first = try Self.golden("simultaneous-invite").timeline
        let second = try Self.golden("simultaneous-invite").timeline
        #expect(first == second)
    }
}

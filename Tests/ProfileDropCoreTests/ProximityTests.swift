import ProfileDropCore
import Testing

private func seconds(_ value: Double) -> Instant {
    Instant(nanoseconds: UInt64(value * 1e9))
}

private func isClose(_ a: Double, _ b: Double, within tolerance: Double = 1e-9) -> Bool {
    abs(a - b) <= tolerance
}

@Suite("Pose geometry and motion scripts")
struct ProximityTests {
    @Test("Distance is Euclidean in centimetres")
    func distance() {
        let a = Pose(x: 1, y: 2, heading: 0)
        let b = Pose(x: 4, y: 6, heading: 123)
        #expect(a.distance(to: b) == 5)
        #expect(b.distance(to: a) == 5)
        #expect(a.distance(to: a) == 0)
    }

    @Test(
        "Bearing is the absolute angle between heading and the direction to the peer",
        arguments: [
            (0.0, 10.0, 0.0, 0.0), (270.0, 10.0, 0.0, 90.0), (90.0, 10.0, 0.0, 90.0),
            (180.0, 10.0, 0.0, 180.0),
            (315.0, 10.0, 0.0, 45.0), (-45.0, 10.0, 0.0, 45.0), (0.0, 0.0, 10.0, 90.0),
            (0.0, -10.0, 0.0, 180.0),
            (200.0, -5.0, -5.0, 25.0), (20.0, 10.0, 10.0, 25.0),
        ])
    func bearing(heading: Double, peerX: Double, peerY: Double, expected: Double) {
        let device = Pose(x: 0, y: 0, heading: heading)
        let peer = Pose(x: peerX, y: peerY, heading: 0)
        #expect(isClose(device.bearing(to: peer), expected, within: 1e-9))
    }

    @Test("Two devices facing each other both see bearing 0; a pose at the same spot gives 0")
    func facing() {
        let a = Pose(x: 3, y: -2, heading: 77)
        let b = Pose(x: 10, y: 5, heading: 0)
        #expect(isClose(a.facing(b).bearing(to: b), 0))
        #expect(isClose(b.facing(a).bearing(to: a), 0))
        #expect(a.bearing(to: Pose(x: 3, y: -2, heading: 10)) == 0)
    }

    @Test("Angles wrap into [0, 360) and turns take the short way")
    func angles() {
        #expect(Pose(x: 0, y: 0, heading: -90).heading == 270)
        #expect(Pose(x: 0, y: 0, heading: 720).heading == 0)
        #expect(Pose(x: 0, y: 0, heading: 360).heading == 0)
        #expect(Pose.normalizedDegrees(-1e-20) < 360)
        #expect(isClose(Pose.angularDifference(350, 10), 20))
        #expect(isClose(Pose.angularDifference(10, 350), 20))
        #expect(isClose(Pose.shortestTurn(from: 350, to: 10), 20))
        #expect(isClose(Pose.shortestTurn(from: 10, to: 350), -20))
        #expect(isClose(Pose.shortestTurn(from: 0, to: 180), 180))
    }

    @Test("Pose encoding is 8 bytes with millimetre and centidegree precision")
    func poseEncoding() throws {
        let poses = [
            Pose(x: 0, y: 0, heading: 0), Pose(x: 123.456, y: -78.91, heading: 359.996),
            Pose(x: -0.1, y: 838_860.7, heading: 181.234), Pose(x: -838_860.7, y: 5, heading: 90),
        ]
        for pose in poses {
            let bytes = pose.encoded()
            #expect(bytes.count == Pose.encodedLength)
            let decoded = try Pose(decoding: bytes)
            #expect(abs(decoded.x - pose.x) <= 0.05 + 1e-9)
            #expect(abs(decoded.y - pose.y) <= 0.05 + 1e-9)
            #expect(Pose.angularDifference(decoded.heading, pose.heading) <= 0.005 + 1e-9)
        }
        #expect(Pose(x: -0.1, y: 0.2, heading: 359.999).encoded() == [0xFF, 0xFF, 0xFF, 0, 0, 2, 0, 0])
        #expect(Pose(x: 10, y: -10, heading: 90).encoded() == [0, 0, 100, 0xFF, 0xFF, 0x9C, 0x23, 0x28])
    }

    @Test("Malformed pose encodings are rejected")
    func poseDecodingErrors() {
        let cases: [([UInt8], Pose.DecodingError.Code)] = [
            ([], .truncated), ([0, 0, 0, 0, 0, 0, 0], .truncated),
            ([0, 0, 0, 0, 0, 0, 0, 0, 0], .trailingBytes),
            ([0, 0, 0, 0, 0, 0, 0x8C, 0xA0], .malformed), ([0, 0, 0, 0, 0, 0, 0xFF, 0xFF], .malformed),
        ]
        for (bytes, code) in cases {
            do {
                _ = try Pose(decoding: bytes)
                Issue.record("accepted \(bytes)")
            } catch {
                #expect(error.code == code)
                #expect(!error.diagnostic.isEmpty)
            }
        }
    }

    @Test("A script holds, then moves linearly and turns the short way")
    func motionScript() {
        let start = Pose(x: 0, y: 0, heading: 350)
        let target = Pose(x: 10, y: 20, heading: 30)
        let script = MotionScript(
            from: start, start: seconds(1), steps: [.hold(.seconds(1)), .move(to: target, over: .seconds(2))])
        #expect(script.end == seconds(4))
        #expect(script.finalPose == target)
        #expect(script.pose(at: .zero) == start)
        #expect(script.pose(at: seconds(1.5)) == start)
        #expect(script.pose(at: seconds(2)) == start)
        let halfway = script.pose(at: seconds(3))
        #expect(isClose(halfway.x, 5))
        #expect(isClose(halfway.y, 10))
        #expect(isClose(halfway.heading, 10))  // 350 -> 30 through 0, not back through 190.
        let quarter = script.pose(at: seconds(2.5))
        #expect(isClose(quarter.heading, 0) || isClose(quarter.heading, 360))
        #expect(script.pose(at: seconds(4)) == target)
        #expect(script.pose(at: seconds(100)) == target)
    }

    @Test("A zero-length move jumps, and appended steps follow the last one")
    func jumpsAndAppends() {
        var script = MotionScript(from: Pose(x: 0, y: 0, heading: 0))
        script.append(.move(to: Pose(x: 50, y: 0, heading: 180), over: .zero))
        script.append(.hold(.milliseconds(500)))
        script.append(.move(to: Pose(x: 50, y: 40, heading: 180), over: .seconds(1)))
        #expect(script.steps.count == 3)
        #expect(script.pose(at: .zero) == Pose(x: 0, y: 0, heading: 0))
        #expect(script.pose(at: seconds(0.25)) == Pose(x: 50, y: 0, heading: 180))
        #expect(isClose(script.pose(at: seconds(1)).y, 20))
        #expect(script.end == seconds(1.5))
    }
}

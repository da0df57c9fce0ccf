import ProfileDrop

/// How the simulated device moves during `share`.
enum MotionMode: Equatable {
    /// No pose given: once paired, the inviting device holds still at the origin and the other is
    /// brought from 30 cm to 7 cm in front of it, facing it, as two people holding phones together.
    case approach
    /// Stay at the given pose.
    case still(Pose)
    /// Start at the pose; arrow keys move and turn it when the session is interactive.
    case interactive(Pose)
    /// Follow a script from the start pose.
    case scripted(MotionScript)
}

/// Parsing of the pose and motion flags.
enum PoseSyntax {
    /// `X,Y,H`: centimetres, centimetres, degrees.
    static func pose(_ text: String, flag: String) throws -> Pose {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count == 3, let x = Double(parts[0]), let y = Double(parts[1]),
            let heading = Double(parts[2]),
            x.isFinite, y.isFinite, heading.isFinite, abs(x) <= Pose.roomLimit, abs(y) <= Pose.roomLimit
        else {
            throw UsageError(
                "--\(flag) takes X,Y,H in centimetres and degrees (for example 7,0,180), got '\(text)'")
        }
        return Pose(x: x, y: y, heading: heading)
    }

    /// `hold SECONDS; move X,Y,H SECONDS; ...`, starting from `start` at time zero.
    static func script(_ text: String, from start: Pose) throws -> MotionScript {
        var script = MotionScript(from: start)
        for step in text.split(separator: ";") {
            let words = step.split(separator: " ")
            func seconds(_ word: Substring) throws -> Duration {
                guard let value = Double(word), value.isFinite, value >= 0, value <= 3600 else {
                    throw UsageError("--motion: '\(word)' is not a duration in seconds (0 to 3600)")
                }
                return .nanoseconds(Int64(value * 1e9))
            }
            switch words.first {
            case "hold" where words.count == 2:
                script.append(.hold(try seconds(words[1])))
            case "move" where words.count == 3:
                script.append(
                    .move(to: try pose(String(words[1]), flag: "motion"), over: try seconds(words[2])))
            default:
                throw UsageError(
                    "--motion: cannot read step '\(String(step).trimmingWhitespace())'; use 'hold S' or 'move X,Y,H S'"
                )
            }
        }
        return script
    }
}

extension DeviceMotion {
    /// The motion `mode` asks for, before any session.
    init(_ mode: MotionMode) {
        switch mode {
        case .approach: self.init(start: Pose(x: 0, y: 0, heading: 0), script: nil)
        case .still(let start), .interactive(let start): self.init(start: start, script: nil)
        case .scripted(let script): self.init(start: script.initialPose, script: script)
        }
    }
}

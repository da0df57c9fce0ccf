import Foundation
import ProfileDropCapture
import ProfileDropCore
import ProfileDropSimulator

/// `--timeline OUT.svg` of `replay` and `simulate`: the session drawn as one SVG picture
/// (``SessionTimeline`` and ``TimelineSVG``).
enum TimelineOutput {
    /// The most devices a picture shows lifelines and estimates for.
    static let maximumDevices = 6

    /// Checks, before any work is done, that the picture can be written to `path`: not a
    /// directory, in a directory that exists and can be written, not over a file that cannot.
    static func checkWritable(_ path: String) throws(UsageError) {
        guard !path.isEmpty else { throw UsageError("--timeline needs a file name") }
        let files = FileManager.default
        var isDirectory: ObjCBool = false
        if files.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard !isDirectory.boolValue else { throw UsageError("--timeline \(path) is a directory") }
            guard files.isWritableFile(atPath: path) else {
                throw UsageError("--timeline cannot write \(path)")
            }
            return
        }
        let parent = URL(fileURLWithPath: path).deletingLastPathComponent().path
        guard files.fileExists(atPath: parent, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw UsageError("--timeline \(path): no directory \(parent)")
        }
        guard files.isWritableFile(atPath: parent) else {
            throw UsageError("--timeline cannot write \(path): the directory is not writable")
        }
    }

    /// Draws `timeline` and writes it to `path`.
    static func write(_ timeline: SessionTimeline, to path: String) throws(UsageError) {
        do {
            try Data(TimelineSVG.render(timeline).utf8).write(to: URL(fileURLWithPath: path))
        } catch {
            throw UsageError("--timeline cannot write \(path): \(error.localizedDescription)")
        }
    }

    /// Runs `scenario` again with every device captured, keylog included (it is deterministic: the
    /// same seed gives the same run as the one reported), replays the capture and draws it.
    static func writeSimulated(scenario: Scenario, seed: UInt64?, title: String, to path: String) throws {
        let recorder = CaptureRecorder(options: CaptureOptions(keylog: true))
        _ = Simulation.run(scenario: scenario, seed: seed, options: SimulationOptions(keepsTranscript: false))
        {
            context -> any SansIODevice in
            CapturingDevice(
                context.makeCoreDevice(), name: context.spec.name, recorder: recorder,
                randomSeedMaterial: context.seedMaterial,
                staticKey: .seedMaterial(context.staticKeySeedMaterial))
        }
        let capture = try CaptureFile(bytes: recorder.fileBytes())
        try write(SessionTimeline(capture: capture, title: title), to: path)
    }

    /// The last component of `path`, for titles.
    static func fileName(_ path: String) -> String {
        URL(fileURLWithPath: path).lastPathComponent
    }
}

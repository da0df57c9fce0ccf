import Foundation
import ProfileDrop
import ProfileDropCapture
import ProfileDropCore
import ProfileDropSimulator

/// `--timeline OUT.svg` of `replay` and `simulate`: the session drawn as one SVG picture
/// (``SessionTimeline`` and ``TimelineSVG``).
enum TimelineOutput {
    /// The most devices a picture shows lifelines and estimates for.
    static let maximumDevices = 6

    /// Draws `timeline` and writes it to `path` whole, as ``OutputFile`` writes: a failure leaves
    /// the file that was there (and is a runtime error, exit code 6, like a capture's).
    static func write(_ timeline: SessionTimeline, to path: String) throws(OutputFile.Failure) {
        try OutputFile.replace(path, with: Array(TimelineSVG.render(timeline).utf8), secret: false)
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

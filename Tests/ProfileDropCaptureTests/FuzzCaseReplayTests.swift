import Foundation
import ProfileDropCapture
import Testing

/// The capture inputs the fuzzer minimised (Tests/ProfileDropCoreTests/FuzzCases/capture): each must
/// be refused with a typed error or replayed to an answer, never hang or trap.
struct FuzzCaseReplayTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent()
        .appendingPathComponent("ProfileDropCoreTests/FuzzCases/capture")

    static var cases: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()
    }

    @Test func thereAreCasesToReplay() {
        #expect(!Self.cases.isEmpty)
    }

    @Test(.timeLimit(.minutes(1)), arguments: FuzzCaseReplayTests.cases)
    func replayAnswers(name: String) throws {
        let path = Self.directory.appendingPathComponent(name).path
        let capture: CaptureFile
        do {
            capture = try CaptureFile.read(path: path)
        } catch {
            #expect(!error.diagnostic.isEmpty)
            return
        }
        for device in capture.devices {
            do {
                _ = try Replay.run(device)
            } catch {
                #expect(!error.diagnostic.isEmpty)
            }
        }
    }
}

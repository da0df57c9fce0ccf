import Foundation
import Testing

@testable import ProfileDropCLI

@Suite struct BenchRoomCommandTests {
    func run(_ arguments: [String]) -> (code: Int32, output: [String], errors: [String]) {
        runInProcess(arguments)
    }

    @Test func aSmallRoomReportsEveryFigureAndTheRatioLast() {
        let result = run(["bench", "room", "--devices", "3", "--seeds", "1", "--duration", "15"])
        #expect(result.code == 0, "\(result.errors)")
        #expect(result.output.count == 5)
        #expect(result.output.first?.hasPrefix("bench room: seeds 1, horizon 15 s virtual") == true)
        #expect(result.output.contains { $0.hasPrefix("lone pair: exchanged 1/1, median ") })
        #expect(
            result.output.contains {
                $0.hasPrefix("room 3: pair exchanged 1/1")
                    && $0.contains(" multicast datagrams/s per device; ")
                    && $0.contains(" CPU-s per simulated minute; 0 violations")
            })
        #expect(result.output.contains { $0.hasPrefix("peak RSS: ") })
        let last = result.output.last ?? ""
        #expect(last.hasPrefix("room/pair: "))
        #expect(Double(last.dropFirst("room/pair: ".count)) != nil)
    }

    @Test(arguments: [
        ["--devices", "1"], ["--devices", "20,x"], ["--devices", "501"], ["--devices", ""], ["--seeds", "0"],
        ["--duration", "5"],
    ])
    func badFlagsAreUsageErrors(_ flags: [String]) {
        let result = run(["bench", "room"] + flags)
        #expect(result.code == 2)
        #expect(result.output.isEmpty)
        #expect(result.errors.count == 1)
    }
}

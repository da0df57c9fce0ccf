import Foundation
import Testing

@testable import ProfileDropCLI

@Suite struct BenchHallCommandTests {
    func run(_ arguments: [String]) -> (code: Int32, output: [String], errors: [String]) {
        runInProcess(arguments)
    }

    @Test func aSmallHallReportsEveryPairAndTheRatioLast() {
        let result = run(["bench", "hall", "--devices", "60", "--pairs", "3", "--duration", "45"])
        #expect(result.code == 0, "\(result.errors)")
        #expect(result.output.count == 7)
        #expect(
            result.output.first?.hasPrefix("bench hall: 60 devices, 3 pairs (1 meet twice), seeds 1") == true)
        #expect(result.output.count { $0.hasPrefix("pair ") && $0.contains(" ratio ") } == 4)
        #expect(
            result.output.contains {
                $0.hasPrefix("hall: 4/4 meetings exchanged in every seed, 0 bystanders exchanged; ")
                    && $0.contains(" multicast datagrams/s per device; ")
                    && $0.contains(" CPU-s per simulated minute")
                    && $0.contains(" KiB per device (peak RSS growth); ") && $0.contains(" replayed; ")
                    && $0.hasSuffix("; 0 violations")
            })
        let last = result.output.last ?? ""
        #expect(last.hasPrefix("room/pair: "))
        #expect(Double(last.dropFirst("room/pair: ".count)) != nil)
    }

    @Test(arguments: [
        ["--devices", "1"], ["--devices", "20,50"], ["--devices", "1001"], ["--pairs", "0"],
        ["--devices", "10", "--pairs", "5"], ["--duration", "30"], ["--runs", "3"],
    ])
    func badFlagsAreUsageErrors(_ flags: [String]) {
        let result = run(["bench", "hall"] + flags)
        #expect(result.code == 2)
        #expect(result.output.isEmpty)
        #expect(result.errors.count == 1)
    }
}

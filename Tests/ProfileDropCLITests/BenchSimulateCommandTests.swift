import Foundation
import Testing

@testable import ProfileDropCLI

@Suite struct BenchSimulateCommandTests {
    /// Not a timing: the command runs every exchange it says, in rounds against the floor, and
    /// prints each figure with its median and range.
    @Test func everyExchangeRunsAndEachFigureHasItsRoundsRange() throws {
        let console = CapturingConsole()
        let code = CommandLineTool.run(arguments: ["bench", "simulate", "--runs", "5"], console: console)
        #expect(code == 0, "\(console.errorLines)")
        let lines = console.outputLines
        #expect(lines.count == 6, "\(lines)")
        #expect(lines.first?.hasPrefix("handshake floor (2 keygens + 6 X25519): ") == true)
        #expect(lines.first?.hasSuffix("(median of 5 rounds)") == true)
        #expect(lines.contains { $0.hasPrefix("bench simulate (no photo): 5/5 exchanged, ") })
        #expect(lines.contains { $0.hasPrefix("bench simulate (262144-byte photo): 1/1 exchanged, ") })
        let costs = lines.filter {
            $0.hasPrefix("  one simulated exchange (both devices, discovery to close) costs ")
        }
        #expect(costs.count == 2)
        // Five rounds of one exchange each without a photo; the one photo exchange falls in one round.
        #expect(costs.first?.contains("(median of 5 rounds; min ") == true)
        #expect(costs.last?.contains("(median of 1 round; min ") == true)
        for line in costs {
            let figure = line.split(separator: " ").compactMap { Double($0) }.first
            #expect((figure ?? 0) > 1, "an exchange costs more than one handshake floor: \(line)")
        }
        #expect(lines.last?.hasPrefix("handshake: INVITE ") == true)
    }
}

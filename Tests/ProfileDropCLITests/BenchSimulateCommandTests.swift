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
        #expect(lines.count == 7, "\(lines)")
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

        // Right under the exchange without a photo: its X25519 share and the rest, which add up to
        // its cost, and what 2.0 floors leaves the rest.
        let costIndex = try #require(lines.firstIndex { $0 == costs.first })
        let split = lines[costIndex + 1]
        #expect(split.hasPrefix("  of which its 4 X25519 keys and 6 DH are "), "\(split)")
        let numbers = split.split(separator: " ").compactMap {
            Double($0.trimmingCharacters(in: .punctuationCharacters))
        }
        // 4, 6, the X25519 share, the rest, 2.0's allowance for the rest (then "2.0" itself).
        #expect(numbers.count == 6, "\(split)")
        if numbers.count == 6, let cost = costs.first?.split(separator: " ").compactMap({ Double($0) }).first
        {
            let (x25519, rest, allowance) = (numbers[2], numbers[3], numbers[4])
            // Four keys and six DH against a floor of two keys and six DH: more than one floor,
            // less than 4/2 of one.
            #expect(x25519 > 1 && x25519 < 2, "\(split)")
            #expect(abs(x25519 + rest - cost) <= 0.02, "\(split) against \(cost)")
            #expect(abs(x25519 + allowance - 2) <= 0.011, "\(split)")
        }
    }
}

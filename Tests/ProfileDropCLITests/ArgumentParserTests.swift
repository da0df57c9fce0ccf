import Testing

@testable import ProfileDropCLI

@Suite struct ArgumentParserTests {
    let parser = ArgumentParser(
        command: "demo",
        options: [
            OptionSpec(name: "verbose", kind: .flag, help: ""),
            OptionSpec(name: "seed", kind: .single, help: ""),
            OptionSpec(name: "interface", kind: .repeatable, help: ""),
        ])

    @Test func parsesFlagsValuesRepeatsAndPositionals() throws {
        let parsed = try parser.parse([
            "a", "--verbose", "--seed=7", "--interface", "lo", "--interface", "eth0", "b",
        ])
        #expect(parsed.has("verbose"))
        #expect(parsed.value("seed") == "7")
        #expect(parsed.allValues("interface") == ["lo", "eth0"])
        #expect(parsed.positionals == ["a", "b"])
    }

    @Test func doubleDashEndsOptions() throws {
        let parsed = try parser.parse(["--", "--verbose"])
        #expect(!parsed.has("verbose"))
        #expect(parsed.positionals == ["--verbose"])
    }

    @Test(arguments: [
        (["--nope"], "demo: unknown option '--nope'"),
        (["-x"], "demo: unknown option '-x' (options are spelled --name)"),
        (["--seed"], "demo: --seed needs a value (VALUE)"),
        (["--seed", "1", "--seed", "2"], "demo: --seed given more than once"),
        (["--verbose=yes"], "demo: --verbose takes no value"),
    ])
    func rejectsMalformedInput(arguments: [String], message: String) {
        #expect(throws: UsageError(message)) { try parser.parse(arguments) }
    }

    @Test func integerOptionsAreRangeChecked() throws {
        let parsed = try parser.parse(["--seed", "70"])
        #expect(try parsed.integer("seed", default: 1, in: 1...100) == 70)
        #expect(throws: UsageError.self) { try parsed.integer("seed", default: 1, in: 1...10) }
        #expect(try parser.parse([]).integer("seed", default: 5, in: 1...10) == 5)
        #expect(throws: UsageError.self) { try parser.parse(["--seed", "-1"]).unsigned64("seed") }
    }
}

import Testing

@testable import ProfileDropCLI

@Suite struct ArgumentParserTests {
    static let verbose = Flag("verbose", help: "")
    static let seed = Option.integer("seed", in: 1...100, help: "")
    static let big = Option.unsigned64("big", valueName: "S", help: "")
    static let interface = Option.text("interface", valueName: "NAME", repeatable: true, help: "")

    let parser = ArgumentParser(
        command: "demo", options: [Self.verbose, Self.seed, Self.big, Self.interface])

    @Test func parsesFlagsValuesRepeatsAndPositionals() throws {
        let parsed = try parser.parse([
            "a", "--verbose", "--seed=7", "--interface", "lo", "--interface", "eth0", "b",
        ])
        #expect(parsed.has(Self.verbose))
        #expect(parsed.value(Self.seed) == 7)
        #expect(parsed.allValues(Self.interface) == ["lo", "eth0"])
        #expect(parsed.positionals == ["a", "b"])
        #expect(parsed.value(Self.big) == nil)
        #expect(parsed.value(Self.big, default: 3) == 3)
    }

    @Test func doubleDashEndsOptions() throws {
        let parsed = try parser.parse(["--", "--verbose"])
        #expect(!parsed.has(Self.verbose))
        #expect(parsed.positionals == ["--verbose"])
    }

    @Test(arguments: [
        (["--nope"], "unknown option '--nope'"),
        (["-x"], "unknown option '-x' (options are spelled --name)"),
        (["--seed"], "--seed needs a value (N)"),
        (["--seed", "1", "--seed", "2"], "--seed given more than once"),
        (["--verbose=yes"], "--verbose takes no value"),
        (["--seed", "0"], "--seed takes a whole number from 1 to 100, got '0'"),
        (["--seed", "abc"], "--seed takes a whole number from 1 to 100, got 'abc'"),
        (["--big", "-1"], "--big takes a whole number from 0 to 18446744073709551615, got '-1'"),
    ])
    func rejectsMalformedInput(arguments: [String], message: String) {
        #expect(throws: UsageError(message)) { try parser.parse(arguments) }
    }

    /// A misspelt option within two edits names the option meant; the command's name is left to the
    /// one prefix the tool adds.
    @Test(arguments: [
        (["--verbos"], "unknown option '--verbos'; did you mean '--verbose'?"),
        (["--interfcae", "lo"], "unknown option '--interfcae'; did you mean '--interface'?"),
        (["--sed=3"], "unknown option '--sed'; did you mean '--seed'?"),
        (["--hepl"], "unknown option '--hepl'; did you mean '--help'?"),
        (["-verbose"], "unknown option '-verbose'; did you mean '--verbose'?"),
        (["--frobnicate"], "unknown option '--frobnicate'"),
    ])
    func suggestsTheClosestOption(arguments: [String], message: String) {
        #expect(throws: UsageError(message)) { try parser.parse(arguments) }
    }

    @Test func editDistanceCountsInsertionsDeletionsSubstitutionsAndSwaps() {
        #expect(Suggestion.editDistance("share", "share") == 0)
        #expect(Suggestion.editDistance("shar", "share") == 1)
        #expect(Suggestion.editDistance("shaer", "share") == 1)
        #expect(Suggestion.editDistance("sxaer", "share") == 2)
        #expect(Suggestion.editDistance("", "abc") == 3)
        #expect(Suggestion.closest(to: "shar", among: ["simulate", "share"]) == "share")
        #expect(Suggestion.closest(to: "zzzzz", among: ["share", "peers"]) == nil)
    }

    /// Help shows every option of the command and `-h, --help`.
    @Test func optionSummaryEndsWithHelp() {
        #expect(parser.optionSummary.count == 5)
        #expect(parser.optionSummary.last?.hasPrefix("  -h, --help ") == true)
        #expect(parser.optionSummary.contains { $0.hasPrefix("  --interface NAME (repeatable) ") })
    }

    /// Values are read as the command line is parsed, so a malformed value is reported first, in
    /// the order given, before any rule that combines options can run.
    @Test func valuesAreCheckedInCommandLineOrderWhileParsing() {
        #expect(throws: UsageError("--seed takes a whole number from 1 to 100, got 'x'")) {
            try parser.parse(["--seed", "x", "--big", "y"])
        }
        #expect(throws: UsageError("--big takes a whole number from 0 to 18446744073709551615, got 'y'")) {
            try parser.parse(["--big", "y", "--seed", "x"])
        }
    }

    /// Every command declares each option once, and its parser knows every option it declares.
    @Test func everyCommandsOptionsAreDistinct() {
        for command in CommandLineTool.subcommands {
            let names = command.parser.options.map(\.name)
            #expect(Set(names).count == names.count, "\(command.name)")
            #expect(names.allSatisfy { !$0.isEmpty && !$0.hasPrefix("-") }, "\(command.name)")
        }
    }
}

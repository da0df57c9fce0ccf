import ProfileDropJSON

/// One of `count` disjoint parts of a swarm, numbered from 1: shard `index` holds runs `index`,
/// `index + count`, `index + 2·count`, … (run numbers from 1). Taking every `count`th run, rather
/// than a block of consecutive runs, spreads the rare costly runs (crowded rooms, long partitions)
/// evenly over the shards, so that they finish at about the same time. A shard may hold no run when
/// `count` exceeds the swarm's runs; the shards together always hold every run exactly once.
public struct SwarmShard: Hashable, Sendable, CustomStringConvertible {
    /// The shard's number, from 1 to ``count``.
    public let index: Int
    /// How many shards the swarm is split into.
    public let count: Int

    /// The most shards a swarm may be split into.
    public static let maximumCount = 1_000_000

    /// The whole swarm as one shard.
    public static let whole = SwarmShard(uncheckedIndex: 1, count: 1)

    /// Shard `index` of `count`, or nil unless 1 ≤ `index` ≤ `count` ≤ ``maximumCount``.
    public init?(index: Int, count: Int) {
        guard (1...Self.maximumCount).contains(count), (1...count).contains(index) else { return nil }
        self.init(uncheckedIndex: index, count: count)
    }

    /// Reads `I/K` (decimal digits only, as `--shard` takes it), or nil when `text` is not a valid
    /// shard.
    public init?(parsing text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        // Digits only: Int("+1") would take a sign, and nobody means one here.
        guard parts.count == 2,
            parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
            let index = Int(parts[0]), let count = Int(parts[1])
        else { return nil }
        self.init(index: index, count: count)
    }

    private init(uncheckedIndex index: Int, count: Int) {
        self.index = index
        self.count = count
    }

    /// `I/K`.
    public var description: String { "\(index)/\(count)" }

    /// Whether the run numbered `runNumber` (from 1) belongs to this shard.
    public func holds(runNumber: Int) -> Bool {
        runNumber >= 1 && (runNumber - 1) % count == index - 1
    }

    /// How many of a `runs`-run swarm's runs this shard holds: `runs / count`, plus one for the
    /// first `runs % count` shards.
    public func runCount(inSwarmOf runs: Int) -> Int {
        runs / count + (index <= runs % count ? 1 : 0)
    }

    /// The run number (from 1) of the shard's run at `position` (from 0).
    public func runNumber(atPosition position: Int) -> Int {
        index + position * count
    }

    /// `shard I/K holds R of the N runs: runs a, b, c, …`, for a sharded swarm's header.
    public func holdingDescription(inSwarmOf runs: Int) -> String {
        let held = runCount(inSwarmOf: runs)
        guard held > 0 else { return "shard \(self) holds none of the \(runs) runs" }
        let first = (0..<min(held, 3)).map { String(runNumber(atPosition: $0)) }
        return "shard \(self) holds \(held) of the \(runs) runs: "
            + "run\(held == 1 ? "" : "s") \(first.joined(separator: ", "))\(held > 3 ? ", …" : "")"
    }
}

extension Swarm {
    /// Runs the runs of a `runs`-run swarm from `seed` that `shard` holds, with the real protocol
    /// core: each with the seed, conditions and result it has in the whole swarm.
    public static func run(runs: Int, seed: UInt64, shard: SwarmShard, transcripts: Bool? = nil)
        -> SwarmReport
    {
        run(runs: runs, seed: seed, shard: shard, timeouts: timeouts, transcripts: transcripts) {
            $0.makeCoreDevice()
        }
    }
}

/// What a swarm, or one shard of it, found, in a form small enough to write to a file and merge:
/// the counts and every failing run. `profiledrop simulate --swarm --shard I/K --summary FILE`
/// writes one; `profiledrop simulate --merge FILE...` merges the K of them into the whole swarm's.
public struct SwarmSummary: Equatable, Sendable {
    /// A run that broke an invariant.
    public struct FailingRun: Equatable, Sendable {
        /// The run's number in the whole swarm, from 1.
        public var runNumber: Int
        /// The run's seed.
        public var runSeed: UInt64
        /// The invariants it broke, as the swarm prints them.
        public var violations: [String]

        /// Creates a failing run.
        public init(runNumber: Int, runSeed: UInt64, violations: [String]) {
            self.runNumber = runNumber
            self.runSeed = runSeed
            self.violations = violations
        }

        /// The command that replays the run alone.
        public var reproduceCommand: String { Swarm.reproduceCommand(runSeed: runSeed) }
    }

    /// The swarm's seed.
    public var seed: UInt64
    /// The whole swarm's runs.
    public var runs: Int
    /// The part of the swarm summarized: ``SwarmShard/whole`` for a whole or merged swarm.
    public var shard: SwarmShard
    /// The shard's runs whose close pair exchanged cards.
    public var exchanged: Int
    /// The shard's runs whose close pair did not.
    public var aborted: Int
    /// The shard's runs that broke an invariant, in run order.
    public var failingRuns: [FailingRun]

    /// Creates a summary.
    public init(
        seed: UInt64, runs: Int, shard: SwarmShard, exchanged: Int, aborted: Int, failingRuns: [FailingRun]
    ) {
        self.seed = seed
        self.runs = runs
        self.shard = shard
        self.exchanged = exchanged
        self.aborted = aborted
        self.failingRuns = failingRuns
    }

    /// The summary of `report`.
    public init(report: SwarmReport) {
        let failing = report.runs.enumerated().compactMap { position, outcome -> FailingRun? in
            guard !outcome.violations.isEmpty else { return nil }
            return FailingRun(
                runNumber: report.shard.runNumber(atPosition: position), runSeed: outcome.runSeed,
                violations: outcome.violations)
        }
        self.init(
            seed: report.seed, runs: report.totalRuns, shard: report.shard, exchanged: report.exchangedRuns,
            aborted: report.abortedRuns, failingRuns: failing)
    }

    /// The runs summarized.
    public var shardRuns: Int { exchanged + aborted }

    /// Every broken invariant prefixed with its run's seed, as ``SwarmReport/violations`` lists them.
    public var violations: [String] {
        failingRuns.flatMap { run in run.violations.map { "seed \(run.runSeed): \($0)" } }
    }

    /// `swarm: R runs, X exchanged, Y aborted, V violations`, as the swarm's last line.
    public var summaryLine: String {
        "swarm: \(shardRuns) runs, \(exchanged) exchanged, \(aborted) aborted, \(violations.count) violations"
    }

    /// Each failing run as the swarm prints it: `run N/R seed=S`, then its violations and the
    /// command that replays it, indented as in the swarm's report.
    public var failureLines: [String] {
        failingRuns.flatMap { run in
            ["run \(run.runNumber)/\(runs) seed=\(run.runSeed)"] + run.violations.map { "  violation: \($0)" }
                + ["  reproduce: \(run.reproduceCommand)"]
        }
    }

    // MARK: The file

    /// The value of `format`, which marks a swarm summary and its layout.
    public static let formatName = "profiledrop swarm summary 1"

    private static let keys = [
        "format", "seed", "runs", "shard", "shardRuns", "exchanged", "aborted", "violations", "failing",
    ]
    private static let failingKeys = ["run", "seed", "violations", "reproduce"]

    /// The summary as JSON. Seeds are decimal strings, since JSON numbers hold integers exactly only
    /// up to 2^53; the counts are numbers.
    public var json: JSONValue {
        .object([
            ("format", .string(Self.formatName)),
            ("seed", .string(String(seed))),
            ("runs", .integer(runs)),
            ("shard", .string(shard.description)),
            ("shardRuns", .integer(shardRuns)),
            ("exchanged", .integer(exchanged)),
            ("aborted", .integer(aborted)),
            ("violations", .integer(violations.count)),
            (
                "failing",
                .array(
                    failingRuns.map { run in
                        .object([
                            ("run", .integer(run.runNumber)),
                            ("seed", .string(String(run.runSeed))),
                            ("violations", .array(run.violations.map { .string($0) })),
                            ("reproduce", .string(run.reproduceCommand)),
                        ])
                    })
            ),
        ])
    }

    /// The summary file's text: indented JSON, one member a line, and a final newline.
    public var fileText: String {
        json.serialized(JSONValue.Format(pretty: true, sortedKeys: false)) + "\n"
    }

    /// Reads a summary file's text, checking that its counts agree with each other and its failing
    /// runs belong to its shard.
    /// - Throws: ``SwarmSummaryError`` with a one-line reason.
    public init(fileText text: String) throws(SwarmSummaryError) {
        guard !text.allSatisfy(\.isWhitespace) else {
            throw SwarmSummaryError("the file is empty (did its shard finish?)")
        }
        let root: JSONValue
        do {
            root = try JSONValue.parse(text)
        } catch {
            throw SwarmSummaryError("not a swarm summary: invalid JSON at \(error)")
        }
        guard case .object(let members) = root,
            members.first(where: { $0.key == "format" })?.value == .string(Self.formatName)
        else {
            throw SwarmSummaryError("not a swarm summary (no \"format\": \"\(Self.formatName)\")")
        }
        let top = try SummaryFields(root, at: "", allowed: Self.keys)
        let seed = try top.seed("seed")
        let runs = try top.integer("runs", in: 1...(1 << 53))
        let shardText = try top.string("shard")
        guard let shard = SwarmShard(parsing: shardText) else {
            throw SwarmSummaryError("shard: expected I/K with 1 ≤ I ≤ K, found \"\(shardText)\"")
        }
        let shardRuns = try top.integer("shardRuns", in: 0...runs)
        guard shardRuns == shard.runCount(inSwarmOf: runs) else {
            throw SwarmSummaryError(
                "shardRuns: shard \(shard) of \(runs) runs holds \(shard.runCount(inSwarmOf: runs)), "
                    + "found \(shardRuns)")
        }
        let exchanged = try top.integer("exchanged", in: 0...shardRuns)
        let aborted = try top.integer("aborted", in: 0...shardRuns)
        guard exchanged + aborted == shardRuns else {
            throw SwarmSummaryError(
                "exchanged (\(exchanged)) and aborted (\(aborted)) do not add up to shardRuns (\(shardRuns))")
        }
        let violationCount = try top.integer("violations", in: 0...(1 << 53))
        guard case .array(let items) = try top.required("failing") else {
            throw SwarmSummaryError(
                "failing: expected an array, found \(try top.required("failing").typeName)")
        }
        var failing: [FailingRun] = []
        for (position, item) in items.enumerated() {
            let location = "failing[\(position)]"
            let fields = try SummaryFields(item, at: location, allowed: Self.failingKeys)
            let runNumber = try fields.integer("run", in: 1...runs)
            guard shard.holds(runNumber: runNumber) else {
                throw SwarmSummaryError("\(location).run: run \(runNumber) is not in shard \(shard)")
            }
            if let previous = failing.last, previous.runNumber >= runNumber {
                throw SwarmSummaryError("\(location).run: runs must be listed in increasing order")
            }
            let runSeed = try fields.seed("seed")
            guard case .array(let texts) = try fields.required("violations"), !texts.isEmpty else {
                throw SwarmSummaryError("\(location).violations: expected a non-empty array of strings")
            }
            var violations: [String] = []
            for text in texts {
                guard case .string(let violation) = text else {
                    throw SwarmSummaryError(
                        "\(location).violations: expected strings, found \(text.typeName)")
                }
                violations.append(violation)
            }
            let run = FailingRun(runNumber: runNumber, runSeed: runSeed, violations: violations)
            guard try fields.string("reproduce") == run.reproduceCommand else {
                throw SwarmSummaryError(
                    "\(location).reproduce: expected \"\(run.reproduceCommand)\" for seed \(runSeed)")
            }
            failing.append(run)
        }
        let listed = failing.map(\.violations.count).reduce(0, +)
        guard listed == violationCount else {
            throw SwarmSummaryError("violations: \(violationCount), but the failing runs list \(listed)")
        }
        self.init(
            seed: seed, runs: runs, shard: shard, exchanged: exchanged, aborted: aborted, failingRuns: failing
        )
    }

    // MARK: Merging

    /// Merges the summaries of every shard of one swarm into the whole swarm's summary: the counts
    /// summed and the failing runs in run order, exactly what the unsharded swarm finds. Each
    /// summary comes with the name it is reported by (its file).
    /// - Throws: ``SwarmSummaryError`` when the summaries are not all the shards of one swarm:
    ///   none given, another seed, run count or shard count, a shard given twice, or a shard missing.
    public static func merge(_ shards: [(name: String, summary: SwarmSummary)]) throws(SwarmSummaryError)
        -> SwarmSummary
    {
        guard let (firstName, first) = shards.first else { throw SwarmSummaryError("no summaries to merge") }
        var seen: [Int: String] = [:]
        for (name, summary) in shards {
            guard summary.seed == first.seed, summary.runs == first.runs else {
                throw SwarmSummaryError(
                    "\(name) is from the swarm seed=\(summary.seed) runs=\(summary.runs), but \(firstName) "
                        + "is from seed=\(first.seed) runs=\(first.runs)")
            }
            guard summary.shard.count == first.shard.count else {
                throw SwarmSummaryError(
                    "\(name) is shard \(summary.shard), but \(firstName) is shard \(first.shard): "
                        + "the swarm was split two ways")
            }
            if let other = seen[summary.shard.index] {
                throw SwarmSummaryError("\(other) and \(name) are both shard \(summary.shard)")
            }
            seen[summary.shard.index] = name
        }
        let count = first.shard.count
        let missing = (1...count).filter { seen[$0] == nil }
        guard missing.isEmpty else {
            // A thousand missing shards need not all be named to be found.
            let named = missing.prefix(10).map { "\($0)/\(count)" }.joined(separator: ", ")
            throw SwarmSummaryError(
                "missing shard\(missing.count == 1 ? "" : "s") \(named)\(missing.count > 10 ? ", …" : "") "
                    + "(\(missing.count) of \(count)) of the swarm seed=\(first.seed) runs=\(first.runs)")
        }
        let summaries = shards.map(\.summary)
        return SwarmSummary(
            seed: first.seed, runs: first.runs, shard: .whole,
            exchanged: summaries.map(\.exchanged).reduce(0, +),
            aborted: summaries.map(\.aborted).reduce(0, +),
            failingRuns: summaries.flatMap(\.failingRuns).sorted { $0.runNumber < $1.runNumber })
    }
}

/// Why a swarm summary could not be read, or summaries could not be merged: one line.
public struct SwarmSummaryError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The one-line reason.
    public let reason: String

    /// An error explained by `reason`.
    public init(_ reason: String) { self.reason = reason }

    /// The reason itself.
    public var description: String { reason }
}

/// A summary's JSON object, its keys checked against an allowed list.
private struct SummaryFields {
    let object: JSONObject
    let location: String

    init(_ value: JSONValue, at location: String, allowed: [String]) throws(SwarmSummaryError) {
        do {
            object = try JSONObject(value, allowedKeys: allowed)
        } catch {
            switch error {
            case .notAnObject(let found):
                throw SwarmSummaryError(
                    "\(location.isEmpty ? "the file" : location): expected an object, found \(found)")
            case .unknownKey(let key):
                throw SwarmSummaryError("\(location.isEmpty ? "" : location + ": ")unknown key \"\(key)\"")
            }
        }
        self.location = location
    }

    private func path(_ key: String) -> String { location.isEmpty ? key : "\(location).\(key)" }

    func required(_ key: String) throws(SwarmSummaryError) -> JSONValue {
        guard let value = object[key] else {
            throw SwarmSummaryError("\(location.isEmpty ? "" : location + ": ")missing key \"\(key)\"")
        }
        return value
    }

    func string(_ key: String) throws(SwarmSummaryError) -> String {
        let value = try required(key)
        guard case .string(let text) = value else {
            throw SwarmSummaryError("\(path(key)): expected a string, found \(value.typeName)")
        }
        return text
    }

    func integer(_ key: String, in range: ClosedRange<Int>) throws(SwarmSummaryError) -> Int {
        let value = try required(key)
        guard let whole = value.wholeNumber(in: range) else {
            throw SwarmSummaryError(
                "\(path(key)): expected a whole number from \(range.lowerBound) to \(range.upperBound), "
                    + "found \(value.serialized)")
        }
        return whole
    }

    /// A seed: a decimal string, since a 64-bit seed may exceed what a JSON number holds exactly.
    func seed(_ key: String) throws(SwarmSummaryError) -> UInt64 {
        let value = try required(key)
        guard case .string(let text) = value, text.allSatisfy(\.isASCII), let seed = UInt64(text),
            !text.hasPrefix("+")
        else {
            throw SwarmSummaryError(
                "\(path(key)): expected a seed as a decimal string, found \(value.serialized)")
        }
        return seed
    }
}

import ProfileDropCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Searches datagrams for card content in the clear: every card's name, owner and keywords as
/// UTF-8, and fragments of every photo.
///
/// Text shorter than ``minimumTextBytes`` is not searched: a given 4-byte string turns up by chance
/// about once in 4 GB of ciphertext, and a 1000-run swarm scans some 10^8 bytes for a dozen needles
/// per run, so 4-byte needles made the check flaky (one false hit in 1000 runs); at 6 bytes a chance
/// hit needs about 10^14 bytes.
/// Photos are covered by 16-byte fragments taken every ``photoStride`` bytes, so any plaintext run
/// of `photoStride + 15` photo bytes or more is caught; fragments with fewer than eight distinct
/// byte values (runs of padding, say) are skipped because they also occur in ordinary framing.
///
/// A datagram is searched for fragments one eight-byte word at every eighth offset: a fragment at
/// any offset wholly contains the word that starts at the first multiple of eight at or after it,
/// 0 to 7 bytes into the fragment. So a filter knows the word at each of those eight shifts into
/// every fragment, and a word it passes is confirmed by looking up the 16 bytes at each of the
/// eight offsets it could have come from. This finds every fragment that a check of every offset
/// finds, and nothing else, at an eighth of the probes.
public struct PlaintextScanner {
    /// Shortest text needle searched for, in bytes.
    public static let minimumTextBytes = 6
    /// Distance between photo fragments, in bytes.
    public static let photoStride = 64
    private static let fragmentBytes = 16
    private static let wordBytes = 8
    /// Shifts into a fragment at which a word lies wholly inside it, all of which the filter knows.
    private static let wordShifts = fragmentBytes - wordBytes

    /// Where a photo fragment was first taken from: the card's label and the byte offset. The
    /// report line is built only on a hit, not for each of the thousands of fragments of a photo.
    private struct FragmentSource {
        var label: Int
        var offset: Int
    }

    /// A fragment as its two words, loaded in memory order.
    private struct FragmentWords: Equatable {
        var first: UInt64
        var second: UInt64

        init(_ raw: UnsafeRawBufferPointer, at offset: Int) {
            first = raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            second = raw.loadUnaligned(fromByteOffset: offset + PlaintextScanner.wordBytes, as: UInt64.self)
        }
    }

    /// The distinct fragments, each with where it was first taken from, in open addressing.
    private struct FragmentTable {
        private(set) var fragments: [FragmentWords] = []
        private(set) var sources: [FragmentSource] = []
        /// A slot holds a fragment's index plus one, or zero when empty.
        private var slots: [Int32]
        private let slotShift: UInt64

        /// A table with room for `capacity` fragments, at most half its slots full.
        init(capacity: Int) {
            var size = 16
            while size < capacity * 2 { size *= 2 }
            slots = Array(repeating: 0, count: size)
            fragments.reserveCapacity(capacity)
            sources.reserveCapacity(capacity)
            slotShift = UInt64(64 - size.trailingZeroBitCount)
        }

        var isEmpty: Bool { fragments.isEmpty }

        private func firstSlot(_ words: FragmentWords) -> Int {
            let hash = (words.first ^ (words.second &* 0xC2B2_AE3D_27D4_EB4F)) &* 0x9E37_79B9_7F4A_7C15
            return Int(truncatingIfNeeded: hash &>> slotShift)
        }

        /// The source of the fragment made of `words`, if there is one.
        func source(of words: FragmentWords) -> FragmentSource? {
            let mask = slots.count - 1
            var slot = firstSlot(words)
            while slots[slot] != 0 {
                let index = Int(slots[slot]) - 1
                if fragments[index] == words { return sources[index] }
                slot = (slot + 1) & mask
            }
            return nil
        }

        /// Adds a fragment unless it is already there, which keeps its first source.
        mutating func insert(_ words: FragmentWords, source: FragmentSource) {
            let mask = slots.count - 1
            var slot = firstSlot(words)
            while slots[slot] != 0 {
                if fragments[Int(slots[slot]) - 1] == words { return }
                slot = (slot + 1) & mask
            }
            precondition(fragments.count < slots.count / 2, "fragment table over capacity")
            fragments.append(words)
            sources.append(source)
            slots[slot] = Int32(fragments.count)
        }
    }

    private var needles: [(label: String, bytes: [UInt8])] = []
    private var labels: [String] = []
    private var fragments: FragmentTable
    /// A bitmap of the words of every fragment, two bits per word from one multiplicative hash and
    /// at least 32 bits per word: all but about 0.4 % of ciphertext words miss one of the bits, so
    /// that the eight fragment lookups of a pass are rare.
    private var filter: [UInt64] = []
    private var filterFirstShift: UInt64 = 0
    private var filterSecondShift: UInt64 = 0
    private var filterMask: UInt64 = 0

    /// Prepares needles for `cards`, labelled with `labels` (e.g. the device names) in reports.
    public init(cards: [ProfileCard], labels: [String]) {
        precondition(cards.count == labels.count, "one label per card")
        self.labels = labels
        for (card, label) in zip(cards, labels) {
            var texts = [("name", card.name), ("owner", card.owner)]
            texts += card.keywords.map { ("keyword", $0) }
            for (field, text) in texts where text.utf8.count >= Self.minimumTextBytes {
                needles.append(("\(label)'s card \(field)", Array(text.utf8)))
            }
        }
        let photos = cards.map { $0.photo?.data ?? [] }
        let fragmentCount = photos.reduce(0) { $0 + $1.count / Self.photoStride + 1 }
        var table = FragmentTable(capacity: fragmentCount)
        // In order of card and offset, so that a fragment found at several places keeps the
        // first, as a report should name.
        for (labelIndex, photo) in photos.enumerated() where photo.count >= Self.fragmentBytes {
            photo.withUnsafeBytes { raw in
                for offset in stride(from: 0, through: raw.count - Self.fragmentBytes, by: Self.photoStride)
                where Self.hasEightDistinctBytes(raw, at: offset) {
                    table.insert(
                        FragmentWords(raw, at: offset),
                        source: FragmentSource(label: labelIndex, offset: offset))
                }
            }
        }
        fragments = table
        guard !table.isEmpty else { return }
        // Two bit indices come from one 64-bit product, so at most 32 bits each.
        let wordCount = table.fragments.count * Self.wordShifts
        var filterBits = 10
        while 1 << filterBits < wordCount * 32 && filterBits < 32 { filterBits += 1 }
        filterFirstShift = UInt64(64 - filterBits)
        filterSecondShift = UInt64(64 - 2 * filterBits)
        filterMask = (1 << UInt64(filterBits)) - 1
        var bitmap = [UInt64](repeating: 0, count: (1 << filterBits) / 64)
        bitmap.withUnsafeMutableBufferPointer { bitmap in
            for fragment in table.fragments {
                withUnsafeBytes(of: fragment) { raw in
                    for shift in 0..<Self.wordShifts {
                        let hash = Self.hash(raw.loadUnaligned(fromByteOffset: shift, as: UInt64.self))
                        let first = Int(truncatingIfNeeded: hash &>> filterFirstShift)
                        let second = Int(truncatingIfNeeded: (hash &>> filterSecondShift) & filterMask)
                        bitmap[first >> 6] |= 1 << UInt64(first & 63)
                        bitmap[second >> 6] |= 1 << UInt64(second & 63)
                    }
                }
            }
        }
        filter = bitmap
    }

    private static func hash(_ word: UInt64) -> UInt64 { word &* 0x9E37_79B9_7F4A_7C15 }

    /// What card content `datagram` carries in the clear, or nil when none is found.
    public func leak(in datagram: [UInt8]) -> String? {
        for needle in needles where Self.contains(datagram, needle.bytes) {
            return needle.label
        }
        guard !fragments.isEmpty, datagram.count >= Self.fragmentBytes else { return nil }
        return datagram.withUnsafeBytes { raw -> String? in
            guard carriesFragment(raw) else { return nil }
            return firstFragmentReport(raw)
        }
    }

    /// Whether some fragment appears in `raw`, at any offset.
    private func carriesFragment(_ raw: UnsafeRawBufferPointer) -> Bool {
        let firstShift = filterFirstShift
        let secondShift = filterSecondShift
        let mask = filterMask
        return filter.withUnsafeBufferPointer { filter in
            let lastWordStart = raw.count - Self.wordBytes
            var wordStart = 0
            while wordStart <= lastWordStart {
                let hash = Self.hash(raw.loadUnaligned(fromByteOffset: wordStart, as: UInt64.self))
                let first = Int(truncatingIfNeeded: hash &>> firstShift)
                let second = Int(truncatingIfNeeded: (hash &>> secondShift) & mask)
                if filter[first >> 6] & (1 << UInt64(first & 63)) != 0,
                    filter[second >> 6] & (1 << UInt64(second & 63)) != 0,
                    fragmentAround(raw, wordStart: wordStart)
                {
                    return true
                }
                wordStart += Self.wordBytes
            }
            return false
        }
    }

    /// Whether a fragment of `raw` holds the word at `wordStart`, at any shift.
    private func fragmentAround(_ raw: UnsafeRawBufferPointer, wordStart: Int) -> Bool {
        for shift in 0..<Self.wordShifts {
            let start = wordStart - shift
            guard start >= 0, start <= raw.count - Self.fragmentBytes else { continue }
            if fragments.source(of: FragmentWords(raw, at: start)) != nil { return true }
        }
        return false
    }

    /// The report of the fragment at the lowest offset of `raw`, found by checking every offset;
    /// called only when ``carriesFragment(_:)`` found one, so a clean datagram never pays for it.
    private func firstFragmentReport(_ raw: UnsafeRawBufferPointer) -> String? {
        for start in 0...(raw.count - Self.fragmentBytes) {
            guard let source = fragments.source(of: FragmentWords(raw, at: start)) else { continue }
            return "\(labels[source.label])'s card photo at byte \(source.offset)"
        }
        return nil
    }

    /// The scanner of `scenario`'s cards, labelled with the device names.
    init(for scenario: Scenario) {
        self.init(cards: scenario.devices.map(\.card), labels: scenario.devices.map(\.name))
    }

    private static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        return haystack.withUnsafeBytes { hay in
            needle.withUnsafeBytes { pin in
                guard let hayBase = hay.baseAddress, let pinBase = pin.baseAddress else { return false }
                let first = Int32(pin[0])
                let lastStart = hay.count - pin.count
                var start = 0
                // memchr finds each candidate first byte quickly; memcmp checks the rest.
                while start <= lastStart {
                    guard let found = memchr(hayBase + start, first, lastStart - start + 1) else {
                        return false
                    }
                    let offset = hayBase.distance(to: UnsafeRawPointer(found))
                    if memcmp(hayBase + offset, pinBase, pin.count) == 0 { return true }
                    start = offset + 1
                }
                return false
            }
        }
    }

    /// Whether the fragment at `offset` has at least eight distinct byte values; most photo
    /// fragments show eight within their first few bytes.
    private static func hasEightDistinctBytes(_ raw: UnsafeRawBufferPointer, at offset: Int) -> Bool {
        var seen: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        return withUnsafeMutableBytes(of: &seen) { seen in
            var distinct = 0
            for byte in raw[offset..<(offset + fragmentBytes)] {
                let wordOffset = Int(byte >> 6) * MemoryLayout<UInt64>.size
                let word = seen.load(fromByteOffset: wordOffset, as: UInt64.self)
                let bit = UInt64(1) << UInt64(byte & 63)
                guard word & bit == 0 else { continue }
                seen.storeBytes(of: word | bit, toByteOffset: wordOffset, as: UInt64.self)
                distinct += 1
                if distinct == 8 { return true }
            }
            return false
        }
    }
}

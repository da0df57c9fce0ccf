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
public struct PlaintextScanner {
    /// Shortest text needle searched for, in bytes.
    public static let minimumTextBytes = 6
    /// Distance between photo fragments, in bytes.
    public static let photoStride = 64
    private static let fragmentBytes = 16

    private struct Fragment: Hashable {
        var high: UInt64
        var low: UInt64
    }

    /// Where a photo fragment was first taken from: the card's label and the byte offset. The
    /// report line is built only on a hit, not for each of the thousands of fragments of a photo.
    private struct FragmentSource {
        var label: Int
        var offset: Int
    }

    private var needles: [(label: String, bytes: [UInt8])] = []
    private var labels: [String] = []
    private var fragments: [Fragment: FragmentSource] = [:]
    /// A bitmap with two bits per fragment, from multiplicative hashes of its first and of its last
    /// eight bytes: most datagram offsets miss one of them, which saves a full dictionary lookup per
    /// byte of traffic.
    private var filter: [UInt64] = []
    private var filterShift: UInt64 = 64
    /// A bitmap of the fragments' first two bytes, one bit per value: a check of two bytes that
    /// turns most datagram offsets away before the two hashes above are computed.
    private var prefixes: [UInt64] = []

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
        fragments.reserveCapacity(photos.reduce(0) { $0 + $1.count / Self.photoStride + 1 })
        // Last card first and last fragment first, each overwriting: a fragment found at several
        // places keeps the first, as a report should name, at one hash per fragment.
        for labelIndex in photos.indices.reversed() {
            let photo = photos[labelIndex]
            guard photo.count >= Self.fragmentBytes else { continue }
            var offset = (photo.count - Self.fragmentBytes) / Self.photoStride * Self.photoStride
            while offset >= 0 {
                let window = photo[offset..<(offset + Self.fragmentBytes)]
                if Self.distinctByteCount(window) >= 8 {
                    fragments[Self.fragment(window)] = FragmentSource(label: labelIndex, offset: offset)
                }
                offset -= Self.photoStride
            }
        }
        guard !fragments.isEmpty else { return }
        // About 64 bits per fragment, two of them set, keeps false hits near 0.1 %.
        var bits = 1024
        while bits < fragments.count * 64 { bits *= 2 }
        filterShift = UInt64(64 - bits.trailingZeroBitCount)
        filter = Array(repeating: 0, count: bits / 64)
        prefixes = Array(repeating: 0, count: (1 << 16) / 64)
        for fragment in fragments.keys {
            let prefix = Int(truncatingIfNeeded: fragment.high >> 48)
            prefixes[prefix >> 6] |= 1 << UInt64(prefix & 63)
            let first = filterIndex(fragment.high)
            filter[first >> 6] |= 1 << UInt64(first & 63)
            let second = secondFilterIndex(fragment.low)
            filter[second >> 6] |= 1 << UInt64(second & 63)
        }
    }

    private func filterIndex(_ high: UInt64) -> Int {
        Int(truncatingIfNeeded: (high &* 0x9E37_79B9_7F4A_7C15) >> filterShift)
    }

    private func secondFilterIndex(_ low: UInt64) -> Int {
        Int(truncatingIfNeeded: (low &* 0xC2B2_AE3D_27D4_EB4F) >> filterShift)
    }

    private func filterHas(_ index: Int) -> Bool {
        filter[index >> 6] & (1 << UInt64(index & 63)) != 0
    }

    /// What card content `datagram` carries in the clear, or nil when none is found.
    public func leak(in datagram: [UInt8]) -> String? {
        for needle in needles where Self.contains(datagram, needle.bytes) {
            return needle.label
        }
        guard !fragments.isEmpty, datagram.count >= Self.fragmentBytes else { return nil }
        return datagram.withUnsafeBytes { raw -> String? in
            for start in 0...(raw.count - Self.fragmentBytes) {
                let prefix = Int(raw[start]) << 8 | Int(raw[start + 1])
                guard prefixes[prefix >> 6] & (1 << UInt64(prefix & 63)) != 0 else { continue }
                let high = UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: start, as: UInt64.self))
                guard filterHas(filterIndex(high)) else { continue }
                let low = UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: start + 8, as: UInt64.self))
                guard filterHas(secondFilterIndex(low)) else { continue }
                let fragment = Fragment(high: high, low: low)
                if let source = fragments[fragment] {
                    return "\(labels[source.label])'s card photo at byte \(source.offset)"
                }
            }
            return nil
        }
    }

    /// The scanner of `scenario`'s cards, labelled with the device names.
    init(for scenario: Scenario) {
        self.init(cards: scenario.devices.map(\.card), labels: scenario.devices.map(\.name))
    }

    private static func fragment(_ bytes: ArraySlice<UInt8>) -> Fragment {
        var high: UInt64 = 0
        var low: UInt64 = 0
        var index = bytes.startIndex
        for _ in 0..<8 {
            high = high << 8 | UInt64(bytes[index])
            index += 1
        }
        for _ in 0..<8 {
            low = low << 8 | UInt64(bytes[index])
            index += 1
        }
        return Fragment(high: high, low: low)
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

    private static func distinctByteCount(_ bytes: ArraySlice<UInt8>) -> Int {
        var seen: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        for byte in bytes {
            let bit = UInt64(1) << UInt64(byte & 63)
            switch byte >> 6 {
            case 0: seen.0 |= bit
            case 1: seen.1 |= bit
            case 2: seen.2 |= bit
            default: seen.3 |= bit
            }
        }
        return seen.0.nonzeroBitCount + seen.1.nonzeroBitCount + seen.2.nonzeroBitCount
            + seen.3.nonzeroBitCount
    }
}

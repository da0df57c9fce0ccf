import ProfileDropCore

/// Searches datagrams for card content in the clear: every card's name, owner and keywords as
/// UTF-8, and fragments of every photo.
///
/// Text shorter than ``minimumTextBytes`` is not searched: three given bytes turn up by chance in a
/// few hundred kilobytes of ciphertext, which would make the check flaky rather than strict.
/// Photos are covered by 16-byte fragments taken every ``photoStride`` bytes, so any plaintext run
/// of `photoStride + 15` photo bytes or more is caught; fragments with fewer than eight distinct
/// byte values (runs of padding, say) are skipped because they also occur in ordinary framing.
public struct PlaintextScanner {
    /// Shortest text needle searched for, in bytes.
    public static let minimumTextBytes = 4
    /// Distance between photo fragments, in bytes.
    public static let photoStride = 64
    private static let fragmentBytes = 16

    private struct Fragment: Hashable {
        var high: UInt64
        var low: UInt64
    }

    private var needles: [(label: String, bytes: [UInt8])] = []
    private var fragments: Set<Fragment> = []
    private var fragmentLabels: [Fragment: String] = [:]

    /// Prepares needles for `cards`, labelled with `labels` (e.g. the device names) in reports.
    public init(cards: [ProfileCard], labels: [String]) {
        precondition(cards.count == labels.count, "one label per card")
        for (card, label) in zip(cards, labels) {
            var texts = [("name", card.name), ("owner", card.owner)]
            texts += card.keywords.map { ("keyword", $0) }
            for (field, text) in texts where text.utf8.count >= Self.minimumTextBytes {
                needles.append(("\(label)'s card \(field)", Array(text.utf8)))
            }
            guard let photo = card.photo?.data, photo.count >= Self.fragmentBytes else { continue }
            var offset = 0
            while offset + Self.fragmentBytes <= photo.count {
                let window = photo[offset..<(offset + Self.fragmentBytes)]
                if Set(window).count >= 8 {
                    let fragment = Self.fragment(window)
                    fragments.insert(fragment)
                    if fragmentLabels[fragment] == nil {
                        fragmentLabels[fragment] = "\(label)'s card photo at byte \(offset)"
                    }
                }
                offset += Self.photoStride
            }
        }
    }

    /// What card content `datagram` carries in the clear, or nil when none is found.
    public func leak(in datagram: [UInt8]) -> String? {
        for needle in needles where Self.contains(datagram, needle.bytes) {
            return needle.label
        }
        guard !fragments.isEmpty, datagram.count >= Self.fragmentBytes else { return nil }
        for start in 0...(datagram.count - Self.fragmentBytes) {
            let fragment = Self.fragment(datagram[start..<(start + Self.fragmentBytes)])
            if fragments.contains(fragment) { return fragmentLabels[fragment] ?? "a card photo" }
        }
        return nil
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
        guard let first = needle.first, haystack.count >= needle.count else { return false }
        var start = 0
        while start <= haystack.count - needle.count {
            if haystack[start] == first {
                var matched = 1
                while matched < needle.count && haystack[start + matched] == needle[matched] { matched += 1 }
                if matched == needle.count { return true }
            }
            start += 1
        }
        return false
    }
}

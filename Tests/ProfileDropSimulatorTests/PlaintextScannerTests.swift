import ProfileDropCore
import ProfileDropCrypto
import Testing

@testable import ProfileDropSimulator

@Suite struct PlaintextScannerTests {
    private func card(photoBytes: Int? = nil) throws -> ProfileCard {
        try ProfileCard(
            name: "Biscuit", age: 4, sex: .male, neutered: true, size: .medium, keywords: ["zoomies", "ok"],
            owner: "hyunwoo", photo: photoBytes.map { try SyntheticPhoto.jpeg(byteCount: $0, label: "p") })
    }

    @Test func findsTextFieldsAnywhere() throws {
        let scanner = PlaintextScanner(cards: [try card()], labels: ["dev0"])
        #expect(scanner.leak(in: [0, 1] + Array("xxBiscuitxx".utf8)) == "dev0's card name")
        #expect(scanner.leak(in: Array("hyunwoo".utf8)) == "dev0's card owner")
        #expect(scanner.leak(in: [9] + Array("zoomies".utf8)) == "dev0's card keyword")
        // "ok" is below the minimum needle length, and a near miss is not a match.
        #expect(scanner.leak(in: Array("ok Biscui".utf8)) == nil)
    }

    @Test func findsPhotoFragmentsAtAnyAlignment() throws {
        let leaked = try card(photoBytes: 8192)
        let photo = try #require(leaked.photo?.data)
        let scanner = PlaintextScanner(cards: [leaked], labels: ["dev1"])
        let runLength = PlaintextScanner.photoStride + 15
        for offset in [0, 1, 37, 4000, 8192 - runLength] {
            let datagram = [0xAA, 0xBB] + Array(photo[offset..<(offset + runLength)]) + [0xCC]
            #expect(scanner.leak(in: datagram)?.hasPrefix("dev1's card photo") == true, "offset \(offset)")
        }
    }

    @Test func ciphertextOfTheCardIsClean() throws {
        let leaked = try card(photoBytes: 20_000)
        let scanner = PlaintextScanner(cards: [leaked], labels: ["dev0"])
        var random = DeterministicRandom(seed: 5)
        let key = ChaChaPoly.Key(using: &random)
        let encoded = leaked.encoded()
        #expect(scanner.leak(in: encoded) != nil)
        var offset = 0
        var chunk: UInt64 = 0
        while offset < encoded.count {
            let end = min(offset + 1200, encoded.count)
            let sealed = ChaChaPoly.seal(
                Array(encoded[offset..<end]), key: key, nonce: ChaChaPoly.Nonce(noiseCounter: chunk),
                authenticating: [UInt8]())
            #expect(scanner.leak(in: sealed) == nil)
            offset = end
            chunk += 1
        }
    }

    /// Every fragment a scanner searches for, with its report, first card and offset first.
    private func referenceFragments(photos: [[UInt8]], labels: [String]) -> [(bytes: [UInt8], report: String)]
    {
        var fragments: [(bytes: [UInt8], report: String)] = []
        for (label, photo) in zip(labels, photos) {
            for offset in stride(from: 0, through: photo.count - 16, by: PlaintextScanner.photoStride) {
                let fragment = Array(photo[offset..<(offset + 16)])
                if Set(fragment).count >= 8 {
                    fragments.append((fragment, "\(label)'s card photo at byte \(offset)"))
                }
            }
        }
        return fragments
    }

    /// The report a check of every datagram offset against every fragment gives: the fragment at
    /// the lowest offset, named by the first card and offset it was taken from.
    private func referenceLeak(in datagram: [UInt8], fragments: [(bytes: [UInt8], report: String)]) -> String?
    {
        guard datagram.count >= 16 else { return nil }
        for start in 0...(datagram.count - 16) {
            let window = datagram[start..<(start + 16)]
            if let fragment = fragments.first(where: { $0.bytes.elementsEqual(window) }) {
                return fragment.report
            }
        }
        return nil
    }

    @Test func findsASingleFragmentAtEveryDatagramOffset() throws {
        let leaked = try card(photoBytes: 4096)
        let photo = try #require(leaked.photo?.data)
        let scanner = PlaintextScanner(cards: [leaked], labels: ["dev0"])
        var random = DeterministicRandom(seed: 11)
        for fragmentOffset in [0, 64, 1024, 4096 - 64] {
            let fragment = Array(photo[fragmentOffset..<(fragmentOffset + 16)])
            try #require(Set(fragment).count >= 8)
            for prefix in 0..<40 {
                for suffix in [0, 1, 7, 8, 9] {
                    var datagram = random.bytes(prefix)
                    datagram += fragment
                    datagram += [UInt8](repeating: 0xEE, count: suffix)
                    #expect(
                        scanner.leak(in: datagram) == "dev0's card photo at byte \(fragmentOffset)",
                        "fragment \(fragmentOffset) after \(prefix) bytes, \(suffix) after")
                }
            }
        }
    }

    @Test func findsARunOfStridePlus15AtEveryPhotoAndDatagramAlignment() throws {
        let leaked = try card(photoBytes: 8192)
        let photo = try #require(leaked.photo?.data)
        let scanner = PlaintextScanner(cards: [leaked], labels: ["dev1"])
        let runLength = PlaintextScanner.photoStride + 15
        for offset in stride(from: 512, to: 512 + 2 * PlaintextScanner.photoStride, by: 1) {
            for prefix in 0..<8 {
                let datagram =
                    [UInt8](repeating: 0xAB, count: prefix) + Array(photo[offset..<(offset + runLength)])
                #expect(scanner.leak(in: datagram) != nil, "photo offset \(offset) after \(prefix) bytes")
            }
        }
    }

    @Test func reportsWhatACheckOfEveryOffsetReports() throws {
        // Two photos with the same label share their first bytes, so some fragments sit in both, and
        // the report must name the first card's.
        let cards = [try card(photoBytes: 3000), try card(photoBytes: 5000)]
        let photos = try cards.map { try #require($0.photo?.data) }
        let labels = ["dev0", "dev1"]
        let scanner = PlaintextScanner(cards: cards, labels: labels)
        let fragments = referenceFragments(photos: photos, labels: labels)
        var random = DeterministicRandom(seed: 3)
        func draw(_ bound: Int) -> Int { Int(random.uniform(below: UInt64(bound))) }
        var hits = 0
        for _ in 0..<300 {
            var datagram: [UInt8] = []
            for _ in 0..<draw(4) {
                datagram += random.bytes(draw(40))
                let photo = photos[draw(2)]
                let length = 8 + draw(40)
                let start = draw(photo.count - length)
                datagram += photo[start..<(start + length)]
            }
            let expected = referenceLeak(in: datagram, fragments: fragments)
            if expected != nil { hits += 1 }
            #expect(scanner.leak(in: datagram) == expected)
        }
        #expect(hits > 20)
    }
}

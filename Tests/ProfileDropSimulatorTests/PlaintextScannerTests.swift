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
}

import ProfileDropCrypto
import Testing

@Suite struct HexTests {
    @Test func roundTripsEveryByte() {
        let all = (0...255).map { UInt8($0) }
        #expect(Hex.decode(Hex.encode(all)) == all)
        #expect(Hex.encode([0x00, 0x0f, 0xf0, 0xff]) == "000ff0ff")
        #expect(Hex.decode("ABcd") == [0xab, 0xcd])
    }

    @Test(arguments: ["a", "abc", "zz", "0g", " 00", "0x00"])
    func rejectsWhatIsNotHex(text: String) {
        #expect(Hex.decode(text) == nil)
    }

    @Test func emptyIsEmpty() {
        #expect(Hex.decode("") == [])
        #expect(Hex.encode([]) == "")
    }
}

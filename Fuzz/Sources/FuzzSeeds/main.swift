import Foundation
import FuzzSupport
import ProfileDropCore

/// Writes seed corpora: `FuzzSeeds OUTPUT_DIR [CAPTURE.pcapng ...]` creates OUTPUT_DIR/<target>/ with
/// generated valid inputs and the UDP payloads of every captured packet.

/// UDP payloads of the IPv4 packets in a pcapng file (Enhanced Packet Blocks, either byte order).
func udpPayloads(pcapng bytes: [UInt8]) -> [[UInt8]] {
    func u32(_ offset: Int, _ bigEndian: Bool) -> Int? {
        guard offset >= 0, offset + 4 <= bytes.count else { return nil }
        let raw = bytes[offset..<offset + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return Int(bigEndian ? raw : raw.byteSwapped)
    }
    var payloads: [[UInt8]] = []
    var offset = 0
    var bigEndian = false
    while let type = u32(offset, bigEndian), var length = u32(offset + 4, bigEndian) {
        if type == 0x0A0D_0D0A, let magic = u32(offset + 8, true) {
            bigEndian = magic == 0x1A2B_3C4D
            length = u32(offset + 4, bigEndian) ?? 0
        }
        guard length >= 12, offset + length <= bytes.count else { break }
        if type == 6, let captured = u32(offset + 20, bigEndian), offset + 28 + captured <= bytes.count {
            let packet = Array(bytes[(offset + 28)..<(offset + 28 + captured)])
            // IPv4 without options (the captures' LINKTYPE_RAW framing), then 8 bytes of UDP.
            if packet.count > 28, packet[0] >> 4 == 4, packet[9] == 17 {
                let headerLength = Int(packet[0] & 0x0F) * 4
                if packet.count > headerLength + 8 { payloads.append(Array(packet[(headerLength + 8)...])) }
            }
        }
        offset += length
    }
    return payloads
}

func write(_ inputs: [[UInt8]], to directory: URL) {
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    var seen = Set<[UInt8]>()
    for input in inputs where seen.insert(input).inserted {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in input { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
        let name = "seed-" + String(hash, radix: 16)
        _ = FileManager.default.createFile(
            atPath: directory.appendingPathComponent(name).path, contents: Data(input))
    }
    print("\(directory.lastPathComponent): \(seen.count) seeds")
}

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    print("usage: FuzzSeeds OUTPUT_DIR [CAPTURE.pcapng ...]")
    exit(2)
}
let output = URL(fileURLWithPath: arguments[1])
var captured: [[UInt8]] = []
var captures: [[UInt8]] = []
for path in arguments.dropFirst(2) {
    guard let data = FileManager.default.contents(atPath: path) else { continue }
    captures.append(Array(data))
    captured += udpPayloads(pcapng: Array(data))
}
let honest = DeviceFuzz.honestDatagrams()
/// One well-formed frame of `type`. The switch names every type, so the compiler asks for a seed
/// when a frame type is added.
func seedFrame(_ type: FrameType) -> Frame {
    switch type {
    case .token: .token(DiscoveryToken(Array(0..<16)))
    case .ranging:
        .ranging(
            RangingFrame(
                sequence: 3, pose: Pose(x: 7, y: -1, heading: 180), token: DiscoveryToken(Array(0..<16))))
    case .inRange: .inRange(true)
    case .consent: .consent(.share, CardOffer(length: 3000, chunkSize: 1120, digest: Array(0..<32)))
    case .cardChunk: .cardChunk(index: 2, data: ArraySlice(repeating: 7, count: 40))
    case .cardSack: .cardSack(CardSack(cumulative: 1, bitmap: [0xA0, 0x01]))
    case .cardAck: .cardAck(digest: Array(0..<32))
    case .close: .close(CloseFrame(code: .error, errorCode: 9))
    case .closeAck: .closeAck
    case .receipt: .receipt(.all)
    case .ident: .ident(Array(0..<32))
    case .proof: .proof(Array(32..<64))
    case .commit: .commit(Array(64..<96))
    case .nonce: .nonce(Array(96..<128))
    case .reveal: .reveal(Array(128..<160))
    case .bond: .bond(resolvingKey: Array(160..<192), share: Array(192..<224))
    }
}
let frames: [[UInt8]] =
    FrameType.allCases.map { Frame.encode([seedFrame($0)]) } + [
        Frame.encode(FrameType.allCases.map(seedFrame)),
        Frame.encode([.consent(.receiveOnly, nil), .consent(.decline, nil)]),
        HandshakeParameters(maxCardBytes: 524_288, receiveWindow: 64).encoded(),
    ]
/// Handshake datagrams honest runs rarely produce: BUSY(retry), the INVITE that echoes its cookie,
/// and an INVITE whose Noise message is long enough to need no padding.
let cookie = Array(UInt8(0xC0)...UInt8(0xCF))
let handshakes: [[UInt8]] = [
    Packet.busy(
        Busy(
            sessionID: 7, sender: DeviceID(rawValue: 2), receiver: DeviceID(rawValue: 1), reason: .retry,
            cookie: cookie)
    ).encoded(),
    Packet.invite(
        HandshakePacket(
            sessionID: 7, sender: DeviceID(rawValue: 1), receiver: DeviceID(rawValue: 2),
            noiseMessage: Array(repeating: 9, count: 32), cookie: cookie)
    ).encoded(),
    Packet.invite(
        HandshakePacket(
            sessionID: 8, sender: DeviceID(rawValue: 1), receiver: DeviceID(rawValue: 2),
            noiseMessage: Array(repeating: 5, count: 140))
    ).encoded(),
]
write(honest + captured + frames + handshakes, to: output.appendingPathComponent("wire"))
write(
    (0..<16).map { [UInt8($0), UInt8($0 / 2)] + Array(repeating: UInt8($0 % 6), count: 8) },
    to: output.appendingPathComponent("noise"))
write(DeviceFuzz.seedInputs(), to: output.appendingPathComponent("device"))
write(captures, to: output.appendingPathComponent("capture"))

import ProfileDropCore

/// Maps device identities to network nodes and names, for devices that name peers in events.
/// Filled by the simulation once every device exists.
public final class PeerDirectory {
    private var entries: [(identity: UInt64, node: Int, name: String)] = []

    /// Creates an empty directory.
    public init() {}

    /// Adds a device.
    public func add(identity: UInt64, node: Int, name: String) {
        entries.append((identity, node, name))
    }

    /// The node of the device announcing `identity`.
    public func node(of identity: UInt64) -> Int? {
        entries.first { $0.identity == identity }?.node
    }

    /// The name of the device announcing `identity`, or its identity in hex.
    public func name(of identity: UInt64) -> String {
        entries.first { $0.identity == identity }?.name ?? String(identity, radix: 16)
    }
}

/// A device's report, reduced to what the simulation acts on; `text` is what the transcript shows.
struct SimulatedDeviceEvent: Equatable, Sendable {
    /// What kind of report this is.
    enum Kind: Equatable, Sendable {
        /// Anything the simulation only records.
        case note
        /// The owner is asked whether to share with node `peer` (nil when the peer is unknown).
        case consentRequested(peer: Int?)
        /// A card from node `peer` arrived complete and checked, and was acknowledged; it is not
        /// delivered yet (nil when the peer is unknown).
        case cardVerified(ProfileCard, peer: Int?)
        /// A card arrived from node `peer` and was delivered (nil when the peer is unknown).
        case cardReceived(ProfileCard, peer: Int?)
        /// The device closed for good.
        case closed(CloseReason)
        /// Verification completed with this code; `known` when the peer proved a bond.
        case verified(code: String, known: Bool)
        /// A pairing ended after verification began, before both users decided.
        case pairingInterrupted
        /// The device remembered a peer after an exchange.
        case peerRemembered(KnownPeer)
    }

    /// What kind of report this is.
    var kind: Kind
    /// The transcript text, one line.
    var text: String

    /// Creates an event.
    init(_ kind: Kind, text: String) {
        self.kind = kind
        self.text = text
    }
}

extension CloseReason {
    /// The reason as reports and transcripts spell it: `exchanged`, `declined-by-us`,
    /// `out-of-range`, `timeout(peer-silent)`, `error(tokenMismatch)`.
    public var transcriptName: String {
        switch self {
        case .exchanged: "exchanged"
        case .declined(by: .local): "declined-by-us"
        case .declined(by: .peer): "declined-by-peer"
        case .outOfRange: "out-of-range"
        case .timeout(let kind): "timeout(\(kind.rawValue.replacingOccurrences(of: " ", with: "-")))"
        case .error(let error): "error(\(error.code))"
        }
    }
}

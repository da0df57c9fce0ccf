import Foundation
import ProfileDropCore

/// Everything a run needs, as values: the card, the identity, the known peers, the network, how the
/// device moves, how consent is given, and the limits. The defaults are those of
/// `profiledrop share`.
public struct PairingConfiguration: Sendable {
    /// The card to share; nil receives only (`--receive-only`).
    public var card: ProfileCard?
    /// The device's long-term identity, which known peers recognise.
    public var identity: Identity
    /// The peers this device exchanged with before.
    public var knownPeers: KnownPeers
    /// The interfaces, port and address families to use.
    public var network: Network
    /// Where the device is and how it moves.
    public var motion: Motion
    /// Whether the program is asked before a card moves.
    public var consent: ConsentPolicy
    /// The longest the run lasts, an unanswered question included (`--timeout`).
    public var timeout: Duration
    /// A pcapng capture of the run (`--capture`), or nil.
    public var capture: Capture?

    /// A configuration sharing `card` (nil: receive only); every other setting has `share`'s
    /// default, except the identity and known peers, which live in memory unless given.
    public init(
        card: ProfileCard?, identity: Identity = .generated,
        knownPeers: KnownPeers = .memory(KnownPeerList()),
        network: Network = Network(), motion: Motion = .approach, consent: ConsentPolicy = .ask,
        timeout: Duration = .seconds(120), capture: Capture? = nil
    ) {
        self.card = card
        self.identity = identity
        self.knownPeers = knownPeers
        self.network = network
        self.motion = motion
        self.consent = consent
        self.timeout = timeout
        self.capture = capture
    }

    /// The device's long-term identity secret. Only known peers can recognise it: the key the
    /// handshake shows is new in every run.
    public enum Identity: Sendable {
        /// The key file at the path, created on first use (mode 0600), as `--key-file` names it.
        case keyFile(String)
        /// A 32-byte secret held by the program.
        case secret([UInt8])
        /// A new random identity for this run alone: no peer will recognise it again.
        case generated

        /// The key file `share` uses when `--key-file` is not given:
        /// `$XDG_CONFIG_HOME/profiledrop/static-key`, or under `~/.config`.
        /// - Throws: ``PairingError`` when neither variable is set.
        public static func defaultKeyFile() throws(PairingError) -> Identity {
            do {
                return .keyFile(try StaticKeyStore.defaultPath())
            } catch {
                throw PairingError(.configuration, "\(error)")
            }
        }
    }

    /// Where known peers are read from and remembered in.
    public enum KnownPeers: Sendable {
        /// The known-peers file at the path (`--known-peers`), read at the start and written when
        /// an exchange with a new peer completes.
        case file(String)
        /// A list the program holds; an exchange with a new peer adds to it.
        case memory(KnownPeerList)

        /// The known-peers file beside the key file at `keyFilePath`, as `share` uses by default.
        public static func besideKeyFile(_ keyFilePath: String) -> KnownPeers {
            .file(KnownPeersStore.defaultPath(keyFilePath: keyFilePath))
        }
    }

    /// The network a run uses.
    public struct Network: Sendable, Equatable {
        /// The interfaces by name (`--interface`); empty selects every interface that is up, can
        /// multicast and is not loopback.
        public var interfaces: [String]
        /// The discovery port (`--port`).
        public var port: UInt16
        /// Whether discovery also runs over IPv6 link-local multicast where an interface can. IPv4
        /// always runs: the exchange is addressed over it.
        public var ipv6: Bool
        /// Testing only: the fraction of outgoing datagrams dropped on purpose (`--impair-loss`).
        public var sendLoss: Double
        /// The local IPv4 address the exchange binds to and sends from (`--address`); nil takes the
        /// interface's own. Devices on one host each take one of their own (on loopback
        /// 127.0.0.2, 127.0.0.3, …): a device counts what one address sends it unasked against
        /// one budget, as it would one phone on a LAN (PROTOCOL.md 7).
        public var address: String? = nil

        /// Every usable interface, port 47544, IPv6 where possible, no loss.
        public init(
            interfaces: [String] = [], port: UInt16 = 47_544, ipv6: Bool = true, sendLoss: Double = 0
        ) {
            self.interfaces = interfaces
            self.port = port
            self.ipv6 = ipv6
            self.sendLoss = sendLoss
        }
    }

    /// Where the device is, which the proximity check measures (5–10 cm apart, facing).
    public enum Motion: Sendable {
        /// Once paired, the inviting device holds still at the origin and the other is brought from
        /// 30 cm to 7 cm in front of it over 1.5 s, as two people holding phones together.
        case approach
        /// Stay at the pose, unless the program moves it with ``PairingRun/move(to:)``.
        case fixed(Pose)
        /// Follow the script, timed from the start of the run.
        case scripted(MotionScript)
        /// Ask the closure every 50 ms for the pose at the time since the start of the run.
        case sampled(@Sendable (Duration) -> Pose)
        /// Start at the pose, then take every pose the sequence yields, until it ends.
        case stream(Pose, AsyncStream<Pose>)
    }

    /// Whether the program is asked before a card moves.
    public enum ConsentPolicy: Sendable, Equatable {
        /// Ask about every peer: a snapshot carries the question, the program answers (the default).
        case ask
        /// Share with whoever completes pairing, without asking (`--yes`); without a card, receive.
        case always
        /// Share without asking with known peers that proved who they are, ask about any other
        /// (`--yes-known`).
        case knownPeers
    }

    /// A pcapng capture of the run, for Wireshark and `profiledrop replay`.
    public struct Capture: Sendable, Equatable {
        /// The file written when the run ends, however it ends.
        public var path: String
        /// Whether the capture also holds the secrets replay needs (mode 0600 then).
        public var keylog: Bool

        /// A capture to `path`, with the keylog or without.
        public init(path: String, keylog: Bool = false) {
            self.path = path
            self.keylog = keylog
        }
    }
}

/// Known peers held in memory, shared between the program and its runs: a run reads them at its
/// start and adds the peer it completes an exchange with.
public final class KnownPeerList: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [KnownPeer]

    /// A list holding `peers`.
    public init(_ peers: [KnownPeer] = []) { stored = peers }

    /// The peers, oldest first.
    public var peers: [KnownPeer] { lock.withLock { stored } }

    /// Adds `peer`, replacing an entry that recognises the same device.
    public func remember(_ peer: KnownPeer) {
        lock.withLock {
            stored.removeAll { $0.resolvingKey == peer.resolvingKey }
            stored.append(peer)
        }
    }
}

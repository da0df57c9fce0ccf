import ProfileDropCore

/// A dog's profile card: what a device shares and what it receives.
public typealias ProfileCard = ProfileDropCore.ProfileCard
/// Where a device is on the room's floor, in centimetres, and which way it faces, in degrees.
public typealias Pose = ProfileDropCore.Pose
/// A pose that changes over time: holds and straight-line moves, as `share --motion` takes them.
public typealias MotionScript = ProfileDropCore.MotionScript
/// A peer this device exchanged with before: the keys that recognise it and the name it had.
public typealias KnownPeer = ProfileDropCore.KnownPeer
/// Why a device closed, in the protocol's own terms (PROTOCOL.md section 9).
public typealias CloseReason = ProfileDropCore.CloseReason

/// The version of this library's public API, following semantic versioning: while the major
/// version is 0, a minor bump may break the API and a patch never does.
public enum ProfileDropAPI {
    /// The release this source tree is, or is heading for.
    public static let version = "0.3.0"
    /// The version of the wire protocol this library speaks (PROTOCOL.md); a peer that speaks
    /// another is reported as ``PairingSnapshot/Event/incompatiblePeer(peer:version:)``.
    public static let protocolVersion = Int(WireConstants.version)
}

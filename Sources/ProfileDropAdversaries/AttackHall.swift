import ProfileDropSimulator

/// The conference hall attack runs may stand in (`simulate --attacks --hall`): a ``Hall`` of
/// ``devices`` devices drawn from each run's seed, whose close pair in a crowd the victims stand in
/// for (``HallCrowd``). Every stage of a run, the no-attack room an availability run is timed
/// against included, stands in the same hall; the attacker and the victims are placed as in the
/// small room, and the kinds' breach rules are the same.
public struct AttackHall: Sendable, Equatable {
    /// The hall's size when `--devices` is not given: small enough that every default kind runs in
    /// the hall, once per users, in minutes on two cores (a thousand devices cost over ten times as
    /// much per run, about a minute and a half).
    public static let defaultDevices = 300
    /// The sizes `--devices` takes: from a hall of three pairs to the benchmark's thousand.
    public static let sizes = HallCrowd.minimumDevices...1000

    /// Devices in the hall, the victims' place included (the victims stand in for a pair of it).
    public let devices: Int

    /// A hall of `devices` devices, one of ``sizes``.
    public init(devices: Int = defaultDevices) {
        precondition(Self.sizes.contains(devices), "a hall holds \(Self.sizes) devices")
        self.devices = devices
    }

    /// Close pairs in the hall, the one the victims stand in for included.
    public var pairs: Int { HallCrowd.pairs(devices: devices) }

    /// The header line of a report of runs in this hall.
    var headerLine: String {
        let again = Hall.secondMeetings(pairs: pairs)
        return "attacks: in a hall of \(devices) devices drawn from each run's seed (\(pairs) close pairs, "
            + "\(again) of them meeting twice, clusters 30-60 cm apart, some switched on late; 2 ms delay "
            + "±2 ms, 2 % loss on its devices' datagrams): the victims stand in for a pair of it in a crowd"
    }
}

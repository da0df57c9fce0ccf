import ProfileDropTransport

/// `profiledrop interfaces`: the interfaces discovery could use, and which the default picks.
enum InterfacesCommand: Subcommand {
    static let name = "interfaces"
    static let summary = "list network interfaces and which ones discovery uses by default"
    static let parser = ArgumentParser(command: name, options: [])

    static func run(_ arguments: ParsedArguments, console: Console) throws -> ExitCode {
        guard arguments.positionals.isEmpty else { throw UsageError("takes no arguments") }
        let all = try NetworkInterface.all()
        let defaults = Set((try? NetworkInterface.select(names: [], from: all))?.map(\.name) ?? [])
        console.output("name        state  multicast  default  addresses")
        for interface in all {
            let addresses =
                interface.ipv4Addresses.map(\.description)
                + interface.ipv6LinkLocalAddresses.map(\.description)
            let columns = [
                interface.name.padded(to: 11),
                (interface.isUp ? "up" : "down").padded(to: 6),
                (interface.supportsMulticast ? "yes" : interface.isLoopback ? "loopback" : "no").padded(
                    to: 10),
                (defaults.contains(interface.name) ? "yes" : "no").padded(to: 8),
                addresses.isEmpty ? "-" : addresses.joined(separator: " "),
            ]
            console.output(columns.joined(separator: " "))
        }
        if defaults.isEmpty {
            console.output(
                "no interface qualifies by default; pass --interface NAME (for example --interface lo)")
        }
        return .success
    }
}

extension String {
    func padded(to width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}

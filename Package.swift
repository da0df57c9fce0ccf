// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "ProfileDrop",
    products: [
        .executable(name: "profiledrop", targets: ["profiledrop"])
    ]
        // Each library is its one target.
        + [
            // Pairing from any Swift program: configuration, a run as snapshots, answers, cancellation.
            "ProfileDrop",
            "ProfileDropCore",
            "ProfileDropNoise",
            "ProfileDropSimulator",
            // The adversaries of `simulate --attacks`, on the simulator's room; not part of the simulator.
            "ProfileDropAdversaries",
            // For the fuzz targets in Fuzz/: the readers of card files, JSON, the known-peers store,
            // key files and captures.
            "ProfileDropJSON",
            "ProfileDropCardFile",
            "ProfileDropCLI",
            // For the capture fuzz target, and built anyway for the file target through the CLI.
            "ProfileDropCapture",
            // The file fuzz target's checks, which the CLI tests also run over the stored inputs.
            "FileFuzz",
            "FuzzSupport",
        ].map { Product.library(name: $0, targets: [$0]) },
    targets: [
        // libsodium, the only dependency outside the toolchain.
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]
        ),
        // Thin typed layer over libsodium: keys, nonces, AEAD, hashes, randomness.
        .target(name: "ProfileDropCrypto", dependencies: ["CSodium"]),
        // The one shape of the modules' errors: a code for callers, one line for people.
        .target(name: "ProfileDropErrors"),
        // Noise Protocol Framework (revision 34) for 25519_ChaChaPoly_BLAKE2b.
        .target(
            name: "ProfileDropNoise",
            dependencies: ["ProfileDropCrypto", "ProfileDropJSON", "ProfileDropErrors"]),
        // The one JSON value type (strict parser, deterministic writer) and the size-bounded reader of
        // files from outside. No dependencies.
        .target(name: "ProfileDropJSON"),
        // The sans-IO protocol core: wire format, cards, proximity gate, session state machines.
        .target(
            name: "ProfileDropCore",
            dependencies: ["ProfileDropCrypto", "ProfileDropNoise", "ProfileDropJSON"]),
        // Card files and their photos on disk: the file reading the core leaves out.
        .target(name: "ProfileDropCardFile", dependencies: ["ProfileDropCore", "ProfileDropJSON"]),
        // Many devices in a room on a faulty network, in virtual time.
        .target(
            name: "ProfileDropSimulator",
            dependencies: [
                "ProfileDropCore", "ProfileDropCrypto", "ProfileDropNoise", "ProfileDropJSON",
                "ProfileDropCardFile",
            ]),
        // A protocol peer's secured session written against the wire and Noise API: the handshake,
        // SECURE packets, and the rules for a device's frames. The fuzz harness's scripted peer and
        // the adversaries' malicious peer each script what to send on it.
        .target(
            name: "ProfileDropScriptedPeer",
            dependencies: ["ProfileDropCore", "ProfileDropCrypto", "ProfileDropNoise"]),
        // Adversaries against honest victims in the simulator's room: each kind, its run and its breach
        // rule, and the runner behind `simulate --attacks`.
        .target(
            name: "ProfileDropAdversaries",
            dependencies: [
                "ProfileDropCore", "ProfileDropCrypto", "ProfileDropNoise", "ProfileDropSimulator",
                "ProfileDropScriptedPeer",
            ]),
        // Real UDP sockets (IPv4/IPv6 multicast discovery, unicast exchange) and the loop that drives
        // a device on them.
        .target(
            name: "ProfileDropTransport",
            dependencies: ["ProfileDropCore", "ProfileDropCrypto", "ProfileDropErrors"]),
        // pcapng capture of real and simulated runs, and deterministic replay from it.
        .target(
            name: "ProfileDropCapture",
            dependencies: [
                "ProfileDropCore", "ProfileDropCrypto", "ProfileDropJSON", "ProfileDropNoise",
                "ProfileDropErrors",
            ]),
        // The embeddable API: a device on real sockets as an AsyncSequence of snapshots, with the
        // identity and known-peers files and the card saver it needs. `share` is its first client.
        .target(
            name: "ProfileDrop",
            dependencies: [
                "ProfileDropCore", "ProfileDropCrypto", "ProfileDropJSON", "ProfileDropTransport",
                "ProfileDropCapture", "ProfileDropCardFile", "ProfileDropErrors",
            ]),
        // Command implementations behind the `profiledrop` executable.
        .target(
            name: "ProfileDropCLI",
            dependencies: [
                "ProfileDrop", "ProfileDropCrypto", "ProfileDropNoise", "ProfileDropCore",
                "ProfileDropSimulator", "ProfileDropAdversaries", "ProfileDropTransport",
                "ProfileDropCapture",
                "ProfileDropJSON", "ProfileDropCardFile",
            ],
            // `profiledrop version` reports the git commit this plugin writes before each build.
            plugins: ["GitCommit"]
        ),
        // Runs `git rev-parse` before each build; needs no package (CONTRIBUTING.md, "Version").
        .plugin(name: "GitCommit", capability: .buildTool()),
        .executableTarget(name: "profiledrop", dependencies: ["ProfileDropCLI"]),

        // The `file` fuzz target's input interpretation and checks (card files, known peers, key files,
        // scenarios, swarm summaries, JSON). Its sources live with the other fuzz targets; the Fuzz
        // package links it as a product, and the CLI tests replay the stored inputs through it.
        .target(
            name: "FileFuzz",
            dependencies: [
                "ProfileDrop", "ProfileDropCardFile", "ProfileDropCore", "ProfileDropCrypto",
                "ProfileDropJSON",
                "ProfileDropSimulator",
            ],
            path: "Fuzz/Sources/FileFuzz"),

        // The wire, noise and device fuzz targets' input interpretation and checks, with the
        // scripted peer. Its sources live with the fuzz targets; the Fuzz package links it as a
        // product, and the core tests replay the stored inputs and drive the scripted peer through it.
        .target(
            name: "FuzzSupport",
            dependencies: [
                "ProfileDropCore", "ProfileDropNoise", "ProfileDropCrypto", "ProfileDropScriptedPeer",
            ],
            path: "Fuzz/Sources/FuzzSupport"),

        // Helpers shared by the test targets (seeded byte mutations, caught errors); no dependencies.
        .target(name: "ProfileDropTestSupport", path: "Tests/ProfileDropTestSupport"),
        .testTarget(name: "ProfileDropCryptoTests", dependencies: ["ProfileDropCrypto"]),
        .testTarget(name: "ProfileDropErrorsTests", dependencies: ["ProfileDropErrors"]),
        .testTarget(
            name: "ProfileDropJSONTests", dependencies: ["ProfileDropJSON", "ProfileDropTestSupport"]),
        .testTarget(
            name: "ProfileDropNoiseTests",
            dependencies: ["ProfileDropNoise", "ProfileDropCrypto", "ProfileDropTestSupport"]),
        .testTarget(
            name: "NoiseInteropTests",
            dependencies: ["ProfileDropNoise", "ProfileDropCrypto"],
            exclude: ["noise_peer.py"]
        ),
        .testTarget(
            name: "ProfileDropCoreTests",
            dependencies: [
                "ProfileDropCore", "ProfileDropNoise", "ProfileDropCrypto", "ProfileDropJSON",
                "ProfileDropTestSupport", "ProfileDropSimulator", "FuzzSupport",
            ],
            // Regression inputs are data.
            exclude: [
                "FuzzCases/wire", "FuzzCases/device", "FuzzCases/noise", "FuzzCases/capture",
                "FuzzCases/file",
            ]
        ),
        .testTarget(
            name: "ProfileDropSimulatorTests",
            dependencies: [
                "ProfileDropSimulator", "ProfileDropCore", "ProfileDropCardFile", "ProfileDropTestSupport",
                "ProfileDropCLI",
            ],
            // Stored swarm seeds (scripts/swarm.sh writes them) are data, replayed by SwarmTests.
            exclude: ["SwarmCases"]),
        .testTarget(
            name: "ProfileDropAdversariesTests",
            dependencies: [
                "ProfileDropAdversaries", "ProfileDropSimulator", "ProfileDropCore", "ProfileDropCLI",
            ]),
        .testTarget(
            name: "ProfileDropTransportTests",
            dependencies: ["ProfileDropTransport", "ProfileDropCore", "ProfileDropCrypto"]),
        .testTarget(
            name: "ProfileDropCaptureTests",
            dependencies: [
                "ProfileDropCapture", "ProfileDropCore", "ProfileDropSimulator", "ProfileDropCLI",
                "ProfileDropJSON", "ProfileDropTestSupport",
            ]
        ),
        .testTarget(
            name: "ProfileDropTests",
            dependencies: ["ProfileDrop", "ProfileDropCore", "ProfileDropCardFile", "ProfileDropTestSupport"]),
        .testTarget(
            name: "ProfileDropCLITests",
            dependencies: [
                "ProfileDropCLI", "ProfileDrop", "ProfileDropCardFile", "ProfileDropCore",
                "ProfileDropTestSupport",
                // A real device on loopback sockets, as a misbehaving peer of `share`, and the
                // adversaries' malicious peer on real sockets.
                "ProfileDropCrypto", "ProfileDropTransport", "ProfileDropAdversaries",
                "ProfileDropJSON", "ProfileDropSimulator",
                // The file fuzz target's checks, replaying its stored inputs.
                "FileFuzz",
            ]),
    ]
)

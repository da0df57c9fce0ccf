// swift-tools-version:6.0
// libFuzzer targets for the protocol. A separate package so that `swift build` and `swift test` of
// the main package never see them; build with scripts/fuzz.sh (see FUZZING.md).
import PackageDescription

// The targets' input interpretation and checks are the main package's `FuzzSupport` and `FileFuzz`
// libraries (their sources are here, under Sources/), which the main package's tests also run.
let support = Target.Dependency.product(name: "FuzzSupport", package: "ProfileDrop")

let package = Package(
    name: "ProfileDropFuzz",
    dependencies: [.package(name: "ProfileDrop", path: "..")],
    targets: [
        // The declaration of LLVMFuzzerRunDriver, defined by the libFuzzer runtime.
        .target(name: "CLibFuzzer"),
        // The one libFuzzer entry point and driver loop, parameterised by the target's harness.
        .target(name: "FuzzDriver", dependencies: [support, "CLibFuzzer"]),
        // One executable per fuzz target.
        .executableTarget(name: "FuzzWire", dependencies: [support, "FuzzDriver"]),
        .executableTarget(name: "FuzzNoise", dependencies: [support, "FuzzDriver"]),
        .executableTarget(name: "FuzzDevice", dependencies: [support, "FuzzDriver"]),
        .executableTarget(
            name: "FuzzCapture",
            dependencies: [
                support, "FuzzDriver", .product(name: "ProfileDropCapture", package: "ProfileDrop"),
            ]),
        .executableTarget(
            name: "FuzzFile",
            dependencies: [.product(name: "FileFuzz", package: "ProfileDrop"), support, "FuzzDriver"]),
        // Writes the seed corpora: generated valid inputs and UDP payloads from Captures/*.pcapng.
        .executableTarget(name: "FuzzSeeds", dependencies: [support]),
    ]
)

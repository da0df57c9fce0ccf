// swift-tools-version:6.0
// libFuzzer targets for the protocol. A separate package so that `swift build` and `swift test` of
// the main package never see them; build with scripts/fuzz.sh (see FUZZING.md).
import PackageDescription

let package = Package(
    name: "ProfileDropFuzz",
    dependencies: [.package(name: "ProfileDrop", path: "..")],
    targets: [
        // Input interpretation and invariant checks shared by the fuzz targets and the seed writer.
        .target(
            name: "FuzzSupport",
            dependencies: [
                .product(name: "ProfileDropCore", package: "ProfileDrop"),
                .product(name: "ProfileDropNoise", package: "ProfileDrop"),
            ]
        ),
        // The declaration of LLVMFuzzerRunDriver, defined by the libFuzzer runtime.
        .target(name: "CLibFuzzer"),
        // The one libFuzzer entry point and driver loop, parameterised by the target's harness.
        .target(name: "FuzzDriver", dependencies: ["FuzzSupport", "CLibFuzzer"]),
        // One executable per fuzz target.
        .executableTarget(name: "FuzzWire", dependencies: ["FuzzSupport", "FuzzDriver"]),
        .executableTarget(name: "FuzzNoise", dependencies: ["FuzzSupport", "FuzzDriver"]),
        .executableTarget(name: "FuzzDevice", dependencies: ["FuzzSupport", "FuzzDriver"]),
        .executableTarget(
            name: "FuzzCapture",
            dependencies: [
                "FuzzSupport", "FuzzDriver", .product(name: "ProfileDropCapture", package: "ProfileDrop"),
            ]),
        // The file formats' checks are the main package's `FileFuzz` library, which its CLI tests also
        // run over the stored inputs.
        .executableTarget(
            name: "FuzzFile",
            dependencies: [.product(name: "FileFuzz", package: "ProfileDrop"), "FuzzSupport", "FuzzDriver"]),
        // Writes the seed corpora: generated valid inputs and UDP payloads from Captures/*.pcapng.
        .executableTarget(name: "FuzzSeeds", dependencies: ["FuzzSupport"]),
    ]
)

// swift-tools-version:6.0
import PackageDescription

// An example of the ProfileDrop library: pairs with `profiledrop share` and prints the card it got.
let package = Package(
    name: "PairCard",
    dependencies: [.package(name: "ProfileDrop", path: "../..")],
    targets: [
        .executableTarget(
            name: "PairCard", dependencies: [.product(name: "ProfileDrop", package: "ProfileDrop")])
    ]
)

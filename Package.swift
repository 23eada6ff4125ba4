// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "loadstate",
    products: [
        // libloadstate.so: the C ABI described by include/loadstate.h.
        .library(name: "loadstate", type: .dynamic, targets: ["LoadstateC"]),
        // The native Swift API (`import Loadstate`). Its product name is not
        // "Loadstate": two products whose names differ only in case confuse
        // SwiftPM on case-insensitive file systems and their users.
        .library(name: "LoadstateSwift", targets: ["Loadstate"]),
    ],
    targets: [
        .systemLibrary(name: "CLibUV", path: "Sources/CLibUV"),
        .systemLibrary(name: "CCurl", path: "Sources/CCurl"),
        .systemLibrary(name: "CLoadstateABI", path: "Sources/CLoadstateABI"),
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite"),
        .systemLibrary(name: "CHiredis", path: "Sources/CHiredis"),
        .target(
            name: "Loadstate",
            dependencies: ["CLibUV", "CCurl", "CSQLite", "CHiredis"],
            path: "Sources/Loadstate"
        ),
        .target(
            name: "LoadstateC",
            dependencies: ["Loadstate", "CLoadstateABI"],
            path: "Sources/LoadstateC",
            // The linker version script of `make dist`, which exports lds_*
            // and nothing else. Not a linker setting here: SwiftPM refuses
            // unsafe flags in a package that others depend on.
            exclude: ["exports.map"]
        ),
        // The Swift example of the README; built with the tests.
        .executableTarget(
            name: "LoadstateExample",
            dependencies: ["Loadstate"],
            path: "examples/swift"
        ),
        // The tour of the README's Swift section, word for word; run by
        // `make readme-swift-check` against a local http server.
        .executableTarget(
            name: "LoadstateTour",
            dependencies: ["Loadstate"],
            path: "examples/swift-tour",
            exclude: ["run.sh", "expected.txt"]
        ),
        .testTarget(
            name: "LoadstateTests",
            dependencies: ["Loadstate"],
            path: "Tests/LoadstateTests"
        ),
    ]
)

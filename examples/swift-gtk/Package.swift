// swift-tools-version:6.0
// A GTK 4 window in Swift whose states come from the Swift API of
// loadstate, on the main actor. Built on its own (it needs GTK's
// development files, which the library does not):
//
//   swift build --package-path examples/swift-gtk
//
// `make test-gui-swift` builds it and runs it scripted under Xvfb.
import PackageDescription

let package = Package(
    name: "loadstate-swift-gtk",
    dependencies: [
        .package(name: "loadstate", path: "../.."),
    ],
    targets: [
        .systemLibrary(
            name: "CGtk4",
            path: "Sources/CGtk4",
            pkgConfig: "gtk4",
            providers: [.apt(["libgtk-4-dev"])]
        ),
        .executableTarget(
            name: "LoadstateGTK",
            dependencies: ["CGtk4", .product(name: "LoadstateSwift", package: "loadstate")],
            path: "Sources/LoadstateGTK"
        ),
    ]
)

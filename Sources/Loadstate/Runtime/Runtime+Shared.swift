extension Runtime {
    /// The runtime Swift cells use unless given another: loop delivery,
    /// created on first use, never closed.
    public static let shared: Runtime = {
        do {
            return try Runtime(delivery: .loop)
        } catch {
            fatalError("loadstate: cannot start the shared runtime: \(error)")
        }
    }()
}

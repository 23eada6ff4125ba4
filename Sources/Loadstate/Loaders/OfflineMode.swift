/// What a load does while the runtime is offline (see `Runtime.setOnline`).
public enum OfflineMode: UInt8, Sendable, Equatable {
    /// The loader is not called: the load waits, flagged paused, and
    /// starts when the runtime is online again (the default).
    case wait
    /// The load (or a retry falling due) fails at once with
    /// `ResultCode.offline`.
    case fail
    /// The load ignores the signal: for loaders that need no network.
    case run
}

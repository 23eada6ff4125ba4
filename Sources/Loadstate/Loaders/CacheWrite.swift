/// What a loader that understands the values it caches (the http loader)
/// says about the value it ends a job with: whether and how it is stored,
/// and where it came from. Set on the job (`Job.cacheWrite`) before the
/// job succeeds; without one, a cached job's value is stored as it is.
public struct CacheWrite: Sendable, Equatable {
    /// Where the value a job ends with came from.
    public enum Origin: Sendable, Equatable {
        /// Loaded: the usual case.
        case loaded
        /// The cached value, confirmed unchanged by the server (an HTTP 304):
        /// cells show it flagged from-cache and revalidated.
        case revalidated
        /// The cached value, stale, served because loading failed (HTTP
        /// `stale-if-error`): cells show it flagged from-cache and stale.
        case staleOnError
    }

    /// False keeps the value out of the cache (and leaves the entry there as it is).
    public var store: Bool
    /// Kept beside the value (`CacheEntry.meta`).
    public var meta: [UInt8]
    public var origin: Origin

    public init(store: Bool = true, meta: [UInt8] = [], origin: Origin = .loaded) {
        self.store = store
        self.meta = meta
        self.origin = origin
    }
}

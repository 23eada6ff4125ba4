/// How a loader that understands its cached values (the http loader, by
/// the response headers stored with them) judges an entry for a load.
@_spi(LoadstateC) public enum CacheJudgement: Sendable, Equatable {
    /// The entry does not answer this request (HTTP `Vary`): a miss.
    case unusable
    /// Fresh: it may be shown without asking the loader.
    case fresh
    /// Stale, but it may be shown while a silent load revalidates it, even
    /// by a cache-first load (HTTP `stale-while-revalidate`).
    case staleWhileRevalidate
    /// Stale: a cache-first load asks the loader.
    case stale
}

/// What a loader that understands its cached values makes of an entry for
/// a load: how it serves the load, and what the load shows.
@_spi(LoadstateC) public struct CacheReading {
    /// How the entry serves the load.
    public var judgement: CacheJudgement
    /// Makes the bytes shown in place of the stored value (an HTTP response
    /// with its current `Age`, say), called only when the entry is shown;
    /// nil: the stored value.
    public var render: (() -> [UInt8])?
    /// When the entry stands for a failure (a stored HTTP 404), the error
    /// the load shows, with the value.
    public var error: LoadError?
    /// When the value comes from another entry than the one under the
    /// load's key (an HTTP variant), when that one was stored.
    public var storedAtMs: UInt64?

    public init(judgement: CacheJudgement, render: (() -> [UInt8])? = nil, error: LoadError? = nil,
                storedAtMs: UInt64? = nil) {
        self.judgement = judgement
        self.render = render
        self.error = error
        self.storedAtMs = storedAtMs
    }
}

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

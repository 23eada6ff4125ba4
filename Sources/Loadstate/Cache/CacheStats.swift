/// A cache's counters since it was opened, and what it holds now.
public struct CacheStats: Sendable, Equatable {
    /// Gets that found a live entry.
    public var hits: UInt64 = 0
    /// Gets that found nothing, or an expired entry.
    public var misses: UInt64 = 0
    /// Entries dropped to keep the cache within its bounds (including a
    /// put too large to keep at all).
    public var evictions: UInt64 = 0
    /// Entries dropped because their time to live had passed.
    public var expirations: UInt64 = 0
    /// Entries held now.
    public var entries: UInt64 = 0
    /// Bytes held now: the lengths of the keys and values.
    public var bytes: UInt64 = 0

    /// All counters at zero.
    public init() {}
}

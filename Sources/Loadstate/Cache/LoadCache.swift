/// How a Swift cell's loads use a cache: which store, the key of each
/// request, how values are stored, the policy, and how old an entry may be.
///
///     let users = LoadCache<Int, String>(memory, codec: .utf8, freshFor: .seconds(30)) { "user/\($0)" }
///
/// - `policy`: `.cacheThenLoad` (the default) shows a cached value at once,
///   flagged from-cache (and stale when older than `freshFor`), then
///   reloads it silently; `.cacheFirst` shows a fresh entry and loads only
///   without one; `.loadOnly` always loads and stores; `.cacheOnly` never
///   loads. `refresh()` always asks the loader and stores the result.
/// - `freshFor`: entries younger than this are fresh.
/// - `maxAge`: entries older than this are not used at all (nil: no limit).
///
/// The key also decides which loads share a job: two cells that load keys
/// that are equal with the same `LoadFunction` wait for one job.
public struct LoadCache<Request, Value>: Sendable {
    /// Where entries are kept: a `MemoryCache` or a `PersistentCache`.
    public var store: any CacheStore
    /// The cache key of a request.
    public var key: @Sendable (Request) -> String
    /// How values are stored.
    public var codec: ValueCodec<Value>
    /// How loads use the cache.
    public var policy: CachePolicy
    /// Entries younger than this are fresh.
    public var freshFor: Duration
    /// Entries older than this are not used; nil for no limit.
    public var maxAge: Duration?

    /// A cache use; `key` gives the key of each request.
    public init(_ store: any CacheStore, codec: ValueCodec<Value>, policy: CachePolicy = .cacheThenLoad,
                freshFor: Duration = .zero, maxAge: Duration? = nil,
                key: @escaping @Sendable (Request) -> String) {
        self.store = store
        self.key = key
        self.codec = codec
        self.policy = policy
        self.freshFor = freshFor
        self.maxAge = maxAge
    }

    /// The core's cache use for one load of `request`.
    func use(for request: Request, policy override: CachePolicy?) -> CacheUse<Value> {
        let codec = self.codec
        return CacheUse(store: store, key: Array(key(request).utf8), policy: override ?? policy,
                        freshMs: freshFor.saturatingMilliseconds, maxAgeMs: maxAge?.saturatingMilliseconds ?? 0,
                        encode: { codec.encode($0) }, decode: { codec.decode($0) })
    }
}

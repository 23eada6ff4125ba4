/// A copy of a runtime's metrics (see `Runtime.statistics()`).
@usableFromInline package struct RuntimeStatistics: Sendable {
    /// The counters of one loader alive.
    @usableFromInline package struct LoaderEntry: Sendable {
        @usableFromInline package let id: UInt64
        /// The host's name for the loader, if any.
        @usableFromInline package let name: String?
        @usableFromInline package let loads: LoadCounters
    }

    /// The stores a cache can be; the raw values are those of
    /// `lds_cache_metrics.persistent`.
    @usableFromInline package enum CacheKind: UInt32, Sendable {
        case memory = 0, persistent = 1, redis = 2

        /// The word the metrics text and the inspector show.
        var name: String {
            switch self {
            case .memory: return "memory"
            case .persistent: return "persistent"
            case .redis: return "redis"
            }
        }
    }

    /// The counters of one cache open.
    @usableFromInline package struct CacheEntry: Sendable {
        @usableFromInline package let id: UInt64
        /// Which store it is.
        @usableFromInline package let kind: CacheKind
        @usableFromInline package let stats: CacheStats
    }

    /// Whether the runtime counts (see `Runtime.init`).
    @usableFromInline package var isEnabled = false
    /// Cells alive (made and not freed).
    @usableFromInline package var cellsAlive: UInt64 = 0
    /// Cell events handed to their observers.
    @usableFromInline package var eventsDelivered: UInt64 = 0
    /// The loads of every loader, freed ones too; `jobsStarted` and
    /// `jobsEnded` of the loaders alive.
    @usableFromInline package var loads = LoadCounters()
    /// The loaders alive, by id.
    @usableFromInline package var loaders: [LoaderEntry] = []
    /// The caches open, by id.
    @usableFromInline package var caches: [CacheEntry] = []
    /// The host's signals (see `Runtime.setOnline`, `Runtime.setForeground`).
    @usableFromInline package var isOnline = true
    @usableFromInline package var isForeground = true
    /// Loads and retries waiting for the runtime to be online now, and in all.
    @usableFromInline package var loadsPaused: UInt64 = 0
    @usableFromInline package var loadsPausedTotal: UInt64 = 0
}

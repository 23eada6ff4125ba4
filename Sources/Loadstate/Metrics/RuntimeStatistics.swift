/// A copy of a runtime's metrics (see `Runtime.statistics()`).
@usableFromInline package struct RuntimeStatistics: Sendable {
    /// The counters of one loader alive.
    @usableFromInline package struct LoaderEntry: Sendable {
        @usableFromInline package let id: UInt64
        @usableFromInline package let loads: LoadCounters
    }

    /// The counters of one cache open.
    @usableFromInline package struct CacheEntry: Sendable {
        @usableFromInline package let id: UInt64
        /// Whether it is a persistent cache (otherwise a memory cache).
        @usableFromInline package let isPersistent: Bool
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
}

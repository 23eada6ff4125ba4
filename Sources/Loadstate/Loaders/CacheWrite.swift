/// What a loader that understands the values it caches (the http loader)
/// says about the value it ends a job with: what becomes of the cache
/// entry, and where the value came from. Set on the job (`Job.cacheWrite`)
/// before the job succeeds; without one, a cached job's value is stored as
/// it is.
package struct CacheWrite: Sendable, Equatable {
    /// What becomes of the entry under the load's key.
    package enum Entry: Sendable, Equatable {
        /// The value is stored, with `meta` beside it.
        case store
        /// The entry stays as it is (a stale value served again).
        case keep
        /// The value must not be stored (HTTP `no-store`); any older entry
        /// under the key is dropped, as the value supersedes it.
        case remove
    }

    /// Where the value a job ends with came from.
    package enum Origin: Sendable, Equatable {
        /// Loaded: the usual case.
        case loaded
        /// The cached value, confirmed unchanged by the server (an HTTP 304):
        /// cells show it flagged from-cache and revalidated.
        case revalidated
        /// The cached value, stale, served because loading failed (HTTP
        /// `stale-if-error`): cells show it flagged from-cache and stale.
        case staleOnError
    }

    package var entry: Entry
    /// Kept beside the value (`CacheEntry.meta`) when it is stored.
    package var meta: [UInt8]
    package var origin: Origin
    /// The bytes stored in place of the value the job ends with (an HTTP
    /// response updated by a HEAD, while the job's value is the HEAD's
    /// answer; the response of a failed load); nil: the value itself.
    package var storedValue: [UInt8]?
    /// Other keys of the store the entry is stored under as well (an HTTP
    /// variant's own key).
    package var alsoStoredUnder: [[UInt8]] = []
    /// Keys whose entries the value invalidates (removed before it is
    /// stored), and prefixes of such keys.
    package var removes: [[UInt8]] = []
    package var removesPrefixes: [[UInt8]] = []

    package init(entry: Entry = .store, meta: [UInt8] = [], origin: Origin = .loaded) {
        self.entry = entry
        self.meta = meta
        self.origin = origin
    }
}

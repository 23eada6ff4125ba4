/// The keys that show optimistic values of running writes (loop thread
/// only), one record per key of a cache: what the key held before the
/// first pending value (the base), the value a write confirmed while
/// others were pending, and the pending writes in the order they began.
///
/// The rules:
/// - A write shows its value under the key at once (a memory cache stores
///   it; persistent and Redis caches are not written, their cells still
///   show it), over the base and over the values of older writes.
/// - A write that fails (or is cancelled) while its value is shown gives
///   the key back to the newest pending write still shown, else to the
///   confirmed value, else to the base: the memory cache gets the entry
///   back exactly (or none), each cell what it showed before the first
///   pending value. A write whose value is not shown changes nothing.
/// - A write that succeeds confirms its value (the job's with `populates`,
///   stored in every kind of cache): older pending writes are no longer
///   shown, and a later rollback returns to it.
/// - Newer data (a load's result stored under the key, a put into the
///   memory cache since the ledger wrote it) ends every pending value's
///   claim on the key: no rollback touches it afterwards. An invalidation
///   is not newer data.
final class OptimisticLedger {
    private struct Key: Hashable {
        let store: ObjectIdentifier
        let key: [UInt8]
    }

    private struct Pending {
        let run: ObjectIdentifier
        let order: UInt64
        let value: [UInt8]
        /// The value may still be shown: no newer data or later success came.
        var isLive: Bool
    }

    private final class Record {
        let store: any CacheStore
        let key: [UInt8]
        /// The memory cache's entry before the first pending value (nil: none).
        var baseEntry: CacheEntry?
        /// The entry the ledger last stored in the memory cache.
        var written: CacheEntry?
        /// A value a write confirmed while others were pending.
        var confirmed: [UInt8]?
        var pending: [Pending] = []
        /// The cells shown a value of this record, with what they showed before.
        var viewers: [ObjectIdentifier: (viewer: any OptimisticViewer, snapshot: Any)] = [:]
        /// Newer data replaced the key: the next write takes what the key
        /// holds then as its base.
        var needsBase = false

        init(store: any CacheStore, key: [UInt8]) {
            self.store = store
            self.key = key
            baseEntry = (store as? MemoryCache)?.peekEntry(key)
        }

        var shown: Pending? { pending.last { $0.isLive } }
    }

    private var records: [Key: Record] = [:]
    private var writes: UInt64 = 0
    /// Set while the ledger stores a confirmed value itself.
    private var storing = false

    var isEmpty: Bool { records.isEmpty }

    /// Shows the optimistic values of `run`, which begins now.
    func apply(_ run: MutationRun, on runtime: Runtime) {
        self.runtime = runtime
        writes &+= 1
        run.order = writes
        for update in run.updates {
            let key = Key(store: ObjectIdentifier(update.store), key: update.key)
            let record = records[key] ?? Record(store: update.store, key: update.key)
            records[key] = record
            if record.needsBase {
                record.needsBase = false
                record.baseEntry = (record.store as? MemoryCache)?.peekEntry(record.key)
                record.written = nil
            }
            record.pending.append(Pending(run: ObjectIdentifier(run), order: run.order, value: update.value,
                                          isLive: true))
            show(record, update.value, optimistic: true, rolledBack: false, checked: false)
        }
    }

    /// Loop: a load's result was stored under `key` of `store`: newer data.
    func newerData(_ store: any CacheStore, key: [UInt8]) {
        guard !records.isEmpty, !storing,
              let record = records[Key(store: ObjectIdentifier(store), key: key)] else { return }
        supersede(record)
    }

    /// Newer data under the record's key: nothing pending is shown again,
    /// and what it showed before is forgotten.
    private func supersede(_ record: Record) {
        for i in record.pending.indices { record.pending[i].isLive = false }
        record.confirmed = nil
        record.viewers = [:]
        record.needsBase = true
    }

    /// Another put replaced the entry the ledger stored in `memory`: newer
    /// data, which the cells that still show an optimistic value show
    /// instead (flagged rolled back).
    private func putSince(_ record: Record, _ memory: MemoryCache) {
        if let current = memory.peekEntry(record.key) {
            showCells(record, current.value, optimistic: false, rolledBack: true, onlyOptimistic: true)
        }
        supersede(record)
    }

    /// `run` ended: confirmed when it `succeeded`, otherwise rolled back.
    func end(_ run: MutationRun, succeeded: Bool) {
        guard run.markEnded() else { return }
        let id = ObjectIdentifier(run)
        var done = Set<Key>()
        for update in run.updates {
            let key = Key(store: ObjectIdentifier(update.store), key: update.key)
            guard done.insert(key).inserted, let record = records[key] else { continue }
            let wasShown = record.shown?.run == id
            let own = record.pending.last { $0.run == id }
            record.pending.removeAll { $0.run == id }
            if succeeded {
                confirm(record, run: run, value: run.populates ? run.result ?? [] : own?.value ?? update.value,
                        ownLive: own?.isLive ?? false)
            } else if wasShown {
                if let next = record.shown {
                    show(record, next.value, optimistic: true, rolledBack: true, checked: true)
                } else {
                    rollBack(record)
                }
            }
            if record.pending.isEmpty { records[key] = nil }
        }
        guard succeeded else { return }
        for invalidation in run.invalidations {
            // A failing store is skipped: the write itself succeeded.
            try? runtime?.invalidateNow(invalidation.store, prefix: invalidation.prefix)
        }
    }

    /// A write succeeded with `value` for the record's key (`ownLive`: its
    /// optimistic value could still be shown: no newer data came since).
    private func confirm(_ record: Record, run: MutationRun, value: [UInt8], ownLive: Bool) {
        let newerShown = record.shown.map { $0.order > run.order } ?? false
        // Older writes no longer show their values; a later rollback comes back here.
        for i in record.pending.indices where record.pending[i].order < run.order {
            record.pending[i].isLive = false
        }
        // Without a result of its own, a write whose value newer data replaced changes nothing.
        guard run.populates || ownLive else { return }
        record.confirmed = value
        if run.populates {
            if let memory = record.store as? MemoryCache {
                // A newer pending value stays in the memory cache; a rollback brings this one.
                if !newerShown {
                    storing = true
                    memory.put(record.key, value)
                    storing = false
                    record.written = memory.peekEntry(record.key)
                    record.needsBase = false
                }
            } else {
                storing = true
                try? record.store.put(record.key, value)
                storing = false
            }
        }
        guard !newerShown else { return }
        showCells(record, value, optimistic: false, rolledBack: false, onlyOptimistic: !run.populates)
    }

    /// Shows `value` under the record's key: the memory cache stores it
    /// (`checked`: unless newer data replaced what the ledger stored), the
    /// cells show it.
    private func show(_ record: Record, _ value: [UInt8], optimistic: Bool, rolledBack: Bool, checked: Bool) {
        if let memory = record.store as? MemoryCache {
            let now = Clock.wallMs()
            let entry = CacheEntry(value: value, storedAtMs: now,
                                   expiresAtMs: CacheEntry.expiry(storedAt: now, ttlMs: memory.options.ttlMs))
            guard memory.replaceEntry(record.key, with: entry, ifCurrent: record.written, checks: checked) else {
                return putSince(record, memory)
            }
            record.written = entry
        }
        showCells(record, value, optimistic: optimistic, rolledBack: rolledBack, onlyOptimistic: checked)
    }

    /// The record's cells show `value`; a cell shown it for the first time
    /// is remembered with what it showed before. `onlyOptimistic`: only
    /// cells that show an optimistic value now (the others show newer data).
    private func showCells(_ record: Record, _ value: [UInt8], optimistic: Bool, rolledBack: Bool,
                           onlyOptimistic: Bool) {
        for handle in viewers(of: record) {
            let id = ObjectIdentifier(handle)
            if onlyOptimistic && !handle.showsOptimistic { continue }
            if optimistic && record.viewers[id] == nil {
                record.viewers[id] = (handle, handle.writtenSnapshot())
            }
            handle.showWrittenValue(value, optimistic: optimistic, rolledBack: rolledBack)
        }
    }

    /// No pending value is shown any more: the key gets back the confirmed
    /// value, or else exactly what it held before the first pending value.
    private func rollBack(_ record: Record) {
        if let confirmed = record.confirmed {
            return show(record, confirmed, optimistic: false, rolledBack: true, checked: true)
        }
        if let memory = record.store as? MemoryCache,
           !memory.replaceEntry(record.key, with: record.baseEntry, ifCurrent: record.written, checks: true) {
            return putSince(record, memory)
        }
        for (viewer, snapshot) in record.viewers.values
        where viewer.views(record.store, key: record.key) && viewer.showsOptimistic {
            viewer.restoreWritten(snapshot)
        }
    }

    /// The runtime's cells whose last load used the record's key.
    private func viewers(of record: Record) -> [any OptimisticViewer] {
        guard let runtime = runtime else { return [] }
        var found: [any OptimisticViewer] = []
        for case let viewer as any OptimisticViewer in runtime.table.all()
        where viewer.views(record.store, key: record.key) {
            found.append(viewer)
        }
        return found
    }

    /// The runtime the ledger belongs to (set by the first write).
    private weak var runtime: Runtime?
}

extension Runtime {
    /// Any thread: a host stored `key` in `store` (a persistent or Redis
    /// cache; a memory cache's own entry tells the ledger): newer data for
    /// the writes that show optimistic values under it.
    @_spi(LoadstateC) public func notePut(_ store: any CacheStore, key: [UInt8]) {
        loop.execute { [self] in optimisticLedger.newerData(store, key: key) }
    }
}

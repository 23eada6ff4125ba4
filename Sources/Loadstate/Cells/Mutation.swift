/// A write run by a process cell (`lds_process_mutate`,
/// `ProcessCell.mutate`): the optimistic values it shows while it runs,
/// whether its result becomes the confirmed value of those keys, and the
/// prefixes it invalidates once it succeeded. It ends with the run's
/// session (see `Cell.mutation` and `OptimisticLedger`).
@_spi(LoadstateC) public final class MutationRun {
    /// One optimistic value: `value` under `key` of `store`.
    public struct Update {
        let store: any CacheStore
        let key: [UInt8]
        let value: [UInt8]

        /// `value` under `key` of `store`.
        public init(store: any CacheStore, key: [UInt8], value: [UInt8]) {
            self.store = store
            self.key = key
            self.value = value
        }
    }

    /// One prefix to invalidate after a success.
    public struct Invalidation {
        let store: any CacheStore
        let prefix: [UInt8]

        /// The entries of `store` under `prefix`.
        public init(store: any CacheStore, prefix: [UInt8]) {
            self.store = store
            self.prefix = prefix
        }
    }

    let updates: [Update]
    let invalidations: [Invalidation]
    /// The job's value becomes the confirmed value of every key.
    let populates: Bool
    /// The number of the process cell's load this write is (`Cell.currentLoad`).
    var serial: UInt32 = 0
    /// The job's value, when it succeeded with one (bytes: the C API's).
    var result: [UInt8]?
    /// A Swift write's confirmed value, encoded by its body before the job
    /// succeeds (`ProcessCell.mutate` with a codec): the result when set.
    let encodedResult = Locked<[UInt8]?>(nil)
    /// The write's place among the others (later writes are larger).
    var order: UInt64 = 0
    private(set) var isEnded = false

    /// A write of `updates`, then `invalidations` on success; `populates`:
    /// the job's value is stored under every key of `updates`.
    public init(updates: [Update], invalidations: [Invalidation], populates: Bool) {
        self.updates = updates
        self.invalidations = invalidations
        self.populates = populates
    }

    /// Marks the write ended; false if it already was.
    func markEnded() -> Bool {
        defer { isEnded = true }
        return !isEnded
    }
}

/// The most optimistic values, and the most prefixes, of one write
/// (`LDS_MUTATION_KEYS_MAX`).
public let mutationKeysMax = 64

extension Cell {
    /// Loop: runs `load` (a process run of this cell) as the write `run`:
    /// its optimistic values are shown first, the write the cell ran before
    /// ends as cancelled, and the write ends with the run (rolled back
    /// unless the run succeeds). Nothing is shown for a freed cell.
    @_spi(LoadstateC) public func runMutation(_ run: MutationRun, _ load: () -> Void) {
        guard !isFreed else { return }
        let ledger = runtime.optimisticLedger
        run.serial = nextLoadSerial
        ledger.apply(run, on: runtime)
        let earlier = mutation
        mutation = run
        if let earlier { ledger.end(earlier, succeeded: false) }
        load()
        if !run.isEnded && currentLoad != UInt64(run.serial) {
            // The run did not start (the cell was freed meanwhile).
            if mutation === run { mutation = nil }
            ledger.end(run, succeeded: false)
        }
    }
}

/// A cell that may show the optimistic values of a write (any Value and
/// Request): loop thread only.
protocol OptimisticViewer: AnyObject {
    /// Whether the cell's last load used `key` of `store` (a live loadable cell).
    func views(_ store: AnyObject, key: [UInt8]) -> Bool
    /// What the cell shows now, to bring back on a rollback.
    func writtenSnapshot() -> Any
    /// Whether the cell shows an optimistic value now.
    var showsOptimistic: Bool { get }
    /// Shows `value` (decoded as its cache does) as LOADED, with the
    /// request the cell shows; flagged optimistic or not.
    func showWrittenValue(_ value: [UInt8], optimistic: Bool, rolledBack: Bool)
    /// Shows a snapshot again, flagged rolled back.
    func restoreWritten(_ snapshot: Any)
}

extension Cell: OptimisticViewer {
    func views(_ store: AnyObject, key: [UInt8]) -> Bool {
        guard flavor == .loadable, !isFreed, let use = lastCacheUse else { return false }
        return use.store === store && use.key == key
    }

    func writtenSnapshot() -> Any { state }

    var showsOptimistic: Bool { state.isOptimistic }

    func showWrittenValue(_ value: [UInt8], optimistic: Bool, rolledBack: Bool) {
        guard let use = lastCacheUse, let decoded = use.decode(value) else { return }
        let current = state
        var next = CellState<Value, Request>(status: .loaded, kind: current.kind, value: decoded, error: nil,
                                             request: current.request ?? lastRequest, isPartial: false,
                                             isRefreshing: isLoadRunning, attempt: current.attempt,
                                             updatedAt: Clock.wallMs())
        next.isOptimistic = optimistic
        showWritten(next, rolledBack: rolledBack)
    }

    func restoreWritten(_ snapshot: Any) {
        guard let shown = snapshot as? CellState<Value, Request> else { return }
        showWritten(shown, rolledBack: true)
    }
}

import Synchronization

/// Work waiting for the loop thread: commands from any thread and Swift
/// concurrency jobs for the loop's serial executor.
enum WorkItem {
    case command(() -> Void)
    case job(UnownedJob)
    /// The last item of a stop (see `EventLoop.stop`).
    case stop(() -> Void)
    /// A command a stop that drops queued work skips (see `EventLoop.executeSkippable`).
    case skippable(() -> Void)
}

/// A multi-producer, single-consumer queue of work items.
///
/// `push` reports whether the consumer must be woken: only the first push
/// after the consumer found the queue empty does, so wake-ups coalesce.
final class WorkQueue: @unchecked Sendable {
    private struct State {
        var items: [WorkItem] = []
        var wakePending = false
        /// Set once the consumer is gone: pushes are dropped.
        var closed = false
    }

    private let state = Locked(State())
    /// Set while items are queued: read without the lock by a consumer
    /// that polls the queue before it sleeps.
    private let queued = Atomic<Bool>(false)
    /// How many items wait (not counting a batch the consumer took).
    private let waiting = Atomic<Int>(0)
    /// Consumer-only: the array handed back on each take, to keep its
    /// capacity. No dynamic exclusivity checks (see `Cell`).
    @exclusivity(unchecked) private var spare: [WorkItem] = []

    /// Appends an item; returns true when the consumer must be woken. On a
    /// closed queue the item is dropped (released when the call returns,
    /// outside the lock) and the result is false.
    func push(_ item: WorkItem) -> Bool {
        state.withLock { s in
            guard !s.closed else { return false }
            s.items.append(item)
            queued.store(true, ordering: .relaxed)
            waiting.store(s.items.count, ordering: .relaxed)
            if s.wakePending { return false }
            s.wakePending = true
            return true
        }
    }

    /// Consumer: takes every queued item. When there are none, the next push
    /// wakes the consumer again, unless `stayAwake` (the consumer goes on
    /// polling with `mayHaveItems`).
    func takeAll(stayAwake: Bool = false) -> [WorkItem] {
        var batch = spare
        spare = []
        state.withLock { s in
            swap(&s.items, &batch)
            queued.store(false, ordering: .relaxed)
            waiting.store(0, ordering: .relaxed)
            if batch.isEmpty && !stayAwake { s.wakePending = false }
        }
        return batch
    }

    /// After the consumer's last take: drops what is queued and every later
    /// push, so that work nobody will run does not keep what it holds (a
    /// command capturing its runtime) alive. The items are released after
    /// the lock, and their release may push again.
    func close() {
        let dropped = state.withLock { s -> [WorkItem] in
            s.closed = true
            s.wakePending = true
            waiting.store(0, ordering: .relaxed)
            defer { s.items = [] }
            return s.items
        }
        withExtendedLifetime(dropped) {}
        spare = []
    }

    /// Any thread: how many items wait for the consumer, as of a recent
    /// push or take (a hint: pushes on other threads may not show yet).
    var count: Int { waiting.load(ordering: .relaxed) }

    /// Consumer: whether a push may have come since the last take (a hint).
    var mayHaveItems: Bool { queued.load(ordering: .relaxed) }

    /// The most items whose storage `recycle` keeps: a burst (100,000 loads
    /// queued at once) leaves no megabytes behind.
    static let spareCapacityLimit = 4096

    /// Consumer: gives back a processed batch so its storage is reused.
    /// The items are released now, not when the storage is next used. The
    /// storage of a batch larger than `spareCapacityLimit` is freed instead.
    func recycle(_ batch: [WorkItem]) {
        var emptied = batch
        emptied.removeAll(keepingCapacity: emptied.capacity <= WorkQueue.spareCapacityLimit)
        spare = emptied
    }

    /// Consumer: the capacity `takeAll` will hand out next (for tests).
    var spareCapacity: Int { spare.capacity }
}

import CLibUV

/// The runtime-wide metrics: the load counters of all its loaders (freed
/// ones too) and the events its cells delivered. Each loader keeps its own
/// `LoadMetrics` besides.
///
/// Written on the loop thread only (see `LoadMetrics`); read from any
/// thread. Freed by the runtime's `deinit`.
@usableFromInline package struct RuntimeMetrics: @unchecked Sendable {
    /// Whether loads are counted and timed; fixed when the runtime is made.
    @usableFromInline package let isEnabled: Bool
    @usableFromInline package let loads = LoadMetrics()
    private let events: UnsafeMutablePointer<UInt64>

    init(enabled: Bool) {
        isEnabled = enabled
        events = counterBlock(1)
    }

    /// Frees the counters; the runtime's `deinit` only.
    func deallocate() {
        loads.deallocate()
        events.deallocate()
    }

    /// Cell events handed to their observers.
    @usableFromInline package var eventsDelivered: UInt64 { lds_counter_load(events) }

    // MARK: - Loop thread

    @inline(__always) func eventDelivered() {
        lds_counter_store(events, lds_counter_load(events) &+ 1)
    }

    @inline(__always) func loadStarted(_ loader: LoadMetrics) {
        loads.loadStarted()
        loader.loadStarted()
    }

    /// A load its cache answered alone (no job): started and ended at once.
    @inline(__always) func loadFromCache(_ loader: LoadMetrics) {
        loads.loadFromCache()
        loader.loadFromCache()
    }

    @inline(__always) func loadShared(_ loader: LoadMetrics) {
        loads.loadShared()
        loader.loadShared()
    }

    @inline(__always) func loadRetried(_ loader: LoadMetrics) {
        loads.loadRetried()
        loader.loadRetried()
    }

    @inline(__always) func jobQueued(_ loader: LoadMetrics) {
        loads.jobQueued()
        loader.jobQueued()
    }

    /// A job queued at `queuedAtNs` (`uv_hrtime`) was admitted now.
    func jobAdmitted(_ loader: LoadMetrics, queuedAtNs: UInt64) {
        let now = uv_hrtime()
        let ns = now >= queuedAtNs ? now - queuedAtNs : 0
        loads.jobWaited(ns: ns)
        loader.jobWaited(ns: ns)
    }

    /// A load that began at `startedAtNs` (`uv_hrtime`) ended now.
    func loadEnded(_ outcome: LoadOutcome, _ loader: LoadMetrics, startedAtNs: UInt64) {
        let now = uv_hrtime()
        let ns = now >= startedAtNs ? now - startedAtNs : 0
        loads.loadEnded(outcome, ns: ns)
        loader.loadEnded(outcome, ns: ns)
    }
}

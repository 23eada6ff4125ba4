import CLibUV

/// How a load ended, for the metrics: every load that started ends in
/// exactly one of these.
@usableFromInline package enum LoadOutcome: Int, Sendable {
    /// The job succeeded or finished (`LOADED`, or a finish that restored the state).
    case succeeded = 0
    /// The job failed for good (after its retries), or the load failed otherwise.
    case failed = 1
    /// A cancel, reset, `set*`, a newer load, `free`, or the job cancelled itself.
    case cancelled = 2
    /// The load's timeout fired.
    case timedOut = 3

    /// A load that failed with `error`: timed out for `ResultCode.timedOut`.
    init(failure error: LoadError) {
        self = error.domain == .loadstate && error.code == ResultCode.timedOut.rawValue ? .timedOut : .failed
    }
}

/// The counters of loads: one set per loader and one for the whole
/// runtime.
///
/// One writer, the loop thread: each counter is a relaxed 64-bit load and
/// store (no lock, no read-modify-write instruction). Any thread may read
/// them; a reader sees each counter whole, not all of them from the same
/// instant.
///
/// A value that points to its counters (no reference counting on the path
/// of a load): its owner (a loader, a runtime) calls `deallocate` once, in
/// its `deinit`; readers on other threads hold the owner meanwhile.
@usableFromInline package struct LoadMetrics: @unchecked Sendable {
    /// Latency buckets: bucket `i` counts loads that took less than 2^i
    /// microseconds (and at least 2^(i-1), for `i > 0`); the last one counts
    /// the rest.
    @usableFromInline package static let latencyBuckets = 32

    // Slots: the counters, the latency buckets, the queue's counters and
    // the queue-wait buckets, then the loads a cache answered.
    private enum Slot: Int {
        case started, succeeded, failed, cancelled, timedOut, retried, shared, jobsStarted, jobsEnded
        case latencyCount, latencySumNs, latencyMaxNs
        static let firstBucket = 12
        static let jobsQueued = firstBucket + latencyBuckets
        static let waitCount = jobsQueued + 1, waitSumNs = jobsQueued + 2, waitMaxNs = jobsQueued + 3
        static let firstWaitBucket = jobsQueued + 4
        static let fromCache = firstWaitBucket + latencyBuckets
    }

    private let slots: UnsafeMutablePointer<UInt64>
    private static let slotCount = Slot.fromCache + 1

    @usableFromInline package init() {
        slots = counterBlock(Self.slotCount)
    }

    /// Frees the counters; the owner's `deinit` only.
    func deallocate() {
        slots.deallocate()
    }

    @inline(__always)
    private func bump(_ slot: Int, by n: UInt64 = 1) {
        let p = slots + slot
        lds_counter_store(p, lds_counter_load(p) &+ n)
    }

    @inline(__always)
    private func read(_ slot: Int) -> UInt64 { lds_counter_load(slots + slot) }

    // MARK: - Writers (loop thread)

    @inline(__always) func loadStarted() { bump(Slot.started.rawValue) }
    @inline(__always) func loadShared() { bump(Slot.shared.rawValue) }
    @inline(__always) func loadRetried() { bump(Slot.retried.rawValue) }
    @inline(__always) func jobStarted() { bump(Slot.jobsStarted.rawValue) }
    @inline(__always) func jobEnded() { bump(Slot.jobsEnded.rawValue) }
    @inline(__always) func jobQueued() { bump(Slot.jobsQueued) }

    /// A load the cache answered alone: it starts and ends at once, in an
    /// outcome of its own, without a latency (no job ran).
    @inline(__always) func loadFromCache() {
        bump(Slot.started.rawValue)
        bump(Slot.fromCache)
    }

    /// A queued job was admitted after waiting `ns` nanoseconds.
    func jobWaited(ns: UInt64) {
        bump(Slot.waitCount)
        bump(Slot.waitSumNs, by: ns)
        if ns > read(Slot.waitMaxNs) { lds_counter_store(slots + Slot.waitMaxNs, ns) }
        bump(Slot.firstWaitBucket + Self.bucket(ns: ns))
    }

    /// A load ended after `ns` nanoseconds.
    func loadEnded(_ outcome: LoadOutcome, ns: UInt64) {
        bump(Slot.succeeded.rawValue + outcome.rawValue)
        bump(Slot.latencyCount.rawValue)
        bump(Slot.latencySumNs.rawValue, by: ns)
        if ns > read(Slot.latencyMaxNs.rawValue) { lds_counter_store(slots + Slot.latencyMaxNs.rawValue, ns) }
        bump(Slot.firstBucket + Self.bucket(ns: ns))
    }

    /// The bucket of a latency of `ns` nanoseconds.
    static func bucket(ns: UInt64) -> Int {
        let us = ns / 1000
        // The number of bits of `us`: 0 for 0, 1 for 1, 2 for 2..3, ...
        let bits = UInt64.bitWidth - us.leadingZeroBitCount
        return min(bits, latencyBuckets - 1)
    }

    // MARK: - Readers (any thread)

    /// The counters now.
    @usableFromInline package func snapshot() -> LoadCounters {
        var c = LoadCounters()
        c.started = read(Slot.started.rawValue)
        c.succeeded = read(Slot.succeeded.rawValue)
        c.failed = read(Slot.failed.rawValue)
        c.cancelled = read(Slot.cancelled.rawValue)
        c.timedOut = read(Slot.timedOut.rawValue)
        c.retried = read(Slot.retried.rawValue)
        c.shared = read(Slot.shared.rawValue)
        c.jobsStarted = read(Slot.jobsStarted.rawValue)
        c.jobsEnded = read(Slot.jobsEnded.rawValue)
        c.latency.count = read(Slot.latencyCount.rawValue)
        c.latency.sumNs = read(Slot.latencySumNs.rawValue)
        c.latency.maxNs = read(Slot.latencyMaxNs.rawValue)
        c.latency.buckets = (0..<Self.latencyBuckets).map { read(Slot.firstBucket + $0) }
        c.jobsQueued = read(Slot.jobsQueued)
        c.queueWait.count = read(Slot.waitCount)
        c.queueWait.sumNs = read(Slot.waitSumNs)
        c.queueWait.maxNs = read(Slot.waitMaxNs)
        c.queueWait.buckets = (0..<Self.latencyBuckets).map { read(Slot.firstWaitBucket + $0) }
        c.fromCache = read(Slot.fromCache)
        return c
    }
}

/// Zeroed storage for `count` counters in whole cache lines of their own:
/// the loop thread's writes never share a line with what other threads
/// write (a line shared with a host thread's data would bounce between
/// the cores on every load).
func counterBlock(_ count: Int) -> UnsafeMutablePointer<UInt64> {
    let line = 64
    let bytes = (count * MemoryLayout<UInt64>.stride + line - 1) / line * line
    let raw = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: line)
    raw.initializeMemory(as: UInt8.self, repeating: 0, count: bytes)
    return raw.bindMemory(to: UInt64.self, capacity: bytes / MemoryLayout<UInt64>.stride)
}

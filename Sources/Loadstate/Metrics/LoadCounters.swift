/// A copy of the load counters of a loader or of a runtime.
@usableFromInline package struct LoadCounters: Sendable, Equatable {
    @usableFromInline package var started: UInt64 = 0
    @usableFromInline package var succeeded: UInt64 = 0
    @usableFromInline package var failed: UInt64 = 0
    @usableFromInline package var cancelled: UInt64 = 0
    @usableFromInline package var timedOut: UInt64 = 0
    @usableFromInline package var retried: UInt64 = 0
    @usableFromInline package var shared: UInt64 = 0
    @usableFromInline package var jobsStarted: UInt64 = 0
    @usableFromInline package var jobsEnded: UInt64 = 0
    @usableFromInline package var latency = LatencyHistogram()
    /// Jobs a loader's limits held in its queue (see `Admission`).
    @usableFromInline package var jobsQueued: UInt64 = 0
    /// How long queued jobs waited before their loader was called (jobs
    /// that left the queue cancelled are not measured).
    @usableFromInline package var queueWait = LatencyHistogram()
    /// Loads a cache answered alone, no job started (a cache-first hit, a
    /// cache-only read): counted in `started`, ended at once, not timed.
    @usableFromInline package var fromCache: UInt64 = 0

    @usableFromInline package init() {}

    /// Jobs started and not yet ended.
    @usableFromInline package var jobsInFlight: UInt64 {
        jobsStarted >= jobsEnded ? jobsStarted - jobsEnded : 0
    }

    /// Adds `other`'s counters to these (loaders that share a name in the
    /// metrics text); the maxima are the larger of the two.
    mutating func add(_ other: LoadCounters) {
        started &+= other.started
        succeeded &+= other.succeeded
        failed &+= other.failed
        cancelled &+= other.cancelled
        timedOut &+= other.timedOut
        retried &+= other.retried
        shared &+= other.shared
        jobsStarted &+= other.jobsStarted
        jobsEnded &+= other.jobsEnded
        latency.add(other.latency)
        jobsQueued &+= other.jobsQueued
        queueWait.add(other.queueWait)
        fromCache &+= other.fromCache
    }
}

/// Load latencies (load start to end) in power-of-two microsecond buckets
/// (see `LoadMetrics.latencyBuckets`).
@usableFromInline package struct LatencyHistogram: Sendable, Equatable {
    @usableFromInline package var count: UInt64 = 0
    @usableFromInline package var sumNs: UInt64 = 0
    @usableFromInline package var maxNs: UInt64 = 0
    @usableFromInline package var buckets: [UInt64] = Array(repeating: 0, count: LoadMetrics.latencyBuckets)

    @usableFromInline package init() {}

    /// The upper bound in microseconds of bucket `i` (`UInt64.max` for the last).
    @usableFromInline package static func upperBoundUs(_ i: Int) -> UInt64 {
        i >= LoadMetrics.latencyBuckets - 1 ? UInt64.max : UInt64(1) << UInt64(i)
    }

    /// An estimate of quantile `q` (0...1) in microseconds: interpolated
    /// within the bucket that holds it, never above the maximum. 0 without loads.
    @usableFromInline package func quantileUs(_ q: Double) -> UInt64 {
        let total = buckets.reduce(UInt64(0)) { $0 &+ $1 }
        guard total > 0 else { return 0 }
        let maxUs = maxNs / 1000
        let rank = max(1.0, (min(max(q, 0), 1) * Double(total)).rounded(.up))
        var seen: UInt64 = 0
        for (i, n) in buckets.enumerated() where n > 0 {
            if Double(seen + n) >= rank {
                let low = i == 0 ? 0 : UInt64(1) << UInt64(i - 1)
                let high = min(Self.upperBoundUs(i), max(maxUs, low))
                let within = (rank - Double(seen)) / Double(n)
                let estimate = Double(low) + within * Double(high - low)
                return min(UInt64(estimate.rounded()), maxUs)
            }
            seen += n
        }
        return maxUs
    }

    /// Adds `other`'s loads to these.
    @usableFromInline package mutating func add(_ other: LatencyHistogram) {
        count &+= other.count
        sumNs &+= other.sumNs
        maxNs = max(maxNs, other.maxNs)
        for i in buckets.indices where i < other.buckets.count { buckets[i] &+= other.buckets[i] }
    }
}

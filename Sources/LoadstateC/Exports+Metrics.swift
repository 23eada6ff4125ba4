import CLoadstateABI
@_spi(LoadstateC) import Loadstate

/// The first version of `lds_runtime_statistics` (up to `cache_count`): the least `size` accepted.
private let statisticsSizeV1 = MemoryLayout<lds_runtime_statistics>.offset(of: \.loads_from_cache)!
/// The second version: `loads_from_cache` and `loaders_from_cache` too.
private let statisticsSizeV2 = MemoryLayout<lds_runtime_statistics>.offset(of: \.online)
    ?? MemoryLayout<lds_runtime_statistics>.size
/// The third version: the host signals too.
private let statisticsSizeV3 = MemoryLayout<lds_runtime_statistics>.size

@_cdecl("lds_runtime_stats")
public func ldsRuntimeStats(_ rt: OpaquePointer?, _ out: UnsafeMutablePointer<lds_runtime_statistics>?) -> Int32 {
    guard let out else { return LDS_EINVAL }
    let size = Int(UnsafeRawPointer(out).loadUnaligned(as: UInt32.self))
    guard size >= statisticsSizeV1 else { return LDS_EINVAL }
    // Only as far as the caller's size: the fields past it read as 0.
    let request = readSized(UnsafePointer(out)).value
    let written = size >= statisticsSizeV3 ? statisticsSizeV3 : size >= statisticsSizeV2 ? statisticsSizeV2
        : statisticsSizeV1
    guard request.loaders != nil || request.loaders_cap == 0,
          request.caches != nil || request.caches_cap == 0 else { return LDS_EINVAL }
    return withRuntime(rt) { runtime in
        let stats = runtime.statistics()
        var c = lds_runtime_statistics()
        c.size = request.size
        c.enabled = stats.isEnabled ? 1 : 0
        c.cells_alive = stats.cellsAlive
        c.events_delivered = stats.eventsDelivered
        c.loads = loadMetrics(stats.loads)
        c.loaders = request.loaders
        c.loaders_cap = request.loaders_cap
        c.loader_count = UInt32(clamping: stats.loaders.count)
        c.caches = request.caches
        c.caches_cap = request.caches_cap
        c.cache_count = UInt32(clamping: stats.caches.count)
        if let loaders = request.loaders {
            for (i, entry) in stats.loaders.prefix(Int(request.loaders_cap)).enumerated() {
                loaders[i] = lds_loader_metrics(loader: entry.id, loads: loadMetrics(entry.loads))
                request.loaders_from_cache?[i] = entry.loads.fromCache
            }
        }
        c.loads_from_cache = stats.loads.fromCache
        c.loaders_from_cache = request.loaders_from_cache
        c.online = stats.isOnline ? 1 : 0
        c.foreground = stats.isForeground ? 1 : 0
        c.loads_paused = stats.loadsPaused
        c.loads_paused_total = stats.loadsPausedTotal
        if let caches = request.caches {
            for (i, entry) in stats.caches.prefix(Int(request.caches_cap)).enumerated() {
                let s = entry.stats
                caches[i] = lds_cache_metrics(
                    cache: entry.id, persistent: entry.kind.rawValue, reserved: 0,
                    stats: lds_cache_statistics(hits: s.hits, misses: s.misses, evictions: s.evictions,
                                                expirations: s.expirations, entries: s.entries, bytes: s.bytes))
            }
        }
        // No more than the caller's size.
        withUnsafeBytes(of: &c) { bytes in
            UnsafeMutableRawPointer(out).copyMemory(from: bytes.baseAddress!,
                                                    byteCount: written)
        }
        return LDS_OK
    }
}

/// The C form of a set of load counters, quantiles included.
func loadMetrics(_ l: LoadCounters) -> lds_load_metrics {
    var m = lds_load_metrics()
    m.started = l.started
    m.succeeded = l.succeeded
    m.failed = l.failed
    m.cancelled = l.cancelled
    m.timed_out = l.timedOut
    m.retried = l.retried
    m.shared = l.shared
    m.jobs_started = l.jobsStarted
    m.jobs_in_flight = l.jobsInFlight
    (m.latency_count, m.latency_sum_us, m.latency_max_us) = (l.latency.count, l.latency.sumNs / 1000,
                                                              l.latency.maxNs / 1000)
    (m.latency_p50_us, m.latency_p90_us, m.latency_p99_us) = quantiles(l.latency)
    copyBuckets(l.latency, into: &m.latency_buckets)
    m.jobs_queued = l.jobsQueued
    (m.queue_wait_count, m.queue_wait_sum_us, m.queue_wait_max_us) = (l.queueWait.count, l.queueWait.sumNs / 1000,
                                                                       l.queueWait.maxNs / 1000)
    (m.queue_wait_p50_us, m.queue_wait_p90_us, m.queue_wait_p99_us) = quantiles(l.queueWait)
    copyBuckets(l.queueWait, into: &m.queue_wait_buckets)
    return m
}

/// A histogram's p50, p90 and p99, in microseconds.
private func quantiles(_ h: LatencyHistogram) -> (UInt64, UInt64, UInt64) {
    (h.quantileUs(0.5), h.quantileUs(0.9), h.quantileUs(0.99))
}

/// Copies a histogram's buckets into a C array of them (a tuple), as many as fit.
private func copyBuckets<Buckets>(_ h: LatencyHistogram, into tuple: inout Buckets) {
    withUnsafeMutableBytes(of: &tuple) { raw in
        let buckets = raw.bindMemory(to: UInt64.self)
        for (i, n) in h.buckets.enumerated() where i < buckets.count { buckets[i] = n }
    }
}

/// Copies `text` and a NUL into the caller's buffer of `cap` bytes and
/// gives its length: LDS_OK, or LDS_ETOOBIG (with the length) when it does
/// not fit. The export functions that hand out a string share it.
func copyOut(_ text: String, _ buf: UnsafeMutablePointer<CChar>?, _ cap: Int,
             _ len: UnsafeMutablePointer<Int>) -> Int32 {
    var text = text
    return text.withUTF8 { bytes -> Int32 in
        len.pointee = bytes.count
        guard let buf, bytes.count < cap else { return LDS_ETOOBIG }
        if let base = bytes.baseAddress {
            UnsafeMutableRawPointer(buf).copyMemory(from: base, byteCount: bytes.count)
        }
        buf[bytes.count] = 0
        return LDS_OK
    }
}

@_cdecl("lds_runtime_metrics_text")
public func ldsRuntimeMetricsText(_ rt: OpaquePointer?, _ buf: UnsafeMutablePointer<CChar>?, _ cap: Int,
                                  _ len: UnsafeMutablePointer<Int>?) -> Int32 {
    guard let len, buf != nil || cap == 0, cap >= 0 else { return LDS_EINVAL }
    len.pointee = 0
    if let buf, cap > 0 { buf[0] = 0 }
    return withRuntime(rt) { runtime in copyOut(runtime.metricsText(), buf, cap, len) }
}

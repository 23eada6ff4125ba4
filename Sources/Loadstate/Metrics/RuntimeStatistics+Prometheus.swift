extension RuntimeStatistics {
    /// The metrics in the Prometheus text exposition format (version 0.0.4).
    ///
    /// Load series carry a `loader` label: the name of each loader alive
    /// (its id when it has none), and `freed` for what the loaders freed
    /// since counted (the runtime's totals minus the loaders alive), so
    /// that a sum over `loader` is the runtime's total. Loaders that share
    /// a label value (two of the same name, or a name that is another
    /// loader's id or `freed`) share its series: their counters and
    /// histograms added, the longest of their loads as maximum. Names are
    /// escaped as label values (backslash, double quote, line feed). Cache
    /// series carry `cache` (the id) and `kind` (`memory`, `persistent` or
    /// `redis`).
    @usableFromInline package var prometheusText: String {
        var w = PrometheusWriter()
        w.family("loadstate_metrics_enabled", "gauge", "1 when the runtime counts loads, jobs and events.")
        w.sample("loadstate_metrics_enabled", "", isEnabled ? 1 : 0)
        w.family("loadstate_cells_alive", "gauge", "Cells made and not freed.")
        w.sample("loadstate_cells_alive", "", cellsAlive)
        w.family("loadstate_events_delivered_total", "counter", "Cell events handed to their callbacks.")
        w.sample("loadstate_events_delivered_total", "", eventsDelivered)
        w.family("loadstate_online", "gauge", "1 while the host says the runtime is online.")
        w.sample("loadstate_online", "", isOnline ? 1 : 0)
        w.family("loadstate_foreground", "gauge", "1 while the host says the runtime is in the foreground.")
        w.sample("loadstate_foreground", "", isForeground ? 1 : 0)
        w.family("loadstate_loads_paused", "gauge", "Loads and retries waiting for the runtime to be online.")
        w.sample("loadstate_loads_paused", "", loadsPaused)
        w.family("loadstate_loads_paused_total", "counter", "Loads and retries that waited for the runtime to be online.")
        w.sample("loadstate_loads_paused_total", "", loadsPausedTotal)

        let series = loaderSeries

        func counter(_ name: String, _ help: String, _ value: (LoadCounters) -> UInt64) {
            w.family(name, "counter", help)
            for s in series { w.sample(name, s.label, value(s.loads)) }
        }
        counter("loadstate_loads_started_total", "Loads that started (those a cache answered alone included).") { $0.started }
        w.family("loadstate_loads_ended_total", "counter", "Loads that ended, by outcome.")
        for s in series {
            w.sample("loadstate_loads_ended_total", s.label + ",outcome=\"succeeded\"", s.loads.succeeded)
            w.sample("loadstate_loads_ended_total", s.label + ",outcome=\"failed\"", s.loads.failed)
            w.sample("loadstate_loads_ended_total", s.label + ",outcome=\"cancelled\"", s.loads.cancelled)
            w.sample("loadstate_loads_ended_total", s.label + ",outcome=\"timed_out\"", s.loads.timedOut)
            w.sample("loadstate_loads_ended_total", s.label + ",outcome=\"from_cache\"", s.loads.fromCache)
        }
        counter("loadstate_load_retries_total", "Retries: attempts of a load after its first.") { $0.retried }
        counter("loadstate_loads_shared_total", "Loads that joined another load's running job.") { $0.shared }
        counter("loadstate_jobs_started_total", "Jobs started by loaders.") { $0.jobsStarted }
        w.family("loadstate_jobs_in_flight", "gauge", "Jobs made and not yet ended (queued ones included).")
        for s in series { w.sample("loadstate_jobs_in_flight", s.label, s.loads.jobsInFlight) }
        counter("loadstate_jobs_queued_total", "Jobs a loader's limits held in its queue.") { $0.jobsQueued }

        histogram(&w, series, "loadstate_load_duration_seconds",
                  "Time from a load's start to its end (retries included).") { $0.latency }
        histogram(&w, series, "loadstate_job_queue_wait_seconds",
                  "Time queued jobs waited for their loader's limits.") { $0.queueWait }
        // Quantiles are the histogram's to give (histogram_quantile): a gauge
        // with a quantile label is neither a histogram nor a summary.
        let maximum = "loadstate_load_duration_max_seconds"
        w.family(maximum, "gauge", "The longest load so far.")
        for s in series { w.sample(maximum, s.label, seconds(ns: s.loads.latency.maxNs)) }

        let cacheSeries = caches.map { ("cache=\"\($0.id)\",kind=\"\($0.kind.name)\"", $0.stats) }
        func cacheMetric(_ name: String, _ type: String, _ help: String, _ value: (CacheStats) -> UInt64) {
            w.family(name, type, help)
            for (label, stats) in cacheSeries { w.sample(name, label, value(stats)) }
        }
        cacheMetric("loadstate_cache_hits_total", "counter", "Cache gets that found a live entry.") { $0.hits }
        cacheMetric("loadstate_cache_misses_total", "counter", "Cache gets that found nothing or an expired entry.") { $0.misses }
        cacheMetric("loadstate_cache_evictions_total", "counter", "Entries dropped to stay within the bounds.") { $0.evictions }
        cacheMetric("loadstate_cache_expirations_total", "counter", "Entries dropped because their time to live had passed.") { $0.expirations }
        cacheMetric("loadstate_cache_entries", "gauge", "Entries held now.") { $0.entries }
        cacheMetric("loadstate_cache_bytes", "gauge", "Bytes of keys and values held now.") { $0.bytes }
        return w.text
    }

    private func histogram(_ w: inout PrometheusWriter, _ series: [(label: String, loads: LoadCounters)],
                           _ name: String, _ help: String, _ pick: (LoadCounters) -> LatencyHistogram) {
        w.family(name, "histogram", help)
        for s in series {
            let h = pick(s.loads)
            var cumulative: UInt64 = 0
            for (i, n) in h.buckets.enumerated() {
                cumulative &+= n
                let le = i == h.buckets.count - 1 ? "+Inf" : seconds(us: LatencyHistogram.upperBoundUs(i))
                w.sample(name + "_bucket", s.label + ",le=\"\(le)\"", cumulative)
            }
            w.sample(name + "_sum", s.label, seconds(ns: h.sumNs))
            w.sample(name + "_count", s.label, cumulative)
        }
    }

    /// The load series: one per `loader` label value, in the order the
    /// values first appear (loaders by id, then `freed`); loaders of the
    /// same value added together.
    private var loaderSeries: [(label: String, loads: LoadCounters)] {
        var series: [(label: String, loads: LoadCounters)] = []
        var index: [String: Int] = [:]
        func add(_ value: String, _ loads: LoadCounters) {
            let label = "loader=\"" + prometheusLabelValue(value) + "\""
            if let i = index[label] {
                series[i].loads.add(loads)
            } else {
                index[label] = series.count
                series.append((label, loads))
            }
        }
        for entry in loaders { add(entry.name ?? String(entry.id), entry.loads) }
        add("freed", freedLoads)
        return series
    }

    /// The loads of loaders no longer alive: the totals minus the loaders
    /// alive (0 where a counter read meanwhile makes it negative).
    var freedLoads: LoadCounters {
        var live = LoadCounters()
        for entry in loaders {
            let l = entry.loads
            live.started &+= l.started
            live.succeeded &+= l.succeeded
            live.failed &+= l.failed
            live.cancelled &+= l.cancelled
            live.timedOut &+= l.timedOut
            live.retried &+= l.retried
            live.shared &+= l.shared
            live.fromCache &+= l.fromCache
            live.latency.count &+= l.latency.count
            live.latency.sumNs &+= l.latency.sumNs
            for i in live.latency.buckets.indices where i < l.latency.buckets.count {
                live.latency.buckets[i] &+= l.latency.buckets[i]
            }
            live.jobsQueued &+= l.jobsQueued
            live.queueWait.count &+= l.queueWait.count
            live.queueWait.sumNs &+= l.queueWait.sumNs
            for i in live.queueWait.buckets.indices where i < l.queueWait.buckets.count {
                live.queueWait.buckets[i] &+= l.queueWait.buckets[i]
            }
        }
        func minus(_ a: UInt64, _ b: UInt64) -> UInt64 { a >= b ? a - b : 0 }
        var freed = LoadCounters()
        freed.started = minus(loads.started, live.started)
        freed.succeeded = minus(loads.succeeded, live.succeeded)
        freed.failed = minus(loads.failed, live.failed)
        freed.cancelled = minus(loads.cancelled, live.cancelled)
        freed.timedOut = minus(loads.timedOut, live.timedOut)
        freed.retried = minus(loads.retried, live.retried)
        freed.shared = minus(loads.shared, live.shared)
        freed.fromCache = minus(loads.fromCache, live.fromCache)
        freed.latency.count = minus(loads.latency.count, live.latency.count)
        freed.latency.sumNs = minus(loads.latency.sumNs, live.latency.sumNs)
        for i in freed.latency.buckets.indices where i < loads.latency.buckets.count {
            freed.latency.buckets[i] = minus(loads.latency.buckets[i], live.latency.buckets[i])
        }
        freed.jobsQueued = minus(loads.jobsQueued, live.jobsQueued)
        freed.queueWait.count = minus(loads.queueWait.count, live.queueWait.count)
        freed.queueWait.sumNs = minus(loads.queueWait.sumNs, live.queueWait.sumNs)
        for i in freed.queueWait.buckets.indices where i < loads.queueWait.buckets.count {
            freed.queueWait.buckets[i] = minus(loads.queueWait.buckets[i], live.queueWait.buckets[i])
        }
        freed.queueWait.maxNs = freed.queueWait.buckets.contains { $0 > 0 } ? loads.queueWait.maxNs : 0
        // The maximum of the freed loaders is not kept apart: the runtime's
        // maximum when the freed loaders measured any load.
        freed.latency.maxNs = freed.latency.buckets.contains { $0 > 0 } ? loads.latency.maxNs : 0
        return freed
    }
}

/// `us` microseconds as seconds, in decimal.
private func seconds(us: UInt64) -> String { decimal(us, scale: 6) }

/// `ns` nanoseconds as seconds, in decimal.
private func seconds(ns: UInt64) -> String { decimal(ns, scale: 9) }

/// `value / 10^scale` in decimal, without trailing zeros ("0.000512", "2", "1.5").
private func decimal(_ value: UInt64, scale: Int) -> String {
    var divisor: UInt64 = 1
    for _ in 0..<scale { divisor &*= 10 }
    let whole = value / divisor
    var fraction = String(value % divisor)
    guard fraction != "0" else { return String(whole) }
    fraction = String(repeating: "0", count: max(0, scale - fraction.count)) + fraction
    while fraction.last == "0" { fraction.removeLast() }
    return "\(whole).\(fraction)"
}

/// `value` escaped as a label value of the text format: backslash, double
/// quote and line feed as `\\`, `\"` and `\n`.
func prometheusLabelValue(_ value: String) -> String {
    guard value.utf8.contains(where: { $0 == 0x5c || $0 == 0x22 || $0 == 0x0a }) else { return value }
    var out = ""
    for scalar in value.unicodeScalars {
        switch scalar {
        case "\\": out += "\\\\"
        case "\"": out += "\\\""
        case "\n": out += "\\n"
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out
}

/// Builds a text exposition: families and their samples, one per line.
struct PrometheusWriter {
    private(set) var text = ""

    mutating func family(_ name: String, _ type: String, _ help: String) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
    }

    mutating func sample(_ name: String, _ labels: String, _ value: UInt64) {
        sample(name, labels, String(value))
    }

    mutating func sample(_ name: String, _ labels: String, _ value: String) {
        text += labels.isEmpty ? "\(name) \(value)\n" : "\(name){\(labels)} \(value)\n"
    }
}

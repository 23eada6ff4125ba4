import CLibUV

extension Inspector {
    /// The runtime's state as the page shows it, as JSON. Loop thread: the
    /// handle table is walked under its lock (as long as a lookup per
    /// object alive); at most `maxCells` cells are described.
    func snapshotJSON() -> String {
        var cells: [InspectableCell] = []
        var jobs: [InspectableJob] = []
        // Pages cells (ids of loadable cells): each with its page count.
        var pagesCells: [(id: UInt64, name: String?, pages: Int, hasNext: Bool, hasPrevious: Bool)] = []
        var cellCount = 0
        let maxCells = options.maxCells
        runtime.table.withLock { storage in
            storage.handles.forEach(where: { id in
                let kind = Handle.kind(of: id)
                return kind == .job || kind == .loadable || kind == .process
            }) { _, handle in
                if let cell = handle as? InspectableCell {
                    cellCount += 1
                    cells.append(cell)
                } else if let pages = handle as? PagesCell {
                    if pagesCells.count < maxCells {
                        let shared = pages.sharedWhileLocked
                        pagesCells.append((pages.id, pages.name, shared.events.count, shared.hasNext,
                                           shared.hasPrevious))
                    }
                } else if let job = handle as? InspectableJob, jobs.count < 1000 {
                    jobs.append(job)
                }
            }
        }
        // The newest cells first; only those shown are described.
        let shown = cells.sorted { $0.inspectionID > $1.inspectionID }.prefix(maxCells)
            .map { $0.inspection(showValues: options.showValues) }
        let now = uv_now(runtime.loop.loop)
        let jobViews = jobs.map { $0.inspection(nowMs: now) }.sorted { $0.ageMs > $1.ageMs }
        let stats = runtime.statistics()

        var w = JSONWriter()
        w.beginObject()
        w.field("now_ms", Clock.wallMs())
        w.field("values", options.showValues)
        w.field("actions", options.actions)
        w.field("metrics", stats.isEnabled)
        w.field("cells_alive", UInt64(cellCount))
        w.field("events_delivered", stats.eventsDelivered)
        // The host's signals (see `Runtime.setOnline`, `Runtime.setForeground`).
        w.field("online", stats.isOnline)
        w.field("foreground", stats.isForeground)
        w.field("loads_paused", stats.loadsPaused)
        w.key("loads")
        writeLoads(&w, stats.loads)
        w.key("cells")
        w.beginArray()
        for c in shown {
            w.beginObject()
            w.field("id", c.id)
            if let name = c.name { w.field("name", name) }
            if let key = c.key { w.field("key", key) }
            w.field("kind", c.isProcess ? "process" : "loadable")
            w.field("status", c.status)
            w.key("flags")
            w.beginArray()
            for flag in c.flags { w.value(flag) }
            w.endArray()
            w.field("seq", c.seq)
            w.field("attempt", UInt64(c.attempt))
            w.field("updated_at_ms", c.updatedAtMs)
            w.field("request", c.request)
            w.field("value", c.value)
            w.field("error", c.error)
            // Compact, as there are up to 16 per cell: [status, duration_ms, flag...].
            let wall = Clock.wallMs()
            if let first = c.events.first { w.field("events_from_ms", first.atMs) }
            w.key("events")
            w.beginArray()
            for (i, e) in c.events.enumerated() {
                let end = i + 1 < c.events.count ? c.events[i + 1].atMs : max(wall, e.atMs)
                w.beginArray()
                w.value(e.status)
                w.value(end >= e.atMs ? end - e.atMs : 0)
                for flag in e.flags { w.value(flag) }
                w.endArray()
            }
            w.endArray()
            w.endObject()
        }
        w.endArray()
        // Pages cells, the newest first: their pages, not their pages' states.
        w.key("pages_cells")
        w.beginArray()
        for p in pagesCells.sorted(by: { $0.id > $1.id }) {
            w.beginObject()
            w.field("id", p.id)
            if let name = p.name { w.field("name", name) }
            w.field("pages", UInt64(p.pages))
            w.field("has_next", p.hasNext)
            w.field("has_previous", p.hasPrevious)
            w.endObject()
        }
        w.endArray()
        w.key("jobs")
        w.beginArray()
        for j in jobViews { writeJob(&w, j) }
        w.endArray()
        w.key("loaders")
        w.beginArray()
        for l in stats.loaders {
            w.beginObject()
            w.field("id", l.id)
            if let name = l.name { w.field("name", name) }
            let loader = runtime.table.lookup(l.id, as: Handle.self) as? InspectableLoader
            w.field("queued_now", loader?.queuedJobs ?? 0)
            let waiting = loader?.waitingJobs(limit: options.maxQueuedJobs, nowMs: now) ?? (first: [], total: 0)
            w.field("queued_jobs_total", waiting.total)
            w.key("queued_jobs")
            w.beginArray()
            for j in waiting.first { writeJob(&w, j) }
            w.endArray()
            w.key("loads")
            writeLoads(&w, l.loads)
            w.key("series")
            w.beginObject()
            w.field("every_ms", LoaderSeries.sampleEveryMs)
            w.key("points")
            w.beginArray()
            // The samples kept, then the loads since the last one (for a loader
            // made since the last samples: all its loads).
            let followed = series[l.id] ?? (series.count < LoaderSeries.loadersKept
                                            ? LoaderSeries(baseline: LatencyHistogram()) : nil)
            if let s = followed {
                for p in s.samples + [s.sample(at: Clock.wallMs(), l.loads.latency, queued: loader?.queuedJobs ?? 0)] {
                    w.beginObject()
                    w.field("at_ms", p.atMs)
                    w.field("loads", p.loads)
                    w.field("p50_us", p.p50Us)
                    w.field("p90_us", p.p90Us)
                    w.field("max_us", p.maxUs)
                    w.field("queued", p.queued)
                    w.endObject()
                }
            }
            w.endArray()
            w.endObject()
            w.endObject()
        }
        w.endArray()
        w.key("caches")
        w.beginArray()
        for c in stats.caches {
            w.beginObject()
            w.field("id", c.id)
            w.field("kind", c.kind.name)
            w.field("entries", c.stats.entries)
            w.field("bytes", c.stats.bytes)
            w.field("hits", c.stats.hits)
            w.field("misses", c.stats.misses)
            w.key("hit_rate")
            w.ratio(c.stats.hits, of: c.stats.hits &+ c.stats.misses)
            w.field("evictions", c.stats.evictions)
            w.field("expirations", c.stats.expirations)
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.text
    }

    /// A job in flight, or one waiting for its loader's limits (`age_ms`:
    /// since it was queued).
    private func writeJob(_ w: inout JSONWriter, _ j: JobInspection) {
        w.beginObject()
        w.field("id", j.id)
        w.field("loader", j.loader)
        w.field("priority", Int(j.priority))
        w.field("attempt", UInt64(j.attempt))
        w.field("age_ms", j.ageMs)
        w.field("cells", j.cells)
        w.field("request", j.request)
        w.endObject()
    }

    private func writeLoads(_ w: inout JSONWriter, _ l: LoadCounters) {
        w.beginObject()
        w.field("started", l.started)
        w.field("succeeded", l.succeeded)
        w.field("failed", l.failed)
        w.field("cancelled", l.cancelled)
        w.field("timed_out", l.timedOut)
        w.field("from_cache", l.fromCache)
        w.field("retried", l.retried)
        w.field("shared", l.shared)
        w.field("jobs_in_flight", l.jobsInFlight)
        w.field("p50_us", l.latency.quantileUs(0.5))
        w.field("p90_us", l.latency.quantileUs(0.9))
        w.field("p99_us", l.latency.quantileUs(0.99))
        w.field("max_us", l.latency.maxNs / 1000)
        w.field("queued", l.jobsQueued)
        w.field("queue_wait_p50_us", l.queueWait.quantileUs(0.5))
        w.field("queue_wait_max_us", l.queueWait.maxNs / 1000)
        w.endObject()
    }
}

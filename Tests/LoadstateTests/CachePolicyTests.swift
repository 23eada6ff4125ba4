import Testing
@_spi(LoadstateC) @testable import Loadstate

/// Loads that read and fill a cache, by policy; invalidation.
@Suite(.timeLimit(.minutes(1)))
struct CachePolicyTests {
    let f: CoreFixture
    let store: MemoryCache

    init() throws {
        f = try CoreFixture()
        store = MemoryCache(id: f.runtime.table.makeID(.cache), name: "test")
        f.runtime.table.insert(store)
    }

    private func use(_ policy: CachePolicy, key: String = "k", freshMs: UInt64 = 60_000,
                     maxAgeMs: UInt64 = 0, in store: (any CacheStore)? = nil) -> CacheUse<String> {
        CacheUse(store: store ?? self.store, key: Array(key.utf8), policy: policy, freshMs: freshMs,
                 maxAgeMs: maxAgeMs, encode: { Array($0.utf8) }, decode: { String(decoding: $0, as: UTF8.self) })
    }

    private func load(_ cache: CacheUse<String>) {
        let spec = LoadSpec(loader: f.loader as Loader<String, String>, request: "q", cache: cache)
        f.cell.noteLoadRequested(loader: f.loader.id)
        f.onLoop { $0.load(spec) }
    }

    private func cached(_ key: String = "k") -> String? {
        store.get(Array(key.utf8)).map { String(decoding: $0.value, as: UTF8.self) }
    }

    @Test func loadOnlyStoresTheResult() async throws {
        defer { f.close() }
        load(use(.loadOnly))
        _ = await f.log.next()
        f.submit(.succeed("v"), await f.loader.nextJob())
        #expect(await f.log.next().state.value == "v")
        #expect(cached() == "v")
    }

    @Test func cacheFirstServesAFreshEntryWithoutLoading() async throws {
        defer { f.close() }
        store.put(Array("k".utf8), Array("cached".utf8))
        load(use(.cacheFirst))
        let event = await f.log.next()
        #expect(event.state.status == .loaded && event.state.value == "cached")
        #expect(event.state.isFromCache && !event.state.isStale)
        await withCheckedContinuation { done in f.runtime.loop.execute { done.resume() } }
        #expect(f.loader.startedJobs == 0)
    }

    @Test func loadsTheCacheAnswersAloneCountAsLoadsFromTheCache() async throws {
        defer { f.close() }
        store.put(Array("k".utf8), Array("cached".utf8))
        load(use(.cacheFirst))
        #expect(await f.log.next().state.value == "cached")
        load(use(.cacheOnly, key: "absent"))
        #expect(await f.log.next().state.status == .error)
        let stats = f.runtime.statistics()
        #expect(stats.loads.started == 2 && stats.loads.fromCache == 2)
        #expect(stats.loads.succeeded == 0 && stats.loads.failed == 0 && stats.loads.latency.count == 0)
        #expect(stats.loaders.first { $0.id == f.loader.id }?.loads.fromCache == 2)
        let text = f.runtime.metricsText()
        #expect(text.contains("\nloadstate_loads_ended_total{loader=\"\(f.loader.id)\",outcome=\"from_cache\"} 2\n"))
        #expect(text.contains("\nloadstate_loads_started_total{loader=\"\(f.loader.id)\"} 2\n"))
    }

    @Test func refreshOfACacheFirstLoadAsksTheLoaderAndStoresTheResult() async throws {
        defer { f.close() }
        store.put(Array("k".utf8), Array("cached".utf8))
        load(use(.cacheFirst))
        #expect(await f.log.next().state.value == "cached")
        f.onLoop { $0.refresh() }
        let refreshing = await f.log.next()
        #expect(refreshing.state.isRefreshing && refreshing.state.value == "cached")
        f.submit(.succeed("new"), await f.loader.nextJob())
        let loaded = await f.log.next()
        #expect(loaded.state.value == "new" && !loaded.state.isFromCache && !loaded.state.isRefreshing)
        #expect(cached() == "new")
    }

    @Test func cacheFirstLoadsWhenTheEntryIsStale() async throws {
        defer { f.close() }
        store.put(Array("k".utf8), Array("old".utf8))
        load(use(.cacheFirst, freshMs: 0))
        #expect(await f.log.next().state.status == .loading)
        f.submit(.succeed("new"), await f.loader.nextJob())
        #expect(await f.log.next().state.value == "new")
        #expect(cached() == "new")
    }

    @Test func cacheThenLoadShowsTheEntryThenRevalidates() async throws {
        defer { f.close() }
        store.put(Array("k".utf8), Array("old".utf8))
        load(use(.cacheThenLoad, freshMs: 0))
        // One event: the cached value, flagged, while the revalidation runs.
        let shown = await f.log.next()
        #expect(shown.state.value == "old" && shown.state.isFromCache && shown.state.isStale)
        #expect(shown.state.isRefreshing && shown.stateChanged)
        f.submit(.succeed("new"), await f.loader.nextJob())
        let loaded = await f.log.next()
        #expect(loaded.state.value == "new" && !loaded.state.isFromCache && !loaded.state.isRefreshing)
        #expect(cached() == "new")
    }

    @Test func aFailedRevalidationKeepsTheCachedValueAndReportsTheError() async throws {
        defer { f.close() }
        store.put(Array("k".utf8), Array("old".utf8))
        load(use(.cacheThenLoad))
        _ = await f.log.next()
        f.submit(.fail(LoadError(domain: .host, code: 503, message: "down"), retry: .allowed),
                 await f.loader.nextJob())
        let event = await f.log.next()
        #expect(event.state.status == .loaded && event.state.value == "old" && event.state.isFromCache)
        #expect(event.state.error?.code == 503)
        #expect(cached() == "old")
    }

    @Test func cacheOnlyServesTheEntryOrFailsWithNotFound() async throws {
        defer { f.close() }
        load(use(.cacheOnly))
        let miss = await f.log.next()
        #expect(miss.state.status == .error && miss.state.error?.code == ResultCode.notFound.rawValue)
        store.put(Array("k".utf8), Array("there".utf8))
        load(use(.cacheOnly))
        #expect(await f.log.next().state.value == "there")
        await withCheckedContinuation { done in f.runtime.loop.execute { done.resume() } }
        #expect(f.loader.startedJobs == 0)
    }

    @Test func entriesPastTheMaximumAgeAreNotUsed() async throws {
        defer { f.close() }
        // A store whose clock is ten minutes behind: its entries look old.
        let old = MemoryCache(id: f.runtime.table.makeID(.cache), name: "old", now: { Clock.wallMs() - 600_000 })
        old.put(Array("k".utf8), Array("ancient".utf8))
        load(use(.cacheOnly, maxAgeMs: 60_000, in: old))
        #expect(await f.log.next().state.status == .error)
        load(use(.cacheOnly, freshMs: 1000, maxAgeMs: 3_600_000, in: old))
        let event = await f.log.next()
        #expect(event.state.value == "ancient" && event.state.isStale)
    }

    @Test func invalidationMarksEntriesStaleAndCellsShowingThemReload() async throws {
        defer { f.close() }
        load(use(.cacheFirst, key: "user/1"))
        _ = await f.log.next()
        f.submit(.succeed("v1"), await f.loader.nextJob())
        #expect(await f.log.next().state.value == "v1")
        try f.runtime.invalidate(store, prefix: Array("user/".utf8))
        let stale = await f.log.next()
        #expect(stale.state.value == "v1" && stale.state.isStale && stale.state.isRefreshing)
        f.submit(.succeed("v2"), await f.loader.nextJob())
        let fresh = await f.log.next()
        #expect(fresh.state.value == "v2" && !fresh.state.isStale)
        #expect(store.get(Array("user/1".utf8))?.isStale == false)
    }

    @Test func invalidatingAnotherPrefixLeavesTheCellAlone() async throws {
        defer { f.close() }
        load(use(.loadOnly, key: "user/1"))
        _ = await f.log.next()
        f.submit(.succeed("v1"), await f.loader.nextJob())
        _ = await f.log.next()
        try f.runtime.invalidate(store, prefix: Array("post/".utf8))
        await withCheckedContinuation { done in f.runtime.loop.execute { done.resume() } }
        await withCheckedContinuation { done in f.runtime.loop.execute { done.resume() } }
        #expect(f.cell.latestEvent.seq == 2)
        #expect(f.loader.startedJobs == 1)
    }
}

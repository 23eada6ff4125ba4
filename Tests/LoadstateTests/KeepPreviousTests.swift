import Testing
@_spi(LoadstateC) @testable import Loadstate

/// Keeping the previous value while another request loads, placeholders,
/// and the grace of memory cache entries no cell observes.
@Suite(.timeLimit(.minutes(1)))
struct KeepPreviousTests {
    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// A loader that waits for `gate` on request 2 and fails request 3.
    private func users(_ gate: Gate) -> LoadFunction<Int, String> {
        LoadFunction<Int, String> { id in
            if id == 2 { await gate.wait() }
            if id == 3 { throw Boom() }
            return "user \(id)"
        }
    }

    @Test func thePreviousValueStaysWithItsRequestUntilTheNewOne() async throws {
        let gate = Gate()
        let cell = LoadableCellWith(loader: users(gate))
        await cell.load(1)
        let r = StateRecorder(cell.states)
        let getting = Task { try await cell.get(2, keepingPrevious: true) }
        let shown = await r.take(2)
        #expect(shown == [.loaded("user 1"), .loaded("user 1")])
        #expect(cell.snapshot.isPrevious && cell.snapshot.isRefreshing && !cell.snapshot.isPlaceholder)
        #expect(cell.request == 1)
        #expect(cell.isPrevious)
        gate.open()
        // The awaited value is the new request's, never the one kept meanwhile.
        #expect(try await getting.value == "user 2")
        #expect(cell.state == .loaded("user 2") && cell.request == 2 && !cell.isPrevious)
    }

    @Test func aFailureShowsTheErrorAndACancelRestores() async {
        let gate = Gate()
        let cell = LoadableCellWith(loader: users(gate))
        await cell.load(1)
        await cell.load(3, keepingPrevious: true)
        #expect(cell.state == .error(Boom()))
        #expect(!cell.isPrevious && cell.request == 3)
        await cell.load(1)
        let r = StateRecorder(cell.states)
        startTask { cell.load(2, keepingPrevious: true) }
        _ = await r.take(2)
        #expect(cell.isPrevious)
        cell.cancel()
        #expect(await r.take(1).last == .loaded("user 1"))
        #expect(cell.state == .loaded("user 1") && cell.request == 1)
        #expect(!cell.isPrevious && !cell.isRefreshing)
    }

    @Test func thePlaceholderIsShownThenReplacedAndNeverCached() async {
        let gate = Gate()
        let store = MemoryCache(name: "users")
        let cell = LoadableCellWith(loader: users(gate),
                                    cache: LoadCache(store, codec: .utf8, policy: .cacheFirst) { "user/\($0)" })
        let r = StateRecorder(cell.states)
        startTask { cell.load(2, placeholder: "…") }
        #expect(await r.take(2) == [.absent, .loaded("…")])
        #expect(cell.isPlaceholder && cell.request == 2)
        #expect(store.get(bytes("user/2")) == nil)
        gate.open()
        #expect(await r.take(1) == [.absent, .loaded("…"), .loaded("user 2")])
        #expect(!cell.isPlaceholder)
        #expect(store.get(bytes("user/2"))?.value == bytes("user 2"))
    }

    @Test func anUnobservedEntryGoesAfterItsGraceAnObservedOneStays() {
        let clock = ManualClock()
        let cache = MemoryCache(id: 1, name: "grace", options: .init(unobservedMs: 100), now: clock.closure)
        cache.put(bytes("a"), bytes("1"))
        clock.advance(99)
        #expect(cache.get(bytes("a")) != nil)
        clock.advance(1)
        #expect(cache.get(bytes("a")) == nil)
        cache.observe(bytes("w"))
        cache.put(bytes("w"), bytes("2"))
        clock.advance(10_000)
        #expect(cache.get(bytes("w")) != nil)
        cache.release(bytes("w"))
        clock.advance(99)
        #expect(cache.get(bytes("w")) != nil)
        cache.put(bytes("s"), bytes("3"))
        clock.advance(100)
        // Dropped by the sweep of any operation, without a get of their own.
        let stats = cache.stats()
        #expect(stats.expirations == 3 && stats.entries == 0 && stats.bytes == 0)
    }

    @Test func aCellObservesItsEntryUntilItIsFreed() async throws {
        let clock = ManualClock()
        let store = MemoryCache(id: Runtime.shared.table.makeID(.cache), name: "observed",
                                options: .init(unobservedMs: 100), now: clock.closure)
        var cell: LoadableCellWith<Int, String>? = LoadableCellWith(
            loader: LoadFunction<Int, String> { "user \($0)" },
            cache: LoadCache(store, codec: .utf8, policy: .loadOnly) { "user/\($0)" })
        await cell?.load(5)
        clock.advance(10_000)
        #expect(store.get(bytes("user/5"))?.value == bytes("user 5"))
        cell = nil
        // The free runs on the loop: the grace starts then, in the cache's own clock.
        let deadline = ContinuousClock.now + .seconds(10)
        while store.get(bytes("user/5")) != nil {
            #expect(ContinuousClock.now < deadline)
            if ContinuousClock.now >= deadline { return }
            clock.advance(50)
            try await Task.sleep(for: .milliseconds(2))
        }
        #expect(store.stats().expirations == 1)
    }
}

extension KeepPreviousTests {
    @Test func aCellSharingTheJobDoesNotSeeThePlaceholderAndAFailureStoresNothing() async {
        let gate = Gate()
        let store = MemoryCache(name: "shared")
        let calls = Locked(0)
        let loader = LoadFunction<Int, String>(sharing: { "user/\($0)" }) { _ in
            calls.withLock { $0 += 1 }
            await gate.wait()
            throw Boom()
        }
        let cache = LoadCache<Int, String>(store, codec: .utf8, policy: .loadOnly) { "user/\($0)" }
        let first = LoadableCellWith(loader: loader, cache: cache)
        let second = LoadableCellWith(loader: loader, cache: cache)
        let r1 = StateRecorder(first.states)
        let r2 = StateRecorder(second.states)
        startTask { first.load(1, placeholder: "…") }
        #expect(await r1.take(2) == [.absent, .loaded("…")])
        startTask { second.load(1) }
        #expect(await r2.take(2) == [.absent, .loading])
        #expect(!second.isPlaceholder)
        gate.open()
        #expect(await r1.take(1).last == .error(Boom()))
        #expect(await r2.take(1).last == .error(Boom()))
        #expect(store.get(Array("user/1".utf8)) == nil)
        #expect(calls.withLock { $0 } == 1)
    }
}

extension KeepPreviousTests {
    /// A loader that yields "user 1" for request 1 the first time and
    /// nothing after that: the other jobs finish without a value.
    private func onlyOne() -> LoadFunction<Int, String> {
        let calls = Locked(0)
        return LoadFunction<Int, String>(yielding: { id, yield in
            let first = calls.withLock { calls in
                calls += 1
                return calls == 1
            }
            if id == 1 && first { yield("user 1") }
        })
    }

    @Test(arguments: [0, 1, 2])
    func aLoadEndingWithoutAValueNeverAnswersWithThePreviousValue(show: Int) async throws {
        let cell = LoadableCellWith(loader: onlyOne())
        try #expect(await cell.get(1) == "user 1")
        for request in [2, 1] {
            do {
                let value = try await cell.get(request, keepingPrevious: show == 1,
                                               placeholder: show == 2 ? "…" : nil)
                Issue.record("get(\(request)) returned \(value)")
            } catch let error as LoadWithoutValue<Int> {
                #expect(error.request == request)
            }
            // The state from before the load is back, with its own request.
            #expect(cell.state == .loaded("user 1") && cell.request == 1)
            #expect(!cell.isPrevious && !cell.isPlaceholder && !cell.isRefreshing)
        }
        // The load that returns at once shows the same state: nothing of request 2.
        await cell.load(2, keepingPrevious: show == 1, placeholder: show == 2 ? "…" : nil)
        #expect(cell.state == .loaded("user 1") && cell.request == 1)
    }

    @Test func aFirstLoadEndingWithoutAValueLeavesTheCellAbsent() async {
        let cell = LoadableCellWith(loader: onlyOne())
        await #expect(throws: LoadWithoutValue<Int>.self) { try await cell.get(2, placeholder: "…") }
        #expect(cell.state == .absent && !cell.isPlaceholder)
    }
}

import Testing
@_spi(LoadstateC) @testable import Loadstate

/// What a Swift cell applies to every load it starts (`hostSignals`,
/// `keepsPrevious`, `placeholder`), rolled-back values and writes that
/// confirm a value of their own, and the cache of `PagedCell`.
@Suite(.timeLimit(.minutes(1)))
struct CellSettingsTests {
    struct Refused: Error {}

    @Test func offlineFailAndRunChosenOnTheCell() async throws {
        let runtime = try Runtime()
        defer { _ = runtime.close() }
        let cell = LoadableCell<Int>(runtime: runtime)
        let calls = Locked(0)
        #expect(cell.hostSignals == HostSignalPolicy())
        runtime.setOnline(false)
        cell.hostSignals.offline = .fail
        await cell.load {
            calls.withLock { $0 += 1 }
            return 1
        }
        guard case .error(let error) = cell.state else {
            Issue.record("expected an error, got \(cell.state)")
            return
        }
        #expect((error as? LoadError)?.code == ResultCode.offline.rawValue)
        #expect(calls.withLock { $0 } == 0)
        cell.hostSignals.offline = .run
        await cell.load {
            calls.withLock { $0 += 1 }
            return 2
        }
        #expect(cell.state == .loaded(2) && calls.withLock { $0 } == 1)
    }

    @Test func aProcessCellFailsOfflineWhenItSaysSo() async throws {
        let runtime = try Runtime()
        defer { _ = runtime.close() }
        let process = ProcessCell<SingleProcess>(runtime: runtime)
        let ran = Locked(false)
        process.hostSignals = HostSignalPolicy(offline: .fail)
        runtime.setOnline(false)
        await process.run { ran.withLock { $0 = true } }
        guard case .failed(_, let error) = process.state else {
            Issue.record("expected a failure, got \(process.state)")
            return
        }
        #expect((error as? LoadError)?.code == ResultCode.offline.rawValue)
        #expect(!ran.withLock { $0 })
    }

    @Test func refreshOnForegroundChosenOnTheCell() async throws {
        let runtime = try Runtime()
        defer { _ = runtime.close() }
        let cell = LoadableCell<Int>(runtime: runtime)
        let calls = Locked(0)
        cell.hostSignals.refreshOnForeground = .every(.seconds(60))
        await cell.load {
            calls.withLock { c -> Int in
                c += 1
                return c
            }
        }
        #expect(cell.state == .loaded(1))
        let r = StateRecorder(cell.states)
        runtime.setForeground(false)
        runtime.setForeground(true)
        _ = await r.until { $0 == .loaded(2) }
        // Within the throttle: no second refresh.
        runtime.setForeground(false)
        runtime.setForeground(true)
        await elapse(30, on: runtime)
        #expect(calls.withLock { $0 } == 2)
    }

    @Test func aCellWithoutForegroundRefreshIsLeftAlone() async throws {
        let runtime = try Runtime()
        defer { _ = runtime.close() }
        let cell = LoadableCell<Int>(runtime: runtime)
        let calls = Locked(0)
        await cell.load {
            calls.withLock { $0 += 1 }
            return 1
        }
        runtime.setForeground(false)
        runtime.setForeground(true)
        await elapse(30, on: runtime)
        #expect(calls.withLock { $0 } == 1)
    }

    @Test func pollingGoesOnInTheBackgroundWhenTheCellSaysSo() async throws {
        let runtime = try Runtime()
        defer { _ = runtime.close() }
        let starts = Starts()
        let count = Locked(0)
        let cell = LoadableCell<Int>(runtime: runtime)
        cell.hostSignals.pollsInBackground = true
        runtime.setForeground(false)
        startTask {
            cell.load(refreshInterval: .milliseconds(5)) {
                let n = count.withLock { c -> Int in
                    c += 1
                    return c
                }
                starts.started("poll")
                return n
            }
        }
        // Three loads in the background: the first and two polls.
        for _ in 0..<3 { _ = await starts.next() }
        #expect(!runtime.isForeground)
        cell.cancel()
    }

    @Test func closureLoadsKeepPreviousValuesWhenTheCellDoes() async {
        let gate = Gate()
        let cell = LoadableCellWith<Int, String>()
        cell.keepsPrevious = true
        await cell.load(1) { "user \($0)" }
        let r = StateRecorder(cell.states)
        startTask {
            cell.load(2) { id in
                await gate.wait()
                return "user \(id)"
            }
        }
        #expect(await r.take(2) == [.loaded("user 1"), .loaded("user 1")])
        #expect(cell.isPrevious && cell.request == 1)
        gate.open()
        _ = await r.until { $0 == .loaded("user 2") }
        #expect(!cell.isPrevious && cell.request == 2)
    }

    @Test func closureLoadsShowTheCellsPlaceholder() async {
        let gate = Gate()
        let cell = LoadableCell<String>()
        cell.placeholder = "…"
        let r = StateRecorder(cell.states)
        startTask {
            cell.load(interrupts: [.seconds(60)]) {
                await gate.wait()
                return "done"
            } onInterrupt: { _ in }
        }
        #expect(await r.take(2) == [.absent, .loaded("…")])
        #expect(cell.isPlaceholder)
        gate.open()
        _ = await r.until { $0 == .loaded("done") }
        #expect(!cell.isPlaceholder)
    }

    /// A cell that loaded "v0" for request 1 through a memory cache.
    private func loadedCell() async -> (LoadableCellWith<Int, String>, LoadCache<Int, String>, MemoryCache) {
        let store = MemoryCache(name: "todos")
        let cache = LoadCache<Int, String>(store, codec: .utf8, policy: .loadOnly) { "todo/\($0)" }
        let cell = LoadableCellWith(loader: LoadFunction<Int, String> { _ in "v0" }, cache: cache)
        await cell.load(1)
        return (cell, cache, store)
    }

    @Test func aFailedWriteShowsTheValueBackFlaggedRolledBack() async throws {
        let (cell, cache, _) = await loadedCell()
        #expect(!cell.isRolledBack)
        let process = ProcessCell<SingleProcess>()
        try await process.mutate(.process, optimistic: [OptimisticValue(cache, 1, "done")]) {
            throw Refused()
        }
        await cell.settled()
        #expect(cell.state == .loaded("v0"))
        #expect(cell.isRolledBack && cell.snapshot.isRolledBack && !cell.snapshot.isOptimistic)
        await cell.load(1)
        #expect(!cell.isRolledBack)
    }

    @Test func aWriteThatReturnsItsValueConfirmsAndStoresIt() async throws {
        let (cell, cache, store) = await loadedCell()
        let process = ProcessCell<SingleProcess>()
        let seen = Locked("")
        try await process.mutate(.process, optimistic: [OptimisticValue(cache, 1, "done")], confirming: .utf8) {
            seen.withLock { $0 = cell.snapshot.isOptimistic ? "optimistic" : "confirmed" }
            return "done by the server"
        }
        #expect(seen.withLock { $0 } == "optimistic")
        #expect(process.state == .finished(.process))
        await cell.settled()
        #expect(cell.state == .loaded("done by the server"))
        #expect(!cell.snapshot.isOptimistic && !cell.isRolledBack)
        #expect(store.get(Array("todo/1".utf8)).map { String(decoding: $0.value, as: UTF8.self) }
                == "done by the server")
    }

    @Test func aSecondPagedCellGetsCachedPagesWithTheirCursors() async {
        let runtime = Runtime.shared
        let store = MemoryCache(name: "feed")
        let cache = LoadCache<[UInt8], [UInt8]>(store, codec: .bytes, policy: .cacheFirst,
                                                freshFor: .seconds(600)) { "feed/" + String(decoding: $0, as: UTF8.self) }
        let desk = PageDesk()
        let first = PagedCell(runtime: runtime, loader: desk.loader(runtime), cache: cache)
        var events = first.events.makeAsyncIterator()
        first.load(bytes("q"), priority: 3)
        var ask = await desk.next()
        ask.answer.resume(returning: Page(bytes("p0"), next: bytes("c1")))
        #expect(await waitEvent(&events, loaded(0, "p0")) != nil)
        #expect(first.loadNext())
        ask = await desk.next()
        #expect(ask.query.cursor == bytes("c1"))
        ask.answer.resume(returning: Page(bytes("p1"), next: bytes("c2")))
        #expect(await waitEvent(&events, loaded(1, "p1")) != nil)
        #expect(desk.count == 2)

        let second = PagedCell(runtime: runtime, loader: desk.loader(runtime), cache: cache)
        var secondEvents = second.events.makeAsyncIterator()
        second.load(bytes("q"))
        #expect(await waitEvent(&secondEvents, loaded(0, "p0")) != nil)
        #expect(second.hasNext)
        #expect(second.loadNext())
        #expect(await waitEvent(&secondEvents, loaded(1, "p1")) != nil)
        #expect(second.values == [bytes("p0"), bytes("p1")] && second.hasNext)
        #expect(desk.count == 2)
        // The page after the cached ones is asked for with the cached cursor.
        #expect(second.loadNext())
        ask = await desk.next()
        #expect(ask.query.cursor == bytes("c2"))
        ask.answer.resume(returning: Page(bytes("p2")))
        #expect(await waitEvent(&secondEvents, loaded(2, "p2")) != nil)
        #expect(!second.hasNext)
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Testing
@_spi(LoadstateC) @testable import Loadstate

/// Cells that carry their request: loaders shared by cells, refresh,
/// caches with codecs, sharing, invalidation.
@Suite(.timeLimit(.minutes(1)))
struct RequestCellTests {
    /// A loader that names the request and counts its calls.
    final class Counting: @unchecked Sendable {
        let calls = Locked(0)
        let gate: Gate?
        let failFirst: Bool

        init(gate: Gate? = nil, failFirst: Bool = false) {
            self.gate = gate
            self.failFirst = failFirst
        }

        func function(runtime: Runtime = .shared, sharing: Bool = false) -> LoadFunction<Int, String> {
            var key: (@Sendable (Int) -> String)?
            if sharing { key = { "user/\($0)" } }
            return LoadFunction<Int, String>(runtime: runtime, sharing: key) { id in
                try await self.run(id)
            }
        }

        private func run(_ id: Int) async throws -> String {
            let n = calls.withLock { c -> Int in
                c += 1
                return c
            }
            if let gate { await gate.wait() }
            if failFirst && n == 1 { throw Boom() }
            return "user \(id) #\(n)"
        }
    }

    private func memoryCache() -> MemoryCache {
        MemoryCache(name: "users")
    }

    @Test func theRequestTravelsWithEveryState() async {
        let gate = Gate()
        let users = Counting(gate: gate, failFirst: false)
        let cell = LoadableCellWith(loader: users.function())
        let r = StateRecorder(cell.states)
        startTask { cell.load(1) }
        await r.take(2)
        #expect(cell.snapshot.state == .loading)
        #expect(cell.request == 1)
        gate.open()
        await r.take(1)
        #expect(cell.snapshot.state == .loaded("user 1 #1"))
        #expect(cell.request == 1)
    }

    @Test func anErrorKeepsItsRequest() async {
        let cell = LoadableCellWith<Int, String>(loader: LoadFunction { _ in throw Boom() })
        await cell.load(9)
        #expect(cell.state == .error(Boom()))
        #expect(cell.request == 9)
    }

    @Test func refreshReloadsTheLastRequestOverTheOldValue() async {
        let users = Counting()
        let cell = LoadableCellWith(loader: users.function())
        await cell.load(7)
        let r = StateRecorder(cell.states)
        #expect(cell.refresh())
        let history = await r.take(2)
        #expect(history == [.loaded("user 7 #1"), .loaded("user 7 #2")])
        #expect(cell.request == 7)
    }

    @Test func refreshWorksAfterAFailure() async {
        let users = Counting(failFirst: true)
        let cell = LoadableCellWith(loader: users.function())
        await cell.load(3)
        #expect(cell.state == .error(Boom()))
        let r = StateRecorder(cell.states)
        #expect(cell.refresh())
        await r.take(2)
        #expect(cell.state == .loaded("user 3 #2"))
    }

    @Test func aClosureLoadCarriesItsRequestAndRefreshRunsItAgain() async {
        let cell = LoadableCellWith<Int, Int>()
        let runs = Locked(0)
        await cell.load(5) { request in
            runs.withLock { $0 += 1 }
            return request * 2
        }
        #expect(cell.snapshot.state == .loaded(10))
        #expect(cell.request == 5)
        let r = StateRecorder(cell.states)
        cell.refresh()
        await r.take(2)
        #expect(runs.withLock { $0 } == 2)
    }

    @Test func aCellWithoutALoaderShowsAnError() async {
        let cell = LoadableCellWith<Int, Int>()
        await cell.load(1)
        #expect((cell.state.error as? LoadError)?.code == ResultCode.wrongState.rawValue)
    }

    @Test func cacheThenLoadShowsTheCachedValueThenRevalidates() async {
        let users = Counting()
        let function = users.function()
        let cache = LoadCache<Int, String>(memoryCache(), codec: .utf8) { "user/\($0)" }
        let first = LoadableCellWith(loader: function, cache: cache)
        await first.load(1)
        #expect(first.state == .loaded("user 1 #1"))

        let second = LoadableCellWith(loader: function, cache: cache)
        let r = StateRecorder(second.states)
        startTask { second.load(1) }
        let history = await r.take(3)
        #expect(history == [.absent, .loaded("user 1 #1"), .loaded("user 1 #2")])
        #expect(users.calls.withLock { $0 } == 2)
    }

    @Test func aFreshEntryIsShownWithoutALoad() async {
        let users = Counting()
        let function = users.function()
        let cache = LoadCache<Int, String>(memoryCache(), codec: .utf8, policy: .cacheFirst,
                                           freshFor: .seconds(60)) { "user/\($0)" }
        await LoadableCellWith(loader: function, cache: cache).load(1)
        let second = LoadableCellWith(loader: function, cache: cache)
        await second.load(1)
        #expect(second.state == .loaded("user 1 #1"))
        #expect(second.snapshot.isFromCache)
        #expect(!second.snapshot.isStale)
        #expect(users.calls.withLock { $0 } == 1)
    }

    @Test func anEntryPastItsMaximumAgeIsNotUsed() async {
        let users = Counting()
        let function = users.function()
        let store = memoryCache()
        let writer = LoadCache<Int, String>(store, codec: .utf8, policy: .loadOnly) { "user/\($0)" }
        await LoadableCellWith(loader: function, cache: writer).load(1)
        let stored = store.get(Array("user/1".utf8))?.storedAtMs ?? 0
        // The clock moves past the maximum age (a millisecond).
        while Clock.wallMs() < stored + 2 { await Task.yield() }
        let reader = LoadCache<Int, String>(store, codec: .utf8, policy: .cacheOnly,
                                            maxAge: .milliseconds(1)) { "user/\($0)" }
        let late = LoadableCellWith(loader: function, cache: reader)
        await late.load(1)
        #expect(late.state.isError)
        let lenient = LoadCache<Int, String>(store, codec: .utf8, policy: .cacheOnly) { "user/\($0)" }
        let any = LoadableCellWith(loader: function, cache: lenient)
        await any.load(1)
        #expect(any.state == .loaded("user 1 #1"))
        #expect(users.calls.withLock { $0 } == 1)
    }

    @Test func cellsWithOneLoaderShareAJob() async {
        let gate = Gate()
        let users = Counting(gate: gate)
        let function = users.function(sharing: true)
        let a = LoadableCellWith(loader: function)
        let b = LoadableCellWith(loader: function)
        let ra = StateRecorder(a.states)
        let rb = StateRecorder(b.states)
        startTask {
            a.load(1)
            b.load(1)
        }
        await ra.take(2)
        await rb.take(2)
        gate.open()
        await ra.take(1)
        await rb.take(1)
        #expect(a.state == .loaded("user 1 #1"))
        #expect(b.state == .loaded("user 1 #1"))
        #expect(users.calls.withLock { $0 } == 1)
    }

    @Test func invalidationReloadsTheCellsShowingAnEntry() async throws {
        let users = Counting()
        let store = memoryCache()
        let cache = LoadCache<Int, String>(store, codec: .utf8) { "user/\($0)" }
        let cell = LoadableCellWith(loader: users.function(), cache: cache)
        await cell.load(4)
        let r = StateRecorder(cell.states)
        try Runtime.shared.invalidate(store, keysStartingWith: "user/")
        let history = await r.take(3)
        #expect(history == [.loaded("user 4 #1"), .loaded("user 4 #1"), .loaded("user 4 #2")])
    }

    @Test func aPersistentCacheKeepsValuesThroughTheirCodec() async throws {
        var template = Array("/tmp/loadstate-swift-XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        close(fd)
        let path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        unlink(path)
        defer { unlink(path); unlink(path + "-wal"); unlink(path + "-shm") }
        let store = try PersistentCache(path: path)
        defer { store.close() }
        let squares = LoadFunction<Int, Int> { $0 * $0 }
        let cache = LoadCache<Int, Int>(store, codec: .decimal) { "square/\($0)" }
        await LoadableCellWith(loader: squares, cache: cache).load(12)
        let reader = LoadableCellWith(loader: squares, cache: cache.with(policy: .cacheOnly))
        await reader.load(12)
        #expect(reader.state == .loaded(144))
        #expect(reader.snapshot.isFromCache)
        #expect(try store.get(Array("square/12".utf8))?.value == Array("144".utf8))
    }
}

extension LoadCache {
    func with(policy: CachePolicy) -> LoadCache {
        var copy = self
        copy.policy = policy
        return copy
    }
}

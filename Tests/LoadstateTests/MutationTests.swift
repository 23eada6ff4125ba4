#if canImport(Glibc)
import Glibc
#endif
import Testing
@_spi(LoadstateC) @testable import Loadstate

/// Writes through the Swift API: `ProcessCell.mutate` shows typed values
/// in the cells of a `LoadCache`, rolls them back on failure or cancel,
/// and confirms them on success.
@Suite(.timeLimit(.minutes(1)))
struct MutationTests {
    struct Refused: Error {}

    /// A cell that loaded "v0" for request 1 through a memory cache.
    private func loadedCell() async -> (LoadableCellWith<Int, String>, LoadCache<Int, String>, MemoryCache) {
        let store = MemoryCache(name: "todos")
        let cache = LoadCache<Int, String>(store, codec: .utf8, policy: .loadOnly) { "todo/\($0)" }
        let cell = LoadableCellWith(loader: LoadFunction<Int, String> { _ in "v0" }, cache: cache)
        await cell.load(1)
        #expect(cell.state == .loaded("v0"))
        return (cell, cache, store)
    }

    @Test func theValueIsShownBeforeTheBodyRunsAndAFailureRollsBack() async throws {
        let (cell, cache, store) = await loadedCell()
        let before = store.get(Array("todo/1".utf8))
        let seen = Locked<[String]>([])
        let process = ProcessCell<SingleProcess>()
        try await process.mutate(.process, optimistic: [OptimisticValue(cache, 1, "done")]) {
            let entry = store.get(Array("todo/1".utf8)).map { String(decoding: $0.value, as: UTF8.self) }
            seen.withLock { $0 = [entry ?? "(none)", cell.snapshot.isOptimistic ? "optimistic" : "confirmed"] }
            throw Refused()
        }
        #expect(seen.withLock { $0 } == ["done", "optimistic"])
        #expect(process.state.hasFailed)
        await cell.settled()
        #expect(cell.state == .loaded("v0"))
        #expect(!cell.snapshot.isOptimistic)
        #expect(store.get(Array("todo/1".utf8)) == before)
    }

    @Test func aSuccessKeepsTheValueConfirmedAndInvalidatesPrefixes() async throws {
        let (cell, cache, store) = await loadedCell()
        let other = LoadCache<Int, String>(store, codec: .utf8, policy: .loadOnly) { "list/\($0)" }
        let calls = Locked(0)
        let list = LoadableCellWith(loader: LoadFunction<Int, String> { _ in
            calls.withLock { $0 += 1 }
            return "list"
        }, cache: other)
        await list.load(1)
        let process = ProcessCell<SingleProcess>()
        try await process.mutate(.process, optimistic: [OptimisticValue(cache, 1, "done")],
                                 invalidating: [CachePrefix(store, keysStartingWith: "list/")]) {}
        #expect(process.state == .finished(.process))
        await cell.settled()
        #expect(cell.state == .loaded("done"))
        #expect(!cell.snapshot.isOptimistic)
        #expect(store.get(Array("todo/1".utf8)).map { String(decoding: $0.value, as: UTF8.self) } == "done")
        let r = StateRecorder(list.states)
        _ = await r.until { _ in calls.withLock { $0 } == 2 && !list.snapshot.isRefreshing }
        #expect(calls.withLock { $0 } == 2)
    }

    @Test func aCancelRollsBackAndAPersistentCacheKeepsItsConfirmedValue() async throws {
        let path = "/tmp/lds-swift-mutate-\(UInt64.random(in: 0...UInt64.max)).db"
        defer { unlink(path) }
        let disk = try PersistentCache(path: path)
        defer { disk.close() }
        let cache = LoadCache<Int, String>(disk, codec: .utf8, policy: .loadOnly) { "todo/\($0)" }
        let cell = LoadableCellWith(loader: LoadFunction<Int, String> { _ in "v0" }, cache: cache)
        await cell.load(1)
        let gate = Gate()
        let process = ProcessCell<SingleProcess>()
        let r = StateRecorder(cell.states)
        try startGatedWrite(process, [OptimisticValue(cache, 1, "done")], gate)
        _ = await r.until { $0 == .loaded("done") }
        #expect(cell.snapshot.isOptimistic)
        #expect(try disk.get(Array("todo/1".utf8)).map { String(decoding: $0.value, as: UTF8.self) } == "v0")
        process.cancel()
        _ = await r.until { $0 == .loaded("v0") }
        #expect(!cell.snapshot.isOptimistic)
        gate.open()
        await process.settled()
        #expect(try disk.get(Array("todo/1".utf8)).map { String(decoding: $0.value, as: UTF8.self) } == "v0")
    }

    /// Starts a write that fails once `gate` opens (the non-awaiting `mutate`).
    private func startFailingWrite(_ process: ProcessCell<SingleProcess>, _ values: [OptimisticValue],
                                   _ gate: Gate) throws(CacheError) {
        try process.mutate(.process, optimistic: values) {
            await gate.wait()
            throw Refused()
        }
    }

    @Test(arguments: [false, true])
    func twoFailingWritesLeaveTheConfirmedValueInEitherOrder(newerFirst: Bool) async throws {
        let (cell, cache, store) = await loadedCell()
        let r = StateRecorder(cell.states)
        let (older, newer) = (ProcessCell<SingleProcess>(), ProcessCell<SingleProcess>())
        let (olderGate, newerGate) = (Gate(), Gate())
        try startFailingWrite(older, [OptimisticValue(cache, 1, "one")], olderGate)
        _ = await r.until { $0 == .loaded("one") }
        try startFailingWrite(newer, [OptimisticValue(cache, 1, "two")], newerGate)
        _ = await r.until { $0 == .loaded("two") }
        for (process, gate) in newerFirst ? [(newer, newerGate), (older, olderGate)]
            : [(older, olderGate), (newer, newerGate)] {
            gate.open()
            await process.waitForRun()
            #expect(process.state.hasFailed)
        }
        await cell.settled()
        #expect(cell.state == .loaded("v0"))
        #expect(!cell.snapshot.isOptimistic)
        #expect(store.get(Array("todo/1".utf8)).map { String(decoding: $0.value, as: UTF8.self) } == "v0")
    }

    /// Starts a write that runs until `gate` opens (the non-awaiting `mutate`).
    private func startGatedWrite(_ process: ProcessCell<SingleProcess>, _ values: [OptimisticValue],
                                 _ gate: Gate) throws(CacheError) {
        try process.mutate(.process, optimistic: values) { await gate.wait() }
    }

    @Test func tooManyValuesThrowAndShowNothing() async {
        let (cell, cache, _) = await loadedCell()
        let values = (0...mutationKeysMax).map { OptimisticValue(cache, $0, "x") }
        let process = ProcessCell<SingleProcess>()
        #expect(throws: CacheError.self) {
            try process.mutate(.process, optimistic: values) {}
        }
        await cell.settled()
        #expect(cell.state == .loaded("v0"))
        #expect(process.state == .idle)
    }
}

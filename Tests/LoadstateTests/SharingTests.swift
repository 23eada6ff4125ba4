import Testing
#if canImport(Glibc)
import Glibc
#endif
@_spi(LoadstateC) @testable import Loadstate

/// Loads with the same loader and share key wait for one job.
@Suite(.timeLimit(.minutes(1)))
struct SharingTests {
    /// `n` cells on one runtime with one manual loader.
    struct Crowd {
        let runtime: Runtime
        let loader: ManualLoader
        let cells: [Cell<String, String>]
        let logs: [EventLog<String, String>]

        init(_ n: Int) throws {
            runtime = try Runtime()
            loader = ManualLoader(runtime: runtime)
            var cells: [Cell<String, String>] = []
            var logs: [EventLog<String, String>] = []
            for _ in 0..<n {
                let log = EventLog<String, String>()
                let cell = Cell<String, String>(id: runtime.table.makeID(.loadable), flavor: .loadable,
                                                runtime: runtime, observer: log.observer)
                runtime.table.insert(cell)
                cells.append(cell)
                logs.append(log)
            }
            self.cells = cells
            self.logs = logs
        }

        func load(_ i: Int, key: String) {
            let spec = LoadSpec(loader: loader as Loader<String, String>, request: "r\(i)",
                                options: LoadOptions(shareKey: Array(key.utf8)))
            let cell = cells[i]
            runtime.loop.execute { cell.load(spec) }
        }

        func onLoop(_ i: Int, _ body: @escaping (Cell<String, String>) -> Void) {
            let cell = cells[i]
            runtime.loop.execute { body(cell) }
        }

        func drained() async {
            await withCheckedContinuation { done in runtime.loop.execute { done.resume() } }
        }
    }

    @Test func twoLoadsWithOneKeyShareOneJobAndSeeTheSameEvents() async throws {
        let c = try Crowd(2)
        defer { _ = c.runtime.close() }
        c.load(0, key: "k")
        c.load(1, key: "k")
        let job = await c.loader.nextJob()
        c.runtime.submit(.yield("half"), job: job, of: Job<String, String>.self)
        c.runtime.submit(.succeed("all"), job: job, of: Job<String, String>.self)
        for log in c.logs {
            let events = await log.next(3)
            #expect(events.map(\.state.status) == [.loading, .loaded, .loaded])
            #expect(events.map(\.state.value) == [nil, "half", "all"])
        }
        await c.drained()
        #expect(c.loader.startedJobs == 1)
    }

    @Test func differentKeysDoNotShare() async throws {
        let c = try Crowd(2)
        defer { _ = c.runtime.close() }
        c.load(0, key: "a")
        c.load(1, key: "b")
        let first = await c.loader.nextJob()
        let second = await c.loader.nextJob()
        #expect(first != second)
    }

    @Test func tenThousandCellsCallTheLoaderOnceAndOnlyTheLastCancelCancels() async throws {
        let n = 10_000
        let c = try Crowd(n)
        defer { _ = c.runtime.close() }
        for i in 0..<n { c.load(i, key: "one") }
        let job = await c.loader.nextJob()
        let hooked = Locked(0)
        _ = c.runtime.onCancel(job: job, of: Job<String, String>.self) { hooked.withLock { $0 += 1 } }
        for i in 0..<(n - 1) { c.onLoop(i) { $0.cancel() } }
        await c.drained()
        #expect(c.loader.startedJobs == 1)
        #expect(hooked.withLock { $0 } == 0)
        #expect(c.runtime.isJobCancelled(job, of: Job<String, String>.self) == .success(false))
        c.onLoop(n - 1) { $0.cancel() }
        await c.drained()
        #expect(hooked.withLock { $0 } == 1)
        #expect(c.runtime.isJobCancelled(job, of: Job<String, String>.self) == .success(true))
        // Every cell saw loading, then its own cancel.
        for log in [c.logs[0], c.logs[n - 1]] {
            let events = await log.next(2)
            #expect(events[1].isCancelled && events[1].state.status == .absent)
        }
    }

    @Test func aCellThatLeavesDoesNotStopTheOthers() async throws {
        let c = try Crowd(2)
        defer { _ = c.runtime.close() }
        c.load(0, key: "k")
        c.load(1, key: "k")
        let job = await c.loader.nextJob()
        c.onLoop(0) { $0.setLoaded("manual") }
        await c.drained()
        #expect(c.runtime.submit(.succeed("shared"), job: job, of: Job<String, String>.self) == .ok)
        let first = await c.logs[0].next(2)
        let second = await c.logs[1].next(2)
        #expect(first[1].state.value == "manual")
        #expect(second[1].state.value == "shared")
    }

    @Test func aLoadAfterTheJobEndedStartsANewOne() async throws {
        let c = try Crowd(2)
        defer { _ = c.runtime.close() }
        c.load(0, key: "k")
        let job = await c.loader.nextJob()
        c.runtime.submit(.succeed("v"), job: job, of: Job<String, String>.self)
        _ = await c.logs[0].next(2)
        c.load(1, key: "k")
        let next = await c.loader.nextJob()
        #expect(next != job)
    }
}

/// Leaving a shared job from another thread, before the leave runs on the loop.
@Suite(.timeLimit(.minutes(1)))
struct SharedLeaveTests {
    @Test func aCellJoiningAJobWhoseCellsAllLeftStartsItsOwn() async throws {
        let c = try SharingTests.Crowd(2)
        defer { _ = c.runtime.close() }
        c.load(0, key: "k")
        let first = await c.loader.nextJob()
        _ = await c.logs[0].next()
        // Cell 1's load is queued; then cell 0's cancel is called (its job
        // now takes nothing more) before the loop runs either.
        c.cells[1].requestLeave()
        c.load(1, key: "k")
        c.cells[0].requestLeave()
        c.onLoop(0) { $0.cancel() }
        #expect(c.runtime.submit(.succeed("late"), job: first, of: Job<String, String>.self) == .cancelled)
        let second = await c.loader.nextJob()
        #expect(second != first)
        c.runtime.submit(.succeed("own"), job: second, of: Job<String, String>.self)
        let events = await c.logs[1].next(2)
        #expect(events[1].state.value == "own")
    }

    @Test func aCellThatAskedToLeaveGetsNothingAcceptedAfter() async throws {
        let c = try SharingTests.Crowd(2)
        defer { _ = c.runtime.close() }
        c.load(0, key: "k")
        c.load(1, key: "k")
        let job = await c.loader.nextJob()
        _ = await c.logs[0].next()
        _ = await c.logs[1].next()
        await c.drained()
        c.cells[0].requestLeave()
        // Cell 1 still waits, so the job goes on and takes the result...
        #expect(c.runtime.submit(.succeed("v"), job: job, of: Job<String, String>.self) == .ok)
        c.onLoop(0) { $0.cancel() }
        // ...which cell 1 shows, while cell 0 shows its cancel.
        #expect(await c.logs[1].next().state.value == "v")
        let cancelled = await c.logs[0].next()
        #expect(cancelled.isCancelled && cancelled.state.status == .absent)
    }
}

@Suite(.timeLimit(.minutes(1)))
struct SharedResultTests {
    @Test func aCellJoiningAJobWhoseResultIsAcceptedButNotAppliedGetsIt() async throws {
        let c = try SharingTests.Crowd(2)
        defer { _ = c.runtime.close() }
        let hold = Gate()
        let held = Gate()
        // The loop is held while the second load is queued and then the
        // result accepted: the load runs after the result was accepted, and
        // before it is applied.
        c.load(0, key: "k")
        let job = await c.loader.nextJob()
        c.runtime.loop.execute {
            held.open()
            while !hold.isOpen { sched_yield() }
        }
        await held.wait()
        c.load(1, key: "k")
        #expect(c.runtime.submit(.succeed("v"), job: job, of: Job<String, String>.self) == .ok)
        hold.open()
        for log in c.logs {
            let events = await log.next(2)
            #expect(events[1].state.value == "v")
        }
        await c.drained()
        #expect(c.loader.startedJobs == 1)
    }
}

import Testing
@_spi(LoadstateC) @testable import Loadstate

/// One test per row of the semantics table, on the core state machine.
@Suite(.timeLimit(.minutes(1)))
struct CoreSemanticsTests {
    @Test func loadEmitsLoadingWithRequestThenLoaded() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        f.load("q")
        let loading = await f.log.next()
        #expect(loading.seq == 1)
        #expect(loading.state.status == .loading)
        #expect(loading.state.request == "q")
        #expect(loading.state.attempt == 1)
        let job = await f.loader.nextJob()
        #expect(f.submit(.succeed("v"), job) == .ok)
        let loaded = await f.log.next()
        #expect(loaded.seq == 2)
        #expect(loaded.state.status == .loaded)
        #expect(loaded.state.value == "v")
        #expect(loaded.state.request == "q")
        #expect(loaded.state.updatedAt > 0)
    }

    @Test func loadFailureShowsErrorWithDomainCodeMessage() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        f.load("q")
        _ = await f.log.next()
        let job = await f.loader.nextJob()
        f.submit(.fail(LoadError(domain: .host, code: 7, message: "nope"), retry: .allowed), job)
        let event = await f.log.next()
        #expect(event.state.status == .error)
        #expect(event.state.error == LoadError(domain: .host, code: 7, message: "nope"))
        #expect(event.state.value == nil)
    }

    @Test func silentLoadKeepsStateFlaggedRefreshingThenReplacesValue() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        f.onLoop { $0.setLoaded("old") }
        _ = await f.log.next()
        f.load("q", silent: true)
        let refreshing = await f.log.next()
        #expect(refreshing.state.status == .loaded)
        #expect(refreshing.state.value == "old")
        #expect(refreshing.state.isRefreshing)
        #expect(!refreshing.stateChanged)
        let job = await f.loader.nextJob()
        f.submit(.succeed("new"), job)
        let loaded = await f.log.next()
        #expect(loaded.state.value == "new")
        #expect(!loaded.state.isRefreshing)
    }

    @Test func refreshReloadsTheLastRequestSilently() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        f.load("q")
        _ = await f.log.next()
        f.submit(.succeed("1"), await f.loader.nextJob())
        _ = await f.log.next()
        f.refresh()
        let refreshing = await f.log.next()
        #expect(refreshing.state.value == "1" && refreshing.state.isRefreshing)
        let job = await f.loader.nextJob()
        f.submit(.succeed("2"), job)
        let loaded = await f.log.next()
        #expect(loaded.state.value == "2")
        #expect(loaded.state.request == "q")
    }

    @Test func refreshStillWorksAfterAFailure() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        f.load("q")
        _ = await f.log.next()
        f.submit(.fail(LoadError(domain: .host, code: 1), retry: .allowed), await f.loader.nextJob())
        #expect(await f.log.next().state.status == .error)
        f.refresh()
        _ = await f.log.next()
        f.submit(.succeed("ok"), await f.loader.nextJob())
        #expect(await f.log.next().state.value == "ok")
    }

    @Test func yieldShowsPartialValuesAndFinishKeepsTheLast() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        f.load("q")
        _ = await f.log.next()
        let job = await f.loader.nextJob()
        f.submit(.yield("a"), job)
        f.submit(.yield("b"), job)
        f.submit(.finish, job)
        let events = await f.log.next(3)
        #expect(events.map(\.state.value) == ["a", "b", "b"])
        #expect(events.map(\.state.isPartial) == [true, true, false])
        #expect(events.allSatisfy { $0.state.status == .loaded })
    }

    @Test func succeedAfterYieldsEndsWithTheFinalValue() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        f.load("q")
        _ = await f.log.next()
        let job = await f.loader.nextJob()
        f.submit(.yield("a"), job)
        f.submit(.succeed("z"), job)
        let events = await f.log.next(2)
        #expect(events[1].state.value == "z")
        #expect(!events[1].state.isPartial)
    }

    @Test func finishWithoutYieldRestoresThePreviousState() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        f.onLoop { $0.setLoaded("old") }
        _ = await f.log.next()
        f.load("q")
        _ = await f.log.next()
        f.submit(.finish, await f.loader.nextJob())
        let event = await f.log.next()
        #expect(event.state.value == "old")
        #expect(!event.isCancelled)
    }

    @Test func cancelFromOutsideRestoresThePreviousStateFlaggedCancelled() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        f.onLoop { $0.setLoaded("old") }
        _ = await f.log.next()
        f.load("q")
        _ = await f.log.next()
        let job = await f.loader.nextJob()
        let hooked = Locked(0)
        #expect(f.runtime.onCancel(job: job, of: Job<String, String>.self) { hooked.withLock { $0 += 1 } } == .ok)
        f.onLoop { $0.cancel() }
        let event = await f.log.next()
        #expect(event.state.status == .loaded)
        #expect(event.state.value == "old")
        #expect(event.isCancelled)
        #expect(hooked.withLock { $0 } == 1)
        #expect(f.submit(.succeed("late"), job) == .cancelled)
    }

    @Test func cancelFromInsideRestoresThePreviousState() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        f.load("q")
        _ = await f.log.next()
        f.submit(.cancelSelf, await f.loader.nextJob())
        let event = await f.log.next()
        #expect(event.state.status == .absent)
        #expect(event.isCancelled)
    }

    @Test func cancelAfterSupersedingLoadsRestoresTheStateBeforeTheFirst() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        f.load("a")
        f.load("b")
        f.onLoop { $0.cancel() }
        let events = await f.log.next(3)
        #expect(events.map(\.state.status) == [.loading, .loading, .absent])
        #expect(events[2].isCancelled)
    }

    @Test func resetFromOutsideMakesTheCellAbsent() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        f.onLoop { $0.setLoaded("old") }
        _ = await f.log.next()
        f.load("q")
        _ = await f.log.next()
        let job = await f.loader.nextJob()
        f.onLoop { $0.reset() }
        let event = await f.log.next()
        #expect(event.state.status == .absent)
        #expect(event.state.value == nil)
        #expect(f.submit(.succeed("late"), job) == .cancelled)
    }

    @Test func resetFromInsideMakesTheCellAbsent() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        f.onLoop { $0.setLoaded("old") }
        _ = await f.log.next()
        f.load("q")
        _ = await f.log.next()
        f.submit(.resetSelf, await f.loader.nextJob())
        #expect(await f.log.next().state.status == .absent)
    }

    @Test func setLoadedAndSetErrorCancelTheRunningJob() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        f.load("q")
        _ = await f.log.next()
        let job = await f.loader.nextJob()
        f.onLoop { $0.setLoaded("manual") }
        #expect(await f.log.next().state.value == "manual")
        #expect(f.submit(.succeed("late"), job) == .cancelled)
        f.load("r")
        _ = await f.log.next()
        let second = await f.loader.nextJob()
        f.onLoop { $0.setError(LoadError(domain: .host, code: 3, message: "manual")) }
        #expect(await f.log.next().state.error?.code == 3)
        #expect(f.submit(.yield("late"), second) == .cancelled)
    }

    @Test func supersededJobCompletingLateChangesNothing() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        f.load("a")
        let first = await f.loader.nextJob()
        f.load("b")
        let second = await f.loader.nextJob()
        #expect(f.submit(.succeed("stale"), first) == .cancelled)
        f.submit(.succeed("fresh"), second)
        let events = await f.log.next(3)
        #expect(events.map(\.state.status) == [.loading, .loading, .loaded])
        #expect(events[2].state.value == "fresh")
    }

    @Test func operationsAcceptedBeforeACancelTakeEffectFirst() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        f.load("q")
        _ = await f.log.next()
        let job = await f.loader.nextJob()
        // The completion is accepted before the loop sees the cancel, so it wins.
        #expect(f.submit(.succeed("v"), job) == .ok)
        f.onLoop { $0.cancel() }
        f.onLoop { $0.setLoaded("after") }
        let events = await f.log.next(2)
        #expect(events[0].state.value == "v")
        #expect(!events[0].isCancelled)
        #expect(events[1].state.value == "after")
    }

    @Test func aJobCompletedAfterTheCancelWasCalledIsRefused() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        f.load("q")
        _ = await f.log.next()
        let job = await f.loader.nextJob()
        // What a cancel from another thread does at once, before it is queued.
        f.cell.requestLeave()
        #expect(f.submit(.succeed("late"), job) == .cancelled)
        #expect(f.runtime.isJobCancelled(job, of: Job<String, String>.self) == .success(true))
        f.onLoop { $0.cancel() }
        let event = await f.log.next()
        #expect(event.isCancelled && event.state.status == .absent)
    }

    @Test func aLoadSupersededBeforeItRunsStartsNoJob() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        // Two loads asked for on another thread before the loop runs either:
        // the first one's job never starts, so it can never complete.
        let first = f.cell.requestLeave()
        let second = f.cell.requestLeave()
        let loader = f.loader as Loader<String, String>
        f.onLoop { $0.load(LoadSpec(loader: loader, request: "one"), ticket: first) }
        f.onLoop { $0.load(LoadSpec(loader: loader, request: "two"), ticket: second) }
        let job = await f.loader.nextJob()
        let events = await f.log.next(2)
        #expect(events.map(\.state.request) == ["one", "two"])
        #expect(f.loader.startedJobs == 1)
        f.submit(.succeed("v"), job)
        let loaded = await f.log.next()
        #expect(loaded.state.request == "two" && loaded.state.value == "v")
    }

    @Test func freeingACellWithARunningJobCancelsItWithoutEvents() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        f.load("q")
        _ = await f.log.next()
        let job = await f.loader.nextJob()
        let hooked = Locked(false)
        _ = f.runtime.onCancel(job: job, of: Job<String, String>.self) { hooked.withLock { $0 = true } }
        f.cell.markFreed()
        f.onLoop { $0.free() }
        await withCheckedContinuation { done in f.runtime.loop.execute { done.resume() } }
        #expect(hooked.withLock { $0 })
        #expect(f.submit(.succeed("late"), job) == .cancelled)
        #expect(f.cell.latestEvent.seq == 1)
    }

    @Test func aLoadWhoseLoaderWasFreedMeanwhileFailsWithoutStartingAJob() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        let loader = f.loader
        let runtime = f.runtime
        f.onLoop { _ in loader.retire(runtime: runtime) }
        f.load("q")
        let events = await f.log.next(2)
        #expect(events[0].state.status == .loading)
        #expect(events[1].state.status == .error)
        #expect(events[1].state.error?.code == ResultCode.notFound.rawValue)
    }

    @Test func jobIdsThatNeverExistedAreNotFound() throws {
        let f = try CoreFixture()
        defer { f.close() }
        #expect(f.submit(.finish, 0) == .notFound)
        #expect(f.submit(.finish, f.cell.id) == .notFound)
        #expect(f.submit(.finish, 1 << 40 | HandleKind.job.rawValue) == .notFound)
        #expect(f.runtime.isJobCancelled(f.cell.id, of: Job<String, String>.self) == .failure(.notFound))
    }

    @Test func progressIsReportedWithoutChangingTheState() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        f.load("q")
        _ = await f.log.next()
        f.submit(.progress(done: 3, total: 10), await f.loader.nextJob())
        let event = await f.log.next()
        #expect(event.type == .progress)
        #expect(event.progressDone == 3 && event.progressTotal == 10)
        #expect(event.state.status == .loading)
    }

    @Test func operationsSubmittedInsideStartApplyWhenStartReturns() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        // Loop thread only: whether the loader's start is running, and
        // whether an event arrived meanwhile.
        let inStart = Locked(false), eventInsideStart = Locked(false)
        let log = EventLog<String, String>()
        let cell = Cell<String, String>(id: f.runtime.table.makeID(.loadable), flavor: .loadable,
                                        runtime: f.runtime) { cell, event in
            if inStart.withLock({ $0 }) { eventInsideStart.withLock { $0 = true } }
            log.observer(cell, event)
        }
        f.runtime.table.insert(cell)
        let count = Locked(0)
        f.loader.onStart = { job, runtime in
            inStart.withLock { $0 = true }
            let n = count.withLock { $0 += 1; return $0 }
            // Every job's operations in turn, so that a job given the inbox
            // storage of the one before would show if it kept its operations.
            _ = runtime.submit(.yield("a\(n)"), job: job, of: Job<String, String>.self)
            if n == 2 { _ = runtime.submit(.progress(done: 1, total: 2), job: job, of: Job<String, String>.self) }
            _ = runtime.submit(.succeed("done\(n)"), job: job, of: Job<String, String>.self)
            inStart.withLock { $0 = false }
        }
        for n in 1...3 {
            let spec = LoadSpec(loader: f.loader as Loader<String, String>, request: "r\(n)")
            f.runtime.loop.execute { cell.load(spec) }
            #expect(await log.next().state.status == .loading)
            let partial = await log.next()
            #expect(partial.state.isPartial && partial.state.value == "a\(n)")
            if n == 2 { #expect(await log.next().type == .progress) }
            let loaded = await log.next()
            #expect(loaded.state.status == .loaded && !loaded.state.isPartial && loaded.state.value == "done\(n)")
        }
        #expect(!eventInsideStart.withLock { $0 })
    }

    @Test func timeoutCancelsTheJobAndShowsTimedOut() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        let hooked = Locked(false)
        // Registered as the job starts, before the timer can fire.
        f.loader.onStart = { job, runtime in
            _ = runtime.onCancel(job: job, of: Job<String, String>.self) { hooked.withLock { $0 = true } }
        }
        f.load("q", options: LoadOptions(timeoutMs: 20))
        _ = await f.log.next()
        _ = await f.loader.nextJob()
        let event = await f.log.next()
        #expect(event.state.status == .error)
        #expect(event.state.error == LoadError(.timedOut))
        #expect(hooked.withLock { $0 })
    }

    @Test func interruptsArriveInOrderWithMeasuredElapsedTime() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        f.load("q", options: LoadOptions(interruptsMs: [10, 20]))
        _ = await f.log.next()
        let job = await f.loader.nextJob()
        let first = await f.log.next()
        let second = await f.log.next()
        #expect(first.type == .interrupt && second.type == .interrupt)
        #expect(first.elapsedMs >= 10)
        #expect(second.elapsedMs >= 30)
        f.submit(.succeed("v"), job)
        #expect(await f.log.next().state.status == .loaded)
    }

    @Test func retriesKeepLoadingAndCountAttempts() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        f.load("q", options: LoadOptions(retries: 2, retryBaseMs: 1, retryMaxMs: 2))
        #expect(await f.log.next().state.attempt == 1)
        f.submit(.fail(LoadError(domain: .host, code: 1), retry: .allowed), await f.loader.nextJob())
        let retry1 = await f.log.next()
        #expect(retry1.state.status == .loading && retry1.state.attempt == 2)
        f.submit(.fail(LoadError(domain: .host, code: 1), retry: .allowed), await f.loader.nextJob())
        #expect(await f.log.next().state.attempt == 3)
        f.submit(.fail(LoadError(domain: .host, code: 9), retry: .allowed), await f.loader.nextJob())
        let failed = await f.log.next()
        #expect(failed.state.status == .error && failed.state.attempt == 3 && failed.state.error?.code == 9)
    }

    @Test func aFinalFailureSkipsTheRetriesLeft() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        f.load("q", options: LoadOptions(retries: 5, retryBaseMs: 1))
        _ = await f.log.next()
        f.submit(.fail(LoadError(domain: .host, code: 4), retry: .never), await f.loader.nextJob())
        let event = await f.log.next()
        #expect(event.state.status == .error && event.state.attempt == 1)
    }

    @Test func processCellsRunKindsAndIgnoreValues() async throws {
        let f = try CoreFixture(flavor: .process)
        defer { f.close() }
        var options = LoadOptions()
        options.silent = false
        let spec = LoadSpec(loader: f.loader as Loader<String, String>, request: "r", kind: 7, options: options)
        f.onLoop { $0.load(spec) }
        let running = await f.log.next()
        #expect(running.state.status == .loading && running.state.kind == 7)
        let job = await f.loader.nextJob()
        f.submit(.yield("ignored"), job)
        f.submit(.succeed("ignored"), job)
        let finished = await f.log.next()
        #expect(finished.state.status == .loaded && finished.state.kind == 7 && finished.state.value == nil)
    }
}

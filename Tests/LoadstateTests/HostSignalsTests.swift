import Testing
@_spi(LoadstateC) @testable import Loadstate

/// Jobs started on the runtime so far (its metrics).
private func jobsStarted(_ runtime: Runtime) -> UInt64 {
    runtime.statistics().loads.jobsStarted
}

/// The host's signals: `Runtime.setOnline` and `Runtime.setForeground`.
@Suite(.timeLimit(.minutes(1)))
struct HostSignalsTests {
    @Test func signalsStartTrueAndShowInStatistics() throws {
        let runtime = try Runtime()
        defer { _ = runtime.close() }
        #expect(runtime.isOnline && runtime.isForeground)
        runtime.setOnline(false)
        runtime.setForeground(false)
        #expect(!runtime.isOnline && !runtime.isForeground)
        let stats = runtime.statistics()
        #expect(!stats.isOnline && !stats.isForeground)
        #expect(stats.prometheusText.contains("\nloadstate_online 0\n"))
        runtime.setOnline(true)
        #expect(runtime.statistics().isOnline)
        #expect(ResultCode.offline.message == "the runtime is offline")
    }

    @Test func aLoadStartedOfflineWaitsPausedAndRunsOnReconnect() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        f.runtime.setOnline(false)
        f.load("r")
        let paused = await f.log.next()
        #expect(paused.state.status == .loading && paused.state.isPaused)
        try await Task.sleep(for: .milliseconds(30))
        #expect(jobsStarted(f.runtime) == 0)
        #expect(f.runtime.statistics().loadsPaused == 1)
        f.runtime.setOnline(true)
        let job = await f.loader.nextJob()
        let resumed = await f.log.next()
        #expect(resumed.state.status == .loading && !resumed.state.isPaused)
        f.submit(.succeed("v"), job)
        let loaded = await f.log.next()
        #expect(loaded.state.status == .loaded && loaded.state.value == "v")
        #expect(f.runtime.statistics().loadsPaused == 0 && f.runtime.statistics().loadsPausedTotal == 1)
    }

    @Test func offlineFailFailsAtOnceAndOfflineRunRuns() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        f.runtime.setOnline(false)
        var options = LoadOptions()
        options.offlineMode = .fail
        f.load("f", options: options)
        #expect(await f.log.next().state.status == .loading)
        let failed = await f.log.next()
        #expect(failed.state.status == .error && failed.state.error?.code == ResultCode.offline.rawValue)
        #expect(jobsStarted(f.runtime) == 0)
        options.offlineMode = .run
        f.load("r", options: options)
        let job = await f.loader.nextJob()
        #expect(await f.log.next().state.isPaused == false)
        f.submit(.succeed("ran"), job)
        #expect(await f.log.next().state.value == "ran")
    }

    @Test func offlinePausesARetryUntilOnline() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        f.load("r", options: LoadOptions(retries: 1, retryBaseMs: 1, retryMaxMs: 1))
        _ = await f.log.next()
        let first = await f.loader.nextJob()
        f.runtime.setOnline(false)
        f.submit(.fail(LoadError(domain: .host, code: 1), retry: .allowed), first)
        var event = await f.log.next()
        while !event.state.isPaused { event = await f.log.next() }
        #expect(event.state.status == .loading && event.state.attempt == 2)
        try await Task.sleep(for: .milliseconds(30))
        #expect(jobsStarted(f.runtime) == 1)
        f.runtime.setOnline(true)
        let second = await f.loader.nextJob()
        f.submit(.succeed("back"), second)
        while event.state.status != .loaded { event = await f.log.next() }
        #expect(event.state.value == "back" && event.state.attempt == 2)
    }

    @Test func cancelOfAPausedLoadRestoresTheState() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        f.onLoop { $0.setLoaded("old") }
        _ = await f.log.next()
        f.runtime.setOnline(false)
        f.load("new")
        #expect(await f.log.next().state.isPaused)
        f.onLoop { $0.cancel() }
        let restored = await f.log.next()
        #expect(restored.isCancelled && restored.state.value == "old" && !restored.state.isPaused)
        #expect(f.runtime.statistics().loadsPaused == 0)
        f.runtime.setOnline(true)
        try await Task.sleep(for: .milliseconds(30))
        #expect(jobsStarted(f.runtime) == 0)
    }

    @Test func foregroundRefreshesAStaleFlaggedCellOncePerThrottle() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        var options = LoadOptions()
        options.refreshesOnForeground = true
        f.load("s", options: options)
        _ = await f.log.next()
        f.submit(.succeed("v1"), await f.loader.nextJob())
        _ = await f.log.next()
        f.runtime.setForeground(false)
        f.runtime.setForeground(true)
        let refresh = await f.loader.nextJob()
        #expect(await f.log.next().state.isRefreshing)
        f.submit(.succeed("v2"), refresh)
        #expect(await f.log.next().state.value == "v2")
        // Within the default throttle: no second refresh.
        f.runtime.setForeground(false)
        f.runtime.setForeground(true)
        try await Task.sleep(for: .milliseconds(30))
        #expect(jobsStarted(f.runtime) == 2)
    }

    @Test func foregroundLeavesFreshAndUnflaggedCellsAlone() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        var options = LoadOptions()
        options.refreshesOnForeground = true
        options.freshMs = 600_000
        f.load("fresh", options: options)
        _ = await f.log.next()
        f.submit(.succeed("v"), await f.loader.nextJob())
        _ = await f.log.next()
        f.runtime.setForeground(false)
        f.runtime.setForeground(true)
        try await Task.sleep(for: .milliseconds(30))
        f.load("plain")
        _ = await f.log.next()
        f.submit(.succeed("p"), await f.loader.nextJob())
        _ = await f.log.next()
        f.runtime.setForeground(false)
        f.runtime.setForeground(true)
        try await Task.sleep(for: .milliseconds(30))
        #expect(jobsStarted(f.runtime) == 2)
    }

    @Test func aLoadableCellShowsItsPausedLoadAndLoadsOnReconnect() async throws {
        let runtime = try Runtime()
        defer { _ = runtime.close() }
        let cell = LoadableCell<Int>(runtime: runtime)
        let calls = Locked(0)
        runtime.setOnline(false)
        startTask {
            cell.load {
                calls.withLock { $0 += 1 }
                return 7
            }
        }
        // The first state shows before `load` returns; the paused flag comes with the loop's event.
        while !cell.isPaused { await Task.yield() }
        #expect(cell.state == .loading)
        try await Task.sleep(for: .milliseconds(30))
        #expect(calls.withLock { $0 } == 0 && cell.isPaused)
        let recorder = StateRecorder(cell.states)
        runtime.setOnline(true)
        _ = await recorder.until(\.isLoaded)
        #expect(!cell.isPaused && calls.withLock { $0 } == 1)
    }

    @Test(arguments: [true, false])
    func aPollWaitsWhileHeldAndFiresOnReturn(offline: Bool) async throws {
        let runtime = try Runtime()
        defer { _ = runtime.close() }
        let starts = Starts()
        let count = Locked(0)
        let cell = LoadableCell<Int>(runtime: runtime)
        cell.load(refreshInterval: .milliseconds(5)) {
            let n = count.withLock { c -> Int in
                c += 1
                return c
            }
            starts.started("poll")
            return n
        }
        for _ in 0..<2 { _ = await starts.next() }
        if offline { runtime.setOnline(false) } else { runtime.setForeground(false) }
        await elapse(40, on: runtime)
        let held = count.withLock { $0 }
        await elapse(40, on: runtime)
        #expect(count.withLock { $0 } == held)
        if offline { runtime.setOnline(true) } else { runtime.setForeground(true) }
        while count.withLock({ $0 }) < held + 2 { _ = await starts.next() }
        cell.cancel()
    }
}

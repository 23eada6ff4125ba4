import Observation
import Testing
@_spi(LoadstateC) @testable import Loadstate

struct Boom: Error, Equatable {}

/// The Swift API's loadable cells: the history of states for each case.
@Suite(.timeLimit(.minutes(1)))
struct LoadableCellTests {
    @Test func basicLoad() async {
        let cell = LoadableCell<Int>()
        let r = StateRecorder(cell.states)
        startTask { cell.load { 42 } }
        let history = await r.until(\.isLoaded)
        #expect(history == [.absent, .loading, .loaded(42)])
    }

    @Test func yielding() async {
        let cell = LoadableCell<[Int]>()
        let r = StateRecorder(cell.states)
        let gate = Gate()
        startTask {
            cell.load { yield in
                yield([1])
                await gate.wait()
                yield(.loaded([1, 2]))
            }
        }
        await r.take(3)
        #expect(cell.isPartial)
        gate.open()
        await r.take(1)
        while cell.isPartial { await Task.yield() }
        // The load ended with the value it last yielded: no state repeats it,
        // so the next one the stream gives is the reset's.
        cell.reset()
        let history = await r.take(1)
        #expect(history == [.absent, .loading, .loaded([1]), .loaded([1, 2]), .absent])
    }

    @Test func twoLoadsInARow() async {
        let cell = LoadableCell<Int>()
        let r = StateRecorder(cell.states)
        let never = Gate()
        startTask {
            cell.load {
                await never.wait()
                return 1
            }
            cell.load { 2 }
        }
        let history = await r.until(\.isLoaded)
        #expect(history == [.absent, .loading, .loading, .loaded(2)])
    }

    @Test func silentLoad() async {
        let cell = LoadableCell<Int>()
        cell.setValue(1)
        await cell.settled()
        let r = StateRecorder(cell.states)
        startTask { cell.load(silently: true) { 2 } }
        let history = await r.until { $0 == .loaded(2) }
        #expect(history == [.loaded(1), .loaded(2)])
    }

    @Test func silentLoadWithYield() async {
        let cell = LoadableCell<Int>()
        cell.setValue(1)
        await cell.settled()
        let r = StateRecorder(cell.states)
        let gate = Gate()
        startTask {
            cell.load(silently: true) { yield in
                yield(2)
                await gate.wait()
                yield(3)
            }
        }
        await r.take(2)
        #expect(cell.isRefreshing)
        gate.open()
        await r.take(1)
        while cell.isRefreshing { await Task.yield() }
        // The load ended with the value it last yielded: no state repeats it.
        cell.reset()
        let history = await r.take(1)
        #expect(history == [.loaded(1), .loaded(2), .loaded(3), .absent])
    }

    @Test func reset() async {
        let cell = LoadableCell<Int>()
        let r = StateRecorder(cell.states)
        await cell.load { 1 }
        cell.reset()
        let history = await r.take(4)
        #expect(history == [.absent, .loading, .loaded(1), .absent])
    }

    @Test func cancelFromInside() async {
        let cell = LoadableCell<Int>()
        cell.setValue(1)
        await cell.settled()
        let r = StateRecorder(cell.states)
        startTask { cell.load { throw CancelLoadable() } }
        let history = await r.take(3)
        #expect(history == [.loaded(1), .loading, .loaded(1)])
    }

    @Test func resetFromInside() async {
        let cell = LoadableCell<Int>()
        cell.setValue(1)
        await cell.settled()
        let r = StateRecorder(cell.states)
        startTask { cell.load { throw ResetLoadable() } }
        let history = await r.take(3)
        #expect(history == [.loaded(1), .loading, .absent])
    }

    @Test func cancelFromOutside() async {
        let cell = LoadableCell<Int>()
        let r = StateRecorder(cell.states)
        startTask {
            cell.load {
                try await Task.sleep(for: .seconds(60))
                return 1
            }
        }
        await r.take(2)
        cell.cancel()
        let history = await r.take(1)
        #expect(history == [.absent, .loading, .absent])
    }

    @Test func loadTwiceWhereTheFirstFails() async {
        let cell = LoadableCell<Int>()
        let r = StateRecorder(cell.states)
        await cell.load { throw Boom() }
        #expect(cell.state.error is Boom)
        await cell.load { 2 }
        let history = await r.take(5)
        #expect(history == [.absent, .loading, .error(Boom()), .loading, .loaded(2)])
    }

    @Test func interruptAnsweredWithATimeout() async {
        let cell = LoadableCell<Int>()
        let calls = Locked<[Duration]>([])
        await cell.load(interrupts: [.milliseconds(10)]) {
            try await Task.sleep(for: .seconds(60))
            return 1
        } onInterrupt: { interrupt in
            calls.withLock { $0.append(interrupt.elapsed) }
            throw TimeoutError()
        }
        #expect(cell.state.error is TimeoutError)
        #expect(calls.withLock { $0.count } == 1)
        #expect(calls.withLock { $0[0] } >= .milliseconds(10))
    }

    @Test func interruptNotNeededBecauseTheLoadEndedFirst() async {
        let cell = LoadableCell<Int>()
        let calls = Locked(0)
        await cell.load(interrupts: [.seconds(30)]) { 1 } onInterrupt: { _ in calls.withLock { $0 += 1 } }
        #expect(cell.state == .loaded(1))
        #expect(calls.withLock { $0 } == 0)
    }

    @Test func secondInterruptNotNeeded() async {
        let cell = LoadableCell<Int>()
        let gate = Gate()
        let calls = Locked(0)
        await cell.load(interrupts: [.milliseconds(10), .seconds(30)]) {
            await gate.wait()
            return 1
        } onInterrupt: { _ in
            calls.withLock { $0 += 1 }
            gate.open()
        }
        #expect(cell.state == .loaded(1))
        #expect(calls.withLock { $0 } == 1)
    }

    @Test func twoInterruptsThenATimeout() async {
        let cell = LoadableCell<Int>()
        let calls = Locked<[Duration]>([])
        await cell.load(timeout: .milliseconds(150), interrupts: [.milliseconds(10), .milliseconds(10)]) {
            try await Task.sleep(for: .seconds(60))
            return 1
        } onInterrupt: { interrupt in
            calls.withLock { $0.append(interrupt.elapsed) }
        }
        #expect(cell.state.error is TimeoutError)
        let seen = calls.withLock { $0 }
        #expect(seen.count == 2)
        #expect(seen.count == 2 && seen[1] >= .milliseconds(20))
    }

    @Test func twoCellsNeverCancelEachOther() async {
        let a = LoadableCell<Int>()
        let b = LoadableCell<Int>()
        let gate = Gate()
        startTask {
            a.load {
                await gate.wait()
                return 1
            }
            b.load {
                await gate.wait()
                return 2
            }
        }
        let ra = StateRecorder(a.states)
        let rb = StateRecorder(b.states)
        gate.open()
        await ra.until(\.isLoaded)
        await rb.until(\.isLoaded)
        #expect(a.state == .loaded(1))
        #expect(b.state == .loaded(2))
    }

    @Test func aCancelledLoadNeverWritesItsResult() async {
        let cell = LoadableCell<Int>()
        let gate = Gate()
        let finished = Gate()
        startTask {
            cell.load {
                await gate.wait()
                finished.open()
                return 99
            }
        }
        await cell.settled()
        cell.cancel()
        await cell.settled()
        gate.open()
        await finished.wait()
        await cell.settled()
        await cell.settled()
        #expect(cell.state == .absent)
    }

    @Test func refreshWorksAfterAFailure() async {
        let cell = LoadableCell<Int>()
        let attempts = Locked(0)
        await cell.load {
            let n = attempts.withLock { $0 += 1; return $0 }
            if n == 1 { throw Boom() }
            return n
        }
        #expect(cell.state.isError)
        let r = StateRecorder(cell.states)
        #expect(cell.refresh())
        await r.take(2)
        #expect(cell.state == .loaded(2))
    }

    @Test func refreshWithoutALoadDoesNothing() {
        #expect(!LoadableCell<Int>().refresh())
    }

    @Test func retriesRunTheBodyAgain() async {
        let cell = LoadableCell<Int>()
        let attempts = Locked(0)
        await cell.load(retries: 2) {
            let n = attempts.withLock { $0 += 1; return $0 }
            if n < 3 { throw Boom() }
            return n
        }
        // The awaited load is the first attempt; the retries run as tasks.
        let r = StateRecorder(cell.states)
        await r.until(\.isLoaded)
        #expect(cell.state == .loaded(3))
    }

    @Test func cancellingTheAwaitingTaskCancelsTheLoad() async {
        let cell = LoadableCell<Int>()
        cell.setValue(1)
        await cell.settled()
        let started = Gate()
        let task = Task {
            await cell.load {
                started.open()
                try await Task.sleep(for: .seconds(60))
                return 2
            }
        }
        await started.wait()
        task.cancel()
        await task.value
        #expect(cell.state == .loaded(1))
    }

    @Test func theInlineLoadReturnsWithTheResultShown() async {
        let cell = LoadableCell<String>()
        await cell.load { "done" }
        #expect(cell.state == .loaded("done"))
    }

    @Test func stateChangesAreObservable() async {
        let cell = LoadableCell<Int>()
        let changed = Gate()
        withObservationTracking {
            _ = cell.state
        } onChange: {
            changed.open()
        }
        cell.setValue(5)
        await changed.wait()
        await cell.settled()
        #expect(cell.state == .loaded(5))
    }

    @Test func setErrorShowsTheError() async {
        let cell = LoadableCell<Int>()
        cell.setError(Boom())
        await cell.settled()
        #expect(cell.state.error is Boom)
    }
}

@Suite struct LoadableStateTests {
    @Test func helpers() {
        var state = LoadableState<Int>.absent
        #expect(state.isAbsent && state.data == nil)
        state.setLoading()
        #expect(state.isLoading)
        state.setValue(3)
        #expect(state.isLoaded && state.data == 3)
        #expect(state.map { $0 * 2 } == .loaded(6))
        #expect(state.compactMap { $0 > 5 ? $0 : nil } == .absent)
        state.setError(Boom())
        #expect(state.isError && state.error is Boom)
        #expect(state.map { $0 + 1 }.isError)
        state.setAbsent()
        #expect(state == .absent)
    }
}

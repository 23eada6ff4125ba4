import Testing
@_spi(LoadstateC) @testable import Loadstate

enum Chore: Equatable, Sendable {
    case save
    case delete
}

/// The Swift API's process cells: the history of states for each case.
@Suite(.timeLimit(.minutes(1)))
struct ProcessCellTests {
    @Test func basicRun() async {
        let cell = ProcessCell<Chore>()
        let r = StateRecorder(cell.states)
        startTask { cell.run(.save) {} }
        let history = await r.until(\.hasFinished)
        #expect(history == [.idle, .running(.save), .finished(.save)])
    }

    @Test func twoRunsInARow() async {
        let cell = ProcessCell<Chore>()
        let r = StateRecorder(cell.states)
        let never = Gate()
        startTask {
            cell.run(.save) { await never.wait() }
            cell.run(.delete) {}
        }
        let history = await r.until(\.hasFinished)
        #expect(history == [.idle, .running(.save), .running(.delete), .finished(.delete)])
    }

    @Test func silentRun() async {
        let cell = ProcessCell<Chore>()
        await cell.run(.save) {}
        let r = StateRecorder(cell.states)
        startTask { cell.run(.delete, silently: true) {} }
        let history = await r.until { $0 == .finished(.delete) }
        #expect(history == [.finished(.save), .finished(.delete)])
    }

    @Test func failedRun() async {
        let cell = ProcessCell<Chore>()
        await cell.run(.delete) { throw Boom() }
        #expect(cell.state.hasFailed(.delete))
        #expect(cell.state.error is Boom)
        #expect(cell.state.process == .delete)
    }

    @Test func reset() async {
        let cell = ProcessCell<Chore>()
        await cell.run(.save) {}
        cell.reset()
        await cell.settled()
        #expect(cell.state == .idle)
    }

    @Test func cancelFromInside() async {
        let cell = ProcessCell<Chore>()
        await cell.run(.save) {}
        let r = StateRecorder(cell.states)
        startTask { cell.run(.delete) { throw CancelProcess() } }
        let history = await r.take(3)
        #expect(history == [.finished(.save), .running(.delete), .finished(.save)])
    }

    @Test func resetFromInside() async {
        let cell = ProcessCell<Chore>()
        await cell.run(.save) {}
        let r = StateRecorder(cell.states)
        startTask { cell.run(.delete) { throw ResetProcess() } }
        let history = await r.take(3)
        #expect(history == [.finished(.save), .running(.delete), .idle])
    }

    @Test func cancelFromOutside() async {
        let cell = ProcessCell<Chore>()
        let r = StateRecorder(cell.states)
        startTask { cell.run(.save) { try await Task.sleep(for: .seconds(60)) } }
        await r.take(2)
        cell.cancel()
        let history = await r.take(1)
        #expect(history == [.idle, .running(.save), .idle])
    }

    @Test func runTwiceWhereTheFirstFails() async {
        let cell = ProcessCell<Chore>()
        let r = StateRecorder(cell.states)
        await cell.run(.save) { throw Boom() }
        await cell.run(.save) {}
        let history = await r.take(5)
        #expect(history == [.idle, .running(.save), .failed(process: .save, error: Boom()), .running(.save),
                            .finished(.save)])
    }

    @Test func interruptAnsweredWithATimeout() async {
        let cell = ProcessCell<Chore>()
        await cell.run(.save, interrupts: [.milliseconds(10)]) {
            try await Task.sleep(for: .seconds(60))
        } onInterrupt: { _ in
            throw TimeoutError()
        }
        #expect(cell.state.error is TimeoutError)
        #expect(cell.state.hasFailed(.save))
    }

    @Test func interruptNotNeeded() async {
        let cell = ProcessCell<Chore>()
        let calls = Locked(0)
        await cell.run(.save, interrupts: [.seconds(30)]) {} onInterrupt: { _ in calls.withLock { $0 += 1 } }
        #expect(cell.state == .finished(.save))
        #expect(calls.withLock { $0 } == 0)
    }

    @Test func secondInterruptNotNeeded() async {
        let cell = ProcessCell<Chore>()
        let gate = Gate()
        let calls = Locked(0)
        await cell.run(.save, interrupts: [.milliseconds(10), .seconds(30)]) {
            await gate.wait()
        } onInterrupt: { _ in
            calls.withLock { $0 += 1 }
            gate.open()
        }
        #expect(cell.state == .finished(.save))
        #expect(calls.withLock { $0 } == 1)
    }

    @Test func twoInterruptsThenATimeout() async {
        let cell = ProcessCell<Chore>()
        let calls = Locked(0)
        await cell.run(.save, timeout: .milliseconds(150), interrupts: [.milliseconds(10), .milliseconds(10)]) {
            try await Task.sleep(for: .seconds(60))
        } onInterrupt: { _ in
            calls.withLock { $0 += 1 }
        }
        #expect(cell.state.error is TimeoutError)
        #expect(calls.withLock { $0 } == 2)
    }

    @Test func twoCellsNeverAffectEachOther() async {
        let a = ProcessCell<Chore>()
        let b = ProcessCell<Chore>()
        await a.run(.save) {}
        b.reset()
        await b.run(.delete) {}
        a.cancel()
        await a.settled()
        #expect(a.state == .finished(.save))
        #expect(b.state == .finished(.delete))
    }

    @Test func processStateHelpers() {
        var state = ProcessState<Chore>.idle
        #expect(state.isIdle && state.process == nil)
        state.start(.save)
        #expect(state.isRunning && state.isRunning(.save) && !state.isRunning(.delete))
        state.finish(.save)
        #expect(state.hasFinished && state.hasFinished(.save))
        state.fail(.delete, error: Boom())
        #expect(state.hasFailed && state.hasFailed(.delete) && state.error is Boom)
        state.setIdle()
        #expect(state == .idle)
    }
}

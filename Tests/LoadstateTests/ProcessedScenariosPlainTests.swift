import Testing
@_spi(LoadstateC) @testable import Loadstate

/// The scenarios of Processed's own test suite from plain code: no actor,
/// cells held directly, closures that run on the global executor and share
/// state with the test through locks. Same histories as
/// `ProcessedScenariosMainActorTests`.
@Suite(.timeLimit(.minutes(1)))
struct ProcessedScenariosPlainTests {
    let numbers = LoadableCell<Int>()
    let saving = ProcessCell<Chore>()
    let interrupts = Locked<[Interrupt]>([])

    @Test func basic() async {
        let r = StateRecorder(numbers.states)
        await numbers.load { 42 }
        #expect(await r.take(3) == [.absent, .loading, .loaded(42)])
    }

    @Test func basicInItsOwnTask() async {
        let r = StateRecorder(numbers.states)
        startTask { numbers.load { 42 } }
        #expect(await r.take(3) == [.absent, .loading, .loaded(42)])
    }

    @Test func basicYielding() async {
        let r = StateRecorder(numbers.states)
        await numbers.load { yield in
            yield(.loaded(42))
            yield(.loaded(73))
        }
        #expect(await r.take(4) == [.absent, .loading, .loaded(42), .loaded(73)])
    }

    @Test func multipleYielding() async {
        let r = StateRecorder(numbers.states)
        await numbers.load { yield in
            yield(42)
            yield(73)
        }
        await numbers.load { yield in yield(100) }
        #expect(await r.take(6) == [.absent, .loading, .loaded(42), .loaded(73), .loading, .loaded(100)])
    }

    @Test func runSilently() async {
        let r = StateRecorder(numbers.states)
        await numbers.load(silently: true) { 42 }
        #expect(await r.take(2) == [.absent, .loaded(42)])
    }

    @Test func runSilentlyWithYielding() async {
        let r = StateRecorder(numbers.states)
        await numbers.load(silently: true) { yield in yield(42) }
        #expect(await r.take(2) == [.absent, .loaded(42)])
    }

    @Test func reset() async {
        let r = StateRecorder(numbers.states)
        await numbers.load { 42 }
        numbers.reset()
        #expect(await r.take(4) == [.absent, .loading, .loaded(42), .absent])
    }

    @Test func cancelFromInside() async {
        let r = StateRecorder(numbers.states)
        await numbers.load { throw CancelLoadable() }
        #expect(await r.take(3) == [.absent, .loading, .absent])
    }

    @Test func resetFromInside() async {
        let r = StateRecorder(numbers.states)
        await numbers.load { 1 }
        await numbers.load { throw ResetLoadable() }
        #expect(await r.take(5) == [.absent, .loading, .loaded(1), .loading, .absent])
    }

    @Test func cancelFromOutsideByCancellingTheTask() async {
        let r = StateRecorder(numbers.states)
        let started = Gate()
        let numbers = self.numbers
        let task = Task {
            await numbers.load {
                started.open()
                try await Task.sleep(for: .seconds(60))
                Issue.record("a cancelled load went on")
                return 0
            }
        }
        await started.wait()
        task.cancel()
        await task.value
        #expect(await r.take(3) == [.absent, .loading, .absent])
    }

    @Test func cancelFromOutsideWithCancel() async {
        let r = StateRecorder(numbers.states)
        await numbers.load { 1 }
        let started = Gate()
        startTask {
            numbers.load {
                started.open()
                try await Task.sleep(for: .seconds(60))
                return 2
            }
        }
        await started.wait()
        numbers.cancel()
        #expect(await r.take(5) == [.absent, .loading, .loaded(1), .loading, .loaded(1)])
    }

    @Test func errorState() async {
        let r = StateRecorder(numbers.states)
        await numbers.load { throw EquatableError() }
        #expect(await r.take(3) == [.absent, .loading, .error(EquatableError())])
    }

    @Test func basicTimeout() async {
        let r = StateRecorder(numbers.states)
        let interrupts = self.interrupts
        await numbers.load(interrupts: [.milliseconds(10)]) {
            try await Task.sleep(for: .seconds(60))
            return 42
        } onInterrupt: { interrupt in
            interrupts.withLock { $0.append(interrupt) }
            throw TimeoutError()
        }
        #expect(await r.take(3) == [.absent, .loading, .error(TimeoutError())])
        #expect(interrupts.withLock { $0 } == [.milliseconds(10)])
    }

    @Test func unneededTimeout() async {
        let r = StateRecorder(numbers.states)
        let interrupts = self.interrupts
        await numbers.load(interrupts: [.seconds(30)]) {
            42
        } onInterrupt: { interrupt in
            interrupts.withLock { $0.append(interrupt) }
            throw TimeoutError()
        }
        #expect(await r.take(3) == [.absent, .loading, .loaded(42)])
        #expect(interrupts.withLock { $0 }.isEmpty)
    }

    @Test func multipleInterrupts() async {
        let r = StateRecorder(numbers.states)
        let interrupts = self.interrupts
        await numbers.load(interrupts: [.milliseconds(10), .milliseconds(30)]) {
            try await Task.sleep(for: .seconds(60))
            return 42
        } onInterrupt: { interrupt in
            interrupts.withLock { $0.append(interrupt) }
            if interrupt == .milliseconds(40) {
                throw EquatableError()
            }
        }
        #expect(await r.take(3) == [.absent, .loading, .error(EquatableError())])
        let seen = interrupts.withLock { $0 }
        #expect(seen.map(\.delay) == [.milliseconds(10), .milliseconds(40)])
        #expect(seen.allSatisfy { $0.elapsed >= $0.delay })
    }

    @Test func secondInterruptNotNeeded() async {
        let r = StateRecorder(numbers.states)
        let gate = Gate()
        let interrupts = self.interrupts
        await numbers.load(interrupts: [.milliseconds(10), .seconds(30)]) {
            await gate.wait()
            return 42
        } onInterrupt: { interrupt in
            interrupts.withLock { $0.append(interrupt) }
            gate.open()
        }
        #expect(await r.take(3) == [.absent, .loading, .loaded(42)])
        #expect(interrupts.withLock { $0.count } == 1)
    }

    // MARK: - Processes

    @Test func processBasic() async {
        let r = StateRecorder(saving.states)
        await saving.run(.save) {}
        #expect(await r.take(3) == [.idle, .running(.save), .finished(.save)])
    }

    @Test func processReset() async {
        let r = StateRecorder(saving.states)
        await saving.run(.save) {}
        saving.reset()
        #expect(await r.take(4) == [.idle, .running(.save), .finished(.save), .idle])
    }

    @Test func processCancelFromInside() async {
        let r = StateRecorder(saving.states)
        await saving.run(.save) { throw CancelProcess() }
        #expect(await r.take(3) == [.idle, .running(.save), .idle])
    }

    @Test func processResetFromInside() async {
        let r = StateRecorder(saving.states)
        await saving.run(.save) {}
        await saving.run(.delete) { throw ResetProcess() }
        #expect(await r.take(5) == [.idle, .running(.save), .finished(.save), .running(.delete), .idle])
    }

    @Test func processError() async {
        let r = StateRecorder(saving.states)
        await saving.run(.save) { throw EquatableError() }
        #expect(await r.take(3) == [.idle, .running(.save), .failed(process: .save, error: EquatableError())])
    }

    @Test func processSilently() async {
        let r = StateRecorder(saving.states)
        await saving.run(.save, silently: true) {}
        #expect(await r.take(2) == [.idle, .finished(.save)])
    }

    @Test func processTwice() async {
        let r = StateRecorder(saving.states)
        await saving.run(.save) { throw EquatableError() }
        await saving.run(.delete) {}
        #expect(await r.take(5) == [.idle, .running(.save), .failed(process: .save, error: EquatableError()),
                                    .running(.delete), .finished(.delete)])
    }

    @Test func processTimeout() async {
        let r = StateRecorder(saving.states)
        await saving.run(.save, interrupts: [.milliseconds(10)]) {
            try await Task.sleep(for: .seconds(60))
        } onInterrupt: { _ in
            throw TimeoutError()
        }
        #expect(await r.take(3) == [.idle, .running(.save), .failed(process: .save, error: TimeoutError())])
    }

    @Test func singleProcess() async {
        let cell = ProcessCell<SingleProcess>()
        let r = StateRecorder(cell.states)
        await cell.run {}
        #expect(await r.take(3) == [.idle, .running(.process), .finished(.process)])
    }
}

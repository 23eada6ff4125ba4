import Observation
import Testing
@_spi(LoadstateC) @testable import Loadstate

/// The scenarios of Processed's own test suite, written as a `@MainActor`
/// view model writes them: `@Loadable` properties, closures that read and
/// write the model's main-actor state, `onInterrupt` after the body.
///
/// Where loadstate's contract differs from Processed, the history is
/// loadstate's: a load cancelled from inside or outside brings back the
/// state from before it instead of staying `loading`.
@MainActor
final class NumbersModel {
    @Loadable var numbers: LoadableState<Int>
    var interrupts: [Interrupt] = []
    var bodyRuns = 0
    let saving = ProcessCell<Chore>()
    @Process var publishing
    @Process<Chore> var chore

    /// Starts a load in a task of its own (the form a button's action
    /// uses): it waits until `release` opens.
    func startLoad(started: Gate, release: Gate, value: Int) {
        $numbers.load {
            started.open()
            await release.wait()
            return value
        }
    }
}

struct EquatableError: Error, Equatable {}

@MainActor
@Suite(.timeLimit(.minutes(1)))
struct ProcessedScenariosMainActorTests {
    let model = NumbersModel()

    @Test func basic() async {
        let r = StateRecorder(model.$numbers.states)
        await model.$numbers.load {
            self.model.bodyRuns += 1
            return 42
        }
        #expect(await r.take(3) == [.absent, .loading, .loaded(42)])
        #expect(model.bodyRuns == 1)
        #expect(model.numbers == .loaded(42))
    }

    @Test func basicYielding() async {
        let r = StateRecorder(model.$numbers.states)
        await model.$numbers.load { yield in
            yield(.loaded(42))
            yield(.loaded(73))
        }
        #expect(await r.take(4) == [.absent, .loading, .loaded(42), .loaded(73)])
        #expect(!model.$numbers.isPartial)
    }

    @Test func multipleYielding() async {
        let r = StateRecorder(model.$numbers.states)
        await model.$numbers.load { yield in
            yield(.loaded(42))
            yield(.loaded(73))
        }
        await model.$numbers.load { yield in
            yield(.loaded(100))
        }
        #expect(await r.take(6) == [.absent, .loading, .loaded(42), .loaded(73), .loading, .loaded(100)])
    }

    @Test func runSilently() async {
        let r = StateRecorder(model.$numbers.states)
        await model.$numbers.load(silently: true) { 42 }
        #expect(await r.take(2) == [.absent, .loaded(42)])
    }

    @Test func runSilentlyWithYielding() async {
        let r = StateRecorder(model.$numbers.states)
        await model.$numbers.load(silently: true) { yield in
            yield(.loaded(42))
        }
        #expect(await r.take(2) == [.absent, .loaded(42)])
    }

    @Test func reset() async {
        let r = StateRecorder(model.$numbers.states)
        await model.$numbers.load { 42 }
        model.$numbers.reset()
        #expect(await r.take(4) == [.absent, .loading, .loaded(42), .absent])
    }

    @Test func cancelFromInside() async {
        let r = StateRecorder(model.$numbers.states)
        await model.$numbers.load { throw CancelLoadable() }
        // Never stuck in loading: the state from before the load comes back.
        #expect(await r.take(3) == [.absent, .loading, .absent])
    }

    @Test func cancelFromInsideThenCancel() async {
        let r = StateRecorder(model.$numbers.states)
        await model.$numbers.load { 1 }
        await model.$numbers.load { throw CancelLoadable() }
        model.$numbers.cancel()
        model.$numbers.reset()
        #expect(await r.take(6) == [.absent, .loading, .loaded(1), .loading, .loaded(1), .absent])
    }

    @Test func resetFromInside() async {
        let r = StateRecorder(model.$numbers.states)
        await model.$numbers.load { 1 }
        await model.$numbers.load { throw ResetLoadable() }
        #expect(await r.take(5) == [.absent, .loading, .loaded(1), .loading, .absent])
    }

    @Test func cancelFromOutsideByCancellingTheTask() async {
        let r = StateRecorder(model.$numbers.states)
        let started = Gate()
        let numbers = model.$numbers
        let task = Task { @MainActor in
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
        let r = StateRecorder(model.$numbers.states)
        await model.$numbers.load { 1 }
        let started = Gate()
        model.startLoad(started: started, release: Gate(), value: 2)
        await started.wait()
        model.$numbers.cancel()
        #expect(await r.take(5) == [.absent, .loading, .loaded(1), .loading, .loaded(1)])
    }

    @Test func errorState() async {
        let r = StateRecorder(model.$numbers.states)
        await model.$numbers.load { throw EquatableError() }
        #expect(await r.take(3) == [.absent, .loading, .error(EquatableError())])
    }

    @Test func basicTimeout() async {
        let r = StateRecorder(model.$numbers.states)
        await model.$numbers.load(interrupts: [.milliseconds(10)]) {
            try await Task.sleep(for: .seconds(60))
            return 42
        } onInterrupt: { interrupt in
            self.model.interrupts.append(interrupt)
            throw TimeoutError()
        }
        #expect(await r.take(3) == [.absent, .loading, .error(TimeoutError())])
        #expect(model.interrupts.map(\.delay) == [.milliseconds(10)])
    }

    @Test func unneededTimeout() async {
        let r = StateRecorder(model.$numbers.states)
        await model.$numbers.load(interrupts: [.seconds(30)]) {
            42
        } onInterrupt: { interrupt in
            self.model.interrupts.append(interrupt)
            throw TimeoutError()
        }
        #expect(await r.take(3) == [.absent, .loading, .loaded(42)])
        #expect(model.interrupts.isEmpty)
    }

    @Test func multipleInterrupts() async {
        let r = StateRecorder(model.$numbers.states)
        await model.$numbers.load(interrupts: [.milliseconds(10), .milliseconds(30)]) {
            try await Task.sleep(for: .seconds(60))
            return 42
        } onInterrupt: { interrupt in
            self.model.interrupts.append(interrupt)
            // Processed's handlers compare the sum of the delays so far.
            if interrupt == .milliseconds(40) {
                throw EquatableError()
            }
        }
        #expect(await r.take(3) == [.absent, .loading, .error(EquatableError())])
        #expect(model.interrupts.map(\.delay) == [.milliseconds(10), .milliseconds(40)])
        #expect(model.interrupts.map(\.number) == [1, 2])
        #expect(model.interrupts.allSatisfy { $0.elapsed >= $0.delay })
    }

    @Test func secondInterruptNotNeeded() async {
        let r = StateRecorder(model.$numbers.states)
        let gate = Gate()
        await model.$numbers.load(interrupts: [.milliseconds(10), .seconds(30)]) {
            await gate.wait()
            return 42
        } onInterrupt: { interrupt in
            switch interrupt {
            case .seconds(30): throw EquatableError()
            default:
                self.model.interrupts.append(interrupt)
                gate.open()
            }
        }
        #expect(await r.take(3) == [.absent, .loading, .loaded(42)])
        #expect(model.interrupts.count == 1)
    }

    @Test func settingThePropertyByHand() async {
        let r = StateRecorder(model.$numbers.states)
        model.numbers = .loading
        model.numbers = .loaded(7)
        model.numbers = .error(EquatableError())
        model.numbers = .absent
        #expect(await r.take(5) == [.absent, .loading, .loaded(7), .error(EquatableError()), .absent])
    }

    @Test func readingThePropertyIsObserved() async {
        let changed = Gate()
        withObservationTracking {
            _ = model.numbers
        } onChange: {
            changed.open()
        }
        model.$numbers.setValue(3)
        await changed.wait()
        await model.$numbers.settled()
        #expect(model.numbers == .loaded(3))
    }

    // MARK: - Processes

    @Test func processBasic() async {
        let r = StateRecorder(model.saving.states)
        await model.saving.run(.save) { self.model.bodyRuns += 1 }
        #expect(await r.take(3) == [.idle, .running(.save), .finished(.save)])
        #expect(model.bodyRuns == 1)
    }

    @Test func processReset() async {
        let r = StateRecorder(model.saving.states)
        await model.saving.run(.save) {}
        model.saving.reset()
        #expect(await r.take(4) == [.idle, .running(.save), .finished(.save), .idle])
    }

    @Test func processCancelFromInside() async {
        let r = StateRecorder(model.saving.states)
        await model.saving.run(.save) { throw CancelProcess() }
        #expect(await r.take(3) == [.idle, .running(.save), .idle])
    }

    @Test func processResetFromInside() async {
        let r = StateRecorder(model.saving.states)
        await model.saving.run(.save) {}
        await model.saving.run(.delete) { throw ResetProcess() }
        #expect(await r.take(5) == [.idle, .running(.save), .finished(.save), .running(.delete), .idle])
    }

    @Test func processError() async {
        let r = StateRecorder(model.saving.states)
        await model.saving.run(.save) { throw EquatableError() }
        #expect(await r.take(3) == [.idle, .running(.save), .failed(process: .save, error: EquatableError())])
    }

    @Test func processSilently() async {
        let r = StateRecorder(model.saving.states)
        await model.saving.run(.save, silently: true) {}
        #expect(await r.take(2) == [.idle, .finished(.save)])
    }

    @Test func processTwice() async {
        let r = StateRecorder(model.saving.states)
        await model.saving.run(.save) { throw EquatableError() }
        await model.saving.run(.delete) {}
        #expect(await r.take(5) == [.idle, .running(.save), .failed(process: .save, error: EquatableError()),
                                    .running(.delete), .finished(.delete)])
    }

    @Test func processTimeout() async {
        let r = StateRecorder(model.saving.states)
        await model.saving.run(.save, interrupts: [.milliseconds(10)]) {
            try await Task.sleep(for: .seconds(60))
        } onInterrupt: { interrupt in
            self.model.interrupts.append(interrupt)
            throw TimeoutError()
        }
        #expect(await r.take(3) == [.idle, .running(.save), .failed(process: .save, error: TimeoutError())])
        #expect(model.interrupts.count == 1)
    }

    @Test func processPropertyWrapper() async {
        let r = StateRecorder(model.$publishing.states)
        await model.$publishing.run { self.model.bodyRuns += 1 }
        #expect(await r.take(3) == [.idle, .running(.process), .finished(.process)])
        #expect(model.publishing == .finished(.process))
        #expect(model.bodyRuns == 1)
    }

    @Test func settingAProcessPropertyByHand() async {
        let r = StateRecorder(model.$chore.states)
        model.chore = .running(.save)
        model.chore = .failed(process: .save, error: EquatableError())
        model.chore = .finished(.delete)
        model.chore = .idle
        #expect(await r.take(5) == [.idle, .running(.save), .failed(process: .save, error: EquatableError()),
                                    .finished(.delete), .idle])
    }

    @Test func processCancelledByTheCaller() async {
        let r = StateRecorder(model.saving.states)
        let started = Gate()
        let saving = model.saving
        let task = Task { @MainActor in
            await saving.run(.save) {
                started.open()
                try await Task.sleep(for: .seconds(60))
            }
        }
        await started.wait()
        task.cancel()
        await task.value
        #expect(await r.take(3) == [.idle, .running(.save), .idle])
    }
}

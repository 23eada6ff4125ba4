import Observation
import Testing
@_spi(LoadstateC) @testable import Loadstate

/// Processed's class form: a main-actor class loads its own
/// `LoadableState` properties by key path.
@MainActor
@Observable
final class SupportModel: LoadableSupport {
    var numbers: LoadableState<Int> = .absent
    var words: LoadableState<String> = .loaded("kept")

    /// Starts a load in a task of its own, as a button's action does.
    func startLoad(started: Gate, release: Gate) {
        load(\.numbers) {
            started.open()
            await release.wait()
            return 2
        }
    }
}

@MainActor
@Suite(.timeLimit(.minutes(1)))
struct LoadableSupportTests {
    let model = SupportModel()

    @Test func basic() async {
        await model.load(\.numbers) { 42 }
        #expect(model.numbers == .loaded(42))
    }

    @Test func theLoadRunsOnTheMainActorAndReadsTheModel() async {
        // Silent, so that the value stays while the body runs whenever the
        // loading state reaches the model.
        await model.load(\.words, silently: true) { "words: \(self.model.words.data ?? "none")" }
        #expect(model.words == .loaded("words: kept"))
    }

    @Test func errorsAreShown() async {
        await model.load(\.numbers) { throw EquatableError() }
        #expect(model.numbers == .error(EquatableError()))
    }

    @Test func reset() async {
        await model.load(\.numbers) { 1 }
        model.reset(\.numbers)
        await model.load(\.numbers, silently: true) { throw CancelLoadable() }
        #expect(model.numbers == .absent)
    }

    @Test func cancelBringsBackTheStateBeforeTheLoad() async {
        await model.load(\.numbers) { 1 }
        let started = Gate()
        let release = Gate()
        model.startLoad(started: started, release: release)
        await started.wait()
        model.cancel(\.numbers)
        release.open()
        await model.load(\.numbers, silently: true) { throw CancelLoadable() }
        #expect(model.numbers == .loaded(1))
    }

    @Test func twoPropertiesHaveCellsOfTheirOwn() async {
        await model.load(\.numbers) { 7 }
        await model.load(\.words) { "seven" }
        #expect(model.numbers == .loaded(7))
        #expect(model.words == .loaded("seven"))
    }
}

/// Processed's class form for processes.
@MainActor
@Observable
final class SupportEditor: ProcessSupport {
    var action: ProcessState<Chore> = .idle
    var saves = 0
}

@MainActor
@Suite(.timeLimit(.minutes(1)))
struct ProcessSupportTests {
    let editor = SupportEditor()

    @Test func basic() async {
        await editor.run(\.action, as: .save) { self.editor.saves += 1 }
        #expect(editor.action == .finished(.save))
        #expect(editor.saves == 1)
    }

    @Test func aFailureNamesItsKind() async {
        await editor.run(\.action, as: .delete) { throw EquatableError() }
        #expect(editor.action == .failed(process: .delete, error: EquatableError()))
    }

    @Test func resetFromInsideMakesItIdle() async {
        await editor.run(\.action, as: .save) {}
        await editor.run(\.action, as: .delete) { throw ResetProcess() }
        #expect(editor.action == .idle)
    }

    @Test func resetFromOutside() async {
        await editor.run(\.action, as: .save) {}
        editor.reset(\.action)
        await editor.run(\.action, as: .save, silently: true) { throw CancelProcess() }
        #expect(editor.action == .idle)
    }
}

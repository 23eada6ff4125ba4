import Observation
import Testing
@_spi(LoadstateC) @testable import Loadstate

/// An `@Observable` view model with a `@Loadable` property: observers of
/// the model see the cell's changes.
@MainActor
@Observable
final class ObservedModel {
    @ObservationIgnored @Loadable var numbers: LoadableState<[Int]>
    var title = "numbers"

    func load() {
        $numbers.load { [1, 2, 3] }
    }
}

@MainActor
@Suite(.timeLimit(.minutes(1)))
struct ObservationTests {
    @Test func anObserverOfTheModelSeesTheCellChange() async {
        let model = ObservedModel()
        let changed = Gate()
        withObservationTracking {
            _ = model.numbers
        } onChange: {
            changed.open()
        }
        model.load()
        await changed.wait()
        await model.$numbers.waitForLoad()
        #expect(model.numbers == .loaded([1, 2, 3]))
    }

    @Test func theCellIsObservableOnItsOwn() async {
        let cell = LoadableCellWith<Int, Int>()
        let changed = Gate()
        withObservationTracking {
            _ = cell.snapshot
        } onChange: {
            changed.open()
        }
        await cell.load(2) { $0 * 21 }
        await changed.wait()
        #expect(cell.snapshot.state == .loaded(42))
        #expect(cell.snapshot.request == 2)
    }
}

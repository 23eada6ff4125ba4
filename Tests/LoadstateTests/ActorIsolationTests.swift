import Testing
@_spi(LoadstateC) @testable import Loadstate

/// A cell used from an actor: its closures run on the actor and use the
/// actor's state without `await`.
actor Counter {
    var runs = 0
    var interrupts: [Interrupt] = []
    let cell = LoadableCell<Int>()

    func load() async {
        await cell.load {
            self.runs += 1
            return self.runs
        }
    }

    func loadSlowly() async {
        await cell.load(interrupts: [.milliseconds(5)]) {
            try await Task.sleep(for: .seconds(60))
            return 0
        } onInterrupt: { interrupt in
            self.interrupts.append(interrupt)
            throw CancelLoadable()
        }
    }
}

@Suite(.timeLimit(.minutes(1)))
struct ActorIsolationTests {
    @Test func closuresRunOnTheCallersActor() async {
        let counter = Counter()
        await counter.load()
        await counter.load()
        #expect(await counter.runs == 2)
        #expect(counter.cell.state == .loaded(2))
    }

    @Test func anInterruptHandlerOnTheActorCancelsTheLoad() async {
        let counter = Counter()
        await counter.load()
        let r = StateRecorder(counter.cell.states)
        await counter.loadSlowly()
        // Cancelled from the handler: the value from before the load comes back.
        #expect(await r.take(3) == [.loaded(1), .loading, .loaded(1)])
        #expect(await counter.interrupts.map(\.delay) == [.milliseconds(5)])
    }
}

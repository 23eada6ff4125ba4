@_spi(LoadstateC) @testable import Loadstate

/// Collects a core cell's events and hands them out one by one.
final class EventLog<Value: Sendable, Request: Sendable>: @unchecked Sendable {
    typealias Event = CellEvent<Value, Request>
    private let continuation: AsyncStream<Event>.Continuation
    private var iterator: AsyncStream<Event>.Iterator

    init() {
        let (stream, continuation) = AsyncStream<Event>.makeStream()
        self.continuation = continuation
        iterator = stream.makeAsyncIterator()
    }

    /// The observer to give the cell.
    var observer: (Cell<Value, Request>, Event) -> Void {
        { [continuation] _, event in continuation.yield(event) }
    }

    /// The next event.
    func next() async -> Event {
        guard let event = await iterator.next() else { fatalError("event stream ended") }
        return event
    }

    /// The next `n` events.
    func next(_ n: Int) async -> [Event] {
        var events: [Event] = []
        for _ in 0..<n { events.append(await next()) }
        return events
    }
}

/// A loader the test drives by hand: it records the jobs it is given.
final class ManualLoader: Loader<String, String>, @unchecked Sendable {
    private let starts: AsyncStream<UInt64>.Continuation
    private var iterator: AsyncStream<UInt64>.Iterator
    var onStart: (@Sendable (UInt64, Runtime) -> Void)?

    init(runtime: Runtime) {
        let (stream, continuation) = AsyncStream<UInt64>.makeStream()
        starts = continuation
        iterator = stream.makeAsyncIterator()
        super.init(id: runtime.table.makeID(.loader))
        runtime.table.insert(self)
    }

    private let started = Locked(0)

    /// How many jobs were started.
    var startedJobs: Int { started.withLock { $0 } }

    override func start(_ job: Job<String, String>, runtime: Runtime) {
        started.withLock { $0 += 1 }
        starts.yield(job.id)
        onStart?(job.id, runtime)
    }

    /// The id of the next job started.
    func nextJob() async -> UInt64 {
        guard let id = await iterator.next() else { fatalError("loader stream ended") }
        return id
    }
}

/// A core cell of strings on its own runtime, with a manual loader.
struct CoreFixture {
    let runtime: Runtime
    let cell: Cell<String, String>
    let log = EventLog<String, String>()
    let loader: ManualLoader

    init(flavor: CellFlavor = .loadable, delivery: DeliveryMode = .loop) throws {
        runtime = try Runtime(delivery: delivery)
        loader = ManualLoader(runtime: runtime)
        cell = Cell(id: runtime.table.makeID(.loadable), flavor: flavor, runtime: runtime, observer: log.observer)
        runtime.table.insert(cell)
    }

    func load(_ request: String, silent: Bool = false, options: LoadOptions = LoadOptions()) {
        var options = options
        options.silent = silent
        let spec = LoadSpec(loader: loader as Loader<String, String>, request: request, options: options)
        cell.noteLoadRequested(loader: loader.id)
        let cell = self.cell
        runtime.loop.execute { cell.load(spec) }
    }

    func refresh() {
        let cell = self.cell
        runtime.loop.execute { cell.refresh() }
    }

    func onLoop(_ body: @escaping (Cell<String, String>) -> Void) {
        let cell = self.cell
        runtime.loop.execute { body(cell) }
    }

    @discardableResult
    func submit(_ op: JobOperation<String>, _ job: UInt64) -> ResultCode {
        runtime.submit(op, job: job, of: Job<String, String>.self)
    }

    func close() {
        _ = runtime.close()
    }
}

/// Runs `body` from a synchronous context, so that overloads that start a
/// task (rather than awaiting in the caller) are chosen.
func startTask(_ body: () -> Void) {
    body()
}

/// A gate a loader can wait on until the test opens it.
final class Gate: @unchecked Sendable {
    private struct State {
        var open = false
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var next = 0
    }

    private let state = Locked(State())

    /// Returns once the gate is open, or once the waiting task is cancelled
    /// (so that a load that was superseded ends instead of waiting forever).
    func wait() async {
        let key = state.withLock { s -> Int in
            defer { s.next += 1 }
            return s.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { s -> Bool in
                    if s.open || Task.isCancelled { return true }
                    s.waiters[key] = c
                    return false
                }
                if resumeNow { c.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: key) }?.resume()
        }
    }

    var isOpen: Bool { state.withLock { $0.open } }

    func open() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.open = true
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for w in waiters { w.resume() }
    }
}

/// Collects the states of a Swift cell's stream.
final class StateRecorder<State: Sendable>: @unchecked Sendable {
    private var iterator: AsyncStream<State>.Iterator
    private(set) var history: [State] = []

    init(_ stream: AsyncStream<State>) {
        iterator = stream.makeAsyncIterator()
    }

    /// Reads states until one satisfies `done`; returns the whole history.
    @discardableResult
    func until(_ done: (State) -> Bool) async -> [State] {
        while let state = await iterator.next() {
            history.append(state)
            if done(state) { break }
        }
        return history
    }

    /// Reads exactly `n` more states.
    @discardableResult
    func take(_ n: Int) async -> [State] {
        for _ in 0..<n {
            guard let state = await iterator.next() else { break }
            history.append(state)
        }
        return history
    }
}

/// A small deterministic generator for the tests' random inputs (SplitMix64).
struct SplitMix {
    var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

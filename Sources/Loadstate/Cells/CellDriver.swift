import Observation

/// What the Swift cell classes share: a core cell, a thread-safe mirror of
/// its state in the public Swift type, the streams of states, interrupt
/// handlers, and the ways to start a load (in a task, or inline in the
/// caller's task).
///
/// The core cell lives on the loop thread; the mirror is updated there,
/// under a lock held only for the copy of one state, so any thread reads
/// it without waiting for the loop's work. Freeing the driver frees the
/// core cell (its running job is cancelled).
final class CellDriver<Value: Sendable, Request: Sendable, Public: Sendable>: @unchecked Sendable {
    struct Mirror {
        var state: Public
        var detail: CellState<Value, Request>
        var subscribers: [Int: AsyncStream<Public>.Continuation] = [:]
        var nextSubscriber = 0
        /// How many state changes the streams were given.
        var changes = 0
        /// A load asked for by this side of the cell whose first state is
        /// shown at once, before the loop starts it: its number, 0 when
        /// none waits. Until it starts, the states of earlier operations
        /// are not shown (they are older than the one shown).
        var predicted: UInt64 = 0
        var predictions: UInt64 = 0
        /// The predicted load started: its loading state, shown already, is
        /// not given to the streams a second time.
        var expectLoading = false
        /// The state shown came from a write's rollback (the event's flag).
        var rolledBack = false
    }

    let runtime: Runtime
    let core: Cell<Value, Request>
    private let translate: @Sendable (CellState<Value, Request>) -> Public
    private let mirror: Locked<Mirror>
    /// What every load the cell starts adds to its spec (any thread).
    let loadDefaults = Locked(CellLoadDefaults<Value>())
    /// Wraps each change of the mirror; the owner reports it to observers.
    private let changing: @Sendable (() -> Void) -> Void

    // Loop thread only.
    private var interrupt: (load: UInt64, call: InterruptCall, fired: Int)?
    private var lastInterruptCall: InterruptCall?
    /// The handler calls of the current load run one after the other.
    private var interruptChain: Task<Void, Never>?
    /// Callers of `loadAndWait`, by the load they wait for.
    private var loadWaiters: [(load: UInt64, done: CheckedContinuation<Void, Never>)] = []
    /// Callers of `loadOutcome`, by the load they wait for.
    private var outcomeWaiters: [(load: UInt64, done: CheckedContinuation<LoadOutcomeSeen, Never>)] = []

    /// How a load a caller of `loadOutcome` waited for ended.
    enum LoadOutcomeSeen: @unchecked Sendable {
        /// The state it ended in (loaded, error, a state restored by a cancel (`cancelled`), or reset).
        case ended(CellState<Value, Request>, cancelled: Bool)
        /// Its job finished without a value: the cell shows the state from
        /// before the load (given), which is not this load's answer.
        case withoutValue(CellState<Value, Request>)
        /// Another load of the cell replaced it; its request.
        case superseded(Request?)
        /// The cell was freed first.
        case freed
    }

    init(runtime: Runtime, flavor: CellFlavor, name: String? = nil, initial: Public,
         translate: @escaping @Sendable (CellState<Value, Request>) -> Public,
         changing: @escaping @Sendable (() -> Void) -> Void) {
        let relay = Relay()
        self.runtime = runtime
        self.translate = translate
        self.changing = changing
        mirror = Locked(Mirror(state: initial, detail: .initial(at: Clock.wallMs())))
        core = Cell(id: runtime.table.makeID(flavor == .loadable ? .loadable : .process), flavor: flavor,
                    runtime: runtime, observer: { _, event in relay.driver?.receive(event) })
        relay.driver = self
        core.name = HandleName.sanitized(name)
        runtime.table.insert(core)
    }

    deinit {
        core.markFreed()
        let core = self.core
        runtime.table.withLock { $0.handles[core.id] = nil }
        core.leave(skippable: false) { $0.free() }
        let subscribers = mirror.withLock { m in
            defer { m.subscribers = [:] }
            return Array(m.subscribers.values)
        }
        for s in subscribers { s.finish() }
        for w in loadWaiters { w.done.resume() }
        for w in outcomeWaiters { w.done.resume(returning: .freed) }
        // On the loop thread, the driver goes inside one of the core cell's
        // events (the last reference was the observer's): the runtime,
        // which the cell still uses, is released after that work, should
        // this be its last reference (see `Runtime`).
        if runtime.loop.isLoopThread {
            let runtime = self.runtime
            runtime.loop.execute { withExtendedLifetime(runtime) {} }
        }
    }

    private final class Relay: @unchecked Sendable {
        weak var driver: CellDriver?
    }

    // MARK: - Reading (any thread)

    var state: Public { mirror.withLock { $0.state } }
    var detail: CellState<Value, Request> { mirror.withLock { $0.detail } }
    /// The state shown and whether a write's rollback brought it.
    var detailAndRollback: (CellState<Value, Request>, Bool) { mirror.withLock { ($0.detail, $0.rolledBack) } }
    var isRefreshing: Bool { mirror.withLock { $0.detail.isRefreshing } }
    var isPartial: Bool { mirror.withLock { $0.detail.isPartial } }
    var isQueued: Bool { mirror.withLock { $0.detail.isQueued } }
    var isPaused: Bool { mirror.withLock { $0.detail.isPaused } }

    /// A stream of every state from now on, starting with the current one.
    func states() -> AsyncStream<Public> { countedStates().stream }

    /// `states()`, and how many state changes the streams were given before
    /// it (its first state is the one after them).
    func countedStates() -> (stream: AsyncStream<Public>, changes: Int) {
        let (stream, continuation) = AsyncStream<Public>.makeStream()
        let (key, changes) = mirror.withLock { m -> (Int, Int) in
            let key = m.nextSubscriber
            m.nextSubscriber += 1
            m.subscribers[key] = continuation
            continuation.yield(m.state)
            return (key, m.changes)
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.mirror.withLock { $0.subscribers.removeValue(forKey: key) }
        }
        return (stream, changes)
    }

    /// How many state changes the streams were given.
    var stateChanges: Int { mirror.withLock { $0.changes } }

    // MARK: - Loads

    /// A loader for one load whose body runs a closure; with a `queue` (of
    /// this runtime), its job waits for the queue's limits.
    func closureLoader(queue: LoadQueue? = nil,
                       _ body: @escaping SwiftLoader<Value, Request>.Body) -> SwiftLoader<Value, Request> {
        let loader = SwiftLoader<Value, Request>(id: runtime.table.makeID(.loader), body: body)
        if let queue, queue.runtime === runtime { loader.share(queue.admission) }
        return loader
    }

    /// Starts a load; its job runs as its loader says (a closure's in a new task).
    func load(_ spec: LoadSpec<Value, Request>, interrupts: InterruptCall?, mutation: MutationRun? = nil) {
        let spec = prepared(spec)
        let prediction = predict(spec)
        core.queueLeaving(loader: spec.loader.id) { [self] ticket in
            started(prediction)
            begin(spec, interrupts, ticket: ticket, mutation: mutation)
        }
    }

    /// The one place where a load's spec gets the cell's defaults (its
    /// host-signal policy, keeping previous values, its placeholder).
    private func prepared(_ spec: LoadSpec<Value, Request>) -> LoadSpec<Value, Request> {
        loadDefaults.withLock { $0 }.applied(to: spec)
    }

    /// Any thread: shows the first state of a load at once, as the loop
    /// will (loading with its request, or the current state flagged
    /// refreshing for a silent load), so that a view drawn right after
    /// `load` returns shows it. A load that uses a cache is not predicted:
    /// the cache may answer it without a loading state. Returns the
    /// prediction's number (0: none).
    private func predict(_ spec: LoadSpec<Value, Request>) -> UInt64 {
        if let cache = spec.cache, cache.policy != .loadOnly { return 0 }
        // A previous value or a placeholder is shown instead of loading: the loop decides which.
        if !spec.options.silent && (spec.options.keepsPrevious || spec.placeholder != nil) { return 0 }
        var number: UInt64 = 0
        let translate = self.translate
        changing { [mirror] in
            mirror.withLock { m in
                m.predictions &+= 1
                number = m.predictions
                m.predicted = number
                m.expectLoading = false
                m.rolledBack = false
                if spec.options.silent {
                    m.detail.isRefreshing = true
                    m.state = translate(m.detail)
                } else {
                    let loading = CellState<Value, Request>(status: .loading, kind: spec.kind, value: nil, error: nil,
                                                            request: spec.request, isPartial: false,
                                                            isRefreshing: false, attempt: 1, updatedAt: Clock.wallMs())
                    m.detail = loading
                    m.state = translate(loading)
                    m.changes += 1
                    for s in m.subscribers.values { s.yield(m.state) }
                }
            }
        }
        return number
    }

    /// Loop: the load of `prediction` starts (its states show again).
    private func started(_ prediction: UInt64) {
        guard prediction != 0 else { return }
        mirror.withLock { m in
            guard m.predicted == prediction else { return }
            m.predicted = 0
            m.expectLoading = m.detail.status == .loading && !m.detail.isRefreshing
        }
    }

    /// Starts a load and returns once it ended (its result is shown, or it
    /// was cancelled or superseded). Cancelling the caller cancels the load.
    func loadAndWait(_ spec: LoadSpec<Value, Request>, interrupts: InterruptCall?) async {
        let spec = prepared(spec)
        await withTaskCancellationHandler {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                let prediction = predict(spec)
                core.queueLeaving(loader: spec.loader.id) { [self] ticket in
                    started(prediction)
                    begin(spec, interrupts, ticket: ticket)
                    if let load = core.currentLoad {
                        loadWaiters.append((load, done))
                    } else {
                        done.resume()
                    }
                }
            }
        } onCancel: {
            cancel()
        }
    }

    /// Starts a load and returns how it ended: its final state, or the
    /// request of the load that superseded it. Cancelling the caller
    /// cancels the load.
    func loadOutcome(_ spec: LoadSpec<Value, Request>) async -> LoadOutcomeSeen {
        let spec = prepared(spec)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (done: CheckedContinuation<LoadOutcomeSeen, Never>) in
                let prediction = predict(spec)
                core.queueLeaving(loader: spec.loader.id) { [self] ticket in
                    started(prediction)
                    begin(spec, nil, ticket: ticket)
                    if let load = core.currentLoad {
                        outcomeWaiters.append((load, done))
                    } else {
                        // Answered at once (by its cache), or ended before it began.
                        done.resume(returning: .ended(core.state, cancelled: false))
                    }
                }
            }
        } onCancel: {
            cancel()
        }
    }

    /// Starts a load whose body runs in a child of the caller's task, and
    /// returns once the cell shows how it ended. Cancelling the caller
    /// cancels the load; cancelling the load cancels the body.
    func loadInline(_ spec: LoadSpec<Value, Request>, interrupts: InterruptCall?, mutation: MutationRun? = nil) async {
        let spec = prepared(spec)
        guard let loader = spec.loader as? SwiftLoader<Value, Request> else { return }
        let started = await withCheckedContinuation { caller in
            let prediction = predict(spec)
            core.queueLeaving(loader: loader.id) { [self] ticket in
                self.started(prediction)
                loader.inlineCaller = caller
                begin(spec, interrupts, ticket: ticket, mutation: mutation)
                loader.abandonInlineCaller()
            }
        }
        guard let started else { return }
        let context = started.context
        let cancelled = started.cancelled
        let body = loader.body
        await withTaskCancellationHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await SwiftLoader<Value, Request>.perform(body, started.request, context) }
                group.addTask { for await _ in cancelled {} }
                _ = await group.next()
                group.cancelAll()
            }
        } onCancel: {
            context.end(.cancelSelf)
        }
        await settled()
    }

    /// Returns once the load running now has ended (at once when none runs).
    func waitForLoad() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            runtime.loop.execute { [self] in
                if let load = core.currentLoad {
                    loadWaiters.append((load, done))
                } else {
                    done.resume()
                }
            }
        }
    }

    /// Reloads the last load silently. Returns false if there was none.
    @discardableResult
    func refresh() -> Bool {
        guard core.refreshLoaderID != nil else { return false }
        core.queueLeaving { [self] ticket in
            let call = lastInterruptCall
            core.refresh(ticket: ticket)
            remember(call)
        }
        return true
    }

    /// Gives the load under way another priority in its queue.
    func setPriority(_ priority: Int) {
        let value = Int32(clamping: priority)
        runtime.loop.execute { [core] in core.setPriority(value) }
    }

    func cancel() { core.stop(reset: false) }
    func reset() { core.stop(reset: true) }
    func setLoaded(_ value: Value) { core.leave { $0.setLoaded(value) } }
    func setError(_ error: LoadError) { core.leave { $0.setError(error) } }
    func setState(_ state: CellState<Value, Request>) { core.leave { $0.setState(state) } }

    /// Returns once everything queued for the loop before the call is done.
    func settled() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            runtime.loop.execute { done.resume() }
        }
    }

    /// Loop: starts the load and remembers its interrupt handler.
    private func begin(_ spec: LoadSpec<Value, Request>, _ interrupts: InterruptCall?, ticket: UInt64,
                       mutation: MutationRun? = nil) {
        if let mutation {
            // A write (`ProcessCell.mutate`) shows its values before the run starts.
            core.runMutation(mutation) { core.load(spec, ticket: ticket) }
        } else {
            core.load(spec, ticket: ticket)
        }
        remember(interrupts)
    }

    /// Loop: keeps the interrupt handler of the load just started.
    private func remember(_ call: InterruptCall?) {
        lastInterruptCall = call
        if let call, let load = core.currentLoad {
            interrupt = (load, call, 0)
        } else {
            interrupt = nil
        }
    }

    // MARK: - Events (loop thread)

    private func receive(_ event: CellEvent<Value, Request>) {
        switch event.type {
        case .interrupt:
            guard var current = interrupt, current.load == event.load else { return }
            current.fired += 1
            interrupt = current
            callInterruptHandler(current.call, current.call.interrupt(number: current.fired, elapsedMs: event.elapsedMs),
                                 load: event.load)
        case .progress:
            break
        case .state:
            let public_ = translate(event.state)
            changing { [mirror] in
                mirror.withLock { m in
                    // A later load shows its first state already.
                    if m.predicted != 0 { return }
                    let shownAlready = m.expectLoading && event.state.status == .loading
                    m.expectLoading = false
                    m.state = public_
                    m.detail = event.state
                    m.rolledBack = event.isRolledBack
                    if event.stateChanged && !shownAlready {
                        m.changes += 1
                        for s in m.subscribers.values { s.yield(public_) }
                    }
                }
            }
            if !loadWaiters.isEmpty {
                let running = core.currentLoad
                var waiting: [(load: UInt64, done: CheckedContinuation<Void, Never>)] = []
                for w in loadWaiters {
                    if w.load == running { waiting.append(w) } else { w.done.resume() }
                }
                loadWaiters = waiting
            }
            if !outcomeWaiters.isEmpty {
                let running = core.currentLoad
                var waiting: [(load: UInt64, done: CheckedContinuation<LoadOutcomeSeen, Never>)] = []
                for w in outcomeWaiters {
                    if w.load == running {
                        waiting.append(w)
                    } else if let running, event.load == running {
                        // A new load began: the awaited one was superseded.
                        w.done.resume(returning: .superseded(core.currentRequest))
                    } else if event.isWithoutValue {
                        w.done.resume(returning: .withoutValue(event.state))
                    } else {
                        w.done.resume(returning: .ended(event.state, cancelled: event.isCancelled))
                    }
                }
                outcomeWaiters = waiting
            }
        }
    }

    /// Runs the handler on its own actor, after the handler calls before
    /// it. What it throws fails the load it was called for, if that load
    /// still runs: `TimeoutError` as a timeout, `CancelLoadable` or
    /// `CancelProcess` cancel it, `ResetLoadable` or `ResetProcess` reset it.
    private func callInterruptHandler(_ call: InterruptCall, _ interrupt: Interrupt, load: UInt64) {
        let previous = interruptChain
        let core = self.core
        let loop = runtime.loop
        interruptChain = Task {
            await previous?.value
            do {
                try await call.handler(interrupt)
            } catch {
                let outcome = InterruptOutcome(error)
                loop.execute {
                    guard core.currentLoad == load else { return }
                    switch outcome {
                    case .fail(let failure): core.failLoad(load, with: failure)
                    case .cancel: core.stop(reset: false)
                    case .reset: core.stop(reset: true)
                    }
                }
            }
        }
    }
}

/// What an error thrown by an interrupt handler does to its load.
enum InterruptOutcome: Sendable {
    case fail(LoadError)
    case cancel
    case reset

    init(_ error: any Error) {
        switch error {
        case is CancelLoadable, is CancelProcess: self = .cancel
        case is ResetLoadable, is ResetProcess: self = .reset
        case is TimeoutError: self = .fail(LoadError(.timedOut, underlying: error))
        default: self = .fail(LoadError(domain: .host, code: 0, message: String(describing: error), underlying: error))
        }
    }
}

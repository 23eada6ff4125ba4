import Observation

/// What the Swift cell classes share: a core cell, a thread-safe mirror of
/// its state in the public Swift type, the streams of states, interrupt
/// handlers, and the ways to start a load (in a task, or inline in the
/// caller's task).
///
/// The core cell lives on the loop thread; the mirror is updated there,
/// under a lock, so any thread can read it. Freeing the driver frees the
/// core cell (its running job is cancelled).
final class CellDriver<Value: Sendable, Request: Sendable, Public: Sendable>: @unchecked Sendable {
    struct Mirror {
        var state: Public
        var isRefreshing = false
        var isPartial = false
        var isQueued = false
        var subscribers: [Int: AsyncStream<Public>.Continuation] = [:]
        var nextSubscriber = 0
    }

    let runtime: Runtime
    let core: Cell<Value, Request>
    private let translate: @Sendable (CellState<Value, Request>) -> Public
    private let mirror: Locked<Mirror>
    /// Wraps each change of the mirror; the owner reports it to observers.
    private let changing: @Sendable (() -> Void) -> Void

    // Loop thread only.
    private var interrupt: (load: UInt64, handler: InterruptHandler)?
    private var lastHandler: InterruptHandler?

    init(runtime: Runtime, flavor: CellFlavor, initial: Public,
         translate: @escaping @Sendable (CellState<Value, Request>) -> Public,
         changing: @escaping @Sendable (() -> Void) -> Void) {
        let relay = Relay()
        self.runtime = runtime
        self.translate = translate
        self.changing = changing
        mirror = Locked(Mirror(state: initial))
        core = Cell(id: runtime.table.makeID(flavor == .loadable ? .loadable : .process), flavor: flavor,
                    runtime: runtime, observer: { _, event in relay.driver?.receive(event) })
        relay.driver = self
        runtime.table.insert(core)
    }

    deinit {
        core.markFreed()
        let core = self.core
        runtime.table.withLock { $0.handles[core.id] = nil }
        core.leave { $0.free() }
        let subscribers = mirror.withLock { m in
            defer { m.subscribers = [:] }
            return Array(m.subscribers.values)
        }
        for s in subscribers { s.finish() }
    }

    private final class Relay: @unchecked Sendable {
        weak var driver: CellDriver?
    }

    // MARK: - Reading (any thread)

    var state: Public { mirror.withLock { $0.state } }
    var isRefreshing: Bool { mirror.withLock { $0.isRefreshing } }
    var isPartial: Bool { mirror.withLock { $0.isPartial } }
    var isQueued: Bool { mirror.withLock { $0.isQueued } }

    /// A stream of every state from now on, starting with the current one.
    func states() -> AsyncStream<Public> {
        let (stream, continuation) = AsyncStream<Public>.makeStream()
        let key = mirror.withLock { m -> Int in
            let key = m.nextSubscriber
            m.nextSubscriber += 1
            m.subscribers[key] = continuation
            continuation.yield(m.state)
            return key
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.mirror.withLock { $0.subscribers.removeValue(forKey: key) }
        }
        return stream
    }

    // MARK: - Loads

    /// Starts a load whose body runs in a new task.
    func load(_ settings: LoadSettings, request: Request, kind: Int32, onInterrupt: InterruptHandler?,
              body: @escaping SwiftLoader<Value, Request>.Body) {
        let spec = makeSpec(settings, request: request, kind: kind, body: body)
        let ticket = core.prepareLoad(loader: spec.loader.id)
        runtime.loop.execute { [self] in begin(spec, onInterrupt, ticket: ticket) }
    }

    /// Starts a load whose body runs in a child of the caller's task, and
    /// returns once the cell shows how it ended. Cancelling the caller
    /// cancels the load; cancelling the load cancels the body.
    func loadInline(_ settings: LoadSettings, request: Request, kind: Int32, onInterrupt: InterruptHandler?,
                    body: @escaping SwiftLoader<Value, Request>.Body) async {
        let spec = makeSpec(settings, request: request, kind: kind, body: body)
        guard let loader = spec.loader as? SwiftLoader<Value, Request> else { return }
        let ticket = core.prepareLoad(loader: loader.id)
        let started = await withCheckedContinuation { caller in
            runtime.loop.execute { [self] in
                loader.inlineCaller = caller
                begin(spec, onInterrupt, ticket: ticket)
                loader.abandonInlineCaller()
            }
        }
        guard let started else { return }
        let context = started.context
        let cancelled = started.cancelled
        await withTaskCancellationHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await SwiftLoader<Value, Request>.perform(body, context) }
                group.addTask { for await _ in cancelled {} }
                _ = await group.next()
                group.cancelAll()
            }
        } onCancel: {
            context.end(.cancelSelf)
        }
        await settled()
    }

    /// Reloads the last load silently. Returns false if there was none.
    @discardableResult
    func refresh() -> Bool {
        guard core.refreshLoaderID != nil else { return false }
        let ticket = core.requestLeave()
        runtime.loop.execute { [self] in
            let handler = lastHandler
            core.refresh(ticket: ticket)
            remember(handler)
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

    /// Returns once everything queued for the loop before the call is done.
    func settled() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            runtime.loop.execute { done.resume() }
        }
    }

    private func makeSpec(_ settings: LoadSettings, request: Request, kind: Int32,
                          body: @escaping SwiftLoader<Value, Request>.Body) -> LoadSpec<Value, Request> {
        let loader = SwiftLoader<Value, Request>(id: runtime.table.makeID(.loader), body: body)
        if let queue = settings.queue, queue.runtime === runtime { loader.share(queue.admission) }
        return LoadSpec(loader: loader, request: request, kind: kind, options: settings.options)
    }

    /// Loop: starts the load and remembers its interrupt handler.
    private func begin(_ spec: LoadSpec<Value, Request>, _ onInterrupt: InterruptHandler?, ticket: UInt64) {
        core.load(spec, ticket: ticket)
        remember(onInterrupt)
    }

    /// Loop: keeps the interrupt handler of the load just started.
    private func remember(_ onInterrupt: InterruptHandler?) {
        lastHandler = onInterrupt
        if let onInterrupt, let load = core.currentLoad {
            interrupt = (load, onInterrupt)
        } else {
            interrupt = nil
        }
    }

    // MARK: - Events (loop thread)

    private func receive(_ event: CellEvent<Value, Request>) {
        switch event.type {
        case .interrupt:
            guard let (load, handler) = interrupt, load == event.load else { return }
            do {
                try handler(.milliseconds(event.elapsedMs))
            } catch {
                let failure = error is TimeoutError
                    ? LoadError(.timedOut, underlying: error)
                    : LoadError(domain: .host, code: 0, message: String(describing: error), underlying: error)
                runtime.loop.execute { [core] in core.failLoad(load, with: failure) }
            }
        case .progress:
            break
        case .state:
            let public_ = translate(event.state)
            changing { [mirror] in
                mirror.withLock { m in
                    m.state = public_
                    m.isRefreshing = event.state.isRefreshing
                    m.isPartial = event.state.isPartial
                    m.isQueued = event.state.isQueued
                    if event.stateChanged {
                        for s in m.subscribers.values { s.yield(public_) }
                    }
                }
            }
        }
    }
}

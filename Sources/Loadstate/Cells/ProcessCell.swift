import Observation

/// A process for Swift programs (logging in, saving, deleting):
/// `idle → running(kind) → finished(kind) | failed(kind, error)`.
///
/// `run(kind) { ... }` cancels the running process, shows `.running(kind)`
/// (unless silent) and then `.finished(kind)` or `.failed(kind, error)`.
/// Two cells never affect each other.
public final class ProcessCell<ProcessKind: Sendable>: Observable, @unchecked Sendable {
    private let registrar = ObservationRegistrar()
    let driver: CellDriver<Void, ProcessKind, ProcessState<ProcessKind>>

    /// An idle process cell on `runtime`; `name` is what the runtime's
    /// inspector calls it, kept as a `LoadFunction`'s name.
    public init(runtime: Runtime = .shared, name: String? = nil) {
        let subject = WeakSubject<ProcessCell>()
        driver = CellDriver(runtime: runtime, flavor: .process, name: name, initial: .idle,
                            translate: ProcessCell.translate,
                            changing: subject.changes(of: \.state, registrar: registrar))
        subject.subject = self
    }

    /// The name the cell was made with, as kept (see `LoadFunction`).
    public var name: String? { driver.core.name }

    /// The current state.
    public var state: ProcessState<ProcessKind> {
        registrar.access(self, keyPath: \.state)
        return driver.state
    }

    /// A silent run goes on over the current state.
    public var isRefreshing: Bool { driver.isRefreshing }

    /// The run waits for its `LoadQueue`: its body has not started.
    public var isQueued: Bool { driver.isQueued }

    /// How the cell's runs follow the host's signals, as
    /// `LoadableCell.hostSignals`: applied to every run the cell starts
    /// from then on (a write waits, offline, by default). A process is
    /// never run again on returning to the foreground:
    /// `refreshOnForeground` does not apply to it.
    public var hostSignals: HostSignalPolicy {
        get { driver.loadDefaults.withLock { $0.hostSignals } }
        set { driver.loadDefaults.withLock { $0.hostSignals = newValue } }
    }

    /// Gives the run under way another priority in its queue, as
    /// `LoadableCell.setPriority`.
    public func setPriority(_ priority: Int) { driver.setPriority(priority) }

    /// Every state from now on, starting with the current one.
    public var states: AsyncStream<ProcessState<ProcessKind>> { driver.states() }

    /// Runs `body` as process `kind` in a new task, on the caller's actor;
    /// returns at once.
    ///
    /// With a `queue`, the run waits for its limits (`isQueued` meanwhile)
    /// at `priority` (higher first), and `body` runs once it starts.
    public func run(_ kind: ProcessKind, silently: Bool = false, timeout: Duration? = nil,
                    interrupts: [Duration] = [], retries: Int = 0, queue: LoadQueue? = nil, priority: Int = 0,
                    @_inheritActorContext _ body: sending @escaping @isolated(any) () async throws -> Void) {
        driver.load(spec(kind, LoadSettings(silently: silently, timeout: timeout, interrupts: interrupts,
                                            retries: retries, queue: queue, priority: priority), body),
                    interrupts: nil)
    }

    /// Runs `body` as process `kind` in a new task; `onInterrupt` runs at
    /// each of the `interrupts` delays while it runs. Both run on the
    /// caller's actor.
    public func run(_ kind: ProcessKind, silently: Bool = false, timeout: Duration? = nil,
                    interrupts: [Duration], retries: Int = 0,
                    @_inheritActorContext _ body: sending @escaping @isolated(any) () async throws -> Void,
                    @_inheritActorContext onInterrupt: sending @escaping @isolated(any) (Interrupt) async throws -> Void) {
        driver.load(spec(kind, LoadSettings(silently: silently, timeout: timeout, interrupts: interrupts,
                                            retries: retries), body),
                    interrupts: InterruptCall(handler: onInterrupt, delays: interrupts))
    }

    /// Runs `body` as process `kind` in the caller's task and returns when
    /// the cell shows the result. Cancelling the caller cancels the run.
    public func run(_ kind: ProcessKind, silently: Bool = false, timeout: Duration? = nil,
                    interrupts: [Duration] = [], retries: Int = 0,
                    @_inheritActorContext _ body: sending @escaping @isolated(any) () async throws -> Void) async {
        await driver.loadInline(spec(kind, LoadSettings(silently: silently, timeout: timeout, interrupts: interrupts,
                                                        retries: retries), body), interrupts: nil)
    }

    /// Runs `body` as process `kind` in the caller's task, with an
    /// interrupt handler, and returns when the cell shows the result.
    public func run(_ kind: ProcessKind, silently: Bool = false, timeout: Duration? = nil,
                    interrupts: [Duration], retries: Int = 0,
                    @_inheritActorContext _ body: sending @escaping @isolated(any) () async throws -> Void,
                    @_inheritActorContext onInterrupt: sending @escaping @isolated(any) (Interrupt) async throws -> Void)
        async {
        await driver.loadInline(spec(kind, LoadSettings(silently: silently, timeout: timeout, interrupts: interrupts,
                                                        retries: retries), body),
                                interrupts: InterruptCall(handler: onInterrupt, delays: interrupts))
    }

    private func spec(_ kind: ProcessKind, _ settings: LoadSettings,
                      _ body: @escaping @isolated(any) () async throws -> Void) -> LoadSpec<Void, ProcessKind> {
        let call = IsolatedBody<Void, Void>(body)
        let loader = driver.closureLoader(queue: settings.queue) { _, _ in try await call(()) }
        return LoadSpec(loader: loader, request: kind, options: settings.options)
    }

    /// Cancels the running process; the state before it comes back.
    public func cancel() { driver.cancel() }

    /// Cancels the running process and makes the cell `.idle`.
    public func reset() { driver.reset() }

    /// Cancels the running process and shows `state`: full manual control
    /// (`.running(kind)` shows a run with no process behind it until the
    /// next call).
    public func setState(_ state: ProcessState<ProcessKind>) {
        let status: Status
        var error: LoadError?
        switch state {
        case .idle: return driver.reset()
        case .running: status = .loading
        case .finished: status = .loaded
        case .failed(_, let failure):
            status = .error
            error = LoadError(domain: .host, code: 0, message: String(describing: failure), underlying: failure)
        }
        driver.setState(CellState(status: status, kind: 0, value: nil, error: error, request: state.process,
                                  isPartial: false, isRefreshing: false, attempt: 0, updatedAt: Clock.wallMs()))
    }

    /// Returns once every call made on the cell before it has taken effect.
    public func settled() async { await driver.settled() }

    /// Returns once the run that runs when the calls made before this one
    /// have taken effect has ended. At once when none runs.
    public func waitForRun() async { await driver.waitForLoad() }

    @Sendable
    static func translate(_ state: CellState<Void, ProcessKind>) -> ProcessState<ProcessKind> {
        guard let kind = state.request else { return .idle }
        switch state.status {
        case .absent: return .idle
        case .loading: return .running(kind)
        case .loaded: return .finished(kind)
        case .error:
            let error = state.error ?? LoadError(.io)
            return .failed(process: kind, error: error.underlying ?? error)
        }
    }
}

extension ProcessCell where ProcessKind == SingleProcess {
    /// A single-purpose process: runs `body` in a new task.
    public func run(silently: Bool = false,
                    @_inheritActorContext _ body: sending @escaping @isolated(any) () async throws -> Void) {
        run(.process, silently: silently, body)
    }

    /// A single-purpose process: runs `body` in the caller's task and
    /// returns when the cell shows the result.
    public func run(silently: Bool = false,
                    @_inheritActorContext _ body: sending @escaping @isolated(any) () async throws -> Void) async {
        await run(.process, silently: silently, body)
    }
}

/// The kind of a process cell that runs one kind of process only.
public enum SingleProcess: Hashable, Sendable {
    /// The process.
    case process
}

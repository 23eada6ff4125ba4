import Observation

/// A process for Swift programs (logging in, saving, deleting):
/// `idle → running(kind) → finished(kind) | failed(kind, error)`.
///
/// `run(kind) { ... }` cancels the running process, shows `.running(kind)`
/// (unless silent) and then `.finished(kind)` or `.failed(kind, error)`.
/// Two cells never affect each other.
public final class ProcessCell<ProcessKind: Sendable>: Observable, @unchecked Sendable {
    private let registrar = ObservationRegistrar()
    private let driver: CellDriver<Void, ProcessKind, ProcessState<ProcessKind>>

    public init(runtime: Runtime = .shared) {
        let subject = WeakSubject<ProcessCell>()
        driver = CellDriver(runtime: runtime, flavor: .process, initial: .idle,
                            translate: ProcessCell.translate,
                            changing: subject.changes(of: \.state, registrar: registrar))
        subject.subject = self
    }

    /// The current state.
    public var state: ProcessState<ProcessKind> {
        registrar.access(self, keyPath: \.state)
        return driver.state
    }

    /// A silent run goes on over the current state.
    public var isRefreshing: Bool { driver.isRefreshing }

    /// The run waits for its `LoadQueue`: its body has not started.
    public var isQueued: Bool { driver.isQueued }

    /// Gives the run under way another priority in its queue, as
    /// `LoadableCell.setPriority`.
    public func setPriority(_ priority: Int) { driver.setPriority(priority) }

    /// Every state from now on, starting with the current one.
    public var states: AsyncStream<ProcessState<ProcessKind>> { driver.states() }

    /// Runs `body` as process `kind` in a new task; with a `queue`, once
    /// its limits let it (at `priority`, higher first; `isQueued` meanwhile).
    public func run(_ kind: ProcessKind, silently: Bool = false, timeout: Duration? = nil,
                    interrupts: [Duration] = [], retries: Int = 0, queue: LoadQueue? = nil, priority: Int = 0,
                    onInterrupt: InterruptHandler? = nil,
                    _ body: @escaping @Sendable () async throws -> Void) {
        let settings = LoadSettings(silently: silently, timeout: timeout, interrupts: interrupts, retries: retries,
                                    queue: queue, priority: priority)
        driver.load(settings, request: kind, kind: 0, onInterrupt: onInterrupt) { _ in try await body() }
    }

    /// Runs `body` as process `kind` in the caller's task and returns when
    /// the cell shows the result. Cancelling the caller cancels the run.
    public func run(_ kind: ProcessKind, silently: Bool = false, timeout: Duration? = nil,
                    interrupts: [Duration] = [], retries: Int = 0, onInterrupt: InterruptHandler? = nil,
                    _ body: @escaping @Sendable () async throws -> Void) async {
        let settings = LoadSettings(silently: silently, timeout: timeout, interrupts: interrupts, retries: retries)
        await driver.loadInline(settings, request: kind, kind: 0, onInterrupt: onInterrupt) { _ in try await body() }
    }

    /// Cancels the running process; the state before it comes back.
    public func cancel() { driver.cancel() }

    /// Cancels the running process and makes the cell `.idle`.
    public func reset() { driver.reset() }

    /// Returns once every call made on the cell before it has taken effect.
    public func settled() async { await driver.settled() }

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

extension ProcessCell where ProcessKind == Int {
    /// A single-purpose process: runs `body` as kind 0.
    public func run(silently: Bool = false, _ body: @escaping @Sendable () async throws -> Void) {
        run(0, silently: silently, body)
    }
}

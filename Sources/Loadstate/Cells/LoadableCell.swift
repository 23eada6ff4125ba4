import Observation

/// A value that loads, for Swift programs: `absent → loading → loaded | error`.
///
/// Each `load` cancels the running one, shows `.loading` (unless silent),
/// runs its closure and shows the result. A cancelled or superseded load
/// never writes its result. The cell is `Observable`; `state` may be read
/// from any thread, and `states` streams every change.
///
///     let numbers = LoadableCell<[Int]>()
///     numbers.load {
///         try await Task.sleep(for: .milliseconds(10))
///         return [42]
///     }
///
/// All cells run on a `Runtime` (`Runtime.shared` by default), on its loop
/// thread; the closures run in tasks.
public final class LoadableCell<Value: Sendable>: Observable, @unchecked Sendable {
    private let registrar = ObservationRegistrar()
    private let driver: CellDriver<Value, Void, LoadableState<Value>>

    public init(runtime: Runtime = .shared) {
        let subject = WeakSubject<LoadableCell>()
        driver = CellDriver(runtime: runtime, flavor: .loadable, initial: .absent,
                            translate: LoadableCell.translate,
                            changing: subject.changes(of: \.state, registrar: registrar))
        subject.subject = self
    }

    /// The current state.
    public var state: LoadableState<Value> {
        registrar.access(self, keyPath: \.state)
        return driver.state
    }

    /// A silent load or refresh runs over the current state.
    public var isRefreshing: Bool { driver.isRefreshing }

    /// The loaded value was yielded by a load that still runs.
    public var isPartial: Bool { driver.isPartial }

    /// The load waits for its `LoadQueue`: its body has not started.
    public var isQueued: Bool { driver.isQueued }

    /// Gives the load under way another priority: a load that still waits
    /// in its queue moves to its place for the new priority (a running one
    /// is not affected). Kept for `refresh`.
    public func setPriority(_ priority: Int) { driver.setPriority(priority) }

    /// Every state from now on, starting with the current one. Silent loads
    /// add no state of their own: only their results appear.
    public var states: AsyncStream<LoadableState<Value>> { driver.states() }

    /// Starts a load in a new task; `body` returns the value.
    ///
    /// With a `queue`, the load waits for its limits (`isQueued` meanwhile),
    /// at `priority` (higher first). With a `refreshInterval`, the cell
    /// polls: it reloads silently that long after each successful load,
    /// until a failure, `cancel`, `reset`, `setValue`, `setError` or a new load.
    public func load(silently: Bool = false, timeout: Duration? = nil, interrupts: [Duration] = [],
                     retries: Int = 0, queue: LoadQueue? = nil, priority: Int = 0,
                     refreshInterval: Duration? = nil, onInterrupt: InterruptHandler? = nil,
                     _ body: @escaping @Sendable () async throws -> Value) {
        let settings = LoadSettings(silently: silently, timeout: timeout, interrupts: interrupts, retries: retries,
                                    queue: queue, priority: priority, refreshInterval: refreshInterval)
        driver.load(settings, request: (), kind: 0, onInterrupt: onInterrupt) { _ in try await body() }
    }

    /// Starts a load in a new task; `body` yields values as they come, and
    /// the last one stays when it returns. `queue`, `priority` and
    /// `refreshInterval` as for the load that returns its value.
    public func load(silently: Bool = false, timeout: Duration? = nil, interrupts: [Duration] = [],
                     retries: Int = 0, queue: LoadQueue? = nil, priority: Int = 0,
                     refreshInterval: Duration? = nil, onInterrupt: InterruptHandler? = nil,
                     _ body: @escaping @Sendable (Yield<Value>) async throws -> Void) {
        let settings = LoadSettings(silently: silently, timeout: timeout, interrupts: interrupts, retries: retries,
                                    queue: queue, priority: priority, refreshInterval: refreshInterval)
        driver.load(settings, request: (), kind: 0, onInterrupt: onInterrupt) { context in
            try await body(Yield(context: context))
            return nil
        }
    }

    /// Loads in the caller's task and returns when the cell shows the
    /// result. Cancelling the caller cancels the load.
    public func load(silently: Bool = false, timeout: Duration? = nil, interrupts: [Duration] = [],
                     retries: Int = 0, onInterrupt: InterruptHandler? = nil,
                     _ body: @escaping @Sendable () async throws -> Value) async {
        let settings = LoadSettings(silently: silently, timeout: timeout, interrupts: interrupts, retries: retries)
        await driver.loadInline(settings, request: (), kind: 0, onInterrupt: onInterrupt) { _ in try await body() }
    }

    /// Loads with yielded values in the caller's task and returns when the
    /// cell shows the result.
    public func load(silently: Bool = false, timeout: Duration? = nil, interrupts: [Duration] = [],
                     retries: Int = 0, onInterrupt: InterruptHandler? = nil,
                     _ body: @escaping @Sendable (Yield<Value>) async throws -> Void) async {
        let settings = LoadSettings(silently: silently, timeout: timeout, interrupts: interrupts, retries: retries)
        await driver.loadInline(settings, request: (), kind: 0, onInterrupt: onInterrupt) { context in
            try await body(Yield(context: context))
            return nil
        }
    }

    /// Reloads the last load silently: the current state stays visible until
    /// the new result replaces it. Returns false when nothing was loaded yet.
    @discardableResult
    public func refresh() -> Bool { driver.refresh() }

    /// Cancels the running load; the state before it comes back.
    public func cancel() { driver.cancel() }

    /// Cancels the running load and makes the cell `.absent`.
    public func reset() { driver.reset() }

    /// Cancels the running load and shows `value`.
    public func setValue(_ value: Value) { driver.setLoaded(value) }

    /// Cancels the running load and shows `error`.
    public func setError(_ error: any Error) {
        driver.setError(LoadError(domain: .host, code: 0, message: String(describing: error), underlying: error))
    }

    /// Returns once every call made on the cell before it has taken effect.
    public func settled() async { await driver.settled() }

    @Sendable
    static func translate(_ state: CellState<Value, Void>) -> LoadableState<Value> {
        switch state.status {
        case .absent: return .absent
        case .loading: return .loading
        case .loaded:
            guard let value = state.value else { return .absent }
            return .loaded(value)
        case .error:
            let error = state.error ?? LoadError(.io)
            return .error(error.underlying ?? error)
        }
    }
}

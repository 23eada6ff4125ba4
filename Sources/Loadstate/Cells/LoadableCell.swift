import Observation

/// A loadable cell without requests: its loads are closures. The
/// Processed vocabulary: `load { ... }`, `load { yield in ... }`,
/// `cancel()`, `reset()`, `refresh()`.
public typealias LoadableCell<Value: Sendable> = LoadableCellWith<Void, Value>

/// A value that loads, for Swift programs: `absent → loading → loaded |
/// error`, and the request each state belongs to.
///
/// Each `load` cancels the running one, shows `.loading` (unless silent),
/// runs its loader or closure and shows the result. The first state shows
/// before `load` returns (`.loading` with the request, or the current
/// state flagged refreshing for a silent load), so a view drawn right
/// after the call shows it; a load that uses a cache shows its first state
/// when the loop has asked the cache. A cancelled or
/// superseded load never writes its result; a cancel brings back the
/// state from before the load. `refresh()` reloads the last request
/// silently: the old value stays visible, flagged refreshing, until the
/// new one replaces it (after a failure too).
///
///     let user = LoadableCellWith(loader: users, cache: userCache)
///     user.load(42)
///     user.snapshot.request   // 42, in every state of that load
///     user.refresh()
///
/// The cell is `Observable`; `state` and `snapshot` may be read from any
/// thread or actor without waiting for the loop's work, and `states`
/// streams every change. Closures passed to `load` run on the actor they
/// were written on (the main actor in a `@MainActor` view model), so they
/// may use its state; outside any actor they run on the global executor.
/// All cells run on a `Runtime` (`Runtime.shared` by default), whose loop
/// thread owns their state machines.
public final class LoadableCellWith<Request: Sendable, Value: Sendable>: Observable, @unchecked Sendable {
    private let registrar = ObservationRegistrar()
    let driver: CellDriver<Value, Request, LoadableState<Value>>
    /// The loader `load(_:)` runs, if the cell was made with one.
    public let loader: LoadFunction<Request, Value>?
    /// The cache the cell's loads use, if any.
    public let cache: LoadCache<Request, Value>?

    /// A cell whose loads are closures given to `load`. `name` is what the
    /// runtime's inspector calls the cell, kept as a `LoadFunction`'s name.
    public init(runtime: Runtime = .shared, name: String? = nil) {
        loader = nil
        cache = nil
        let subject = WeakSubject<LoadableCellWith>()
        driver = CellDriver(runtime: runtime, flavor: .loadable, name: name, initial: .absent,
                            translate: LoadableCellWith.translate,
                            changing: subject.changes(of: \.state, registrar: registrar))
        subject.subject = self
    }

    /// A cell whose `load(_:)` runs `loader`, reading and filling `cache`
    /// when one is given; `name` as for `init(runtime:name:)`.
    public init(runtime: Runtime = .shared, name: String? = nil, loader: LoadFunction<Request, Value>,
                cache: LoadCache<Request, Value>? = nil) {
        self.loader = loader
        self.cache = cache
        let subject = WeakSubject<LoadableCellWith>()
        driver = CellDriver(runtime: runtime, flavor: .loadable, name: name, initial: .absent,
                            translate: LoadableCellWith.translate,
                            changing: subject.changes(of: \.state, registrar: registrar))
        subject.subject = self
    }

    /// The name the cell was made with, as kept (see `LoadFunction`).
    public var name: String? { driver.core.name }

    /// The current state.
    public var state: LoadableState<Value> {
        registrar.access(self, keyPath: \.state)
        return driver.state
    }

    /// The current state with its request and flags.
    public var snapshot: LoadableSnapshot<Request, Value> {
        registrar.access(self, keyPath: \.state)
        let (detail, rolledBack) = driver.detailAndRollback
        var snapshot = LoadableSnapshot(detail, state: Self.translate(detail))
        snapshot.isRolledBack = rolledBack
        return snapshot
    }

    /// The request of the load the current state belongs to.
    public var request: Request? { snapshot.request }

    /// A silent load or refresh runs over the current state.
    public var isRefreshing: Bool { driver.isRefreshing }

    /// The loaded value was yielded by a load that still runs.
    public var isPartial: Bool { driver.isPartial }

    /// The load waits for its `LoadQueue`: its body has not started.
    public var isQueued: Bool { driver.isQueued }

    /// The value shown answers an earlier request, kept while a load of
    /// another request runs (see `load(_:keepingPrevious:)`).
    public var isPrevious: Bool { snapshot.isPrevious }

    /// The value shown is the running load's placeholder.
    public var isPlaceholder: Bool { snapshot.isPlaceholder }

    /// The value shown came back by a write's rollback (see
    /// `LoadableSnapshot.isRolledBack`).
    public var isRolledBack: Bool { snapshot.isRolledBack }
    /// The load waits for the runtime to be online (`Runtime.setOnline`):
    /// its loader has not been called for this attempt.
    public var isPaused: Bool { driver.isPaused }

    /// How the cell's loads follow the host's signals (offline mode,
    /// refresh on foreground, polling in the background): applied to every
    /// load the cell starts from then on, whatever its overload.
    ///
    ///     feed.hostSignals.offline = .fail
    ///     feed.hostSignals.refreshOnForeground = .every(.seconds(5))
    public var hostSignals: HostSignalPolicy {
        get { driver.loadDefaults.withLock { $0.hostSignals } }
        set { driver.loadDefaults.withLock { $0.hostSignals = newValue } }
    }

    /// Every load the cell starts from then on keeps previous values, as
    /// `load(_:keepingPrevious:)` does: while a load of another request
    /// runs, the loaded value stays shown, flagged previous. The closure
    /// loads follow it too. False by default; a load's own
    /// `keepingPrevious: true` applies whatever this says.
    public var keepsPrevious: Bool {
        get { driver.loadDefaults.withLock { $0.keepsPrevious } }
        set { driver.loadDefaults.withLock { $0.keepsPrevious = newValue } }
    }

    /// Shown, flagged placeholder, while any load the cell starts from then
    /// on runs and nothing else would be (see `load(_:placeholder:)`);
    /// never cached. A load's own `placeholder:` replaces it. Nil by default.
    public var placeholder: Value? {
        get { driver.loadDefaults.withLock { $0.placeholder } }
        set { driver.loadDefaults.withLock { $0.placeholder = newValue } }
    }

    /// Gives the load under way another priority: a load that still waits
    /// in its queue moves to its place for the new priority (a running one
    /// is not affected). Kept for `refresh`.
    public func setPriority(_ priority: Int) { driver.setPriority(priority) }

    /// Every state from now on, starting with the current one. Silent loads
    /// add no state of their own: only their results appear.
    public var states: AsyncStream<LoadableState<Value>> { driver.states() }

    // MARK: - Loads with the cell's loader

    /// Loads `request` with the cell's loader, in a job of its own (or one
    /// shared with other cells), and returns at once. `policy` overrides the
    /// cache's policy for this load. Without a loader the cell shows an
    /// error (`ResultCode.wrongState`).
    ///
    /// `keepingPrevious`: while the load runs, a loaded value of another
    /// request stays shown (`snapshot.isPrevious`, with its own request)
    /// instead of loading. `placeholder`: shown as loaded
    /// (`snapshot.isPlaceholder`) while the load runs and nothing else
    /// would be (no cached value, no previous value kept); never cached.
    public func load(_ request: Request, silently: Bool = false, timeout: Duration? = nil,
                     interrupts: [Duration] = [], retries: Int = 0, policy: CachePolicy? = nil,
                     keepingPrevious: Bool = false, placeholder: Value? = nil) {
        var settings = LoadSettings(silently: silently, timeout: timeout, interrupts: interrupts, retries: retries)
        settings.keepsPrevious = keepingPrevious
        guard let spec = loaderSpec(request, settings, policy: policy, placeholder: placeholder) else { return }
        driver.load(spec, interrupts: nil)
    }

    /// Loads `request` with the cell's loader; `onInterrupt` runs at each
    /// of the `interrupts` delays while the load runs, on the caller's actor.
    public func load(_ request: Request, silently: Bool = false, timeout: Duration? = nil,
                     interrupts: [Duration], retries: Int = 0, policy: CachePolicy? = nil,
                     @_inheritActorContext onInterrupt: sending @escaping @isolated(any) (Interrupt) async throws -> Void) {
        let settings = LoadSettings(silently: silently, timeout: timeout, interrupts: interrupts, retries: retries)
        guard let spec = loaderSpec(request, settings, policy: policy) else { return }
        driver.load(spec, interrupts: InterruptCall(handler: onInterrupt, delays: interrupts))
    }

    /// Loads `request` with the cell's loader and returns once the load
    /// ended (its result is shown, or it was cancelled or superseded).
    /// Cancelling the caller cancels the load. `keepingPrevious` and
    /// `placeholder` as for the load that returns at once.
    public func load(_ request: Request, silently: Bool = false, timeout: Duration? = nil,
                     interrupts: [Duration] = [], retries: Int = 0, policy: CachePolicy? = nil,
                     keepingPrevious: Bool = false, placeholder: Value? = nil) async {
        var settings = LoadSettings(silently: silently, timeout: timeout, interrupts: interrupts, retries: retries)
        settings.keepsPrevious = keepingPrevious
        guard let spec = loaderSpec(request, settings, policy: policy, placeholder: placeholder) else {
            return await settled()
        }
        await driver.loadAndWait(spec, interrupts: nil)
    }

    /// Loads `request` with the cell's loader, with an interrupt handler,
    /// and returns once the load ended.
    public func load(_ request: Request, silently: Bool = false, timeout: Duration? = nil,
                     interrupts: [Duration], retries: Int = 0, policy: CachePolicy? = nil,
                     @_inheritActorContext onInterrupt: sending @escaping @isolated(any) (Interrupt) async throws -> Void)
        async {
        let settings = LoadSettings(silently: silently, timeout: timeout, interrupts: interrupts, retries: retries)
        guard let spec = loaderSpec(request, settings, policy: policy) else { return await settled() }
        await driver.loadAndWait(spec, interrupts: InterruptCall(handler: onInterrupt, delays: interrupts))
    }

    /// Loads `request` with the cell's loader and returns its value: what
    /// Python's `await cell.get(request)` is. The cell shows the load as
    /// `load` does.
    ///
    /// - Throws: `LoadSuperseded` when another load of the cell replaced
    ///   this one before it ended (the caller never receives the value of a
    ///   request it did not ask for); the load's error when it failed (the
    ///   loader's own error, or a `LoadError`); `CancellationError` when it
    ///   was cancelled or reset, the cell freed, or the caller cancelled
    ///   (which cancels the load); `LoadWithoutValue` when its job finished
    ///   without a value (the cell shows its state from before the load
    ///   again, whatever request that state answers). With `keepingPrevious`
    ///   (see `load`) or a placeholder, the value returned is always this
    ///   request's, never the previous one or the placeholder.
    public func get(_ request: Request, silently: Bool = false, timeout: Duration? = nil,
                    retries: Int = 0, policy: CachePolicy? = nil, keepingPrevious: Bool = false,
                    placeholder: Value? = nil) async throws -> Value {
        var settings = LoadSettings(silently: silently, timeout: timeout, interrupts: [], retries: retries)
        settings.keepsPrevious = keepingPrevious
        guard let spec = loaderSpec(request, settings, policy: policy, placeholder: placeholder) else {
            throw LoadError(.wrongState, message: "the cell has no loader: pass a closure to load")
        }
        switch await driver.loadOutcome(spec) {
        case .superseded(let by):
            throw LoadSuperseded(request: by)
        case .freed:
            throw CancellationError()
        case .withoutValue:
            throw LoadWithoutValue(request: request)
        case .ended(let state, let cancelled):
            if cancelled { throw CancellationError() }
            switch Self.translate(state) {
            case .loaded(let value): return value
            case .error(let error): throw error
            case .absent, .loading: throw CancellationError()
            }
        }
    }

    // MARK: - Loads with a closure

    /// Loads `request` with `body`, which runs in a new task on the
    /// caller's actor; returns at once. `refresh()` runs `body` again.
    public func load(_ request: Request, silently: Bool = false, timeout: Duration? = nil,
                     interrupts: [Duration] = [], retries: Int = 0,
                     @_inheritActorContext _ body: sending @escaping @isolated(any) (Request) async throws -> Value) {
        driver.load(closureSpec(request, LoadSettings(silently: silently, timeout: timeout, interrupts: interrupts,
                                                      retries: retries), body), interrupts: nil)
    }

    /// Loads `request` with `body`; `onInterrupt` runs at each of the
    /// `interrupts` delays while the load runs. Both run on the caller's actor.
    public func load(_ request: Request, silently: Bool = false, timeout: Duration? = nil,
                     interrupts: [Duration], retries: Int = 0,
                     @_inheritActorContext _ body: sending @escaping @isolated(any) (Request) async throws -> Value,
                     @_inheritActorContext onInterrupt: sending @escaping @isolated(any) (Interrupt) async throws -> Void) {
        driver.load(closureSpec(request, LoadSettings(silently: silently, timeout: timeout, interrupts: interrupts,
                                                      retries: retries), body),
                    interrupts: InterruptCall(handler: onInterrupt, delays: interrupts))
    }

    /// Loads `request` with `body` in the caller's task and returns once
    /// the cell shows the result. Cancelling the caller cancels the load.
    public func load(_ request: Request, silently: Bool = false, timeout: Duration? = nil,
                     interrupts: [Duration] = [], retries: Int = 0,
                     @_inheritActorContext _ body: sending @escaping @isolated(any) (Request) async throws -> Value) async {
        await driver.loadInline(closureSpec(request, LoadSettings(silently: silently, timeout: timeout,
                                                                  interrupts: interrupts, retries: retries), body),
                                interrupts: nil)
    }

    /// Loads `request` with `body` in the caller's task, with an interrupt
    /// handler, and returns once the cell shows the result.
    public func load(_ request: Request, silently: Bool = false, timeout: Duration? = nil,
                     interrupts: [Duration], retries: Int = 0,
                     @_inheritActorContext _ body: sending @escaping @isolated(any) (Request) async throws -> Value,
                     @_inheritActorContext onInterrupt: sending @escaping @isolated(any) (Interrupt) async throws -> Void)
        async {
        await driver.loadInline(closureSpec(request, LoadSettings(silently: silently, timeout: timeout,
                                                                  interrupts: interrupts, retries: retries), body),
                                interrupts: InterruptCall(handler: onInterrupt, delays: interrupts))
    }

    // MARK: - Control

    /// Reloads the last load's request silently: the current state stays
    /// visible, flagged refreshing, until the new result replaces it. A
    /// load that used a cache asks its loader again and stores the result.
    /// Returns false when nothing was loaded yet.
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

    /// Cancels the running load and shows `state`: full manual control
    /// (`.loading` shows loading with no load behind it until the next call).
    public func setState(_ state: LoadableState<Value>) {
        switch state {
        case .absent: driver.reset()
        case .loading:
            driver.setState(CellState(status: .loading, kind: 0, value: nil, error: nil, request: nil,
                                      isPartial: false, isRefreshing: false, attempt: 0, updatedAt: Clock.wallMs()))
        case .error(let error): setError(error)
        case .loaded(let value): driver.setLoaded(value)
        }
    }

    /// Returns once every call made on the cell before it has taken effect.
    public func settled() async { await driver.settled() }

    /// Returns once the load that runs when the calls made before this one
    /// have taken effect has ended: its result is shown, or it was
    /// cancelled or superseded. At once when no load runs.
    ///
    ///     user.refresh()
    ///     await user.waitForLoad()   // the refreshed value is shown
    public func waitForLoad() async { await driver.waitForLoad() }

    // MARK: - Specs

    private func loaderSpec(_ request: Request, _ settings: LoadSettings,
                            policy: CachePolicy?, placeholder: Value? = nil) -> LoadSpec<Value, Request>? {
        guard let loader else {
            driver.setError(LoadError(.wrongState, message: "the cell has no loader: pass a closure to load"))
            return nil
        }
        let cacheUse = cache?.use(for: request, policy: policy)
        var options = settings.options
        options.shareKey = loader.shareKey(for: request, cacheKey: cacheUse?.key)
        var spec = LoadSpec(loader: loader.loader, request: request, options: options, cache: cacheUse)
        spec.placeholder = placeholder
        return spec
    }

    private func closureSpec(_ request: Request, _ settings: LoadSettings,
                             _ body: @escaping @isolated(any) (Request) async throws -> Value) -> LoadSpec<Value, Request> {
        let call = IsolatedBody(body)
        let loader = driver.closureLoader { request, _ in try await call(request) }
        return LoadSpec(loader: loader, request: request, options: settings.options)
    }

    @Sendable
    static func translate(_ state: CellState<Value, Request>) -> LoadableState<Value> {
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

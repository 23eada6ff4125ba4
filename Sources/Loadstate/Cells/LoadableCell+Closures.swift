/// The Processed forms of `load`, for cells without requests: the closure
/// last, so that it can trail, and `onInterrupt:` after it.
///
///     numbers.load(interrupts: [.seconds(2), .seconds(3)]) {
///         try await api.numbers()
///     } onInterrupt: { interrupt in
///         if interrupt == .seconds(5) { throw TimeoutError() }
///         showSlowHint = true
///     }
///
/// Without `await` a load starts a task and returns at once; with `await`
/// (in an async context) it runs in the caller's task and returns once
/// the cell shows the result. The closures run on the caller's actor.
extension LoadableCellWith where Request == Void {
    /// Starts a load in a new task; `body` returns the value.
    ///
    /// With a `queue`, the load waits for its limits (`isQueued` meanwhile)
    /// at `priority` (higher first), and its closure runs once it starts.
    /// With a `refreshInterval`, the cell polls: it reloads silently that
    /// long after each successful load, until a failure, `cancel`, `reset`,
    /// a state set by hand or a new load.
    public func load(silently: Bool = false, timeout: Duration? = nil, interrupts: [Duration] = [], retries: Int = 0,
                     queue: LoadQueue? = nil, priority: Int = 0, refreshInterval: Duration? = nil,
                     @_inheritActorContext _ body: sending @escaping @isolated(any) () async throws -> Value) {
        driver.load(valueSpec(LoadSettings(silently: silently, timeout: timeout, interrupts: interrupts,
                                           retries: retries, queue: queue, priority: priority,
                                           refreshInterval: refreshInterval), body), interrupts: nil)
    }

    /// Starts a load in a new task; `onInterrupt` runs at each of the
    /// `interrupts` delays while it runs.
    public func load(silently: Bool = false, timeout: Duration? = nil, interrupts: [Duration], retries: Int = 0,
                     queue: LoadQueue? = nil, priority: Int = 0, refreshInterval: Duration? = nil,
                     @_inheritActorContext _ body: sending @escaping @isolated(any) () async throws -> Value,
                     @_inheritActorContext onInterrupt: sending @escaping @isolated(any) (Interrupt) async throws -> Void) {
        driver.load(valueSpec(LoadSettings(silently: silently, timeout: timeout, interrupts: interrupts,
                                           retries: retries, queue: queue, priority: priority,
                                           refreshInterval: refreshInterval), body),
                    interrupts: InterruptCall(handler: onInterrupt, delays: interrupts))
    }

    /// Starts a load in a new task; `body` yields values as they come, and
    /// the last one stays when it returns. `queue`, `priority` and
    /// `refreshInterval` as for the load that returns its value.
    public func load(silently: Bool = false, timeout: Duration? = nil, interrupts: [Duration] = [], retries: Int = 0,
                     queue: LoadQueue? = nil, priority: Int = 0, refreshInterval: Duration? = nil,
                     @_inheritActorContext _ body: sending @escaping @isolated(any) (Yield<Value>) async throws -> Void) {
        driver.load(yieldSpec(LoadSettings(silently: silently, timeout: timeout, interrupts: interrupts,
                                           retries: retries, queue: queue, priority: priority,
                                           refreshInterval: refreshInterval), body), interrupts: nil)
    }

    /// Starts a yielding load in a new task, with an interrupt handler.
    public func load(silently: Bool = false, timeout: Duration? = nil, interrupts: [Duration], retries: Int = 0,
                     queue: LoadQueue? = nil, priority: Int = 0, refreshInterval: Duration? = nil,
                     @_inheritActorContext _ body: sending @escaping @isolated(any) (Yield<Value>) async throws -> Void,
                     @_inheritActorContext onInterrupt: sending @escaping @isolated(any) (Interrupt) async throws -> Void) {
        driver.load(yieldSpec(LoadSettings(silently: silently, timeout: timeout, interrupts: interrupts,
                                           retries: retries, queue: queue, priority: priority,
                                           refreshInterval: refreshInterval), body),
                    interrupts: InterruptCall(handler: onInterrupt, delays: interrupts))
    }

    /// Loads in the caller's task and returns when the cell shows the
    /// result. Cancelling the caller cancels the load.
    public func load(silently: Bool = false, timeout: Duration? = nil, interrupts: [Duration] = [], retries: Int = 0,
                     @_inheritActorContext _ body: sending @escaping @isolated(any) () async throws -> Value) async {
        await driver.loadInline(valueSpec(LoadSettings(silently: silently, timeout: timeout, interrupts: interrupts,
                                                       retries: retries), body), interrupts: nil)
    }

    /// Loads in the caller's task, with an interrupt handler, and returns
    /// when the cell shows the result.
    public func load(silently: Bool = false, timeout: Duration? = nil, interrupts: [Duration], retries: Int = 0,
                     @_inheritActorContext _ body: sending @escaping @isolated(any) () async throws -> Value,
                     @_inheritActorContext onInterrupt: sending @escaping @isolated(any) (Interrupt) async throws -> Void)
        async {
        await driver.loadInline(valueSpec(LoadSettings(silently: silently, timeout: timeout, interrupts: interrupts,
                                                       retries: retries), body),
                                interrupts: InterruptCall(handler: onInterrupt, delays: interrupts))
    }

    /// Loads with yielded values in the caller's task and returns when the
    /// cell shows the result.
    public func load(silently: Bool = false, timeout: Duration? = nil, interrupts: [Duration] = [], retries: Int = 0,
                     @_inheritActorContext _ body: sending @escaping @isolated(any) (Yield<Value>) async throws -> Void)
        async {
        await driver.loadInline(yieldSpec(LoadSettings(silently: silently, timeout: timeout, interrupts: interrupts,
                                                       retries: retries), body), interrupts: nil)
    }

    /// Loads with yielded values in the caller's task, with an interrupt
    /// handler, and returns when the cell shows the result.
    public func load(silently: Bool = false, timeout: Duration? = nil, interrupts: [Duration], retries: Int = 0,
                     @_inheritActorContext _ body: sending @escaping @isolated(any) (Yield<Value>) async throws -> Void,
                     @_inheritActorContext onInterrupt: sending @escaping @isolated(any) (Interrupt) async throws -> Void)
        async {
        await driver.loadInline(yieldSpec(LoadSettings(silently: silently, timeout: timeout, interrupts: interrupts,
                                                       retries: retries), body),
                                interrupts: InterruptCall(handler: onInterrupt, delays: interrupts))
    }

    private func valueSpec(_ settings: LoadSettings,
                           _ body: @escaping @isolated(any) () async throws -> Value) -> LoadSpec<Value, Void> {
        let call = IsolatedBody<Void, Value>(body)
        let loader = driver.closureLoader(queue: settings.queue) { _, _ in try await call(()) }
        return LoadSpec(loader: loader, request: (), options: settings.options)
    }

    private func yieldSpec(_ settings: LoadSettings,
                           _ body: @escaping @isolated(any) (Yield<Value>) async throws -> Void) -> LoadSpec<Value, Void> {
        let call = IsolatedBody(body)
        let loader = driver.closureLoader(queue: settings.queue) { _, context in
            try await call(Yield(context: context))
            return nil
        }
        return LoadSpec(loader: loader, request: (), options: settings.options)
    }
}

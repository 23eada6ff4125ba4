/// A loader written in Swift that cells share: a function from a request
/// to a value, run in a task for each job.
///
/// Cells made with the same `LoadFunction` share jobs: when `sharing` is
/// given (or the cells use a `LoadCache`, whose key is used), loads of
/// requests with the same key wait for one job, every cell sees its
/// result, and the job is cancelled only when every cell waiting for it
/// has cancelled.
///
///     let users = LoadFunction<Int, String>(sharing: { "user/\($0)" }) { id in
///         try await api.userName(id)
///     }
///     let a = LoadableCellWith(loader: users)
///     let b = LoadableCellWith(loader: users)
///     a.load(42); b.load(42)   // one job
///
/// The function is `@Sendable` and runs outside any actor: a loader
/// serves cells of any isolation. Throw `CancelLoadable` or
/// `ResetLoadable` to cancel or reset every waiting cell. A loader serves
/// the cells of the runtime it was made on.
///
/// `name` is what the runtime's metrics (the `loader` label, in place of
/// the id) and inspector call the loader: host text of at most 128 bytes
/// of UTF-8 (longer names are cut between two characters) whose control
/// characters become U+FFFD; nil or "" is no name. Names need not be
/// unique: loaders of one name share their metrics series.
public final class LoadFunction<Request: Sendable, Value: Sendable>: Sendable {
    let runtime: Runtime
    let loader: SwiftLoader<Value, Request>
    let shareKey: (@Sendable (Request) -> String)?

    /// A loader whose jobs run `load` with the cell's request.
    public init(runtime: Runtime = .shared, name: String? = nil, sharing shareKey: (@Sendable (Request) -> String)? = nil,
                _ load: @escaping @Sendable (Request) async throws -> Value) {
        self.runtime = runtime
        loader = SwiftLoader(id: runtime.table.makeID(.loader)) { request, _ in try await load(request) }
        self.shareKey = shareKey
        register(name: name)
    }

    /// A loader whose jobs may show partial values: `load` yields them
    /// through its `Yield`, and the last one stays when it returns.
    public init(runtime: Runtime = .shared, name: String? = nil, sharing shareKey: (@Sendable (Request) -> String)? = nil,
                yielding load: @escaping @Sendable (Request, Yield<Value>) async throws -> Void) {
        self.runtime = runtime
        loader = SwiftLoader(id: runtime.table.makeID(.loader)) { request, context in
            try await load(request, Yield(context: context))
            return nil
        }
        self.shareKey = shareKey
        register(name: name)
    }

    /// Names the loader and puts it in the runtime's table, where the
    /// metrics and the inspector find it (and a closing runtime releases it).
    private func register(name: String?) {
        loader.name = HandleName.sanitized(name)
        runtime.table.insert(loader)
    }

    deinit {
        let loader = self.loader
        let runtime = self.runtime
        runtime.loop.execute {
            runtime.table.withLock { storage in
                if storage.handles[loader.id] === loader { storage.handles[loader.id] = nil }
            }
            loader.retire(runtime: runtime)
        }
    }

    /// The name the loader was made with, as kept (see the type's notes).
    public var name: String? { loader.name }

    /// The share key of a load of `request`: the cache key when the load
    /// uses a cache, else the `sharing` key, else none.
    func shareKey(for request: Request, cacheKey: [UInt8]?) -> [UInt8]? {
        if let cacheKey { return cacheKey }
        return shareKey.map { Array($0(request).utf8) }
    }
}

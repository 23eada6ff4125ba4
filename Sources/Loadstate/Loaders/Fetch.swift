/// One `BuiltinLoader.fetch`: a byte cell of its own, loaded once, whose
/// first final state resumes the caller.
///
/// Lifecycle: made and inserted in the runtime's table (the cell, and the
/// fetch itself as a resident, so that closing the runtime ends it with
/// `ResultCode.closed`); the load runs on the loop; the first final state
/// (loaded, error, or the state a cancel restores) resumes the caller
/// once, then the cell is freed. Loop thread only, apart from `init`. Its
/// id is of the job kind: it stands for the job its caller waits for.
final class Fetch: Handle, @unchecked Sendable {
    typealias Bytes = [UInt8]

    private let runtime: Runtime
    private var cell: Cell<Bytes, Bytes>?
    private var caller: CheckedContinuation<Bytes, any Error>?
    private var cancelled = false
    private let progress: (@Sendable (UInt64, UInt64) -> Void)?

    init(runtime: Runtime, progress: (@Sendable (UInt64, UInt64) -> Void)?) {
        self.runtime = runtime
        self.progress = progress
        super.init(id: runtime.table.makeID(.job))
    }

    /// Loads `spec` and returns its value, or throws its error
    /// (`CancellationError` when the calling task is cancelled).
    func run(_ spec: LoadSpec<Bytes, Bytes>) async throws -> Bytes {
        guard !runtime.isClosed else { throw LoadError(.closed) }
        let observer = Observer(self)
        let cell = Cell<Bytes, Bytes>(id: runtime.table.makeID(.loadable), flavor: .loadable, runtime: runtime,
                                      observer: observer)
        cell.deliversProgress = progress != nil
        runtime.table.insert(cell)
        runtime.table.insert(self)
        let loop = runtime.loop
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { caller in
                loop.execute { [self] in
                    guard !cancelled else { return caller.resume(throwing: CancellationError()) }
                    self.caller = caller
                    self.cell = cell
                    cell.load(spec)
                }
            }
        } onCancel: {
            loop.execute { [self] in
                cancelled = true
                self.cell?.cancel()
            }
        }
    }

    /// Loop: the cell's events.
    fileprivate func cellEvent(_ event: CellEvent<Bytes, Bytes>) {
        if event.type == .progress {
            progress?(event.progressDone, event.progressTotal)
            return
        }
        guard event.type == .state, caller != nil else { return }
        let state = event.state
        switch state.status {
        case .loading: return
        case .loaded:
            guard !state.isPartial, !state.isRefreshing, let value = state.value else { return }
            finish(.success(value))
        case .error:
            let error = state.error ?? LoadError(.io)
            finish(.failure(error.underlying ?? error))
        case .absent:
            finish(.failure(CancellationError()))
        }
    }

    private func finish(_ result: Result<Bytes, any Error>) {
        guard let caller else { return }
        self.caller = nil
        caller.resume(with: result)
        let done = self
        runtime.table.withLock { storage in
            if let cell { storage.handles[cell.id] = nil }
            storage.handles[done.id] = nil
        }
        if let cell {
            cell.markFreed()
            runtime.loop.execute { cell.free() }
        }
        cell = nil
    }

    override func shutdown(runtime: Runtime) {
        finish(.failure(LoadError(.closed)))
    }

    private final class Observer: CellObserver<Bytes, Bytes> {
        weak var fetch: Fetch?

        init(_ fetch: Fetch) {
            self.fetch = fetch
        }

        override func cellEvent(_ cell: Cell<Bytes, Bytes>, _ event: CellEvent<Bytes, Bytes>) {
            fetch?.cellEvent(event)
        }
    }
}

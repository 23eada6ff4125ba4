/// What a Swift loader's code sees of its job: partial values, progress,
/// and whether the job still runs. Safe to use from any task or thread.
@usableFromInline package struct JobContext<Value: Sendable>: Sendable {
    private let submit: @Sendable (JobOperation<Value>) -> ResultCode
    private let checkCancelled: @Sendable () -> Bool

    init(submit: @escaping @Sendable (JobOperation<Value>) -> ResultCode,
         isCancelled: @escaping @Sendable () -> Bool) {
        self.submit = submit
        self.checkCancelled = isCancelled
    }

    /// Shows a partial value; the job goes on. Ignored once the job ended.
    @usableFromInline package func yield(_ value: Value) {
        _ = submit(.yield(value))
    }

    /// Reports progress (`total` 0 when unknown).
    @usableFromInline package func progress(done: UInt64, total: UInt64) {
        _ = submit(.progress(done: done, total: total))
    }

    /// True once the job no longer runs (cancelled, superseded, timed out).
    @usableFromInline package var isCancelled: Bool { checkCancelled() }

    /// Reports how the job ended; returns `.cancelled` if it had already.
    @discardableResult
    func end(_ op: JobOperation<Value>) -> ResultCode {
        submit(op)
    }
}

/// The `yield` a `load { yield in ... }` closure receives.
public struct Yield<Value: Sendable>: Sendable {
    let context: JobContext<Value>

    /// Shows a partial value; the load goes on.
    public func callAsFunction(_ value: Value) {
        context.yield(value)
    }

    /// Shows `.loaded(value)` as a partial value; other states are ignored
    /// (a load ends by returning or throwing).
    public func callAsFunction(_ state: LoadableState<Value>) {
        if case .loaded(let value) = state { context.yield(value) }
    }

    /// Reports progress (`total` 0 when unknown).
    public func progress(done: UInt64, total: UInt64) {
        context.progress(done: done, total: total)
    }

    /// True once the load was cancelled or superseded.
    public var isCancelled: Bool { context.isCancelled }
}

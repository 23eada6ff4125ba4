/// What the code doing a job reports about it. Operations are queued in the
/// job's inbox by any thread and applied on the loop thread in order.
@_spi(LoadstateC) public enum JobOperation<Value> {
    /// A partial value; the job goes on.
    case yield(Value)
    /// Units done and units in all (0 = unknown).
    case progress(done: UInt64, total: UInt64)
    /// The job ends with a final value.
    case succeed(Value)
    /// The job ends keeping its last yielded value.
    case finish
    /// The job ends with an error; `retry` says whether the load's retries
    /// left may be used.
    case fail(LoadError, retry: RetryAdvice)
    /// The job cancels itself: the cell returns to its state before the load.
    case cancelSelf
    /// The job resets its cell to absent.
    case resetSelf

    /// Whether the operation ends the job.
    @usableFromInline package var isTerminal: Bool {
        switch self {
        case .yield, .progress: return false
        default: return true
        }
    }

    /// Whether the operation may bring back the state before the load.
    var restoresState: Bool {
        switch self {
        case .finish, .cancelSelf: return true
        default: return false
        }
    }
}

/// Whether a failure is worth retrying, according to the code that failed.
@_spi(LoadstateC) public enum RetryAdvice: Sendable, Equatable {
    /// Retry after the load's usual back-off, if retries are left.
    case allowed
    /// Do not retry: the failure is final.
    case never
    /// Retry after this many milliseconds (an HTTP `Retry-After`), capped
    /// by the load's maximum back-off.
    case after(ms: UInt64)
}

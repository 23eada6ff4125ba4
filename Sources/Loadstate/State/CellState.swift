/// The state of a cell: its status plus what goes with it.
///
/// `value` is set when the status is `.loaded`, and in an `.error` state
/// whose load failed with an error carrying a value (`ErrorWithValue`: the
/// response of an HTTP status outside 2xx); `error` only when the status is
/// `.error` (or on a cached value whose revalidation failed). `request` is
/// the request of the load this state belongs to.
@usableFromInline package struct CellState<Value, Request> {
    // Stored properties in this order keep the struct small.
    @usableFromInline package var value: Value?
    @usableFromInline package var request: Request?
    /// Wall-clock milliseconds at which the value or error was produced.
    @usableFromInline package var updatedAt: UInt64
    // Errors are rare: boxed, so that every state stays small.
    private var errorBox: ErrorBox?
    /// Process cells: the kind of the current or last run.
    @usableFromInline package var kind: Int32
    /// Which attempt produced this state (1 for the first try); 0 when no load did.
    @usableFromInline package var attempt: UInt32
    @usableFromInline package var status: Status
    /// The value was yielded by a job that still runs.
    @usableFromInline package var isPartial: Bool
    /// A silent load or refresh runs over this state.
    @usableFromInline package var isRefreshing: Bool
    /// The value came from a cache.
    @usableFromInline package var isFromCache: Bool = false
    /// The cached value is older than the load's fresh time, or was invalidated.
    @usableFromInline package var isStale: Bool = false
    /// The cached value was confirmed unchanged by its loader (an HTTP 304).
    @usableFromInline package var isRevalidated: Bool = false
    /// The load waits for its loader's admission (a concurrency or rate
    /// limit): its job has not started yet.
    @usableFromInline package var isQueued: Bool = false
    /// The value is an optimistic one of a write still running (see
    /// `OptimisticLedger`), not confirmed data.
    @usableFromInline package var isOptimistic: Bool = false
    /// The value answers an earlier request (its own, in `request`), kept
    /// while a load of another request runs (`LoadOptions.keepsPrevious`).
    @usableFromInline package var isPrevious: Bool = false
    /// The value is the running load's placeholder (`LoadSpec.placeholder`).
    @usableFromInline package var isPlaceholder: Bool = false
    /// The load waits for the runtime to be online (see `Runtime.setOnline`):
    /// its loader has not been called for this attempt.
    @usableFromInline package var isPaused: Bool = false

    @usableFromInline package var error: LoadError? {
        get { errorBox?.error }
        set { errorBox = newValue.map(ErrorBox.init) }
    }

    @usableFromInline package init(status: Status, kind: Int32, value: Value?, error: LoadError?, request: Request?,
                isPartial: Bool, isRefreshing: Bool, attempt: UInt32, updatedAt: UInt64) {
        self.status = status
        self.kind = kind
        self.value = value
        self.request = request
        self.isPartial = isPartial
        self.isRefreshing = isRefreshing
        self.attempt = attempt
        self.updatedAt = updatedAt
        errorBox = error.map(ErrorBox.init)
    }

    /// The state of a new cell.
    @usableFromInline package static func initial(at time: UInt64) -> CellState {
        CellState(status: .absent, kind: 0, value: nil, error: nil, request: nil,
                  isPartial: false, isRefreshing: false, attempt: 0, updatedAt: time)
    }
}

/// An immutable box around an error, shared by the copies of a state.
final class ErrorBox: Sendable {
    let error: LoadError

    init(_ error: LoadError) {
        self.error = error
    }
}

extension CellState: Sendable where Value: Sendable, Request: Sendable {}

/// Everything a loadable cell shows at one moment: its state, the request
/// that state belongs to, and what a UI shows around it.
///
/// `request` is set in every state a load produced (`loading`, `loaded`,
/// `error`, partial values, cached values); it is nil in the initial
/// state and in states set by hand (`setValue`, `setError`). A cancelled
/// load brings back the state before it, with that state's request.
public struct LoadableSnapshot<Request, Value> {
    /// The state.
    public var state: LoadableState<Value>
    /// The request of the load this state belongs to.
    public var request: Request?
    /// A silent load or refresh runs over this state.
    public var isRefreshing: Bool
    /// The value was yielded by a load that still runs.
    public var isPartial: Bool
    /// The value came from a cache.
    public var isFromCache: Bool
    /// The cached value is older than the cache's fresh time, or was invalidated.
    public var isStale: Bool
    /// The value is an optimistic one of a write still running
    /// (`ProcessCell.mutate`), not confirmed data.
    public var isOptimistic: Bool = false
    /// The value answers an earlier request (the one in `request`), kept
    /// while a load of another request runs (`keepingPrevious`); a load
    /// awaited meanwhile never returns it.
    public var isPrevious: Bool = false
    /// The value is the running load's placeholder (`placeholder`), never
    /// stored in a cache.
    public var isPlaceholder: Bool = false
    /// The value came back because a write (`ProcessCell.mutate`) failed,
    /// was cancelled or reset: a rollback of its optimistic value.
    public var isRolledBack: Bool = false
    /// Which attempt produced this state: 1 for the first try, 2 for the
    /// first retry; 0 when no load did.
    public var attempt: Int
    /// When the value or error was produced, in milliseconds since 1970.
    public var updatedAtMs: UInt64
}

extension LoadableSnapshot: Sendable where Request: Sendable, Value: Sendable {}

extension LoadableSnapshot {
    init(_ detail: CellState<Value, Request>, state: LoadableState<Value>) {
        self.state = state
        request = detail.request
        isRefreshing = detail.isRefreshing
        isPartial = detail.isPartial
        isFromCache = detail.isFromCache
        isStale = detail.isStale
        isOptimistic = detail.isOptimistic
        isPrevious = detail.isPrevious
        isPlaceholder = detail.isPlaceholder
        attempt = Int(detail.attempt)
        updatedAtMs = detail.updatedAt
    }
}

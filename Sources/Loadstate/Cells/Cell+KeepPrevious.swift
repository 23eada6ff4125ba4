extension Cell {
    /// What a non-silent load of `spec` shows while it runs, instead of
    /// loading, when the cache shows nothing: the value loaded before it
    /// (`restore`, with its own request) flagged previous, when the load
    /// keeps previous values and that value answers another request; else
    /// the load's placeholder, flagged placeholder; else nil (loading).
    /// Both are flagged refreshing: the load runs over them.
    static func waitingState(restore: CellState<Value, Request>,
                             spec: LoadSpec<Value, Request>) -> CellState<Value, Request>? {
        if spec.options.keepsPrevious, restore.status == .loaded, restore.value != nil,
           !restore.isPlaceholder, !isSameRequest(restore.request, spec.request) {
            var kept = restore
            kept.isPrevious = true
            kept.isRefreshing = true
            kept.isPartial = false
            kept.attempt = 1
            return kept
        }
        guard let placeholder = spec.placeholder else { return nil }
        var shown = CellState<Value, Request>(status: .loaded, kind: spec.kind, value: placeholder, error: nil,
                                              request: spec.request, isPartial: false, isRefreshing: true,
                                              attempt: 1, updatedAt: Clock.wallMs())
        shown.isPlaceholder = true
        return shown
    }

    /// Whether a shown state's request is the load's: equal when the
    /// request type is `Equatable`; a state without a request (a value set
    /// by hand) never is. Requests of other types are taken as different.
    private static func isSameRequest(_ shown: Request?, _ request: Request) -> Bool {
        guard let shown else { return false }
        guard let equatable = shown as? any Equatable else { return false }
        return equatable.isEqual(to: request)
    }
}

extension Equatable {
    /// Whether `other` is a value of this type equal to this one.
    fileprivate func isEqual(to other: Any) -> Bool {
        guard let other = other as? Self else { return false }
        return self == other
    }
}

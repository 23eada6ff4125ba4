/// The status of a cell. Loadable cells use these names; process cells map
/// them one to one: absent ↔ idle, loading ↔ running, loaded ↔ finished,
/// error ↔ failed.
@usableFromInline package enum Status: Sendable, Equatable {
    case absent
    case loading
    case loaded
    case error
}

/// Which state machine a cell runs.
@usableFromInline package enum CellFlavor: Sendable {
    /// absent → loading → loaded | error; jobs produce values.
    case loadable
    /// idle → running(kind) → finished(kind) | failed(kind); job values are ignored.
    case process
}

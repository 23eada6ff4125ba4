/// Thrown inside a `load` closure: cancels the load from inside; the cell
/// returns to the state it had before the load.
public struct CancelLoadable: Error, Sendable, Equatable {
    /// The error.
    public init() {}
}

/// Thrown inside a `load` closure: resets the cell to `.absent`.
public struct ResetLoadable: Error, Sendable, Equatable {
    /// The error.
    public init() {}
}

/// Thrown inside a `run` closure: cancels the process from inside; the cell
/// returns to the state it had before the run.
public struct CancelProcess: Error, Sendable, Equatable {
    /// The error.
    public init() {}
}

/// Thrown inside a `run` closure: resets the cell to `.idle`.
public struct ResetProcess: Error, Sendable, Equatable {
    /// The error.
    public init() {}
}

/// The error of a load that ran out of time: thrown by an interrupt
/// handler to fail the load, and shown when a load's timeout expires.
public struct TimeoutError: Error, Sendable, Equatable {
    /// The error.
    public init() {}
}

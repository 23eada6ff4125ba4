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

/// Thrown by `LoadableCellWith.get` when another load of the cell replaced
/// the awaited one before it ended: the caller never receives the value of
/// a request it did not ask for. `request` is the request of the load that
/// replaced it (nil when that load was a refresh, or is not known).
public struct LoadSuperseded<Request: Sendable>: Error, Sendable, CustomStringConvertible {
    /// The request of the load that replaced the awaited one.
    public let request: Request?

    /// The error.
    public init(request: Request?) { self.request = request }

    public var description: String {
        if let request { return "LoadSuperseded(by a load of \(request))" }
        return "LoadSuperseded"
    }
}

/// Thrown by `LoadableCell.get` when the load's job finished without a
/// value (it yielded nothing): the cell went back to its state from before
/// the load, which may show an earlier request's value, never returned as
/// the answer to this one.
public struct LoadWithoutValue<Request: Sendable>: Error, Sendable, CustomStringConvertible {
    /// The request of the load that ended without a value.
    public let request: Request

    /// The error.
    public init(request: Request) { self.request = request }

    /// Names the request whose job finished without a value.
    public var description: String { "LoadWithoutValue(the job for \(request) finished without a value)" }
}

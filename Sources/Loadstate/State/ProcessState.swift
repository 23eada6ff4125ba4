/// The state of a process (logging in, saving, deleting): idle, running a
/// kind of process, failed, or finished.
public enum ProcessState<ProcessKind> {
    /// No process ran yet, or the cell was reset.
    case idle
    /// A process of this kind runs.
    case running(ProcessKind)
    /// The process of this kind failed with this error.
    case failed(process: ProcessKind, error: any Error)
    /// The process of this kind finished.
    case finished(ProcessKind)

    /// Whether no process ran yet.
    public var isIdle: Bool {
        if case .idle = self { return true }
        return false
    }

    /// Whether a process runs.
    public var isRunning: Bool {
        if case .running = self { return true }
        return false
    }

    /// Whether the last process failed.
    public var hasFailed: Bool {
        if case .failed = self { return true }
        return false
    }

    /// Whether the last process finished.
    public var hasFinished: Bool {
        if case .finished = self { return true }
        return false
    }

    /// The kind of process running, failed or finished.
    public var process: ProcessKind? {
        switch self {
        case .idle: return nil
        case .running(let kind), .finished(let kind), .failed(let kind, _): return kind
        }
    }

    /// The error, when failed.
    public var error: (any Error)? {
        if case .failed(_, let error) = self { return error }
        return nil
    }

    /// Sets `.idle`.
    public mutating func setIdle() { self = .idle }
    /// Sets `.running(process)`.
    public mutating func start(_ process: ProcessKind) { self = .running(process) }
    /// Sets `.finished(process)`.
    public mutating func finish(_ process: ProcessKind) { self = .finished(process) }
    /// Sets `.failed(process:error:)`.
    public mutating func fail(_ process: ProcessKind, error: any Error) { self = .failed(process: process, error: error) }
}

extension ProcessState where ProcessKind: Equatable {
    /// Whether a process of this kind runs.
    public func isRunning(_ process: ProcessKind) -> Bool {
        if case .running(let kind) = self { return kind == process }
        return false
    }

    /// Whether the last process was of this kind and failed.
    public func hasFailed(_ process: ProcessKind) -> Bool {
        if case .failed(let kind, _) = self { return kind == process }
        return false
    }

    /// Whether the last process was of this kind and finished.
    public func hasFinished(_ process: ProcessKind) -> Bool {
        if case .finished(let kind) = self { return kind == process }
        return false
    }
}

extension ProcessState: Sendable where ProcessKind: Sendable {}

extension ProcessState: Equatable where ProcessKind: Equatable {
    /// Errors are equal when they are of one `Equatable` type and `==`,
    /// or the same object; otherwise they differ.
    public static func == (a: ProcessState, b: ProcessState) -> Bool {
        switch (a, b) {
        case (.idle, .idle): return true
        case (.running(let x), .running(let y)), (.finished(let x), .finished(let y)): return x == y
        case (.failed(let x, let e), .failed(let y, let f)):
            return x == y && sameError(e, f)
        default: return false
        }
    }
}

extension ProcessState: CustomStringConvertible {
    public var description: String {
        switch self {
        case .idle: return "idle"
        case .running(let kind): return "running(\(kind))"
        case .failed(let kind, let error): return "failed(\(kind), \(error))"
        case .finished(let kind): return "finished(\(kind))"
        }
    }
}

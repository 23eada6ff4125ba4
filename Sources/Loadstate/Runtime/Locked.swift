import Synchronization

/// A value guarded by a mutex, shareable between threads.
public final class Locked<State>: @unchecked Sendable {
    private let mutex = Mutex<Void>(())
    private var state: State

    public init(_ state: State) {
        self.state = state
    }

    @inline(__always)
    public func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        try mutex.withLock { _ in try body(&state) }
    }
}

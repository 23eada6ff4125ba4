#if canImport(Glibc)
import Glibc
#endif

/// A value guarded by a mutex, shareable between threads.
///
/// The mutex is a `pthread_mutex_t`, which ThreadSanitizer understands,
/// so the sanitizer runs see the library's locking as it is.
@usableFromInline package final class Locked<State>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// Only reached with the mutex held, which already excludes
    /// overlapping accesses: no dynamic exclusivity check.
    @exclusivity(unchecked) private var state: State

    @usableFromInline package init(_ state: State) {
        self.state = state
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    @inline(__always)
    @usableFromInline package func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// A value handed from the loop thread to a thread that waits for it,
/// for as long as it takes or at most a given time.
final class LoopReply<T>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let ready = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var value: T?

    init() {
        pthread_mutex_init(mutex, nil)
        var attr = pthread_condattr_t()
        pthread_condattr_init(&attr)
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)
        pthread_cond_init(ready, &attr)
        pthread_condattr_destroy(&attr)
    }

    deinit {
        pthread_cond_destroy(ready)
        pthread_mutex_destroy(mutex)
        ready.deallocate()
        mutex.deallocate()
    }

    /// Hands `v` over; only the first value counts.
    func put(_ v: T) {
        pthread_mutex_lock(mutex)
        if value == nil { value = v }
        pthread_cond_signal(ready)
        pthread_mutex_unlock(mutex)
    }

    /// The value, once it is there.
    func take() -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while true {
            if let v = value { return v }
            pthread_cond_wait(ready, mutex)
        }
    }

    /// The value, or nil when `timeoutMs` passed first.
    func take(timeoutMs: UInt64) -> T? {
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        let capped = min(timeoutMs, 86_400_000)
        let ns = Int(deadline.tv_nsec) + Int(capped % 1000) * 1_000_000
        deadline.tv_sec += Int(capped / 1000) + ns / 1_000_000_000
        deadline.tv_nsec = ns % 1_000_000_000
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while value == nil {
            if pthread_cond_timedwait(ready, mutex, &deadline) == ETIMEDOUT { break }
        }
        return value
    }
}

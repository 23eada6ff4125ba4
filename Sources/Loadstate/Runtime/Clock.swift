#if canImport(Glibc)
import Glibc
#endif

/// Monotonic and wall-clock time in milliseconds.
@usableFromInline package enum Clock {
    /// Milliseconds of a clock that never goes back; for durations.
    @usableFromInline package static func monotonicMs() -> UInt64 {
        monotonicNs() / 1_000_000
    }

    /// Nanoseconds of the monotonic clock.
    @usableFromInline package static func monotonicNs() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// Milliseconds since the Unix epoch; for timestamps shown to hosts.
    @usableFromInline package static func wallMs() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return UInt64(ts.tv_sec) * 1000 + UInt64(ts.tv_nsec) / 1_000_000
    }
}

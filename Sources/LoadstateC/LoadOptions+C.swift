import CLoadstateABI
@_spi(LoadstateC) import Loadstate

/// The most interrupt delays one load may have.
let maxInterrupts = 64

/// The cache a caller's options ask for, before its id is looked up.
struct CacheChoice {
    var id: UInt64
    var key: Bytes?
    var policy: CachePolicy
    var freshMs: UInt64
    var maxAgeMs: UInt64
    /// Not LDS_LOAD_IGNORE_CACHE_HEADERS.
    var followsLoaderRules: Bool
}

extension LoadOptions {
    /// The size of the first version of `lds_load_options`, which ended
    /// before the caching fields.
    static let firstVersionSize = MemoryLayout<lds_load_options>.offset(of: \lds_load_options.cache)!
    /// The size of the second version, which ended before the scheduling fields.
    static let secondVersionSize = MemoryLayout<lds_load_options>.offset(of: \lds_load_options.priority)
        ?? MemoryLayout<lds_load_options>.size

    /// Reads a caller's `lds_load_options`, the caching fields only when its
    /// `size` reaches them, so that callers built against an older header work;
    /// a bad placeholder (see `placeholderProblem`) is refused here.
    static func from(_ pointer: UnsafePointer<lds_load_options>?) -> Result<(LoadOptions, CacheChoice?), ResultCode> {
        var options = LoadOptions()
        guard let pointer else { return .success((options, nil)) }
        let (c, size) = readSized(pointer)
        guard size >= firstVersionSize else { return .failure(.invalidArgument) }
        let knownFlags = UInt32(LDS_LOAD_SILENT) | UInt32(LDS_LOAD_SHARE) | UInt32(LDS_LOAD_POLL_ON_ERROR)
            | UInt32(LDS_LOAD_NO_PROGRESS)
            | UInt32(LDS_LOAD_IGNORE_CACHE_HEADERS) | UInt32(LDS_LOAD_KEEP_PREVIOUS)
            | UInt32(LDS_LOAD_REFRESH_ON_FOREGROUND)
            | UInt32(LDS_LOAD_OFFLINE_FAIL) | UInt32(LDS_LOAD_OFFLINE_RUN) | UInt32(LDS_LOAD_POLL_IN_BACKGROUND)
        guard c.flags & ~knownFlags == 0 else { return .failure(.invalidArgument) }
        let offline = c.flags & (UInt32(LDS_LOAD_OFFLINE_FAIL) | UInt32(LDS_LOAD_OFFLINE_RUN))
        // Both offline flags at once say two things: refused.
        guard offline != UInt32(LDS_LOAD_OFFLINE_FAIL) | UInt32(LDS_LOAD_OFFLINE_RUN) else {
            return .failure(.invalidArgument)
        }
        options.offlineMode = offline == UInt32(LDS_LOAD_OFFLINE_FAIL) ? .fail
            : offline == UInt32(LDS_LOAD_OFFLINE_RUN) ? .run : .wait
        options.refreshesOnForeground = c.flags & UInt32(LDS_LOAD_REFRESH_ON_FOREGROUND) != 0
        options.pollsInBackground = c.flags & UInt32(LDS_LOAD_POLL_IN_BACKGROUND) != 0
        // Fields past the caller's size read as 0: the default throttle.
        options.foregroundThrottleMs = c.foreground_throttle_ms
        options.freshMs = c.fresh_ms
        options.silent = c.flags & UInt32(LDS_LOAD_SILENT) != 0
        options.pollsAfterError = c.flags & UInt32(LDS_LOAD_POLL_ON_ERROR) != 0
        options.keepsPrevious = c.flags & UInt32(LDS_LOAD_KEEP_PREVIOUS) != 0
        // Fields past the caller's size read as 0: no priority, no polling.
        options.priority = c.priority
        options.refreshIntervalMs = c.refresh_interval_ms
        options.timeoutMs = c.timeout_ms
        if c.interrupt_count != 0 {
            guard let delays = c.interrupts_ms, c.interrupt_count > 0, c.interrupt_count <= maxInterrupts else {
                return .failure(.invalidArgument)
            }
            options.interruptsMs = Array(UnsafeBufferPointer(start: delays, count: c.interrupt_count))
        }
        options.retries = c.retries
        if c.retry_base_ms > 0 { options.retryBaseMs = c.retry_base_ms }
        if c.retry_max_ms > 0 { options.retryMaxMs = c.retry_max_ms }
        if options.retryBaseMs > options.retryMaxMs { options.retryBaseMs = options.retryMaxMs }
        var choice: CacheChoice?
        if size >= secondVersionSize, c.cache != 0 {
            guard let policy = CachePolicy(rawValue: c.cache_policy) else { return .failure(.invalidArgument) }
            var key: Bytes?
            if c.cache_key != nil || c.cache_key_len > 0 {
                switch copyBytes(c.cache_key, c.cache_key_len) {
                case .success(let bytes): key = bytes
                case .failure(let code): return .failure(code)
                }
            }
            choice = CacheChoice(id: c.cache, key: key, policy: policy, freshMs: UInt64(c.fresh_ms),
                                 maxAgeMs: c.max_age_ms,
                                 followsLoaderRules: c.flags & UInt32(LDS_LOAD_IGNORE_CACHE_HEADERS) == 0)
        }
        // Every call that takes these options refuses a bad placeholder, the
        // calls that show none (pages, prefetches) too.
        if let problem = placeholderProblem(c) { return .failure(problem) }
        return .success((options, choice))
    }
}

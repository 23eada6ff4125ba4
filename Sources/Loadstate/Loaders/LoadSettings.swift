/// How a Swift cell runs one load: the Swift face of `LoadOptions`.
struct LoadSettings: Sendable {
    /// Keep the current state visible while loading (flagged refreshing).
    var silently: Bool
    /// Fail with `TimeoutError` when the load takes longer.
    var timeout: Duration?
    /// Delays between calls of the interrupt handler.
    var interrupts: [Duration]
    /// Extra attempts after a failure, with exponential back-off and jitter.
    var retries: Int
    /// The back-off before the first retry; each later one may double it.
    var retryBase: Duration
    /// The longest back-off.
    var retryMax: Duration
    /// The limits the load waits for, if any.
    var queue: LoadQueue?
    /// Where the load waits in its queue: higher first.
    var priority: Int
    /// Refresh silently this long after each successful load (polling).
    var refreshInterval: Duration?
    /// Keep polling after a failed load, with the retry back-off.
    var pollsAfterError: Bool
    /// Keep the loaded value of another request shown, flagged previous.
    var keepsPrevious = false

    /// Settings for one load; the defaults load once, loudly, without limits.
    init(silently: Bool = false, timeout: Duration? = nil, interrupts: [Duration] = [],
         retries: Int = 0, retryBase: Duration = .milliseconds(100), retryMax: Duration = .seconds(30),
         queue: LoadQueue? = nil, priority: Int = 0, refreshInterval: Duration? = nil,
         pollsAfterError: Bool = false) {
        self.silently = silently
        self.timeout = timeout
        self.interrupts = interrupts
        self.retries = retries
        self.retryBase = retryBase
        self.retryMax = retryMax
        self.queue = queue
        self.priority = priority
        self.refreshInterval = refreshInterval
        self.pollsAfterError = pollsAfterError
    }

    var options: LoadOptions {
        LoadOptions(silent: silently, timeoutMs: timeout.map(Self.milliseconds) ?? 0,
                    interruptsMs: interrupts.map(Self.milliseconds), retries: UInt32(clamping: retries),
                    retryBaseMs: Self.milliseconds(retryBase), retryMaxMs: Self.milliseconds(retryMax),
                    priority: Int32(clamping: priority),
                    refreshIntervalMs: refreshInterval.map(Self.milliseconds) ?? 0,
                    pollsAfterError: pollsAfterError)
            .keepingPrevious(keepsPrevious)
    }

    private static func milliseconds(_ d: Duration) -> UInt32 {
        UInt32(clamping: d.saturatingMilliseconds)
    }
}

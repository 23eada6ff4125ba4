/// How a Swift cell runs one load: the Swift face of `LoadOptions`.
public struct LoadSettings: Sendable {
    /// Keep the current state visible while loading (flagged refreshing).
    public var silently: Bool
    /// Fail with `TimeoutError` when the load takes longer.
    public var timeout: Duration?
    /// Delays between calls of the interrupt handler.
    public var interrupts: [Duration]
    /// Extra attempts after a failure, with exponential back-off and jitter.
    public var retries: Int
    public var retryBase: Duration
    public var retryMax: Duration
    /// The limits the load waits for, if any.
    public var queue: LoadQueue?
    /// Where the load waits in its queue: higher first.
    public var priority: Int
    /// Refresh silently this long after each successful load (polling).
    public var refreshInterval: Duration?
    /// Keep polling after a failed load, with the retry back-off.
    public var pollsAfterError: Bool

    public init(silently: Bool = false, timeout: Duration? = nil, interrupts: [Duration] = [],
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
    }

    private static func milliseconds(_ d: Duration) -> UInt32 {
        let (seconds, attoseconds) = d.components
        let ms = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        return UInt32(clamping: max(ms, 0))
    }
}

/// Called at each interrupt delay with the time since the load began.
/// Throwing fails the load with the thrown error (throw `TimeoutError`
/// to give up); returning lets it go on.
public typealias InterruptHandler = @Sendable (_ elapsed: Duration) throws -> Void

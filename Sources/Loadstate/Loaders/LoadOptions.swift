/// How one load runs.
public struct LoadOptions: Sendable, Equatable {
    // Stored properties in this order keep the struct small.
    /// Delays between interrupt events.
    public var interruptsMs: [UInt32]
    /// Loads of the same loader with the same share key wait for one job.
    public var shareKey: [UInt8]?
    /// Cancel the job and fail with `ResultCode.timedOut` after this many ms; 0 for none.
    public var timeoutMs: UInt32
    /// Extra attempts after a failure.
    public var retries: UInt32
    /// Back-off before the first retry.
    public var retryBaseMs: UInt32
    /// Upper bound of any back-off.
    public var retryMaxMs: UInt32
    /// Where the load's job waits in its loader's queue: higher first.
    public var priority: Int32
    /// After the load succeeds, refresh silently this many ms after it
    /// ended, again and again; 0 for no polling.
    public var refreshIntervalMs: UInt32
    /// Keep the current state visible while loading (flagged refreshing).
    public var silent: Bool
    /// Polling goes on after a failed load (after the longer of the
    /// interval and the retry back-off) instead of stopping.
    public var pollsAfterError: Bool

    public init(silent: Bool = false, timeoutMs: UInt32 = 0, interruptsMs: [UInt32] = [],
                retries: UInt32 = 0, retryBaseMs: UInt32 = 100, retryMaxMs: UInt32 = 30_000,
                shareKey: [UInt8]? = nil, priority: Int32 = 0, refreshIntervalMs: UInt32 = 0,
                pollsAfterError: Bool = false) {
        self.silent = silent
        self.timeoutMs = timeoutMs
        self.interruptsMs = interruptsMs
        self.retries = retries
        self.retryBaseMs = retryBaseMs
        self.retryMaxMs = retryMaxMs
        self.shareKey = shareKey
        self.priority = priority
        self.refreshIntervalMs = refreshIntervalMs
        self.pollsAfterError = pollsAfterError
    }
}

/// Everything needed to start, and restart, a load.
public struct LoadSpec<Value, Request> {
    public var loader: Loader<Value, Request>
    public var request: Request
    /// The cache the load reads and fills, if any.
    public var cache: CacheUse<Value>?
    public var options: LoadOptions
    /// Process cells: the kind of the run.
    public var kind: Int32

    @_specialize(exported: true, where Value == [UInt8], Request == [UInt8])
    public init(loader: Loader<Value, Request>, request: Request, kind: Int32 = 0,
                options: LoadOptions = LoadOptions(), cache: CacheUse<Value>? = nil) {
        self.loader = loader
        self.request = request
        self.kind = kind
        self.options = options
        self.cache = cache
    }
}

/// How one load runs.
@usableFromInline package struct LoadOptions: Sendable, Equatable {
    // Stored properties in this order keep the struct small.
    /// Delays between interrupt events.
    @usableFromInline package var interruptsMs: [UInt32]
    /// Loads of the same loader with the same share key wait for one job.
    @usableFromInline package var shareKey: [UInt8]?
    /// Cancel the job and fail with `ResultCode.timedOut` after this many ms; 0 for none.
    @usableFromInline package var timeoutMs: UInt32
    /// Extra attempts after a failure.
    @usableFromInline package var retries: UInt32
    /// Back-off before the first retry.
    @usableFromInline package var retryBaseMs: UInt32
    /// Upper bound of any back-off.
    @usableFromInline package var retryMaxMs: UInt32
    /// Where the load's job waits in its loader's queue: higher first.
    @usableFromInline package var priority: Int32
    /// After the load succeeds, refresh silently this many ms after it
    /// ended, again and again; 0 for no polling.
    @usableFromInline package var refreshIntervalMs: UInt32
    /// Back in the foreground, a refresh-on-foreground cell refreshes at
    /// most once per this many ms (0: 5000).
    @usableFromInline package var foregroundThrottleMs: UInt32 = 0
    /// Back in the foreground, a value younger than this is not refreshed
    /// (0: any age is refreshed).
    @usableFromInline package var freshMs: UInt32 = 0
    /// What the load does while the runtime is offline.
    @usableFromInline package var offlineMode: OfflineMode = .wait
    /// Refresh silently when the runtime returns to the foreground with a
    /// value older than `freshMs`.
    @usableFromInline package var refreshesOnForeground: Bool = false
    /// Polling goes on while the runtime is in the background.
    @usableFromInline package var pollsInBackground: Bool = false
    /// Keep the current state visible while loading (flagged refreshing).
    @usableFromInline package var silent: Bool
    /// Polling goes on after a failed load (after the longer of the
    /// interval and the retry back-off) instead of stopping.
    @usableFromInline package var pollsAfterError: Bool
    /// A non-silent load of another request keeps the loaded value shown,
    /// flagged previous, instead of showing loading.
    @usableFromInline package var keepsPrevious: Bool = false

    @usableFromInline package init(silent: Bool = false, timeoutMs: UInt32 = 0, interruptsMs: [UInt32] = [],
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

extension LoadOptions {
    /// The same options, keeping previous values or not.
    func keepingPrevious(_ keeps: Bool) -> LoadOptions {
        var options = self
        options.keepsPrevious = keeps
        return options
    }
}

/// Everything needed to start, and restart, a load.
@usableFromInline package struct LoadSpec<Value, Request> {
    @_spi(LoadstateC) public var loader: Loader<Value, Request>
    @usableFromInline package var request: Request
    /// The cache the load reads and fills, if any.
    @usableFromInline package var cache: CacheUse<Value>?
    @usableFromInline package var options: LoadOptions
    /// Process cells: the kind of the run.
    @usableFromInline package var kind: Int32
    /// Shown, flagged placeholder, while a non-silent load runs and nothing
    /// else would be (see `Cell.waitingState`); never cached or shared.
    @usableFromInline package var placeholder: Value?

    @_specialize(exported: true, where Value == [UInt8], Request == [UInt8])
    @_spi(LoadstateC) public init(loader: Loader<Value, Request>, request: Request, kind: Int32 = 0,
                options: LoadOptions = LoadOptions(), cache: CacheUse<Value>? = nil) {
        self.loader = loader
        self.request = request
        self.kind = kind
        self.options = options
        self.cache = cache
    }
}

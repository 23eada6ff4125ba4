/// How an inspector serves (see `Inspector`).
@usableFromInline package struct InspectorOptions: Sendable {
    /// Show the cells' values (otherwise "(hidden)"); requests and errors are always shown.
    @usableFromInline package var showValues = false
    /// Accept the page's actions: cancel, refresh, invalidate a cache prefix.
    @usableFromInline package var actions = false
    /// Allow an address other than loopback.
    @usableFromInline package var allowRemote = false
    /// The most live pages (event streams) at once; more are answered 503.
    @usableFromInline package var maxClients = 8
    /// How often the live page is updated.
    @usableFromInline package var intervalMs: UInt64 = 500
    /// A connection that sent no complete request head by then is answered
    /// 408 and closed.
    @usableFromInline package var idleTimeoutMs: UInt64 = 3_000
    /// The most cells listed (the newest first).
    @usableFromInline package var maxCells = 200
    /// The most jobs listed per loader among those waiting for its limits
    /// (the first to start); their number is given in full.
    @usableFromInline package var maxQueuedJobs = 100

    /// The most bytes waiting to be sent to one live page; a client that
    /// reads slower is disconnected.
    static let maxPendingBytes = 4 << 20

    /// The most connections that have not yet sent a complete request head
    /// (and so shown no token): a new one over it closes the oldest such
    /// connection, so that slow or idle clients (a slowloris) cannot keep
    /// out one that sends its request at once (LDS_INSPECTOR_WAITING_MAX).
    static let maxWaiting = 64

    @usableFromInline package init() {}
}

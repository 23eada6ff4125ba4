import CHiredis
#if canImport(Glibc)
import Glibc
#endif

/// A cache kept in a Redis server, shared by every process that uses the
/// same server, database and key prefix; driven by the runtime's loop.
///
/// See the header's "Redis" section for the contract: entries with their
/// stored time, stale flag and loader metadata; a time to live on each;
/// single flight across processes with fenced leases; invalidation
/// broadcast on a channel; an optional front memory tier.
///
/// Threads: the `CacheStore` calls wait for the loop (at most about twice
/// the command timeout) on host threads. On the loop thread, `get`, `put`
/// and `remove` are what loads use: `get` answers from what the cell's
/// lookup fetched or the front tier, `put` and `remove` are sent without
/// waiting; the other calls throw `ResultCode.wrongState` there.
///
/// Lifecycle: `init` starts connecting on the loop; `close` (or the
/// runtime's close) drops both connections; later calls throw
/// `ResultCode.closed`.
public final class RedisCache: Handle, CacheStore, @unchecked Sendable {
    /// A Redis cache's settings (`lds_redis_cache_options`).
    public struct Options: Sendable {
        /// Prepended to every key in Redis.
        public var keyPrefix: [UInt8] = Array("lds:".utf8)
        /// Time to live of entries; 0: `maxTtlMs`.
        public var ttlMs: UInt64 = 0
        /// Bound on every entry's time to live.
        public var maxTtlMs: UInt64 = 86_400_000
        /// Values larger than this are not stored.
        public var maxValueBytes: Int = 8 << 20
        /// A reply's longest wait.
        public var commandTimeoutMs: UInt64 = 2_000
        /// A connection's longest wait.
        public var connectTimeoutMs: UInt64 = 2_000
        /// A single-flight lease's life.
        public var leaseMs: UInt64 = 10_000
        /// The reconnection back-off's ceiling.
        public var reconnectMaxMs: UInt64 = 5_000
        /// Entries of the front memory tier; 0: none.
        public var memoryMaxEntries: Int = 0
        /// Bytes of the front memory tier.
        public var memoryMaxBytes: Int = 64 << 20
        /// How long a front entry is used.
        public var memoryTtlMs: UInt64 = 60_000

        /// The defaults of `LDS_REDIS_CACHE_OPTIONS_INIT`.
        public init() {}
    }

    /// What `status()` reports (`lds_redis_status`).
    public struct Status: Sendable, Equatable {
        /// Whether the command connection is up.
        public var connected = false
        /// Whether the message connection listens.
        public var subscribed = false
        /// The code of the last failure; nil when there was none.
        public var lastErrorCode: RedisFailure.Code?
        /// The last failure's message; empty when there was none.
        public var lastError = ""
        /// Connections made, both connections, reconnections included.
        public var connects: UInt64 = 0
        /// Commands that failed.
        public var errors: UInt64 = 0
        /// Shared loads that took a lease and called their loader.
        public var leasesTaken: UInt64 = 0
        /// Shared loads that waited for another process's result.
        public var leasesWaited: UInt64 = 0
        /// Waits that ended with another process's result.
        public var resultsReceived: UInt64 = 0
        /// Waits that ended by taking an expired or released lease.
        public var takeovers: UInt64 = 0
        /// Results stored and published under a lease.
        public var published: UInt64 = 0
        /// Results not stored: the lease had passed to a newer holder.
        public var fenced: UInt64 = 0
        /// Invalidation messages received from other processes.
        public var invalidations: UInt64 = 0
        /// Gets that found a live entry (`CacheStats.hits`).
        var hits: UInt64 = 0
        /// Gets that found nothing.
        var misses: UInt64 = 0
    }

    /// The URL without its password.
    public let name: String
    /// Where the cache connects.
    public let url: RedisURL
    /// The settings it was made with.
    public let options: Options
    let loop: EventLoop
    weak var runtime: Runtime?
    let counters = Locked(Status())
    let isClosedFlag = Locked(false)
    /// A random number naming this cache in its messages, so that it
    /// ignores its own.
    let origin: [UInt8]
    let channel: [UInt8]
    /// The names of what the cache keeps in Redis.
    let keyNames: RedisKeys
    /// On a cluster: the slot of the entries of each hash tag.
    let slotsOfTags: [UInt16]
    let front: MemoryCache?

    // Loop thread only.
    var commands: RedisConnection?
    /// The routing of a cache on a Redis Cluster (then `commands` and
    /// `messages` stay nil).
    var cluster: RedisCluster?
    /// Whether the cache is on a Redis Cluster (`redis+cluster://`).
    let isCluster: Bool
    /// Loop: whether commands may still be sent.
    var isOpen: Bool { commands != nil || cluster != nil }
    var messages: RedisConnection?
    /// Loads waiting for another process's result, by key.
    var waiters: [[UInt8]: [LeaseWaiter]] = [:]
    /// What a cell's lookup fetched, seen by `get` on the loop while the
    /// load that asked for it decides (see `withFetched`).
    var fetched: (key: [UInt8], entry: CacheEntry?, failure: RedisFailure?)?
    /// The keys of the last messages about results (done, released), with
    /// their number: a lease request whose "wait" reply comes after such a
    /// message about its key (messages come on the other connection) asks
    /// again at once instead of waiting for the lease to expire.
    var recentResults = [(number: UInt64, key: [UInt8], kind: Character)](
        repeating: (0, [], " "), count: 256)
    var resultMessages: UInt64 = 0
    /// How lease requests that end after `close` end (the runtime closes
    /// too: abandoned; otherwise: load without a lease).
    var closedOutcome = LeaseOutcome.unavailable

    /// Starts connecting on `runtime`'s loop.
    @usableFromInline package init(id: UInt64, runtime: Runtime, url: RedisURL, options: Options) {
        self.url = url
        self.options = options
        isCluster = !url.cluster.isEmpty
        switch url.address {
        case _ where !url.cluster.isEmpty:
            name = "redis+cluster://" + url.cluster.map { address -> String in
                guard case .tcp(let host, let port) = address else { return "?" }
                return RedisCluster.nodeName(host, port)
            }.joined(separator: ",")
        case .tcp(let host, let port): name = "redis://\(host.contains(":") ? "[\(host)]" : host):\(port)/\(url.database)"
        case .unix(let path): name = "unix://\(path)?db=\(url.database)"
        }
        loop = runtime.loop
        self.runtime = runtime
        origin = withUnsafeBytes(of: UInt64.random(in: 1...UInt64.max)) { Array($0) }
        keyNames = RedisKeys(prefix: options.keyPrefix)
        channel = keyNames.channel
        slotsOfTags = url.cluster.isEmpty ? [] : keyNames.slotsOfTags()
        front = options.memoryMaxEntries > 0
            ? MemoryCache(id: 0, name: "", options: MemoryCache.Options(maxEntries: options.memoryMaxEntries,
                                                                         maxBytes: options.memoryMaxBytes,
                                                                         ttlMs: options.memoryTtlMs))
            : nil
        super.init(id: id)
        loop.execute { [self] in start() }
    }

    public func close() { close(runtimeClosing: false) }

    /// `runtimeClosing`: the runtime closes too, and cancels the loads
    /// waiting for a lease; otherwise they call their loaders.
    private func close(runtimeClosing: Bool) {
        let first = isClosedFlag.withLock { closed -> Bool in
            defer { closed = true }
            return !closed
        }
        guard first else { return }
        front?.close()
        runtime?.table.withLock { storage in
            if storage.handles[id] === self { storage.handles[id] = nil }
        }
        if loop.isLoopThread {
            shutdownOnLoop(runtimeClosing: runtimeClosing)
        } else {
            loop.execute { [self] in shutdownOnLoop(runtimeClosing: runtimeClosing) }
        }
    }

    override func shutdown(runtime: Runtime) { close(runtimeClosing: true) }

    override var shutdownStage: ShutdownStage { .last }

    private func shutdownOnLoop(runtimeClosing: Bool) {
        // Results and releases sent just before still reach Redis.
        commands?.close(graceful: true)
        messages?.close()
        cluster?.close(graceful: true)
        commands = nil
        messages = nil
        cluster = nil
        counters.withLock {
            $0.connected = false
            $0.subscribed = false
        }
        closedOutcome = runtimeClosing ? .abandoned : .unavailable
        releaseWaiters(closedOutcome)
    }
}

extension RedisCache {
    /// A Redis cache for Swift cells, on `runtime`'s loop: `url` is
    /// `redis://[[user]:password@]host[:port][/db]`,
    /// `unix://[[user]:password@]/path[?db=N]` or, for a Redis Cluster,
    /// `redis+cluster://host:port[,host:port...]` (its seed nodes; see
    /// `RedisCluster`). Connecting starts at once
    /// and is not waited for; a server that is down is not an error here.
    /// Throws `ResultCode.notSupported` for `rediss://` (this build has no
    /// TLS; see `RedisURL.isTLS`), `ResultCode.invalidArgument` for a URL
    /// that does not parse and `ResultCode.closed` for a closed runtime.
    /// `close()` (or the runtime's) drops its connections.
    public convenience init(url: String, options: Options = Options(), runtime: Runtime = .shared) throws(CacheError) {
        if RedisURL.isTLS(url) {
            throw CacheError(.notSupported, "rediss:// (TLS) is not supported: this build's hiredis has no TLS; "
                             + "reach a TLS-only Redis through a local TLS tunnel (stunnel, socat)")
        }
        guard let parsed = RedisURL(url) else {
            throw CacheError(.invalidArgument, "not a redis://, unix:// or redis+cluster:// URL: \(url.prefix(64))")
        }
        guard !runtime.isClosed else { throw CacheError(.closed, "the runtime is closed") }
        self.init(id: runtime.table.makeID(.cache), runtime: runtime, url: parsed, options: options)
        runtime.table.insert(self)
    }
}

/// The header's bounds, for Swift.
let LDS_REDIS_PENDING_MAX_VALUE = 65_536
let LDS_REDIS_KEYS_MAX_VALUE = 1_000_000

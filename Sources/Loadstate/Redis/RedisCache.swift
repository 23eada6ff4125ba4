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
    private let loop: EventLoop
    private weak var runtime: Runtime?
    private let counters = Locked(Status())
    private let isClosedFlag = Locked(false)
    /// A random number naming this cache in its messages, so that it
    /// ignores its own.
    private let origin: [UInt8]
    private let channel: [UInt8]
    /// The names of what the cache keeps in Redis.
    let keyNames: RedisKeys
    /// On a cluster: the slot of the entries of each hash tag.
    private let slotsOfTags: [UInt16]
    private let front: MemoryCache?

    // Loop thread only.
    private var commands: RedisConnection?
    /// The routing of a cache on a Redis Cluster (then `commands` and
    /// `messages` stay nil).
    private var cluster: RedisCluster?
    /// Whether the cache is on a Redis Cluster (`redis+cluster://`).
    let isCluster: Bool
    /// Loop: whether commands may still be sent.
    private var isOpen: Bool { commands != nil || cluster != nil }
    private var messages: RedisConnection?
    /// Loads waiting for another process's result, by key.
    private var waiters: [[UInt8]: [LeaseWaiter]] = [:]
    /// What a cell's lookup fetched, seen by `get` on the loop while the
    /// load that asked for it decides (see `withFetched`).
    private var fetched: (key: [UInt8], entry: CacheEntry?, failure: RedisFailure?)?
    /// The keys of the last messages about results (done, released), with
    /// their number: a lease request whose "wait" reply comes after such a
    /// message about its key (messages come on the other connection) asks
    /// again at once instead of waiting for the lease to expire.
    private var recentResults = [(number: UInt64, key: [UInt8], kind: Character)](
        repeating: (0, [], " "), count: 256)
    private var resultMessages: UInt64 = 0
    /// How lease requests that end after `close` end (the runtime closes
    /// too: abandoned; otherwise: load without a lease).
    private var closedOutcome = LeaseOutcome.unavailable

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

    /// The most bytes one reply from Redis may hold (see LDS_REDIS_REPLY_SLACK
    /// in the C header): an entry of `maxValueBytes` and 1 MiB more for
    /// the entry's header, the protocol's framing and the other replies
    /// (key lists, scripts' answers). Each element of a reply counts 48
    /// bytes besides its own.
    static func maxReplyBytes(_ maxValueBytes: Int) -> Int {
        let (sum, overflow) = maxValueBytes.addingReportingOverflow(1 << 20)
        return overflow ? .max : sum
    }

    private func start() {
        guard !isClosed else { return }
        let settings = RedisConnection.Settings(url: url, commandTimeoutMs: max(options.commandTimeoutMs, 1),
                                                connectTimeoutMs: max(options.connectTimeoutMs, 1),
                                                reconnectMaxMs: options.reconnectMaxMs,
                                                pendingMax: Int(LDS_REDIS_PENDING_MAX_VALUE),
                                                maxReplyBytes: Self.maxReplyBytes(options.maxValueBytes))
        if isCluster { return startCluster(settings) }
        let commands = RedisConnection(loop: loop, settings: settings)
        commands.onReady = { [weak self] in
            self?.counters.withLock {
                $0.connected = true
                $0.connects &+= 1
            }
        }
        commands.onFailure = { [weak self] failure in
            self?.counters.withLock { $0.connected = false }
            self?.noteFailure(failure)
            self?.releaseWaiters()
        }
        let messages = RedisConnection(loop: loop, settings: settings, subscribeTo: channel)
        messages.onReady = { [weak self] in self?.subscribed() }
        messages.onFailure = { [weak self] failure in
            self?.counters.withLock { $0.subscribed = false }
            self?.noteFailure(failure)
            self?.releaseWaiters()
        }
        messages.onMessage = { [weak self] payload in self?.received(payload) }
        self.commands = commands
        self.messages = messages
        commands.start()
        messages.start()
    }

    private func startCluster(_ settings: RedisConnection.Settings) {
        let cluster = RedisCluster(loop: loop, settings: settings, seeds: url.cluster, channel: channel)
        cluster.onReady = { [weak self] in
            self?.counters.withLock {
                $0.connected = true
                $0.connects &+= 1
            }
        }
        cluster.onFailure = { [weak self] failure in
            self?.counters.withLock { $0.connected = false }
            self?.noteFailure(failure)
            self?.releaseWaiters()
        }
        cluster.onSubscribed = { [weak self] in self?.subscribed() }
        cluster.onSubscriberFailure = { [weak self] failure in
            self?.counters.withLock { $0.subscribed = false }
            self?.noteFailure(failure)
            self?.releaseWaiters()
        }
        cluster.onMessage = { [weak self] payload in self?.received(payload) }
        self.cluster = cluster
        cluster.start()
    }

    var isClosed: Bool { isClosedFlag.withLock { $0 } }

    /// The connection state and counters. Any thread; does not wait.
    public func status() -> Status { counters.withLock { $0 } }

    private func noteFailure(_ failure: RedisFailure) { RedisCache.note(failure, in: counters) }

    private static func note(_ failure: RedisFailure, in counters: Locked<Status>) {
        counters.withLock {
            $0.errors &+= 1
            $0.lastErrorCode = failure.code
            $0.lastError = failure.message
        }
    }

    // MARK: - Keys

    private func entryKey(_ key: [UInt8]) -> [UInt8] { keyNames.entry(key) }
    private func leaseKey(_ key: [UInt8]) -> [UInt8] { keyNames.lease(key) }

    private func message(_ kind: Character, _ body: [UInt8]) -> [UInt8] {
        [kind.asciiValue ?? 0] + origin + body
    }

    /// The time to live in Redis of an entry put with `ttlMs` (nil: the cache's).
    private func ttl(_ ttlMs: UInt64?) -> UInt64 {
        // Redis refuses expiry times past 2^63 ms; 2^52 ms is 142,000 years.
        let maxTtl = min(max(options.maxTtlMs, 1), 1 << 52)
        let asked = ttlMs ?? options.ttlMs
        return asked == 0 ? maxTtl : min(asked, maxTtl)
    }

    /// Why `value` and `meta` are not stored, when they are over `maxValueBytes`.
    private func oversize(_ value: [UInt8], _ meta: [UInt8]) -> RedisFailure? {
        guard value.count + meta.count > options.maxValueBytes else { return nil }
        return RedisFailure(.tooBig, "a value of \(value.count) bytes is over max_value_bytes (\(options.maxValueBytes)): not stored")
    }

    /// The stored form of `value` put now with `ttlMs` (nil: the cache's)
    /// under the lease `token` (0: none), and its time to live in Redis.
    private func entry(_ value: [UInt8], meta: [UInt8], ttlMs: UInt64?, token: UInt64) -> ([UInt8], UInt64) {
        let now = Clock.wallMs()
        let ttl = ttl(ttlMs)
        return (RedisEntry.encode(value, meta: meta, storedAtMs: now,
                                  expiresAtMs: CacheEntry.expiry(storedAt: now, ttlMs: ttl), token: token), ttl)
    }

    private static func arg(_ n: UInt64) -> [UInt8] { Array(String(n).utf8) }
    private static func arg(_ n: Int) -> [UInt8] { Array(String(n).utf8) }
    private static func arg(_ s: String) -> [UInt8] { Array(s.utf8) }

    // MARK: - Waiting from host threads

    /// Runs `body` on the loop and waits for the result it passes on.
    private func onLoop<T>(_ body: @escaping (@escaping (Result<T, CacheError>) -> Void) -> Void)
        throws(CacheError) -> T {
        guard !isClosed else { throw CacheError(.closed, "\(name): closed") }
        if loop.isLoopThread { throw CacheError(.wrongState, "\(name): a Redis cache call on the loop thread") }
        let reply = LoopReply<Result<T, CacheError>>()
        loop.execute { body { reply.put($0) } }
        let waitMs = options.commandTimeoutMs &* 2 &+ options.connectTimeoutMs &+ 500
        guard let result = reply.take(timeoutMs: waitMs) else {
            throw CacheError(.redis, "\(name): the loop did not answer within \(waitMs) ms")
        }
        return try result.get()
    }

    /// Like `onLoop`, for work done in steps (invalidation, key listing):
    /// waits as long as the loop reports a step within the usual wait.
    private func onLoopWithProgress<T>(
        _ body: @escaping (_ progressed: @escaping () -> Void,
                           _ done: @escaping (Result<T, CacheError>) -> Void) -> Void) throws(CacheError) -> T {
        guard !isClosed else { throw CacheError(.closed, "\(name): closed") }
        if loop.isLoopThread { throw CacheError(.wrongState, "\(name): a Redis cache call on the loop thread") }
        let reply = LoopReply<Result<T, CacheError>>()
        let steps = Locked<UInt64>(0)
        loop.execute { body({ steps.withLock { $0 &+= 1 } }, { reply.put($0) }) }
        let waitMs = options.commandTimeoutMs &* 2 &+ options.connectTimeoutMs &+ 500
        var seen: UInt64 = 0
        while true {
            if let result = reply.take(timeoutMs: waitMs) { return try result.get() }
            let now = steps.withLock { $0 }
            guard now != seen else {
                throw CacheError(.redis, "\(name): the loop did not answer within \(waitMs) ms")
            }
            seen = now
        }
    }

    /// `failure` as a `CacheError`; noted in the status unless it already was.
    private func cacheError(_ failure: RedisFailure, noted: Bool = false) -> CacheError {
        if !noted { noteFailure(failure) }
        return RedisCache.cacheError(failure, of: name)
    }

    private static func cacheError(_ failure: RedisFailure, of name: String) -> CacheError {
        CacheError(failure.code == .closed ? .closed : .redis, "\(name): \(failure.message)")
    }

    /// Loop: sends a command, `done` with its reply or the failure as a `CacheError`.
    private func command(_ args: [[UInt8]], _ done: @escaping (Result<RedisReply, CacheError>) -> Void) {
        send(RedisCommand(args), key: RedisCache.routingKey(args)) { [self] result in
            switch result {
            case .success(.error(let message)):
                done(.failure(cacheError(RedisFailure(.reply, message))))
            case .success(let reply): done(.success(reply))
            case .failure(let failure): done(.failure(cacheError(failure)))
            }
        }
    }

    /// The key whose slot a command of `args` goes to on a cluster: a
    /// script's first key, another command's first argument.
    private static func routingKey(_ args: [[UInt8]]) -> [UInt8]? {
        if let name = args.first, name == Array("EVAL".utf8) {
            guard args.count > 3, args[2] != Array("0".utf8) else { return nil }
            return args[3]
        }
        return args.count > 1 ? args[1] : nil
    }

    /// Loop: sends `command` on the connection, or on a cluster to the
    /// master of `key`'s slot.
    private func send(_ command: RedisCommand, key: [UInt8]?,
                      _ done: @escaping (Result<RedisReply, RedisFailure>) -> Void) {
        if let cluster { return cluster.send(command, key: key, done) }
        guard let commands else { return done(.failure(RedisFailure(.closed, "the cache was closed"))) }
        commands.send(command, done)
    }

    // MARK: - CacheStore

    public func get(_ key: [UInt8]) throws(CacheError) -> CacheEntry? {
        if loop.isLoopThread {
            if let fetched, fetched.key == key { return fetched.entry }
            return frontEntry(key)
        }
        return try onLoop { [self] done in
            fetch(key) { entry, failure in
                done(failure.map { .failure(self.cacheError($0, noted: true)) } ?? .success(entry))
            }
        }
    }

    /// The entries under `keys` (see `CacheStore.entries(for:)`): one
    /// hand-off to the loop, where the front tier answers what it holds and
    /// every other key's `GET` is sent before the loop writes, so that they
    /// go out in one pipeline; one wait for every reply. A key that does
    /// not fit in `LDS_REDIS_PENDING_MAX` fails alone (`.queue`), as does
    /// every key of a connection that fails. Throws `ResultCode.wrongState`
    /// on the loop thread.
    public func entries(for keys: [[UInt8]]) throws(CacheError) -> [Result<CacheEntry?, CacheError>] {
        try checkBatch(keys.count)
        var batch = GetBatch(of: self, count: keys.count, keyBytes: keys.reduce(0) { $0 &+ $1.count })
        for key in keys { key.withUnsafeBytes { batch.append($0) } }
        return try entries(batch)
    }

    /// The keys of a batch of gets, gathered on the calling thread: the
    /// `GET`s already encoded in one buffer when the cache has no front
    /// tier (the loop only sends them), the keys themselves when it has one.
    package struct GetBatch {
        fileprivate var commands: RedisCommandGroup
        fileprivate var keys: [[UInt8]] = []
        fileprivate let hasFront: Bool
        private let prefix: [UInt8]

        /// An empty batch for `count` keys of `keyBytes` bytes in all.
        package init(of cache: RedisCache, count: Int, keyBytes: Int) {
            prefix = cache.options.keyPrefix
            // A cluster sends each GET to its key's master: the keys are kept.
            hasFront = cache.front != nil || cache.isCluster
            if hasFront {
                commands = RedisCommandGroup(reservingCommands: 0, bytes: 0)
                keys.reserveCapacity(count)
            } else {
                // A hint only: bounded, whatever the counts say.
                let each = RedisCommandGroup.getSize(prefix, keyCount: 0)
                let size = min(max(count, 0), cacheBatchMax) &* each &+ min(max(keyBytes, 0), 1 << 26)
                commands = RedisCommandGroup(reservingCommands: min(max(count, 0), cacheBatchMax), bytes: size)
            }
        }

        /// Adds the key `key` (copied).
        package mutating func append(_ key: UnsafeRawBufferPointer) {
            if hasFront {
                keys.append(Array(key))
            } else {
                commands.appendGet(prefix, key)
            }
        }

        /// How many keys it holds.
        package var count: Int { hasFront ? keys.count : commands.count }
    }

    /// The entries under the keys of `batch`, in their order (see
    /// `entries(for:)`).
    package func entries(_ batch: GetBatch) throws(CacheError) -> [Result<CacheEntry?, CacheError>] {
        try checkBatch(batch.count)
        if loop.isLoopThread { throw CacheError(.wrongState, "\(name): a Redis cache call on the loop thread") }
        guard batch.count > 0 else { return [] }
        return try onLoop { [self] done in fetch(batch, done) }
    }

    /// Loop: the entries under the keys of `batch`, each answered by the
    /// front tier or by its GET; every GET is sent before the loop writes
    /// (one pipeline).
    private func fetch(_ batch: GetBatch, _ done: @escaping (Result<[Result<CacheEntry?, CacheError>], CacheError>) -> Void) {
        let replies = Batch(batch.count, of: self, done)
        guard isOpen else {
            for i in 0..<batch.count { replies.failed(i, RedisFailure(.closed, "the cache was closed")) }
            return
        }
        if let cluster {
            // One group of GETs per master, sent together; a key whose
            // master is not known, or whose GET is redirected, goes alone
            // through the cluster's routing.
            var groups: [Int: (group: RedisCommandGroup, indexes: [Int])] = [:]
            for (i, key) in batch.keys.enumerated() {
                if let entry = frontEntry(key) {
                    replies.found(i, entry)
                    continue
                }
                let slot = Int(slotsOfTags[key.withUnsafeBytes { RedisKeys.tagNumber($0) }])
                if let master = cluster.masterIndex(ofSlot: slot) {
                    if groups[master] == nil { groups[master] = (RedisCommandGroup(reservingCommands: 16, bytes: 0), []) }
                    key.withUnsafeBytes { groups[master]?.group.appendGet(options.keyPrefix, $0) }
                    groups[master]?.indexes.append(i)
                } else {
                    fetchFromRedis(key) { outcome in replies.fetched(i, outcome) }
                }
            }
            let keys = batch.keys
            for (master, sent) in groups {
                let indexes = sent.indexes
                guard let node = cluster.masterName(master) else {
                    for i in indexes { fetchFromRedis(keys[i]) { outcome in replies.fetched(i, outcome) } }
                    continue
                }
                cluster.send(sent.group, to: node) { [self, replies] j, result in
                    let i = indexes[j]
                    if case .success(let raw) = result, lds_redis_reply_type(raw) == REDIS_REPLY_ERROR,
                       case .error(let message) = RedisReply(raw), RedisCluster.Redirect(message) != nil {
                        return fetchFromRedis(keys[i]) { outcome in replies.fetched(i, outcome) }
                    }
                    replies.replied(i, result, key: keys[i])
                }
            }
            return
        }
        guard let commands else { return }
        guard batch.hasFront else {
            return commands.send(batch.commands) { [replies] i, reply in replies.replied(i, reply) }
        }
        // The front tier first: the keys it does not hold are sent, and
        // `sent[j]` is the batch's index of the group's command j.
        var group = RedisCommandGroup(reservingCommands: batch.count, bytes: 0)
        var sent: [Int] = []
        for (i, key) in batch.keys.enumerated() {
            if let entry = frontEntry(key) {
                replies.found(i, entry)
            } else {
                key.withUnsafeBytes { group.appendGet(options.keyPrefix, $0) }
                sent.append(i)
            }
        }
        guard !sent.isEmpty else { return }
        let keys = batch.keys
        commands.send(group) { [replies] j, reply in replies.replied(sent[j], reply, key: keys[sent[j]]) }
    }

    /// The replies of a batch of gets, gathered on the loop; the cache's
    /// counters move once, with the last one.
    private final class Batch {
        private var results: [Result<CacheEntry?, CacheError>]
        private var remaining: Int
        private var hits: UInt64 = 0
        private var misses: UInt64 = 0
        /// The wall clock for expiry, read at the first reply (0: not yet).
        private var nowMs: UInt64 = 0
        private let name: String
        private let counters: Locked<Status>
        private let front: MemoryCache?
        private let done: (Result<[Result<CacheEntry?, CacheError>], CacheError>) -> Void

        init(_ count: Int, of cache: RedisCache,
             _ done: @escaping (Result<[Result<CacheEntry?, CacheError>], CacheError>) -> Void) {
            results = Array(repeating: .success(nil), count: count)
            remaining = count
            name = cache.name
            counters = cache.counters
            front = cache.front
            self.done = done
        }

        func found(_ i: Int, _ entry: CacheEntry) {
            hits &+= 1
            finish(i, .success(entry))
        }

        func failed(_ i: Int, _ failure: RedisFailure) {
            RedisCache.note(failure, in: counters)
            finish(i, .failure(RedisCache.cacheError(failure, of: name)))
        }

        /// Key `i`'s GET, answered on a cluster (the front tier already has
        /// what it brought).
        func fetched(_ i: Int, _ outcome: GetOutcome) {
            switch outcome {
            case .hit(let entry, _): found(i, entry)
            case .miss:
                misses &+= 1
                finish(i, .success(nil))
            case .failed(let failure): failed(i, failure)
            }
        }

        /// The reply to key `i`'s GET, in hiredis's memory; `key` for the
        /// front tier, which keeps what Redis gave.
        func replied(_ i: Int, _ result: Result<UnsafeRawPointer, RedisFailure>, key: [UInt8]? = nil) {
            if nowMs == 0 { nowMs = Clock.wallMs() }
            let reply: UnsafeRawPointer
            switch result {
            case .success(let r): reply = r
            case .failure(let failure): return failed(i, failure)
            }
            switch lds_redis_reply_type(reply) {
            case REDIS_REPLY_STRING:
                let bytes = UnsafeRawBufferPointer(start: lds_redis_reply_str(reply), count: lds_redis_reply_len(reply))
                guard let entry = RedisEntry.decode(bytes), !entry.isExpired(at: nowMs) else {
                    misses &+= 1
                    return finish(i, .success(nil))
                }
                if let front, let key { front.put(key, Array(bytes)) }
                found(i, entry)
            case REDIS_REPLY_NIL:
                misses &+= 1
                finish(i, .success(nil))
            case REDIS_REPLY_ERROR:
                guard case .error(let message) = RedisReply(reply) else { return failed(i, RedisFailure(.reply, "")) }
                failed(i, RedisFailure(.reply, message))
            default:
                failed(i, RedisFailure(.reply, "GET answered with another type"))
            }
        }

        private func finish(_ i: Int, _ result: Result<CacheEntry?, CacheError>) {
            results[i] = result
            remaining -= 1
            guard remaining == 0 else { return }
            let (hits, misses) = (hits, misses)
            counters.withLock {
                $0.hits &+= hits
                $0.misses &+= misses
            }
            done(.success(results))
        }
    }

    public func put(_ key: [UInt8], _ value: [UInt8], ttlMs: UInt64?) throws(CacheError) {
        try put(key, value, ttlMs: ttlMs, meta: [])
    }

    public func put(_ key: [UInt8], _ value: [UInt8], ttlMs: UInt64?, meta: [UInt8]) throws(CacheError) {
        if let failure = oversize(value, meta) {
            if loop.isLoopThread {
                noteFailure(failure)
                remove(key, done: { _ in })
                return
            }
            throw cacheError(failure)
        }
        if loop.isLoopThread {
            return store(key, value, meta: meta, ttlMs: ttlMs) { _ in }
        }
        try onLoop { [self] done in store(key, value, meta: meta, ttlMs: ttlMs, done) }
    }

    /// Loop: SET and index, then tell the other processes (their front
    /// entries go).
    private func store(_ key: [UInt8], _ value: [UInt8], meta: [UInt8], ttlMs: UInt64?,
                       _ done: @escaping (Result<Void, CacheError>) -> Void) {
        let (encoded, ttl) = entry(value, meta: meta, ttlMs: ttlMs, token: 0)
        front?.put(key, encoded)
        let write: [[UInt8]]
        if isCluster {
            index(key, ttl: ttl)
            write = [RedisCache.arg("EVAL"), RedisCache.arg(RedisScripts.storeEntry), RedisCache.arg("1"),
                     entryKey(key), encoded, RedisCache.arg(ttl), channel, message("D", key)]
        } else {
            write = [RedisCache.arg("EVAL"), RedisCache.arg(RedisScripts.store), RedisCache.arg("3"),
                     entryKey(key), keyNames.keysIndex, keyNames.expiryIndex,
                     encoded, RedisCache.arg(ttl), key, channel, message("D", key)]
        }
        command(write) {
            switch $0 {
            case .success: done(.success(()))
            case .failure(let error): done(.failure(error))
            }
        }
    }

    @discardableResult
    public func remove(_ key: [UInt8]) throws(CacheError) -> Bool {
        if loop.isLoopThread {
            // A load's own removal: sent without waiting; whether there was
            // an entry is not known here.
            remove(key) { _ in }
            return false
        }
        return try onLoop { [self] done in remove(key, done: done) }
    }

    private func remove(_ key: [UInt8], done: @escaping (Result<Bool, CacheError>) -> Void) {
        front?.remove(key)
        command(isCluster
                ? [RedisCache.arg("EVAL"), RedisCache.arg(RedisScripts.removeEntry), RedisCache.arg("1"),
                   entryKey(key), channel, message("C", key)]
                : [RedisCache.arg("EVAL"), RedisCache.arg(RedisScripts.remove), RedisCache.arg("3"),
                   entryKey(key), keyNames.keysIndex, keyNames.expiryIndex, key, channel, message("C", key)]) {
            switch $0 {
            case .success(let reply):
                done(.success((reply.integer ?? 0) > 0))
            case .failure(let error): done(.failure(error))
            }
        }
    }

    public func clear() throws(CacheError) {
        _ = try sweep(prefix: [], delete: true)
    }

    public func stats() throws(CacheError) -> CacheStats {
        guard !isClosed else { throw CacheError(.closed, "\(name): closed") }
        let (hits, misses) = counters.withLock { ($0.hits, $0.misses) }
        var stats = front?.stats() ?? CacheStats()
        stats.hits = hits
        stats.misses = misses
        return stats
    }

    /// The keys stored under `prefix`: read from the key index in batches
    /// of `sweepBatch`, each batch's entries checked in one script (the
    /// index may still name a key whose entry expired within the minute).
    public func keys(prefix: [UInt8]) throws(CacheError) -> [[UInt8]] {
        let limit = LDS_REDIS_KEYS_MAX_VALUE
        return try onLoopWithProgress { [self] progressed, done in
            var found: [[UInt8]] = []
            indexBatches(prefix: prefix, each: { keys, next in
                let checked: (Result<[Bool], CacheError>) -> Void = { result in
                    switch result {
                    case .success(let flags):
                        for (key, flag) in zip(keys, flags) where flag { found.append(key) }
                        guard found.count <= limit else {
                            return next(.failure(CacheError(.tooBig, "\(self.name): more than \(limit) keys under the prefix")))
                        }
                        progressed()
                        next(.success(()))
                    case .failure(let error): next(.failure(error))
                    }
                }
                if self.isCluster { return self.existing(keys, checked) }
                self.command([RedisCache.arg("EVAL"), RedisCache.arg(RedisScripts.exist), RedisCache.arg(keys.count)]
                             + keys.map(self.entryKey)) {
                    switch $0 {
                    case .success(.array(let flags)) where flags.count == keys.count:
                        checked(.success(flags.map { $0.integer == 1 }))
                    case .success: checked(.failure(CacheError(.redis, "\(self.name): unexpected reply")))
                    case .failure(let error): checked(.failure(error))
                    }
                }
            }, done: { result in done(result.map { found }) })
        }
    }

    @discardableResult
    public func markStale(prefix: [UInt8]) throws(CacheError) -> Int {
        front?.removeAll(prefix: prefix)
        return try sweep(prefix: prefix, delete: false)
    }

    @discardableResult
    public func removeAll(prefix: [UInt8]) throws(CacheError) -> Int {
        try sweep(prefix: prefix, delete: true)
    }

    /// How many keys one step of an invalidation reads from the index and
    /// changes in one script: Redis answers nobody else while the script
    /// runs (a few ms for 250 keys: see bench/README.md).
    static let sweepBatch = 250

    /// Marks stale (or deletes) the entries under `prefix`, and tells the
    /// other processes. Waits while batches keep coming.
    private func sweep(prefix: [UInt8], delete: Bool) throws(CacheError) -> Int {
        front?.removeAll(prefix: prefix)
        return try onLoopWithProgress { [self] progressed, done in
            sweep(prefix: prefix, delete: delete, progressed: progressed, done)
        }
    }

    /// Loop: `sweep`'s work, `done` with its count. The keys come from the
    /// key index, so the work grows with the keys under `prefix`, not with
    /// the database; each batch is one script. The message goes out
    /// whether every batch worked or not: the other processes drop their
    /// front entries either way.
    private func sweep(prefix: [UInt8], delete: Bool, progressed: @escaping () -> Void = {},
                       _ done: @escaping (Result<Int, CacheError>) -> Void) {
        var changed = 0
        indexBatches(prefix: prefix, each: { [self] keys, next in
            if isCluster {
                return sweepEach(keys, delete: delete) { result in
                    if case .success(let n) = result {
                        changed = changed.addingReportingOverflow(n).partialValue
                        progressed()
                    }
                    next(result.map { _ in () })
                }
            }
            command([RedisCache.arg("EVAL"), RedisCache.arg(RedisScripts.sweep), RedisCache.arg(keys.count + 2),
                     keyNames.keysIndex, keyNames.expiryIndex] + keys.map(entryKey)
                    + [RedisCache.arg(delete ? "delete" : "stale")] + keys) {
                switch $0 {
                case .success(let reply):
                    changed = changed.addingReportingOverflow(Int(clamping: reply.integer ?? 0)).partialValue
                    progressed()
                    next(.success(()))
                case .failure(let error): next(.failure(error))
                }
            }
        }, done: { [self] result in
            command([RedisCache.arg("PUBLISH"), channel, message(delete ? "C" : "I", prefix)]) { _ in }
            done(result.map { changed })
        })
    }

    /// Loop, cluster: writes `key` in the index (before its entry, so that
    /// the index names every stored key). Sent without waiting.
    private func index(_ key: [UInt8], ttl: UInt64) {
        command([RedisCache.arg("EVAL"), RedisCache.arg(RedisScripts.index), RedisCache.arg("2"),
                 keyNames.keysIndex, keyNames.expiryIndex, key, RedisCache.arg(ttl)]) { _ in }
    }

    /// Loop, cluster: marks stale (or deletes) the entries of `keys`, each
    /// by a script on its master; `done` with how many changed, or the
    /// first failure, once every one answered.
    private func sweepEach(_ keys: [[UInt8]], delete: Bool, _ done: @escaping (Result<Int, CacheError>) -> Void) {
        commandEach(keys, { [self] key in
            [RedisCache.arg("EVAL"), RedisCache.arg(RedisScripts.sweepEntry), RedisCache.arg("1"), entryKey(key),
             RedisCache.arg(delete ? "delete" : "stale")]
        }) { result in
            done(result.map { replies in replies.reduce(0) { $0 &+ Int(clamping: $1.integer ?? 0) } })
        }
    }

    /// Loop, cluster: which of `keys` have an entry, each asked of its master.
    private func existing(_ keys: [[UInt8]], _ done: @escaping (Result<[Bool], CacheError>) -> Void) {
        commandEach(keys, { [self] key in [RedisCache.arg("EXISTS"), entryKey(key)] }) { result in
            done(result.map { replies in replies.map { $0.integer == 1 } })
        }
    }

    /// Loop, cluster: sends the command `args(key)` for each of `keys` (each
    /// to its key's master); `done` once every one answered, with the
    /// replies in the order of `keys`, or the first failure.
    private func commandEach(_ keys: [[UInt8]], _ args: ([UInt8]) -> [[UInt8]],
                             _ done: @escaping (Result<[RedisReply], CacheError>) -> Void) {
        guard !keys.isEmpty else { return done(.success([])) }
        var remaining = keys.count
        var replies = [RedisReply](repeating: .null, count: keys.count)
        var failure: CacheError?
        for (i, key) in keys.enumerated() {
            command(args(key)) { result in
                switch result {
                case .success(let reply): replies[i] = reply
                case .failure(let error): failure = failure ?? error
                }
                remaining -= 1
                if remaining == 0 { done(failure.map { .failure($0) } ?? .success(replies)) }
            }
        }
    }

    /// Loop: hands the indexed keys under `prefix` to `each`, a batch of at
    /// most `sweepBatch` at a time, in order; the next batch is read when
    /// `each` passes on success; `done` after the last batch or the first
    /// failure.
    private func indexBatches(prefix: [UInt8],
                              each: @escaping ([[UInt8]], @escaping (Result<Void, CacheError>) -> Void) -> Void,
                              done: @escaping (Result<Void, CacheError>) -> Void) {
        let (first, end) = RedisKeys.lexRange(prefix)
        let batch = RedisCache.sweepBatch
        func read(from start: [UInt8]) {
            command([RedisCache.arg("ZRANGEBYLEX"), keyNames.keysIndex, start, end,
                     RedisCache.arg("LIMIT"), RedisCache.arg("0"), RedisCache.arg(batch)]) { [self] in
                switch $0 {
                case .success(.array(let items)):
                    let keys = items.compactMap(\.bytes)
                    guard let last = keys.last else { return done(.success(())) }
                    each(keys) { result in
                        if case .failure = result { return done(result) }
                        if items.count < batch { return done(.success(())) }
                        read(from: [UInt8(ascii: "(")] + last)
                    }
                case .success: done(.failure(CacheError(.redis, "\(name): unexpected reply to ZRANGEBYLEX")))
                case .failure(let error): done(.failure(error))
                }
            }
        }
        read(from: first)
    }

    /// Loop: marks the entries under `prefix` stale without waiting (an
    /// invalidation asked on the loop thread: the inspector's), then `done`
    /// whether it worked or not (the cells reload either way).
    func markStaleFromLoop(prefix: [UInt8], _ done: @escaping () -> Void) {
        front?.removeAll(prefix: prefix)
        sweep(prefix: prefix, delete: false) { _ in done() }
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

    // MARK: - Loads (loop thread)

    /// The front tier's entry under `key`, if it has a live one.
    private func frontEntry(_ key: [UInt8]) -> CacheEntry? {
        guard let bytes = front?.get(key)?.value else { return nil }
        return RedisEntry.decode(bytes)
    }

    /// Loop: whether a lookup of `key` needs no round trip (the front tier has it).
    func hasLocalEntry(_ key: [UInt8]) -> Bool { frontEntry(key) != nil }

    /// Loop: the entry under `key` (nil on a miss), or the failure.
    func fetch(_ key: [UInt8], _ done: @escaping (CacheEntry?, RedisFailure?) -> Void) {
        if let entry = frontEntry(key) {
            counters.withLock { $0.hits &+= 1 }
            return done(entry, nil)
        }
        fetchFromRedis(key) { [self] outcome in
            switch outcome {
            case .hit(let entry, _):
                counters.withLock { $0.hits &+= 1 }
                done(entry, nil)
            case .miss:
                counters.withLock { $0.misses &+= 1 }
                done(nil, nil)
            case .failed(let failure):
                noteFailure(failure)
                done(nil, failure)
            }
        }
    }

    /// Loop: the GET of `key`'s entry, what it says; a hit goes to the
    /// front tier.
    private func fetchFromRedis(_ key: [UInt8], _ done: @escaping (GetOutcome) -> Void) {
        guard isOpen else { return done(.failed(RedisFailure(.closed, "the cache was closed"))) }
        send(RedisCommand(getEntry: options.keyPrefix, key), key: isCluster ? entryKey(key) : nil) { [self] result in
            let outcome = RedisCache.outcome(of: result, at: Clock.wallMs())
            if case .hit(_, let bytes) = outcome { front?.put(key, bytes) }
            done(outcome)
        }
    }

    /// What a GET's reply says.
    fileprivate enum GetOutcome {
        /// A live entry, and its stored form (for the front tier).
        case hit(CacheEntry, [UInt8])
        /// No entry, an expired one, or one that does not decode.
        case miss
        case failed(RedisFailure)
    }

    private static func outcome(of result: Result<RedisReply, RedisFailure>, at nowMs: UInt64) -> GetOutcome {
        switch result {
        case .success(.string(let bytes)):
            guard let entry = RedisEntry.decode(bytes), !entry.isExpired(at: nowMs) else { return .miss }
            return .hit(entry, bytes)
        case .success(.null): return .miss
        case .success(.error(let message)): return .failed(RedisFailure(.reply, message))
        case .success: return .failed(RedisFailure(.reply, "GET answered with another type"))
        case .failure(let failure): return .failed(failure)
        }
    }

    /// Loop: runs `body` with what a lookup fetched visible to `get`.
    func withFetched(_ key: [UInt8], _ entry: CacheEntry?, failure: RedisFailure?, _ body: () -> Void) {
        let saved = fetched
        fetched = (key, entry, failure)
        body()
        fetched = saved
    }

    /// Loop: the failure of the lookup `withFetched` shows, if it failed.
    func fetchFailure(_ key: [UInt8]) -> RedisFailure? {
        guard let fetched, fetched.key == key else { return nil }
        return fetched.failure
    }

    /// How a shared load's lease request ended.
    enum LeaseOutcome {
        /// This process holds the lease: call the loader. The entry stored
        /// now, if any (for a loader that revalidates it).
        case lease(token: UInt64, current: CacheEntry?)
        /// Another process's result (or a fresh enough entry).
        case value(CacheEntry)
        /// Redis cannot say: call the loader without a lease.
        case unavailable
        /// The runtime closes: the job is about to be cancelled.
        case abandoned
    }

    /// Loop: asks for the lease of `key` for a load that began at
    /// `notBeforeMs` (an entry stored since then is its result).
    func acquire(_ key: [UInt8], notBeforeMs: UInt64, _ done: @escaping (LeaseOutcome) -> Void) {
        acquire(LeaseWaiter(key: key, notBeforeMs: notBeforeMs, done: done), waited: false)
    }

    private func acquire(_ waiter: LeaseWaiter, waited: Bool) {
        guard isOpen else { return waiter.finish(closedOutcome) }
        let asked = resultMessages
        command([RedisCache.arg("EVAL"), RedisCache.arg(RedisScripts.acquire), RedisCache.arg("3"),
                 entryKey(waiter.key), leaseKey(waiter.key), keyNames.fence(waiter.key), RedisCache.arg(waiter.notBeforeMs),
                 RedisCache.arg(max(options.leaseMs, 1))]) { [self] result in
            guard case .success(.array(let items)) = result, let kind = items.first?.integer else {
                return waiter.finish(.unavailable)
            }
            switch kind {
            case 1:
                if let bytes = items.dropFirst().first?.bytes, let entry = RedisEntry.decode(bytes) {
                    if waited { counters.withLock { $0.resultsReceived &+= 1 } }
                    front?.put(waiter.key, bytes)
                    waiter.finish(.value(entry))
                } else {
                    waiter.finish(.unavailable)
                }
            case 2:
                guard items.count >= 2, let token = items[1].integer, token > 0 else {
                    return waiter.finish(.unavailable)
                }
                counters.withLock {
                    $0.leasesTaken &+= 1
                    if waited { $0.takeovers &+= 1 }
                }
                let current = items.count >= 3 ? items[2].bytes.flatMap(RedisEntry.decode) : nil
                waiter.finish(.lease(token: UInt64(token), current: current))
            case 3:
                if !waited { counters.withLock { $0.leasesWaited &+= 1 } }
                let remaining = items.count >= 2 ? items[1].integer ?? 0 : 0
                switch resultMessage(about: waiter.key, since: asked) {
                case "X"?: waiter.finish(.unavailable)
                case _?: acquire(waiter, waited: true)
                case nil: wait(waiter, ms: UInt64(clamping: max(remaining, 0)))
                }
            default:
                waiter.finish(.unavailable)
            }
        }
    }

    /// Loop: `waiter` waits for a message about its key, or for the lease
    /// to expire (then it asks again).
    private func wait(_ waiter: LeaseWaiter, ms: UInt64) {
        guard !waiter.isDone else { return }
        // A reply that came after `close` (which let the commands sent
        // answer): nothing would end the wait, and the waiter, holding its
        // load, would keep the cache.
        guard isOpen else { return waiter.finish(closedOutcome) }
        waiters[waiter.key, default: []].append(waiter)
        let timer = waiter.timer ?? LoopTimer(loop: loop.loop)
        waiter.timer = timer
        // A little after the lease's end, so that it has expired when asked again.
        timer.start(after: min(ms, options.leaseMs) &+ 5) { [weak self, weak waiter] in
            guard let self, let waiter else { return }
            self.retry(waiter)
        }
    }

    /// Loop: `waiter` stops waiting and asks for the lease again.
    private func retry(_ waiter: LeaseWaiter) {
        guard let index = waiters[waiter.key]?.firstIndex(where: { $0 === waiter }) else { return }
        waiters[waiter.key]?.remove(at: index)
        if waiters[waiter.key]?.isEmpty == true { waiters[waiter.key] = nil }
        waiter.stopWaiting()
        acquire(waiter, waited: true)
    }

    /// Loop: stores the result of the load that holds the lease `token`,
    /// unless a newer holder took the key over.
    func publish(_ key: [UInt8], _ value: [UInt8], meta: [UInt8], token: UInt64) {
        if let failure = oversize(value, meta) {
            noteFailure(failure)
            // The waiting loads load for themselves.
            return release(key, token: token, message: "X")
        }
        let (encoded, ttl) = entry(value, meta: meta, ttlMs: nil, token: token)
        front?.put(key, encoded)
        let write: [[UInt8]]
        if isCluster {
            index(key, ttl: ttl)
            write = [RedisCache.arg("EVAL"), RedisCache.arg(RedisScripts.publishEntry), RedisCache.arg("2"),
                     entryKey(key), leaseKey(key), RedisCache.arg(token), encoded, RedisCache.arg(ttl), channel,
                     message("D", key)]
        } else {
            write = [RedisCache.arg("EVAL"), RedisCache.arg(RedisScripts.publish), RedisCache.arg("4"),
                     entryKey(key), leaseKey(key), keyNames.keysIndex, keyNames.expiryIndex,
                     RedisCache.arg(token), encoded, RedisCache.arg(ttl), channel, message("D", key), key]
        }
        command(write) { [self] result in
            guard case .success(let reply) = result else { return }
            if reply.integer == 1 {
                counters.withLock { $0.published &+= 1 }
            } else {
                counters.withLock { $0.fenced &+= 1 }
                front?.remove(key)
            }
            // This process's own waiters (other runtimes' loads share its jobs).
            resolveWaiters(of: key, kind: "D")
        }
    }

    /// Loop: gives the lease `token` back (the load failed, was cancelled,
    /// or its value is not stored) and tells the waiting loads: `R` to ask
    /// again, `X` to load for themselves.
    func release(_ key: [UInt8], token: UInt64, message kind: Character = "R") {
        command([RedisCache.arg("EVAL"), RedisCache.arg(RedisScripts.release), RedisCache.arg("1"), leaseKey(key),
                 RedisCache.arg(token), channel, message(kind, key)]) { _ in }
    }

    // MARK: - Messages

    /// Loop: every load waiting for another process's result stops
    /// waiting with `outcome`: `.unavailable` (load for yourself) when a
    /// connection failed and their result may never be heard of.
    private func releaseWaiters(_ outcome: LeaseOutcome = .unavailable) {
        let all = waiters.values.flatMap { $0 }
        waiters = [:]
        for waiter in all { waiter.finish(outcome) }
    }

    private func subscribed() {
        counters.withLock {
            $0.subscribed = true
            $0.connects &+= 1
        }
        // Messages may have been missed while the subscription was down:
        // the front tier is dropped, and waiting loads ask again.
        front?.clear()
        for waiter in waiters.values.flatMap({ $0 }) { retry(waiter) }
    }

    private func received(_ payload: [UInt8]) {
        guard payload.count >= 9, let kind = payload.first.map({ Character(Unicode.Scalar($0)) }) else { return }
        let fromSelf = payload[1..<9].elementsEqual(origin)
        let body = Array(payload[9...])
        switch kind {
        case "D":
            if !fromSelf { front?.remove(body) }
            resolveWaiters(of: body, kind: "D")
        case "R", "X":
            resolveWaiters(of: body, kind: kind)
        case "C":
            if !fromSelf { front?.removeAll(prefix: body) }
        case "I":
            guard !fromSelf else { return }
            front?.removeAll(prefix: body)
            counters.withLock { $0.invalidations &+= 1 }
            runtime?.notifyInvalidated(self, prefix: body)
        default: break
        }
    }

    /// The kind of the latest result message about `key` received after
    /// the `since`-th; "R" when too many came to tell.
    private func resultMessage(about key: [UInt8], since: UInt64) -> Character? {
        let count = resultMessages &- since
        guard count > 0 else { return nil }
        guard count <= UInt64(recentResults.count) else { return "R" }
        var n = resultMessages
        while n > since {
            let slot = recentResults[Int(n % UInt64(recentResults.count))]
            if slot.number == n, slot.key == key { return slot.kind }
            n -= 1
        }
        return nil
    }

    private func resolveWaiters(of key: [UInt8], kind: Character) {
        resultMessages &+= 1
        recentResults[Int(resultMessages % UInt64(recentResults.count))] = (resultMessages, key, kind)
        guard let waiting = waiters.removeValue(forKey: key) else { return }
        for waiter in waiting {
            waiter.stopWaiting()
            if kind == "X" {
                waiter.finish(.unavailable)
            } else {
                acquire(waiter, waited: true)
            }
        }
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

/// A shared load waiting for a lease or another process's result.
final class LeaseWaiter {
    let key: [UInt8]
    let notBeforeMs: UInt64
    private var done: ((RedisCache.LeaseOutcome) -> Void)?
    var timer: LoopTimer?

    init(key: [UInt8], notBeforeMs: UInt64, done: @escaping (RedisCache.LeaseOutcome) -> Void) {
        self.key = key
        self.notBeforeMs = notBeforeMs
        self.done = done
    }

    var isDone: Bool { done == nil }

    /// Its timer goes whenever it stops waiting: a timer open while its
    /// request is out would be closed by a stopping loop without its memory.
    func stopWaiting() {
        timer?.close()
        timer = nil
    }

    func finish(_ outcome: RedisCache.LeaseOutcome) {
        stopWaiting()
        guard let done else { return }
        self.done = nil
        done(outcome)
    }
}

/// The header's bounds, for Swift.
let LDS_REDIS_PENDING_MAX_VALUE = 65_536
let LDS_REDIS_KEYS_MAX_VALUE = 1_000_000

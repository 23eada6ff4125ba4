import CHiredis

extension RedisCache {
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
}

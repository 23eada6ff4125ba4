extension RedisCache {
    func entryKey(_ key: [UInt8]) -> [UInt8] { keyNames.entry(key) }
    func leaseKey(_ key: [UInt8]) -> [UInt8] { keyNames.lease(key) }

    func message(_ kind: Character, _ body: [UInt8]) -> [UInt8] {
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
    func oversize(_ value: [UInt8], _ meta: [UInt8]) -> RedisFailure? {
        guard value.count + meta.count > options.maxValueBytes else { return nil }
        return RedisFailure(.tooBig, "a value of \(value.count) bytes is over max_value_bytes (\(options.maxValueBytes)): not stored")
    }

    /// The stored form of `value` put now with `ttlMs` (nil: the cache's)
    /// under the lease `token` (0: none), and its time to live in Redis.
    func entry(_ value: [UInt8], meta: [UInt8], ttlMs: UInt64?, token: UInt64) -> ([UInt8], UInt64) {
        let now = Clock.wallMs()
        let ttl = ttl(ttlMs)
        return (RedisEntry.encode(value, meta: meta, storedAtMs: now,
                                  expiresAtMs: CacheEntry.expiry(storedAt: now, ttlMs: ttl), token: token), ttl)
    }

    static func arg(_ n: UInt64) -> [UInt8] { Array(String(n).utf8) }
    static func arg(_ n: Int) -> [UInt8] { Array(String(n).utf8) }
    static func arg(_ s: String) -> [UInt8] { Array(s.utf8) }

    /// `failure` as a `CacheError`; noted in the status unless it already was.
    func cacheError(_ failure: RedisFailure, noted: Bool = false) -> CacheError {
        if !noted { noteFailure(failure) }
        return RedisCache.cacheError(failure, of: name)
    }

    static func cacheError(_ failure: RedisFailure, of name: String) -> CacheError {
        CacheError(failure.code == .closed ? .closed : .redis, "\(name): \(failure.message)")
    }

    /// Loop: sends a command, `done` with its reply or the failure as a `CacheError`.
    func command(_ args: [[UInt8]], _ done: @escaping (Result<RedisReply, CacheError>) -> Void) {
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
    func send(_ command: RedisCommand, key: [UInt8]?,
                      _ done: @escaping (Result<RedisReply, RedisFailure>) -> Void) {
        if let cluster { return cluster.send(command, key: key, done) }
        guard let commands else { return done(.failure(RedisFailure(.closed, "the cache was closed"))) }
        commands.send(command, done)
    }
}

extension RedisCache {
    /// Runs `body` on the loop and waits for the result it passes on.
    func onLoop<T>(_ body: @escaping (@escaping (Result<T, CacheError>) -> Void) -> Void)
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
    func onLoopWithProgress<T>(
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
}

extension RedisCache {
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

    func acquire(_ waiter: LeaseWaiter, waited: Bool) {
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
    func retry(_ waiter: LeaseWaiter) {
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

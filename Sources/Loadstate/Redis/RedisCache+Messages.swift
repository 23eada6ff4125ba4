extension RedisCache {
    /// Loop: every load waiting for another process's result stops
    /// waiting with `outcome`: `.unavailable` (load for yourself) when a
    /// connection failed and their result may never be heard of.
    func releaseWaiters(_ outcome: LeaseOutcome = .unavailable) {
        let all = waiters.values.flatMap { $0 }
        waiters = [:]
        for waiter in all { waiter.finish(outcome) }
    }

    func subscribed() {
        counters.withLock {
            $0.subscribed = true
            $0.connects &+= 1
        }
        // Messages may have been missed while the subscription was down:
        // the front tier is dropped, and waiting loads ask again.
        front?.clear()
        for waiter in waiters.values.flatMap({ $0 }) { retry(waiter) }
    }

    func received(_ payload: [UInt8]) {
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
    func resultMessage(about key: [UInt8], since: UInt64) -> Character? {
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

    func resolveWaiters(of key: [UInt8], kind: Character) {
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

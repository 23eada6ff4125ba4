extension RedisCache {
    /// The most bytes one reply from Redis may hold (see LDS_REDIS_REPLY_SLACK
    /// in the C header): an entry of `maxValueBytes` and 1 MiB more for
    /// the entry's header, the protocol's framing and the other replies
    /// (key lists, scripts' answers). Each element of a reply counts 48
    /// bytes besides its own.
    static func maxReplyBytes(_ maxValueBytes: Int) -> Int {
        let (sum, overflow) = maxValueBytes.addingReportingOverflow(1 << 20)
        return overflow ? .max : sum
    }

    func start() {
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

    func noteFailure(_ failure: RedisFailure) { RedisCache.note(failure, in: counters) }

    static func note(_ failure: RedisFailure, in counters: Locked<Status>) {
        counters.withLock {
            $0.errors &+= 1
            $0.lastErrorCode = failure.code
            $0.lastError = failure.message
        }
    }
}

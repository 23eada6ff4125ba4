/// A Redis cache's commands routed over a Redis Cluster: one connection
/// (a `RedisConnection`) per master, each command sent to the master of
/// its key's slot.
///
/// - Slots: the map of the 16,384 slots to their masters comes from
///   `CLUSTER SLOTS`, asked of a connected node (first of the seeds). A
///   command whose slot has no known master goes to any node; its `MOVED`
///   reply then says where.
/// - `MOVED slot host:port`: the slot's master changed; the command is sent
///   there, the map learns it and is read again soon. `ASK slot host:port`
///   (a slot migrating): the command is sent there once, after `ASKING`.
///   At most `maxHops` redirections per command.
/// - A lost connection to a master fails its commands (the loads go on
///   through their loaders) and has the map read again: every 500 ms
///   while a master's connection is down, so that a replica promoted by a
///   failover is found within about the cluster's node timeout plus half a
///   second. Masters that left the map have their connections closed.
/// - Messages: one subscribed connection to one node (cluster-wide
///   `PUBLISH` reaches every node); when it fails, it moves to another
///   node after a back-off.
///
/// Loop thread only, like `RedisConnection`.
final class RedisCluster {
    static let slotCount = 16_384
    /// Redirections (`MOVED`, `ASK`) one command may follow.
    static let maxHops = 5
    /// The most masters (and nodes named by a reply) kept; a map naming more
    /// is refused.
    static let maxNodes = 1_024

    private let eventLoop: EventLoop
    private let settings: RedisConnection.Settings
    private let seeds: [String]
    private let channel: [UInt8]

    /// Connections by node name ("host:port").
    private var nodes: [String: RedisConnection] = [:]
    /// The master of each slot: an index into `masters`, or -1.
    private var slots = [Int16](repeating: -1, count: RedisCluster.slotCount)
    private var masters: [String] = []
    private var mapped = false
    private var refreshing = false
    private var lastRefreshMs: UInt64 = 0
    private var refreshTimer: LoopTimer?
    private var closed = false
    /// Whether `onReady` was called since the last failure.
    private var reportedReady = false

    private var subscriber: RedisConnection?
    private var subscriberNode: String?
    private var subscriberTimer: LoopTimer?
    private var subscriberBackoffMs: UInt64 = 0

    /// Called when the map is read and every master's connection is up.
    var onReady: (() -> Void)?
    /// Called with every failure of a connection to a master, or of reading the map.
    var onFailure: ((RedisFailure) -> Void)?
    /// The subscription is up (again).
    var onSubscribed: (() -> Void)?
    /// The subscription failed.
    var onSubscriberFailure: ((RedisFailure) -> Void)?
    /// A message on the channel.
    var onMessage: (([UInt8]) -> Void)?

    init(loop: EventLoop, settings: RedisConnection.Settings, seeds: [RedisURL.Address], channel: [UInt8]) {
        eventLoop = loop
        self.settings = settings
        self.seeds = seeds.compactMap {
            if case .tcp(let host, let port) = $0 { return RedisCluster.nodeName(host, port) }
            return nil
        }
        self.channel = channel
    }

    static func nodeName(_ host: String, _ port: UInt16) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// Whether the map is read and every master's connection is up.
    var isReady: Bool {
        mapped && masters.allSatisfy { nodes[$0]?.isReady == true }
    }

    /// Calls `onReady` when the cluster became ready since the last failure.
    private func reportIfReady() {
        guard isReady, !reportedReady else { return }
        reportedReady = true
        onReady?()
    }

    // MARK: - Slots

    /// The slot of `key` (Redis Cluster's rule: the CRC16 of the hash tag,
    /// the part between the first "{" and the next "}" when not empty,
    /// else of the whole key).
    static func slot(of key: [UInt8]) -> Int {
        key.withUnsafeBytes { bytes -> Int in
            var part = bytes[...]
            if let open = bytes.firstIndex(of: UInt8(ascii: "{")),
               let close = bytes[(open + 1)...].firstIndex(of: UInt8(ascii: "}")), close > open + 1 {
                part = bytes[(open + 1)..<close]
            }
            return Int(crc16(UnsafeRawBufferPointer(rebasing: part)) & 0x3fff)
        }
    }

    /// CRC16-CCITT (XMODEM), as Redis Cluster computes it.
    static func crc16(_ bytes: UnsafeRawBufferPointer) -> UInt16 {
        var crc: UInt16 = 0
        for b in bytes {
            crc ^= UInt16(b) << 8
            for _ in 0..<8 {
                crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1
            }
        }
        return crc
    }

    // MARK: - Lifecycle

    func start() {
        refreshTimer = LoopTimer(loop: eventLoop.loop)
        subscriberTimer = LoopTimer(loop: eventLoop.loop)
        refresh()
        subscribe(to: seeds.first)
    }

    func close(graceful: Bool) {
        guard !closed else { return }
        closed = true
        onReady = nil
        onFailure = nil
        onSubscribed = nil
        onSubscriberFailure = nil
        onMessage = nil
        refreshTimer?.close()
        refreshTimer = nil
        subscriberTimer?.close()
        subscriberTimer = nil
        for connection in nodes.values { connection.close(graceful: graceful) }
        nodes = [:]
        subscriber?.close()
        subscriber = nil
    }

    /// The connection to `name`, made (and started) when there is none.
    private func connection(_ name: String) -> RedisConnection? {
        if let existing = nodes[name] { return existing }
        guard !closed, nodes.count < RedisCluster.maxNodes, let address = RedisCluster.address(name) else { return nil }
        var s = settings
        s.url.address = address
        let connection = RedisConnection(loop: eventLoop, settings: s)
        connection.onReady = { [weak self] in self?.reportIfReady() }
        connection.onFailure = { [weak self] failure in
            guard let self else { return }
            self.reportedReady = false
            self.onFailure?(failure)
            self.refreshSoon()
        }
        nodes[name] = connection
        connection.start()
        return connection
    }

    /// "host:port" or "[v6]:port" as an address; nil when it is not one.
    static func address(_ name: String) -> RedisURL.Address? {
        guard let colon = name.lastIndex(of: ":"), let port = UInt16(name[name.index(after: colon)...]), port > 0
        else { return nil }
        var host = name[..<colon]
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        guard !host.isEmpty, host.utf8.count <= 253,
              host.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == ":" || $0 == "_" })
        else { return nil }
        return .tcp(host: String(host), port: port)
    }

    // MARK: - Commands

    /// Sends `command`, whose key (the first, for a script) is `key`, to
    /// the master of its slot (any node when `key` is nil or the slot has
    /// no known master), following redirections; `done` once, on the loop.
    func send(_ command: RedisCommand, key: [UInt8]?, _ done: @escaping (Result<RedisReply, RedisFailure>) -> Void) {
        let slot = key.map(RedisCluster.slot(of:))
        route(command, slot: slot, to: nil, asking: false, hops: 0, done)
    }

    private func route(_ command: RedisCommand, slot: Int?, to node: String?, asking: Bool, hops: Int,
                       _ done: @escaping (Result<RedisReply, RedisFailure>) -> Void) {
        guard !closed else { return done(.failure(RedisFailure(.closed, "the cache was closed"))) }
        guard let name = node ?? slot.flatMap(master(of:)) ?? anyNode(), let connection = connection(name) else {
            return done(.failure(RedisFailure(.down, "no node of the Redis Cluster is known")))
        }
        if asking { connection.send([Array("ASKING".utf8)]) { _ in } }
        connection.send(command) { [weak self] result in
            guard let self, !self.closed, case .success(.error(let message)) = result else { return done(result) }
            guard let redirect = Redirect(message) else {
                if message.hasPrefix("CLUSTERDOWN") { self.refreshSoon() }
                return done(result)
            }
            guard hops < RedisCluster.maxHops else {
                return done(.failure(RedisFailure(.reply, "more than \(RedisCluster.maxHops) redirections: \(message)")))
            }
            if !redirect.ask {
                self.learn(slot: redirect.slot, master: redirect.node)
                self.refreshSoon()
            }
            self.route(command, slot: slot, to: redirect.node, asking: redirect.ask, hops: hops + 1, done)
        }
    }

    /// The master that serves `slot` now, as its index in the map (valid
    /// until the map changes: use it at once), if the map names one.
    func masterIndex(ofSlot slot: Int) -> Int? {
        guard slot >= 0, slot < slots.count else { return nil }
        let i = Int(slots[slot])
        return i >= 0 && i < masters.count ? i : nil
    }

    /// The name of the master of index `i` (see `masterIndex(ofSlot:)`).
    func masterName(_ i: Int) -> String? { i >= 0 && i < masters.count ? masters[i] : nil }

    /// Sends the commands of `group` to `node` together (one write), as
    /// `RedisConnection.send(_:each:)` does; redirections are not followed
    /// here (a `MOVED` or `ASK` comes back as the command's error reply, for
    /// the caller to send again through `send`).
    func send(_ group: RedisCommandGroup, to node: String,
              each: @escaping (Int, Result<UnsafeRawPointer, RedisFailure>) -> Void) {
        guard !closed, let connection = connection(node) else {
            let failure = RedisFailure(closed ? .closed : .down, closed ? "the cache was closed"
                                       : "no node of the Redis Cluster is known")
            for i in 0..<group.count { each(i, .failure(failure)) }
            return
        }
        connection.send(group) { [weak self] i, result in
            if case .failure = result { self?.refreshSoon() }
            each(i, result)
        }
    }

    private func master(of slot: Int) -> String? {
        guard slot >= 0, slot < slots.count else { return nil }
        let i = Int(slots[slot])
        return i >= 0 && i < masters.count ? masters[i] : nil
    }

    /// A node to ask when the slot's master is not known: a ready master,
    /// else a known one, else the first seed.
    private func anyNode() -> String? {
        masters.first { nodes[$0]?.isReady == true } ?? masters.first ?? seeds.first
    }

    private func learn(slot: Int, master name: String) {
        guard slot >= 0, slot < slots.count else { return }
        if let i = masters.firstIndex(of: name) {
            slots[slot] = Int16(i)
        } else if masters.count < RedisCluster.maxNodes {
            masters.append(name)
            slots[slot] = Int16(masters.count - 1)
        }
    }

    /// A `MOVED` or `ASK` error reply.
    struct Redirect {
        var ask: Bool
        var slot: Int
        var node: String

        init?(_ message: String) {
            let words = message.split(separator: " ")
            guard words.count == 3, words[0] == "MOVED" || words[0] == "ASK",
                  let slot = Int(words[1]), slot >= 0, slot < RedisCluster.slotCount,
                  RedisCluster.address(String(words[2])) != nil else { return nil }
            ask = words[0] == "ASK"
            self.slot = slot
            node = String(words[2])
        }
    }

    // MARK: - The map

    /// Reads the map again within 200 ms of the last time (once at a time).
    private func refreshSoon() {
        guard !closed, !refreshing, let timer = refreshTimer else { return }
        let next = lastRefreshMs &+ 200
        let now = Clock.monotonicMs()
        timer.start(after: next > now ? next - now : 0) { [weak self] in self?.refresh() }
    }

    private func refresh() {
        guard !closed, !refreshing else { return }
        refreshing = true
        lastRefreshMs = Clock.monotonicMs()
        // Ready masters first, then the others, then the seeds.
        var names = masters.filter { nodes[$0]?.isReady == true }
        for name in masters + seeds where !names.contains(name) { names.append(name) }
        ask(names, 0)
    }

    private func ask(_ names: [String], _ i: Int) {
        guard !closed else { return }
        guard i < names.count, let connection = connection(names[i]) else {
            refreshing = false
            reportedReady = false
            onFailure?(RedisFailure(.down, "no node of the Redis Cluster answered CLUSTER SLOTS"))
            refreshTimer?.start(after: 500) { [weak self] in self?.refresh() }
            return
        }
        let asked = names[i]
        connection.send([Array("CLUSTER".utf8), Array("SLOTS".utf8)]) { [weak self] result in
            guard let self, !self.closed else { return }
            guard case .success(.array(let ranges)) = result, self.apply(ranges, askedOf: asked) else {
                return self.ask(names, i + 1)
            }
            self.refreshing = false
            self.reportIfReady()
            // A master whose connection is down: maybe failing over. Look again.
            if !self.masters.allSatisfy({ self.nodes[$0]?.isReady == true }) {
                self.refreshTimer?.start(after: 500) { [weak self] in self?.refresh() }
            }
        }
    }

    /// Takes the map of a `CLUSTER SLOTS` reply (asked of `asked`); false
    /// when it is not one that covers slots.
    private func apply(_ ranges: [RedisReply], askedOf asked: String) -> Bool {
        var newSlots = [Int16](repeating: -1, count: RedisCluster.slotCount)
        var newMasters: [String] = []
        let askedHost = RedisCluster.address(asked).flatMap { address -> String? in
            if case .tcp(let host, _) = address { return host }
            return nil
        }
        for range in ranges {
            guard case .array(let fields) = range, fields.count >= 3,
                  let first = fields[0].integer, let last = fields[1].integer,
                  first >= 0, first <= last, last < Int64(RedisCluster.slotCount),
                  case .array(let node) = fields[2], node.count >= 2,
                  let port = node[1].integer, port > 0, port <= 65_535 else { return false }
            var host = node[0].bytes.map { String(decoding: $0, as: UTF8.self) } ?? ""
            if host.isEmpty || host == "?" { host = askedHost ?? "" }
            let name = RedisCluster.nodeName(host, UInt16(port))
            guard RedisCluster.address(name) != nil else { return false }
            let index: Int
            if let i = newMasters.firstIndex(of: name) {
                index = i
            } else {
                guard newMasters.count < RedisCluster.maxNodes else { return false }
                newMasters.append(name)
                index = newMasters.count - 1
            }
            for s in Int(first)...Int(last) { newSlots[s] = Int16(index) }
        }
        guard !newMasters.isEmpty else { return false }
        slots = newSlots
        masters = newMasters
        mapped = true
        // Connections to every master; those to nodes no longer masters go.
        for name in newMasters { _ = connection(name) }
        for (name, connection) in nodes where !newMasters.contains(name) {
            connection.close(graceful: true)
            nodes[name] = nil
        }
        return true
    }

    // MARK: - Messages

    private func subscribe(to name: String?) {
        guard !closed, let name, let address = RedisCluster.address(name) else { return }
        var s = settings
        s.url.address = address
        let connection = RedisConnection(loop: eventLoop, settings: s, subscribeTo: channel)
        connection.onReady = { [weak self] in
            self?.subscriberBackoffMs = 0
            self?.onSubscribed?()
        }
        connection.onFailure = { [weak self] failure in
            guard let self else { return }
            self.onSubscriberFailure?(failure)
            self.moveSubscriber()
        }
        connection.onMessage = { [weak self] payload in self?.onMessage?(payload) }
        subscriber = connection
        subscriberNode = name
        connection.start()
    }

    /// The subscription failed: after a back-off, it is made again on the
    /// next node (the masters in turn, then the seeds).
    private func moveSubscriber() {
        guard !closed, let timer = subscriberTimer else { return }
        subscriberBackoffMs = subscriberBackoffMs == 0 ? 50 : min(subscriberBackoffMs &* 2, max(settings.reconnectMaxMs, 50))
        timer.start(after: subscriberBackoffMs) { [weak self] in
            guard let self, !self.closed else { return }
            self.subscriber?.close()
            self.subscriber = nil
            var candidates = self.masters.filter { self.nodes[$0]?.isReady == true }
            for name in self.masters + self.seeds where !candidates.contains(name) { candidates.append(name) }
            let next = candidates.firstIndex(of: self.subscriberNode ?? "").map { candidates[($0 + 1) % candidates.count] }
                ?? candidates.first
            self.subscribe(to: next)
        }
    }
}

import CHiredis
import CLibUV
#if canImport(Glibc)
import Glibc
#endif

/// A reply from Redis, copied out of hiredis's memory.
enum RedisReply {
    case string([UInt8])
    case integer(Int64)
    case array([RedisReply])
    case null
    case status(String)
    case error(String)

    /// Arrays deeper than this are refused (no reply of this library nests more than twice).
    static let maxDepth = 8

    /// Copies hiredis's reply at `raw`.
    init(_ raw: UnsafeRawPointer, depth: Int = 0) {
        func bytes() -> [UInt8] {
            let len = lds_redis_reply_len(raw)
            guard len > 0, let str = lds_redis_reply_str(raw) else { return [] }
            return Array(UnsafeRawBufferPointer(start: str, count: len))
        }
        switch lds_redis_reply_type(raw) {
        case REDIS_REPLY_STRING: self = .string(bytes())
        case REDIS_REPLY_INTEGER: self = .integer(Int64(lds_redis_reply_integer(raw)))
        case REDIS_REPLY_NIL: self = .null
        case REDIS_REPLY_STATUS: self = .status(String(decoding: bytes(), as: UTF8.self))
        case REDIS_REPLY_ERROR: self = .error(String(decoding: bytes().prefix(512), as: UTF8.self))
        case REDIS_REPLY_ARRAY:
            guard depth < RedisReply.maxDepth else {
                self = .error("reply nested too deeply")
                return
            }
            let count = lds_redis_reply_elements(raw)
            var items: [RedisReply] = []
            items.reserveCapacity(count)
            for i in 0..<count {
                if let element = lds_redis_reply_element(raw, i) {
                    items.append(RedisReply(element, depth: depth + 1))
                } else {
                    items.append(.null)
                }
            }
            self = .array(items)
        default: self = .error("unknown reply type")
        }
    }

    var integer: Int64? {
        if case .integer(let n) = self { return n }
        return nil
    }

    var bytes: [UInt8]? {
        if case .string(let b) = self { return b }
        return nil
    }
}

/// Why a Redis command failed; the codes are the header's `LDS_REDIS_E*`
/// (the codes of `ErrorDomain.redis`).
public struct RedisFailure: Error, Sendable, Equatable {
    /// What went wrong.
    public enum Code: Int32, Sendable {
        /// The connection could not be made or was lost.
        case connect = 1
        /// No reply or connection in time.
        case timedOut
        /// `AUTH` or `SELECT` was refused.
        case auth
        /// An error reply, or a reply of another shape.
        case reply
        /// The value is larger than the cache's bound: not stored.
        case tooBig
        /// Not connected: waiting to try again.
        case down
        /// The cache was closed while the command waited.
        case closed
        /// Too many commands wait.
        case queue
        /// The server broke a bound: a reply larger than the cache accepts,
        /// or one that took longer than the command timeout to arrive.
        case proto
        /// The server refused the connection (nothing listens there).
        case refused
        /// The host could not be reached: its name does not resolve, or no
        /// route leads to it (or, for a unix socket, no such file).
        case unreachable
    }

    /// What went wrong.
    public var code: Code
    /// A message for people.
    public var message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}

/// One connection to Redis on the runtime's loop, through hiredis's async
/// API and its libuv adapter: commands, or (`subscribeTo`) the messages of
/// one channel.
///
/// Lifecycle (loop thread only): `start` connects; a lost connection (an
/// error, a reply that does not come within `commandTimeoutMs`, a refused
/// `AUTH`) is dropped, every command waiting on it fails, and a new one is
/// made after a back-off that doubles from 50 ms up to `reconnectMaxMs`.
/// Commands sent before the first connection is made wait for it (within
/// the command timeout); later, while no connection is up, they fail at
/// once with `.down`. `close` drops the connection for good.
final class RedisConnection: Lingering {
    struct Settings {
        var url: RedisURL
        var commandTimeoutMs: UInt64
        var connectTimeoutMs: UInt64
        var reconnectMaxMs: UInt64
        /// The most commands waiting for a connection or a reply.
        var pendingMax: Int
        /// The most bytes one reply may hold, read or waiting to be (see
        /// `RedisCache.maxReplyBytes`).
        var maxReplyBytes: Int = 9 << 20
    }

    private enum State {
        case idle, resolving, connecting, ready, backoff, closed
    }

    /// What a sent command answers with: one command's copied reply, or
    /// each of a group's replies by index, in hiredis's memory (valid for
    /// the time of the call).
    private enum Completion {
        case one((Result<RedisReply, RedisFailure>) -> Void)
        case each((Int, Result<UnsafeRawPointer, RedisFailure>) -> Void)
    }

    /// A command, or a group of commands sent together, waiting for its
    /// replies.
    private final class Pending {
        private let completion: Completion
        let deadline: UInt64
        /// The encoded commands until they are handed to hiredis.
        var commands: RedisCommandGroup
        /// How many of them are sent (the others failed at once).
        private(set) var count: Int
        /// Replies (or failures) delivered: they come in order.
        private var answered = 0

        init(_ command: RedisCommand, deadline: UInt64, done: @escaping (Result<RedisReply, RedisFailure>) -> Void) {
            commands = RedisCommandGroup(command)
            count = 1
            self.deadline = deadline
            completion = .one(done)
        }

        init(_ commands: RedisCommandGroup, sending count: Int, deadline: UInt64,
             each: @escaping (Int, Result<UnsafeRawPointer, RedisFailure>) -> Void) {
            self.commands = commands
            self.count = count
            self.deadline = deadline
            completion = .each(each)
        }

        /// Delivers the reply of command `index` once (a dropped connection
        /// and hiredis may both report it); an index out of turn is ignored.
        func finish(_ index: Int, _ result: Result<UnsafeRawPointer, RedisFailure>) {
            guard index == answered, index < count else { return }
            answered += 1
            deliver(index, result)
        }

        /// Fails every command not answered yet.
        func failRest(_ failure: RedisFailure) {
            while answered < count { finish(answered, .failure(failure)) }
        }

        /// Command `index` could not be sent: it and those after it fail
        /// now; those before it still get their replies.
        func failUnsent(from index: Int, _ failure: RedisFailure) {
            let sent = min(max(index, answered), count)
            let unsent = sent..<count
            count = sent
            for i in unsent { deliver(i, .failure(failure)) }
        }

        private func deliver(_ index: Int, _ result: Result<UnsafeRawPointer, RedisFailure>) {
            switch completion {
            case .one(let done): done(result.map { RedisReply($0) })
            case .each(let done): done(index, result)
            }
        }
    }

    /// A command on the connection: its serial, and which of its pending
    /// group's commands it is.
    private struct Sent {
        let serial: UInt
        let pending: Pending
        let index: Int
    }

    private let eventLoop: EventLoop
    private var loop: UnsafeMutablePointer<uv_loop_t> { eventLoop.loop }
    private let settings: Settings
    /// The channel a subscriber listens to; nil for a command connection.
    private let channel: [UInt8]?
    private var state = State.idle
    private var context: UnsafeMutablePointer<redisAsyncContext>?
    /// Commands sent on the connection, in order (replies come in this order).
    private var inflight: [Sent] = []
    private var inflightHead = 0
    /// The serial of the last command sent.
    private var lastSerial: UInt = 0
    /// Commands waiting for the first connection.
    private var waiting: [Pending] = []
    /// How many commands `waiting` holds.
    private var waitingCount = 0
    private var connectDeadline: UInt64 = 0
    private var backoffMs: UInt64 = 0
    private var backoffUntil: UInt64 = 0
    /// Whether a connection attempt failed since the last one that worked.
    private var hasFailed = false
    /// Why the current connection is being dropped (for its commands' failures).
    private var dropReason: RedisFailure?
    private var timer: LoopTimer?
    /// What the reader counts of the reply being read (see the shim).
    private let tally: UnsafeMutablePointer<lds_redis_tally> = {
        let t = UnsafeMutablePointer<lds_redis_tally>.allocate(capacity: 1)
        t.initialize(to: lds_redis_tally())
        return t
    }()
    /// Since when (monotonic ms) a reply has been partly read, and which
    /// reply that is (the tally's count of replies begun then).
    private var partialSince: UInt64?
    private var partialReply = 0

    /// Called when a connection is made (and, for a subscriber, subscribed).
    var onReady: (() -> Void)?
    /// Called with every failure (a lost connection, a failed attempt, a command's error).
    var onFailure: ((RedisFailure) -> Void)?
    /// A subscriber's messages (the payload).
    var onMessage: (([UInt8]) -> Void)?

    init(loop: EventLoop, settings: Settings, subscribeTo channel: [UInt8]? = nil) {
        eventLoop = loop
        self.settings = settings
        self.channel = channel
        _ = Self.pendingHook
    }

    deinit {
        tally.deallocate()
    }

    /// Tells each connection, after each read, how many bytes of an
    /// unfinished reply wait (installed once).
    private static let pendingHook: Void = lds_redis_set_pending_hook { ac, pending in
        guard let ac, let data = ac.pointee.data else { return }
        Unmanaged<RedisConnection>.fromOpaque(data).takeUnretainedValue().read(pending: pending)
    }

    /// After a read: `pending` bytes of a reply wait for the rest of it. A
    /// reply over `maxReplyBytes`, or one still incomplete a command timeout
    /// after it began to arrive, drops the connection (`.proto`).
    private func read(pending: Int) {
        guard pending > 0 else {
            if partialSince != nil {
                partialSince = nil
                armTimer()
            }
            return
        }
        if pending > settings.maxReplyBytes {
            return drop(RedisFailure(.proto, "Redis sent a reply over \(settings.maxReplyBytes) bytes: connection dropped"))
        }
        let reply = tally.pointee.replies
        if partialSince == nil || reply != partialReply {
            partialSince = Clock.monotonicMs()
            partialReply = reply
            armTimer()
        }
    }

    var isReady: Bool { state == .ready }

    /// Loop: starts connecting.
    func start() {
        guard state == .idle else { return }
        timer = LoopTimer(loop: loop)
        connect()
    }

    /// Loop: closes the connection for good; commands waiting for a
    /// connection fail with `.closed`. `graceful`: the commands already
    /// sent (a result published, a lease released just before the cache or
    /// the runtime closed) are written and their replies awaited, within
    /// the command timeout, before the connection goes; otherwise they fail.
    func close(graceful: Bool = false) {
        guard state != .closed else { return }
        let reason = RedisFailure(.closed, "the cache was closed")
        failWaiting(reason)
        onReady = nil
        onFailure = nil
        onMessage = nil
        // What a work item sent is written before the connection goes
        // (the write may itself find the connection lost).
        if graceful, state == .ready, let ac = context { lds_redis_flush(ac) }
        if graceful, state == .ready, let ac = context {
            state = .closed
            // Kept alive (hiredis holds it as the context's data) until
            // hiredis says the connection is gone, or the timer drops it.
            lingering = self
            // A runtime that stops meanwhile leaves the socket's handle open
            // to it until it is done (or the stop's deadline passes).
            if let handle = lds_redis_poll_handle(ac) { eventLoop.addLingering(self, keeping: handle) }
            redisAsyncDisconnect(ac)
            timer?.start(after: settings.commandTimeoutMs) { [weak self] in self?.dropLingering() }
            return
        }
        drop(reason, reconnect: false)
        state = .closed
        timer?.close()
        timer = nil
    }

    /// Set while a graceful close waits for the last replies.
    private var lingering: RedisConnection?

    /// The graceful close's time is up: whatever did not answer fails.
    private func dropLingering() {
        if let ac = context {
            context = nil
            ac.pointee.data = nil
            failInflight(RedisFailure(.closed, "the cache was closed before Redis answered"))
            redisAsyncFree(ac)
        }
        timer?.close()
        timer = nil
        eventLoop.removeLingering(self)
        lingering = nil
    }

    /// The runtime stops: its deadline bounds the wait from now on, and
    /// the timer is closed before the loop closes the handles left.
    func loopStopping() {
        timer?.close()
        timer = nil
    }

    func loopDeadline() { dropLingering() }

    /// Loop: sends a command; `done` is called once, on the loop, with its
    /// reply (an error reply included) or a failure.
    func send(_ args: [[UInt8]], _ done: @escaping (Result<RedisReply, RedisFailure>) -> Void) {
        send(RedisCommand(args), done)
    }

    /// Loop: sends a command already encoded (see `send(_:_:)`).
    func send(_ command: RedisCommand, _ done: @escaping (Result<RedisReply, RedisFailure>) -> Void) {
        switch admission(1) {
        case .failure(let failure): done(.failure(failure))
        case .success:
            enqueue(Pending(command, deadline: Clock.monotonicMs() &+ settings.commandTimeoutMs, done: done))
        }
    }

    /// Loop: sends the commands of `group` one after another (they go out
    /// in one write); `each` is called once for every command, on the
    /// loop, with its index and its reply (an error reply included) in
    /// hiredis's memory, valid only for the time of the call, or a
    /// failure. A command that does not fit in `pendingMax` fails at once
    /// with `.queue`, before the replies of those that fit.
    func send(_ group: RedisCommandGroup, each: @escaping (Int, Result<UnsafeRawPointer, RedisFailure>) -> Void) {
        let room: Int
        switch admission(group.count) {
        case .failure(let failure):
            for i in 0..<group.count { each(i, .failure(failure)) }
            return
        case .success(let fits): room = fits
        }
        if room < group.count {
            let full = RedisFailure(.queue, "too many Redis commands waiting")
            for i in room..<group.count { each(i, .failure(full)) }
        }
        guard room > 0 else { return }
        enqueue(Pending(group, sending: room, deadline: Clock.monotonicMs() &+ settings.commandTimeoutMs, each: each))
    }

    /// How many of `wanted` commands may be sent now, or why none may.
    private func admission(_ wanted: Int) -> Result<Int, RedisFailure> {
        switch state {
        case .ready: break
        case .idle, .resolving, .connecting:
            guard !hasFailed else { return .failure(down) }
        case .backoff: return .failure(down)
        case .closed: return .failure(RedisFailure(.closed, "the cache was closed"))
        }
        let room = max(settings.pendingMax &- pendingCount, 0)
        guard room > 0 else { return .failure(RedisFailure(.queue, "too many Redis commands waiting")) }
        return .success(min(room, wanted))
    }

    /// Writes `pending` on the ready connection, or keeps it for the first one.
    private func enqueue(_ pending: Pending) {
        if state == .ready { return write(pending) }
        waiting.append(pending)
        waitingCount &+= pending.count
        armTimer()
    }

    private var down: RedisFailure { RedisFailure(.down, "Redis is not connected (reconnecting)") }

    private var pendingCount: Int { inflight.count &- inflightHead &+ waitingCount }

    // MARK: - Connecting

    private func connect() {
        guard state != .closed else { return }
        connectDeadline = Clock.monotonicMs() &+ settings.connectTimeoutMs
        switch settings.url.address {
        case .unix(let path):
            state = .connecting
            open(redisAsyncConnectUnix(path))
        case .tcp(let host, let port):
            if isNumericAddress(host) {
                state = .connecting
                open(redisAsyncConnect(host, Int32(port)))
            } else {
                state = .resolving
                resolve(host, port: port)
            }
        }
        armTimer()
    }

    private func isNumericAddress(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    /// Resolves `host` on libuv's thread pool (getaddrinfo blocks).
    private func resolve(_ host: String, port: UInt16) {
        let request = UnsafeMutablePointer<uv_getaddrinfo_t>.allocate(capacity: 1)
        let box = Unmanaged.passRetained(ResolveBox(self, port: port))
        request.pointee.data = box.toOpaque()
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        let rc = uv_getaddrinfo(loop, request, { req, status, result in
            guard let req else { return }
            let box = Unmanaged<ResolveBox>.fromOpaque(req.pointee.data).takeRetainedValue()
            req.deallocate()
            var address: String?
            if status == 0, let info = result, let sa = info.pointee.ai_addr {
                var name = [CChar](repeating: 0, count: 64)
                if info.pointee.ai_family == AF_INET6 {
                    sa.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { _ = uv_ip6_name($0, &name, 64) }
                } else {
                    sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { _ = uv_ip4_name($0, &name, 64) }
                }
                address = String(decoding: name.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) },
                                  as: UTF8.self)
            }
            if let result { uv_freeaddrinfo(result) }
            box.connection?.resolved(address, port: box.port, status: status)
        }, host, nil, &hints)
        if rc != 0 {
            box.release()
            request.deallocate()
            failed(RedisFailure(.unreachable, "cannot resolve \(host): \(String(cString: uv_strerror(rc)))"))
        }
    }

    private final class ResolveBox {
        weak var connection: RedisConnection?
        let port: UInt16
        init(_ connection: RedisConnection, port: UInt16) {
            self.connection = connection
            self.port = port
        }
    }

    private func resolved(_ address: String?, port: UInt16, status: Int32) {
        guard state == .resolving else { return }
        guard let address else {
            return failed(RedisFailure(.unreachable, "cannot resolve the host: \(String(cString: uv_strerror(status)))"))
        }
        state = .connecting
        open(redisAsyncConnect(address, Int32(port)))
    }

    /// Attaches a context hiredis made (connecting, not yet connected) to the loop.
    private func open(_ ac: UnsafeMutablePointer<redisAsyncContext>?) {
        guard let ac else { return failed(RedisFailure(.connect, "out of memory")) }
        if ac.pointee.err != 0 {
            let message = errorString(ac)
            redisAsyncFree(ac)
            return failed(RedisFailure(Self.connectCode(message), message))
        }
        guard lds_redis_attach(ac, UnsafeMutableRawPointer(loop)) == REDIS_OK else {
            redisAsyncFree(ac)
            return failed(RedisFailure(.connect, "cannot watch the socket"))
        }
        // Replies hiredis's async layer would abort the process on are
        // refused while they are read (see the shim).
        tally.pointee.bytes_max = settings.maxReplyBytes
        lds_redis_guard_replies(ac, tally)
        partialSince = nil
        ac.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        redisAsyncSetConnectCallback(ac) { ac, status in
            guard let ac, let data = ac.pointee.data else { return }
            Unmanaged<RedisConnection>.fromOpaque(data).takeUnretainedValue()
                .connected(UnsafeMutablePointer(mutating: ac), ok: status == REDIS_OK)
        }
        redisAsyncSetDisconnectCallback(ac) { ac, _ in
            guard let ac, let data = ac.pointee.data else { return }
            Unmanaged<RedisConnection>.fromOpaque(data).takeUnretainedValue()
                .disconnected(UnsafeMutablePointer(mutating: ac))
        }
        context = ac
    }

    /// The code of a failed connection attempt, from hiredis's message (its
    /// errno's text, as `strerror` gives it).
    private static func connectCode(_ message: String) -> RedisFailure.Code {
        func says(_ code: Int32) -> Bool { strerror(code).map { message.contains(String(cString: $0)) } ?? false }
        if says(ECONNREFUSED) { return .refused }
        if says(EHOSTUNREACH) || says(ENETUNREACH) || says(ENOENT) || says(EADDRNOTAVAIL) { return .unreachable }
        return .connect
    }

    private func errorString(_ ac: UnsafeMutablePointer<redisAsyncContext>) -> String {
        withUnsafeBytes(of: ac.pointee.c.errstr) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
    }

    /// hiredis: the connection attempt ended. On failure hiredis frees the context.
    private func connected(_ ac: UnsafeMutablePointer<redisAsyncContext>, ok: Bool) {
        guard ac == context else { return }
        guard ok else {
            let message = errorString(ac)
            ac.pointee.data = nil
            context = nil
            return failed(RedisFailure(Self.connectCode(message), message.isEmpty ? "cannot connect" : message))
        }
        // AUTH and SELECT go first; commands may follow at once (pipelined).
        // A command connection counts as ready once they are answered.
        var last: [[UInt8]]?
        if let password = settings.url.password {
            var auth: [[UInt8]] = [Array("AUTH".utf8)]
            if let user = settings.url.user { auth.append(Array(user.utf8)) }
            auth.append(Array(password.utf8))
            last = auth
        }
        let select: [[UInt8]]? = settings.url.database != 0
            ? [Array("SELECT".utf8), Array(String(settings.url.database).utf8)] : nil
        // A command connection counts as connected once the server answered
        // (its PING's PONG), not when the TCP connection was accepted.
        if let auth = last { handshake(auth, readyAfter: false) }
        if let select { handshake(select, readyAfter: false) }
        if let channel {
            subscribe(ac, channel)
        } else {
            // With an argument (echoed back as a bulk string): a command of
            // one argument makes hiredis 0.14 read a byte past its end.
            handshake([Array("PING".utf8), Self.pingMessage], readyAfter: true)
        }
        state = .ready
        hasFailed = false
        backoffMs = 0
        let queued = waiting
        waiting = []
        waitingCount = 0
        for pending in queued { write(pending) }
        armTimer()
        // A subscriber is ready once Redis confirms the subscription.
    }

    /// What the PING after each connect asks the server to echo.
    private static let pingMessage = Array("loadstate".utf8)

    /// Sends AUTH or SELECT; a refusal drops the connection. `readyAfter`:
    /// the connection is ready once it is accepted.
    private func handshake(_ args: [[UInt8]], readyAfter: Bool) {
        write(Pending(RedisCommand(args), deadline: Clock.monotonicMs() &+ settings.commandTimeoutMs) { [weak self] result in
            switch result {
            case .success(.error(let message)):
                self?.drop(RedisFailure(.auth, "\(String(decoding: args[0], as: UTF8.self)) refused: \(message)"))
            case .success(let reply):
                var pong = false
                if case .string(let echoed) = reply, echoed == Self.pingMessage { pong = true }
                if args[0] == Array("PING".utf8), !pong {
                    self?.drop(RedisFailure(.reply, "PING answered by something other than PONG: not a Redis server?"))
                } else if readyAfter, self?.state == .ready {
                    self?.onReady?()
                }
            case .failure: break
            }
        })
    }

    /// hiredis: the connection is gone (hiredis frees the context after this).
    private func disconnected(_ ac: UnsafeMutablePointer<redisAsyncContext>) {
        ac.pointee.data = nil
        guard ac == context else { return }
        context = nil
        if state == .closed {
            // A graceful close ended.
            failInflight(RedisFailure(.closed, "the cache was closed before Redis answered"))
            timer?.close()
            timer = nil
            eventLoop.removeLingering(self)
            lingering = nil
            return
        }
        let reason = dropReason ?? lostReason(ac)
        dropReason = nil
        failInflight(reason)
        failed(reason)
    }

    /// Why hiredis dropped the connection of `ac` on its own.
    private func lostReason(_ ac: UnsafePointer<redisAsyncContext>) -> RedisFailure {
        if lds_redis_reply_refused(ac) != 0 && tally.pointee.exceeded != 0 {
            return RedisFailure(.proto, "Redis sent a reply holding over \(settings.maxReplyBytes) bytes: connection dropped")
        }
        if lds_redis_reply_refused(ac) != 0 {
            return RedisFailure(.reply, "Redis sent a reply that answers no command, or of a shape or size "
                                + "this client refuses: connection dropped")
        }
        if ac.pointee.err == REDIS_ERR_PROTOCOL {
            // hiredis could not parse what came (nesting past its depth, a bad type byte).
            return RedisFailure(.reply, "Redis sent what is not its protocol: "
                                + "\(errorString(UnsafeMutablePointer(mutating: ac))): connection dropped")
        }
        return RedisFailure(.connect, "connection lost: \(errorString(UnsafeMutablePointer(mutating: ac)))")
    }

    /// A connection attempt failed or a connection was lost: commands
    /// waiting for the first connection fail, and a new attempt follows
    /// the back-off.
    private func failed(_ failure: RedisFailure) {
        guard state != .closed else { return }
        hasFailed = true
        failWaiting(failure)
        backoffMs = backoffMs == 0 ? 50 : min(backoffMs &* 2, max(settings.reconnectMaxMs, 50))
        backoffUntil = Clock.monotonicMs() &+ backoffMs
        state = .backoff
        onFailure?(failure)
        armTimer()
    }

    /// Drops the current connection: every command on it fails with `reason`.
    private func drop(_ reason: RedisFailure, reconnect: Bool = true) {
        guard let ac = context else {
            if state == .resolving || state == .connecting, reconnect { failed(reason) }
            return
        }
        context = nil
        ac.pointee.data = nil
        let wasReady = state == .ready
        // The commands fail with the reason first; freeing then calls their
        // callbacks with no reply, which find them done (inside a hiredis
        // callback the free is deferred until it returns).
        failInflight(reason)
        redisAsyncFree(ac)
        if reconnect {
            failed(reason)
        } else if wasReady {
            state = .backoff
        }
    }

    private func failWaiting(_ failure: RedisFailure) {
        let failing = waiting
        waiting = []
        waitingCount = 0
        for pending in failing { pending.failRest(failure) }
    }

    private func failInflight(_ failure: RedisFailure) {
        // Each command's callback runs once: with no reply when hiredis
        // frees the context. Those that have not run yet are failed here
        // and marked done.
        let failing = inflight[inflightHead...]
        inflight = []
        inflightHead = 0
        for sent in failing { sent.pending.finish(sent.index, .failure(failure)) }
    }

    // MARK: - Commands

    /// Sends the commands of `pending` on the ready connection.
    private func write(_ pending: Pending) {
        guard let ac = context else {
            return pending.failUnsent(from: 0, down)
        }
        let commands = pending.commands
        pending.commands = RedisCommandGroup(reservingCommands: 0, bytes: 0)
        let wasIdle = inflightHead == inflight.count
        // Inside a work item (a batch of gets, the lookups of loads) the
        // commands are written once the loop has run the batch of items it
        // took: one write() for all they sent, and no change to what the
        // socket is watched for. Elsewhere (hiredis's callbacks, timers) hiredis has
        // the socket watched for writing, as it asks.
        let defers = eventLoop.isInWorkItem
        if defers { lds_redis_defer_writes(ac, 1) }
        defer {
            if defers {
                lds_redis_defer_writes(ac, 0)
                scheduleFlush()
            }
        }
        for index in 0..<pending.count {
            // hiredis gets the command's serial, not a pointer: hiredis 0.14
            // may call the last callback again (for a reply on a subscribed
            // connection that it finds no callback for), and a serial that
            // is not the oldest command's names nothing.
            let serial = lastSerial == UInt.max ? 1 : lastSerial &+ 1
            let rc: Int32 = commands.withCommand(index) { command in
                guard let base = command.baseAddress else { return REDIS_ERR }
                return redisAsyncFormattedCommand(ac, { ac, reply, privdata in
                    // No data: the connection was dropped, its commands failed.
                    guard let privdata, let data = ac?.pointee.data else { return }
                    Unmanaged<RedisConnection>.fromOpaque(data).takeUnretainedValue()
                        .replied(UInt(bitPattern: privdata), reply.map { UnsafeRawPointer($0) }, ac)
                }, UnsafeMutableRawPointer(bitPattern: serial), base.assumingMemoryBound(to: CChar.self),
                command.count)
            }
            guard rc == REDIS_OK else {
                pending.failUnsent(from: index, RedisFailure(.connect, "cannot send: \(errorString(ac))"))
                break
            }
            lastSerial = serial
            inflight.append(Sent(serial: serial, pending: pending, index: index))
        }
        if wasIdle && inflightHead < inflight.count { armTimer() }
    }

    /// Set while a flush of deferred writes waits for the end of the batch
    /// of work items.
    private var flushScheduled = false

    /// Writes the commands deferred in this batch of work items once the
    /// loop has run them all (the lookups of loads made one call each come
    /// in one batch): one write for all.
    private func scheduleFlush() {
        guard !flushScheduled else { return }
        flushScheduled = true
        eventLoop.afterBatch { [self] in
            flushScheduled = false
            if let ac = context { lds_redis_flush(ac) }
        }
    }

    /// hiredis: the reply of the command `serial` came, or (nil) its
    /// connection `ac` is gone. Replies come in order: a serial that is
    /// not the oldest command's is a repeated call, or of a failed command.
    private func replied(_ serial: UInt, _ reply: UnsafeRawPointer?, _ ac: UnsafePointer<redisAsyncContext>?) {
        guard inflightHead < inflight.count, inflight[inflightHead].serial == serial else { return }
        let sent = inflight[inflightHead]
        inflightHead += 1
        if inflightHead == inflight.count {
            inflight.removeAll(keepingCapacity: true)
            inflightHead = 0
        } else if inflightHead >= 1024 && inflightHead * 2 >= inflight.count {
            inflight.removeFirst(inflightHead)
            inflightHead = 0
        }
        if let reply {
            sent.pending.finish(sent.index, .success(reply))
        } else {
            sent.pending.finish(sent.index,
                                .failure(dropReason ?? ac.map(lostReason) ?? RedisFailure(.connect, "connection lost")))
        }
    }

    // MARK: - Subscription

    private func subscribe(_ ac: UnsafeMutablePointer<redisAsyncContext>, _ channel: [UInt8]) {
        let args: [[UInt8]] = [Array("SUBSCRIBE".utf8), channel]
        let lengths = args.map { $0.count }
        let flat = args.flatMap { $0 }
        _ = flat.withUnsafeBufferPointer { buffer -> Int32 in
            guard let base = UnsafeRawPointer(buffer.baseAddress) else { return REDIS_ERR }
            var pointers: [UnsafePointer<CChar>?] = [base.assumingMemoryBound(to: CChar.self),
                                                     (base + lengths[0]).assumingMemoryBound(to: CChar.self)]
            var lens = lengths
            // The connection (not retained) is the callback's data: hiredis
            // calls it for the confirmation and every message, and with no
            // reply once when the context is freed.
            return redisAsyncCommandArgv(ac, { ac, reply, _ in
                guard let reply, let data = ac?.pointee.data else { return }
                let connection = Unmanaged<RedisConnection>.fromOpaque(data).takeUnretainedValue()
                connection.subscriptionReply(RedisReply(UnsafeRawPointer(reply)))
            }, nil, 2, &pointers, &lens)
        }
    }

    private func subscriptionReply(_ reply: RedisReply) {
        // The channel too: hiredis 0.14 may hand this callback a message of another.
        guard case .array(let items) = reply, items.count == 3, case .string(let kind) = items[0],
              case .string(let name) = items[1], name == channel else { return }
        if kind == Array("message".utf8), case .string(let payload) = items[2] {
            onMessage?(payload)
        } else if kind == Array("subscribe".utf8) {
            onReady?()
        }
    }

    // MARK: - Deadlines

    /// Arms the timer for the nearest deadline: the connection attempt's,
    /// the oldest command's, or the back-off's end.
    private func armTimer() {
        guard let timer else { return }
        var next = UInt64.max
        switch state {
        case .resolving, .connecting: next = connectDeadline
        case .backoff: next = backoffUntil
        case .idle, .ready, .closed: break
        }
        if inflightHead < inflight.count { next = min(next, inflight[inflightHead].pending.deadline) }
        if let first = waiting.first { next = min(next, first.deadline) }
        if let partialSince { next = min(next, partialSince &+ settings.commandTimeoutMs) }
        guard next != .max else { return timer.stop() }
        let now = Clock.monotonicMs()
        timer.start(after: next > now ? next - now : 0) { [weak self] in self?.deadlinePassed() }
    }

    private func deadlinePassed() {
        let now = Clock.monotonicMs()
        switch state {
        case .resolving where now >= connectDeadline, .connecting where now >= connectDeadline:
            let reason = RedisFailure(.timedOut, "no connection within \(settings.connectTimeoutMs) ms")
            if context != nil { drop(reason) } else { failed(reason) }
            return
        case .backoff where now >= backoffUntil:
            connect()
            return
        default: break
        }
        if let partialSince, partialSince &+ settings.commandTimeoutMs <= now {
            self.partialSince = nil
            let reason = RedisFailure(.proto, "a reply from Redis took over \(settings.commandTimeoutMs) ms to arrive: "
                                      + "connection dropped")
            dropReason = reason
            drop(reason)
            dropReason = nil
            return
        }
        if inflightHead < inflight.count, inflight[inflightHead].pending.deadline <= now {
            // hiredis cannot abandon one command: the connection goes.
            let reason = RedisFailure(.timedOut, "no reply within \(settings.commandTimeoutMs) ms")
            dropReason = reason
            drop(reason)
            dropReason = nil
            return
        }
        while let first = waiting.first, first.deadline <= now {
            waiting.removeFirst()
            waitingCount &-= first.count
            first.failRest(RedisFailure(.timedOut, "no connection within \(settings.commandTimeoutMs) ms"))
        }
        armTimer()
    }
}

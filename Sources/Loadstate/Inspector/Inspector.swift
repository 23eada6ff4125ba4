import CLibUV
#if canImport(Glibc)
import Glibc
#endif

/// The inspector: a small HTTP/1.1 server on the runtime's own loop (libuv
/// TCP, no other thread) serving one self-contained page that shows the
/// runtime live, updated over server-sent events.
///
/// Lifecycle: `start` (loop thread) binds and listens; `stop` (loop
/// thread) closes the listener and every connection; the runtime stops its
/// inspector when it closes. Every request must carry the inspector's
/// random token (`?token=`, compared in constant time) and a `Host` header
/// naming the bound address (against DNS rebinding). Routes: `GET /` (the
/// page), `GET /events` (server-sent events: a JSON snapshot every
/// `intervalMs`), `GET /snapshot` (one snapshot), `GET /metrics` (the
/// Prometheus text), `POST /action?do=cancel|refresh&cell=ID` and
/// `POST /action?do=invalidate&cache=ID&prefix=P` (only with `actions`).
/// Every response but the event stream closes its connection.
@usableFromInline package final class Inspector {
    unowned(unsafe) let runtime: Runtime
    let options: InspectorOptions
    /// 32 hexadecimal digits from the system's random generator.
    @usableFromInline package let token: String
    /// The bound address, as `Host` must name it ("127.0.0.1:PORT").
    @usableFromInline package let authority: String
    private let listener: UnsafeMutablePointer<uv_tcp_t>
    private var connections: [ObjectIdentifier: InspectorConnection] = [:]
    private var ticker: LoopTimer?
    private var stopped = false
    /// Each followed loader's samples (see `LoaderSeries`), by loader id.
    var series: [UInt64: LoaderSeries] = [:]
    /// When the last samples were taken (the loop's clock, ms).
    private var lastSampleMs: UInt64 = 0
    private let allowedHosts: [String]

    /// The page's address, token included.
    @usableFromInline package var url: String { "http://\(authority)/?token=\(token)" }

    /// Loop thread: binds `address` ("IPv4:PORT" or "localhost:PORT"; port 0
    /// picks a free one) and listens. Throws `.invalidArgument` for a
    /// malformed address or one off loopback without `allowRemote`, `.io`
    /// when the address cannot be bound.
    @usableFromInline package init(runtime: Runtime, address: String, options: InspectorOptions) throws(ResultCode) {
        guard let colon = address.lastIndex(of: ":") else { throw .invalidArgument }
        var host = String(address[address.startIndex..<colon])
        let portText = address[address.index(after: colon)...]
        guard let port = UInt16(portText), portText.count <= 5 else { throw .invalidArgument }
        if host.lowercased() == "localhost" { host = "127.0.0.1" }
        var addr = sockaddr_in()
        guard host.utf8.count <= 15, uv_ip4_addr(host, Int32(port), &addr) == 0 else { throw .invalidArgument }
        // Dotted quads only: inet_pton accepts nothing else.
        let octets = host.split(separator: ".")
        guard octets.count == 4, let first = UInt8(octets[0]) else { throw .invalidArgument }
        guard first == 127 || options.allowRemote else { throw .invalidArgument }

        self.runtime = runtime
        self.options = options
        var rng = SystemRandomNumberGenerator()
        token = (0..<4).map { _ -> String in
            let hex = String(rng.next() as UInt32, radix: 16)
            return String(repeating: "0", count: 8 - hex.count) + hex
        }.joined()
        let tcp = UnsafeMutablePointer<uv_tcp_t>.allocate(capacity: 1)
        uv_tcp_init(runtime.loop.loop, tcp)
        tcp.pointee.data = nil
        var rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_bind(tcp, $0, 0) }
        }
        if rc == 0 {
            rc = uv_listen(Self.stream(tcp), 64) { server, status in
                guard let server, status == 0, let data = server.pointee.data else { return }
                Unmanaged<Inspector>.fromOpaque(data).takeUnretainedValue().accept()
            }
        }
        var bound = sockaddr_in()
        var length = Int32(MemoryLayout<sockaddr_in>.size)
        if rc == 0 {
            rc = withUnsafeMutablePointer(to: &bound) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_getsockname(tcp, $0, &length) }
            }
        }
        guard rc == 0 else {
            Self.closeListener(tcp)
            throw .io
        }
        listener = tcp
        let boundPort = UInt16(bigEndian: bound.sin_port)
        authority = "\(host):\(boundPort)"
        allowedHosts = host == "127.0.0.1" ? [authority, "localhost:\(boundPort)"] : [authority]
        listener.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        let timer = LoopTimer(loop: runtime.loop.loop)
        ticker = timer
        takeSamples(baseline: true)
        timer.start(after: options.intervalMs) { [unowned self] in tick() }
    }

    /// Loop thread: closes the listener and every connection.
    @usableFromInline package func stop() {
        guard !stopped else { return }
        stopped = true
        // The cells' events were kept for this inspector only.
        var cells: [InspectableCell] = []
        runtime.table.withLock { storage in
            storage.handles.forEach(where: { id in
                let kind = Handle.kind(of: id)
                return kind == .loadable || kind == .process
            }) { _, handle in
                if let cell = handle as? InspectableCell { cells.append(cell) }
            }
        }
        for cell in cells { cell.dropInspectorHistory() }
        ticker?.close()
        ticker = nil
        listener.pointee.data = nil
        Self.closeListener(listener)
        for connection in Array(connections.values) { connection.close() }
    }

    private static func closeListener(_ listener: UnsafeMutablePointer<uv_tcp_t>) {
        let handle = UnsafeMutableRawPointer(listener).assumingMemoryBound(to: uv_handle_t.self)
        guard uv_is_closing(handle) == 0 else { return }
        uv_close(handle) { h in
            guard let h else { return }
            UnsafeMutableRawPointer(h).assumingMemoryBound(to: uv_tcp_t.self).deallocate()
        }
    }

    static func stream(_ tcp: UnsafeMutablePointer<uv_tcp_t>) -> UnsafeMutablePointer<uv_stream_t> {
        UnsafeMutableRawPointer(tcp).assumingMemoryBound(to: uv_stream_t.self)
    }

    private func accept() {
        guard !stopped else { return }
        let connection = InspectorConnection(inspector: self)
        // Connections that have not sent their head yet have a budget of
        // their own: a new one over it closes the oldest of them, so that
        // clients holding connections open cannot keep out one that asks.
        let waiting = connections.values.filter(\.isWaitingForHead)
        if waiting.count >= InspectorOptions.maxWaiting, let oldest = waiting.min(by: { $0.acceptedMs < $1.acceptedMs }) {
            oldest.close()
        }
        // Held until its handle's close callback, whatever happens next.
        connections[ObjectIdentifier(connection)] = connection
        guard uv_accept(Self.stream(listener), Self.stream(connection.handle)) == 0 else {
            connection.close()
            return
        }
        connection.begin()
    }

    /// A connection's handle closed.
    func removed(_ connection: InspectorConnection) {
        connections[ObjectIdentifier(connection)] = nil
    }

    /// Every `intervalMs`: idle connections are closed, live pages updated.
    private func tick() {
        let now = uv_now(runtime.loop.loop)
        if now >= lastSampleMs &+ LoaderSeries.sampleEveryMs { takeSamples(baseline: false) }
        var streams: [InspectorConnection] = []
        for connection in Array(connections.values) {
            if connection.isStreaming {
                if connection.pendingBytes > InspectorOptions.maxPendingBytes { connection.close() } else { streams.append(connection) }
            } else if connection.isWaitingForHead, now >= connection.acceptedMs,
                      now - connection.acceptedMs >= options.idleTimeoutMs {
                // No complete head in time (from the connection's start, not its last byte).
                connection.respond(408, "text/plain; charset=utf-8", "no complete request in time\n")
            }
        }
        if !streams.isEmpty {
            let event = eventBytes()
            for connection in streams { connection.send(event) }
        }
        ticker?.restart(after: options.intervalMs)
    }

    /// Takes a sample of every followed loader (`baseline`: only their
    /// histograms now, as the start of the first interval); loaders freed
    /// since are dropped, new ones followed while fewer than
    /// `LoaderSeries.loadersKept` are.
    private func takeSamples(baseline: Bool) {
        lastSampleMs = uv_now(runtime.loop.loop)
        let stats = runtime.statistics()
        let wall = Clock.wallMs()
        var alive = Set<UInt64>()
        for l in stats.loaders {
            alive.insert(l.id)
            let queued = (runtime.table.lookup(l.id, as: Handle.self) as? InspectableLoader)?.queuedJobs ?? 0
            if let s = series[l.id] {
                s.take(at: wall, l.loads.latency, queued: queued)
            } else if series.count < LoaderSeries.loadersKept {
                let s = LoaderSeries(baseline: baseline ? l.loads.latency : LatencyHistogram())
                if !baseline { s.take(at: wall, l.loads.latency, queued: queued) }
                series[l.id] = s
            }
        }
        for id in series.keys where !alive.contains(id) { series[id] = nil }
    }

    /// A server-sent event carrying a snapshot.
    func eventBytes() -> [UInt8] {
        Array(("event: snapshot\ndata: " + snapshotJSON() + "\n\n").utf8)
    }

    // MARK: - Requests

    /// Answers a parsed request on `connection`.
    func handle(_ request: HTTPRequestHead, on connection: InspectorConnection) {
        guard let host = request.host, allowedHosts.contains(where: { $0.lowercased() == host.lowercased() }) else {
            return connection.respond(421, "text/plain; charset=utf-8", "wrong Host: this server answers to \(authority)\n")
        }
        guard let given = request.query["token"], Self.sameToken(given, token) else {
            return connection.respond(403, "text/plain; charset=utf-8", "forbidden: a valid token is required\n")
        }
        switch (request.method, request.path) {
        case ("GET", "/"):
            connection.respond(200, "text/html; charset=utf-8", inspectorPage)
        case ("GET", "/events"):
            let live = connections.values.reduce(0) { $0 + ($1.isStreaming && !$1.isClosing ? 1 : 0) }
            guard live < options.maxClients else {
                return connection.respond(503, "text/plain; charset=utf-8", "too many live pages\n")
            }
            connection.startStream(first: eventBytes())
        case ("GET", "/snapshot"):
            connection.respond(200, "application/json", snapshotJSON())
        case ("GET", "/metrics"):
            connection.respond(200, "text/plain; version=0.0.4; charset=utf-8", runtime.metricsText())
        case ("POST", "/action"):
            let (status, message) = act(request.query)
            connection.respond(status, "text/plain; charset=utf-8", message + "\n")
        case (_, "/"), (_, "/events"), (_, "/snapshot"), (_, "/metrics"), (_, "/action"):
            connection.respond(405, "text/plain; charset=utf-8", "method not allowed\n")
        default:
            connection.respond(404, "text/plain; charset=utf-8", "not found\n")
        }
    }

    /// Whether two tokens are equal, in a time that depends on their lengths only.
    static func sameToken(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var difference: UInt8 = 0
        for i in 0..<x.count { difference |= x[i] ^ y[i] }
        return difference == 0
    }

    /// An action of the page: (status, message).
    private func act(_ query: [String: String]) -> (Int, String) {
        guard options.actions else { return (403, "actions are disabled") }
        switch query["do"] {
        case "cancel"?, "refresh"?:
            guard let text = query["cell"], let id = UInt64(text),
                  let cell = runtime.table.lookup(id, as: Handle.self) as? InspectableCell else {
                return (404, "no such cell")
            }
            if query["do"] == "cancel" { cell.inspectorCancel() } else { cell.inspectorRefresh() }
            return (200, "ok")
        case "invalidate"?:
            guard let text = query["cache"], let id = UInt64(text),
                  let store = runtime.table.lookup(id, as: Handle.self) as? any CacheStore else {
                return (404, "no such cache")
            }
            do throws(CacheError) {
                try runtime.invalidate(store, prefix: Array((query["prefix"] ?? "").utf8))
                return (200, "ok")
            } catch {
                return (500, "the cache could not be invalidated")
            }
        default:
            return (400, "unknown action")
        }
    }
}

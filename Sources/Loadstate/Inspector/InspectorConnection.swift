import CLibUV
#if canImport(Glibc)
import Glibc
#endif

/// One client of the inspector: reads one request head (bounded), then
/// answers it and closes, or streams events until the client goes.
///
/// Lifecycle (loop thread): made by the inspector's accept; `begin` starts
/// reading; `close` closes the handle, whose close callback frees it and
/// tells the inspector. The inspector holds it until then.
final class InspectorConnection {
    let inspector: Inspector
    let handle: UnsafeMutablePointer<uv_tcp_t>
    private let readBuffer: UnsafeMutablePointer<CChar>
    private static let readBufferSize = 4096
    private var head: [UInt8] = []
    private var answered = false
    private var closing = false
    /// Whether `close` was called (the handle's close callback may still be due).
    var isClosing: Bool { closing }
    private var closeWhenFlushed = false
    private(set) var isStreaming = false
    private(set) var lastActivityMs: UInt64
    /// When the connection was accepted (the head timeout runs from then).
    let acceptedMs: UInt64
    /// Whether it still waits for its request head (it has shown no token).
    var isWaitingForHead: Bool { !answered && !closing }
    /// Bytes handed to libuv and not yet written.
    private(set) var pendingBytes = 0

    init(inspector: Inspector) {
        self.inspector = inspector
        handle = .allocate(capacity: 1)
        readBuffer = .allocate(capacity: Self.readBufferSize)
        uv_tcp_init(inspector.runtime.loop.loop, handle)
        lastActivityMs = uv_now(inspector.runtime.loop.loop)
        acceptedMs = lastActivityMs
        handle.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    private static func from(_ data: UnsafeMutableRawPointer?) -> InspectorConnection? {
        data.map { Unmanaged<InspectorConnection>.fromOpaque($0).takeUnretainedValue() }
    }

    func begin() {
        let rc = uv_read_start(Inspector.stream(handle), { h, _, buf in
            guard let h, let buf, let me = InspectorConnection.from(h.pointee.data) else { return }
            buf.pointee = uv_buf_init(me.readBuffer, UInt32(InspectorConnection.readBufferSize))
        }, { stream, nread, buf in
            guard let stream, let me = InspectorConnection.from(stream.pointee.data) else { return }
            me.received(nread, buf)
        })
        if rc != 0 { close() }
    }

    private func received(_ nread: Int, _ buf: UnsafePointer<uv_buf_t>?) {
        guard nread >= 0 else {
            // The client is done sending (or gone): an answer still being
            // written closes the connection when it is flushed (or fails).
            if closeWhenFlushed && pendingBytes > 0 { return }
            // Half a request, then the end: answered at once.
            if !answered && !head.isEmpty && nread == Int(UV_EOF.rawValue) {
                return respond(400, "text/plain; charset=utf-8", "incomplete request\n")
            }
            return close()
        }
        guard nread > 0, !answered, let base = buf?.pointee.base else { return }
        lastActivityMs = uv_now(inspector.runtime.loop.loop)
        let room = HTTPRequestHead.maxBytes - head.count
        let taken = min(nread, max(room, 0))
        UnsafeRawPointer(base).withMemoryRebound(to: UInt8.self, capacity: taken) {
            head.append(contentsOf: UnsafeBufferPointer(start: $0, count: taken))
        }
        guard let end = HTTPRequestHead.end(in: head) else {
            if head.count >= HTTPRequestHead.maxBytes { respond(431, "text/plain; charset=utf-8", "request head too large\n") }
            // A head that cannot become valid is answered now, not at its timeout.
            else if let refusal = HTTPRequestHead.refusalSoFar(head) {
                respond(refusal.status, "text/plain; charset=utf-8", "bad request\n")
            }
            return
        }
        switch HTTPRequestHead.parse(head[0..<end]) {
        case .success(let request):
            inspector.handle(request, on: self)
        case .failure(let refusal):
            respond(refusal.status, "text/plain; charset=utf-8", "bad request\n")
        }
        head = []
    }

    /// Answers with a complete response, then closes.
    func respond(_ status: Int, _ contentType: String, _ body: String) {
        guard !answered else { return }
        answered = true
        let bodyBytes = Array(body.utf8)
        var text = "HTTP/1.1 \(status) \(Self.reason(status))\r\n"
        text += "Content-Type: \(contentType)\r\nContent-Length: \(bodyBytes.count)\r\n"
        text += Self.commonHeaders
        text += "Connection: close\r\n\r\n"
        closeWhenFlushed = true
        send(Array(text.utf8) + bodyBytes)
    }

    /// Answers with an event stream; `first` is its first event.
    func startStream(first: [UInt8]) {
        guard !answered else { return }
        answered = true
        isStreaming = true
        var text = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        text += Self.commonHeaders
        text += "Connection: close\r\n\r\n"
        send(Array(text.utf8) + first)
    }

    /// Headers of every response: nothing cached, sniffed, framed or
    /// referred (the URL holds the token); the page runs its own inline
    /// script and talks to this server only.
    private static let commonHeaders =
        "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n"
        + "X-Frame-Options: DENY\r\nContent-Security-Policy: default-src 'none'; script-src 'unsafe-inline'; "
        + "style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'; "
        + "frame-ancestors 'none'\r\n"

    private static func reason(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 400: return "Bad Request"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 413: return "Content Too Large"
        case 421: return "Misdirected Request"
        case 431: return "Request Header Fields Too Large"
        case 501: return "Not Implemented"
        case 503: return "Service Unavailable"
        case 505: return "HTTP Version Not Supported"
        default: return "Error"
        }
    }

    /// Queues bytes to write; never waits.
    func send(_ bytes: [UInt8]) {
        guard !closing, !bytes.isEmpty else { return }
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count)
        bytes.withUnsafeBufferPointer { source in
            if let base = source.baseAddress {
                UnsafeMutableRawPointer(buffer).copyMemory(from: base, byteCount: source.count)
            }
        }
        let request = UnsafeMutablePointer<uv_write_t>.allocate(capacity: 1)
        let pending = Unmanaged.passRetained(PendingWrite(connection: self, buffer: buffer, count: bytes.count))
        request.pointee.data = pending.toOpaque()
        var buf = uv_buf_init(buffer, UInt32(clamping: bytes.count))
        pendingBytes += bytes.count
        let rc = uv_write(request, Inspector.stream(handle), &buf, 1) { req, status in
            guard let req, let data = req.pointee.data else { return }
            let pending = Unmanaged<PendingWrite>.fromOpaque(data).takeRetainedValue()
            req.deallocate()
            pending.finished(status: status)
        }
        if rc != 0 {
            pending.release()
            request.deallocate()
            buffer.deallocate()
            pendingBytes -= bytes.count
            close()
        }
    }

    fileprivate func written(_ count: Int, status: Int32) {
        pendingBytes -= count
        if status < 0 || (closeWhenFlushed && pendingBytes == 0) { close() }
    }

    func close() {
        guard !closing else { return }
        closing = true
        let raw = UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self)
        guard uv_is_closing(raw) == 0 else { return }
        uv_close(raw) { h in
            guard let h, let me = InspectorConnection.from(h.pointee.data) else { return }
            me.closed()
        }
    }

    private func closed() {
        handle.deallocate()
        readBuffer.deallocate()
        inspector.removed(self)
    }
}

/// A write in flight: its bytes, freed when libuv is done with them.
private final class PendingWrite {
    let connection: InspectorConnection
    let buffer: UnsafeMutablePointer<CChar>
    let count: Int

    init(connection: InspectorConnection, buffer: UnsafeMutablePointer<CChar>, count: Int) {
        self.connection = connection
        self.buffer = buffer
        self.count = count
    }

    func finished(status: Int32) {
        buffer.deallocate()
        connection.written(count, status: status)
    }
}

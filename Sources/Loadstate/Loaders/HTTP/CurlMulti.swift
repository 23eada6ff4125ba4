import CCurl
import CLibUV

/// libcurl's multi interface driven by the runtime's libuv loop: curl's
/// socket callback starts and stops a `uv_poll_t` per socket, its timer
/// callback arms one `uv_timer_t`; poll and timer events call
/// `curl_multi_socket_action`, and every call is followed by draining
/// `curl_multi_info_read`. curl's callbacks never call back into curl
/// (except `curl_multi_assign`, which is allowed there).
///
/// Lifecycle: created on the loop thread by the first transfer; `close`
/// removes every transfer, cleans up the multi handle and closes the
/// timer and polls.
final class CurlMulti {
    private let loop: UnsafeMutablePointer<uv_loop_t>
    private let multi: UnsafeMutableRawPointer
    private var timer: LoopTimer!
    private var transfers: [UnsafeMutableRawPointer: HTTPTransfer] = [:]
    /// Poll handles by socket, kept while curl does not watch the socket
    /// (an idle connection in curl's cache), so that a reused connection
    /// reuses its handle instead of making and closing one per request.
    private var polls: [curl_socket_t: SocketPoll] = [:]
    /// Easy handles of finished transfers, reset for the next ones.
    private var idleHandles: [UnsafeMutableRawPointer] = []
    private var closed = false

    /// How many idle connections are kept when no maximum is set.
    static let idleConnections = 1024

    /// libcurl's global set-up, done once per process before any handle.
    static let globalReady: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    init?(loop: UnsafeMutablePointer<uv_loop_t>, maxConnections: Int) {
        guard Self.globalReady, let multi = curl_multi_init() else { return nil }
        self.loop = loop
        self.multi = multi
        let me = Unmanaged.passUnretained(self).toOpaque()
        timer = LoopTimer(loop: loop) { [unowned self] in act(CURL_SOCKET_TIMEOUT, 0) }
        lds_multi_setopt_socket(multi, { _, socket, what, userp, socketp in
            Unmanaged<CurlMulti>.fromOpaque(userp!).takeUnretainedValue().watch(socket, what, socketp)
            return 0
        }, me)
        lds_multi_setopt_timer(multi, { _, timeoutMs, userp in
            Unmanaged<CurlMulti>.fromOpaque(userp!).takeUnretainedValue().schedule(timeoutMs)
            return 0
        }, me)
        if maxConnections > 0 {
            lds_multi_setopt_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, maxConnections)
        }
        // Keep idle connections for reuse. curl's default sizes the cache by
        // the handles currently added, and each transfer's handle leaves as
        // soon as it is done, so the default would close most of them.
        lds_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, max(maxConnections, Self.idleConnections))
    }

    /// An easy handle for a new transfer: a reset idle one, or a new one.
    func takeHandle() -> UnsafeMutableRawPointer? {
        idleHandles.popLast() ?? curl_easy_init()
    }

    /// Takes back the handle of a finished transfer (out of the multi).
    func recycle(_ easy: UnsafeMutableRawPointer) {
        if closed || idleHandles.count >= Self.idleConnections {
            curl_easy_cleanup(easy)
        } else {
            curl_easy_reset(easy)
            idleHandles.append(easy)
        }
    }

    func add(_ transfer: HTTPTransfer) {
        guard !closed else { return transfer.complete(CURLE_ABORTED_BY_CALLBACK) }
        transfers[transfer.easy] = transfer
        let rc = curl_multi_add_handle(multi, transfer.easy)
        if rc != CURLM_OK {
            transfers[transfer.easy] = nil
            transfer.complete(CURLE_OUT_OF_MEMORY)
        }
    }

    /// Takes a transfer out (a cancel); its socket is closed by curl.
    func remove(_ transfer: HTTPTransfer) {
        guard transfers.removeValue(forKey: transfer.easy) != nil else { return }
        curl_multi_remove_handle(multi, transfer.easy)
        transfer.release()
    }

    func close() {
        guard !closed else { return }
        closed = true
        for transfer in Array(transfers.values) { remove(transfer) }
        for easy in idleHandles { curl_easy_cleanup(easy) }
        idleHandles = []
        curl_multi_cleanup(multi)
        for poll in polls.values { poll.close() }
        polls = [:]
        timer.close()
    }

    // MARK: - Callbacks from curl (no curl calls in here)

    private func watch(_ socket: curl_socket_t, _ what: Int32, _ socketp: UnsafeMutableRawPointer?) {
        if what == CURL_POLL_REMOVE {
            // curl stops watching the socket before it closes it: stop the
            // handle (it may serve the socket again) and forget the link.
            polls[socket]?.stop()
            if socketp != nil { curl_multi_assign(multi, socket, nil) }
            return
        }
        let poll: SocketPoll
        if let socketp {
            poll = Unmanaged<SocketPoll>.fromOpaque(socketp).takeUnretainedValue()
        } else {
            if let idle = polls[socket] {
                poll = idle
            } else {
                guard let created = SocketPoll(loop: loop, socket: socket, owner: self) else { return }
                poll = created
                polls[socket] = created
            }
            curl_multi_assign(multi, socket, Unmanaged.passUnretained(poll).toOpaque())
        }
        var events: Int32 = 0
        if what == CURL_POLL_IN || what == CURL_POLL_INOUT { events |= Int32(UV_READABLE.rawValue) }
        if what == CURL_POLL_OUT || what == CURL_POLL_INOUT { events |= Int32(UV_WRITABLE.rawValue) }
        poll.start(events)
    }

    private func schedule(_ timeoutMs: Int) {
        if timeoutMs < 0 {
            timer.stop()
        } else {
            timer.restart(after: UInt64(timeoutMs))
        }
    }

    // MARK: - From the loop

    fileprivate func act(_ socket: curl_socket_t, _ flags: Int32) {
        guard !closed else { return }
        var running: Int32 = 0
        curl_multi_socket_action(multi, socket, flags, &running)
        drain()
    }

    private func drain() {
        var left: Int32 = 0
        while let message = curl_multi_info_read(multi, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            let result = message.pointee.data.result
            guard let transfer = transfers.removeValue(forKey: easy) else { continue }
            curl_multi_remove_handle(multi, easy)
            transfer.complete(result)
            transfer.release()
        }
    }
}

/// One socket curl wants watched: a `uv_poll_t` kept alive until closed.
private final class SocketPoll {
    private let handle = UnsafeMutablePointer<uv_poll_t>.allocate(capacity: 1)
    private let socket: curl_socket_t
    private unowned let owner: CurlMulti
    private var keepAlive: Unmanaged<SocketPoll>?

    init?(loop: UnsafeMutablePointer<uv_loop_t>, socket: curl_socket_t, owner: CurlMulti) {
        self.socket = socket
        self.owner = owner
        guard uv_poll_init_socket(loop, handle, socket) == 0 else {
            handle.deallocate()
            return nil
        }
        keepAlive = Unmanaged.passRetained(self)
        handle.pointee.data = keepAlive!.toOpaque()
    }

    deinit {
        handle.deallocate()
    }

    func start(_ events: Int32) {
        uv_poll_start(handle, events) { h, status, events in
            let me = Unmanaged<SocketPoll>.fromOpaque(h!.pointee.data).takeUnretainedValue()
            var flags: Int32 = 0
            if status < 0 { flags |= CURL_CSELECT_ERR }
            if events & Int32(UV_READABLE.rawValue) != 0 { flags |= CURL_CSELECT_IN }
            if events & Int32(UV_WRITABLE.rawValue) != 0 { flags |= CURL_CSELECT_OUT }
            me.owner.act(me.socket, flags)
        }
    }

    func stop() {
        uv_poll_stop(handle)
    }

    func close() {
        uv_poll_stop(handle)
        let raw = UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self)
        guard uv_is_closing(raw) == 0 else { return }
        uv_close(raw) { h in
            Unmanaged<SocketPoll>.fromOpaque(h!.pointee.data).release()
        }
    }
}

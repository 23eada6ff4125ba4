import CCurl
import CLibUV
#if canImport(Glibc)
import Glibc
#endif

/// libcurl's multi interface driven by the runtime's libuv loop: curl's
/// socket callback adds, changes and removes its sockets in an epoll
/// instance of the multi's own, which one `uv_poll_t` watches; its timer
/// callback arms one `uv_timer_t`. Ready sockets and timer events call
/// `curl_multi_socket_action`, and every call is followed by draining
/// `curl_multi_info_read`. curl's callbacks never call back into curl.
///
/// An epoll of its own, rather than a `uv_poll_t` per socket, because
/// libuv removes a socket from its epoll on every stop and restart of its
/// poll handle: with connections going idle and busy again per request,
/// that was four `epoll_ctl` calls per request. Here a socket curl stops
/// watching (an idle connection) stays registered, and is removed if it
/// reports an event meanwhile. curl opens and closes its connections'
/// sockets through this class, so a registration is known to hold until
/// the socket is closed: a reused connection watched for what it was
/// registered for costs no `epoll_ctl` at all. (A socket curl made
/// otherwise, such as a resolver's, is registered again each time curl
/// watches it again: its number may have been reused meanwhile.)
///
/// Lifecycle: created on the loop thread by the first transfer; `close`
/// removes every transfer, cleans up the multi handle and closes the
/// timer and polls.
final class CurlMulti {
    private let loop: UnsafeMutablePointer<uv_loop_t>
    private let multi: UnsafeMutableRawPointer
    private var timer: LoopTimer!
    private var transfers: [UnsafeMutableRawPointer: HTTPTransfer] = [:]
    /// The epoll instance curl's sockets are watched in.
    private let epoll: Int32
    /// What the multi knows of a socket: the events curl wants while it
    /// watches it (0: not watched; curl always asks for some event); what
    /// it was last registered for in the epoll (0: not registered; kept
    /// after curl stops watching it, and possibly stale once curl closed
    /// it: closing a socket takes it out of epoll); whether `openSocket`
    /// made it and it is not closed yet.
    private struct SocketState {
        var watched: UInt32 = 0
        var registered: UInt32 = 0
        var opened = false
    }
    /// Indexed by socket number; grown to the highest one seen.
    private var sockets: [SocketState] = []
    private var readiness: EpollPoll!
    /// Where `ready` reads the ready sockets, kept from call to call.
    private var readyEvents = [epoll_event](repeating: epoll_event(), count: 256)
    /// Easy handles of finished transfers, for the next ones.
    private var idleHandles: [EasyHandle] = []
    private var closed = false
    /// For the tests: calls of `ready`, idle sockets taken out of the
    /// epoll, and a hook called after each of those.
    private(set) var readyCalls = 0
    private(set) var idleSocketsDropped = 0
    var onIdleSocketDropped: (() -> Void)?

    /// How many idle connections are kept when no maximum is set.
    static let idleConnections = 1024

    /// libcurl's global set-up, done once per process before any handle.
    static let globalReady: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    init?(loop: UnsafeMutablePointer<uv_loop_t>, maxConnections: Int, maxPerHost: Int = 0) {
        guard Self.globalReady else { return nil }
        let epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epoll >= 0 else { return nil }
        guard let multi = curl_multi_init() else {
            Glibc.close(epoll)
            return nil
        }
        self.loop = loop
        self.multi = multi
        self.epoll = epoll
        guard let readiness = EpollPoll(loop: loop, epoll: epoll) else {
            curl_multi_cleanup(multi)
            Glibc.close(epoll)
            return nil
        }
        self.readiness = readiness
        readiness.start { [unowned self] in ready() }
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
        if maxPerHost > 0 {
            // Transfers over it wait inside curl until a connection is free.
            lds_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, maxPerHost)
        }
        // Keep idle connections for reuse. curl's default sizes the cache by
        // the handles currently added, and each transfer's handle leaves as
        // soon as it is done, so the default would close most of them.
        lds_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, max(maxConnections, Self.idleConnections))
        // Streams one HTTP/2 connection may carry at once, when the server
        // allows as many (it says how many in its SETTINGS): curl's default
        // of 100 would send the 101st concurrent request to a connection
        // of its own.
        lds_multi_setopt_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, Self.http2StreamsMax)
    }

    /// See CURLMOPT_MAX_CONCURRENT_STREAMS above.
    static let http2StreamsMax = 1000

    /// Whether cleartext HTTP/2 transfers (prior knowledge) may share and
    /// reuse connections: not before libcurl 8.0.0 (see
    /// `HTTPTransfer.configureVersion`).
    static let reusesPriorKnowledgeConnections = libcurlVersion >= 0x08_00_00

    /// Whether the libcurl in use may reuse an easy handle safely (8.1.0 or
    /// later; see `recycle`).
    static let reusesHandles = libcurlVersion >= 0x08_01_00

    /// The version of the libcurl in use, (major << 16) | (minor << 8) |
    /// patch; 0 when curl does not say.
    private static let libcurlVersion: UInt32 = curl_version_info(CURLVERSION_FOURTH)?.pointee.version_num ?? 0

    /// An easy handle for a new transfer: an idle one (with the options of
    /// its last request), or a new one whose sockets curl opens and closes
    /// through this multi.
    func takeHandle() -> EasyHandle? {
        if let idle = idleHandles.popLast() { return idle }
        guard let easy = curl_easy_init() else { return nil }
        let handle = EasyHandle(easy, multi: self)
        // Opening goes through the handle, which keeps the errno of a
        // socket that could not be made for its transfer; closing through
        // the multi, as a connection outlives the handle that opened it.
        lds_easy_setopt_sockets(easy, { client, _, address in
            let handle = Unmanaged<EasyHandle>.fromOpaque(client!).takeUnretainedValue()
            let socket = handle.multi.openSocket(address)
            if socket == CURL_SOCKET_BAD { handle.socketErrno = errno }
            return socket
        }, Unmanaged.passUnretained(handle).toOpaque(), { client, socket in
            Unmanaged<CurlMulti>.fromOpaque(client!).takeUnretainedValue().closeSocket(socket)
        }, Unmanaged.passUnretained(self).toOpaque())
        return handle
    }

    /// Takes back the handle of a finished transfer (out of the multi).
    /// It keeps its options: the next transfer sets those of its request
    /// that differ (which costs far less than `curl_easy_reset` and setting
    /// everything again); what points into the finished transfer is cleared.
    /// A handle whose transfer left an errno is not kept: curl keeps that
    /// errno on the handle, and a later transfer failing without one of its
    /// own would report it.
    ///
    /// Handles are reused only with libcurl 8.1.0 or later: before it, a
    /// reused handle keeps a pointer to the last header of its previous
    /// transfer after freeing it, and a response whose first header line is
    /// folded (begins with a space or a tab) makes libcurl read and write
    /// through it (curl issue 11101, fixed in 8.1.0): any server could
    /// corrupt the host's memory. Debian 12's libcurl is 7.88.1.
    func recycle(_ handle: EasyHandle) {
        var osErrno = 0
        lds_easy_getinfo_long(handle.easy, CURLINFO_OS_ERRNO, &osErrno)
        if closed || !Self.reusesHandles || idleHandles.count >= Self.idleConnections || osErrno != 0 {
            handle.transfer = nil
            curl_easy_cleanup(handle.easy)
        } else {
            handle.detach()
            idleHandles.append(handle)
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
        for handle in idleHandles { curl_easy_cleanup(handle.easy) }
        idleHandles = []
        curl_multi_cleanup(multi)
        readiness.close()
        sockets = []
        Glibc.close(epoll)
        timer.close()
    }

    // MARK: - Callbacks from curl (no curl calls in here)

    private func watch(_ socket: curl_socket_t, _ what: Int32, _ socketp: UnsafeMutableRawPointer?) {
        guard socket >= 0 else { return }
        let index = Int(socket)
        if what == CURL_POLL_REMOVE {
            // Left registered: curl may watch it again for the next request,
            // or close it (see `ready` for an event meanwhile).
            if index < sockets.count { sockets[index].watched = 0 }
            return
        }
        var events: UInt32 = 0
        if what == CURL_POLL_IN || what == CURL_POLL_INOUT { events |= EPOLLIN.rawValue }
        if what == CURL_POLL_OUT || what == CURL_POLL_INOUT { events |= EPOLLOUT.rawValue }
        reserveSockets(index)
        let known = sockets[index]
        sockets[index].watched = events
        sockets[index].registered = events
        let last = known.registered
        // The registration is known to hold while the socket stays watched
        // or is one of ours, still open; after a break, another socket may
        // have been closed and its number reused.
        if last == events && (known.watched != 0 || known.opened) { return }
        if last == 0 {
            if !control(EPOLL_CTL_ADD, socket, events) && errno == EEXIST { control(EPOLL_CTL_MOD, socket, events) }
        } else if !control(EPOLL_CTL_MOD, socket, events) && errno == ENOENT {
            control(EPOLL_CTL_ADD, socket, events)
        }
    }

    private func reserveSockets(_ index: Int) {
        guard index >= sockets.count else { return }
        let count = max(index + 1, sockets.count * 2, 64)
        sockets.append(contentsOf: repeatElement(SocketState(), count: count - sockets.count))
    }

    /// curl's socket for a new connection (CURLOPT_OPENSOCKETFUNCTION);
    /// `CURL_SOCKET_BAD` with `errno` set when none can be made.
    fileprivate func openSocket(_ address: UnsafeMutablePointer<curl_sockaddr>?) -> curl_socket_t {
        guard let address else {
            errno = EINVAL
            return CURL_SOCKET_BAD
        }
        let socket = Glibc.socket(address.pointee.family, address.pointee.socktype | Int32(SOCK_CLOEXEC.rawValue),
                                  address.pointee.protocol)
        guard socket >= 0 else { return CURL_SOCKET_BAD }
        reserveSockets(Int(socket))
        sockets[Int(socket)] = SocketState(watched: 0, registered: 0, opened: true)
        return socket
    }

    /// curl closes a socket `openSocket` made (CURLOPT_CLOSESOCKETFUNCTION);
    /// closing it takes it out of the epoll.
    private func closeSocket(_ socket: curl_socket_t) -> Int32 {
        if socket >= 0 && Int(socket) < sockets.count { sockets[Int(socket)] = SocketState() }
        return Glibc.close(socket)
    }

    @discardableResult
    private func control(_ op: Int32, _ socket: curl_socket_t, _ events: UInt32) -> Bool {
        var event = epoll_event()
        event.events = events
        event.data.fd = socket
        return epoll_ctl(epoll, op, socket, &event) == 0
    }

    private func schedule(_ timeoutMs: Int) {
        if timeoutMs < 0 {
            timer.stop()
        } else {
            timer.restart(after: UInt64(timeoutMs))
        }
    }

    // MARK: - From the loop

    /// The epoll instance has ready sockets: hands each to curl.
    private func ready() {
        readyCalls &+= 1
        while !closed {
            let n = readyEvents.withUnsafeMutableBufferPointer { epoll_wait(epoll, $0.baseAddress, 256, 0) }
            guard n > 0 else { return }
            for event in readyEvents[0..<Int(n)] {
                let socket = event.data.fd
                let known = socket >= 0 && Int(socket) < sockets.count ? sockets[Int(socket)] : SocketState()
                guard known.watched != 0 else {
                    // An idle connection became readable (closed by the
                    // server): stop reporting it; curl finds out when it
                    // next uses or prunes the connection.
                    if known.registered != 0 {
                        sockets[Int(socket)].registered = 0
                        control(EPOLL_CTL_DEL, socket, 0)
                        idleSocketsDropped += 1
                        onIdleSocketDropped?()
                    }
                    continue
                }
                var flags: Int32 = 0
                if event.events & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 { flags |= CURL_CSELECT_ERR }
                if event.events & (EPOLLIN.rawValue | EPOLLHUP.rawValue) != 0 { flags |= CURL_CSELECT_IN }
                if event.events & EPOLLOUT.rawValue != 0 { flags |= CURL_CSELECT_OUT }
                act(event.data.fd, flags)
            }
            if n < 256 { return }
        }
    }

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

/// A curl easy handle and what it was last set up with, so that a reused
/// handle is only told what differs.
final class EasyHandle {
    let easy: UnsafeMutableRawPointer
    /// The multi that made the handle (and outlives it).
    unowned let multi: CurlMulti
    /// The errno of the last socket that could not be made for the
    /// handle's transfer (0: none): curl reports that failure as a failed
    /// connection with no errno of its own.
    var socketErrno: Int32 = 0
    /// Whether the options shared by every request of the loader are set.
    var isSetUp = false
    /// The URL last set, to skip setting (and curl copying) it again.
    var url: String?
    /// Where curl writes the message of a failed transfer.
    let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    /// The loader's "User-Agent: ..." line, alone in a list of its own
    /// (nil when the loader sends none).
    var agentLine: String?
    var agentHeader: UnsafeMutablePointer<curl_slist>?
    /// Where a transfer collects the response's header lines until its
    /// body begins; its storage serves request after request.
    var headerLines: [UInt8] = []
    /// The transfer using the handle (which it holds, and leaves through
    /// `detach` before it goes): curl's callbacks find it here.
    unowned(unsafe) var transfer: HTTPTransfer?
    /// What the options a request may change were last set to (the first
    /// values differ from any request's).
    var maxRedirects = UInt32.max
    var insecure: Bool?
    var compressed: Bool?
    var version: HTTPRequest.Version?
    /// The URL's scheme was https when the version was set.
    var versionOverTLS = false
    var caFile: String?
    /// libcurl's own CA file, to go back to after a request that named one.
    var defaultCAFile: String?
    var timeoutMs = UInt32.max
    /// Whether the last request was a GET with no body.
    var plainGet = false
    /// Content decoding was turned off for the last transfer (a response
    /// in an encoding libcurl does not know): turned on again for the next.
    var decodingOff = false
    /// The header list curl was last given: `agentHeader`, or the list of a
    /// transfer.
    var headers: UnsafeMutablePointer<curl_slist>?

    init(_ easy: UnsafeMutableRawPointer, multi: CurlMulti) {
        self.easy = easy
        self.multi = multi
        errorBuffer.initialize(to: 0)
    }

    /// Runs after `curl_easy_cleanup` of the handle (or with the handle
    /// detached from the list), never while curl may read the list.
    deinit {
        errorBuffer.deallocate()
        curl_slist_free_all(agentHeader)
    }

    /// The transfer of the handle a callback's user pointer names.
    @inline(__always)
    static func transfer(_ userp: UnsafeMutableRawPointer?) -> HTTPTransfer? {
        Unmanaged<EasyHandle>.fromOpaque(userp!).takeUnretainedValue().transfer
    }

    /// Forgets a finished transfer; curl gives back the header list the
    /// transfer owns before the transfer frees it.
    func detach() {
        transfer = nil
        if headers != agentHeader {
            lds_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, agentHeader)
            headers = agentHeader
        }
    }
}

/// A `uv_poll_t` watching an epoll instance for readiness, kept alive
/// until closed.
private final class EpollPoll {
    private let handle = UnsafeMutablePointer<uv_poll_t>.allocate(capacity: 1)
    private var keepAlive: Unmanaged<EpollPoll>?
    private var onReady: (() -> Void)?

    init?(loop: UnsafeMutablePointer<uv_loop_t>, epoll: Int32) {
        guard uv_poll_init(loop, handle, epoll) == 0 else {
            handle.deallocate()
            return nil
        }
        keepAlive = Unmanaged.passRetained(self)
        handle.pointee.data = keepAlive!.toOpaque()
    }

    deinit {
        handle.deallocate()
    }

    func start(_ body: @escaping () -> Void) {
        onReady = body
        uv_poll_start(handle, Int32(UV_READABLE.rawValue)) { h, _, _ in
            Unmanaged<EpollPoll>.fromOpaque(h!.pointee.data).takeUnretainedValue().onReady?()
        }
    }

    func close() {
        onReady = nil
        uv_poll_stop(handle)
        let raw = UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self)
        guard uv_is_closing(raw) == 0 else { return }
        uv_close(raw) { h in
            Unmanaged<EpollPoll>.fromOpaque(h!.pointee.data).release()
        }
    }
}

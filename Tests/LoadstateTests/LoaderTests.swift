import Testing
@_spi(LoadstateC) @testable import Loadstate
#if canImport(Glibc)
import Glibc
#endif

typealias Bytes = [UInt8]

/// A byte cell on its own runtime, with one built-in loader.
struct LoaderFixture {
    let runtime: Runtime
    let loader: Loader<Bytes, Bytes>

    init(_ make: (UInt64) -> Loader<Bytes, Bytes>) throws {
        runtime = try Runtime()
        loader = make(runtime.table.makeID(.loader))
        runtime.table.insert(loader)
    }

    func cell() -> (Cell<Bytes, Bytes>, EventLog<Bytes, Bytes>) {
        let log = EventLog<Bytes, Bytes>()
        let cell = Cell<Bytes, Bytes>(id: runtime.table.makeID(.loadable), flavor: .loadable, runtime: runtime,
                                      observer: log.observer)
        runtime.table.insert(cell)
        return (cell, log)
    }

    func load(_ cell: Cell<Bytes, Bytes>, _ request: Bytes, options: LoadOptions = LoadOptions()) {
        let spec = LoadSpec(loader: loader, request: request, options: options)
        runtime.loop.execute { cell.load(spec) }
    }

    /// Loads and returns the events up to the final state (progress and
    /// partial values included).
    func run(_ request: Bytes, options: LoadOptions = LoadOptions()) async -> [CellEvent<Bytes, Bytes>] {
        let (cell, log) = self.cell()
        load(cell, request, options: options)
        return await log.untilSettled()
    }

    func close() { _ = runtime.close() }
}

extension EventLog where Value == Bytes {
    /// Events until a state event that is neither loading nor partial.
    func untilSettled() async -> [Event] {
        var events: [Event] = []
        while true {
            let e = await next()
            events.append(e)
            if e.type == .state && e.state.status != .loading && !e.state.isPartial && !e.state.isRefreshing {
                return events
            }
        }
    }
}

private func http(_ path: String, timeoutMs: UInt32 = 0) -> Bytes {
    HTTPRequest(url: TestServer.shared.url(path), timeoutMs: timeoutMs).encoded()
}

private func response(_ events: [CellEvent<Bytes, Bytes>]) -> HTTPResponse? {
    events.last?.state.value.flatMap { HTTPResponse(decoding: $0) }
}

@Suite(.timeLimit(.minutes(2)))
struct HTTPLoaderTests {
    let f: LoaderFixture

    init() throws {
        // The server is on 127.0.0.1: never through a proxy from the environment.
        f = try LoaderFixture { HTTPLoader(id: $0, options: .init(proxy: "")) }
    }

    @Test func largeBodyArrivesWithProgress() async {
        defer { f.close() }
        let events = await f.run(http("/bytes/5000000"))
        let r = response(events)
        #expect(r?.status == 200)
        #expect(r?.body.count == 5_000_000)
        #expect(r?.header("content-length") == "5000000")
        let progress = events.filter { $0.type == .progress }
        #expect(!progress.isEmpty)
        #expect(progress.last?.progressDone == 5_000_000)
        // In bytes of the announced total, at least 64 KiB apart but the last.
        #expect(progress.allSatisfy { $0.progressTotal == 5_000_000 })
        let done = progress.map(\.progressDone)
        #expect(zip(done, done.dropFirst()).dropLast().allSatisfy { $1 - $0 >= 64 << 10 })
        #expect(done.first.map { $0 >= 64 << 10 } == true)
        // A small body reports no progress: its LOADED event follows at once.
        #expect(await f.run(http("/bytes/10")).allSatisfy { $0.type != .progress })
    }

    @Test func chunkedStreamingIsReassembled() async {
        defer { f.close() }
        let r = response(await f.run(http("/chunked/50/1000")))
        #expect(r?.status == 200)
        #expect(r?.body == Bytes(repeating: UInt8(ascii: "c"), count: 50_000))
    }

    @Test func slowResponseCancelledMidway() async {
        defer { f.close() }
        let (cell, log) = f.cell()
        // Longer than this test's tasks may wait for a thread while others
        // run (the suite's time limit is 2 minutes): the cancel comes first.
        f.load(cell, http("/slow/90000"))
        #expect(await log.next().state.status == .loading)
        f.runtime.loop.execute { cell.cancel() }
        let cancelled = await log.next()
        #expect(cancelled.isCancelled)
        #expect(cancelled.state.status == .absent)
        f.load(cell, http("/bytes/10"))
        #expect(response(await log.untilSettled())?.body.count == 10)
    }

    @Test func statusesOutside2xxAreHTTPErrors() async {
        defer { f.close() }
        for code: Int32 in [404, 500] {
            let last = await f.run(http("/status/\(code)")).last!
            #expect(last.state.status == .error)
            #expect(last.state.error?.domain == .http)
            #expect(last.state.error?.code == code)
            // The error state keeps the response the server sent.
            #expect(response([last])?.status == code)
        }
    }

    @Test func aConnectionResetIsATransportError() async {
        defer { f.close() }
        let error = await f.run(http("/reset")).last?.state.error
        #expect(error != nil)
        #expect(error?.domain != .http)
    }

    @Test func aRedirectToFileIsRefused() async {
        defer { f.close() }
        let error = await f.run(http("/redirect?to=file:///etc/passwd")).last?.state.error
        #expect(error?.domain == .loadstate)
        #expect(error?.code == ResultCode.invalidArgument.rawValue)
    }

    @Test func aRedirectBetweenHTTPURLsIsFollowed() async {
        defer { f.close() }
        let target = TestServer.shared.url("/bytes/3")
        let r = response(await f.run(http("/redirect?to=\(target)")))
        #expect(r?.status == 200)
        #expect(r?.body.count == 3)
    }

    @Test func onlyHTTPAndHTTPSAreAllowed() async {
        defer { f.close() }
        let error = await f.run(HTTPRequest(url: "file:///etc/passwd").encoded()).last?.state.error
        #expect(error?.code == ResultCode.invalidArgument.rawValue)
    }

    @Test func theSchemeIsHTTPOrHTTPSInAnyCase() {
        for url in ["http://a", "https://a", "HTTP://a", "HttpS://a"] { #expect(HTTPLoader.isHTTP(url), "\(url)") }
        for url in ["file:///a", "http", "https", "httpx://a", "ftp://a", "http\u{1A}//a", "", " http://a"] {
            #expect(!HTTPLoader.isHTTP(url), "\(url)")
        }
    }

    @Test func aRequestTimeoutFailsWithTimedOut() async {
        defer { f.close() }
        let error = await f.run(http("/slow/10000", timeoutMs: 100)).last?.state.error
        #expect(error?.domain == .loadstate)
        #expect(error?.code == ResultCode.timedOut.rawValue)
    }

    @Test func retryAfterSetsTheBackOff() async {
        defer { f.close() }
        let key = "k\(UInt64.random(in: 0...UInt64.max))"
        let options = LoadOptions(retries: 2, retryBaseMs: 1, retryMaxMs: 10_000)
        let started = Clock.monotonicMs()
        let events = await f.run(http("/retry-after/1/\(key)"), options: options)
        let elapsed = Clock.monotonicMs() - started
        let states = events.filter { $0.type == .state }
        #expect(states.map(\.state.attempt) == [1, 2, 2])
        #expect(String(decoding: response(events)?.body ?? [], as: UTF8.self) == "ok after 2")
        // The server asked for one second; the loader waited at least that.
        #expect(elapsed >= 1000)
    }

    @Test func fiveHundredConcurrentRequests() async {
        defer { f.close() }
        var cells: [(Cell<Bytes, Bytes>, EventLog<Bytes, Bytes>)] = []
        for _ in 0..<500 {
            let c = f.cell()
            f.load(c.0, http("/bytes/1000"))
            cells.append(c)
        }
        var loaded = 0
        for (_, log) in cells where response(await log.untilSettled())?.body.count == 1000 {
            loaded += 1
        }
        #expect(loaded == 500)
    }

    @Test func postSendsTheBodyAndHeaders() async {
        defer { f.close() }
        let request = HTTPRequest(method: "POST", url: TestServer.shared.url("/echo"), headers: ["X-Test: yes"],
                                  body: Array("payload".utf8))
        let text = String(decoding: response(await f.run(request.encoded()))?.body ?? [], as: UTF8.self)
        #expect(text.hasPrefix("POST /echo"))
        #expect(text.contains("X-Test: yes"))
        #expect(text.hasSuffix("payload"))
    }

    /// The loader's User-Agent goes with every request, unless the request
    /// names its own (an empty one sends none).
    @Test func theUserAgentIsTheLoadersUnlessTheRequestNamesOne() async {
        defer { f.close() }
        func echoed(_ headers: [String]) async -> [String] {
            let request = HTTPRequest(url: TestServer.shared.url("/echo"), headers: headers)
            let text = String(decoding: response(await f.run(request.encoded()))?.body ?? [], as: UTF8.self)
            return text.split(separator: "\n").filter { $0.lowercased().hasPrefix("user-agent:") }.map(String.init)
        }
        #expect(await echoed([]) == ["User-Agent: loadstate/0.2"])
        #expect(await echoed(["X-Other: 1"]) == ["User-Agent: loadstate/0.2"])
        #expect(await echoed(["user-agent: mine/1"]) == ["user-agent: mine/1"])
        #expect(await echoed(["User-Agent:"]) == [])
        #expect(await echoed([]) == ["User-Agent: loadstate/0.2"])
    }

    /// A kept-alive connection the server closes while it is idle: the
    /// loader takes its socket out of its epoll at the first event (else
    /// the end of the stream would be reported on every turn of the loop,
    /// spinning it), and the next request opens a new connection.
    @Test func anIdleConnectionClosedByTheServerIsDroppedOnce() async {
        defer { f.close() }
        #expect(response(await f.run(http("/close-after/20")))?.status == 200)
        let loader = f.loader as! HTTPLoader
        let runtime = f.runtime
        // Waits (on the loop) for the drop, or 10 s.
        let dropped = await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
            runtime.loop.execute {
                guard let multi = loader.curlMulti else { return done.resume(returning: false) }
                if multi.idleSocketsDropped > 0 { return done.resume(returning: true) }
                let timer = LoopTimer(loop: runtime.loop.loop)
                var resumed = false
                func finish(_ value: Bool) {
                    guard !resumed else { return }
                    resumed = true
                    multi.onIdleSocketDropped = nil
                    timer.close()
                    done.resume(returning: value)
                }
                multi.onIdleSocketDropped = { finish(true) }
                timer.start(after: 10_000) { finish(false) }
            }
        }
        #expect(dropped)
        let calls = { await withCheckedContinuation { (done: CheckedContinuation<Int, Never>) in
            runtime.loop.execute { done.resume(returning: loader.curlMulti?.readyCalls ?? 0) }
        } }
        let before = await calls()
        #expect(response(await f.run(http("/bytes/10")))?.status == 200)
        // A few turns for the second request, not one per turn of the loop.
        #expect(await calls() - before < 50)
    }

    /// Easy handles are reused without a reset: nothing of one request
    /// (method, body, headers, timeout) may leak into the next.
    @Test func requestsInTurnOnOneHandleKeepNothingOfTheLast() async {
        defer { f.close() }
        func text(_ method: String, _ path: String, headers: [String] = [], body: String = "",
                  timeoutMs: UInt32 = 0, maxRedirects: UInt32 = 5) async -> (Int32, String) {
            let request = HTTPRequest(method: method, url: TestServer.shared.url(path), headers: headers,
                                      body: Array(body.utf8), timeoutMs: timeoutMs, maxRedirects: maxRedirects)
            let r = response(await f.run(request.encoded()))
            return (r?.status ?? 0, String(decoding: r?.body ?? [], as: UTF8.self))
        }
        var (status, body) = await text("POST", "/echo", headers: ["X-First: yes"], body: "one", timeoutMs: 5000)
        #expect(status == 200 && body.hasPrefix("POST /echo") && body.contains("X-First: yes") && body.hasSuffix("one"))
        (status, body) = await text("GET", "/echo")
        #expect(status == 200 && body.hasPrefix("GET /echo"))
        #expect(!body.contains("X-First") && !body.contains("Content-Length") && !body.hasSuffix("one"))
        (status, body) = await text("PUT", "/echo", body: "three")
        #expect(status == 200 && body.hasPrefix("PUT /echo") && body.hasSuffix("three"))
        (status, body) = await text("put", "/echo", body: "lower")
        #expect(status == 200 && body.hasPrefix("PUT /echo") && body.hasSuffix("lower"))
        // A lower-case HEAD is still a HEAD: no body is awaited.
        (status, body) = await text("head", "/echo", timeoutMs: 5000)
        #expect(status == 200 && body.isEmpty)
        (status, body) = await text("HEAD", "/echo")
        #expect(status == 200 && body.isEmpty)
        (status, body) = await text("GET", "/echo", headers: ["X-Fifth: 5"])
        #expect(status == 200 && body.hasPrefix("GET /echo") && body.contains("X-Fifth: 5") && !body.contains("X-First"))
        (status, body) = await text("GET", "/bytes/10")
        #expect(status == 200 && body == "xxxxxxxxxx")
        // A handle sets only the options that differ from its last request's:
        // a timeout, then none, then another; redirects off, then on.
        (status, _) = await text("GET", "/bytes/3", timeoutMs: 150)
        #expect(status == 200)
        (status, body) = await text("GET", "/slow/400")
        #expect(status == 200 && body == "slow")
        (status, _) = await text("GET", "/slow/3000", timeoutMs: 150)
        #expect(status == 0)
        let redirect = "/redirect?to=" + TestServer.shared.url("/bytes/3")
        // Redirects off: the 302 is the answer, an http error that carries it.
        (status, _) = await text("GET", redirect, maxRedirects: 0)
        #expect(status == 302)
        (status, body) = await text("GET", redirect)
        #expect(status == 200 && body == "xxx")
        (status, _) = await text("GET", redirect, maxRedirects: 0)
        #expect(status == 302)
    }

    /// The loader builds its responses in place as they arrive; the result
    /// must be what `encoded()` makes of the same response.
    @Test(arguments: [(200, "", ""), (404, "A: b\r\n", ""), (201, "Content-Type: text/plain\r\nX: y\r\n", "body")])
    func anEncodingBuiltInPlaceEqualsTheEncodedResponse(_ status: Int32, _ headers: String, _ body: String) {
        var bytes = HTTPResponse.encodingStart()
        bytes.append(contentsOf: Array(headers.utf8))
        let headersEnd = bytes.count
        bytes.append(contentsOf: Array(body.utf8))
        HTTPResponse.finishEncoding(&bytes, status: status, headersEnd: headersEnd)
        let expected = HTTPResponse(status: status, headers: Array(headers.utf8), body: Array(body.utf8))
        #expect(bytes == expected.encoded())
        #expect(HTTPResponse(decoding: bytes) == expected)
    }

    @Test func aBodyOverTheLimitIsTooBig() async {
        defer { f.close() }
        let request = HTTPRequest(url: TestServer.shared.url("/bytes/100000"), maxBody: 1000)
        #expect(await f.run(request.encoded()).last?.state.error?.code == ResultCode.tooBig.rawValue)
    }
}

private func exec(_ argv: String...) -> Bytes {
    ExecRequest(argv: argv).encoded()
}

@Suite(.timeLimit(.minutes(2)))
struct ExecLoaderTests {
    @Test func aCommandThatSucceedsGivesItsStdout() async throws {
        let f = try LoaderFixture { ExecLoader(id: $0) }
        defer { f.close() }
        let last = await f.run(exec("sh", "-c", "echo hello; echo noise >&2")).last!
        #expect(last.state.value == Array("hello\n".utf8))
    }

    @Test func aCommandThatFailsGivesItsStatusAndStderr() async throws {
        let f = try LoaderFixture { ExecLoader(id: $0) }
        defer { f.close() }
        let error = await f.run(exec("sh", "-c", "echo broken >&2; exit 3")).last?.state.error
        #expect(error?.domain == .exit)
        #expect(error?.code == 3)
        #expect(error?.message == "broken\n")
    }

    @Test func aMissingProgramIsAnOSError() async throws {
        let f = try LoaderFixture { ExecLoader(id: $0) }
        defer { f.close() }
        let error = await f.run(exec("/nonexistent/program")).last?.state.error
        #expect(error?.domain == .os)
        #expect(error?.code == ENOENT)
    }

    @Test func linesStreamAsPartialValues() async throws {
        let f = try LoaderFixture { ExecLoader(id: $0, options: .init(streamLines: true)) }
        defer { f.close() }
        let events = await f.run(exec("sh", "-c", "echo a; sleep 0.05; echo b"))
        let partials = events.filter { $0.state.isPartial }.compactMap(\.state.value)
        let output = Array("a\nb\n".utf8)
        // Each partial value is whole lines of the output so far (how many
        // lines arrive per read is up to the pipe).
        #expect(!partials.isEmpty)
        #expect(partials.allSatisfy { $0.last == 10 && output.starts(with: $0) })
        #expect(events.last?.state.value == output)
    }

    @Test func fiftyMegabytesOfOutput() async throws {
        let f = try LoaderFixture { ExecLoader(id: $0) }
        defer { f.close() }
        let last = await f.run(exec("head", "-c", "52428800", "/dev/zero")).last!
        #expect(last.state.value?.count == 52_428_800)
    }

    @Test func aCommandIgnoringSIGTERMIsKilledAfterTheGracePeriod() async throws {
        let f = try LoaderFixture { ExecLoader(id: $0, options: .init(streamLines: true, killGraceMs: 50)) }
        defer { f.close() }
        let (cell, log) = f.cell()
        f.load(cell, exec("sh", "-c", "trap '' TERM; echo $$; while true; do sleep 0.01; done"))
        _ = await log.next()
        let pidLine = await log.next()
        let pid = pid_t(String(decoding: pidLine.state.value ?? [], as: UTF8.self).split(separator: "\n")[0]) ?? 0
        #expect(pid > 0)
        f.runtime.loop.execute { cell.cancel() }
        #expect(await log.next().isCancelled)
        // The process group is killed and reaped: the pid disappears.
        let deadline = Clock.monotonicMs() + 10_000
        while kill(pid, 0) == 0 && Clock.monotonicMs() < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(kill(pid, 0) == -1 && errno == ESRCH)
    }

    /// The command exits on SIGTERM; another member of its process group
    /// ignores it and prints its pid once it does. Whether that member keeps
    /// the pipes open or closes them, it gets SIGKILL when the grace period
    /// ends.
    @Test(arguments: [
        "sh -c 'trap \"\" TERM; echo $$; exec sleep 1000' & wait",
        "sh -c 'trap \"\" TERM; echo $$; exec sleep 1000 >/dev/null 2>&1' & wait",
    ])
    func aGroupMemberIgnoringSIGTERMIsKilledAfterTheGracePeriod(_ script: String) async throws {
        let f = try LoaderFixture { ExecLoader(id: $0, options: .init(streamLines: true, killGraceMs: 50)) }
        defer { f.close() }
        let (cell, log) = f.cell()
        f.load(cell, exec("sh", "-c", script))
        _ = await log.next()
        let pidLine = await log.next()
        let pid = pid_t(String(decoding: pidLine.state.value ?? [], as: UTF8.self).split(separator: "\n")[0]) ?? 0
        #expect(pid > 0)
        guard pid > 0 else { return }
        defer { kill(pid, SIGKILL) }
        f.runtime.loop.execute { cell.cancel() }
        #expect(await log.next().isCancelled)
        let deadline = Clock.monotonicMs() + 10_000
        while !processEnded(pid) && Clock.monotonicMs() < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(processEnded(pid))
    }
}

/// Whether `pid` is gone or a zombie: killed, not necessarily reaped (an
/// orphan is reaped by the system's init, which may be slow to do it).
private func processEnded(_ pid: pid_t) -> Bool {
    if kill(pid, 0) == -1 && errno == ESRCH { return true }
    let fd = open("/proc/\(pid)/stat", O_RDONLY)
    guard fd >= 0 else { return true }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 512)
    let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    guard count > 0 else { return true }
    // "pid (comm) S ...": the state follows the last ')'.
    let text = buffer[0..<count]
    guard let paren = text.lastIndex(of: UInt8(ascii: ")")), paren + 2 < count else { return false }
    return text[paren + 2] == UInt8(ascii: "Z")
}

@Suite(.timeLimit(.minutes(1)))
struct FileLoaderTests {
    private func temporaryFile(_ contents: Bytes) -> String {
        var template = Array("/tmp/loadstate-test-XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        contents.withUnsafeBytes { _ = write(fd, $0.baseAddress, $0.count) }
        close(fd)
        return String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    @Test func aFileIsReadWithProgressInBytes() async throws {
        let f = try LoaderFixture { FileLoader(id: $0, options: .init(chunkSize: 4096)) }
        defer { f.close() }
        let contents = Bytes((0..<100_000).map { UInt8($0 % 251) })
        let path = temporaryFile(contents)
        defer { unlink(path) }
        let events = await f.run(Array(path.utf8))
        #expect(events.last?.state.value == contents)
        let progress = events.filter { $0.type == .progress }
        #expect(progress.count > 10)
        #expect(progress.allSatisfy { $0.progressTotal == 100_000 })
        #expect(progress.last?.progressDone == 100_000)
    }

    @Test func aMissingFileIsAnOSErrorNamingThePath() async throws {
        let f = try LoaderFixture { FileLoader(id: $0) }
        defer { f.close() }
        let error = await f.run(Array("/nonexistent/file".utf8)).last?.state.error
        #expect(error?.domain == .os)
        #expect(error?.code == ENOENT)
        #expect(error?.message?.contains("/nonexistent/file") == true)
    }

    @Test func aFIFOWithNoWriterIsRefusedAtOnce() async throws {
        let f = try LoaderFixture { FileLoader(id: $0) }
        defer { f.close() }
        let path = temporaryFile([])
        unlink(path)
        #expect(mkfifo(path, 0o600) == 0)
        defer { unlink(path) }
        let error = await f.run(Array(path.utf8)).last?.state.error
        #expect(error?.domain == .loadstate)
        #expect(error?.code == ResultCode.invalidArgument.rawValue)
        #expect(error?.message == "\(path): not a regular file")
    }

    @Test func aDirectoryCannotBeRead() async throws {
        let f = try LoaderFixture { FileLoader(id: $0) }
        defer { f.close() }
        let error = await f.run(Array("/tmp".utf8)).last?.state.error
        #expect(error?.domain == .os)
        #expect(error?.code == EISDIR)
    }

    @Test func aFileOverTheLimitIsTooBig() async throws {
        let f = try LoaderFixture { FileLoader(id: $0, options: .init(maxSize: 10)) }
        defer { f.close() }
        let path = temporaryFile(Bytes(repeating: 1, count: 100))
        defer { unlink(path) }
        let error = await f.run(Array(path.utf8)).last?.state.error
        #expect(error?.code == ResultCode.tooBig.rawValue)
    }
}

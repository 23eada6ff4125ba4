import Testing
@_spi(LoadstateC) @testable import Loadstate

private func response(_ events: [CellEvent<Bytes, Bytes>]) -> HTTPResponse? {
    events.last?.state.value.flatMap { HTTPResponse(decoding: $0) }
}

/// HTTP/2 against Debian's nginx: ALPN over TLS with a certificate the
/// test trusts explicitly, prior knowledge in cleartext, multiplexing.
@Suite(.timeLimit(.minutes(2)))
struct HTTP2Tests {
    let f: LoaderFixture
    let nginx = TestNginx.shared

    init() throws {
        f = try LoaderFixture { HTTPLoader(id: $0, options: .init(proxy: "")) }
    }

    /// Loads `count` requests at once; the responses, in any order.
    private func concurrently(_ count: Int, _ request: HTTPRequest) async -> [HTTPResponse?] {
        let cells = (0..<count).map { _ in f.cell() }
        for (cell, _) in cells { f.load(cell, request.encoded()) }
        var responses: [HTTPResponse?] = []
        for (_, log) in cells { responses.append(response(await log.untilSettled())) }
        return responses
    }

    @Test func http2OverTLSIsNegotiatedWithATrustedCAFile() async {
        defer { f.close() }
        let request = HTTPRequest(url: nginx.https("/ok"), version: .http2, caFile: nginx.caFile)
        let r = response(await f.run(request.encoded()))
        #expect(r?.status == 200)
        #expect(r?.body == Array("ok".utf8))
        #expect(r?.header("X-Protocol") == "HTTP/2.0")
    }

    @Test func aSelfSignedServerIsRefusedWithoutItsCAFile() async {
        defer { f.close() }
        let events = await f.run(HTTPRequest(url: nginx.https("/ok"), version: .http2).encoded())
        #expect(events.last?.state.status == .error)
        #expect(events.last?.state.error?.domain != .http)
    }

    @Test func http1OnlyStaysOnHTTP1OverTLS() async {
        defer { f.close() }
        let request = HTTPRequest(url: nginx.https("/ok"), version: .http1, caFile: nginx.caFile)
        #expect(response(await f.run(request.encoded()))?.header("X-Protocol") == "HTTP/1.1")
    }

    @Test func cleartextHTTP2UsesPriorKnowledge() async {
        defer { f.close() }
        let request = HTTPRequest(url: nginx.h2c("/ok"), version: .http2)
        let r = response(await f.run(request.encoded()))
        #expect(r?.status == 200)
        #expect(r?.header("X-Protocol") == "HTTP/2.0")
    }

    @Test func cleartextHTTP2WorksAgainAfterItsFirstRequest() async {
        defer { f.close() }
        let request = HTTPRequest(url: nginx.h2c("/ok"), version: .http2)
        // One after another (a kept-alive connection is there for the next),
        // then several at once: every one is answered over HTTP/2.
        for _ in 0..<3 {
            let r = response(await f.run(request.encoded()))
            #expect(r?.status == 200)
            #expect(r?.header("X-Protocol") == "HTTP/2.0")
        }
        let together = await concurrently(8, request)
        #expect(together.allSatisfy { $0?.status == 200 && $0?.header("X-Protocol") == "HTTP/2.0" })
    }

    @Test func concurrentHTTP2RequestsShareFewConnections() async {
        defer { f.close() }
        let count = 200
        let request = HTTPRequest(url: nginx.https("/ok"), version: .http2, caFile: nginx.caFile)
        // One request first: the connection is up and has said how many
        // streams it takes (before that, libcurl counts on 100).
        let first = response(await f.run(request.encoded()))?.header("X-Connection")
        let h2 = await concurrently(count, request)
        let h1 = await concurrently(count, HTTPRequest(url: nginx.https("/ok"), version: .http1, caFile: nginx.caFile))
        #expect(h2.allSatisfy { $0?.status == 200 })
        #expect(h1.allSatisfy { $0?.status == 200 })
        let h2Connections = Set(h2.compactMap { $0?.header("X-Connection") }).count
        let h1Connections = Set(h1.compactMap { $0?.header("X-Connection") }).count
        // nginx takes 1,000 streams a connection: the first is enough for 200.
        #expect(h2Connections == 1, "HTTP/2: \(h2Connections) connections")
        #expect(h2.first??.header("X-Connection") == first)
        #expect(h1Connections >= 4 * h2Connections, "HTTP/1.1: \(h1Connections), HTTP/2: \(h2Connections)")
    }
}

/// The Swift API's http loader takes the same request options.
@Suite(.timeLimit(.minutes(2)))
struct HTTP2FetchTests {
    @Test func fetchSpeaksHTTP2WithATrustedCAFile() async throws {
        let nginx = TestNginx.shared
        let http = BuiltinLoader.http(options: HTTPLoaderOptions(proxy: ""))
        let tls = try await http.fetch(HTTPRequest(url: nginx.https("/ok"), version: .http2, caFile: nginx.caFile))
        #expect(tls.header("X-Protocol") == "HTTP/2.0")
        for compressed in [true, false, true] {
            let request = HTTPRequest(url: nginx.https("/100k"), compressed: compressed, version: .http2,
                                      caFile: nginx.caFile)
            let response = try await http.fetch(request)
            #expect(response.header("X-Protocol") == "HTTP/2.0")
            #expect(response.body.count == 102_400)
        }
    }
}

/// Connection limits observed at the server: nginx names each answer's
/// connection (X-Connection).
@Suite(.timeLimit(.minutes(2)))
struct HTTPConnectionLimitTests {
    let nginx = TestNginx.shared

    /// How many connections `count` concurrent HTTP/1.1 GETs of 100 KiB used.
    private func connections(_ options: HTTPLoaderOptions, count: Int = 40) async throws -> Int {
        let http = BuiltinLoader.http(runtime: try Runtime(), options: options)
        let url = "http://127.0.0.1:\(nginx.plainPort)/100k"
        defer { _ = http.runtime.close() }
        let names = try await withThrowingTaskGroup(of: String?.self) { group in
            for _ in 0..<count {
                group.addTask { try await http.fetch(HTTPRequest(url: url, version: .http1)).header("X-Connection") }
            }
            var names: Set<String> = []
            for try await name in group { if let name { names.insert(name) } }
            return names
        }
        return names.count
    }

    @Test func maxPerHostBoundsTheConnectionsToOneHost() async throws {
        // Without a limit the concurrent GETs open many connections, so the
        // bounds below are what the limits do.
        #expect(try await connections(HTTPLoaderOptions(proxy: "")) > 2)
        #expect(try await connections(HTTPLoaderOptions(maxPerHost: 2, proxy: "")) <= 2)
        #expect(try await connections(HTTPLoaderOptions(maxConnections: 3, proxy: "")) <= 3)
    }
}

/// The Swift API's http loader revalidates through an HTTP cache.
@Suite(.timeLimit(.minutes(2)))
struct HTTPFetchCachingTests {
    @Test func fetchThroughACacheRevalidatesAndServesFreshResponses() async throws {
        let runtime = try Runtime()
        defer { _ = runtime.close() }
        let http = BuiltinLoader.http(runtime: runtime, options: HTTPLoaderOptions(proxy: ""))
        let cache = MemoryCache(name: "http", runtime: runtime)
        let key = "swift-fetch-\(UInt64.random(in: 0...UInt64.max))"
        let request = HTTPRequest(url: TestServer.shared.url("/cached/\(key)?etag=%22v1%22&size=100000"))
        let first = try await http.fetch(request, cache: cache)
        #expect(first.body.count == 100_000 && first.header("X-Answer") == "1")
        // No fresh time: the second fetch revalidates; the 304 brings no body.
        let second = try await http.fetch(request, cache: cache)
        #expect(second.body == first.body && second.header("X-Answer") == "2")
        let counts = try await http.fetch(HTTPRequest(url: TestServer.shared.url("/count/\(key)")))
        #expect(String(decoding: counts.body, as: UTF8.self) == "1 2")
        // max-age: fresh responses are served without a request.
        let freshKey = key + "-fresh"
        let fresh = HTTPRequest(url: TestServer.shared.url("/cached/\(freshKey)?cc=max-age%3D600"))
        _ = try await http.fetch(fresh, cache: cache)
        let again = try await http.fetch(fresh, cache: cache)
        #expect(again.header("X-Answer") == "1")
        // A cell's loader through the cache.
        let cell = LoadableCellWith<HTTPRequest, Int>(runtime: runtime,
                                                      loader: http.loadFunction(cache: cache) { $0.body.count })
        await cell.load(request)
        guard case .loaded(let size) = cell.state else {
            Issue.record("the cell shows \(cell.state)")
            return
        }
        #expect(size == 100_000)
        let after = try await http.fetch(HTTPRequest(url: TestServer.shared.url("/count/\(key)")))
        #expect(String(decoding: after.body, as: UTF8.self) == "1 3")
    }
}

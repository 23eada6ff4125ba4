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

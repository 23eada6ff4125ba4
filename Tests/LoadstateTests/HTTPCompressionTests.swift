import Testing
@_spi(LoadstateC) @testable import Loadstate
#if canImport(Glibc)
import Glibc
#endif

private func body(_ events: [CellEvent<Bytes, Bytes>]) -> [UInt8]? {
    events.last?.state.value.flatMap { HTTPResponse(decoding: $0) }?.body
}

/// The largest resident set the process has had, in bytes.
private func peakResidentBytes() -> Int {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return usage.ru_maxrss * 1024
}

@Suite(.timeLimit(.minutes(2)))
struct HTTPCompressionTests {
    let f: LoaderFixture

    init() throws {
        f = try LoaderFixture { HTTPLoader(id: $0, options: .init(proxy: "")) }
    }

    @Test func aGzipBodyIsDecoded() async {
        defer { f.close() }
        let events = await f.run(HTTPRequest(url: TestServer.shared.url("/gzip/100000")).encoded())
        #expect(body(events) == [UInt8](repeating: UInt8(ascii: "z"), count: 100_000))
        let headers = events.last?.state.value.flatMap { HTTPResponse(decoding: $0) }
        #expect(headers?.header("Content-Encoding") == "gzip")
    }

    @Test func everyEncodingLibcurlDecodesIsAskedFor() async {
        defer { f.close() }
        let echo = await f.run(HTTPRequest(url: TestServer.shared.url("/echo")).encoded())
        let text = String(decoding: body(echo) ?? [], as: UTF8.self)
        #expect(text.contains("Accept-Encoding: \(HTTPLoader.acceptEncoding)\n"))
        #expect(HTTPLoader.acceptEncoding.hasPrefix("gzip, deflate"))
    }

    @Test func withoutCompressionNothingIsAskedForOrDecoded() async {
        defer { f.close() }
        let echo = await f.run(HTTPRequest(url: TestServer.shared.url("/echo"), compressed: false).encoded())
        #expect(!String(decoding: body(echo) ?? [], as: UTF8.self).contains("Accept-Encoding"))
        let raw = await f.run(HTTPRequest(url: TestServer.shared.url("/gzip/1000"), compressed: false).encoded())
        #expect(body(raw)?.prefix(2).elementsEqual([0x1F, 0x8B]) == true)
    }

    @Test func aCompressionBombFailsWithTooBigAndMemoryStaysBounded() async {
        defer { f.close() }
        let before = peakResidentBytes()
        let request = HTTPRequest(url: TestServer.shared.url("/gzip-bomb/1024"), maxBody: 1 << 20)
        let events = await f.run(request.encoded())
        let error = events.last?.state.error
        #expect(error?.domain == .loadstate)
        #expect(error?.code == ResultCode.tooBig.rawValue)
        // Decoded without the bound, the body would take 1 GiB (more while its
        // array grows); the bound keeps it to about 1 MiB. The margin is for
        // the other tests of this process, which run meanwhile: under the
        // address sanitizer they raised the peak by up to 473 MB.
        #expect(peakResidentBytes() - before < 900 << 20)
    }
}

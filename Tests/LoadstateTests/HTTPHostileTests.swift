import Testing
@_spi(LoadstateC) @testable import Loadstate
#if canImport(Glibc)
import Glibc
#endif

private func response(_ events: [CellEvent<Bytes, Bytes>]) -> HTTPResponse? {
    events.last?.state.value.flatMap { HTTPResponse(decoding: $0) }
}

private func text(_ events: [CellEvent<Bytes, Bytes>]) -> String {
    String(decoding: response(events)?.body ?? [], as: UTF8.self)
}

private func uniqueKey() -> String { "k\(UInt64.random(in: 0...UInt64.max))" }

/// The http loader against servers that answer with what no well-behaved
/// server sends: numbers past any range, endless headers and trailers,
/// redirect loops. None of it may trap or grow memory without bound.
@Suite(.timeLimit(.minutes(2)))
struct HTTPHostileServerTests {
    let f: LoaderFixture

    init() throws {
        f = try LoaderFixture { HTTPLoader(id: $0, options: .init(proxy: "")) }
    }

    private func run(_ path: String, options: LoadOptions = LoadOptions()) async -> [CellEvent<Bytes, Bytes>] {
        await f.run(HTTPRequest(url: TestServer.shared.url(path)).encoded(), options: options)
    }

    /// 18446744073709552 seconds are more milliseconds than a UInt64
    /// holds: the delay saturates, and the back-off is the load's maximum.
    @Test func aRetryAfterPastAnyRangeSaturatesToTheMaximumBackOff() async {
        defer { f.close() }
        let options = LoadOptions(retries: 1, retryBaseMs: 1, retryMaxMs: 20)
        for seconds in ["18446744073709552", "99999999999999999999999999999999"] {
            let events = await run("/retry-after/\(seconds)/\(uniqueKey())", options: options)
            #expect(text(events) == "ok after 2", "\(seconds)")
        }
    }

    @Test func aRetryAfterDateInThePastRetriesAtOnce() async {
        defer { f.close() }
        let options = LoadOptions(retries: 1, retryBaseMs: 1, retryMaxMs: 60_000)
        let started = Clock.monotonicMs()
        #expect(text(await run("/retry-after-date/-3600/\(uniqueKey())", options: options)) == "ok after 2")
        #expect(Clock.monotonicMs() - started < 30_000)
    }

    /// A date two seconds ahead (to the second): the retry waits over one.
    @Test func aRetryAfterDateIsWaitedFor() async {
        defer { f.close() }
        let options = LoadOptions(retries: 1, retryBaseMs: 1, retryMaxMs: 60_000)
        let started = Clock.monotonicMs()
        #expect(text(await run("/retry-after-date/2/\(uniqueKey())", options: options)) == "ok after 2")
        #expect(Clock.monotonicMs() - started >= 1000)
    }

    private func tooBig(_ events: [CellEvent<Bytes, Bytes>], _ what: String) {
        let error = events.last?.state.error
        #expect(error?.domain == .loadstate)
        #expect(error?.code == ResultCode.tooBig.rawValue)
        #expect(error?.message?.contains(what) == true, "\(error?.message ?? "no message")")
    }

    @Test func aStatusLineOverItsLimitIsTooBig() async {
        defer { f.close() }
        #expect(text(await run("/status-line/\(HTTPLoader.statusLineMax - 100)")) == "ok")
        tooBig(await run("/status-line/\(HTTPLoader.statusLineMax)"), "status line over \(HTTPLoader.statusLineMax)")
    }

    @Test func headerLinesOverTheirLimitAreTooBig() async {
        defer { f.close() }
        let size = 1000, fit = HTTPLoader.headersMax / size - 1
        #expect(text(await run("/headers/\(fit)/\(size)")) == "ok")
        tooBig(await run("/headers/\(fit + 2)/\(size)"), "header lines over \(HTTPLoader.headersMax) bytes")
    }

    @Test func moreHeaderLinesThanTheLimitAreTooBig() async {
        defer { f.close() }
        #expect(text(await run("/headers/\(HTTPLoader.headerLinesMax - 1)/20")) == "ok")
        tooBig(await run("/headers/\(HTTPLoader.headerLinesMax + 1)/20"), "over \(HTTPLoader.headerLinesMax) header lines")
    }

    /// Trailers keep coming after a chunked body (some 12 MB of them, far
    /// over the body's limit): the load stops at the trailers' limit.
    @Test func endlessTrailersStopAtTheirLimit() async {
        defer { f.close() }
        let request = HTTPRequest(url: TestServer.shared.url("/trailers/200000"), maxBody: 1000)
        tooBig(await f.run(request.encoded()), "trailer lines over \(HTTPLoader.trailersMax) bytes")
        let fine = response(await run("/trailers/10"))
        #expect(fine?.body == Array("ok".utf8))
        #expect(fine?.header("X-Filler")?.count == 50)
    }

    /// A route redirecting to itself, on a handle whose last transfer
    /// failed otherwise: the message names the loop.
    @Test func aRedirectLoopSaysTooManyRedirects() async {
        defer { f.close() }
        #expect(await run("/reset").last?.state.error != nil)
        for _ in 0..<2 {
            let error = await run("/loop").last?.state.error
            #expect(error?.domain == .loadstate)
            #expect(error?.code == ResultCode.invalidArgument.rawValue)
            let message = error?.message ?? ""
            #expect(message.hasPrefix("too many redirects (more than 5) from "), "\(message)")
            #expect(message.hasSuffix(TestServer.shared.url("/loop")), "\(message)")
        }
    }

    /// A failure with no errno after one with an errno on the same handle
    /// is not given the old errno.
    @Test func aFailureWithoutErrnoKeepsNoneOfTheLastTransfers() async {
        defer { f.close() }
        var port: UInt16 = 0
        let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                _ = bind(s, $0, length)
                _ = getsockname(s, $0, &length)
            }
        }
        port = UInt16(bigEndian: address.sin_port)
        close(s)
        let refused = await f.run(HTTPRequest(url: "http://127.0.0.1:\(port)/").encoded()).last?.state.error
        #expect(refused?.domain == .os)
        #expect(refused?.code == ECONNREFUSED)
        let empty = await run("/empty").last?.state.error
        #expect(empty?.domain == .loadstate)
        #expect(empty?.code == ResultCode.io.rawValue)
    }

    /// A hand-built request (not through `lds_http_request_encode`) whose
    /// method would write a header of its own is refused before sending.
    @Test func anInjectingRequestIsRefusedByTheLoader() async {
        defer { f.close() }
        let url = TestServer.shared.url("/echo")
        let requests = [HTTPRequest(method: "GET /echo HTTP/1.1\r\nX-Injected: 1\r\n\r\nGET", url: url),
                        HTTPRequest(url: url + "\r\nX-Injected: 1"),
                        HTTPRequest(url: url, headers: ["X-A: b\rX-Injected: 1"]),
                        HTTPRequest(url: url, headers: ["X-Injected 1"])]
        for request in requests {
            let error = await f.run(request.encoded()).last?.state.error
            #expect(error?.domain == .loadstate, "\(request)")
            #expect(error?.code == ResultCode.invalidArgument.rawValue, "\(request)")
        }
    }
}

/// The loader's bounds are the ones the C header documents.
@Test func theResponseBoundsAreTheHeadersOwn() {
    let path = TestServer.repositoryRoot + "/include/loadstate.h"
    guard let file = fopen(path, "r") else { Issue.record("cannot open \(path)"); return }
    defer { fclose(file) }
    var defines: [String: Int] = [:]
    var line = [CChar](repeating: 0, count: 4096)
    while fgets(&line, Int32(line.count), file) != nil {
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let words = text.split(separator: " ", omittingEmptySubsequences: true)
        guard words.count >= 3, words[0] == "#define", words[1].hasPrefix("LDS_HTTP_") else { continue }
        defines[String(words[1])] = Int(words[2].filter(\.isNumber))
    }
    #expect(defines["LDS_HTTP_STATUS_LINE_MAX"] == HTTPLoader.statusLineMax)
    #expect(defines["LDS_HTTP_HEADERS_MAX"] == HTTPLoader.headersMax)
    #expect(defines["LDS_HTTP_HEADER_LINES_MAX"] == HTTPLoader.headerLinesMax)
    #expect(defines["LDS_HTTP_TRAILERS_MAX"] == HTTPLoader.trailersMax)
}

@Suite struct HTTPRequestValidationTests {
    /// `encoded` with the only byte `marker` replaced by 0xFF (no longer UTF-8).
    private func spoiled(_ encoded: [UInt8], at marker: Character) -> [UInt8] {
        var bytes = encoded
        let value = marker.asciiValue ?? 0
        #expect(bytes.filter { $0 == value }.count == 1)
        if let i = bytes.firstIndex(of: value) { bytes[i] = 0xFF }
        return bytes
    }

    @Test func encodedRequestsWhoseTextIsNotUTF8AreRefused() {
        let request = HTTPRequest(method: "GET", url: "http://a/Z", headers: ["X-Q: W"])
        #expect(HTTPRequest(decoding: request.encoded()) != nil)
        #expect(HTTPRequest(decoding: spoiled(request.encoded(), at: "Z")) == nil)
        #expect(HTTPRequest(decoding: spoiled(request.encoded(), at: "W")) == nil)
        let command = ExecRequest(argv: ["/bin/echo", "Z"], environment: ["A=W"], directory: "/tmp/Q")
        #expect(ExecRequest(decoding: command.encoded()) != nil)
        for marker: Character in ["Z", "W", "Q"] {
            #expect(ExecRequest(decoding: spoiled(command.encoded(), at: marker)) == nil)
        }
    }

    @Test(arguments: ["GET", "get", "M-SEARCH", "!#$%&'*+-.^_`|~09azAZ"])
    func aTokenIsAMethod(_ method: String) {
        #expect(HTTPRequest(method: method, url: "http://a/").problem == nil)
    }

    @Test(arguments: ["", "G ET", "GET\r\n", "GET\n", "G\tET", "GE:T", "G/T", "G\u{7F}", "G\u{0}T", "GÉT", "(GET)"])
    func anythingElseIsNot(_ method: String) {
        #expect(HTTPRequest(method: method, url: "http://a/").problem != nil)
    }

    @Test func aURLHoldsNoControlCharacterOrSpace() {
        #expect(HTTPRequest(url: "http://a/b?c=d#e").problem == nil)
        #expect(HTTPRequest(url: "http://a/café").problem == nil)
        for url in ["http://a/\r\n", "http://a/\n", "http://a/ b", "http://a/\t", "http://a/\u{7F}", "http://a/\u{0}",
                    "http://a/\u{1B}"] {
            #expect(HTTPRequest(url: url).problem != nil, "\(url.debugDescription)")
        }
    }

    @Test func aHeaderLineIsATokenAColonAndAValueWithoutControls() {
        for line in ["X-A: b", "X-A:b", "X-A: b\tc", "User-Agent:", "X: café", "X: \"q\" (c)"] {
            #expect(HTTPRequest(url: "http://a/", headers: [line]).problem == nil, "\(line.debugDescription)")
        }
        for line in ["X-A: b\r\nX-B: c", "X-A: b\n", "X-A: b\r", "no colon", "", ": v", "X A: b", "X-A : b",
                     "X\u{1}: b", "X-A: b\u{1}", "X-A: \u{7F}", "X-A; b", "X-A: b\u{0}"] {
            #expect(HTTPRequest(url: "http://a/", headers: ["X-Fine: 1", line]).problem != nil,
                    "\(line.debugDescription)")
        }
    }
}

@Suite struct RetryAfterTests {
    /// 1994-11-06 08:49:37 UTC, the example of RFC 9110.
    static let example: UInt64 = 784_111_777

    @Test func deltaSecondsAreMilliseconds() {
        #expect(RetryAfter.delayMs("0", nowMs: 5) == 0)
        #expect(RetryAfter.delayMs("120", nowMs: 5) == 120_000)
        #expect(RetryAfter.delayMs("18446744073709551", nowMs: 0) == 18_446_744_073_709_551_000)
        #expect(RetryAfter.delayMs("18446744073709552", nowMs: 0) == UInt64.max)
        #expect(RetryAfter.delayMs(String(repeating: "9", count: 400), nowMs: 0) == UInt64.max)
    }

    @Test(arguments: ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"])
    func theThreeDateFormsAreRead(_ date: String) {
        #expect(HTTPDate.secondsSinceEpoch(Array(date.utf8)) == Self.example)
        #expect(RetryAfter.delayMs(date, nowMs: (Self.example - 10) * 1000 + 250) == 9750)
        #expect(RetryAfter.delayMs(date, nowMs: (Self.example + 10) * 1000) == 0)
    }

    @Test func datesAcrossYearsAndLeapDays() {
        #expect(HTTPDate.secondsSinceEpoch(Array("Thu, 01 Jan 1970 00:00:00 GMT".utf8)) == 0)
        #expect(HTTPDate.secondsSinceEpoch(Array("Tue, 29 Feb 2000 23:59:59 GMT".utf8)) == 951_868_799)
        #expect(HTTPDate.secondsSinceEpoch(Array("Fri, 31 Dec 9999 23:59:59 GMT".utf8)) == 253_402_300_799)
        #expect(HTTPDate.secondsSinceEpoch(Array("Saturday, 01-Jan-00 00:00:00 GMT".utf8)) == 946_684_800)
    }

    @Test(arguments: ["", " ", "-1", "+5", "1.5", "5 ", "0x10", "soon", "Sun, 06 Nov 1994 08:49:37 UTC",
                      "Sun, 06 Nov 1994 08:49:37", "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT",
                      "Sun, 31 Nov 1994 08:49:37 GMT", "Sun, 29 Feb 1900 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT",
                      "Sun, 06 Nov 1994 08:60:00 GMT", "Sun, 00 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1969 08:49:37 GMT",
                      "Xyz, 06 Nov 1994 08:49:37 GMT", "Funday, 06-Nov-94 08:49:37 GMT", "Sun Nov 6 08:49:37 1994",
                      "Sun, 06 Nov 1994 08:49:37 GMTX", "Sun, 06 Nov 19x4 08:49:37 GMT"])
    func anythingElseIsIgnored(_ value: String) {
        #expect(RetryAfter.delayMs(value, nowMs: 0) == nil)
    }

    /// 50,000 values made by changing, inserting and dropping bytes of the
    /// three date forms and of digit runs, read at clock values up to
    /// UInt64.max: no value traps, and a date never waits longer than its
    /// distance from the epoch (every date is under year 10000).
    @Test func mutatedValuesNeverTrap() {
        var rng = SplitMix(seed: 0x1d5)
        let seeds = ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994",
                     "18446744073709552", "0", "120"].map { Array($0.utf8) }
        let alphabet = Array("0123456789 :-,GMTSunNovFebday\r\n\t\u{0}\u{ff}".utf8)
        for _ in 0..<50_000 {
            var bytes = seeds[Int(rng.next() % UInt64(seeds.count))]
            for _ in 0..<Int(rng.next() % 4) {
                let at = Int(rng.next() % UInt64(bytes.count + 1))
                let byte = alphabet[Int(rng.next() % UInt64(alphabet.count))]
                switch rng.next() % 3 {
                case 0 where at < bytes.count: bytes[at] = byte
                case 1: bytes.insert(byte, at: at)
                default: if at < bytes.count { bytes.remove(at: at) }
                }
            }
            let now = rng.next() % 4 == 0 ? UInt64.max - rng.next() % 1000 : rng.next() % 300_000_000_000_000
            let value = String(decoding: bytes, as: UTF8.self)
            if let delay = RetryAfter.delayMs(value, nowMs: now), !value.allSatisfy(\.isNumber) {
                #expect(delay <= 253_402_300_800_000)
            }
        }
    }
}

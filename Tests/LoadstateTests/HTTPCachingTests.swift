import Testing
@_spi(LoadstateC) @testable import Loadstate
#if canImport(Glibc)
import Glibc
#endif

private func b(_ text: String) -> [UInt8] {
    Array(text.utf8)
}

/// A unique key for the test server's counters.
private func uniqueKey(_ name: String) -> String {
    "\(name)-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
}

/// A URL of the test server's /cached/KEY route; `query` is percent-encoded here.
private func cachedURL(_ key: String, _ query: [(String, String)]) -> String {
    func encoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            let c = Character(Unicode.Scalar(byte))
            if c.isLetter && byte < 0x80 || c.isNumber && byte < 0x80 || "-_.~".contains(c) {
                out.append(c)
            } else {
                out += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 15, radix: 16, uppercase: true)
            }
        }
        return out
    }
    let items = query.map { "\($0.0)=\(encoded($0.1))" }.joined(separator: "&")
    return TestServer.shared.url("/cached/\(key)?\(items)")
}

private func response(_ event: CellEvent<Bytes, Bytes>?) -> HTTPResponse? {
    event?.state.value.flatMap { HTTPResponse(decoding: $0) }
}

/// The http loader and a cache, both on one runtime.
private struct CachingFixture {
    let f: LoaderFixture
    let cache: any CacheStore

    init(cache make: ((UInt64) throws -> any CacheStore)? = nil) throws {
        f = try LoaderFixture { HTTPLoader(id: $0, options: .init(proxy: "")) }
        let id = f.runtime.table.makeID(.cache)
        cache = try make?(id) ?? MemoryCache(id: id, name: "http")
    }

    /// Loads `request` through the cache and returns the events up to the settled state.
    func run(_ request: HTTPRequest, policy: CachePolicy, key: String = "k", freshMs: UInt64 = 0,
             followsRules: Bool = true) async -> [CellEvent<Bytes, Bytes>] {
        let (cell, log) = f.cell()
        let use = CacheUse<Bytes>(store: cache, key: b(key), policy: policy, freshMs: freshMs,
                                  followsLoaderRules: followsRules)
        let spec = LoadSpec(loader: f.loader, request: request.encoded(), cache: use)
        f.runtime.loop.execute { cell.load(spec) }
        return await log.untilSettled()
    }

    /// (bodies sent, requests answered) for a key of the server's /cached route.
    func counts(_ key: String) async -> (Int, Int) {
        let events = await f.run(HTTPRequest(url: TestServer.shared.url("/count/\(key)")).encoded())
        let text = String(decoding: response(events.last)?.body ?? [], as: UTF8.self)
        let parts = text.split(separator: " ").compactMap { Int($0) }
        return parts.count == 2 ? (parts[0], parts[1]) : (-1, -1)
    }

    func close() {
        cache.close()
        f.close()
    }
}

@Suite(.timeLimit(.minutes(2)))
struct HTTPRevalidationTests {
    @Test func anETagIsRevalidatedWith304AndTheBodyIsNotSentAgain() async throws {
        let x = try CachingFixture()
        defer { x.close() }
        let key = uniqueKey("etag")
        let request = HTTPRequest(url: TestServer.shared.url("/cached/\(key)?etag=%22v1%22&size=100000"))
        let first = await x.run(request, policy: .loadOnly)
        #expect(first.last?.state.isFromCache == false)
        #expect(response(first.last)?.body.count == 100_000)
        #expect(try x.cache.get(b("k")).flatMap { HTTPCacheRecord(decoding: $0.meta) }?.etag == b("\"v1\""))

        let second = await x.run(request, policy: .cacheThenLoad)
        // The cached value at once, then the revalidated one.
        #expect(second.first?.state.isFromCache == true)
        #expect(second.first?.state.isRefreshing == true)
        let last = second.last?.state
        #expect(last?.status == .loaded)
        #expect(last?.isFromCache == true)
        #expect(last?.isRevalidated == true)
        #expect(last?.isStale == false)
        let revalidated = response(second.last)
        #expect(revalidated?.status == 200)
        #expect(revalidated?.body.count == 100_000)
        // The 304's header lines replace the stored ones, in the value and the cache.
        #expect(revalidated?.header("X-Answer") == "2")
        #expect(try x.cache.get(b("k")).flatMap { HTTPResponse(decoding: $0.value) }?.header("X-Answer") == "2")
        #expect(await x.counts(key) == (1, 2))
    }

    @Test func lastModifiedIsRevalidatedWithIfModifiedSince() async throws {
        let x = try CachingFixture()
        defer { x.close() }
        let key = uniqueKey("lm")
        let date = "Sun,%2006%20Nov%201994%2008:49:37%20GMT"
        let request = HTTPRequest(url: TestServer.shared.url("/cached/\(key)?lm=\(date)"))
        _ = await x.run(request, policy: .loadOnly)
        let again = await x.run(request, policy: .loadOnly)
        #expect(again.last?.state.isRevalidated == true)
        #expect(response(again.last)?.body == b("body of \(key)"))
        #expect(await x.counts(key) == (1, 2))
    }

    @Test func aPersistentCacheRevalidatesWhatAnEarlierOpeningStored() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("http.db")
        let key = uniqueKey("persistent")
        let request = HTTPRequest(url: TestServer.shared.url("/cached/\(key)?etag=W/%22a%22"))
        do {
            let x = try CachingFixture { try PersistentCache(id: $0, path: path) }
            _ = await x.run(request, policy: .loadOnly)
            x.close()
        }
        let x = try CachingFixture { try PersistentCache(id: $0, path: path) }
        defer { x.close() }
        let events = await x.run(request, policy: .cacheThenLoad)
        #expect(events.last?.state.isRevalidated == true)
        #expect(response(events.last)?.body == b("body of \(key)"))
        #expect(await x.counts(key) == (1, 2))
    }

    @Test func aChangedResourceIsLoadedAgain() async throws {
        let x = try CachingFixture()
        defer { x.close() }
        let key = uniqueKey("changed")
        _ = await x.run(HTTPRequest(url: TestServer.shared.url("/cached/\(key)?etag=%22old%22")), policy: .loadOnly)
        let events = await x.run(HTTPRequest(url: TestServer.shared.url("/cached/\(key)?etag=%22new%22")),
                                 policy: .loadOnly)
        #expect(events.last?.state.isFromCache == false)
        #expect(events.last?.state.isRevalidated == false)
        #expect(try x.cache.get(b("k")).flatMap { HTTPCacheRecord(decoding: $0.meta) }?.etag == b("\"new\""))
        #expect(await x.counts(key) == (2, 2))
    }

    @Test func aRequestWithAConditionOfItsOwnGetsTheServersAnswer() async throws {
        let x = try CachingFixture()
        defer { x.close() }
        let key = uniqueKey("own")
        let url = TestServer.shared.url("/cached/\(key)?etag=%22e%22")
        _ = await x.run(HTTPRequest(url: url), policy: .loadOnly)
        let own = HTTPRequest(url: url, headers: ["If-None-Match: \"e\""])
        let events = await x.run(own, policy: .loadOnly)
        // The host asked: a 304 is not 2xx, an error that carries the response.
        #expect(events.last?.state.error?.domain == .http)
        #expect(events.last?.state.error?.code == 304)
    }

    @Test func withoutACacheNoConditionIsSent() async throws {
        let f = try LoaderFixture { HTTPLoader(id: $0, options: .init(proxy: "")) }
        defer { f.close() }
        let key = uniqueKey("nocache")
        let request = HTTPRequest(url: TestServer.shared.url("/cached/\(key)?etag=%22e%22")).encoded()
        _ = await f.run(request)
        #expect(response(await f.run(request).last)?.status == 200)
        let counts = response(await f.run(HTTPRequest(url: TestServer.shared.url("/count/\(key)")).encoded()).last)
        #expect(counts?.body == b("2 2"))
    }
}

/// The validators the loader keeps, read from what servers send.
@Suite struct HTTPCacheRecordTests {
    @Test func validatorsAreReadFromHeaderLines() {
        let lines = HTTPHeaderLines(b("Content-Type: text/plain\r\netag:  \"x\" \r\nLast-Modified: yesterday\r\n"))
        let record = HTTPCacheRecord(headers: lines)
        #expect(record.etag == b("\"x\""))
        #expect(record.lastModified == b("yesterday"))
        #expect(record.conditionalHeaders == ["If-None-Match: \"x\"", "If-Modified-Since: yesterday"])
        #expect(HTTPCacheRecord(decoding: record.encoded()) == record)
    }

    @Test func validatorsThatCannotBeSentBackAreNotKept() {
        let control = HTTPCacheRecord(headers: HTTPHeaderLines(b("ETag: a\u{1}b\r\nLast-Modified: \r\n")))
        #expect(control.etag == nil)
        #expect(control.lastModified == nil)
        let huge = "ETag: " + String(repeating: "e", count: HTTPCacheRecord.validatorMax + 1) + "\r\n"
        #expect(HTTPCacheRecord(headers: HTTPHeaderLines(b(huge))).etag == nil)
    }

    @Test func recordsThatDoNotParseAreNone() {
        #expect(HTTPCacheRecord(decoding: [UInt8]()) == nil)
        #expect(HTTPCacheRecord(decoding: b("LHC1\u{1}\u{FF}\u{FF}\u{FF}\u{7F}")) == nil)
        #expect(HTTPCacheRecord(decoding: b("LHC2")) == nil)
        // An unknown item is skipped.
        #expect(HTTPCacheRecord(decoding: b("LHC1\u{9}\u{1}\u{0}\u{0}\u{0}z\u{1}\u{1}\u{0}\u{0}\u{0}e"))?.etag == b("e"))
        // Arbitrary bytes never trap.
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            var bytes = b("LHC1")
            for _ in 0..<Int.random(in: 0..<40, using: &rng) { bytes.append(UInt8.random(in: 0...255, using: &rng)) }
            _ = HTTPCacheRecord(decoding: bytes)
            _ = HTTPCacheRecord(headers: HTTPHeaderLines(bytes))
        }
    }

    @Test func a304ReplacesTheHeaderLinesItCarriesButNotItsOwnLength() {
        let stored = HTTPResponse(status: 200, headers: b("ETag: \"1\"\r\nContent-Length: 5\r\nX-A: old\r\nX-B: b\r\n"),
                                  body: b("hello"))
        let revalidation = HTTPRevalidation(stored: stored, record: HTTPCacheRecord(etag: b("\"1\"")))
        let (value, headers) = revalidation.updated(with: b("X-A: new\r\nContent-Length: 0\r\nETag: \"1\"\r\n")[...])
        let updated = HTTPResponse(decoding: value)
        #expect(updated?.body == b("hello"))
        #expect(updated?.header("X-A") == "new")
        #expect(updated?.header("X-B") == "b")
        #expect(updated?.header("Content-Length") == "5")
        #expect(HTTPCacheRecord(headers: HTTPHeaderLines(headers)).etag == b("\"1\""))
    }
}

/// Cache-Control, Expires and Vary of the responses the http loader stores.
@Suite(.timeLimit(.minutes(2)))
struct HTTPCacheHeadersTests {
    @Test func maxAgeKeepsAResponseFreshForACacheFirstLoad() async throws {
        let x = try CachingFixture()
        defer { x.close() }
        let key = uniqueKey("max-age")
        let request = HTTPRequest(url: cachedURL(key, [("cc", "max-age=60")]))
        _ = await x.run(request, policy: .cacheFirst)
        let again = await x.run(request, policy: .cacheFirst)
        #expect(again.count == 1)
        #expect(again.last?.state.isFromCache == true)
        #expect(again.last?.state.isStale == false)
        #expect(await x.counts(key) == (1, 1))
    }

    @Test func maxAgeZeroIsStaleAtOnceEvenWhenTheLoadsFreshTimeIsLonger() async throws {
        let x = try CachingFixture()
        defer { x.close() }
        let key = uniqueKey("max-age-0")
        let request = HTTPRequest(url: cachedURL(key, [("cc", "max-age=0"), ("etag", "\"z\"")]))
        _ = await x.run(request, policy: .cacheFirst, freshMs: 3_600_000)
        let again = await x.run(request, policy: .cacheFirst, freshMs: 3_600_000)
        #expect(again.last?.state.isRevalidated == true)
        #expect(await x.counts(key) == (1, 2))
    }

    @Test func ignoringTheHeadersLeavesFreshnessToTheLoad() async throws {
        let x = try CachingFixture()
        defer { x.close() }
        let key = uniqueKey("ignored")
        let request = HTTPRequest(url: cachedURL(key, [("cc", "max-age=0, no-store")]))
        _ = await x.run(request, policy: .cacheFirst, freshMs: 3_600_000, followsRules: false)
        // Stored despite no-store, and fresh by the load's fresh time.
        let again = await x.run(request, policy: .cacheFirst, freshMs: 3_600_000, followsRules: false)
        #expect(again.count == 1)
        #expect(again.last?.state.isFromCache == true)
        #expect(await x.counts(key) == (1, 1))
    }

    @Test func expiresSetsTheFreshTimeAndOneThatDoesNotParseIsPast() async throws {
        let x = try CachingFixture()
        defer { x.close() }
        let fresh = uniqueKey("expires")
        let inAnHour = formatHTTPDate(Clock.wallMs() / 1000 + 3600)
        let request = HTTPRequest(url: cachedURL(fresh, [("h", "Expires:\(inAnHour)")]))
        _ = await x.run(request, policy: .cacheFirst, key: fresh)
        #expect(await x.run(request, policy: .cacheFirst, key: fresh).count == 1)

        let zero = uniqueKey("expires-0")
        let past = HTTPRequest(url: cachedURL(zero, [("h", "Expires:0")]))
        _ = await x.run(past, policy: .cacheFirst, key: zero, freshMs: 3_600_000)
        #expect(await x.run(past, policy: .cacheFirst, key: zero, freshMs: 3_600_000).count > 1)
        #expect(await x.counts(zero) == (2, 2))
    }

    @Test func theResponsesDateAndAgeCountAgainstItsLifetime() async throws {
        let x = try CachingFixture()
        defer { x.close() }
        let key = uniqueKey("age")
        let request = HTTPRequest(url: cachedURL(key, [("cc", "max-age=100"), ("h", "Age:200")]))
        _ = await x.run(request, policy: .cacheFirst)
        #expect(await x.run(request, policy: .cacheFirst).count > 1)
        #expect(await x.counts(key) == (2, 2))
    }

    @Test func noStoreNeverReachesThePersistentCacheFile() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("http.db")
        let key = uniqueKey("no-store")
        let x = try CachingFixture { try PersistentCache(id: $0, path: path) }
        // An older entry under the key is dropped: the new response supersedes it.
        try x.cache.put(b("k"), HTTPResponse(status: 200, headers: [], body: b("older")).encoded())
        let events = await x.run(HTTPRequest(url: cachedURL(key, [("cc", "no-store")])), policy: .loadOnly)
        #expect(response(events.last)?.body == b("body of \(key)"))
        #expect(try x.cache.get(b("k")) == nil)
        x.close()
        for file in [path, path + "-wal"] {
            let bytes = readAll(file)
            #expect(!contains(bytes, b("body of \(key)")), "\(file)")
        }
        #expect(!readAll(path).isEmpty)
    }

    @Test func noCacheRevalidatesBeforeEveryUse() async throws {
        let x = try CachingFixture()
        defer { x.close() }
        let key = uniqueKey("no-cache")
        let request = HTTPRequest(url: cachedURL(key, [("cc", "no-cache, max-age=600"), ("etag", "\"n\"")]))
        _ = await x.run(request, policy: .cacheFirst, freshMs: 3_600_000)
        let again = await x.run(request, policy: .cacheFirst, freshMs: 3_600_000)
        #expect(again.last?.state.isRevalidated == true)
        #expect(await x.counts(key) == (1, 2))
    }

    @Test func staleWhileRevalidateShowsTheStaleValueWhileACacheFirstLoadRevalidates() async throws {
        let x = try CachingFixture()
        defer { x.close() }
        let key = uniqueKey("swr")
        let request = HTTPRequest(url: cachedURL(key, [("cc", "max-age=0, stale-while-revalidate=600"),
                                                       ("etag", "\"s\"")]))
        _ = await x.run(request, policy: .cacheFirst)
        let again = await x.run(request, policy: .cacheFirst)
        #expect(again.count == 2)
        #expect(again.first?.state.isFromCache == true)
        #expect(again.first?.state.isStale == true)
        #expect(again.first?.state.isRefreshing == true)
        #expect(again.last?.state.isRevalidated == true)
        #expect(await x.counts(key) == (1, 2))
    }

    @Test func staleIfErrorServesTheStoredResponseWhenTheServerFails() async throws {
        let x = try CachingFixture()
        defer { x.close() }
        let key = uniqueKey("sie")
        _ = await x.run(HTTPRequest(url: cachedURL(key, [("cc", "max-age=0, stale-if-error=600")])), policy: .loadOnly)
        // The same cache key, now answered with a 503, then with no server at all.
        for url in [TestServer.shared.url("/status/503"), "http://127.0.0.1:1/"] {
            let events = await x.run(HTTPRequest(url: url), policy: .loadOnly)
            let last = events.last?.state
            #expect(last?.status == .loaded, "\(url)")
            #expect(last?.isFromCache == true)
            #expect(last?.isStale == true)
            #expect(last?.error == nil)
            #expect(response(events.last)?.body == b("body of \(key)"))
        }
    }

    @Test func mustRevalidateForbidsServingStaleOnError() async throws {
        let x = try CachingFixture()
        defer { x.close() }
        let key = uniqueKey("must")
        let cc = "max-age=0, stale-if-error=600, must-revalidate"
        _ = await x.run(HTTPRequest(url: cachedURL(key, [("cc", cc)])), policy: .loadOnly)
        let events = await x.run(HTTPRequest(url: TestServer.shared.url("/status/503")), policy: .loadOnly)
        #expect(events.last?.state.status == .error)
        #expect(events.last?.state.error?.code == 503)
    }

    @Test func varyMakesTheNamedRequestHeadersPartOfTheMatch() async throws {
        let x = try CachingFixture()
        defer { x.close() }
        let key = uniqueKey("vary")
        let url = cachedURL(key, [("cc", "max-age=600"), ("h", "Vary:X-Lang, Accept")])
        let english = HTTPRequest(url: url, headers: ["X-Lang: en"])
        let french = HTTPRequest(url: url, headers: ["X-Lang: fr"])
        _ = await x.run(english, policy: .cacheFirst)
        #expect(await x.run(english, policy: .cacheFirst).count == 1)
        // Another value: a miss, loaded (and stored in its place).
        #expect(await x.run(french, policy: .cacheFirst).count > 1)
        #expect(await x.run(french, policy: .cacheFirst).count == 1)
        #expect(await x.counts(key) == (2, 2))
        // A field the stored request did not send, now sent: a miss too.
        let withAccept = HTTPRequest(url: url, headers: ["X-Lang: fr", "Accept: text/plain"])
        #expect(await x.run(withAccept, policy: .cacheFirst).count > 1)
    }

    @Test func varyStarMatchesNoLaterRequest() async throws {
        let x = try CachingFixture()
        defer { x.close() }
        let key = uniqueKey("vary-star")
        let request = HTTPRequest(url: cachedURL(key, [("cc", "max-age=600"), ("h", "Vary:*")]))
        _ = await x.run(request, policy: .cacheFirst)
        #expect(await x.run(request, policy: .cacheFirst).count > 1)
        #expect(await x.counts(key) == (2, 2))
    }
}

/// Numbers and lists from the network, read without trapping.
@Suite struct HTTPCacheControlTests {
    private func control(_ value: String) -> HTTPCacheControl {
        HTTPCacheControl([Array(value.utf8)[...]])
    }

    @Test func directivesAreReadInAnyCaseWithQuotedArguments() {
        let c = control("Max-Age=\"60\", NO-CACHE=\"Set-Cookie, X\", stale-if-error=5,must-revalidate")
        #expect(c.maxAgeSeconds == 60)
        // The field-list form names fields not to serve, not the whole response.
        #expect(!c.noCache)
        #expect(c.noCacheFields == [b("set-cookie"), b("x")])
        #expect(control("no-cache").noCache)
        #expect(c.staleIfErrorSeconds == 5)
        #expect(c.mustRevalidate)
        #expect(!c.noStore)
    }

    @Test func hugeNumbersSaturateAndGarbageIsIgnored() {
        #expect(control("max-age=99999999999999999999").maxAgeSeconds == HTTPCacheControl.deltaSecondsMax)
        // A max-age that does not begin with a digit makes the response stale (RFC 9111 4.2.1).
        #expect(control("max-age=-1").maxAgeSeconds == 0)
        #expect(control("max-age=a3600").maxAgeSeconds == 0)
        #expect(control("max-age='3600'").maxAgeSeconds == 0)
        #expect(control("max-age=").maxAgeSeconds == 0)
        #expect(control("max-age").maxAgeSeconds == 0)
        // Its leading digits count.
        #expect(control("max-age=1.5").maxAgeSeconds == 1)
        #expect(control("max-age=003600").maxAgeSeconds == 3600)
        #expect(control("max-age=100a").maxAgeSeconds == 100)
        // Whitespace around `=` makes it no directive at all.
        #expect(control("max-age =60").maxAgeSeconds == nil)
        #expect(control("max-age= 60").maxAgeSeconds == nil)
        // The first occurrence counts (RFC 9111 4.2.1), on one line or two.
        #expect(control("max-age=60, max-age=10").maxAgeSeconds == 60)
        #expect(HTTPCacheControl([b("max-age=1")[...], b("max-age=60")[...]]).maxAgeSeconds == 1)
        #expect(control("s-maxage=60").maxAgeSeconds == nil)
        // Inside a quoted string it is not a directive.
        #expect(control("foo=\"max-age=8000\", max-age=1").maxAgeSeconds == 1)
        let record = HTTPCacheRecord(headers: HTTPHeaderLines(b("Age: 99999999999999999999999\r\n")),
                                     control: control("max-age=99999999999999999999"), nowMs: UInt64.max) { _ in nil }
        #expect(record.verdict(storedAtMs: 0, nowMs: UInt64.max).judgement == .stale)
        #expect(record.age(storedAtMs: UInt64.max, nowMs: 0) == record.initialAgeMs)
    }

    @Test func aRecordKeepsEverythingThroughItsEncoding() {
        let headers = HTTPHeaderLines(b("ETag: \"e\"\r\nVary: X-A, x-b\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n"))
        let record = HTTPCacheRecord(headers: headers, control: control("max-age=60, stale-while-revalidate=5, no-cache"),
                                     nowMs: 784_111_777_000 + 3000) { $0 == b("x-a") ? b("1") : nil }
        #expect(record.lifetimeMs == 60_000)
        #expect(record.initialAgeMs == 3000)
        #expect(record.vary == [.init(name: b("x-a"), value: b("1")), .init(name: b("x-b"), value: nil)])
        #expect(HTTPCacheRecord(decoding: record.encoded()) == record)
    }

    @Test func arbitraryBytesNeverTrap() async {
        var rng = SystemRandomNumberGenerator()
        let alphabet = b("max-age=,\"stale-if-error no-cache 0123456789 \\ ;=-")
        for round in 0..<5000 {
            // A long run of work: the concurrent tests' tasks get the thread now and then.
            if round % 100 == 0 { await Task.yield() }
            let n = Int.random(in: 0..<60, using: &rng)
            let bytes = (0..<n).map { _ in Bool.random(using: &rng) ? alphabet.randomElement(using: &rng) ?? 0
                                                                      : UInt8.random(in: 0...255, using: &rng) }
            let c = HTTPCacheControl([bytes[...]])
            let record = HTTPCacheRecord(headers: HTTPHeaderLines(b("Vary: ") + bytes + b("\r\nAge: ") + bytes),
                                         control: c, nowMs: UInt64.random(in: 0...UInt64.max, using: &rng)) { _ in bytes }
            _ = record.verdict(storedAtMs: UInt64.random(in: 0...UInt64.max, using: &rng),
                               nowMs: UInt64.random(in: 0...UInt64.max, using: &rng), asked: c,
                               freshMs: UInt64.random(in: 0...UInt64.max, using: &rng))
            _ = HTTPServedResponse.make(from: HTTPResponse(status: 200, headers: bytes, body: bytes).encoded(),
                                        record: record, ageMs: UInt64.random(in: 0...UInt64.max, using: &rng),
                                        status: .hit(ttlSeconds: .min, detail: "fresh"), head: Bool.random(using: &rng),
                                        notModified: Bool.random(using: &rng))
            _ = HTTPCacheRecord.ageSeconds(bytes[...])
            _ = HTTPCacheRecord.normalised(bytes, of: b("accept-language"))
            _ = HTTPURL.resolve(String(decoding: bytes, as: UTF8.self), against: "http://h:1/a/b?c")
            _ = HTTPCacheRecord(decoding: record.encoded())
            _ = HTTPCacheRecord(decoding: b("LHC1") + bytes)
        }
    }
}

private func readAll(_ path: String) -> [UInt8] {
    guard let file = fopen(path, "rb") else { return [] }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = fread(&buffer, 1, buffer.count, file)
        if n <= 0 { break }
        bytes.append(contentsOf: buffer[0..<n])
    }
    return bytes
}

private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard !needle.isEmpty, haystack.count >= needle.count else { return false }
    for i in 0...(haystack.count - needle.count) where haystack[i] == needle[0] {
        if haystack[i..<(i + needle.count)].elementsEqual(needle) { return true }
    }
    return false
}

/// An IMF-fixdate for seconds since the epoch.
private func formatHTTPDate(_ seconds: UInt64) -> String {
    var t = time_t(seconds)
    var parts = tm()
    gmtime_r(&t, &parts)
    var buffer = [CChar](repeating: 0, count: 64)
    let length = strftime(&buffer, buffer.count, "%a, %d %b %Y %H:%M:%S GMT", &parts)
    return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

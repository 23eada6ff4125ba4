import Testing
@testable import Loadstate
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
    func run(_ request: HTTPRequest, policy: CachePolicy, key: String = "k") async -> [CellEvent<Bytes, Bytes>] {
        let (cell, log) = f.cell()
        let use = CacheUse<Bytes>(store: cache, key: b(key), policy: policy)
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
        let (value, record) = revalidation.updated(with: b("X-A: new\r\nContent-Length: 0\r\nETag: \"1\"\r\n")[...])
        let updated = HTTPResponse(decoding: value)
        #expect(updated?.body == b("hello"))
        #expect(updated?.header("X-A") == "new")
        #expect(updated?.header("X-B") == "b")
        #expect(updated?.header("Content-Length") == "5")
        #expect(record.etag == b("\"1\""))
    }
}

import Testing
@_spi(LoadstateC) @testable import Loadstate

private func b(_ text: String) -> [UInt8] {
    Array(text.utf8)
}

private func record(_ headers: String, status: Int32 = 200, nowMs: UInt64 = 1_000_000_000,
                    request: [String: String] = [:]) -> HTTPCacheRecord {
    let lines = HTTPHeaderLines(b(headers))
    return HTTPCacheRecord(headers: lines, control: HTTPCacheControl(lines.values("cache-control")), status: status,
                           nowMs: nowMs) { name in request[String(decoding: name, as: UTF8.self)].map(b) }
}

/// The pure rules of the http loader's cache (RFC 9111), without a server.
@Suite struct HTTPCacheRulesTests {
    @Test func ageIsTheFirstMembersDigits() {
        #expect(HTTPCacheRecord.ageSeconds(b("7200, 0")[...]) == 7200)
        #expect(HTTPCacheRecord.ageSeconds(b(" 0 , 7200")[...]) == 0)
        #expect(HTTPCacheRecord.ageSeconds(b("7200;foo=bar")[...]) == 7200)
        #expect(HTTPCacheRecord.ageSeconds(b("7200.0")[...]) == nil)
        #expect(HTTPCacheRecord.ageSeconds(b("-1")[...]) == nil)
        #expect(HTTPCacheRecord.ageSeconds(b("abc")[...]) == nil)
        #expect(HTTPCacheRecord.ageSeconds(b("99999999999999999999999")[...]) == HTTPCacheControl.deltaSecondsMax)
    }

    @Test func heuristicFreshnessIsATenthOfTheAgeSinceLastModifiedAtMostADay() {
        let date = "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
        let hour = record(date + "Last-Modified: Sun, 06 Nov 1994 07:49:37 GMT\r\n")
        #expect(hour.lifetimeMs == 360_000 && hour.isHeuristic)
        let year = record(date + "Last-Modified: Sat, 06 Nov 1993 08:49:37 GMT\r\n")
        #expect(year.lifetimeMs == HTTPCacheRecord.heuristicLifetimeMaxMs)
        // Only for statuses cacheable by default, or with public.
        #expect(record(date + "Last-Modified: Sun, 06 Nov 1994 07:49:37 GMT\r\n", status: 403).lifetimeMs == nil)
        #expect(record(date + "Last-Modified: Sun, 06 Nov 1994 07:49:37 GMT\r\nCache-Control: public\r\n",
                       status: 599).lifetimeMs == 360_000)
        // Explicit freshness wins.
        #expect(!record(date + "Last-Modified: Sun, 06 Nov 1994 07:49:37 GMT\r\nCache-Control: max-age=5\r\n").isHeuristic)
        // Heuristics turned off: the load's own fresh time decides.
        let verdict = hour.verdict(storedAtMs: 0, nowMs: 1000, heuristics: false, freshMs: 0)
        #expect(verdict.judgement == .stale)
        #expect(hour.verdict(storedAtMs: 0, nowMs: 0).detail == .heuristic)
    }

    @Test func expiresMustBeOneValidDate() {
        let date = "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
        #expect(record(date + "Expires: sun, 06 NOV 1994 09:49:37 gmt\r\n").lifetimeMs == 3_600_000)
        #expect(record(date + "Expires: Sunday, 06-Nov-94 09:49:37 GMT\r\n").lifetimeMs == 3_600_000)
        #expect(record(date + "Expires: Sun Nov  6 09:49:37 1994\r\n").lifetimeMs == 3_600_000)
        #expect(record(date + "Expires: Sun, 06 Nov 1994 09:49:37 UTC\r\n").lifetimeMs == 0)
        #expect(record(date + "Expires: Sun, 06 Nov 1994 9:49:37 GMT\r\n").lifetimeMs == 0)
        #expect(record(date + "Expires: Sun, 06 Nov 1994 09:49:37 GMT\r\nExpires: Sun, 06 Nov 1994 09:49:37 GMT\r\n")
            .lifetimeMs == 0)
    }

    @Test func requestDirectivesBendTheVerdict() {
        let r = record("Cache-Control: max-age=100\r\n")
        func verdict(_ asked: String, at seconds: UInt64) -> HTTPCacheRecord.Verdict {
            r.verdict(storedAtMs: 0, nowMs: seconds * 1000, asked: HTTPCacheControl([b(asked)[...]]))
        }
        #expect(verdict("", at: 50).judgement == .fresh)
        #expect(verdict("max-age=10", at: 50).judgement == .stale)
        #expect(verdict("min-fresh=60", at: 50).judgement == .stale)
        #expect(verdict("min-fresh=40", at: 50).judgement == .fresh)
        #expect(verdict("no-cache", at: 50).judgement == .stale)
        #expect(verdict("", at: 150).judgement == .stale)
        let stale = verdict("max-stale=60", at: 150)
        #expect(stale.judgement == .fresh && stale.detail == .stale && stale.ttlMs == -50_000)
        #expect(verdict("max-stale=10", at: 150).judgement == .stale)
        #expect(verdict("max-stale", at: 100_000).judgement == .fresh)
        let strict = record("Cache-Control: max-age=100, must-revalidate\r\n")
        #expect(strict.verdict(storedAtMs: 0, nowMs: 150_000,
                               asked: HTTPCacheControl([b("max-stale")[...]])).judgement == .stale)
    }

    @Test func aDeadOriginGetsTheStaleResponseUnlessItIsForbidden() {
        let r = record("Cache-Control: max-age=1\r\n")
        #expect(r.servesOnError(storedAtMs: 0, nowMs: 1_000_000, disconnected: true))
        #expect(!r.servesOnError(storedAtMs: 0, nowMs: 1_000_000, disconnected: false))
        #expect(record("Cache-Control: max-age=1, stale-if-error=2000\r\n")
            .servesOnError(storedAtMs: 0, nowMs: 1_000_000, disconnected: false))
        for forbidding in ["must-revalidate", "proxy-revalidate", "no-cache"] {
            #expect(!record("Cache-Control: max-age=1, \(forbidding)\r\n")
                .servesOnError(storedAtMs: 0, nowMs: 1_000_000, disconnected: true))
        }
    }

    @Test func varyValuesAreNormalised() {
        let lang = b("accept-language")
        #expect(HTTPCacheRecord.normalised(b("en-US, fr;q=0.5"), of: lang)
                == HTTPCacheRecord.normalised(b("FR ; q=0.5,en-us"), of: lang))
        #expect(HTTPCacheRecord.normalised(b("a , b"), of: b("x-thing")) == b("a,b"))
        #expect(HTTPCacheRecord.normalised(b("b, a"), of: b("x-thing")) != HTTPCacheRecord.normalised(b("a, b"), of: b("x-thing")))
        let stored = record("Vary: Accept-Language\r\n", request: ["accept-language": "en, de"])
        #expect(stored.matches { $0 == lang ? b("DE,EN") : nil })
        #expect(!stored.matches { _ in nil })
    }

    @Test func aServedResponseLosesHopByHopFieldsAndGainsAgeAndStatus() {
        let stored = HTTPResponse(status: 200, headers: b("Connection: x\r\nx: 1\r\nKeep-Alive: 5\r\nAge: 9\r\nY: 2\r\n"
                                                           + "Transfer-Encoding: chunked\r\nETag: \"e\"\r\n"),
                                  body: b("0123456789")).encoded()
        let shown = HTTPResponse(decoding: HTTPServedResponse.make(
            from: stored, record: nil, ageMs: 12_500, status: .hit(ttlSeconds: 7, detail: "fresh")))
        #expect(shown?.headerFields.map(\.name) == ["Y", "ETag", "Age", "Cache-Status"])
        #expect(shown?.header("Age") == "12")
        #expect(shown?.header("Cache-Status") == "loadstate; hit; ttl=7; detail=fresh")
        #expect(shown?.body == b("0123456789"))
        let part = HTTPResponse(decoding: HTTPServedResponse.make(
            from: stored, record: nil, ageMs: 0, status: .hit(ttlSeconds: 1, detail: "fresh"), range: 2..<5))
        #expect(part?.status == 206 && part?.body == b("234") && part?.header("Content-Range") == "bytes 2-4/10")
        let notModified = HTTPResponse(decoding: HTTPServedResponse.make(
            from: stored, record: nil, ageMs: 0, status: .hit(ttlSeconds: 1, detail: "fresh"), notModified: true))
        #expect(notModified?.status == 304 && notModified?.body == [] && notModified?.header("ETag") == "\"e\"")
        #expect(notModified?.header("Y") == nil)
    }

    @Test func byteRanges() {
        #expect(HTTPServedResponse.byteRange(b("bytes=0-1"), length: 10) == 0..<2)
        #expect(HTTPServedResponse.byteRange(b("bytes=5-"), length: 10) == 5..<10)
        #expect(HTTPServedResponse.byteRange(b("bytes=-3"), length: 10) == 7..<10)
        #expect(HTTPServedResponse.byteRange(b("bytes=-30"), length: 10) == 0..<10)
        #expect(HTTPServedResponse.byteRange(b("bytes=8-100"), length: 10) == 8..<10)
        #expect(HTTPServedResponse.byteRange(b("bytes=10-"), length: 10) == nil)
        #expect(HTTPServedResponse.byteRange(b("bytes=0-1,3-4"), length: 10) == nil)
        #expect(HTTPServedResponse.byteRange(b("items=0-1"), length: 10) == nil)
        #expect(HTTPServedResponse.byteRange(b("bytes=5-2"), length: 10) == nil)
        #expect(HTTPServedResponse.byteRange(b("bytes=99999999999999999999-"), length: 10) == nil)
    }

    @Test func locationsResolveAgainstTheRequest() {
        let base = "http://Host:8080/a/b?q"
        #expect(HTTPURL.resolve("/x", against: base) == "http://host:8080/x")
        #expect(HTTPURL.resolve("c", against: base) == "http://host:8080/a/c")
        #expect(HTTPURL.resolve("//other/y", against: base) == "http://other/y")
        #expect(HTTPURL.resolve("https://h/z#frag", against: base) == "https://h/z")
        #expect(HTTPURL.origin(of: "https://h/z") != HTTPURL.origin(of: base))
        #expect(HTTPURL.resolve("", against: base) == nil)
    }

    @Test func storageFollowsStatusAndMethod() {
        let loader = HTTPLoader(id: 1)
        let get = HTTPRequest(url: "http://h/p")
        func write(_ headers: String, status: Int32, request: HTTPRequest = HTTPRequest(url: "http://h/p")) -> CacheWrite {
            loader.cacheWrite(for: HTTPHeaderLines(b(headers)), status: status, request: request,
                              key: b(request.url), followsRules: true, nowMs: 0)
        }
        #expect(write("", status: 200).entry == .store)
        #expect(write("", status: 404).entry == .store)
        #expect(write("", status: 403).entry == .keep)
        #expect(write("Cache-Control: max-age=5\r\n", status: 403).entry == .store)
        #expect(write("Cache-Control: max-age=5\r\n", status: 206).entry == .keep)
        #expect(write("Cache-Control: no-store\r\n", status: 200).entry == .remove)
        #expect(write("Cache-Control: no-store, must-understand\r\n", status: 200).entry == .store)
        #expect(write("Cache-Control: max-age=5, must-understand\r\n", status: 599).entry == .remove)
        #expect(write("Vary: A\r\n", status: 200).alsoStoredUnder.count == 1)
        let post = HTTPRequest(method: "POST", url: "http://h/p")
        let invalidating = write("Location: /other\r\n", status: 201, request: post)
        #expect(invalidating.entry == .keep && invalidating.removes == [b("http://h/p"), b("http://h/other")])
        #expect(write("", status: 500, request: post).removes.isEmpty)
        #expect(write("Cache-Control: max-age=9\r\nContent-Location: /p\r\n", status: 200, request: post).entry == .store)
        #expect(write("", status: 200, request: HTTPRequest(method: "HEAD", url: get.url)).entry == .keep)
    }
}

import Testing
@_spi(LoadstateC) @testable import Loadstate

@Suite(.timeLimit(.minutes(1)))
struct NamesTests {
    @Test func namesAreCheckedForTheCAPIAndMadeValidForSwift() throws {
        #expect(try HandleName.validated("").get() == nil)
        #expect(try HandleName.validated("café ✓ \"q\" \\").get() == "café ✓ \"q\" \\")
        #expect(try HandleName.validated(String(repeating: "n", count: HandleName.maxBytes)).get() != nil)
        for bad in [String(repeating: "n", count: HandleName.maxBytes + 1), "a\nb", "del\u{7f}", "c1\u{85}"] {
            guard case .failure(.invalidArgument) = HandleName.validated(bad) else {
                Issue.record("\(bad.debugDescription) accepted")
                continue
            }
        }
        let notUTF8: [UInt8] = [0x63, 0xc3]
        let refused = notUTF8.withUnsafeBufferPointer { HandleName.validated(bytes: $0) }
        guard case .failure(.invalidArgument) = refused else {
            Issue.record("a name that is not UTF-8 accepted")
            return
        }
        #expect(HandleName.sanitized(nil) == nil && HandleName.sanitized("") == nil)
        #expect(HandleName.sanitized("a\nb") == "a\u{FFFD}b")
        // Cut to the limit between two scalars: 43 three-byte ticks are 129 bytes.
        let cut = HandleName.sanitized(String(repeating: "✓", count: 43))
        #expect(cut?.utf8.count == 126 && cut?.unicodeScalars.count == 42)
    }

    @Test func labelValuesAreEscapedAsTheTextFormatAsks() {
        #expect(prometheusLabelValue("plain") == "plain")
        #expect(prometheusLabelValue("a \"b\" \\ c\nd é") == "a \\\"b\\\" \\\\ c\\nd é")
    }

    @Test func metricsLabelLoadersByNameAndTheInspectorShowsNamesAndKeys() async throws {
        let runtime = try Runtime()
        defer { _ = runtime.close() }
        let quoted = LoadFunction<String, String>(runtime: runtime, name: "say \"hi\" <b>") { $0.uppercased() }
        let twins = (0..<2).map { _ in LoadFunction<String, String>(runtime: runtime, name: "twin") { $0 } }
        let plain = LoadFunction<String, String>(runtime: runtime) { $0 }
        let store = MemoryCache(name: "names", runtime: runtime)
        let cache = LoadCache<String, String>(store, codec: ValueCodec(encode: { Array($0.utf8) },
                                                                        decode: { String(decoding: $0, as: UTF8.self) }),
                                             policy: .cacheFirst, freshFor: .seconds(60), key: { "user/\($0)" })
        let cell = LoadableCellWith(runtime: runtime, name: "profile", loader: quoted, cache: cache)
        #expect(cell.name == "profile" && quoted.name == "say \"hi\" <b>" && plain.name == nil)
        #expect(try await cell.get("ada") == "ADA")
        #expect(try await cell.get("ada") == "ADA")  // a cache-first hit: a load of its own, from the cache
        for (i, twin) in twins.enumerated() {
            for _ in 0...i { #expect(try await LoadableCellWith(runtime: runtime, loader: twin).get("t") == "t") }
        }
        #expect(try await LoadableCellWith(runtime: runtime, loader: plain).get("p") == "p")

        let text = runtime.metricsText()
        #expect(text.contains("\nloadstate_loads_started_total{loader=\"say \\\"hi\\\" <b>\"} 2\n"))
        #expect(text.contains("\nloadstate_loads_ended_total{loader=\"say \\\"hi\\\" <b>\",outcome=\"from_cache\"} 1\n"))
        #expect(text.contains("\nloadstate_loads_started_total{loader=\"twin\"} 3\n"))
        #expect(text.ranges(of: "loadstate_loads_started_total{loader=\"twin\"}").count == 1)
        #expect(text.contains("\nloadstate_loads_started_total{loader=\"\(plain.loader.id)\"} 1\n"))

        _ = try runtime.startInspector(address: "127.0.0.1:0", options: InspectorOptions()).get()
        let reply = LoopReply<String?>()
        runtime.loop.execute { reply.put(runtime.inspector?.snapshotJSON()) }
        let json = try #require(reply.take())
        let id = cell.driver.core.id
        #expect(json.contains("{\"id\":\(id),\"name\":\"profile\",\"key\":\"user/ada\",\"kind\":\"loadable\""))
        #expect(json.contains("{\"id\":\(quoted.loader.id),\"name\":\"say \\\"hi\\\" \\u003cb\\u003e\","))
        #expect(json.contains("{\"id\":\(plain.loader.id),\"queued_now\""))
    }
}

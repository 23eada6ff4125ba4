import Testing
@_spi(LoadstateC) @testable import Loadstate

@Suite(.timeLimit(.minutes(1)))
struct InspectorTests {
    private func parse(_ text: String) -> Result<HTTPRequestHead, InspectorRefusal> {
        let bytes = Array(text.utf8)
        return HTTPRequestHead.parse(bytes[...])
    }

    @Test func aWellFormedHeadIsParsed() throws {
        let head = try parse("GET /events?token=abc&x=a%20b+c HTTP/1.1\r\nHost: 127.0.0.1:80\r\nAccept: */*\r\n\r\n").get()
        #expect(head.method == "GET" && head.path == "/events" && head.host == "127.0.0.1:80")
        #expect(head.query == ["token": "abc", "x": "a b c"])
    }

    @Test func malformedHeadsAreRefusedWithTheirStatus() {
        func status(_ text: String) -> Int? {
            if case .failure(let refusal) = parse(text) { return refusal.status }
            return nil
        }
        #expect(status("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n") == 400)
        #expect(status("GET / HTTP/3\r\n\r\n") == 505)
        #expect(status("GET nowhere HTTP/1.1\r\n\r\n") == 400)
        #expect(status("GET / HTTP/1.1\r\n folded: x\r\n\r\n") == 400)
        #expect(status("GET / HTTP/1.1\r\nno colon\r\n\r\n") == 400)
        #expect(status("POST / HTTP/1.1\r\nContent-Length: 1\r\n\r\n") == 413)
        #expect(status("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n") == 501)
        #expect(status("GET /?a=%4 HTTP/1.1\r\n\r\n") == 400)
        #expect(status("GET /?a=%ff HTTP/1.1\r\n\r\n") == 400)
        #expect(status("GET /?a=1&a=2 HTTP/1.1\r\n\r\n") == 400)
        #expect(status("GET /\u{7f} HTTP/1.1\r\n\r\n") == 400)
        #expect(status("GET / HTTP/1.1\r\n" + String(repeating: "X: 1\r\n", count: 65) + "\r\n") == 431)
    }

    @Test func randomBytesNeverTrapTheParser() async {
        var rng = SystemRandomNumberGenerator()
        let alphabet = Array("GET /?=&%: \r\nHTTP/1.0Host".utf8) + [0, 0xff, 0x7f]
        for round in 0..<20_000 {
            // A long run of work: the concurrent tests' tasks get the thread now and then.
            if round % 500 == 0 { await Task.yield() }
            let count = Int.random(in: 0...96, using: &rng)
            let bytes = (0..<count).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &rng)] }
            _ = HTTPRequestHead.end(in: bytes)
            _ = HTTPRequestHead.parse(bytes[...])
        }
    }

    @Test func tokensCompareWhole() {
        #expect(Inspector.sameToken("abcd", "abcd"))
        #expect(!Inspector.sameToken("abcd", "abce"))
        #expect(!Inspector.sameToken("abc", "abcd"))
        #expect(!Inspector.sameToken("", "abcd"))
    }

    @Test func theTimelinesFlagBitsEachHaveTheirNameAndTheEntryStaysSmall() {
        let bits: [(UInt16, String)] = [
            (CellHistory.queued, "queued"), (CellHistory.paused, "paused"), (CellHistory.refreshing, "refreshing"),
            (CellHistory.partial, "partial"), (CellHistory.cancelled, "cancelled"),
            (CellHistory.fromCache, "from cache"), (CellHistory.stale, "stale"), (CellHistory.previous, "previous"),
            (CellHistory.placeholder, "placeholder"), (CellHistory.optimistic, "optimistic"),
            (CellHistory.rolledBack, "rolled back"),
        ]
        var all: UInt16 = 0
        for (bit, name) in bits {
            #expect(bit.nonzeroBitCount == 1 && all & bit == 0, "\(name) has a bit of its own")
            #expect(CellHistory.names(bit) == [name])
            all |= bit
        }
        // Every name, in the order the cell's own flags are listed.
        #expect(CellHistory.names(all) == bits.map { $0.1 })
        // The 16-bit field fits in the padding after the status.
        #expect(MemoryLayout<CellHistory.Entry>.stride == 24)
    }

    @Test func jsonStringsAreEscapedForHTMLToo() {
        var w = JSONWriter()
        w.beginObject()
        w.field("s", "</script><b>\"&\\\n\u{1}")
        w.key("r")
        w.ratio(2, of: 3)
        w.endObject()
        #expect(w.text == #"{"s":"\u003c/script\u003e\u003cb\u003e\"\u0026\\\n\u0001","r":0.667}"#)
    }
}

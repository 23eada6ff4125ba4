import Testing
@_spi(LoadstateC) @testable import Loadstate

/// A page loader whose pages the test answers one by one.
final class PageDesk: @unchecked Sendable {
    struct Ask: Sendable {
        let query: PageQuery
        let answer: CheckedContinuation<Page<[UInt8]>, any Error>
    }

    let asks: AsyncStream<Ask>
    private let continuation: AsyncStream<Ask>.Continuation
    private var iterator: AsyncStream<Ask>.Iterator
    private let started = Locked(0)

    init() {
        (asks, continuation) = AsyncStream<Ask>.makeStream()
        iterator = asks.makeAsyncIterator()
    }

    /// How many pages the loader was asked for.
    var count: Int { started.withLock { $0 } }

    func loader(_ runtime: Runtime) -> PageLoader<[UInt8]> {
        PageLoader(runtime: runtime, codec: .bytes) { [self] query in
            started.withLock { $0 += 1 }
            return try await withCheckedThrowingContinuation { c in continuation.yield(Ask(query: query, answer: c)) }
        }
    }

    /// The next page asked for.
    func next() async -> Ask {
        guard let ask = await iterator.next() else { fatalError("the desk closed") }
        return ask
    }
}

/// Reads a cell's events until one matches.
func waitEvent<V: Sendable>(_ events: inout AsyncStream<PageEvent<V>>.Iterator,
                            _ test: (PageEvent<V>) -> Bool) async -> PageEvent<V>? {
    while let event = await events.next() {
        if test(event) { return event }
    }
    return nil
}

func loaded(_ index: Int, _ value: String) -> (PageEvent<[UInt8]>) -> Bool {
    { $0.index == index && !$0.isRefreshing && $0.state == .loaded(Array(value.utf8)) }
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

@Suite(.timeLimit(.minutes(1)))
struct PagedCellTests {
    let runtime = Runtime.shared

    /// Loads the first page: "p0", next "c1", previous "c0".
    func first(_ cell: PagedCell<[UInt8]>, _ desk: PageDesk,
               _ events: inout AsyncStream<PageEvent<[UInt8]>>.Iterator) async {
        cell.load(bytes("q"))
        let ask = await desk.next()
        #expect(ask.query == PageQuery(request: bytes("q"), cursor: nil, direction: .first))
        ask.answer.resume(returning: Page(bytes("p0"), next: bytes("c1"), previous: bytes("c0")))
        #expect(await waitEvent(&events, loaded(0, "p0")) != nil)
    }

    func next(_ cell: PagedCell<[UInt8]>, _ desk: PageDesk, _ events: inout AsyncStream<PageEvent<[UInt8]>>.Iterator,
              cursor: String, value: String, index: Int, after: String?) async -> PageEvent<[UInt8]>? {
        #expect(cell.loadNext())
        let ask = await desk.next()
        #expect(ask.query == PageQuery(request: bytes("q"), cursor: bytes(cursor), direction: .next))
        ask.answer.resume(returning: Page(bytes(value), next: after.map(bytes), previous: bytes("back")))
        return await waitEvent(&events, loaded(index, value))
    }

    @Test func threePagesForwardAndOneBackward() async {
        let desk = PageDesk()
        let cell = PagedCell(runtime: runtime, loader: desk.loader(runtime))
        var events = cell.events.makeAsyncIterator()
        #expect(!cell.loadNext())
        await first(cell, desk, &events)
        #expect(cell.hasNext && cell.hasPrevious)
        _ = await next(cell, desk, &events, cursor: "c1", value: "p1", index: 1, after: "c2")
        _ = await next(cell, desk, &events, cursor: "c2", value: "p2", index: 2, after: nil)
        #expect(!cell.hasNext && !cell.loadNext())
        #expect(cell.loadPrevious())
        let ask = await desk.next()
        #expect(ask.query == PageQuery(request: bytes("q"), cursor: bytes("c0"), direction: .previous))
        ask.answer.resume(returning: Page(bytes("p-1"), next: bytes("c0x")))
        let inserted = await waitEvent(&events, loaded(0, "p-1"))
        #expect(inserted?.isPrevious == true && inserted?.droppedPages == false)
        #expect(cell.values == [bytes("p-1"), bytes("p0"), bytes("p1"), bytes("p2")])
        #expect(!cell.hasPrevious)
        cell.reset()
        _ = await waitEvent(&events) { $0.state == .absent }
        #expect(cell.pages.isEmpty)
    }

    @Test func theCapDropsFromTheOtherEnd() async {
        let desk = PageDesk()
        let cell = PagedCell(runtime: runtime, maxPages: 2, loader: desk.loader(runtime))
        var events = cell.events.makeAsyncIterator()
        await first(cell, desk, &events)
        _ = await next(cell, desk, &events, cursor: "c1", value: "p1", index: 1, after: "c2")
        let third = await next(cell, desk, &events, cursor: "c2", value: "p2", index: 1, after: "c3")
        #expect(third?.droppedPages == true)
        #expect(cell.values == [bytes("p1"), bytes("p2")])
    }

    @Test func refreshReloadsInOrderAndStopsAtAChangedCursor() async throws {
        let desk = PageDesk()
        let cell = PagedCell(runtime: runtime, loader: desk.loader(runtime))
        var events = cell.events.makeAsyncIterator()
        await first(cell, desk, &events)
        _ = await next(cell, desk, &events, cursor: "c1", value: "p1", index: 1, after: "c2")
        _ = await next(cell, desk, &events, cursor: "c2", value: "p2", index: 2, after: nil)
        #expect(cell.refresh())
        let zero = await desk.next()
        #expect(zero.query.direction == .first && zero.query.cursor == nil)
        // Page 1 waits for page 0 (a short look: nothing may start).
        try await Task.sleep(for: .milliseconds(30))
        #expect(desk.count == 4)
        zero.answer.resume(returning: Page(bytes("p0 new"), next: bytes("c1"), previous: bytes("c0")))
        #expect(await waitEvent(&events, loaded(0, "p0 new")) != nil)
        let one = await desk.next()
        #expect(one.query == PageQuery(request: bytes("q"), cursor: bytes("c1"), direction: .next))
        one.answer.resume(returning: Page(bytes("p1 new"), next: bytes("elsewhere")))
        let ended = await waitEvent(&events, loaded(1, "p1 new"))
        #expect(ended?.droppedPages == true)
        #expect(cell.values == [bytes("p0 new"), bytes("p1 new")])
    }

    @Test func aFailedNextPageLeavesTheOthersAndACancelEndsOneUnderWay() async {
        let desk = PageDesk()
        let cell = PagedCell(runtime: runtime, loader: desk.loader(runtime))
        var events = cell.events.makeAsyncIterator()
        await first(cell, desk, &events)
        #expect(cell.loadNext())
        await desk.next().answer.resume(throwing: Boom())
        let failed = await waitEvent(&events) { $0.index == 1 && !$0.isRefreshing && $0.state != .loading }
        if case .error(let error) = failed?.state { #expect(error is Boom) } else { Issue.record("no error") }
        #expect(cell.values == [bytes("p0")])
        #expect(cell.loadNext())
        let ask = await desk.next()
        cell.cancel()
        let cancelled = await waitEvent(&events) { $0.index == 1 && $0.isCancelled }
        #expect(cancelled?.state == .absent)
        ask.answer.resume(throwing: CancellationError())
        #expect(cell.values == [bytes("p0")])
    }

    @Test func cellsWithOneLoaderSharePages() async {
        let desk = PageDesk()
        let loader = desk.loader(runtime)
        let one = PagedCell(runtime: runtime, loader: loader)
        let two = PagedCell(runtime: runtime, loader: loader)
        var a = one.events.makeAsyncIterator()
        var b = two.events.makeAsyncIterator()
        one.load(bytes("s"), share: true)
        let ask = await desk.next()
        two.load(bytes("s"), share: true)
        _ = await waitEvent(&b) { $0.state == .loading }
        ask.answer.resume(returning: Page(bytes("s0")))
        #expect(await waitEvent(&a, loaded(0, "s0")) != nil)
        #expect(await waitEvent(&b, loaded(0, "s0")) != nil)
        #expect(desk.count == 1)
    }

    @Test func aValueTheCodecCannotReadIsAnError() async {
        let cell = PagedCell<Int>(runtime: runtime, codec: .decimal) { _ in Page(7, next: bytes("n")) }
        var events = cell.events.makeAsyncIterator()
        cell.load()
        _ = await waitEvent(&events) { $0.state == .loaded(7) }
        #expect(cell.hasNext)
        let broken = PagedCell<Int>(runtime: runtime, codec: ValueCodec(encode: { _ in [0xFF] }, decode: { _ in nil })) {
            _ in Page(1)
        }
        var brokenEvents = broken.events.makeAsyncIterator()
        broken.load()
        let bad = await waitEvent(&brokenEvents) { if case .error = $0.state { true } else { false } }
        #expect(bad != nil)
        #expect(PageWire.decodeValue([0, 0x4C, 0x50, 0x56, 9, 0, 0, 0, 1]) == .failure(.malformed))
        #expect(PageWire.decodeRequest([0, 0x4C, 0x50, 0x51, 7]) == .failure(.malformed))
    }
}

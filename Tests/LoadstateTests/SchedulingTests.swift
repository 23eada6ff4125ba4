import Testing
@_spi(LoadstateC) @testable import Loadstate

/// Names of load bodies as they start, as a stream the test waits on.
final class Starts: @unchecked Sendable {
    private let names = Locked<[String]>([])
    private let stream: AsyncStream<String>
    private let continuation: AsyncStream<String>.Continuation
    private var iterator: AsyncStream<String>.Iterator

    init() {
        (stream, continuation) = AsyncStream<String>.makeStream()
        iterator = stream.makeAsyncIterator()
    }

    func started(_ name: String) {
        names.withLock { $0.append(name) }
        continuation.yield(name)
    }

    /// The next body to start.
    func next() async -> String? { await iterator.next() }

    var all: [String] { names.withLock { $0 } }
}

/// Waits `ms` on the runtime's own timers: a load that times out.
func elapse(_ ms: Int, on runtime: Runtime) async {
    let clock = LoadableCell<Int>(runtime: runtime)
    let never = Gate()
    await clock.load(timeout: .milliseconds(ms)) {
        await never.wait()
        return 0
    }
}

/// Scheduling through the Swift API: `LoadQueue`, priorities, polling.
@Suite(.timeLimit(.minutes(1)))
struct SchedulingTests {
    @Test func loadsBeyondTheQueueLimitWaitAndStartByPriority() async throws {
        let runtime = try Runtime()
        defer { _ = runtime.close() }
        let queue = LoadQueue(maxConcurrent: 1, runtime: runtime)
        let starts = Starts()
        let gates = ["first", "low", "high", "moved"].map { ($0, Gate()) }
        let cells = gates.map { _ in LoadableCell<String>(runtime: runtime) }
        let priorities = [0, -1, 5, 0]
        for (i, (name, gate)) in gates.enumerated() {
            cells[i].load(queue: queue, priority: priorities[i]) {
                starts.started(name)
                await gate.wait()
                return name
            }
            if i == 0 { #expect(await starts.next() == "first") }
        }
        for cell in cells { await cell.settled() }
        #expect(cells[3].isQueued && cells[1].isQueued && !cells[0].isQueued)
        cells[3].setPriority(9)
        // Each body waits for its gate: open the one that started.
        gates[0].1.open()
        for _ in 1..<gates.count {
            let name = await starts.next()
            gates.first { $0.0 == name }?.1.open()
        }
        #expect(starts.all == ["first", "moved", "high", "low"])
        for cell in cells { _ = await StateRecorder(cell.states).until(\.isLoaded) }
        #expect(!cells[1].isQueued)
    }

    @Test func aCancelledQueuedLoadNeverRunsItsBody() async throws {
        let runtime = try Runtime()
        defer { _ = runtime.close() }
        let queue = LoadQueue(maxConcurrent: 1, runtime: runtime)
        let starts = Starts()
        let gate = Gate()
        let running = LoadableCell<Int>(runtime: runtime)
        let waiting = LoadableCell<Int>(runtime: runtime)
        running.load(queue: queue) {
            starts.started("running")
            await gate.wait()
            return 1
        }
        #expect(await starts.next() == "running")
        waiting.load(queue: queue) {
            starts.started("cancelled")
            return 2
        }
        await waiting.settled()
        #expect(waiting.isQueued && waiting.state == .loading)
        waiting.cancel()
        await waiting.settled()
        #expect(waiting.state == .absent && !waiting.isQueued)
        gate.open()
        _ = await StateRecorder(running.states).until(\.isLoaded)
        running.load(queue: queue) {
            starts.started("after")
            return 3
        }
        #expect(await starts.next() == "after")
        #expect(starts.all == ["running", "after"])
    }

    @Test func pollingRefreshesUntilCancelledAndPausesWithTheRuntime() async throws {
        let runtime = try Runtime()
        defer { _ = runtime.close() }
        let starts = Starts()
        let count = Locked(0)
        let cell = LoadableCell<Int>(runtime: runtime)
        cell.load(refreshInterval: .milliseconds(10)) {
            let n = count.withLock { c -> Int in
                c += 1
                return c
            }
            starts.started("poll")
            return n
        }
        for _ in 0..<3 { _ = await starts.next() }
        runtime.pausePolling()
        await elapse(30, on: runtime)
        let paused = count.withLock { $0 }
        await elapse(60, on: runtime)
        #expect(count.withLock { $0 } == paused)
        runtime.resumePolling()
        for _ in 0..<2 { _ = await starts.next() }
        cell.cancel()
        await elapse(30, on: runtime)
        let stopped = count.withLock { $0 }
        await elapse(60, on: runtime)
        #expect(count.withLock { $0 } == stopped)
    }

    /// The queue on its own: dead entries (removed or moved jobs) are
    /// dropped, and jobs come out by priority, then in order.
    @Test func theQueueSkipsDeadEntriesAndKeepsPriorityOrder() async throws {
        let runtime = try Runtime()
        defer { _ = runtime.close() }
        // What the entries' starts record.
        final class Box: @unchecked Sendable {
            var tickets = [UInt64](repeating: 0, count: 200)
            var started: [Int] = []
        }
        let box = Box()
        let (order, expected, waitingAfter) = await withCheckedContinuation {
            (done: CheckedContinuation<([Int], [Int], Int), Never>) in
            runtime.loop.execute {
                let admission = Admission(limits: LoaderLimits(maxConcurrent: 1), loop: runtime.loop)
                #expect(admission.tryStart())
                var expected: [(priority: Int32, index: Int)] = []
                func start(_ i: Int) -> Admission.Start {
                    { ticket, call in
                        guard box.tickets[i] == ticket else { return nil }
                        guard case .start = call else { return true }
                        box.tickets[i] = 0
                        box.started.append(i)
                        admission.ended()
                        if box.started.count == expected.count {
                            done.resume(returning: (box.started, expected.map(\.index), admission.waiting))
                        }
                        return true
                    }
                }
                for i in 0..<200 { box.tickets[i] = admission.enqueue(priority: Int32(i % 3), start(i)) }
                for i in 0..<150 where i % 10 != 0 {
                    box.tickets[i] = 0
                    admission.remove()
                }
                admission.remove()
                box.tickets[170] = admission.enqueue(priority: 9, start(170))
                for i in 0..<200 where box.tickets[i] != 0 {
                    expected.append((i == 170 ? 9 : Int32(i % 3), i))
                }
                // Higher priority first (170 alone at 9), in order within one.
                expected.sort { a, b in a.priority != b.priority ? a.priority > b.priority : a.index < b.index }
                #expect(admission.waiting == expected.count)
                admission.ended()
            }
        }
        #expect(order == expected)
        #expect(waitingAfter == 0)
    }

    /// `Runtime.prefetch`: a load of the same key meanwhile joins its job,
    /// one made later finds the value in the cache; the loader runs once.
    @Test func prefetchThenLoadCallsTheLoaderOnce() async throws {
        let runtime = try Runtime()
        defer { _ = runtime.close() }
        let loader = ManualLoader(runtime: runtime)
        let store = MemoryCache(id: runtime.table.makeID(.cache), name: "prefetch")
        let cache = CacheUse<String>(store: store, key: Array("k".utf8), policy: .cacheFirst, freshMs: 60_000,
                                     encode: { Array($0.utf8) }, decode: { String(decoding: $0, as: UTF8.self) })
        let spec = LoadSpec(loader: loader as Loader<String, String>, request: "k", cache: cache)
        runtime.prefetch(spec)
        let job = await loader.nextJob()
        func cell() -> (Cell<String, String>, EventLog<String, String>) {
            let log = EventLog<String, String>()
            let cell = Cell<String, String>(id: runtime.table.makeID(.loadable), flavor: .loadable, runtime: runtime,
                                            observer: log.observer)
            runtime.table.insert(cell)
            return (cell, log)
        }
        let (joining, joiningLog) = cell()
        runtime.loop.execute { joining.load(spec) }
        #expect(await joiningLog.next().state.status == .loading)
        runtime.submit(.succeed("value"), job: job, of: Job<String, String>.self)
        let loaded = await joiningLog.next()
        #expect(loaded.state.status == .loaded && loaded.state.value == "value")
        let (later, laterLog) = cell()
        runtime.loop.execute { later.load(spec) }
        let cached = await laterLog.next()
        #expect(cached.state.isFromCache && cached.state.value == "value")
        #expect(loader.startedJobs == 1)
    }

    @Test func processRunsWaitInTheirQueueToo() async throws {
        let runtime = try Runtime()
        defer { _ = runtime.close() }
        let queue = LoadQueue(maxConcurrent: 1, runtime: runtime)
        let gate = Gate()
        let first = ProcessCell<Int>(runtime: runtime)
        let second = ProcessCell<Int>(runtime: runtime)
        let starts = Starts()
        first.run(1, queue: queue) {
            starts.started("first")
            await gate.wait()
        }
        #expect(await starts.next() == "first")
        second.run(2, queue: queue, priority: 3) { starts.started("second") }
        await second.settled()
        #expect(second.isQueued && second.state == .running(2))
        second.setPriority(4)
        gate.open()
        #expect(await starts.next() == "second")
        _ = await StateRecorder(second.states).until { $0 == .finished(2) }
    }
}

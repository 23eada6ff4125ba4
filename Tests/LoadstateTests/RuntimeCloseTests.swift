import CLibUV
import Synchronization
import Testing
@_spi(LoadstateC) @testable import Loadstate
#if canImport(Glibc)
import Glibc
#endif

/// How many times the completion of the stuck work below ran.
private let stuckWorkCompletions = Atomic<Int>(0)

/// Runs `body` on a new thread.
private func runOnThread(_ body: @escaping () -> Void) {
    final class Box { let body: () -> Void; init(_ body: @escaping () -> Void) { self.body = body } }
    var thread = pthread_t()
    let rc = pthread_create(&thread, nil, { arg in
        Unmanaged<Box>.fromOpaque(arg!).takeRetainedValue().body()
        return nil
    }, Unmanaged.passRetained(Box(body)).toOpaque())
    #expect(rc == 0)
    if rc == 0 { pthread_detach(thread) }
}

/// Runs `body` on a new thread and waits for its result without holding
/// a thread of Swift's cooperative pool.
private func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { done in
        runOnThread { done.resume(returning: body()) }
    }
}

/// Whether `fd` becomes readable within `ms` milliseconds.
private func readable(_ fd: Int32, within ms: Int32) -> Bool {
    var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    return poll(&entry, 1, ms) == 1
}

/// A loader whose jobs never end by themselves: every 5 ms, a timer on the
/// loop asks the runtime whether the job was cancelled, until it is. It
/// reaches its runtime unowned, as the library's loaders do.
private final class TickingLoader: Loader<String, String>, @unchecked Sendable {
    let ticks = Locked(0)

    override func start(_ job: Job<String, String>, runtime: Runtime) {
        unowned(unsafe) let runtime = runtime
        let (id, ticks) = (job.id, ticks)
        let timer = LoopTimer(loop: runtime.loop.loop)
        timer.start(after: 5) {
            ticks.withLock { $0 += 1 }
            _ = runtime.isJobCancelled(id, of: Job<String, String>.self)
            timer.restart(after: 5)
        }
        job.onLoopCancel = { timer.close() }
    }
}

/// A runtime with a TickingLoader and a cell loading from it.
private func runtimeWithTickingLoad() async throws -> (Runtime, TickingLoader) {
    let runtime = try Runtime()
    let loader = TickingLoader(id: runtime.table.makeID(.loader))
    runtime.table.insert(loader)
    let log = EventLog<String, String>()
    let cell = Cell<String, String>(id: runtime.table.makeID(.loadable), flavor: .loadable, runtime: runtime,
                                    observer: log.observer)
    runtime.table.insert(cell)
    let spec = LoadSpec(loader: loader as Loader<String, String>, request: "r", options: LoadOptions())
    runtime.loop.execute { cell.load(spec) }
    #expect(await log.next().state.status == .loading)
    return (runtime, loader)
}

/// Waits up to `ms` milliseconds for `done`.
private func eventually(within ms: UInt64, _ done: () -> Bool) async throws -> Bool {
    let start = Clock.monotonicMs()
    while !done() {
        if Clock.monotonicMs() - start > ms { return false }
        try await Task.sleep(for: .milliseconds(5))
    }
    return true
}

@Suite(.timeLimit(.minutes(1)))
struct RuntimeCloseTests {
    /// A runtime its host releases without `close` closes itself: the job
    /// it runs is cancelled (its timer stops) and its loop thread ends.
    /// Before, the loop thread ran on and the job's timer reached the freed
    /// runtime (AddressSanitizer: heap-use-after-free).
    @Test func aRuntimeReleasedWithoutCloseClosesItself() async throws {
        weak var loop: EventLoop?
        let loader: TickingLoader
        do {
            let (runtime, ticking) = try await runtimeWithTickingLoad()
            loop = runtime.loop
            loader = ticking
        }
        #expect(loop == nil)
        let ticks = loader.ticks.withLock { $0 }
        try await Task.sleep(for: .milliseconds(100))
        #expect(loader.ticks.withLock { $0 } == ticks)
    }

    /// Released on its own loop thread (the last reference was held by
    /// work running there), a runtime shuts down at once and its loop
    /// thread, which cannot join itself, ends by itself: no deadlock, and
    /// no thread left running.
    @Test func aRuntimeReleasedOnItsLoopThreadEndsItsThread() async throws {
        weak var loop: EventLoop?
        let loader: TickingLoader
        let released = Locked(false)
        do {
            let (runtime, ticking) = try await runtimeWithTickingLoad()
            loop = runtime.loop
            loader = ticking
            // Holds the runtime on the loop until the test has let it go.
            runtime.loop.execute {
                while !released.withLock({ $0 }) { sched_yield() }
                withExtendedLifetime(runtime) {}
            }
        }
        released.withLock { $0 = true }
        #expect(try await eventually(within: 5000) { loop == nil })
        let ticks = loader.ticks.withLock { $0 }
        try await Task.sleep(for: .milliseconds(100))
        #expect(loader.ticks.withLock { $0 } == ticks)
    }

    /// Released inside a dispatch (POLL mode), where `close` refuses, a
    /// runtime joins its loop as on any host thread: the loop never waits
    /// for the dispatching thread, so nothing deadlocks, and the loop ends.
    @Test func aRuntimeReleasedInsideADispatchEndsItsLoop() throws {
        final class Holder: @unchecked Sendable { var runtime: Runtime? }
        let holder = Holder()
        holder.runtime = try Runtime(delivery: .poll)
        let delivery = holder.runtime!.delivery
        weak let loop = holder.runtime!.loop
        let refused = Locked(ResultCode.ok)
        delivery.post(.notification) {
            refused.withLock { $0 = holder.runtime!.close() }
            holder.runtime = nil
        }
        #expect(try delivery.dispatch(max: 0) == 1)
        #expect(refused.withLock { $0 } == .wrongState)
        #expect(loop == nil)
    }

    /// `close` on the loop thread cannot wait for the loop: it refuses
    /// with `.wrongState` and changes nothing; closing from another thread
    /// then works.
    @Test func closeOnTheLoopThreadIsRefused() async throws {
        let runtime = try Runtime()
        let rc: ResultCode = await withCheckedContinuation { done in
            runtime.loop.execute { done.resume(returning: runtime.close()) }
        }
        #expect(rc == .wrongState)
        #expect(!runtime.isClosed)
        #expect(runtime.close() == .ok)
    }

    /// Work handed to a closed runtime's loop never runs: it is released
    /// at once, with what it holds (here, a token whose release counts).
    @Test func workQueuedAfterCloseIsReleased() throws {
        final class Record: Sendable {
            let released = Locked(0)
            let ran = Locked(false)
        }
        final class Token: Sendable {
            let record: Record
            init(_ record: Record) { self.record = record }
            deinit { record.released.withLock { $0 += 1 } }
        }
        let record = Record()
        let runtime = try Runtime()
        #expect(runtime.close() == .ok)
        do {
            let token = Token(record)
            runtime.loop.execute { withExtendedLifetime(token) { record.ran.withLock { $0 = true } } }
        }
        #expect(record.released.withLock { $0 } == 1)
        #expect(!record.ran.withLock { $0 })
    }

    /// Work in libuv's thread pool that never finishes (here: a read of a
    /// pipe no one writes to, as an open of a FIFO or of a file on a hung
    /// mount would be) does not hold `close`: it returns after the stop
    /// deadline, and the work, finished later, never has its completion run.
    @Test func closeDoesNotWaitForStuckThreadPoolWork() async throws {
        let runtime = try Runtime()
        var gate: [Int32] = [-1, -1]
        var workDone: [Int32] = [-1, -1]
        var closed: [Int32] = [-1, -1]
        #expect(uv_pipe(&gate, 0, 0) == 0 && uv_pipe(&workDone, 0, 0) == 0 && uv_pipe(&closed, 0, 0) == 0)
        defer { for fd in gate + workDone + closed { Glibc.close(fd) } }
        // The request is the thread pool's until the work returns: never freed.
        let work = UnsafeMutablePointer<uv_work_t>.allocate(capacity: 1)
        work.pointee.data = UnsafeMutableRawPointer(bitPattern: Int(gate[0]) | Int(workDone[1]) << 32)
        let queued: Int32 = await withCheckedContinuation { done in
            runtime.loop.execute {
                done.resume(returning: uv_queue_work(runtime.loop.loop, work, { req in
                    let fds = Int(bitPattern: req!.pointee.data)
                    var byte: UInt8 = 0
                    _ = read(Int32(truncatingIfNeeded: fds), &byte, 1)
                    _ = write(Int32(truncatingIfNeeded: fds >> 32), &byte, 1)
                }, { _, _ in
                    stuckWorkCompletions.add(1, ordering: .relaxed)
                }))
            }
        }
        #expect(queued == 0)

        let (closedRead, closedWrite) = (closed[0], closed[1])
        let (gateWrite, workDoneRead) = (gate[1], workDone[0])
        let (returned, took, workEnded) = await onThread { () -> (Bool, UInt64, Bool) in
            let start = Clock.monotonicMs()
            runOnThread {
                _ = runtime.close()
                var byte: UInt8 = 1
                _ = write(closedWrite, &byte, 1)
            }
            let returned = readable(closedRead, within: 10_000)
            let took = Clock.monotonicMs() - start
            // Let the work end: it reports to a loop that is gone.
            var byte: UInt8 = 1
            _ = write(gateWrite, &byte, 1)
            let workEnded = readable(workDoneRead, within: 10_000)
            if !returned { _ = readable(closedRead, within: 10_000) }
            return (returned, took, workEnded)
        }
        #expect(returned)
        #expect(took >= EventLoop.stopDeadlineMs - 50)
        #expect(workEnded)
        #expect(stuckWorkCompletions.load(ordering: .relaxed) == 0)
    }
}

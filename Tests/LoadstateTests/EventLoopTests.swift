import Testing
@_spi(LoadstateC) @testable import Loadstate

/// The order in which the loop runs what a work item schedules.
@Suite struct EventLoopTests {
    @Test func afterBatchRunsOnceEveryItemTakenWithItRan() throws {
        let loop = try EventLoop()
        defer { loop.stop {} }
        let log = Locked<[String]>([])
        let done = LoopReply<Void>()
        func note(_ s: String) { log.withLock { $0.append(s) } }
        loop.execute {
            // Inside one item: the follow-up first, then the batch's end;
            // an item queued now is taken after that batch.
            loop.afterBatch {
                note("batch end")
                loop.afterCurrent { note("after batch end") }
            }
            loop.afterCurrent { note("follow-up") }
            loop.execute {
                note("next item")
                done.put(())
            }
            note("item")
        }
        #expect(done.take(timeoutMs: 10_000) != nil)
        #expect(log.withLock { $0 } == ["item", "follow-up", "batch end", "after batch end", "next item"])
    }

    @Test func afterBatchOutsideAnItemRunsLikeAfterCurrent() throws {
        let loop = try EventLoop()
        defer { loop.stop {} }
        let ran = LoopReply<Bool>()
        // From another thread: queued as a work item of its own.
        loop.afterBatch { ran.put(loop.isLoopThread) }
        #expect(ran.take(timeoutMs: 10_000) == true)
    }
}

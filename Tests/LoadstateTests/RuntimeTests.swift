import Testing
@_spi(LoadstateC) @testable import Loadstate

/// An actor whose executor is a runtime's loop.
actor LoopBound {
    let loop: EventLoop
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    init(loop: EventLoop) {
        self.loop = loop
    }

    func onLoopThread() -> Bool {
        loop.isLoopThread
    }
}

@Suite(.timeLimit(.minutes(1)))
struct RuntimeTests {
    @Test func theLoopIsASerialExecutorForActors() async throws {
        let runtime = try Runtime()
        defer { _ = runtime.close() }
        let actor = LoopBound(loop: runtime.loop)
        #expect(await actor.onLoopThread())
        #expect(!runtime.loop.isLoopThread)
    }

    @Test func commandsRunInOrderOnTheLoopThreadAndNeverInline() async throws {
        let runtime = try Runtime()
        defer { _ = runtime.close() }
        let seen = Locked<[Int]>([])
        let onLoop = Locked(true)
        for i in 0..<1000 {
            runtime.loop.execute {
                if !runtime.loop.isLoopThread { onLoop.withLock { $0 = false } }
                seen.withLock { $0.append(i) }
            }
        }
        await withCheckedContinuation { done in
            runtime.loop.execute {
                var ranInline = true
                runtime.loop.execute { ranInline = false }
                // Work queued from the loop thread runs after this command, not inside it.
                #expect(ranInline)
                done.resume()
            }
        }
        #expect(seen.withLock { $0 } == Array(0..<1000))
        #expect(onLoop.withLock { $0 })
    }

    @Test func workQueueWakesOnlyOnceUntilDrained() {
        let queue = WorkQueue()
        #expect(queue.push(.command {}))
        #expect(!queue.push(.command {}))
        #expect(queue.takeAll().count == 2)
        #expect(queue.takeAll().isEmpty)
        #expect(queue.push(.command {}))
    }

    @Test func workQueueKeepsTheStorageOfUsualBatchesOnly() {
        let queue = WorkQueue()
        for _ in 0..<100 { _ = queue.push(.command {}) }
        queue.recycle(queue.takeAll())
        #expect(queue.spareCapacity >= 100)
        // A burst's storage is freed once it has been run.
        for _ in 0...WorkQueue.spareCapacityLimit { _ = queue.push(.command {}) }
        let burst = queue.takeAll()
        #expect(burst.count == WorkQueue.spareCapacityLimit + 1)
        queue.recycle(burst)
        #expect(queue.spareCapacity == 0)
    }

    @Test func pollDeliveryRunsCallbacksOnTheDispatchingThread() throws {
        let delivery = try Delivery(mode: .poll)
        #expect(delivery.fd >= 0)
        let ran = Locked<[Int]>([])
        delivery.post(.notification) { ran.withLock { $0.append(1) } }
        delivery.post(.cleanup) { ran.withLock { $0.append(2) } }
        delivery.post(.notification) { ran.withLock { $0.append(3) } }
        #expect(try delivery.dispatch(max: 2) == 2)
        #expect(ran.withLock { $0 } == [1, 2])
        #expect(try delivery.dispatch(max: 0) == 1)
        #expect(try delivery.dispatch(max: 0) == 0)
        #expect(ran.withLock { $0 } == [1, 2, 3])
    }

    @Test func closingDropsNotificationsButRunsCleanups() throws {
        let delivery = try Delivery(mode: .poll)
        let ran = Locked<[String]>([])
        delivery.post(.notification) { ran.withLock { $0.append("event") } }
        delivery.post(.cleanup) { ran.withLock { $0.append("cleanup") } }
        delivery.drainCleanups()
        #expect(ran.withLock { $0 } == ["cleanup"])
    }

    @Test func dispatchInLoopModeIsAWrongState() throws {
        let delivery = try Delivery(mode: .loop)
        #expect(throws: ResultCode.wrongState) { try delivery.dispatch(max: 0) }
    }

    @Test func closeCancelsRunningJobsAndReleasesLoaders() async throws {
        let f = try CoreFixture()
        f.load("q")
        _ = await f.log.next()
        let job = await f.loader.nextJob()
        let hooked = Locked(false)
        _ = f.runtime.onCancel(job: job, of: Job<String, String>.self) { hooked.withLock { $0 = true } }
        #expect(f.runtime.close() == .ok)
        #expect(hooked.withLock { $0 })
        #expect(f.runtime.close() == .closed)
        #expect(f.submit(.succeed("late"), job) != .ok)
    }

    @Test func idsCarryTheirKindAndAreNeverReused() throws {
        let table = HandleTable()
        let a = table.makeID(.loadable)
        let b = table.makeID(.job)
        #expect(a != b && a != 0 && b != 0)
        #expect(Handle.kind(of: a) == .loadable)
        #expect(Handle.kind(of: b) == .job)
        #expect(table.wasIssued(b, as: .job))
        #expect(!table.wasIssued(a, as: .job))
    }
}

/// The handle table's map against a Dictionary, under random inserts,
/// replacements and removals of ids that crowd a few slots (so that runs
/// wrap around the end and removals shift entries back), through growth.
@Suite struct HandleMapTests {
    @Test func matchesADictionaryUnderRandomOperations() {
        var rng = SplitMix(seed: 7)
        let map = HandleMap()
        var model: [UInt64: Handle] = [:]
        for round in 0..<20_000 {
            // Ids of the runtime's shape (serial << 4 | kind), from a pool
            // that grows, so the map grows and shrinks in use.
            let pool = UInt64(8 + round / 20)
            let id = (rng.next() % pool + 1) << 4 | (rng.next() % 5 + 1)
            switch rng.next() % 3 {
            case 0, 1:
                let handle = Handle(id: id)
                map[id] = handle
                model[id] = handle
            default:
                map[id] = nil
                model[id] = nil
            }
            if round % 997 == 0 || round > 19_900 {
                #expect(map.count == model.count)
                for (key, handle) in model { #expect(map[key] === handle) }
            }
        }
        #expect(Set(map.values.map(ObjectIdentifier.init)) == Set(model.values.map(ObjectIdentifier.init)))
        for key in model.keys { map[key] = nil }
        #expect(map.count == 0 && map.values.isEmpty)
        #expect(map[0] == nil && map[16] == nil)
        map.removeAll()
        #expect(map.count == 0)
    }
}


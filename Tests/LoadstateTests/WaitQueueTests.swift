import Testing
@_spi(LoadstateC) @testable import Loadstate

/// The queue of an admission, against a plain model: every entry comes out
/// highest priority first and first in first out within a priority,
/// whatever the mix of priorities, sweeps and queue sizes.
@Suite struct WaitQueueTests {
    /// A small deterministic generator (xorshift), so a failure repeats.
    struct Random {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return Int(state % UInt64(bound))
        }
    }

    /// Runs random appends, pops and sweeps against a sorted model.
    private func check(seed: UInt64, steps: Int, priorities: Int, popPercent: Int) {
        var queue = WaitQueue()
        var model: [(priority: Int32, ticket: UInt64)] = []
        var dead = Set<UInt64>()
        var random = Random(state: seed)
        var ticket: UInt64 = 0
        for _ in 0..<steps {
            let roll = random.next(100)
            if roll < popPercent {
                let entry = queue.popFirst()
                if model.isEmpty {
                    #expect(entry == nil)
                } else {
                    let first = model.indices.min { a, b in
                        model[a].priority != model[b].priority ? model[a].priority > model[b].priority
                            : model[a].ticket < model[b].ticket
                    } ?? 0
                    #expect(entry?.ticket == model[first].ticket)
                    model.remove(at: first)
                }
            } else if roll < popPercent + 2 {
                // Kill a few entries, then sweep them.
                for item in model where random.next(4) == 0 { dead.insert(item.ticket) }
                queue.removeAll { dead.contains($0.ticket) }
                model.removeAll { dead.contains($0.ticket) }
            } else {
                ticket += 1
                let priority = Int32(random.next(priorities)) - Int32(priorities / 2)
                queue.append(priority: priority, WaitQueue.Entry(ticket: ticket, start: { _, _ in true }))
                model.append((priority, ticket))
            }
            #expect(queue.count == model.count)
        }
        // What is left comes out in order, and forEachInOrder agrees.
        var listed: [UInt64] = []
        queue.forEachInOrder { listed.append($0.ticket) }
        model.sort { $0.priority != $1.priority ? $0.priority > $1.priority : $0.ticket < $1.ticket }
        #expect(listed == model.map(\.ticket))
        var drained: [UInt64] = []
        while let entry = queue.popFirst() { drained.append(entry.ticket) }
        #expect(drained == model.map(\.ticket))
        #expect(queue.count == 0)
    }

    @Test func oneRunOfOnePriorityIsFirstInFirstOut() {
        // Over 1,024 entries, so that the run shifts its taken entries out.
        check(seed: 1, steps: 20_000, priorities: 1, popPercent: 30)
    }

    @Test func priorityRunsComeOutHighestFirst() {
        check(seed: 2, steps: 20_000, priorities: 5, popPercent: 45)
    }

    @Test func manyPrioritiesAndSweeps() {
        check(seed: 3, steps: 20_000, priorities: 3_000, popPercent: 40)
    }

    @Test func aHigherPriorityAfterPopsComesFirst() {
        var queue = WaitQueue()
        for ticket in 1...3 as ClosedRange<UInt64> {
            queue.append(priority: 0, WaitQueue.Entry(ticket: ticket, start: { _, _ in true }))
        }
        #expect(queue.popFirst()?.ticket == 1)
        queue.append(priority: 5, WaitQueue.Entry(ticket: 4, start: { _, _ in true }))
        queue.append(priority: -5, WaitQueue.Entry(ticket: 5, start: { _, _ in true }))
        queue.append(priority: 0, WaitQueue.Entry(ticket: 6, start: { _, _ in true }))
        var order: [UInt64] = []
        while let entry = queue.popFirst() { order.append(entry.ticket) }
        #expect(order == [4, 2, 3, 6, 5])
    }
}

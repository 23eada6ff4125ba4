/// The jobs that wait in an `Admission`, in the order they start: higher
/// priority first, first in first out within one priority.
///
/// One run (a first-in-first-out array) per priority that has waiting
/// entries, and a heap of those priorities. Adding to and taking from a
/// run moves nothing else, so a queue of 100,000 jobs of one priority
/// costs the same per job as a queue of ten; a priority seen for the
/// first time costs a heap insertion over the priorities in use (at most
/// one per entry, so never worse than a heap of entries).
///
/// Entries are never removed from the middle: a job that stops waiting
/// leaves its entry behind (the caller tells dead entries from live ones
/// by their ticket) and `removeAll(where:)` sweeps them. Loop thread only.
///
/// The run the last entry went to and the run of the highest priority are
/// kept at hand, so that a queue whose entries share a priority looks
/// none up (a dictionary lookup hashes its key: a third of what adding
/// and taking an entry cost otherwise).
struct WaitQueue {
    /// A waiting job: its ticket and its start (which keeps the job alive).
    struct Entry {
        var ticket: UInt64
        var start: Admission.Start
    }

    /// The entries of one priority, oldest first from `head`.
    private final class Run {
        /// Taken entries are nil before `head`; the array is shifted when
        /// they are half of it.
        var entries: [Entry?] = []
        var head = 0

        var isEmpty: Bool { head >= entries.count }

        func popFirst() -> Entry? {
            guard head < entries.count else { return nil }
            // Moved out, nil left behind: no retain and release of its closure.
            let entry = entries[head].take()
            head += 1
            if head >= 1024 && head * 2 >= entries.count {
                entries.removeFirst(head)
                head = 0
            }
            return entry
        }
    }

    private var runs: [Int32: Run] = [:]
    /// The priorities of `runs`, a max-heap.
    private var priorities: [Int32] = []
    /// Entries held, dead ones among them.
    private(set) var count = 0
    /// The run the last entry went to, and the run of `priorities.first`
    /// (both in `runs`), when known.
    private var lastAdded: (priority: Int32, run: Run)?
    private var top: Run?

    mutating func append(priority: Int32, _ entry: Entry) {
        let run: Run
        if let lastAdded, lastAdded.priority == priority {
            run = lastAdded.run
        } else if let existing = runs[priority] {
            run = existing
        } else {
            run = Run()
            runs[priority] = run
            pushPriority(priority)
            top = nil
        }
        lastAdded = (priority, run)
        run.entries.append(entry)
        count += 1
    }

    /// Takes the first entry out (dead or not).
    mutating func popFirst() -> Entry? {
        while let run = topRun() {
            let entry = run.popFirst()
            if run.isEmpty {
                if let priority = priorities.first { runs[priority] = nil }
                popPriority()
                top = nil
                if lastAdded?.run === run { lastAdded = nil }
            }
            if let entry {
                count -= 1
                return entry
            }
        }
        return nil
    }

    /// The run of the highest priority; nil when no entry is held.
    private mutating func topRun() -> Run? {
        if let top { return top }
        while let priority = priorities.first {
            if let run = runs[priority] {
                top = run
                return run
            }
            popPriority()
        }
        return nil
    }

    /// Drops every entry.
    mutating func removeAll() {
        runs = [:]
        priorities = []
        count = 0
        lastAdded = nil
        top = nil
    }

    /// Drops the entries for which `isDead` is true.
    mutating func removeAll(where isDead: (Entry) -> Bool) {
        var kept: [Int32: Run] = [:]
        count = 0
        for (priority, run) in runs {
            let live = run.entries[run.head...].compactMap { $0 }.filter { !isDead($0) }
            guard !live.isEmpty else { continue }
            run.entries = live
            run.head = 0
            kept[priority] = run
            count += live.count
        }
        runs = kept
        // Sorted from the highest: a valid max-heap.
        priorities = kept.keys.sorted(by: >)
        lastAdded = nil
        top = nil
    }

    /// Calls `body` with the entries in the order they would be taken
    /// (dead ones among them).
    func forEachInOrder(_ body: (Entry) -> Void) {
        for priority in runs.keys.sorted(by: >) {
            guard let run = runs[priority] else { continue }
            for case let entry? in run.entries[run.head...] { body(entry) }
        }
    }

    // MARK: - The heap of priorities

    private mutating func pushPriority(_ priority: Int32) {
        priorities.append(priority)
        var i = priorities.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard priorities[i] > priorities[parent] else { break }
            priorities.swapAt(i, parent)
            i = parent
        }
    }

    private mutating func popPriority() {
        guard !priorities.isEmpty else { return }
        let last = priorities.removeLast()
        guard !priorities.isEmpty else { return }
        priorities[0] = last
        var i = 0
        while true {
            let left = 2 * i + 1
            let right = left + 1
            var best = i
            if left < priorities.count && priorities[left] > priorities[best] { best = left }
            if right < priorities.count && priorities[right] > priorities[best] { best = right }
            if best == i { return }
            priorities.swapAt(i, best)
            i = best
        }
    }
}

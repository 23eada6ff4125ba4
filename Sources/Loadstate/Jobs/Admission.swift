import CLibUV

/// Work that an `Admission` holds until it may start: a job.
protocol AdmissionWaiter: AnyObject {
    /// The ticket of the work's live entry in the queue; 0 when it has none.
    var admissionTicket: UInt64 { get set }
    /// Loop: the admission lets the work start now, counted as running.
    /// Returns false when the work no longer wants to start (every cell
    /// waiting for it is leaving): it is then not counted.
    func admitted() -> Bool
}

/// The limits of a loader's jobs: how many run at once, and a token bucket
/// on how fast they start.
public struct LoaderLimits: Sendable, Equatable {
    /// The most jobs that run at once; 0 for no limit.
    public var maxConcurrent: UInt32
    /// Jobs started per second, on average; 0 for no limit.
    public var ratePerSecond: UInt32
    /// Jobs that may start at once after a pause (the bucket's size); 0 is 1.
    public var burst: UInt32

    public init(maxConcurrent: UInt32 = 0, ratePerSecond: UInt32 = 0, burst: UInt32 = 0) {
        self.maxConcurrent = maxConcurrent
        self.ratePerSecond = ratePerSecond
        self.burst = burst
    }

    /// Whether no limit applies.
    public var isUnlimited: Bool { maxConcurrent == 0 && ratePerSecond == 0 }
}

/// Admission of jobs under `LoaderLimits`: a job starts at once while the
/// limits allow it, otherwise it waits in a queue, higher priority first
/// and in arrival order within one priority, until a running job ends or
/// the token bucket refills (a timer on the loop, not a poll).
///
/// Lifecycle: made with its loop; used on the loop thread only; `close`
/// (loop thread) releases its timer, after which nothing waits.
///
/// Removing a waiting job (cancelled, superseded, timed out, freed) or
/// changing its priority leaves a dead entry behind, skipped when it comes
/// up; the queue is rebuilt without them when they outnumber the live ones.
public final class Admission: @unchecked Sendable {
    private struct Entry {
        var priority: Int32
        var ticket: UInt64

        /// Whether this entry comes out before `other`.
        func precedes(_ other: Entry) -> Bool {
            priority != other.priority ? priority > other.priority : ticket < other.ticket
        }
    }

    public let limits: LoaderLimits
    private unowned(unsafe) let loop: EventLoop

    // Loop thread only.
    /// Jobs counted as running.
    public private(set) var running = 0
    /// A binary heap of entries (dead ones among them); the waiters
    /// themselves are in `holders`.
    private var heap: [Entry] = []
    /// The live waiters, by ticket (what keeps them alive while they wait).
    private var holders: [UInt64: AdmissionWaiter] = [:]
    private var nextTicket: UInt64 = 1
    private var tokens: Double
    private var refilledAtNs: UInt64 = 0
    private var timer: LoopTimer?
    private var timerArmed = false
    private var pumpScheduled = false
    private var closed = false

    public init(limits: LoaderLimits, loop: EventLoop) {
        self.limits = limits
        self.loop = loop
        tokens = Double(max(limits.burst, 1))
    }

    /// How many jobs wait.
    public var waiting: Int { holders.count }

    private var capacity: Double { Double(max(limits.burst, 1)) }

    private var hasRoom: Bool { limits.maxConcurrent == 0 || running < Int(limits.maxConcurrent) }

    private func refill() {
        guard limits.ratePerSecond > 0 else { return }
        let now = uv_hrtime()
        if refilledAtNs != 0 && now > refilledAtNs {
            let gained = Double(now - refilledAtNs) / 1e9 * Double(limits.ratePerSecond)
            tokens = min(capacity, tokens + gained)
        }
        refilledAtNs = now
    }

    private var hasToken: Bool {
        limits.ratePerSecond == 0 || tokens >= 1
    }

    /// Loop: whether a job asking now would wait.
    func mustWait() -> Bool {
        refill()
        return !holders.isEmpty || !hasRoom || !hasToken
    }

    /// Loop: counts a job as running if it may start now (nothing waits,
    /// there is room and a token); otherwise the caller queues it.
    func tryStart() -> Bool {
        guard !mustWait() else { return false }
        take()
        return true
    }

    private func take() {
        if limits.ratePerSecond > 0 { tokens -= 1 }
        running += 1
    }

    /// Loop: queues a job that may not start yet.
    func enqueue(_ waiter: AdmissionWaiter, priority: Int32) {
        let ticket = nextTicket
        nextTicket &+= 1
        waiter.admissionTicket = ticket
        holders[ticket] = waiter
        push(Entry(priority: priority, ticket: ticket))
        schedulePump()
    }

    /// Loop: gives a waiting job another priority; it goes behind the jobs
    /// already waiting at that priority.
    func reprioritize(_ waiter: AdmissionWaiter, priority: Int32) {
        guard waiter.admissionTicket != 0 else { return }
        remove(waiter)
        enqueue(waiter, priority: priority)
    }

    /// Loop: takes a waiting job out of the queue; it will not start.
    func remove(_ waiter: AdmissionWaiter) {
        let ticket = waiter.admissionTicket
        guard ticket != 0 else { return }
        waiter.admissionTicket = 0
        holders[ticket] = nil
        if holders.isEmpty {
            heap = []
            closeTimer()
        } else if heap.count > 64 && heap.count > 2 * holders.count {
            compact()
        }
    }

    /// Loop: a job counted as running ended.
    func ended() {
        running -= 1
        if !holders.isEmpty { schedulePump() }
    }

    /// Loop: stops admitting; jobs still waiting never start.
    public func close() {
        closed = true
        closeTimer()
        heap = []
        holders = [:]
    }

    /// The timer exists only while jobs wait (they keep the admission
    /// alive), so that it never outlives the admission.
    private func closeTimer() {
        timer?.close()
        timer = nil
        timerArmed = false
    }

    private func schedulePump() {
        guard !pumpScheduled, !closed, hasRoom else { return }
        pumpScheduled = true
        loop.afterCurrent { [self] in pump() }
    }

    /// Starts waiting jobs while the limits allow.
    private func pump() {
        pumpScheduled = false
        while !closed, !holders.isEmpty, hasRoom {
            refill()
            guard hasToken else {
                armTimer()
                return
            }
            guard let waiter = popLive() else { return }
            take()
            if !waiter.admitted() {
                running -= 1
                if limits.ratePerSecond > 0 { tokens += 1 }
            }
        }
        if holders.isEmpty { closeTimer() }
    }

    /// Wakes the queue when the next token is due.
    private func armTimer() {
        guard !timerArmed, !closed, limits.ratePerSecond > 0 else { return }
        let missing = max(1 - tokens, 0)
        let ms = UInt64((missing / Double(limits.ratePerSecond) * 1000).rounded(.up))
        timerArmed = true
        let t: LoopTimer
        if let timer {
            t = timer
        } else {
            t = LoopTimer(loop: loop.loop)
            timer = t
        }
        t.start(after: max(ms, 1)) { [weak self] in
            self?.timerArmed = false
            self?.pump()
        }
    }

    // MARK: - Heap

    private func popLive() -> AdmissionWaiter? {
        while let top = heap.first {
            let last = heap.removeLast()
            if !heap.isEmpty {
                heap[0] = last
                siftDown(0)
            }
            guard let waiter = holders.removeValue(forKey: top.ticket) else { continue }
            waiter.admissionTicket = 0
            return waiter
        }
        return nil
    }

    private func push(_ entry: Entry) {
        heap.append(entry)
        var i = heap.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard heap[i].precedes(heap[parent]) else { break }
            heap.swapAt(i, parent)
            i = parent
        }
    }

    private func siftDown(_ start: Int) {
        var i = start
        while true {
            let left = 2 * i + 1
            let right = left + 1
            var best = i
            if left < heap.count && heap[left].precedes(heap[best]) { best = left }
            if right < heap.count && heap[right].precedes(heap[best]) { best = right }
            if best == i { return }
            heap.swapAt(i, best)
            i = best
        }
    }

    /// Drops the dead entries and rebuilds the heap.
    private func compact() {
        heap.removeAll { holders[$0.ticket] == nil }
        var i = heap.count / 2
        while i > 0 {
            i -= 1
            siftDown(i)
        }
    }
}

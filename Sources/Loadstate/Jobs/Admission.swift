import CLibUV

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
/// A waiting job is held as its `Start`: a closure made where the job's
/// types are known, so that starting it runs specialized code. Its entry
/// is named by a ticket. Removing a waiting job (cancelled, superseded,
/// timed out, freed) or changing its priority leaves a dead entry behind,
/// skipped when it comes up; the queue is rebuilt without them when they
/// outnumber the live ones.
public final class Admission: @unchecked Sendable {
    /// Loop: starts a waiting job, counted as running. Returns false when
    /// the job no longer wants to start (every cell waiting for it is
    /// leaving): it is then not counted.
    typealias Start = () -> Bool

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
    /// A binary heap of entries (dead ones among them); the waiting jobs
    /// themselves are in `holders`.
    private var heap: [Entry] = []
    /// The live waiting jobs, by ticket (what keeps them alive while they wait).
    private var holders: [UInt64: Start] = [:]
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

    /// Loop: takes back a `tryStart` whose job did not start after all.
    func untake() {
        if limits.ratePerSecond > 0 { tokens = min(capacity, tokens + 1) }
        running -= 1
        if !holders.isEmpty { schedulePump() }
    }

    private func take() {
        if limits.ratePerSecond > 0 { tokens -= 1 }
        running += 1
    }

    /// Loop: queues a job that may not start yet; returns its ticket.
    func enqueue(priority: Int32, _ start: @escaping Start) -> UInt64 {
        let ticket = nextTicket
        nextTicket &+= 1
        holders[ticket] = start
        push(Entry(priority: priority, ticket: ticket))
        schedulePump()
        return ticket
    }

    /// Loop: gives the waiting job of `ticket` another priority; it goes
    /// behind the jobs already waiting at that priority. Returns its new
    /// ticket (0 when it was not waiting).
    func reprioritize(ticket: UInt64, priority: Int32) -> UInt64 {
        guard let start = holders.removeValue(forKey: ticket) else { return 0 }
        return enqueue(priority: priority, start)
    }

    /// Loop: takes the waiting job of `ticket` out of the queue; it will not start.
    func remove(ticket: UInt64) {
        guard holders.removeValue(forKey: ticket) != nil else { return }
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
            guard let start = popLive() else { return }
            take()
            if !start() {
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

    private func popLive() -> Start? {
        while let top = heap.first {
            let last = heap.removeLast()
            if !heap.isEmpty {
                heap[0] = last
                siftDown(0)
            }
            guard let start = holders.removeValue(forKey: top.ticket) else { continue }
            return start
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

import CLibUV

/// The limits of a loader's jobs: how many run at once, and a token bucket
/// on how fast they start.
@usableFromInline package struct LoaderLimits: Sendable, Equatable {
    /// The most jobs that run at once; 0 for no limit.
    @usableFromInline package var maxConcurrent: UInt32
    /// Jobs started per second, on average; 0 for no limit.
    @usableFromInline package var ratePerSecond: UInt32
    /// Jobs that may start at once after a pause (the bucket's size); 0 is 1.
    @usableFromInline package var burst: UInt32

    @usableFromInline package init(maxConcurrent: UInt32 = 0, ratePerSecond: UInt32 = 0, burst: UInt32 = 0) {
        self.maxConcurrent = maxConcurrent
        self.ratePerSecond = ratePerSecond
        self.burst = burst
    }

    /// Whether no limit applies.
    @usableFromInline package var isUnlimited: Bool { maxConcurrent == 0 && ratePerSecond == 0 }
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
/// is named by a ticket, which the job keeps while it waits. Removing a
/// waiting job (cancelled, superseded, timed out, freed) or changing its
/// priority leaves a dead entry behind (the job no longer holds its
/// ticket), skipped when it comes up; the queue is swept of them when
/// they outnumber the live ones. An entry costs 24 bytes (see
/// `WaitQueue`); its closure's context is the job itself; nothing else is
/// kept per waiting job.
final class Admission: @unchecked Sendable {
    enum Call {
        case probe, start
        /// For the inspector: returns whether the job is one of the
        /// sink's loader, and then fills the sink if it asks.
        case inspect(InspectionSink)
    }

    /// What `Call.inspect` reports a waiting job into (loop thread).
    final class InspectionSink {
        let loader: UInt64
        let nowMs: UInt64
        /// Whether the next matching job should fill `inspection`.
        var wants = true
        var inspection: JobInspection?

        init(loader: UInt64, nowMs: UInt64) {
            self.loader = loader
            self.nowMs = nowMs
        }
    }

    /// Loop: called with an entry's ticket. nil when the job no longer
    /// waits under that ticket (a dead entry). Otherwise `probe` returns
    /// true and does nothing; `start` starts the job, counted as running,
    /// and returns true, or false when the job no longer wants to start
    /// (every cell waiting for it is leaving): it is then not counted;
    /// `inspect` is answered as `Call.inspect` says. The closure is all an
    /// entry holds of its job (no reference for the inspector beside it):
    /// 24 bytes an entry.
    typealias Start = (_ ticket: UInt64, _ call: Call) -> Bool?

    let limits: LoaderLimits
    private unowned(unsafe) let loop: EventLoop

    // Loop thread only.
    /// Jobs counted as running.
    private(set) var running = 0
    /// The waiting jobs' entries, dead ones among them; their closures
    /// keep the jobs alive.
    private var queue = WaitQueue()
    /// How many jobs wait (live entries).
    private var live = 0
    private var nextTicket: UInt64 = 1
    private var tokens: Double
    private var refilledAtNs: UInt64 = 0
    private var timer: LoopTimer?
    private var timerArmed = false
    private var pumpScheduled = false
    private var closed = false

    init(limits: LoaderLimits, loop: EventLoop) {
        self.limits = limits
        self.loop = loop
        tokens = Double(max(limits.burst, 1))
    }

    /// How many jobs wait.
    var waiting: Int { live }

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
        return live > 0 || !hasRoom || !hasToken
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
        if live > 0 { schedulePump() }
    }

    private func take() {
        if limits.ratePerSecond > 0 { tokens -= 1 }
        running += 1
    }

    /// Loop: queues a job that may not start yet; returns its ticket, which
    /// the job must keep while it waits (and drop when it stops waiting).
    func enqueue(priority: Int32, _ start: @escaping Start) -> UInt64 {
        let ticket = nextTicket
        nextTicket &+= 1
        live += 1
        queue.append(priority: priority, WaitQueue.Entry(ticket: ticket, start: start))
        schedulePump()
        return ticket
    }

    /// Loop: a waiting job no longer waits under the ticket it held (it was
    /// taken out of the queue, or is queued again under a new one).
    func remove() {
        live -= 1
        if live == 0 {
            queue.removeAll()
            closeTimer()
        } else if queue.count > 64 && queue.count > 2 * live {
            compact()
        }
    }

    /// Loop: a job counted as running ended.
    func ended() {
        running -= 1
        if live > 0 { schedulePump() }
    }

    /// Loop: stops admitting; jobs still waiting never start.
    func close() {
        closed = true
        closeTimer()
        queue.removeAll()
        live = 0
    }

    /// The timer exists only while jobs wait (they keep the admission
    /// alive), so that it never outlives the admission.
    private func closeTimer() {
        timer?.close()
        timer = nil
        timerArmed = false
    }

    /// Schedules one `pump` after the current work item, whatever number
    /// of jobs end meanwhile. The closure keeps the admission alive until
    /// it runs; it holds no weak reference, because a weak reference gives
    /// the admission a side table, which makes every retain and release of
    /// it (one per job) take the runtime's slow path.
    private func schedulePump() {
        guard !pumpScheduled, !closed, hasRoom else { return }
        pumpScheduled = true
        loop.afterCurrent { [self] in pump() }
    }

    /// Starts waiting jobs while the limits allow.
    private func pump() {
        pumpScheduled = false
        while !closed, live > 0, hasRoom {
            refill()
            guard hasToken else {
                armTimer()
                return
            }
            guard let entry = queue.popFirst() else { break }
            // Counted as started before the call (the job may end inside
            // it); one call, where a probe first would take two.
            live -= 1
            take()
            let started = entry.start(entry.ticket, .start)
            if started != true {
                running -= 1
                if limits.ratePerSecond > 0 { tokens += 1 }
                // A dead entry: its job no longer waits under this ticket,
                // and was not counted as waiting.
                if started == nil { live += 1 }
            }
        }
        if live == 0 {
            queue.removeAll()
            closeTimer()
        }
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

    /// Loop: the jobs of the loader `loader` that wait, the first `limit`
    /// of them in the order they would start, and how many wait in all.
    func waitingJobs(of loader: UInt64, limit: Int, nowMs: UInt64) -> (first: [JobInspection], total: Int) {
        var first: [JobInspection] = []
        var total = 0
        let sink = InspectionSink(loader: loader, nowMs: nowMs)
        queue.forEachInOrder { entry in
            sink.wants = first.count < limit
            sink.inspection = nil
            guard entry.start(entry.ticket, .inspect(sink)) == true else { return }
            total += 1
            if let inspection = sink.inspection { first.append(inspection) }
        }
        return (first, total)
    }

    /// Drops the dead entries.
    private func compact() {
        queue.removeAll { $0.start($0.ticket, .probe) == nil }
    }
}

import Synchronization

/// A cell whose load (or retry) waits for the runtime to be online.
protocol OnlineWaiter: AnyObject {
    /// Loop thread: the runtime is online again.
    func onlineResumed()
}

/// A cell that may refresh when the runtime returns to the foreground.
protocol ForegroundTarget: AnyObject {
    /// Loop thread: the runtime returned to the foreground at `nowMs`
    /// (wall clock).
    func foregrounded(nowMs: UInt64)
}

/// The host's signals: whether the runtime is online and in the
/// foreground, and the loads that wait for it to be online.
///
/// Both start true. The host's view (`online`, `foreground`) changes on
/// the calling thread, at once; the loop's view (`isOnline`,
/// `isForeground`) when the loop applies the change, in call order.
/// Loop thread only, apart from the atomics.
final class HostSignals: @unchecked Sendable {
    private let onlineFlag = Atomic<Bool>(true)
    private let foregroundFlag = Atomic<Bool>(true)
    private let pausedNowCount = Atomic<UInt64>(0)
    private let pausedTotalCount = Atomic<UInt64>(0)

    /// Loop thread: the signals as the loop applies them.
    private(set) var isOnline = true
    private(set) var isForeground = true
    /// The loads waiting to be online, each with its place in the order
    /// they began to wait (so that leaving costs O(1), however many wait).
    private var waiting: [ObjectIdentifier: (place: UInt64, waiter: OnlineWaiter)] = [:]
    private var places: UInt64 = 0

    /// Any thread: the last value the host set.
    var online: Bool { onlineFlag.load(ordering: .acquiring) }
    var foreground: Bool { foregroundFlag.load(ordering: .acquiring) }
    /// Any thread: loads waiting to be online now, and since the runtime began.
    var pausedNow: UInt64 { pausedNowCount.load(ordering: .relaxed) }
    var pausedTotal: UInt64 { pausedTotalCount.load(ordering: .relaxed) }

    /// Any thread: records the host's online value; true when it changed
    /// (the loop must then apply it).
    func exchangeOnline(_ value: Bool) -> Bool {
        onlineFlag.exchange(value, ordering: .acquiringAndReleasing) != value
    }

    /// Any thread: as `exchangeOnline`, for the foreground.
    func exchangeForeground(_ value: Bool) -> Bool {
        foregroundFlag.exchange(value, ordering: .acquiringAndReleasing) != value
    }

    /// Loop: whether a load (or retry) with `mode` must wait or fail now
    /// instead of calling its loader.
    func holdsLoad(_ mode: OfflineMode) -> Bool {
        !isOnline && mode != .run
    }

    /// Loop: whether a poll of a load with these options must wait now.
    func holdsPoll(_ options: LoadOptions) -> Bool {
        holdsLoad(options.offlineMode) || (!isForeground && !options.pollsInBackground)
    }

    /// Loop: `waiter` waits to be online.
    func park(_ waiter: OnlineWaiter) {
        let key = ObjectIdentifier(waiter)
        guard waiting[key] == nil else { return }
        places &+= 1
        waiting[key] = (places, waiter)
        pausedNowCount.store(UInt64(waiting.count), ordering: .relaxed)
        pausedTotalCount.add(1, ordering: .relaxed)
    }

    /// Loop: `waiter` no longer waits (its load ended otherwise).
    func unpark(_ waiter: OnlineWaiter) {
        guard waiting.removeValue(forKey: ObjectIdentifier(waiter)) != nil else { return }
        pausedNowCount.store(UInt64(waiting.count), ordering: .relaxed)
    }

    /// Loop: applies an online value; going online resumes every waiting
    /// load, in the order they began to wait.
    func applyOnline(_ value: Bool) {
        guard value != isOnline else { return }
        isOnline = value
        guard value else { return }
        let due = waiting.values.sorted { $0.place < $1.place }.map(\.waiter)
        waiting = [:]
        pausedNowCount.store(0, ordering: .relaxed)
        for waiter in due { waiter.onlineResumed() }
    }

    /// Loop: applies a foreground value; returns whether the runtime
    /// returned to the foreground.
    func applyForeground(_ value: Bool) -> Bool {
        guard value != isForeground else { return false }
        isForeground = value
        return value
    }
}

extension Runtime {
    /// Whether the host said the runtime is online (the default). Any thread.
    public var isOnline: Bool { hostSignals.online }

    /// Whether the host said the runtime is in the foreground (the default). Any thread.
    public var isForeground: Bool { hostSignals.foreground }

    /// Any thread, never blocks, calls nothing at once: tells the runtime
    /// whether the host is online. Offline, a load's loader is not called
    /// (unless its `OfflineMode` is `.run`): a load or retry waits (flagged
    /// paused) or fails with `ResultCode.offline`, and polls wait; online
    /// again, they start. Setting the current value changes nothing.
    public func setOnline(_ online: Bool) {
        guard hostSignals.exchangeOnline(online) else { return }
        loop.execute { [self] in
            hostSignals.applyOnline(online)
            if online { pollControl.recheck() }
        }
    }

    /// Any thread, never blocks, calls nothing at once: tells the runtime
    /// whether the host is in the foreground. In the background, polls
    /// wait (unless their load polls in the background); back in the
    /// foreground, they run, and cells whose load refreshes on foreground
    /// refresh if their value is stale. Setting the current value changes
    /// nothing.
    public func setForeground(_ foreground: Bool) {
        guard hostSignals.exchangeForeground(foreground) else { return }
        loop.execute { [self] in
            guard hostSignals.applyForeground(foreground) else { return }
            pollControl.recheck()
            let nowMs = Clock.wallMs()
            for case let target as ForegroundTarget in table.all() {
                target.foregrounded(nowMs: nowMs)
            }
        }
    }
}

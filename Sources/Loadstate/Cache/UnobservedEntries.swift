/// Which keys of a memory cache cells observe, and when the grace of the
/// others ends (see `MemoryCache.Options.unobservedMs`).
///
/// An entry's grace starts at the later of its put and the moment the last
/// cell observing its key stopped. Keys that may be due are queued in the
/// order they became candidates, each key at most once; a sweep pops the
/// keys whose time has come and asks the cache to check their entries, and
/// a key whose grace was pushed back (by a later put) is queued again.
///
/// Not thread-safe: `MemoryCache` keeps it under its lock.
struct UnobservedEntries {
    /// How many cells observe each observed key.
    private var observers: [[UInt8]: Int] = [:]
    /// When the last observer of a key stopped, for keys not observed now.
    private var releasedAt: [[UInt8]: UInt64] = [:]
    /// Candidates: a key and the earliest time its entry may be dropped.
    private var queue: [(key: [UInt8], due: UInt64)] = []
    private var head = 0
    private var queued: Set<[UInt8]> = []

    /// Whether any cell observes `key`.
    func isObserved(_ key: [UInt8]) -> Bool { observers[key] != nil }

    /// Whether an entry under `key` stored at `storedAt` is past its
    /// grace at `now`.
    func isPastGrace(_ key: [UInt8], storedAt: UInt64, now: UInt64, graceMs: UInt64) -> Bool {
        guard observers[key] == nil else { return false }
        return Self.due(start: max(storedAt, releasedAt[key] ?? 0), graceMs: graceMs) <= now
    }

    /// A cell observes `key` from now on.
    mutating func observe(_ key: [UInt8]) {
        observers[key, default: 0] += 1
        releasedAt[key] = nil
    }

    /// A cell stopped observing `key` at `now`.
    mutating func release(_ key: [UInt8], now: UInt64, graceMs: UInt64) {
        guard let count = observers[key] else { return }
        if count > 1 {
            observers[key] = count - 1
            return
        }
        observers[key] = nil
        releasedAt[key] = now
        enqueue(key, due: Self.due(start: now, graceMs: graceMs))
    }

    /// An entry was stored under `key` at `now`.
    mutating func stored(_ key: [UInt8], now: UInt64, graceMs: UInt64) {
        guard observers[key] == nil else { return }
        enqueue(key, due: Self.due(start: now, graceMs: graceMs))
    }

    /// Pops the candidates due at `now`, in order, and passes each key to
    /// `check` with when its grace started (nil: observed again since, to
    /// be skipped). `check` returns the entry's storage time, or nil when
    /// the key has no entry; the key is queued again when that time pushes
    /// its grace past `now`. Returns the keys whose grace had passed, for
    /// the cache to drop.
    mutating func popDue(now: UInt64, graceMs: UInt64, storedAt: ([UInt8]) -> UInt64?) -> [[UInt8]] {
        var expired: [[UInt8]] = []
        while head < queue.count, queue[head].due <= now {
            let key = queue[head].key
            head += 1
            queued.remove(key)
            guard observers[key] == nil else { continue }
            guard let stored = storedAt(key) else {
                releasedAt[key] = nil
                continue
            }
            let due = Self.due(start: max(stored, releasedAt[key] ?? 0), graceMs: graceMs)
            if due <= now {
                releasedAt[key] = nil
                expired.append(key)
            } else {
                enqueue(key, due: due)
            }
        }
        if head > 64 && head * 2 > queue.count {
            queue.removeFirst(head)
            head = 0
        }
        return expired
    }

    /// Forgets everything (the cache was closed).
    mutating func removeAll() {
        self = UnobservedEntries()
    }

    private mutating func enqueue(_ key: [UInt8], due: UInt64) {
        guard queued.insert(key).inserted else { return }
        queue.append((key, due))
    }

    private static func due(start: UInt64, graceMs: UInt64) -> UInt64 {
        let (sum, overflow) = start.addingReportingOverflow(graceMs)
        return overflow ? .max : sum
    }
}

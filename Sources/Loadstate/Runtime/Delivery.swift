import CLibUV
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The queue of host callbacks in `DeliveryMode.poll`.
///
/// The loop thread posts callbacks; the host's thread runs them with
/// `dispatch`. An eventfd is readable exactly while callbacks are pending,
/// so hosts can watch it with poll, epoll or an asyncio reader.
///
/// Each callback is either a notification (cell events, loader starts),
/// dropped when the runtime closes, or a cleanup (cancel callbacks,
/// releasing host data), which `drainCleanups` still runs at close.
public final class Delivery: @unchecked Sendable {
    public enum Kind { case notification, cleanup }

    private struct Pending {
        var items: [(Kind, () -> Void)] = []
        var head = 0
        var count: Int { items.count - head }
    }

    public let mode: DeliveryMode
    /// POLL mode: readable while callbacks are pending; -1 in LOOP mode.
    public let fd: Int32
    private let pending = Locked(Pending())
    private let dispatching = Atomic<Bool>(false)
    private let dispatchThread = Atomic<UInt>(0)

    public init(mode: DeliveryMode) throws(ResultCode) {
        self.mode = mode
        if mode == .poll {
            let fd = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
            guard fd >= 0 else { throw .io }
            self.fd = fd
        } else {
            fd = -1
        }
    }

    deinit {
        if fd >= 0 { close(fd) }
    }

    /// Whether the calling thread is inside `dispatch`.
    public var isDispatchThread: Bool {
        dispatching.load(ordering: .acquiring) && dispatchThread.load(ordering: .relaxed) == UInt(pthread_self())
    }

    /// POLL mode: queues a callback for `dispatch`.
    public func post(_ kind: Kind, _ body: @escaping () -> Void) {
        pending.withLock { p in
            p.items.append((kind, body))
            if p.count == 1 { signal() }
        }
    }

    /// Runs up to `max` pending callbacks (all when `max <= 0`) on the
    /// calling thread, in order; returns how many ran.
    public func dispatch(max: Int) throws(ResultCode) -> Int {
        guard mode == .poll else { throw .wrongState }
        guard dispatching.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else {
            throw .wrongState
        }
        dispatchThread.store(UInt(pthread_self()), ordering: .relaxed)
        defer {
            dispatchThread.store(0, ordering: .relaxed)
            dispatching.store(false, ordering: .releasing)
        }
        var ran = 0
        while max <= 0 || ran < max {
            let limit = max <= 0 ? Int.max : max - ran
            let batch = take(limit)
            if batch.isEmpty { break }
            for (_, body) in batch { body() }
            ran += batch.count
        }
        return ran
    }

    /// At close, after the loop thread has stopped: runs the cleanups still
    /// queued and drops the notifications.
    public func drainCleanups() {
        let all = take(Int.max)
        for (kind, body) in all where kind == .cleanup { body() }
    }

    private func take(_ limit: Int) -> [(Kind, () -> Void)] {
        pending.withLock { p in
            let n = Swift.min(limit, p.count)
            if n == 0 { return [] }
            let batch = Array(p.items[p.head..<(p.head + n)])
            p.head += n
            if p.count == 0 {
                p.items.removeAll(keepingCapacity: true)
                p.head = 0
                unsignal()
            } else if p.head > 4096 && p.head * 2 > p.items.count {
                p.items.removeFirst(p.head)
                p.head = 0
            }
            return batch
        }
    }

    private func signal() {
        var one: UInt64 = 1
        _ = write(fd, &one, 8)
    }

    private func unsignal() {
        var value: UInt64 = 0
        _ = read(fd, &value, 8)
    }
}

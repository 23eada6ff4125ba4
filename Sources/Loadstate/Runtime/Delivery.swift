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
@usableFromInline package final class Delivery: @unchecked Sendable {
    @usableFromInline package enum Kind { case notification, cleanup }

    /// What writing a delivery as a record into a host's buffer did.
    @usableFromInline package enum RecordOutcome {
        /// Wrote this many bytes.
        case written(Int)
        /// Nothing to deliver any more (its cell was freed, its job ended).
        case skipped
        /// The record needs this many bytes, more than were left.
        case needs(Int)
    }

    /// Writes a delivery as a record at the start of the buffer.
    @usableFromInline package typealias RecordWriter = (UnsafeMutableRawBufferPointer) -> RecordOutcome

    /// What `dispatchRecords` did.
    @usableFromInline package struct RecordsResult {
        /// Deliveries taken: records written, callbacks run, deliveries skipped.
        @usableFromInline package var handled = 0
        /// Bytes of records written.
        @usableFromInline package var used = 0
        /// When nothing was taken because the first record did not fit: its size.
        @usableFromInline package var needed = 0
    }

    private typealias Item = (kind: Kind, body: () -> Void, record: RecordWriter?)

    private struct Pending {
        var items: [Item] = []
        var head = 0
        /// Set at close when the descriptor is kept open (see
        /// `keepDescriptorOpen`): it is drained and never signalled again.
        var retired = false
        var count: Int { items.count - head }
    }

    @usableFromInline package let mode: DeliveryMode
    /// POLL mode: readable while callbacks are pending; -1 in LOOP mode.
    @usableFromInline package let fd: Int32
    private let pending = Locked(Pending())
    private let dispatching = Atomic<Bool>(false)
    private let dispatchThread = Atomic<UInt>(0)

    @usableFromInline package init(mode: DeliveryMode) throws(ResultCode) {
        self.mode = mode
        if mode == .poll {
            let fd = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
            guard fd >= 0 else { throw .io }
            self.fd = fd
        } else {
            fd = -1
        }
    }

    /// Whether the descriptor outlives the runtime (`LDS_RUNTIME_KEEP_FD`).
    private let keepsDescriptor = Atomic<Bool>(false)

    /// POLL mode: the descriptor is not closed with the runtime; the host
    /// closes it once it has stopped watching it. At close it is drained and
    /// never signalled again, so it stays valid and never readable: a host
    /// that frees the runtime before removing its watch sees a quiet
    /// descriptor rather than a closed one (which poll reports as ready
    /// forever, or which the next open reuses). An eventfd has no other
    /// writer, so once drained under the queue's lock with `retired` set,
    /// nothing makes it readable again.
    @usableFromInline package func keepDescriptorOpen() {
        keepsDescriptor.store(true, ordering: .relaxed)
    }

    deinit {
        if fd >= 0 && !keepsDescriptor.load(ordering: .relaxed) { close(fd) }
    }

    /// Whether the calling thread is inside `dispatch`.
    @usableFromInline package var isDispatchThread: Bool {
        dispatching.load(ordering: .acquiring) && dispatchThread.load(ordering: .relaxed) == UInt(pthread_self())
    }

    /// POLL mode: queues a callback for `dispatch`. `record`, when given,
    /// writes the same delivery as data for `dispatchRecords`.
    @usableFromInline package func post(_ kind: Kind, record: RecordWriter? = nil, _ body: @escaping () -> Void) {
        pending.withLock { p in
            // After close with a kept descriptor nothing is delivered.
            if p.retired { return }
            p.items.append((kind, body, record))
            if p.count == 1 { signal() }
        }
    }

    /// Runs up to `max` pending callbacks (all when `max <= 0`) on the
    /// calling thread, in order; returns how many ran.
    /// Set when the runtime begins to close: a dispatch under way returns
    /// after its current batch (at most 1,024 deliveries), so that a free
    /// does not wait for it to run a backlog the close drops anyway.
    private let stopping = Atomic<Bool>(false)

    /// The runtime begins to close (see `stopping`).
    @usableFromInline package func stopDispatching() {
        stopping.store(true, ordering: .relaxed)
    }

    @usableFromInline package func dispatch(max: Int) throws(ResultCode) -> Int {
        try exclusively { () throws(ResultCode) in
            var ran = 0
            while (max <= 0 || ran < max) && !stopping.load(ordering: .relaxed) {
                let limit = max <= 0 ? Int.max : max - ran
                let batch = take(Swift.min(limit, 1024))
                if batch.isEmpty { break }
                for item in batch { item.body() }
                ran += batch.count
            }
            return ran
        }
    }

    /// Takes pending deliveries in order, at most `max` (no limit when
    /// `max <= 0`): those that can be written as records are written one
    /// after another into `buffer`, the others run as callbacks. Stops
    /// before a callback once a record has been written (so the host sees
    /// the records first), and before a record that does not fit.
    @usableFromInline package func dispatchRecords(into buffer: UnsafeMutableRawBufferPointer, max: Int) throws(ResultCode) -> RecordsResult {
        try exclusively { () throws(ResultCode) in
            var result = RecordsResult()
            let limit = max <= 0 ? Int.max : max
            while result.handled < limit && !stopping.load(ordering: .relaxed) {
                let batch = take(Swift.min(limit - result.handled, 256))
                if batch.isEmpty { break }
                var i = 0
                while i < batch.count {
                    let item = batch[i]
                    if let record = item.record {
                        let room = UnsafeMutableRawBufferPointer(rebasing: buffer[result.used...])
                        switch record(room) {
                        case .written(let n):
                            result.used += n
                        case .skipped:
                            break
                        case .needs(let n):
                            if result.handled == 0 { result.needed = n }
                            putBack(batch[i...])
                            return result
                        }
                    } else {
                        if result.used > 0 {
                            putBack(batch[i...])
                            return result
                        }
                        item.body()
                    }
                    result.handled += 1
                    i += 1
                }
            }
            return result
        }
    }

    /// Runs `body` as the one dispatcher of the moment, or throws
    /// `wrongState` (LOOP mode, or a concurrent or nested dispatch).
    private func exclusively<R>(_ body: () throws(ResultCode) -> R) throws(ResultCode) -> R {
        guard mode == .poll else { throw .wrongState }
        guard dispatching.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else {
            throw .wrongState
        }
        dispatchThread.store(UInt(pthread_self()), ordering: .relaxed)
        defer {
            dispatchThread.store(0, ordering: .relaxed)
            dispatching.store(false, ordering: .releasing)
        }
        return try body()
    }

    /// Returns deliveries taken but not handled to the front of the queue.
    private func putBack(_ items: ArraySlice<Item>) {
        guard !items.isEmpty else { return }
        pending.withLock { p in
            if p.count == 0 && !p.retired { signal() }
            p.items.replaceSubrange(p.head..<p.head, with: items)
        }
    }

    /// At close, after the loop thread has stopped: runs the cleanups still
    /// queued and drops the notifications.
    @usableFromInline package func drainCleanups() {
        let all = take(Int.max)
        for item in all where item.kind == .cleanup { item.body() }
        guard fd >= 0 && keepsDescriptor.load(ordering: .relaxed) else { return }
        // Kept descriptor: drop whatever a cleanup queued, drain the counter
        // and refuse later posts, all under the lock `signal` runs under.
        pending.withLock { p in
            p.retired = true
            p.items.removeAll()
            p.head = 0
            unsignal()
        }
    }

    private func take(_ limit: Int) -> [Item] {
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

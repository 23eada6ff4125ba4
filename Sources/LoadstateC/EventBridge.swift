import CLoadstateABI
@_spi(LoadstateC) import Loadstate
#if canImport(Glibc)
import Glibc
#endif

/// The C status of a core status, by flavor.
func cStatus(_ status: Status, _ flavor: CellFlavor) -> Int32 {
    switch (status, flavor) {
    case (.absent, .loadable): return LDS_ABSENT
    case (.loading, .loadable): return LDS_LOADING
    case (.loaded, .loadable): return LDS_LOADED
    case (.error, .loadable): return LDS_ERROR
    case (.absent, .process): return LDS_IDLE
    case (.loading, .process): return LDS_RUNNING
    case (.loaded, .process): return LDS_FINISHED
    case (.error, .process): return LDS_FAILED
    }
}

func cFlags<Value, Request>(_ event: CellEvent<Value, Request>) -> UInt32 {
    var flags: UInt32 = 0
    if event.state.isRefreshing { flags |= UInt32(LDS_FLAG_REFRESHING) }
    if event.state.isPartial { flags |= UInt32(LDS_FLAG_PARTIAL) }
    if event.isCancelled { flags |= UInt32(LDS_FLAG_CANCELLED) }
    if event.state.isFromCache { flags |= UInt32(LDS_FLAG_FROM_CACHE) }
    if event.state.isStale { flags |= UInt32(LDS_FLAG_STALE) }
    if event.state.isQueued { flags |= UInt32(LDS_FLAG_QUEUED) }
    if event.state.isRevalidated { flags |= UInt32(LDS_FLAG_REVALIDATED) }
    if event.state.isOptimistic { flags |= UInt32(LDS_FLAG_OPTIMISTIC) }
    if event.isRolledBack { flags |= UInt32(LDS_FLAG_ROLLED_BACK) }
    if event.isWithoutValue { flags |= UInt32(LDS_FLAG_NO_VALUE) }
    if event.state.isPrevious { flags |= UInt32(LDS_FLAG_PREVIOUS) }
    if event.state.isPlaceholder { flags |= UInt32(LDS_FLAG_PLACEHOLDER) }
    if event.state.isPaused { flags |= UInt32(LDS_FLAG_PAUSED) }
    return flags
}

/// An event's fields as an `lds_event`, without its three pointers (an
/// event of any cell's types: the runtime observer sees Swift cells too).
func cEventFields<Value, Request>(_ event: CellEvent<Value, Request>, flavor: CellFlavor) -> lds_event {
    let state = event.state
    var c = lds_event()
    c.type = event.type.rawValue
    c.cell = event.cell
    c.seq = event.seq
    c.status = cStatus(state.status, flavor)
    c.kind = state.kind
    c.flags = cFlags(event)
    c.attempt = state.attempt
    c.elapsed_ms = event.elapsedMs
    c.progress_done = event.progressDone
    c.progress_total = event.progressTotal
    c.updated_at_ms = state.updatedAt
    if let error = state.error {
        c.error_domain = error.domain.rawValue
        c.error_code = error.code
    }
    return c
}

/// Calls `body` with an `lds_event` whose pointers are valid during the call.
func withCEvent(_ event: CellEvent<Bytes, Bytes>, flavor: CellFlavor, _ body: (UnsafePointer<lds_event>) -> Void) {
    let state = event.state
    var c = cEventFields(event, flavor: flavor)
    withBytes(state.value) { value, valueLength in
        withBytes(state.request) { request, requestLength in
            withOptionalCString(state.error?.message) { message in
                c.value = value
                c.value_len = valueLength
                c.request = request
                c.request_len = requestLength
                c.error_message = message
                withUnsafePointer(to: &c) { body($0) }
            }
        }
    }
}

private func withBytes(_ bytes: Bytes?, _ body: (UnsafeRawPointer?, Int) -> Void) {
    guard let bytes else { return body(nil, 0) }
    if bytes.isEmpty { return body(UnsafeRawPointer(emptyByte), 0) }
    bytes.withUnsafeBytes { body($0.baseAddress, $0.count) }
}

private func withOptionalCString(_ string: String?, _ body: (UnsafePointer<CChar>?) -> Void) {
    guard let string else { return body(nil) }
    string.withCString { body($0) }
}

/// Copies an event into a snapshot the caller owns.
func fillSnapshot(_ out: UnsafeMutablePointer<lds_snapshot>, from event: CellEvent<Bytes, Bytes>,
                  flavor: CellFlavor) -> ResultCode {
    var snap = lds_snapshot()
    let state = event.state
    snap.type = event.type.rawValue
    snap.cell = event.cell
    snap.seq = event.seq
    snap.status = cStatus(state.status, flavor)
    snap.kind = state.kind
    snap.flags = cFlags(event)
    snap.attempt = state.attempt
    snap.elapsed_ms = event.elapsedMs
    snap.progress_done = event.progressDone
    snap.progress_total = event.progressTotal
    snap.updated_at_ms = state.updatedAt
    if let value = state.value {
        guard let copy = mallocCopy(value) else { return .outOfMemory }
        snap.value = copy
        snap.value_len = value.count
    }
    if let request = state.request {
        guard let copy = mallocCopy(request) else {
            free(snap.value)
            return .outOfMemory
        }
        snap.request = copy
        snap.request_len = request.count
    }
    if let error = state.error {
        snap.error_domain = error.domain.rawValue
        snap.error_code = error.code
        if let message = error.message {
            guard let copy = strdup(message) else {
                free(snap.value)
                free(snap.request)
                return .outOfMemory
            }
            snap.error_message = copy
        }
    }
    out.pointee = snap
    return .ok
}

/// A malloc'd copy (at least one byte, so an empty value is not NULL).
private func mallocCopy(_ bytes: Bytes) -> UnsafeMutableRawPointer? {
    guard let memory = malloc(max(bytes.count, 1)) else { return nil }
    bytes.withUnsafeBytes { source in
        if let base = source.baseAddress { memcpy(memory, base, source.count) }
    }
    return memory
}

/// The observer of a C cell: turns core events into `lds_event` calls on
/// the delivery thread, skipping them once the cell is freed.
func makeObserver(callback: lds_event_fn, userData: UnsafeMutableRawPointer?, flavor: CellFlavor,
                  runtime: Runtime) -> CellObserver<Bytes, Bytes> {
    if runtime.delivery.mode == .loop {
        return CObserver(callback: callback, userData: userData, flavor: flavor)
    }
    return PollObserver(callback: callback, userData: userData, flavor: flavor, delivery: runtime.delivery)
}

/// LOOP mode: calls the host's callback at once, on the loop thread. (33
/// bytes: a field more would take the object to the next heap size.)
private class CObserver: CellObserver<Bytes, Bytes> {
    let callback: lds_event_fn
    let userData: UnsafeMutableRawPointer?
    let flavor: CellFlavor

    init(callback: lds_event_fn, userData: UnsafeMutableRawPointer?, flavor: CellFlavor) {
        self.callback = callback
        self.userData = userData
        self.flavor = flavor
    }

    override func cellEvent(_ cell: ByteCell, _ event: CellEvent<Bytes, Bytes>) {
        report(event)
    }

    /// Calls the host's callback with `event` as an `lds_event`.
    final func report(_ event: CellEvent<Bytes, Bytes>) {
        let callback = callback, userData = userData
        withCEvent(event, flavor: flavor) { callback($0, userData) }
    }
}

/// POLL mode: posts the event for the host's dispatching thread, as a
/// callback or as a record.
private final class PollObserver: CObserver {
    let delivery: Delivery

    init(callback: lds_event_fn, userData: UnsafeMutableRawPointer?, flavor: CellFlavor, delivery: Delivery) {
        self.delivery = delivery
        super.init(callback: callback, userData: userData, flavor: flavor)
    }

    override func cellEvent(_ cell: ByteCell, _ event: CellEvent<Bytes, Bytes>) {
        let flavor = flavor, userData = userData
        delivery.post(.notification, record: { room in
            guard !cell.isFreed else { return .skipped }
            return writeEventRecord(event, flavor: flavor, userData: userData, into: room)
        }) {
            guard !cell.isFreed else { return }
            self.report(event)
        }
    }
}

import CLoadstateABI
@_spi(LoadstateC) import Loadstate
#if canImport(Glibc)
import Glibc
#endif

/// Infinite loads: pages cells, and the loader's side of a page.

/// A live pages cell, or nil.
private func findPages(_ runtime: Runtime, _ id: UInt64) -> PagesCell? {
    runtime.table.lookup(id, as: PagesCell.self)
}

/// Finds a live pages cell for a call that queues work for the loop.
private func withPagesQueueing(_ rt: OpaquePointer?, _ id: UInt64, _ body: (PagesCell) -> Int32) -> Int32 {
    withRuntime(rt) { runtime in
        guard let cell = findPages(runtime, id) else { return LDS_ENOENT }
        guard runtime.acceptsQueuedWork else { return LDS_EAGAIN }
        return body(cell)
    }
}

/// The flags a pages event adds to its page's own.
private func extraFlags(_ flags: PagesCell.Flags) -> UInt32 {
    var out: UInt32 = 0
    if flags.contains(.previous) { out |= UInt32(LDS_FLAG_PAGE_PREVIOUS) }
    if flags.contains(.dropped) { out |= UInt32(LDS_FLAG_PAGES_DROPPED) }
    if flags.contains(.loadStart) { out |= UInt32(LDS_FLAG_PAGES_LOAD) }
    return out
}

/// Reports a pages cell's events to the host's callback: at once on the
/// loop thread (LOOP delivery), or posted for the dispatching thread.
private final class CPagesObserver: PagesObserver {
    let callback: lds_event_fn
    let userData: UnsafeMutableRawPointer?
    let delivery: Delivery?

    init(callback: lds_event_fn, userData: UnsafeMutableRawPointer?, delivery: Delivery?) {
        self.callback = callback
        self.userData = userData
        self.delivery = delivery
        super.init()
    }

    override func pagesEvent(_ cell: PagesCell, _ event: CellEvent<Bytes, Bytes>, flags: PagesCell.Flags) {
        let extra = extraFlags(flags)
        guard let delivery else { return report(event, extra) }
        let userData = userData
        delivery.post(.notification, record: { room in
            guard !cell.isFreed else { return .skipped }
            let outcome = writeEventRecord(event, flavor: .loadable, userData: userData, into: room)
            if case .written = outcome, let base = room.baseAddress {
                base.bindMemory(to: lds_record.self, capacity: 1).pointee.event.flags |= extra
            }
            return outcome
        }) { [self] in
            guard !cell.isFreed else { return }
            report(event, extra)
        }
    }

    private func report(_ event: CellEvent<Bytes, Bytes>, _ extra: UInt32) {
        let callback = callback, userData = userData
        withCEvent(event, flavor: .loadable) { pointer in
            var c = pointer.pointee
            c.flags |= extra
            withUnsafePointer(to: &c) { callback($0, userData) }
        }
    }
}

@_cdecl("lds_pages_new")
public func ldsPagesNew(_ rt: OpaquePointer?, _ opts: UnsafePointer<lds_pages_options>?,
                        _ out: UnsafeMutablePointer<UInt64>?) -> Int32 {
    guard let opts, let out else { return LDS_EINVAL }
    let (options, size) = readSized(opts)
    guard size >= MemoryLayout<lds_pages_options>.size, let onEvent = options.on_event,
          options.max_pages <= UInt32(LDS_PAGES_MAX) else { return LDS_EINVAL }
    let name: String?
    switch copyName(options.name) {
    case .failure(let code): return code.rawValue
    case .success(let n): name = n
    }
    return withRuntime(rt) { runtime in
        let observer = CPagesObserver(callback: onEvent, userData: options.user_data,
                                      delivery: runtime.delivery.mode == .loop ? nil : runtime.delivery)
        let maxPages = options.max_pages == 0 ? Int(LDS_PAGES_MAX) : Int(options.max_pages)
        let cell = PagesCell(id: runtime.table.makeID(.loadable), runtime: runtime, maxPages: maxPages,
                             observer: observer)
        cell.name = name
        runtime.table.insert(cell)
        out.pointee = cell.id
        return LDS_OK
    }
}

@_cdecl("lds_pages_free")
public func ldsPagesFree(_ rt: OpaquePointer?, _ id: UInt64) -> Int32 {
    withRuntime(rt) { runtime in
        let removed = runtime.table.withLock { storage -> PagesCell? in
            guard let cell = storage.handles[id] as? PagesCell else { return nil }
            storage.handles[id] = nil
            return cell
        }
        guard let cell = removed else { return LDS_ENOENT }
        cell.askFree()
        return LDS_OK
    }
}

@_cdecl("lds_pages_load")
public func ldsPagesLoad(_ rt: OpaquePointer?, _ id: UInt64, _ loaderID: UInt64, _ request: UnsafeRawPointer?,
                         _ length: Int, _ opts: UnsafePointer<lds_load_options>?) -> Int32 {
    withRuntime(rt) { runtime in
        let options: LoadOptions
        let choice: CacheChoice?
        switch LoadOptions.from(opts) {
        case .success(let parsed): (options, choice) = parsed
        case .failure(let code): return code.rawValue
        }
        let bytes: Bytes
        switch copyBytes(request, length) {
        case .success(let b): bytes = b
        case .failure(let code): return code.rawValue
        }
        guard runtime.acceptsQueuedWork else { return LDS_EAGAIN }
        let flags = opts?.pointee.flags ?? 0
        let found = runtime.table.withLock { storage -> (PagesCell, PagesCell.Base)? in
            guard let cell = storage.handles[id] as? PagesCell,
                  let loader = storage.handles[loaderID] as? ByteLoader else { return nil }
            var cache: CacheUse<Bytes>?
            if let choice {
                guard let store = storage.handles[choice.id] as? any CacheStore else { return nil }
                cache = CacheUse(store: store, key: choice.key ?? bytes, policy: choice.policy,
                                 freshMs: choice.freshMs, maxAgeMs: choice.maxAgeMs,
                                 followsLoaderRules: choice.followsLoaderRules)
            }
            return (cell, PagesCell.Base(loader: loader, request: bytes, options: options,
                                         share: flags & UInt32(LDS_LOAD_SHARE) != 0, cache: cache,
                                         deliversProgress: flags & UInt32(LDS_LOAD_NO_PROGRESS) == 0))
        }
        guard let (cell, base) = found else { return LDS_ENOENT }
        cell.askLoad(base)
        return LDS_OK
    }
}

@_cdecl("lds_pages_load_next")
public func ldsPagesLoadNext(_ rt: OpaquePointer?, _ id: UInt64) -> Int32 {
    withPagesQueueing(rt, id) { $0.askMore(forward: true).rawValue }
}

@_cdecl("lds_pages_load_previous")
public func ldsPagesLoadPrevious(_ rt: OpaquePointer?, _ id: UInt64) -> Int32 {
    withPagesQueueing(rt, id) { $0.askMore(forward: false).rawValue }
}

@_cdecl("lds_pages_refresh")
public func ldsPagesRefresh(_ rt: OpaquePointer?, _ id: UInt64) -> Int32 {
    withPagesQueueing(rt, id) { $0.askRefresh().rawValue }
}

@_cdecl("lds_pages_cancel")
public func ldsPagesCancel(_ rt: OpaquePointer?, _ id: UInt64) -> Int32 {
    withPagesQueueing(rt, id) { cell in
        cell.askCancel()
        return LDS_OK
    }
}

@_cdecl("lds_pages_reset")
public func ldsPagesReset(_ rt: OpaquePointer?, _ id: UInt64) -> Int32 {
    withPagesQueueing(rt, id) { cell in
        cell.askReset()
        return LDS_OK
    }
}

@_cdecl("lds_pages_count")
public func ldsPagesCount(_ rt: OpaquePointer?, _ id: UInt64, _ out: UnsafeMutablePointer<Int>?) -> Int32 {
    guard let out else { return LDS_EINVAL }
    return withRuntime(rt) { runtime in
        guard let cell = findPages(runtime, id) else { return LDS_ENOENT }
        out.pointee = cell.withShared { $0.events.count }
        return LDS_OK
    }
}

@_cdecl("lds_pages_has_more")
public func ldsPagesHasMore(_ rt: OpaquePointer?, _ id: UInt64, _ direction: Int32) -> Int32 {
    guard direction == 1 || direction == -1 else { return LDS_EINVAL }
    return withRuntime(rt) { runtime in
        guard let cell = findPages(runtime, id) else { return LDS_ENOENT }
        return cell.withShared { direction == 1 ? $0.hasNext : $0.hasPrevious } ? 1 : 0
    }
}

@_cdecl("lds_pages_get")
public func ldsPagesGet(_ rt: OpaquePointer?, _ id: UInt64, _ index: Int,
                        _ out: UnsafeMutablePointer<lds_snapshot>?) -> Int32 {
    guard let out else { return LDS_EINVAL }
    out.pointee = lds_snapshot()
    return withRuntime(rt) { runtime in
        guard let cell = findPages(runtime, id) else { return LDS_ENOENT }
        let event = cell.withShared { s -> CellEvent<Bytes, Bytes>? in
            index >= 0 && index < s.events.count ? s.events[index] : nil
        }
        guard let event else { return LDS_ENOENT }
        return fillSnapshot(out, from: event, flavor: .loadable).rawValue
    }
}

@_cdecl("lds_page_request_decode")
public func ldsPageRequestDecode(_ request: UnsafeRawPointer?, _ length: Int,
                                 _ out: UnsafeMutablePointer<lds_page_request>?) -> Int32 {
    guard let out else { return LDS_EINVAL }
    out.pointee = lds_page_request()
    guard length >= 0, length == 0 || request != nil, let request else { return LDS_EINVAL }
    switch PageWire.layoutRequest(UnsafeRawBufferPointer(start: request, count: length)) {
    case .failure(let failure):
        return failure == .cursorTooBig ? LDS_ETOOBIG : LDS_EINVAL
    case .success(let layout):
        var r = lds_page_request()
        r.request = request + layout.request.lowerBound
        r.request_len = layout.request.count
        if let cursor = layout.cursor {
            r.cursor = request + cursor.lowerBound
            r.cursor_len = cursor.count
        }
        r.direction = layout.direction
        out.pointee = r
        return LDS_OK
    }
}

/// A cursor given to `lds_job_succeed_page`: nil for NULL (no page that way).
private func copyCursor(_ pointer: UnsafeRawPointer?, _ length: Int) -> Result<Bytes?, ResultCode> {
    guard let pointer else { return length == 0 ? .success(nil) : .failure(.invalidArgument) }
    guard length >= 0 else { return .failure(.tooBig) }
    guard length <= PageWire.cursorMax else { return .failure(.tooBig) }
    return .success(Bytes(UnsafeRawBufferPointer(start: pointer, count: length)))
}

@_cdecl("lds_job_succeed_page")
public func ldsJobSucceedPage(_ rt: OpaquePointer?, _ job: UInt64, _ value: UnsafeRawPointer?, _ length: Int,
                              _ next: UnsafeRawPointer?, _ nextLength: Int,
                              _ previous: UnsafeRawPointer?, _ previousLength: Int) -> Int32 {
    guard rt != nil else { return LDS_EINVAL }
    let bytes: Bytes
    switch copyBytes(value, length) {
    case .success(let b): bytes = b
    case .failure(let code): return code.rawValue
    }
    let cursors: (Bytes?, Bytes?)
    switch (copyCursor(next, nextLength), copyCursor(previous, previousLength)) {
    case (.success(let n), .success(let p)):
        cursors = (n, p)
    case (.failure(.tooBig), _), (_, .failure(.tooBig)):
        let error = LoadError(.tooBig, message: "a page's cursor is longer than LDS_CURSOR_MAX")
        let rc = withRuntime(rt) { runtime in
            runtime.submit(.fail(error, retry: .never), job: job, of: ByteJob.self).rawValue
        }
        return rc == LDS_OK ? LDS_ETOOBIG : rc
    case (.failure(let code), _), (_, .failure(let code)):
        return code.rawValue
    }
    let encoded = PageWire.encode(PageWire.Value(value: bytes, next: cursors.0, previous: cursors.1))
    return withRuntime(rt) { runtime in
        runtime.submit(.succeed(encoded), job: job, of: ByteJob.self).rawValue
    }
}

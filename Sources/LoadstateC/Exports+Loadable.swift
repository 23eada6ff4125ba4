import CLoadstateABI
@_spi(LoadstateC) import Loadstate
#if canImport(Glibc)
import Glibc
#endif

/// A live cell of the given flavor, or nil.
@inline(__always)
func findCell(_ runtime: Runtime, _ id: UInt64, _ flavor: CellFlavor) -> ByteCell? {
    guard let cell = runtime.table.lookup(id, as: ByteCell.self), cell.flavor == flavor else { return nil }
    return cell
}

/// Finds a live cell of the given flavor, for a call that queues work
/// for the loop: `LDS_EAGAIN` when the runtime's queue is full.
@inline(__always)
func withCellQueueing(_ rt: OpaquePointer?, _ id: UInt64, _ flavor: CellFlavor,
                      _ body: (Runtime, ByteCell) -> Int32) -> Int32 {
    withCell(rt, id, flavor) { runtime, cell in
        guard runtime.acceptsQueuedWork else { return LDS_EAGAIN }
        return body(runtime, cell)
    }
}

/// Finds a live cell of the given flavor.
@inline(__always)
func withCell(_ rt: OpaquePointer?, _ id: UInt64, _ flavor: CellFlavor,
              _ body: (Runtime, ByteCell) -> Int32) -> Int32 {
    withRuntime(rt) { runtime in
        guard let cell = findCell(runtime, id, flavor) else { return LDS_ENOENT }
        return body(runtime, cell)
    }
}

func newCell(_ rt: OpaquePointer?, _ flavor: CellFlavor, _ onEvent: lds_event_fn?,
             _ userData: UnsafeMutableRawPointer?, _ out: UnsafeMutablePointer<UInt64>?,
             name: String? = nil) -> Int32 {
    guard let onEvent, let out else { return LDS_EINVAL }
    return withRuntime(rt) { runtime in
        let id = runtime.table.makeID(flavor == .loadable ? .loadable : .process)
        let observer = makeObserver(callback: onEvent, userData: userData, flavor: flavor, runtime: runtime)
        let cell = ByteCell(id: id, flavor: flavor, runtime: runtime, observer: observer)
        cell.name = name
        runtime.table.insert(cell)
        out.pointee = id
        return LDS_OK
    }
}

/// A cell made from `lds_cell_options` (`lds_loadable_new_ex`,
/// `lds_process_new_ex`).
func newCell(_ rt: OpaquePointer?, _ flavor: CellFlavor, _ opts: UnsafePointer<lds_cell_options>?,
             _ out: UnsafeMutablePointer<UInt64>?) -> Int32 {
    guard let opts else { return LDS_EINVAL }
    let (options, size) = readSized(opts)
    guard size >= MemoryLayout<lds_cell_options>.size else { return LDS_EINVAL }
    switch copyName(options.name) {
    case .failure(let code): return code.rawValue
    case .success(let name): return newCell(rt, flavor, options.on_event, options.user_data, out, name: name)
    }
}

func freeCell(_ rt: OpaquePointer?, _ id: UInt64, _ flavor: CellFlavor) -> Int32 {
    withRuntime(rt) { runtime in
        let removed = runtime.table.withLock { storage -> ByteCell? in
            guard let cell = storage.handles[id] as? ByteCell, cell.flavor == flavor else { return nil }
            storage.handles[id] = nil
            return cell
        }
        guard let cell = removed else { return LDS_ENOENT }
        cell.markFreed()
        cell.leave(skippable: false) { $0.free() }
        return LDS_OK
    }
}

/// A load found and recorded under the table lock: its cell, its spec, and
/// the ticket the cell gave it (see `Cell.load(_:ticket:)`).
struct PreparedLoad {
    let cell: ByteCell
    let spec: LoadSpec<Bytes, Bytes>
    let ticket: UInt64
}

/// With the table lock held: finds a load's cell (of `flavor`), loader and
/// cache, and records the load on the cell; nil when one is not there.
func prepareLoadLocked(_ storage: inout HandleTable.Storage, cell id: UInt64, flavor: CellFlavor, loader loaderID: UInt64,
                       request: Bytes, kind: Int32, options: LoadOptions, choice: CacheChoice?,
                       share: Bool) -> PreparedLoad? {
    guard let cell = storage.handles[id] as? ByteCell, cell.flavor == flavor,
          let loader = storage.handles[loaderID] as? ByteLoader else { return nil }
    var options = options
    var cache: CacheUse<Bytes>?
    if let choice {
        guard let store = storage.handles[choice.id] as? any CacheStore else { return nil }
        cache = CacheUse(store: store, key: choice.key ?? request, policy: choice.policy,
                         freshMs: choice.freshMs, maxAgeMs: choice.maxAgeMs,
                         followsLoaderRules: choice.followsLoaderRules)
    }
    if share { options.shareKey = cache?.key ?? request }
    let ticket = cell.prepareLoadLocked(loader: loaderID)
    return PreparedLoad(cell: cell, spec: LoadSpec(loader: loader, request: request, kind: kind, options: options,
                                                   cache: cache), ticket: ticket)
}

func startLoad(_ rt: OpaquePointer?, _ id: UInt64, _ flavor: CellFlavor, _ kind: Int32, _ loaderID: UInt64,
               _ request: UnsafeRawPointer?, _ requestLength: Int, _ opts: UnsafePointer<lds_load_options>?,
               mutation write: MutationRun? = nil) -> Int32 {
    withRuntime(rt) { runtime in
        let options: LoadOptions
        let choice: CacheChoice?
        switch LoadOptions.from(opts) {
        case .success(let parsed): (options, choice) = parsed
        case .failure(let code): return code.rawValue
        }
        let placeholder: Bytes?
        switch LoadOptions.placeholder(opts) {
        case .success(let p): placeholder = p
        case .failure(let code): return code.rawValue
        }
        let bytes: Bytes
        switch copyBytes(request, requestLength) {
        case .success(let b): bytes = b
        case .failure(let code): return code.rawValue
        }
        // Process runs produce no value to cache.
        if flavor == .process && choice != nil { return LDS_EINVAL }
        guard runtime.acceptsQueuedWork else { return LDS_EAGAIN }
        let flags = opts?.pointee.flags ?? 0
        let share = flags & UInt32(LDS_LOAD_SHARE) != 0
        // One visit to the table: the cell, the loader, the cache, and what
        // the load records; it is queued under the same lock, so that the
        // loop runs the cell's operations in the order of their tickets.
        let queued = runtime.table.withLock { storage -> Bool in
            guard let found = prepareLoadLocked(&storage, cell: id, flavor: flavor, loader: loaderID,
                                                request: bytes, kind: kind, options: options, choice: choice,
                                                share: share) else { return false }
            if flags & UInt32(LDS_LOAD_NO_PROGRESS) != 0 { found.cell.deliversProgress = false }
            // The closure takes `found` whole: taking its fields apart would copy the spec.
            // Dropped unrun by a free of the runtime (see `EventLoop.executeSkippable`).
            if let write {
                var spec = found.spec
                if let placeholder, flavor == .loadable { spec.placeholder = placeholder }
                // A write (`lds_process_mutate`) shows its values before the run starts.
                runtime.loop.executeSkippable {
                    found.cell.runMutation(write) { found.cell.load(spec, ticket: found.ticket) }
                }
            } else if let placeholder, flavor == .loadable {
                var spec = found.spec
                spec.placeholder = placeholder
                runtime.loop.executeSkippable { found.cell.load(spec, ticket: found.ticket) }
            } else {
                runtime.loop.executeSkippable { found.cell.load(found.spec, ticket: found.ticket) }
            }
            return true
        }
        return queued ? LDS_OK : LDS_ENOENT
    }
}

@_cdecl("lds_loadable_new")
public func ldsLoadableNew(_ rt: OpaquePointer?, _ onEvent: lds_event_fn?, _ userData: UnsafeMutableRawPointer?,
                           _ out: UnsafeMutablePointer<UInt64>?) -> Int32 {
    newCell(rt, .loadable, onEvent, userData, out)
}

@_cdecl("lds_loadable_new_ex")
public func ldsLoadableNewEx(_ rt: OpaquePointer?, _ opts: UnsafePointer<lds_cell_options>?,
                             _ out: UnsafeMutablePointer<UInt64>?) -> Int32 {
    newCell(rt, .loadable, opts, out)
}

@_cdecl("lds_loadable_free")
public func ldsLoadableFree(_ rt: OpaquePointer?, _ cell: UInt64) -> Int32 {
    freeCell(rt, cell, .loadable)
}

@_cdecl("lds_loadable_load")
public func ldsLoadableLoad(_ rt: OpaquePointer?, _ cell: UInt64, _ loader: UInt64,
                            _ request: UnsafeRawPointer?, _ requestLength: Int,
                            _ opts: UnsafePointer<lds_load_options>?) -> Int32 {
    startLoad(rt, cell, .loadable, 0, loader, request, requestLength, opts)
}

@_cdecl("lds_loadable_refresh")
public func ldsLoadableRefresh(_ rt: OpaquePointer?, _ id: UInt64) -> Int32 {
    withCellQueueing(rt, id, .loadable) { runtime, cell in
        guard let loaderID = cell.refreshLoaderID else { return LDS_ESTATE }
        guard runtime.table.lookup(loaderID, as: ByteLoader.self) != nil else { return LDS_ENOENT }
        cell.queueLeaving { ticket in cell.refresh(ticket: ticket) }
        return LDS_OK
    }
}

@_cdecl("lds_loadable_cancel")
public func ldsLoadableCancel(_ rt: OpaquePointer?, _ id: UInt64) -> Int32 {
    withCellQueueing(rt, id, .loadable) { runtime, cell in
        cell.stop(reset: false)
        return LDS_OK
    }
}

@_cdecl("lds_loadable_reset")
public func ldsLoadableReset(_ rt: OpaquePointer?, _ id: UInt64) -> Int32 {
    withCellQueueing(rt, id, .loadable) { runtime, cell in
        cell.stop(reset: true)
        return LDS_OK
    }
}

@_cdecl("lds_loadable_set_loaded")
public func ldsLoadableSetLoaded(_ rt: OpaquePointer?, _ id: UInt64, _ value: UnsafeRawPointer?, _ length: Int) -> Int32 {
    withCellQueueing(rt, id, .loadable) { runtime, cell in
        switch copyBytes(value, length) {
        case .success(let bytes):
            cell.leave { $0.setLoaded(bytes) }
            return LDS_OK
        case .failure(let code):
            return code.rawValue
        }
    }
}

@_cdecl("lds_loadable_set_error")
public func ldsLoadableSetError(_ rt: OpaquePointer?, _ id: UInt64, _ code: Int32,
                                _ message: UnsafePointer<CChar>?) -> Int32 {
    withCellQueueing(rt, id, .loadable) { runtime, cell in
        switch copyMessage(message) {
        case .success(let text):
            let error = LoadError(domain: .host, code: code, message: text)
            cell.leave { $0.setError(error) }
            return LDS_OK
        case .failure(let rc):
            return rc.rawValue
        }
    }
}

@_cdecl("lds_loadable_get")
public func ldsLoadableGet(_ rt: OpaquePointer?, _ id: UInt64, _ out: UnsafeMutablePointer<lds_snapshot>?) -> Int32 {
    guard let out else { return LDS_EINVAL }
    out.pointee = lds_snapshot()
    return withCell(rt, id, .loadable) { runtime, cell in
        let event = cell.latestEvent
        return fillSnapshot(out, from: event, flavor: .loadable).rawValue
    }
}

@_cdecl("lds_snapshot_clear")
public func ldsSnapshotClear(_ snap: UnsafeMutablePointer<lds_snapshot>?) {
    guard let snap else { return }
    free(snap.pointee.value)
    free(snap.pointee.request)
    free(snap.pointee.error_message)
    snap.pointee = lds_snapshot()
}

/// Turns a cell's PROGRESS events on or off; takes effect at once, from any thread.
func setProgress(_ rt: OpaquePointer?, _ id: UInt64, _ flavor: CellFlavor, _ enabled: Int32) -> Int32 {
    withCell(rt, id, flavor) { _, cell in
        cell.deliversProgress = enabled != 0
        return LDS_OK
    }
}

@_cdecl("lds_loadable_set_progress")
public func ldsLoadableSetProgress(_ rt: OpaquePointer?, _ id: UInt64, _ enabled: Int32) -> Int32 {
    setProgress(rt, id, .loadable, enabled)
}

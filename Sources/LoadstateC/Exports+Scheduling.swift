import CLoadstateABI
@_spi(LoadstateC) import Loadstate

/// Gives a cell's load under way another priority, on the loop thread.
private func setPriority(_ rt: OpaquePointer?, _ id: UInt64, _ flavor: CellFlavor, _ priority: Int32) -> Int32 {
    withCellQueueing(rt, id, flavor) { runtime, cell in
        runtime.loop.execute { cell.setPriority(priority) }
        return LDS_OK
    }
}

@_cdecl("lds_loadable_set_priority")
public func ldsLoadableSetPriority(_ rt: OpaquePointer?, _ id: UInt64, _ priority: Int32) -> Int32 {
    setPriority(rt, id, .loadable, priority)
}

@_cdecl("lds_process_set_priority")
public func ldsProcessSetPriority(_ rt: OpaquePointer?, _ id: UInt64, _ priority: Int32) -> Int32 {
    setPriority(rt, id, .process, priority)
}

@_cdecl("lds_runtime_pause_polling")
public func ldsRuntimePausePolling(_ rt: OpaquePointer?) -> Int32 {
    withRuntime(rt) { runtime in
        guard runtime.acceptsQueuedWork else { return LDS_EAGAIN }
        runtime.pausePolling()
        return LDS_OK
    }
}

@_cdecl("lds_runtime_resume_polling")
public func ldsRuntimeResumePolling(_ rt: OpaquePointer?) -> Int32 {
    withRuntime(rt) { runtime in
        guard runtime.acceptsQueuedWork else { return LDS_EAGAIN }
        runtime.resumePolling()
        return LDS_OK
    }
}

@_cdecl("lds_prefetch")
public func ldsPrefetch(_ rt: OpaquePointer?, _ loaderID: UInt64, _ request: UnsafeRawPointer?, _ requestLength: Int,
                        _ opts: UnsafePointer<lds_load_options>?) -> Int32 {
    withRuntime(rt) { runtime in
        var options: LoadOptions
        let choice: CacheChoice
        switch LoadOptions.from(opts) {
        case .success(let parsed):
            guard let cache = parsed.1 else { return LDS_EINVAL }
            (options, choice) = (parsed.0, cache)
        case .failure(let code): return code.rawValue
        }
        let bytes: Bytes
        switch copyBytes(request, requestLength) {
        case .success(let b): bytes = b
        case .failure(let code): return code.rawValue
        }
        if options.priority == 0 { options.priority = Int32(LDS_PRIORITY_PREFETCH) }
        options.silent = false
        guard runtime.acceptsQueuedWork else { return LDS_EAGAIN }
        let spec = runtime.table.withLock { storage -> LoadSpec<Bytes, Bytes>? in
            guard let loader = storage.handles[loaderID] as? ByteLoader,
                  let store = storage.handles[choice.id] as? any CacheStore else { return nil }
            let cache = CacheUse<Bytes>(store: store, key: choice.key ?? bytes, policy: choice.policy,
                                        freshMs: choice.freshMs, maxAgeMs: choice.maxAgeMs)
            return LoadSpec(loader: loader, request: bytes, options: options, cache: cache)
        }
        guard let spec else { return LDS_ENOENT }
        runtime.prefetch(spec)
        return LDS_OK
    }
}

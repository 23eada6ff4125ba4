import CLoadstateABI
@_spi(LoadstateC) import Loadstate

@_cdecl("lds_process_mutate")
public func ldsProcessMutate(_ rt: OpaquePointer?, _ cell: UInt64, _ kind: Int32, _ loader: UInt64,
                             _ request: UnsafeRawPointer?, _ requestLength: Int,
                             _ opts: UnsafePointer<lds_load_options>?,
                             _ mutation: UnsafePointer<lds_mutation_options>?) -> Int32 {
    guard let mutation else { return startLoad(rt, cell, .process, kind, loader, request, requestLength, opts) }
    return withRuntime(rt) { runtime in
        switch mutationRun(runtime, mutation) {
        case .failure(let code): return code.rawValue
        case .success(let run): return startLoad(rt, cell, .process, kind, loader, request, requestLength, opts,
                                                 mutation: run)
        }
    }
}

/// The write `lds_mutation_options` describes, every field checked and
/// every buffer copied (see `lds_process_mutate` for the codes).
private func mutationRun(_ runtime: Runtime, _ pointer: UnsafePointer<lds_mutation_options>)
    -> Result<MutationRun, ResultCode> {
    let (c, size) = readSized(pointer)
    guard size >= MemoryLayout<lds_mutation_options>.size,
          c.flags & ~UInt32(LDS_MUTATE_POPULATE) == 0,
          c.optimistic_count <= mutationKeysMax, c.invalidate_count <= mutationKeysMax,
          c.optimistic != nil || c.optimistic_count == 0, c.invalidate != nil || c.invalidate_count == 0
    else { return .failure(.invalidArgument) }
    var updates: [MutationRun.Update] = []
    var invalidations: [MutationRun.Invalidation] = []
    if let items = c.optimistic {
        for item in UnsafeBufferPointer(start: items, count: c.optimistic_count) {
            guard let store = cacheStore(runtime, item.cache) else { return .failure(.notFound) }
            switch (copyBytes(item.key, item.key_len), copyBytes(item.value, item.value_len)) {
            case (.failure(let rc), _), (_, .failure(let rc)): return .failure(rc)
            case (.success(let key), .success(let value)):
                updates.append(MutationRun.Update(store: store, key: key, value: value))
            }
        }
    }
    if let items = c.invalidate {
        for item in UnsafeBufferPointer(start: items, count: c.invalidate_count) {
            guard let store = cacheStore(runtime, item.cache) else { return .failure(.notFound) }
            switch copyBytes(item.prefix, item.prefix_len) {
            case .failure(let rc): return .failure(rc)
            case .success(let prefix): invalidations.append(MutationRun.Invalidation(store: store, prefix: prefix))
            }
        }
    }
    return .success(MutationRun(updates: updates, invalidations: invalidations,
                                populates: c.flags & UInt32(LDS_MUTATE_POPULATE) != 0))
}

/// The memory, persistent or Redis cache `id` of `runtime`, if it is one.
private func cacheStore(_ runtime: Runtime, _ id: UInt64) -> (any CacheStore)? {
    guard let handle = runtime.table.lookup(id, as: Handle.self) else { return nil }
    if let cache = handle as? MemoryCache { return cache }
    if let cache = handle as? PersistentCache { return cache }
    return handle as? RedisCache
}

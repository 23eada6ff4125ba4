import CLoadstateABI
@_spi(LoadstateC) import Loadstate

@_cdecl("lds_cache_invalidate")
public func ldsCacheInvalidate(_ rt: OpaquePointer?, _ id: UInt64, _ prefix: UnsafeRawPointer?,
                               _ prefixLength: Int) -> Int32 {
    withRuntime(rt) { runtime in
        let bytes: Bytes
        switch copyBytes(prefix, prefixLength) {
        case .success(let b): bytes = b
        case .failure(let code): return code.rawValue
        }
        guard let store = runtime.table.lookup(id, as: Handle.self) as? any CacheStore else { return LDS_ENOENT }
        guard runtime.acceptsQueuedWork else { return LDS_EAGAIN }
        do throws(CacheError) {
            try runtime.invalidate(store, prefix: bytes)
            return LDS_OK
        } catch {
            return error.code.rawValue
        }
    }
}

import CLoadstateABI
import Loadstate

@_cdecl("lds_loader_new")
public func ldsLoaderNew(_ rt: OpaquePointer?, _ start: lds_loader_fn?, _ loaderData: UnsafeMutableRawPointer?,
                         _ freeData: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?,
                         _ out: UnsafeMutablePointer<UInt64>?) -> Int32 {
    guard let rt, let start, let out else { return LDS_EINVAL }
    return withRuntime(rt) { runtime in
        let loader = HostLoader(id: runtime.table.makeID(.loader), runtime: rt, start: start,
                                data: loaderData, freeData: freeData)
        runtime.table.insert(loader)
        out.pointee = loader.id
        return LDS_OK
    }
}

@_cdecl("lds_loader_free")
public func ldsLoaderFree(_ rt: OpaquePointer?, _ id: UInt64) -> Int32 {
    withRuntime(rt) { runtime in
        let removed = runtime.table.withLock { storage -> ByteLoader? in
            guard let loader = storage.handles[id] as? ByteLoader else { return nil }
            storage.handles[id] = nil
            return loader
        }
        guard let loader = removed else { return LDS_ENOENT }
        runtime.loop.execute { loader.retire(runtime: runtime) }
        return LDS_OK
    }
}

import CLoadstateABI
@_spi(LoadstateC) import Loadstate

/// Makes a host loader and stores its id in `out`.
private func newHostLoader(_ rt: OpaquePointer, start: lds_loader_fn, cancel: HostCancelFunction?,
                           data: UnsafeMutableRawPointer?,
                           freeData: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?,
                           out: UnsafeMutablePointer<UInt64>) -> Int32 {
    withRuntime(rt) { runtime in
        let loader = HostLoader(id: runtime.table.makeID(.loader), runtime: rt, start: start, cancel: cancel,
                                data: data, freeData: freeData)
        runtime.table.insert(loader)
        out.pointee = loader.id
        return LDS_OK
    }
}

@_cdecl("lds_loader_new")
public func ldsLoaderNew(_ rt: OpaquePointer?, _ start: lds_loader_fn?, _ loaderData: UnsafeMutableRawPointer?,
                         _ freeData: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?,
                         _ out: UnsafeMutablePointer<UInt64>?) -> Int32 {
    guard let rt, let start, let out else { return LDS_EINVAL }
    return newHostLoader(rt, start: start, cancel: nil, data: loaderData, freeData: freeData, out: out)
}

@_cdecl("lds_loader_new_ex")
public func ldsLoaderNewEx(_ rt: OpaquePointer?, _ opts: UnsafePointer<lds_loader_options>?,
                           _ out: UnsafeMutablePointer<UInt64>?) -> Int32 {
    guard let rt, let opts, let out, Int(opts.pointee.size) >= MemoryLayout<lds_loader_options>.size,
          let start = opts.pointee.start else { return LDS_EINVAL }
    let options = opts.pointee
    return newHostLoader(rt, start: start, cancel: options.cancel, data: options.loader_data,
                         freeData: options.free_data, out: out)
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

import CLoadstateABI
@_spi(LoadstateC) import Loadstate

/// Makes a host loader and stores its id in `out`.
private func newHostLoader(_ rt: OpaquePointer, start: lds_loader_fn, cancel: HostCancelFunction?,
                           data: UnsafeMutableRawPointer?,
                           freeData: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?,
                           limits: LoaderLimits = LoaderLimits(), name: String? = nil,
                           out: UnsafeMutablePointer<UInt64>) -> Int32 {
    withRuntime(rt) { runtime in
        let loader = HostLoader(id: runtime.table.makeID(.loader), runtime: rt, start: start, cancel: cancel,
                                data: data, freeData: freeData)
        loader.name = name
        loader.limit(limits, loop: runtime.loop)
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
    guard let rt, let opts, let out else { return LDS_EINVAL }
    // The first version of the struct ended with loader_data; the limits
    // of a caller whose size ends before them read as 0 (none).
    let (options, size) = readSized(opts)
    let firstVersionSize = MemoryLayout<lds_loader_options>.offset(of: \lds_loader_options.max_concurrent)
        ?? MemoryLayout<lds_loader_options>.size
    guard size >= firstVersionSize, let start = options.start else { return LDS_EINVAL }
    let limits = LoaderLimits(maxConcurrent: options.max_concurrent, ratePerSecond: options.rate_per_s,
                              burst: options.burst)
    // Past a caller's size (before 0.5) the name reads as NULL: none.
    let name: String?
    switch copyName(options.name) {
    case .failure(let code): return code.rawValue
    case .success(let value): name = value
    }
    return newHostLoader(rt, start: start, cancel: options.cancel, data: options.loader_data,
                         freeData: options.free_data, limits: limits, name: name, out: out)
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

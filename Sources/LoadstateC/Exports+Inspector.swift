import CLoadstateABI
@_spi(LoadstateC) import Loadstate
#if canImport(Glibc)
import Glibc
#endif

@_cdecl("lds_inspector_start")
public func ldsInspectorStart(_ rt: OpaquePointer?, _ address: UnsafePointer<CChar>?,
                              _ opts: UnsafePointer<lds_inspector_options>?) -> Int32 {
    guard let address, strnlen(address, 256) < 256 else { return LDS_EINVAL }
    var options = InspectorOptions()
    if let opts {
        let (c, size) = readSized(opts)
        guard size >= MemoryLayout<lds_inspector_options>.size else { return LDS_EINVAL }
        let known = UInt32(LDS_INSPECTOR_SHOW_VALUES) | UInt32(LDS_INSPECTOR_ACTIONS) | UInt32(LDS_INSPECTOR_ALLOW_REMOTE)
        guard c.flags & ~known == 0, c.max_clients <= 256, c.max_cells <= 10_000,
              c.interval_ms == 0 || (c.interval_ms >= 50 && c.interval_ms <= 60_000) else { return LDS_EINVAL }
        options.showValues = c.flags & UInt32(LDS_INSPECTOR_SHOW_VALUES) != 0
        options.actions = c.flags & UInt32(LDS_INSPECTOR_ACTIONS) != 0
        options.allowRemote = c.flags & UInt32(LDS_INSPECTOR_ALLOW_REMOTE) != 0
        if c.max_clients != 0 { options.maxClients = Int(c.max_clients) }
        if c.interval_ms != 0 { options.intervalMs = UInt64(c.interval_ms) }
        if c.idle_timeout_ms != 0 { options.idleTimeoutMs = UInt64(c.idle_timeout_ms) }
        if c.max_cells != 0 { options.maxCells = Int(c.max_cells) }
    }
    let text = String(cString: address)
    return withRuntime(rt) { runtime in
        switch runtime.startInspector(address: text, options: options) {
        case .success: return LDS_OK
        case .failure(let code): return code.rawValue
        }
    }
}

@_cdecl("lds_inspector_url")
public func ldsInspectorURL(_ rt: OpaquePointer?, _ buf: UnsafeMutablePointer<CChar>?, _ cap: Int,
                            _ len: UnsafeMutablePointer<Int>?) -> Int32 {
    guard let len, buf != nil || cap == 0, cap >= 0 else { return LDS_EINVAL }
    len.pointee = 0
    if let buf, cap > 0 { buf[0] = 0 }
    return withRuntime(rt) { runtime in
        guard let url = runtime.inspectorURL() else { return LDS_ENOENT }
        return copyOut(url, buf, cap, len)
    }
}

@_cdecl("lds_inspector_stop")
public func ldsInspectorStop(_ rt: OpaquePointer?) -> Int32 {
    withRuntime(rt) { runtime in
        runtime.stopInspector().rawValue
    }
}

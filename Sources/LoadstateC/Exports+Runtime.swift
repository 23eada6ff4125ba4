import CLoadstateABI
import Loadstate

@_cdecl("lds_runtime_new")
public func ldsRuntimeNew(_ opts: UnsafePointer<lds_runtime_options>?,
                          _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let out else { return LDS_EINVAL }
    var mode = DeliveryMode.loop
    var spin: UInt32 = 0
    if let opts {
        guard opts.pointee.size >= 8 else { return LDS_EINVAL }
        guard let chosen = DeliveryMode(rawValue: opts.pointee.delivery) else { return LDS_EINVAL }
        mode = chosen
        if opts.pointee.size >= 12 {
            spin = opts.pointee.spin_us
            guard spin <= 100_000 else { return LDS_EINVAL }
        }
    }
    do {
        let runtime = try Runtime(delivery: mode, spinMicroseconds: spin)
        out.pointee = RuntimeHandle.make(runtime)
        return LDS_OK
    } catch {
        return error.rawValue
    }
}

@_cdecl("lds_runtime_free")
public func ldsRuntimeFree(_ rt: OpaquePointer?) -> Int32 {
    guard let rt else { return LDS_EINVAL }
    return RuntimeHandle.from(rt).close()
}

@_cdecl("lds_runtime_fd")
public func ldsRuntimeFd(_ rt: OpaquePointer?) -> Int32 {
    withRuntime(rt) { runtime in
        runtime.delivery.mode == .poll ? runtime.delivery.fd : LDS_ESTATE
    }
}

@_cdecl("lds_runtime_dispatch")
public func ldsRuntimeDispatch(_ rt: OpaquePointer?, _ maxEvents: Int32) -> Int32 {
    withRuntime(rt) { runtime in
        do throws(ResultCode) {
            let ran = try runtime.delivery.dispatch(max: Int(maxEvents))
            return Int32(clamping: ran)
        } catch {
            return error.rawValue
        }
    }
}

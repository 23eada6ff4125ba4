import CLoadstateABI
@_spi(LoadstateC) import Loadstate

@_cdecl("lds_runtime_new")
public func ldsRuntimeNew(_ opts: UnsafePointer<lds_runtime_options>?,
                          _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let out else { return LDS_EINVAL }
    var mode = DeliveryMode.loop
    var spin: UInt32 = 0
    var queueMax = Runtime.defaultQueueLimit
    var metrics = true
    var keepFd = false
    if let opts {
        // Fields past the caller's size read as 0: their defaults.
        let (c, size) = readSized(opts)
        guard size >= 8 else { return LDS_EINVAL }
        guard let chosen = DeliveryMode(rawValue: c.delivery) else { return LDS_EINVAL }
        mode = chosen
        spin = c.spin_us
        guard spin <= 100_000 else { return LDS_EINVAL }
        if c.queue_max != 0 {
            guard c.queue_max <= LDS_QUEUE_MAX_LIMIT else { return LDS_EINVAL }
            queueMax = Int(c.queue_max)
        }
        let known = UInt32(LDS_RUNTIME_NO_METRICS) | UInt32(LDS_RUNTIME_KEEP_FD)
        guard c.flags & ~known == 0 else { return LDS_EINVAL }
        metrics = c.flags & UInt32(LDS_RUNTIME_NO_METRICS) == 0
        keepFd = c.flags & UInt32(LDS_RUNTIME_KEEP_FD) != 0
        // Only POLL mode has a descriptor: the flag in LOOP mode is a
        // mistake worth reporting rather than ignoring.
        guard !keepFd || mode == .poll else { return LDS_EINVAL }
    }
    do {
        let runtime = try Runtime(delivery: mode, spinMicroseconds: spin, queueLimit: queueMax, metrics: metrics)
        if keepFd { runtime.delivery.keepDescriptorOpen() }
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

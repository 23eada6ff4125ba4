import CLoadstateABI
import Loadstate

/// The most interrupt delays one load may have.
let maxInterrupts = 64

extension LoadOptions {
    /// Reads a caller's `lds_load_options`, field by field as far as its
    /// `size` reaches, so that callers built against an older header work.
    static func from(_ pointer: UnsafePointer<lds_load_options>?) -> Result<LoadOptions, ResultCode> {
        var options = LoadOptions()
        guard let pointer else { return .success(options) }
        let c = pointer.pointee
        let size = Int(c.size)
        guard size >= MemoryLayout<lds_load_options>.size else { return .failure(.invalidArgument) }
        let knownFlags = UInt32(LDS_LOAD_SILENT) | UInt32(LDS_LOAD_SHARE)
        guard c.flags & ~knownFlags == 0 else { return .failure(.invalidArgument) }
        options.silent = c.flags & UInt32(LDS_LOAD_SILENT) != 0
        options.timeoutMs = c.timeout_ms
        if c.interrupt_count > 0 {
            guard let delays = c.interrupts_ms, c.interrupt_count <= maxInterrupts else {
                return .failure(.invalidArgument)
            }
            options.interruptsMs = Array(UnsafeBufferPointer(start: delays, count: c.interrupt_count))
        }
        options.retries = c.retries
        if c.retry_base_ms > 0 { options.retryBaseMs = c.retry_base_ms }
        if c.retry_max_ms > 0 { options.retryMaxMs = c.retry_max_ms }
        if options.retryBaseMs > options.retryMaxMs { options.retryBaseMs = options.retryMaxMs }
        return .success(options)
    }
}

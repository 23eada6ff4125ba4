import CLibUV

/// A one-shot `uv_timer_t` on the runtime's loop.
///
/// Lifecycle: created and used on the loop thread only; `start` arms it
/// (re-arming replaces the previous action), `stop` disarms it, `close`
/// releases the libuv handle (its memory is freed in the close callback).
/// A closed timer must not be used again.
final class LoopTimer {
    private let handle: UnsafeMutablePointer<uv_timer_t>
    private let loop: UnsafeMutablePointer<uv_loop_t>
    private var action: (() -> Void)?
    private var closed = false

    init(loop: UnsafeMutablePointer<uv_loop_t>, action: (() -> Void)? = nil) {
        self.action = action
        self.loop = loop
        handle = .allocate(capacity: 1)
        uv_timer_init(loop, handle)
        handle.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    /// Runs `action` once, `ms` milliseconds from now (measured from now,
    /// not from the loop's cached time).
    func start(after ms: UInt64, _ action: @escaping () -> Void) {
        guard !closed else { return }
        self.action = action
        restart(after: ms)
    }

    /// Runs the last action given to `start` once, `ms` milliseconds from
    /// now; re-arming a timer this way allocates nothing.
    func restart(after ms: UInt64) {
        guard !closed else { return }
        uv_update_time(loop)
        uv_timer_start(handle, { h in
            Unmanaged<LoopTimer>.fromOpaque(h!.pointee.data).takeUnretainedValue().action?()
        }, ms, 0)
    }

    /// Disarms the timer; its action is kept for `restart`.
    func stop() {
        guard !closed else { return }
        uv_timer_stop(handle)
    }

    func close() {
        guard !closed else { return }
        closed = true
        action = nil
        let raw = UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self)
        if uv_is_closing(raw) == 0 {
            uv_close(raw) { h in
                UnsafeMutableRawPointer(h!).assumingMemoryBound(to: uv_timer_t.self).deallocate()
            }
        }
    }
}

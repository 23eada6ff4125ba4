import CLibUV

/// A small lock-free directory of long-lived handles (memory caches), so
/// that their hot operations find them without the handle table's mutex
/// and without reference counting.
///
/// A pinned handle is kept alive by the directory until the directory
/// itself goes (when the runtime is dropped), even after `unpin`: a reader
/// that found it may go on using it without retaining it, as long as the
/// runtime cannot be dropped meanwhile (the C layer's gate ensures that).
/// A handle freed by its owner is closed, so what stays is small, and at
/// most `lifetimeLimit` objects are ever pinned. Readers
/// check the id again after reading the object, so a slot being reused
/// under them is seen and they fall back to the table.
///
/// `pin` and `unpin` take a lock of their own; `find` takes none.
@usableFromInline package final class PinnedHandles<Object: Handle>: @unchecked Sendable {
    @usableFromInline package static var capacity: Int { 64 }
    /// The most objects ever pinned: what stays allocated after `unpin` is
    /// bounded by this; later objects are not pinned (they are found the
    /// slower way).
    @usableFromInline package static var lifetimeLimit: Int { 1024 }

    /// Slot i: words 2i (the id, 0 when free) and 2i + 1 (the object).
    private let words: UnsafeMutablePointer<UInt>
    private let writers = Locked<[Object]>([])

    @usableFromInline package init() {
        words = .allocate(capacity: 2 * Self.capacity)
        words.initialize(repeating: 0, count: 2 * Self.capacity)
    }

    deinit {
        words.deallocate()
    }

    /// Adds `object` under its id when a slot is free; whether it was added.
    @discardableResult
    @usableFromInline package func pin(_ object: Object) -> Bool {
        writers.withLock { kept in
            guard kept.count < Self.lifetimeLimit else { return false }
            for i in 0..<Self.capacity where lds_load_acquire(words + 2 * i) == 0 {
                kept.append(object)
                lds_store_release(words + 2 * i + 1, UInt(bitPattern: Unmanaged.passUnretained(object).toOpaque()))
                lds_store_release(words + 2 * i, UInt(object.id))
                return true
            }
            return false
        }
    }

    /// Removes the entry of `id`; the object stays alive (see above).
    @usableFromInline package func unpin(_ id: UInt64) {
        writers.withLock { _ in
            for i in 0..<Self.capacity where lds_load_acquire(words + 2 * i) == UInt(id) {
                lds_store_release(words + 2 * i, 0)
            }
        }
    }

    /// Runs `body` with the object pinned under `id`, without retaining
    /// it; nil when `id` is not pinned.
    @inline(__always)
    @usableFromInline package func find<R>(_ id: UInt64, _ body: (Object) -> R) -> R? {
        guard id != 0 else { return nil }
        for i in 0..<Self.capacity where lds_load_acquire(words + 2 * i) == UInt(id) {
            let bits = lds_load_acquire(words + 2 * i + 1)
            guard lds_load_acquire(words + 2 * i) == UInt(id), let raw = UnsafeRawPointer(bitPattern: bits) else {
                return nil
            }
            return Unmanaged<Object>.fromOpaque(raw)._withUnsafeGuaranteedRef(body)
        }
        return nil
    }
}

/// Watches the cell of a prefetch: once its load has ended (the value is
/// in the cache, or the load failed or was served by the cache), the cell
/// is freed.
final class PrefetchObserver<Value, Request>: CellObserver<Value, Request> {
    override func cellEvent(_ cell: Cell<Value, Request>, _ event: CellEvent<Value, Request>) {
        guard cell.currentLoad == nil else { return }
        cell.markFreed()
        cell.runtime.table.withLock { storage in storage.handles[cell.id] = nil }
        cell.free()
    }
}

extension Runtime {
    /// Any thread: runs the load of `spec` into its cache (required; nothing
    /// happens without one) on a cell of its own that nobody sees, freed
    /// when the load ends. The job is shared under the cache key: a load of
    /// the same loader and key made meanwhile waits for it, whether it asks
    /// to share or not. Cache policies apply as for a cell (a cache-first
    /// prefetch of a fresh entry loads nothing); polling does not.
    @_specialize(exported: true, where Value == [UInt8], Request == [UInt8])
    @usableFromInline package func prefetch<Value, Request>(_ spec: LoadSpec<Value, Request>) {
        guard let cache = spec.cache else { return }
        var spec = spec
        spec.options.shareKey = cache.key
        spec.options.refreshIntervalMs = 0
        let cell = Cell(id: table.makeID(.loadable), flavor: .loadable, runtime: self,
                        observer: PrefetchObserver<Value, Request>())
        cell.isPrefetch = true
        table.insert(cell)
        loop.execute { cell.load(spec) }
    }
}

/// A loader as the inspector shows it, whatever its Value and Request types.
protocol InspectableLoader: AnyObject {
    /// Loop thread: the jobs waiting in the queue of the loader's limits now
    /// (a queue shared by several loaders counts for each).
    var queuedJobs: Int { get }
    /// Loop thread: the loader's own jobs in that queue, the first `limit`
    /// in the order they would start, and how many there are.
    func waitingJobs(limit: Int, nowMs: UInt64) -> (first: [JobInspection], total: Int)
}

extension Loader: InspectableLoader {
    var queuedJobs: Int { admission?.waiting ?? 0 }

    func waitingJobs(limit: Int, nowMs: UInt64) -> (first: [JobInspection], total: Int) {
        admission?.waitingJobs(of: id, limit: limit, nowMs: nowMs) ?? ([], 0)
    }
}

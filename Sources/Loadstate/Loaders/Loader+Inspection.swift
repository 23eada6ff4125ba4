/// A loader as the inspector shows it, whatever its Value and Request types.
protocol InspectableLoader: AnyObject {
    /// Loop thread: the jobs waiting in the queue of the loader's limits now
    /// (a queue shared by several loaders counts for each).
    var queuedJobs: Int { get }
}

extension Loader: InspectableLoader {
    var queuedJobs: Int { admission?.waiting ?? 0 }
}

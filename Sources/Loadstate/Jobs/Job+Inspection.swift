/// A job as the inspector shows it, whatever its Value and Request types.
protocol InspectableJob: AnyObject {
    /// Loop thread: what the inspector shows of the job.
    func inspection(nowMs: UInt64) -> JobInspection
}

/// What the inspector shows of a job.
struct JobInspection {
    var id: UInt64
    var loader: UInt64
    var attempt: UInt32
    var ageMs: UInt64
    var cells: Int
    var request: String
}

extension Job: InspectableJob {
    func inspection(nowMs: UInt64) -> JobInspection {
        JobInspection(id: id, loader: loader.id, attempt: attempt,
                      ageMs: nowMs >= startedAtMs ? nowMs - startedAtMs : 0, cells: waiters.count,
                      request: inspectionPreview(request))
    }
}

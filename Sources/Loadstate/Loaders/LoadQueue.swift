/// Limits shared by the Swift loads given to it: how many run at once and
/// how fast they start (`LoaderLimits`). A load over them waits, higher
/// priority first; its cell's `isQueued` is true meanwhile, and its body
/// does not run until it starts. A queued load that is cancelled, reset,
/// superseded or timed out never runs its body.
///
///     let images = LoadQueue(maxConcurrent: 4)
///     cell.load(queue: images, priority: 1) { try await fetch(url) }
///
/// A queue belongs to one runtime; loads of cells of another runtime
/// ignore it. Waiting loads keep the queue alive.
public final class LoadQueue: Sendable {
    let admission: Admission
    /// The runtime whose loads the queue holds.
    public let runtime: Runtime
    @usableFromInline package let limits: LoaderLimits

    /// `maxConcurrent`: the most loads running at once (0: no limit);
    /// `ratePerSecond`: loads started per second (0: no limit), with
    /// `burst` of them at once after a pause (0 counts as 1).
    public init(maxConcurrent: Int = 0, ratePerSecond: Int = 0, burst: Int = 0, runtime: Runtime = .shared) {
        limits = LoaderLimits(maxConcurrent: UInt32(clamping: maxConcurrent),
                              ratePerSecond: UInt32(clamping: ratePerSecond), burst: UInt32(clamping: burst))
        self.runtime = runtime
        admission = Admission(limits: limits, loop: runtime.loop)
    }
}

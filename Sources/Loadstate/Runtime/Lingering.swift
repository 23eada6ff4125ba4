/// Work on the loop that `EventLoop.stop` must wait for, because it has to
/// end by itself: a child process, which must be killed and reaped.
///
/// Lifecycle: it joins with `EventLoop.addLingering`, naming the handle
/// `stop` must leave open to it, and leaves with `removeLingering` once
/// all its handles are closed. When `stop` begins, after its last work,
/// each one still there gets `loopStopping`: it ends its work at once (a
/// command gets SIGKILL) and closes its handles as soon as it can. Those
/// still there at the stop deadline, or when the loop ends before it (the
/// handles left to them stopped watching), get `loopDeadline`: they close
/// every handle at once, and the loop forgets them. Both run on the loop
/// thread, at most once each.
protocol Lingering: AnyObject {
    func loopStopping()
    func loopDeadline()
}

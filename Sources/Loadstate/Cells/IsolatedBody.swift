/// A load's closure together with the isolation it was written in.
///
/// The public `load` and `run` methods take `sending @isolated(any)`
/// closures that inherit the caller's actor: written in a `@MainActor`
/// view model they run on the main actor and may read its properties.
/// The box carries such a closure to the task that runs the load; calling
/// it there hops to the closure's own actor (or runs on the global
/// executor when it has none), so it never runs concurrently with its
/// actor's other work.
struct IsolatedBody<Input: Sendable, Output: Sendable>: @unchecked Sendable {
    let call: @isolated(any) (Input) async throws -> Output

    init(_ call: @escaping @isolated(any) (Input) async throws -> Output) {
        self.call = call
    }

    func callAsFunction(_ input: Input) async throws -> Output {
        try await call(input)
    }
}

/// An interrupt handler, boxed like `IsolatedBody`, and the delays of the
/// load it belongs to (to tell each interrupt its scheduled delay).
struct InterruptCall: @unchecked Sendable {
    let handler: @isolated(any) (Interrupt) async throws -> Void
    let delays: [Duration]

    /// The interrupt numbered `number` (1-based), fired after `elapsedMs`.
    func interrupt(number: Int, elapsedMs: UInt64) -> Interrupt {
        var delay = Duration.zero
        for d in delays.prefix(number) { delay += d }
        return Interrupt(delay: delay, elapsed: .milliseconds(elapsedMs), number: number)
    }
}

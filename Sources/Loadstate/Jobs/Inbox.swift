/// The operations of a job waiting for the loop, in order. Empty most of
/// the time (a job in flight has reported nothing yet), so it is one word
/// then: the storage is allocated only when an operation arrives.
struct Inbox<Operation> {
    private var operations: [Operation] = []

    var isEmpty: Bool { operations.isEmpty }

    mutating func append(_ op: Operation) {
        operations.append(op)
    }

    /// Everything queued, leaving the inbox empty.
    mutating func takeAll() -> Inbox {
        let taken = self
        self = Inbox()
        return taken
    }

    func forEach(_ body: (Operation) -> Void) {
        for op in operations { body(op) }
    }
}

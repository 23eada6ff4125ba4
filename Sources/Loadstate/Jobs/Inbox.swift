/// The operations of a job waiting for the loop, in order. Empty most of
/// the time (a job in flight has reported nothing yet), so it is one word
/// then: the storage is allocated only when an operation arrives.
struct Inbox<Operation> {
    private var operations: [Operation] = []

    var isEmpty: Bool { operations.isEmpty }
    var count: Int { operations.count }

    mutating func append(_ op: Operation) {
        operations.append(op)
    }

    /// Everything queued, leaving the inbox empty.
    mutating func takeAll() -> Inbox {
        let taken = self
        self = Inbox()
        return taken
    }

    /// An empty inbox takes `spare`'s storage (emptied, with its capacity),
    /// so that its first operation allocates nothing.
    mutating func reuse(_ spare: inout Inbox?) {
        guard operations.isEmpty, let storage = spare.take() else { return }
        self = storage
    }

    /// Empties the inbox, keeping its storage for `reuse`.
    mutating func clear() {
        // One element at a time: `removeAll(keepingCapacity:)` goes through
        // the general `replaceSubrange`, which costs more than the one or
        // two operations an inbox holds.
        while operations.popLast() != nil {}
    }

    /// Whether the inbox has storage allocated.
    var hasStorage: Bool { operations.capacity > 0 }

    func forEach(_ body: (Operation) -> Void) {
        for op in operations { body(op) }
    }
}

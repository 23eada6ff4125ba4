/// The operations of a job waiting for the loop, in order. Almost every
/// job reports one operation (its result), so the first is kept inline
/// and only further ones need an array.
struct Inbox<Operation> {
    private var first: Operation?
    private var rest: [Operation] = []

    var isEmpty: Bool { first == nil }

    mutating func append(_ op: Operation) {
        if first == nil {
            first = op
        } else {
            rest.append(op)
        }
    }

    /// Everything queued, leaving the inbox empty.
    mutating func takeAll() -> Inbox {
        let taken = self
        self = Inbox()
        return taken
    }

    func forEach(_ body: (Operation) -> Void) {
        guard let first else { return }
        body(first)
        for op in rest { body(op) }
    }
}

/// The cells waiting for a job, in the order they joined. Almost every job
/// has one, kept inline; shared jobs keep the others in an array.
struct Waiters<Element: AnyObject> {
    private var first: Element?
    private var rest: [Element] = []

    init(_ element: Element) {
        first = element
    }

    init() {}

    /// Every element, leaving none (moved, not copied).
    mutating func takeAll() -> Waiters {
        var taken = Waiters()
        swap(&taken, &self)
        return taken
    }

    var count: Int { (first == nil ? 0 : 1) + rest.count }

    func contains(_ element: Element) -> Bool {
        first === element || rest.contains { $0 === element }
    }

    mutating func append(_ element: Element) {
        if first == nil {
            first = element
        } else {
            rest.append(element)
        }
    }

    mutating func remove(_ element: Element) {
        if first === element {
            first = rest.isEmpty ? nil : rest.removeFirst()
        } else if let index = rest.firstIndex(where: { $0 === element }) {
            rest.remove(at: index)
        }
    }

    mutating func removeAll() {
        first = nil
        rest = []
    }

    func forEach(_ body: (Element) -> Void) {
        guard let first else { return }
        body(first)
        for element in rest { body(element) }
    }
}

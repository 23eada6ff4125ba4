/// Processed's class form: a class on the main actor keeps its loadable
/// states as ordinary properties and loads them by key path.
///
///     @MainActor @Observable final class NumbersModel: LoadableSupport {
///         var numbers: LoadableState<[Int]> = .absent
///
///         func load() {
///             load(\.numbers) { try await api.numbers() }
///         }
///     }
///
/// Each property is driven by a cell of its own, made on first use (on
/// `Runtime.shared`); the property takes every state the cell shows, in
/// order, on the main actor. `await load(...)` returns once the property
/// shows how the load ended. `cancel(\.numbers)` and `reset(\.numbers)`
/// act on the running load.
@MainActor
public protocol LoadableSupport: AnyObject {}

extension LoadableSupport {
    /// Loads the property at `keyPath` in a new task: `body` returns the value.
    public func load<Value: Sendable>(_ keyPath: ReferenceWritableKeyPath<Self, LoadableState<Value>>,
                                      silently: Bool = false, timeout: Duration? = nil,
                                      interrupts: [Duration] = [], retries: Int = 0,
                                      _ body: @escaping @MainActor () async throws -> Value) {
        let binding = PropertyBinding<LoadableCell<Value>>.binding(self, keyPath)
        binding.cell.load(silently: silently, timeout: timeout, interrupts: interrupts, retries: retries) {
            try await body()
        }
        binding.show(self, keyPath)
    }

    /// Loads the property at `keyPath` in the caller's task and returns once
    /// the property shows how the load ended.
    public func load<Value: Sendable>(_ keyPath: ReferenceWritableKeyPath<Self, LoadableState<Value>>,
                                      silently: Bool = false, timeout: Duration? = nil,
                                      interrupts: [Duration] = [], retries: Int = 0,
                                      _ body: @escaping @MainActor () async throws -> Value) async {
        let binding = PropertyBinding<LoadableCell<Value>>.binding(self, keyPath)
        await binding.cell.load(silently: silently, timeout: timeout, interrupts: interrupts, retries: retries) {
            try await body()
        }
        await binding.caughtUp()
    }

    /// Cancels the running load of the property; the state before it comes back.
    public func cancel<Value: Sendable>(_ keyPath: ReferenceWritableKeyPath<Self, LoadableState<Value>>) {
        PropertyBinding<LoadableCell<Value>>.binding(self, keyPath).cell.cancel()
    }

    /// Cancels the running load of the property and makes it `.absent`.
    public func reset<Value: Sendable>(_ keyPath: ReferenceWritableKeyPath<Self, LoadableState<Value>>) {
        PropertyBinding<LoadableCell<Value>>.binding(self, keyPath).cell.reset()
    }
}

/// A cell whose states a `PropertyBinding` copies into a property.
protocol BindableCell: AnyObject, Sendable {
    associatedtype State: Sendable
    init(runtime: Runtime, name: String?)
    /// Whether a property in this state needs no cell state of its own.
    static func isInitial(_ state: State) -> Bool
    func setState(_ state: State)
    func settled() async
    /// The stream of states and the count of changes before its first one.
    func countedStates() -> (stream: AsyncStream<State>, changes: Int)
    /// How many state changes the cell's streams were given.
    var stateChanges: Int { get }
    /// The state now (a load's first state shows at once: see `CellDriver.predict`).
    var state: State { get }
}

extension LoadableCellWith: BindableCell where Request == Void {
    static func isInitial(_ state: LoadableState<Value>) -> Bool { state.isAbsent }
    func countedStates() -> (stream: AsyncStream<LoadableState<Value>>, changes: Int) { driver.countedStates() }
    var stateChanges: Int { driver.stateChanges }
}

extension ProcessCell: BindableCell {
    static func isInitial(_ state: ProcessState<ProcessKind>) -> Bool { state.isIdle }
    func countedStates() -> (stream: AsyncStream<ProcessState<ProcessKind>>, changes: Int) { driver.countedStates() }
    var stateChanges: Int { driver.stateChanges }
}

/// The cell behind one property of one object, and the task that copies
/// the cell's states into the property on the main actor.
@MainActor
final class PropertyBinding<Cell: BindableCell> {
    let cell = Cell(runtime: .shared, name: nil)
    /// The cell's count of state changes when the task subscribed.
    private var base = 0
    /// How many state changes the property has taken since.
    private var applied = 0
    private var waiters: [(count: Int, done: CheckedContinuation<Void, Never>)] = []
    private var forwarding: Task<Void, Never>?

    /// The binding of `keyPath` on `object`, made on first use.
    static func binding<Object: AnyObject>(_ object: Object,
                                           _ keyPath: ReferenceWritableKeyPath<Object, Cell.State>) -> PropertyBinding {
        // Bindings of objects that are gone are dropped first.
        BindingRegistry.entries = BindingRegistry.entries.filter { $0.value.object != nil }
        let key = BindingKey(object: ObjectIdentifier(object), keyPath: keyPath)
        if let binding = BindingRegistry.entries[key]?.binding as? PropertyBinding { return binding }
        let binding = PropertyBinding()
        let (states, base) = binding.cell.countedStates()
        binding.base = base
        let initial = object[keyPath: keyPath]
        if !Cell.isInitial(initial) { binding.cell.setState(initial) }
        binding.forwarding = Task { @MainActor [weak object, weak binding] in
            // The first state is the one the cell had when the task subscribed.
            var first = true
            for await state in states {
                if first {
                    first = false
                    continue
                }
                guard let object, let binding else { return }
                object[keyPath: keyPath] = state
                binding.applied += 1
                binding.resumeWaiters()
            }
        }
        BindingRegistry.entries[key] = BindingEntry(object: object, binding: binding)
        return binding
    }

    deinit {
        forwarding?.cancel()
    }

    /// Returns once the property has taken every state the cell showed
    /// before the calls made so far took effect.
    /// Sets the property to the cell's state now: right after a load, its
    /// first state, before a view is drawn (the forwarding task applies the
    /// same state again later, in order with the rest).
    func show<Object: AnyObject>(_ object: Object, _ keyPath: ReferenceWritableKeyPath<Object, Cell.State>) {
        object[keyPath: keyPath] = cell.state
    }

    func caughtUp() async {
        await cell.settled()
        let target = cell.stateChanges - base
        guard applied < target else { return }
        await withCheckedContinuation { waiters.append((target, $0)) }
    }

    private func resumeWaiters() {
        let ready = waiters.filter { $0.count <= applied }
        waiters.removeAll { $0.count <= applied }
        for w in ready { w.done.resume() }
    }
}

/// An object and one of its key paths.
struct BindingKey: Hashable {
    let object: ObjectIdentifier
    let keyPath: AnyKeyPath
}

/// A binding, kept while its object lives.
final class BindingEntry {
    weak var object: AnyObject?
    let binding: AnyObject

    init(object: AnyObject, binding: AnyObject) {
        self.object = object
        self.binding = binding
    }
}

/// The property bindings of `LoadableSupport` objects, on the main actor.
@MainActor
enum BindingRegistry {
    static var entries: [BindingKey: BindingEntry] = [:]
}

/// Processed's class form for processes: a class on the main actor keeps
/// its process states as ordinary properties and runs them by key path.
///
///     @MainActor @Observable final class EditorModel: ProcessSupport {
///         var action: ProcessState<Action> = .idle
///
///         func save() {
///             run(\.action, as: .save) { try await store.save() }
///         }
///     }
///
/// As `LoadableSupport`: a cell per property, states copied in order on
/// the main actor; `await run(...)` returns once the property shows how
/// the run ended.
@MainActor
public protocol ProcessSupport: AnyObject {}

extension ProcessSupport {
    /// Runs `body` as process `kind` of the property at `keyPath`, in a new task.
    public func run<Kind: Sendable>(_ keyPath: ReferenceWritableKeyPath<Self, ProcessState<Kind>>, as kind: Kind,
                                    silently: Bool = false, timeout: Duration? = nil,
                                    _ body: @escaping @MainActor () async throws -> Void) {
        let binding = PropertyBinding<ProcessCell<Kind>>.binding(self, keyPath)
        binding.cell.run(kind, silently: silently, timeout: timeout) { try await body() }
        binding.show(self, keyPath)
    }

    /// Runs `body` as process `kind` of the property at `keyPath` in the
    /// caller's task, and returns once the property shows how it ended.
    public func run<Kind: Sendable>(_ keyPath: ReferenceWritableKeyPath<Self, ProcessState<Kind>>, as kind: Kind,
                                    silently: Bool = false, timeout: Duration? = nil,
                                    _ body: @escaping @MainActor () async throws -> Void) async {
        let binding = PropertyBinding<ProcessCell<Kind>>.binding(self, keyPath)
        await binding.cell.run(kind, silently: silently, timeout: timeout) { try await body() }
        await binding.caughtUp()
    }

    /// Cancels the running process of the property; the state before it comes back.
    public func cancel<Kind: Sendable>(_ keyPath: ReferenceWritableKeyPath<Self, ProcessState<Kind>>) {
        PropertyBinding<ProcessCell<Kind>>.binding(self, keyPath).cell.cancel()
    }

    /// Cancels the running process of the property and makes it `.idle`.
    public func reset<Kind: Sendable>(_ keyPath: ReferenceWritableKeyPath<Self, ProcessState<Kind>>) {
        PropertyBinding<ProcessCell<Kind>>.binding(self, keyPath).cell.reset()
    }
}

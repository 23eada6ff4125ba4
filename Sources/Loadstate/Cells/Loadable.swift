/// A loadable state as a property, the Processed way: the property reads
/// as a `LoadableState`, and its projection (`$name`) is the cell that
/// loads it.
///
///     @MainActor final class NumbersModel {
///         @Loadable var numbers: LoadableState<[Int]>
///
///         func load() {
///             $numbers.load {
///                 try await api.numbers()
///             }
///         }
///     }
///
/// Works in any class, and in `@Observable` classes marked
/// `@ObservationIgnored`: the cell is `Observable` itself, so a view that
/// reads the property is updated when its state changes. Assigning to the
/// property sets the state by hand (`setState`), which cancels the running
/// load; the property shows the new state once the runtime's loop has
/// applied it (`await $numbers.settled()`).
@propertyWrapper
public struct Loadable<Value: Sendable>: Sendable {
    /// The cell behind the property: `load`, `refresh`, `cancel`, `reset`.
    public let projectedValue: LoadableCell<Value>

    /// An absent state on `runtime`; `name` names the cell for the
    /// runtime's inspector (see `LoadableCellWith.init(runtime:name:)`).
    public init(runtime: Runtime = .shared, name: String? = nil) {
        projectedValue = LoadableCell(runtime: runtime, name: name)
    }

    /// A property that starts in `wrappedValue`.
    public init(wrappedValue: LoadableState<Value>, runtime: Runtime = .shared, name: String? = nil) {
        projectedValue = LoadableCell(runtime: runtime, name: name)
        if !wrappedValue.isAbsent { projectedValue.setState(wrappedValue) }
    }

    /// The cell's state; setting it sets the state by hand.
    public var wrappedValue: LoadableState<Value> {
        get { projectedValue.state }
        nonmutating set { projectedValue.setState(newValue) }
    }
}

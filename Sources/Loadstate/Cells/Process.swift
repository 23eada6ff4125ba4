/// A process state as a property, the Processed way: the property reads as
/// a `ProcessState`, and its projection (`$name`) is the cell that runs it.
///
///     @MainActor final class EditorModel {
///         @Process var saving                       // ProcessState<SingleProcess>
///         @Process<Action> var action               // several kinds of process
///
///         func save() {
///             $saving.run { try await store.save() }
///         }
///     }
///
/// Assigning to the property sets the state by hand (`setState`), which
/// cancels the running process; the property shows the new state once the
/// runtime's loop has applied it (`await $saving.settled()`).
@propertyWrapper
public struct Process<ProcessKind: Sendable>: Sendable {
    /// The cell behind the property: `run`, `cancel`, `reset`.
    public let projectedValue: ProcessCell<ProcessKind>

    /// An idle process on `runtime`; `name` names the cell for the
    /// runtime's inspector (see `ProcessCell.init(runtime:name:)`).
    public init(runtime: Runtime = .shared, name: String? = nil) {
        projectedValue = ProcessCell(runtime: runtime, name: name)
    }

    /// A property that starts in `wrappedValue`.
    public init(wrappedValue: ProcessState<ProcessKind>, runtime: Runtime = .shared, name: String? = nil) {
        projectedValue = ProcessCell(runtime: runtime, name: name)
        if !wrappedValue.isIdle { projectedValue.setState(wrappedValue) }
    }

    /// The cell's state; setting it sets the state by hand.
    public var wrappedValue: ProcessState<ProcessKind> {
        get { projectedValue.state }
        nonmutating set { projectedValue.setState(newValue) }
    }
}

extension Process where ProcessKind == SingleProcess {
    /// A single-purpose process (`@Process var saving`) on `runtime`.
    public init(runtime: Runtime = .shared, name: String? = nil) {
        projectedValue = ProcessCell(runtime: runtime, name: name)
    }
}

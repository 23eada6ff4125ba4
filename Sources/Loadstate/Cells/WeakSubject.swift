import Observation

/// A weak reference to an observable cell, for the closures its driver
/// keeps before the cell is fully initialized.
final class WeakSubject<Subject: AnyObject & Observable & Sendable>: @unchecked Sendable {
    weak var subject: Subject?

    /// What a driver calls around each change of the cell's state: the
    /// change is reported to the cell's observers (once the cell exists).
    func changes<Member>(of keyPath: KeyPath<Subject, Member>,
                         registrar: ObservationRegistrar) -> @Sendable (() -> Void) -> Void {
        nonisolated(unsafe) let keyPath = keyPath
        return { [self] change in
            if let subject {
                registrar.withMutation(of: subject, keyPath: keyPath, change)
            } else {
                change()
            }
        }
    }
}

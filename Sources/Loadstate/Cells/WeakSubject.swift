/// A weak reference to an observable cell, for the closures its driver
/// keeps before the cell is fully initialized.
final class WeakSubject<Subject: AnyObject>: @unchecked Sendable {
    weak var subject: Subject?
}

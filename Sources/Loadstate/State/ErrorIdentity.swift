/// Whether two errors are the same error: equal by `==` when both are of
/// one `Equatable` type, the same object when both are class instances,
/// and otherwise different. Never compared by their descriptions (two
/// different errors may print alike).
func sameError(_ a: any Error, _ b: any Error) -> Bool {
    if let a = a as? any Equatable {
        return a.isEqual(to: b)
    }
    if type(of: a) is AnyClass, type(of: b) is AnyClass {
        return (a as AnyObject) === (b as AnyObject)
    }
    return false
}

extension Equatable {
    /// Whether `other` is of this type and equal to `self`.
    fileprivate func isEqual(to other: Any) -> Bool {
        guard let other = other as? Self else { return false }
        return self == other
    }
}

/// The state of something that loads: nothing yet, loading, an error, or a value.
public enum LoadableState<Value> {
    /// Nothing loaded yet.
    case absent
    /// A load runs.
    case loading
    /// The last load failed with this error.
    case error(any Error)
    /// The value.
    case loaded(Value)

    /// Whether nothing is loaded yet.
    public var isAbsent: Bool {
        if case .absent = self { return true }
        return false
    }

    /// Whether a load runs.
    public var isLoading: Bool {
        if case .loading = self { return true }
        return false
    }

    /// Whether the last load failed.
    public var isError: Bool {
        if case .error = self { return true }
        return false
    }

    /// Whether a value is there.
    public var isLoaded: Bool {
        if case .loaded = self { return true }
        return false
    }

    /// The value, when loaded.
    public var data: Value? {
        if case .loaded(let value) = self { return value }
        return nil
    }

    /// The error, when failed.
    public var error: (any Error)? {
        if case .error(let error) = self { return error }
        return nil
    }

    /// Sets `.absent`.
    public mutating func setAbsent() { self = .absent }
    /// Sets `.loading`.
    public mutating func setLoading() { self = .loading }
    /// Sets `.error(error)`.
    public mutating func setError(_ error: any Error) { self = .error(error) }
    /// Sets `.loaded(value)`.
    public mutating func setValue(_ value: Value) { self = .loaded(value) }

    /// The same state with the value transformed.
    public func map<T>(_ transform: (Value) throws -> T) rethrows -> LoadableState<T> {
        switch self {
        case .absent: return .absent
        case .loading: return .loading
        case .error(let error): return .error(error)
        case .loaded(let value): return .loaded(try transform(value))
        }
    }

    /// The same state with the value transformed; a nil result is `.absent`.
    public func compactMap<T>(_ transform: (Value) throws -> T?) rethrows -> LoadableState<T> {
        switch self {
        case .absent: return .absent
        case .loading: return .loading
        case .error(let error): return .error(error)
        case .loaded(let value): return try transform(value).map { .loaded($0) } ?? .absent
        }
    }
}

extension LoadableState: Sendable where Value: Sendable {}

extension LoadableState: Equatable where Value: Equatable {
    /// Errors are equal when they are of one `Equatable` type and `==`,
    /// or the same object; otherwise they differ.
    public static func == (a: LoadableState, b: LoadableState) -> Bool {
        switch (a, b) {
        case (.absent, .absent), (.loading, .loading): return true
        case (.error(let x), .error(let y)): return sameError(x, y)
        case (.loaded(let x), .loaded(let y)): return x == y
        default: return false
        }
    }
}

extension LoadableState: CustomStringConvertible {
    public var description: String {
        switch self {
        case .absent: return "absent"
        case .loading: return "loading"
        case .error(let error): return "error(\(error))"
        case .loaded(let value): return "loaded(\(value))"
        }
    }
}

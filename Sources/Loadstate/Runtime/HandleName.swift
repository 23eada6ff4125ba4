/// The name a host gives a loader or a cell, shown by the metrics (the
/// `loader` label) and the inspector in place of its id.
///
/// A name is host text: at most `maxBytes` bytes of UTF-8 without control
/// characters (U+0000 to U+001F, U+007F to U+009F), so that it reads the
/// same on a dashboard, a page and a terminal. Every place that shows it
/// escapes it for its format; no name is ever part of a path. The empty
/// name is no name.
@usableFromInline package enum HandleName {
    /// The longest name, in bytes of UTF-8 (`LDS_NAME_MAX`).
    @usableFromInline package static let maxBytes = 128

    /// `text` as a name: nil for the empty string (no name); `.failure`
    /// when it is too long or holds a control character.
    @usableFromInline package static func validated(_ text: String) -> Result<String?, ResultCode> {
        if text.isEmpty { return .success(nil) }
        guard text.utf8.count <= maxBytes else { return .failure(.invalidArgument) }
        guard !text.unicodeScalars.contains(where: isControl) else { return .failure(.invalidArgument) }
        return .success(text)
    }

    /// A name from `bytes` (a C string's, without its NUL): nil for none;
    /// `.failure` when they are not valid UTF-8 or not a valid name.
    @usableFromInline package static func validated(bytes: UnsafeBufferPointer<UInt8>) -> Result<String?, ResultCode> {
        guard bytes.count <= maxBytes else { return .failure(.invalidArgument) }
        var text = ""
        var decoder = UTF8()
        var iterator = bytes.makeIterator()
        decoding: while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): text.unicodeScalars.append(scalar)
            case .emptyInput: break decoding
            case .error: return .failure(.invalidArgument)
            }
        }
        return validated(text)
    }

    /// `text` made a name, for the Swift API, whose initializers do not
    /// throw: control characters become U+FFFD, and the text is cut to
    /// `maxBytes` bytes between two scalars; nil for the empty string.
    @usableFromInline package static func sanitized(_ text: String?) -> String? {
        guard let text, !text.isEmpty else { return nil }
        var out = ""
        var bytes = 0
        for scalar in text.unicodeScalars {
            let shown: Unicode.Scalar = isControl(scalar) ? "\u{FFFD}" : scalar
            let width = UTF8.width(shown)
            guard bytes + width <= maxBytes else { break }
            bytes += width
            out.unicodeScalars.append(shown)
        }
        return out
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (scalar.value >= 0x7f && scalar.value <= 0x9f)
    }
}

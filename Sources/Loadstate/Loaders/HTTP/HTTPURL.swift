/// The little URL arithmetic the http loader's cache needs: resolving a
/// `Location` or `Content-Location` against the request's URL (RFC 3986
/// section 5.2, without dot-segment removal) and comparing origins.
enum HTTPURL {
    /// `reference` made absolute against `base` (an http or https URL),
    /// without its fragment; nil when either is not usable.
    static func resolve(_ reference: String, against base: String) -> String? {
        let ref = String(reference.prefix { $0 != "#" })
        guard !ref.isEmpty, !ref.contains(where: { $0 == " " || $0.isNewline }) else { return nil }
        if let colon = ref.firstIndex(of: ":"), ref[..<colon].allSatisfy({ $0.isLetter || $0 == "+" || $0 == "-" || $0 == "." }),
           !ref[..<colon].isEmpty {
            return ref
        }
        guard let origin = origin(of: base) else { return nil }
        if ref.hasPrefix("//") {
            guard let scheme = base.split(separator: ":", maxSplits: 1).first else { return nil }
            return scheme + ":" + ref
        }
        if ref.hasPrefix("/") { return origin + ref }
        let path = String(base.dropFirst(origin.count).prefix { $0 != "?" && $0 != "#" })
        if ref.hasPrefix("?") { return origin + (path.isEmpty ? "/" : path) + ref }
        let directory = path.lastIndex(of: "/").map { String(path[...$0]) } ?? "/"
        return origin + directory + ref
    }

    /// The scheme, host and port of an http or https URL, as written
    /// (scheme and host in lower case); nil for another URL.
    static func origin(of url: String) -> String? {
        guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") else { return nil }
        let scheme = url[..<colon].lowercased()
        guard scheme == "http" || scheme == "https" else { return nil }
        let rest = url[url.index(colon, offsetBy: 3)...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        return scheme + "://" + authority.lowercased()
    }
}

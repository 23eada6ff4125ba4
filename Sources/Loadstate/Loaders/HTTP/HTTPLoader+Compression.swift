import CCurl

extension HTTPLoader {
    /// The `Accept-Encoding` a compressed request sends: the encodings the
    /// libcurl in use decodes (gzip and deflate always; br and zstd when it
    /// was built with them), as libcurl's own "" would, spelled out so that
    /// `Vary: Accept-Encoding` can be matched.
    static let acceptEncoding: String = {
        var encodings = ["gzip", "deflate"]
        if let info = curl_version_info(CURLVERSION_FOURTH) {
            let features = info.pointee.features
            if features & CURL_VERSION_BROTLI != 0 { encodings.append("br") }
            if features & CURL_VERSION_ZSTD != 0 { encodings.append("zstd") }
        }
        return encodings.joined(separator: ", ")
    }()
}

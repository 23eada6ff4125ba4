/// How a Swift value becomes the bytes a cache stores, and back.
///
/// The caches hold byte strings (the same caches the C API and the other
/// languages use), and the core imports no Foundation, so a cached Swift
/// value needs an explicit codec rather than `Codable`. Codecs for bytes,
/// UTF-8 text, integers and HTTP responses are built in; `map` derives a
/// codec for another type from one of them, and `init(encode:decode:)`
/// takes any pair of functions (a JSON encoder from a module that may
/// import Foundation, for instance).
///
///     let ids = ValueCodec<String>.utf8.map(
///         { $0.map(String.init).joined(separator: ",") },
///         { $0.split(separator: ",").compactMap { Int($0) } })
public struct ValueCodec<Value>: Sendable {
    /// The bytes stored for a value.
    public let encode: @Sendable (Value) -> [UInt8]
    /// The value stored as these bytes; nil when they do not decode (the
    /// cache entry is then treated as a miss).
    public let decode: @Sendable ([UInt8]) -> Value?

    /// A codec from a pair of functions.
    public init(encode: @escaping @Sendable (Value) -> [UInt8], decode: @escaping @Sendable ([UInt8]) -> Value?) {
        self.encode = encode
        self.decode = decode
    }

    /// A codec for another type, through this one: `to` turns a decoded
    /// value into the other type (nil when it cannot), `from` turns the
    /// other type back into a value of this one.
    public func map<Other>(_ to: @escaping @Sendable (Value) -> Other?,
                           _ from: @escaping @Sendable (Other) -> Value) -> ValueCodec<Other> {
        let encode = self.encode
        let decode = self.decode
        return ValueCodec<Other>(encode: { encode(from($0)) }, decode: { decode($0).flatMap(to) })
    }
}

extension ValueCodec where Value == [UInt8] {
    /// Bytes stored as they are.
    public static var bytes: ValueCodec { ValueCodec(encode: { $0 }, decode: { $0 }) }
}

extension ValueCodec where Value == String {
    /// Text stored as UTF-8; bytes that are not valid UTF-8 do not decode.
    public static var utf8: ValueCodec {
        ValueCodec(encode: { Array($0.utf8) }, decode: { String(validating: $0, as: UTF8.self) })
    }
}

extension ValueCodec where Value == Int {
    /// An integer stored as its decimal text.
    public static var decimal: ValueCodec {
        ValueCodec<String>.utf8.map({ Int($0) }, { String($0) })
    }
}

extension ValueCodec where Value == HTTPResponse {
    /// A whole HTTP response (status, header lines, body), in the http
    /// loader's value encoding.
    public static var httpResponse: ValueCodec {
        ValueCodec(encode: { $0.encoded() }, decode: { HTTPResponse(decoding: $0) })
    }
}

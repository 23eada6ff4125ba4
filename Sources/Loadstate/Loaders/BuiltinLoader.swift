/// One of the runtime's built-in loaders (http, file, exec), with typed
/// requests and responses, for Swift programs.
///
///     let http = BuiltinLoader.http()
///     let response = try await http.fetch(HTTPRequest(url: "https://example.com/"))
///     print(response.status, response.text)
///
/// `fetch` runs one request on the runtime's loop (libcurl, libuv's fs
/// calls, `uv_spawn`) and returns its response; cancelling the calling
/// task cancels the transfer, read or command. `loadFunction` makes a
/// `LoadFunction` for cells, which may share jobs and use caches. The
/// `name` each factory takes is what the metrics and the inspector call
/// the loader, as for `LoadFunction`.
///
/// Failures are thrown as the loader reports them: an HTTP status outside
/// 2xx as `HTTPStatusError` (with the whole response), a command's
/// non-zero exit and other failures as `LoadError` (domain, code,
/// message).
public final class BuiltinLoader<Request: Sendable, Response: Sendable>: Sendable {
    let runtime: Runtime
    let core: Loader<[UInt8], [UInt8]>
    let encode: @Sendable (Request) -> [UInt8]
    let decode: @Sendable ([UInt8]) -> Response?

    init(runtime: Runtime, core: Loader<[UInt8], [UInt8]>, encode: @escaping @Sendable (Request) -> [UInt8],
         decode: @escaping @Sendable ([UInt8]) -> Response?) {
        self.runtime = runtime
        self.core = core
        self.encode = encode
        self.decode = decode
        // In the runtime's table: a runtime closed while the loader lives
        // releases it (its connections, timers) with the others.
        runtime.table.insert(core)
    }

    deinit {
        let core = self.core
        let runtime = self.runtime
        runtime.loop.execute {
            runtime.table.withLock { storage in
                if storage.handles[core.id] === core { storage.handles[core.id] = nil }
            }
            core.retire(runtime: runtime)
        }
    }

    /// The name the loader was made with, as kept (see `LoadFunction`).
    public var name: String? { core.name }

    /// Runs `request` and returns its response. `timeout` fails it with
    /// `TimeoutError` (as the underlying error of a `LoadError`);
    /// `retries` retries failures that may pass (5xx, 408, 429, transport
    /// errors) with back-off; `progress` is called on the loop thread with
    /// the bytes done and in all (0 when unknown).
    public func fetch(_ request: Request, timeout: Duration? = nil, retries: Int = 0,
                      progress: (@Sendable (_ done: UInt64, _ total: UInt64) -> Void)? = nil) async throws -> Response {
        let settings = LoadSettings(timeout: timeout, retries: retries)
        let spec = LoadSpec(loader: core, request: encode(request), options: settings.options)
        let bytes = try await Fetch(runtime: runtime, progress: progress).run(spec)
        guard let response = decode(bytes) else {
            throw LoadError(.io, message: "the loader's value does not decode")
        }
        return response
    }

    /// A loader for cells: each job fetches the cell's request and turns
    /// the response into the cell's value. `sharing` as for `LoadFunction`.
    public func loadFunction<Value: Sendable>(sharing shareKey: (@Sendable (Request) -> String)? = nil,
                                              _ transform: @escaping @Sendable (Response) throws -> Value)
        -> LoadFunction<Request, Value> {
        LoadFunction(runtime: runtime, sharing: shareKey) { [self] request in
            try transform(try await fetch(request))
        }
    }

    /// A loader for cells whose value is the response itself.
    public func loadFunction(sharing shareKey: (@Sendable (Request) -> String)? = nil) -> LoadFunction<Request, Response> {
        loadFunction(sharing: shareKey) { $0 }
    }
}

/// Options of the http loader.
public struct HTTPLoaderOptions: Sendable {
    /// The most connections open at once; 0 for libcurl's default.
    public var maxConnections: Int
    /// The most connections open at once to one host (and port); 0: no
    /// limit of its own (`CURLMOPT_MAX_HOST_CONNECTIONS`). Requests past
    /// it wait for a connection of that host.
    public var maxPerHost: Int
    /// The `User-Agent` sent.
    public var userAgent: String
    /// The proxy: nil follows the environment (`http_proxy`, `https_proxy`,
    /// `no_proxy`); "" uses none.
    public var proxy: String?

    /// Options; the defaults are libcurl's connection limit and the environment's proxy.
    public init(maxConnections: Int = 0, maxPerHost: Int = 0, userAgent: String = "loadstate/0.4",
                proxy: String? = nil) {
        self.maxConnections = maxConnections
        self.maxPerHost = maxPerHost
        self.userAgent = userAgent
        self.proxy = proxy
    }
}

extension BuiltinLoader where Request == HTTPRequest, Response == HTTPResponse {
    /// The http loader: libcurl on the runtime's loop; only http and https,
    /// TLS verification on unless a request turns it off.
    public static func http(runtime: Runtime = .shared, name: String? = nil,
                            options: HTTPLoaderOptions = HTTPLoaderOptions()) -> BuiltinLoader {
        var coreOptions = HTTPLoader.Options(maxConnections: options.maxConnections, userAgent: options.userAgent,
                                             proxy: options.proxy)
        coreOptions.maxPerHost = max(options.maxPerHost, 0)
        let core = HTTPLoader(id: runtime.table.makeID(.loader), options: coreOptions)
        core.name = HandleName.sanitized(name)
        return BuiltinLoader(runtime: runtime, core: core, encode: { $0.encoded() },
                             decode: { HTTPResponse(decoding: $0) })
    }

    /// A loader for cells keyed by URL: `load("https://...")` makes a GET
    /// of that URL with `headers` (header lines, "Name: value") and shows
    /// the response, so that a cell is
    /// `LoadableCellWith(loader: http.urlFunction())`. Loads of one URL by
    /// several cells share one request when `sharing` (the default). A
    /// status outside 2xx fails the load with the response kept (see
    /// `HTTPStatusError`).
    public func urlFunction(headers: [String] = [], sharing: Bool = true) -> LoadFunction<String, HTTPResponse> {
        var shareKey: (@Sendable (String) -> String)?
        if sharing { shareKey = { (url: String) -> String in url } }
        return LoadFunction<String, HTTPResponse>(runtime: runtime, sharing: shareKey) { [self] url in
            try await self.fetch(HTTPRequest(url: url, headers: headers))
        }
    }

    /// Runs `request` through `cache`, an HTTP cache of whole responses,
    /// as a private cache following RFC 9111: a response still fresh by
    /// its `Cache-Control` or `Expires` (or younger than `freshFor`, when
    /// it says nothing) is returned without a request; otherwise a
    /// response with validators (`ETag`, `Last-Modified`) is revalidated
    /// (`If-None-Match`, `If-Modified-Since`) and a `304 Not Modified`
    /// returns the stored response, its body never sent again;
    /// `no-store` responses are not kept, `Vary` is honoured. The key is
    /// the request as a whole (method, URL, header lines, body).
    /// `timeout`, `retries` and `progress` as for `fetch(_:timeout:retries:progress:)`.
    public func fetch(_ request: HTTPRequest, cache: any CacheStore, freshFor: Duration = .zero,
                      timeout: Duration? = nil, retries: Int = 0,
                      progress: (@Sendable (_ done: UInt64, _ total: UInt64) -> Void)? = nil) async throws -> HTTPResponse {
        let settings = LoadSettings(timeout: timeout, retries: retries)
        let encoded = request.encoded()
        let use = CacheUse<[UInt8]>(store: cache, key: encoded, policy: .cacheFirst,
                                    freshMs: freshFor.saturatingMilliseconds)
        let spec = LoadSpec(loader: core, request: encoded, options: settings.options, cache: use)
        let bytes = try await Fetch(runtime: runtime, progress: progress).run(spec)
        guard let response = HTTPResponse(decoding: bytes) else {
            throw LoadError(.io, message: "the loader's value does not decode")
        }
        return response
    }

    /// A loader for cells whose jobs fetch through `cache` as
    /// `fetch(_:cache:freshFor:)` does (revalidation and all), then turn
    /// the response into the cell's value. The cells may have a cache of
    /// their own for their values (a `LoadCache`); `cache` keeps the
    /// responses. `sharing` as for `LoadFunction`.
    public func loadFunction<Value: Sendable>(cache: any CacheStore, freshFor: Duration = .zero,
                                              sharing shareKey: (@Sendable (HTTPRequest) -> String)? = nil,
                                              _ transform: @escaping @Sendable (HTTPResponse) throws -> Value)
        -> LoadFunction<HTTPRequest, Value> {
        LoadFunction(runtime: runtime, sharing: shareKey) { [self] request in
            try transform(try await fetch(request, cache: cache, freshFor: freshFor))
        }
    }
}

extension BuiltinLoader where Request == String, Response == [UInt8] {
    /// The file loader: reads the file at the request's path with libuv's
    /// fs calls; files larger than `maxSize` fail with `ResultCode.tooBig`.
    public static func file(runtime: Runtime = .shared, name: String? = nil, maxSize: UInt64 = 256 << 20)
        -> BuiltinLoader {
        let core = FileLoader(id: runtime.table.makeID(.loader), options: FileLoader.Options(maxSize: maxSize))
        core.name = HandleName.sanitized(name)
        return BuiltinLoader(runtime: runtime, core: core, encode: { Array($0.utf8) }, decode: { $0 })
    }
}

extension BuiltinLoader where Request == ExecRequest, Response == [UInt8] {
    /// The exec loader: runs the request's argument vector with `uv_spawn`;
    /// the response is what it wrote to stdout. A non-zero exit fails in
    /// the exit domain with stderr's end as message. Output beyond
    /// `maxOutput` bytes kills the command and fails the load.
    public static func exec(runtime: Runtime = .shared, name: String? = nil, maxOutput: Int = 256 << 20)
        -> BuiltinLoader {
        let core = ExecLoader(id: runtime.table.makeID(.loader), options: ExecLoader.Options(maxOutput: maxOutput))
        core.name = HandleName.sanitized(name)
        return BuiltinLoader(runtime: runtime, core: core, encode: { $0.encoded() }, decode: { $0 })
    }
}

import Observation
import Synchronization

/// Which page a page loader is asked for.
public enum PageDirection: Int32, Sendable {
    /// The first page of a load (no cursor).
    case first = 0
    /// The page after the last one, with the last page's next cursor.
    case next = 1
    /// The page before the first one, with the first page's previous cursor.
    case previous = -1
}

/// What a `PagedCell`'s loader is asked for: the load's request, the
/// cursor of the page (nil for the first page) and the direction.
public struct PageQuery: Sendable, Equatable {
    /// The request given to `PagedCell.load`.
    public var request: [UInt8]
    /// The cursor the neighbouring page returned; nil for the first page.
    public var cursor: [UInt8]?
    /// Which page is asked for.
    public var direction: PageDirection

    /// A query for the page at `cursor` in `direction` of `request`'s list.
    public init(request: [UInt8], cursor: [UInt8]?, direction: PageDirection) {
        self.request = request
        self.cursor = cursor
        self.direction = direction
    }
}

/// What a `PagedCell`'s loader returns: the page's value and the cursors of
/// the pages after and before it (nil: no page that way, the end of the
/// list). A cursor is at most `PagedCell.cursorMax` bytes; a longer one
/// fails the page with `ResultCode.tooBig`.
public struct Page<Value: Sendable>: Sendable {
    /// The page's value.
    public var value: Value
    /// The cursor of the page after this one; nil at the end of the list.
    public var next: [UInt8]?
    /// The cursor of the page before this one; nil at the start of the list.
    public var previous: [UInt8]?

    /// A page with `value` and the cursors of its neighbours.
    public init(_ value: Value, next: [UInt8]? = nil, previous: [UInt8]? = nil) {
        self.value = value
        self.next = next
        self.previous = previous
    }
}

/// One event of a `PagedCell`: the page it is about and that page's state.
public struct PageEvent<Value: Sendable>: Sendable {
    /// The index of the page (0: the first page shown, after any insertion).
    public var index: Int
    /// The page's state.
    public var state: LoadableState<Value>
    /// A silent reload (a refresh) runs over this page's state.
    public var isRefreshing: Bool
    /// The state came back because the page's load was cancelled.
    public var isCancelled: Bool
    /// The page was loaded before the first one (`loadPrevious`).
    public var isPrevious: Bool
    /// Pages were dropped: by the page cap from the other end, or by a
    /// refresh after this page (its next cursor changed).
    public var droppedPages: Bool
}

/// A list of pages that loads one page at a time (an infinite, paginated
/// load): `load` drops the pages and loads the first one; `loadNext` and
/// `loadPrevious` load one more at either end, with the cursor the page at
/// that end returned. Each page is a job of its own, so cancels, retries,
/// timeouts and sharing apply per page.
///
///     let feed = PagedCell<String>(codec: .utf8) { query in
///         let (items, next) = try await api.page(after: query.cursor)
///         return Page(items, next: next)
///     }
///     feed.load()
///     feed.loadNext()
///
/// A next or previous page joins `pages` once loaded; if it fails or is
/// cancelled the pages already there stay. With `maxPages` reached, a new
/// page drops the page at the other end. `refresh()` reloads the pages in
/// order, silently, each only once the one before it loaded, and stops at
/// a page whose next cursor changed (dropping the pages after it).
///
/// The cell is `Observable` (`pages`, `hasNext`, `hasPrevious`) and
/// `events` streams every page's events.
public final class PagedCell<Value: Sendable>: Observable, @unchecked Sendable {
    /// The most pages a cell holds.
    public static var pagesMax: Int { 1024 }
    /// The most bytes of one cursor.
    public static var cursorMax: Int { PageWire.cursorMax }

    private let registrar = ObservationRegistrar()
    private let core: PagesCell
    private let runtime: Runtime
    private let loader: SwiftLoader<[UInt8], [UInt8]>
    private let codec: ValueCodec<Value>
    private let relay: Relay
    /// The cache the cell's pages use, if any.
    public let cache: LoadCache<[UInt8], Value>?

    /// A cell whose pages `loader` loads. `maxPages`: the page cap (0, or
    /// more than `pagesMax`: `pagesMax`).
    ///
    /// `cache`: each page is read from and stored in its store, with its
    /// policy and ages, under the key of the load's request followed by a
    /// 0 byte and the page's cursor (none for the first page); an entry
    /// holds the page's value (encoded with the loader's codec; the cache's
    /// codec is not used) and its cursors, so a cell that finds a page
    /// cached can load the pages after it.
    public init(runtime: Runtime = .shared, maxPages: Int = 0, loader: PageLoader<Value>,
                cache: LoadCache<[UInt8], Value>? = nil) {
        self.runtime = runtime
        self.cache = cache
        self.codec = loader.codec
        self.loader = loader.loader
        let relay = Relay()
        self.relay = relay
        let cap = maxPages <= 0 || maxPages > Self.pagesMax ? Self.pagesMax : maxPages
        core = PagesCell(id: runtime.table.makeID(.loadable), runtime: runtime, maxPages: cap, observer: relay)
        runtime.table.insert(core)
        relay.cell = self
    }

    /// A cell with a loader of its own around `loader`; values are stored
    /// as bytes with `codec` (for the pages' jobs and caches).
    /// `cache` as for `init(runtime:maxPages:loader:cache:)`.
    public convenience init(runtime: Runtime = .shared, maxPages: Int = 0, codec: ValueCodec<Value>,
                            cache: LoadCache<[UInt8], Value>? = nil,
                            loader: @escaping @Sendable (PageQuery) async throws -> Page<Value>) {
        self.init(runtime: runtime, maxPages: maxPages,
                  loader: PageLoader(runtime: runtime, codec: codec, loader), cache: cache)
    }

    deinit {
        let core = self.core
        runtime.table.withLock { $0.handles[core.id] = nil }
        core.askFree()
        relay.finish()
    }

    // MARK: - Operations

    /// Drops the pages and loads the first one for `request`. `share`:
    /// pages of the same request and cursor that other cells with the same
    /// `PageLoader` load at the same time share one job (with a cache,
    /// pages under the same key). `policy` overrides the cache's policy for
    /// the pages of this load. `priority`: where each page's job waits in
    /// its loader's queue, higher first.
    public func load(_ request: [UInt8] = [], share: Bool = false, timeout: Duration? = nil, retries: Int = 0,
                     policy: CachePolicy? = nil, priority: Int = 0) {
        let settings = LoadSettings(silently: false, timeout: timeout, interrupts: [], retries: retries,
                                    priority: priority)
        let cacheUse = cache.map {
            CacheUse<[UInt8]>(store: $0.store, key: Array($0.key(request).utf8), policy: policy ?? $0.policy,
                              freshMs: $0.freshFor.saturatingMilliseconds,
                              maxAgeMs: $0.maxAge?.saturatingMilliseconds ?? 0)
        }
        core.askLoad(PagesCell.Base(loader: loader, request: request, options: settings.options, share: share,
                                    cache: cacheUse))
    }

    /// Loads the page after the last one; false at the end of the list (or
    /// before a page loaded). Asked again while it loads, nothing new starts.
    @discardableResult
    public func loadNext() -> Bool { core.askMore(forward: true) == .ok }

    /// Loads the page before the first one; false when there is none.
    @discardableResult
    public func loadPrevious() -> Bool { core.askMore(forward: false) == .ok }

    /// Reloads the pages in order, silently; false when nothing was loaded.
    @discardableResult
    public func refresh() -> Bool { core.askRefresh() == .ok }

    /// Cancels every page load under way.
    public func cancel() { core.askCancel() }

    /// Cancels every page load and drops all pages.
    public func reset() { core.askReset() }

    // MARK: - State

    /// Each page's state, in order.
    public var pages: [LoadableState<Value>] {
        registrar.access(self, keyPath: \.pages)
        return core.withShared { $0.events }.map { translate($0.state) }
    }

    /// The values of the loaded pages, in order.
    public var values: [Value] {
        pages.compactMap { if case .loaded(let value) = $0 { value } else { nil } }
    }

    /// Whether the last page has a next cursor.
    public var hasNext: Bool {
        registrar.access(self, keyPath: \.pages)
        return core.withShared { $0.hasNext }
    }

    /// Whether the first page has a previous cursor.
    public var hasPrevious: Bool {
        registrar.access(self, keyPath: \.pages)
        return core.withShared { $0.hasPrevious }
    }

    /// Every event from now on, until the cell is gone.
    public var events: AsyncStream<PageEvent<Value>> { relay.stream() }

    fileprivate func translate(_ state: CellState<[UInt8], [UInt8]>) -> LoadableState<Value> {
        switch state.status {
        case .absent: return .absent
        case .loading: return .loading
        case .loaded:
            guard let bytes = state.value else { return .absent }
            guard let value = codec.decode(bytes) else {
                return .error(LoadError(.invalidArgument, message: "a page's value does not decode"))
            }
            return .loaded(value)
        case .error:
            let error = state.error ?? LoadError(.io)
            return .error(error.underlying ?? error)
        }
    }

    fileprivate func changed() {
        registrar.withMutation(of: self, keyPath: \.pages) {}
    }

    /// Passes the core cell's events to the cell and its streams (loop thread).
    private final class Relay: PagesObserver, @unchecked Sendable {
        weak var cell: PagedCell?
        private let subscribers = Mutex<[Int: AsyncStream<PageEvent<Value>>.Continuation]?>([:])
        private let serial = Atomic<Int>(0)

        func stream() -> AsyncStream<PageEvent<Value>> {
            let (stream, continuation) = AsyncStream<PageEvent<Value>>.makeStream()
            let key = serial.add(1, ordering: .relaxed).newValue
            let added = subscribers.withLock { s -> Bool in
                guard s != nil else { return false }
                s?[key] = continuation
                return true
            }
            if added {
                continuation.onTermination = { [weak self] _ in
                    _ = self?.subscribers.withLock { $0?.removeValue(forKey: key) }
                }
            } else {
                continuation.finish()
            }
            return stream
        }

        func finish() {
            let all = subscribers.withLock { s -> [AsyncStream<PageEvent<Value>>.Continuation] in
                defer { s = nil }
                return Array((s ?? [:]).values)
            }
            for c in all { c.finish() }
        }

        override func pagesEvent(_ cell: PagesCell, _ event: CellEvent<[UInt8], [UInt8]>, flags: PagesCell.Flags) {
            guard let owner = self.cell else { return }
            owner.changed()
            guard event.type == .state else { return }
            let page = PageEvent(index: Int(event.state.kind), state: owner.translate(event.state),
                                 isRefreshing: event.state.isRefreshing, isCancelled: event.isCancelled,
                                 isPrevious: flags.contains(.previous), droppedPages: flags.contains(.dropped))
            let all = subscribers.withLock { Array(($0 ?? [:]).values) }
            for c in all { c.yield(page) }
        }
    }
}

/// The loader of `PagedCell`s: a closure that loads one page. Cells made
/// with the same `PageLoader` may share the jobs of their pages (`share:`).
public final class PageLoader<Value: Sendable>: Sendable {
    let loader: SwiftLoader<[UInt8], [UInt8]>
    let codec: ValueCodec<Value>

    /// A loader running `body` for each page; values become bytes with `codec`.
    public init(runtime: Runtime = .shared, codec: ValueCodec<Value>,
                _ body: @escaping @Sendable (PageQuery) async throws -> Page<Value>) {
        self.codec = codec
        loader = SwiftLoader(id: runtime.table.makeID(.loader)) { bytes, _ in
            guard case .success(let request) = PageWire.decodeRequest(bytes) else {
                throw LoadError(.invalidArgument, message: "not a page request")
            }
            let direction = PageDirection(rawValue: request.direction) ?? .first
            let page = try await body(PageQuery(request: request.request, cursor: request.cursor,
                                                direction: direction))
            if (page.next?.count ?? 0) > PageWire.cursorMax || (page.previous?.count ?? 0) > PageWire.cursorMax {
                throw LoadError(.tooBig, message: "a page's cursor is longer than \(PageWire.cursorMax) bytes")
            }
            return PageWire.encode(PageWire.Value(value: codec.encode(page.value), next: page.next,
                                                  previous: page.previous))
        }
    }
}

extension PagedCell where Value == [UInt8] {
    /// A cell of byte-string pages.
    /// `cache` as for `init(runtime:maxPages:loader:cache:)`.
    public convenience init(runtime: Runtime = .shared, maxPages: Int = 0, cache: LoadCache<[UInt8], [UInt8]>? = nil,
                            loader: @escaping @Sendable (PageQuery) async throws -> Page<[UInt8]>) {
        self.init(runtime: runtime, maxPages: maxPages, codec: .bytes, cache: cache, loader: loader)
    }
}

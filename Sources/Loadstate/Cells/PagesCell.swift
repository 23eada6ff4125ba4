import Synchronization

/// A cell holding a list of pages (an infinite, paginated load).
///
/// Each page is loaded by an internal loadable cell of its own, owned by
/// this one, so that cancels, retries, timeouts, sharing, caching and
/// priorities apply per page as for any load. A page's request is a
/// `PageWire.Request` (the load's request, the page's cursor and the
/// direction); its value a `PageWire.Value` (the page's value and the
/// cursors of the pages next to it), or plain bytes for a page with no
/// further cursor.
///
/// The first page belongs to the list from its load on. A next or
/// previous page joins it only once loaded: until then (and if it fails
/// or is cancelled) its events carry the index it would take, and the
/// pages already there stay as they are. With the cap reached, the page at
/// the other end is dropped when a new one joins.
///
/// Operations run on the loop thread; what calls from other threads check
/// (the pages' latest events, the cursors at both ends, which directions
/// load) is published under the table lock.
@_spi(LoadstateC) public final class PagesCell: Handle, @unchecked Sendable {
    /// What a load of pages starts from: the loader, request, options and
    /// cache of `lds_pages_load`, used for every page of that load.
    package struct Base {
        package var loader: Loader<[UInt8], [UInt8]>
        package var request: [UInt8]
        package var options: LoadOptions
        /// Jobs are shared per page (`LDS_LOAD_SHARE`).
        package var share: Bool
        /// The load's cache, under the load's key: each page uses the key
        /// followed by a 0 byte and its cursor (`PageWire.cacheKey`).
        package var cache: CacheUse<[UInt8]>?
        /// The pages' jobs' progress becomes PROGRESS events (not with `LDS_LOAD_NO_PROGRESS`).
        package var deliversProgress: Bool

        package init(loader: Loader<[UInt8], [UInt8]>, request: [UInt8], options: LoadOptions, share: Bool,
                     cache: CacheUse<[UInt8]>?, deliversProgress: Bool = true) {
            self.loader = loader
            self.request = request
            self.options = options
            self.share = share
            self.cache = cache
            self.deliversProgress = deliversProgress
        }
    }

    /// What the event of a page says beyond its state.
    @_spi(LoadstateC) public struct Flags: OptionSet, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        /// The page was loaded before the first one (`loadPrevious`).
        public static let previous = Flags(rawValue: 1)
        /// Pages were dropped: at the other end by the cap, or after this
        /// page by a refresh that found another cursor.
        public static let dropped = Flags(rawValue: 2)
        /// The first event of a `load` (of its first page; or, for a load
        /// replaced or reset before its first page showed anything, the
        /// event that ends it): exactly one for each load.
        public static let loadStart = Flags(rawValue: 4)
    }

    /// What calls from any thread read, under the table lock.
    package struct Shared {
        /// The latest event of each page, in order (`state.kind` is the index).
        package var events: [CellEvent<[UInt8], [UInt8]>] = []
        package var hasNext = false
        package var hasPrevious = false
        package var nextBusy = false
        package var previousBusy = false
        /// A load was asked for since the cell was made or reset.
        package var loadAsked = false
    }

    /// One page and the internal cell that loads it.
    final class Page {
        let cell: Cell<[UInt8], [UInt8]>
        /// The cursor and direction the page was last asked for with.
        var cursor: [UInt8]?
        var direction: Int32
        /// The cursors the page last loaded with (nil: no page that way).
        var next: [UInt8]?
        var previous: [UInt8]?
        /// The next cursor when the running refresh began.
        var nextBeforeRefresh: [UInt8]?
        var latest: CellEvent<[UInt8], [UInt8]>?

        init(cell: Cell<[UInt8], [UInt8]>, cursor: [UInt8]?, direction: Int32) {
            self.cell = cell
            self.cursor = cursor
            self.direction = direction
        }
    }

    unowned(unsafe) let runtime: Runtime
    /// The most pages the list holds.
    package let maxPages: Int
    private let observer: PagesObserver
    private let freed = Atomic<Bool>(false)
    /// The host's name for the cell, set before it is inserted in the table.
    package var name: String?

    // Guarded by the table lock.
    private var shared = Shared()

    // Loop thread only.
    private var base: Base?
    private var pages: [Page] = []
    private var pendingNext: Page?
    private var pendingPrevious: Page?
    /// The page a refresh reloads now; the ones after it follow in order.
    private var refreshing: Page?
    /// The first page of the latest load until its first event, which is
    /// flagged `loadStart`.
    private var unstarted: Page?
    /// What the runtime observer is given as the cell of this cell's
    /// events: a cell of its id that runs nothing (made once needed).
    private lazy var observed = Cell<[UInt8], [UInt8]>(id: id, flavor: .loadable, runtime: runtime,
                                                       observer: { _, _ in })
    private var seq: UInt64 = 0

    package init(id: UInt64, runtime: Runtime, maxPages: Int, observer: PagesObserver) {
        self.runtime = runtime
        self.maxPages = max(maxPages, 1)
        self.observer = observer
        super.init(id: id)
    }

    /// Whether the cell was freed; a freed cell emits nothing.
    package var isFreed: Bool { freed.load(ordering: .acquiring) }

    /// Any thread: no event is reported after this returns.
    package func markFreed() { freed.store(true, ordering: .releasing) }

    override func shutdown(runtime: Runtime) {
        markFreed()
        free()
    }

    /// Any thread: runs `body` with the published part, under the table lock.
    package func withShared<R>(_ body: (inout Shared) -> R) -> R {
        runtime.table.withLock { _ in body(&shared) }
    }

    /// The published part, for a caller that already holds the table lock
    /// (the inspector, while it walks the table).
    var sharedWhileLocked: Shared { shared }

    // MARK: - Calls from any thread

    /// Asks for the next page (`forward`) or the previous one: `.wrongState`
    /// when that end has no cursor (or no page loaded yet); `.ok` and
    /// nothing new when that direction already loads; otherwise queues it.
    package func askMore(forward: Bool) -> ResultCode {
        let start = withShared { s -> ResultCode? in
            guard forward ? s.hasNext : s.hasPrevious else { return .wrongState }
            if forward ? s.nextBusy : s.previousBusy { return nil }
            if forward { s.nextBusy = true } else { s.previousBusy = true }
            return .ok
        }
        guard let start else { return .ok }
        guard start == .ok else { return start }
        runtime.loop.executeSkippable { [self] in loadMore(forward: forward) }
        return .ok
    }

    /// Queues a first page load of `base` (the pages are dropped).
    package func askLoad(_ base: Base) {
        withShared { s in
            s.loadAsked = true
            s.nextBusy = false
            s.previousBusy = false
        }
        runtime.loop.executeSkippable { [self] in load(base) }
    }

    /// Queues a refresh; `.wrongState` if no load was asked for.
    package func askRefresh() -> ResultCode {
        guard withShared({ $0.loadAsked }) else { return .wrongState }
        runtime.loop.executeSkippable { [self] in refresh() }
        return .ok
    }

    /// Queues a cancel of every running page load.
    package func askCancel() {
        runtime.loop.executeSkippable { [self] in cancel() }
    }

    /// Queues a reset: the pages are dropped.
    package func askReset() {
        withShared { $0.loadAsked = false }
        runtime.loop.executeSkippable { [self] in reset() }
    }

    /// Marks the cell freed and queues the release of its pages.
    package func askFree() {
        markFreed()
        runtime.loop.execute { [self] in free() }
    }

    // MARK: - Operations (loop thread)

    /// Drops the pages and loads the first one.
    func load(_ base: Base) {
        guard !isFreed else { return }
        dropAll()
        if unstarted != nil {
            // The load before this one showed nothing yet: its one event ends it, cancelled.
            unstarted = nil
            var ended = CellState<[UInt8], [UInt8]>.initial(at: Clock.wallMs())
            ended.request = self.base?.request
            emit(ended, index: 0, load: 0, flags: [.loadStart], cancelled: true)
        }
        self.base = base
        let page = makePage(cursor: nil, direction: 0, base)
        unstarted = page
        pages = [page]
        publish()
        start(page, spec(base, cursor: nil, direction: 0))
    }

    private func loadMore(forward: Bool) {
        guard !isFreed, let base else { return clearBusy(forward: forward) }
        let end = forward ? pages.last : pages.first
        guard let cursor = forward ? end?.next : end?.previous,
              (forward ? pendingNext : pendingPrevious) == nil else { return clearBusy(forward: forward) }
        let page = makePage(cursor: cursor, direction: forward ? 1 : -1, base)
        if forward { pendingNext = page } else { pendingPrevious = page }
        start(page, spec(base, cursor: cursor, direction: page.direction))
    }

    private func clearBusy(forward: Bool) {
        let next = pendingNext != nil, previous = pendingPrevious != nil
        withShared { s in
            if forward { s.nextBusy = next } else { s.previousBusy = previous }
        }
    }

    /// Reloads the first page silently; the pages after it follow, one at
    /// a time (see `pageEnded`).
    func refresh() {
        guard !isFreed, let first = pages.first else { return }
        cancelPending()
        for page in pages { page.nextBeforeRefresh = page.next }
        refreshing = first
        first.cell.refresh(ticket: first.cell.requestLeave())
    }

    func cancel() {
        guard !isFreed else { return }
        refreshing = nil
        cancelPending()
        for page in pages {
            page.cell.requestLeave()
            page.cell.cancel()
        }
    }

    func reset() {
        guard !isFreed else { return }
        let had = !pages.isEmpty || pendingNext != nil || pendingPrevious != nil
        dropAll()
        base = nil
        publish()
        if had {
            // It ends a load that showed nothing yet.
            let flags: Flags = unstarted != nil ? [.loadStart] : []
            unstarted = nil
            emit(CellState.initial(at: Clock.wallMs()), index: 0, load: 0, flags: flags)
        }
    }

    func free() {
        dropAll()
        unstarted = nil
        base = nil
    }

    // MARK: - Pages

    private func makePage(cursor: [UInt8]?, direction: Int32, _ base: Base) -> Page {
        let cell = Cell<[UInt8], [UInt8]>(id: runtime.table.makeID(.loadable), flavor: .loadable, runtime: runtime,
                                          observer: PageObserver(self))
        cell.deliversProgress = base.deliversProgress
        cell.observedAs = id
        return Page(cell: cell, cursor: cursor, direction: direction)
    }

    /// The spec of one page of `base`.
    private func spec(_ base: Base, cursor: [UInt8]?, direction: Int32) -> LoadSpec<[UInt8], [UInt8]> {
        let wire = PageWire.encode(PageWire.Request(request: base.request, cursor: cursor, direction: direction))
        var options = base.options
        // Each page would poll on its own: pages refresh together (`refresh`).
        options.refreshIntervalMs = 0
        let cache = base.cache.map {
            CacheUse<[UInt8]>(store: $0.store, key: PageWire.cacheKey($0.key, cursor: cursor), policy: $0.policy,
                              freshMs: $0.freshMs, maxAgeMs: $0.maxAgeMs, followsLoaderRules: $0.followsLoaderRules)
        }
        if base.share { options.shareKey = cache?.key ?? wire }
        return LoadSpec(loader: base.loader, request: wire, kind: 0, options: options, cache: cache)
    }

    private func start(_ page: Page, _ spec: LoadSpec<[UInt8], [UInt8]>) {
        page.cell.load(spec, ticket: page.cell.requestLeave())
    }

    /// Ends a page's cell: it reports nothing more.
    private func release(_ page: Page) {
        page.cell.markFreed()
        page.cell.requestLeave()
        page.cell.free()
        if refreshing === page { refreshing = nil }
    }

    private func dropAll() {
        refreshing = nil
        for page in pages { release(page) }
        pages = []
        if let p = pendingNext { release(p) }
        if let p = pendingPrevious { release(p) }
        pendingNext = nil
        pendingPrevious = nil
    }

    /// Cancels the next and previous pages under way (their events say so).
    private func cancelPending() {
        for page in [pendingNext, pendingPrevious].compactMap({ $0 }) {
            page.cell.requestLeave()
            page.cell.cancel()
        }
    }

    // MARK: - Events

    /// An event of a page's cell.
    fileprivate func pageEvent(_ cell: Cell<[UInt8], [UInt8]>, _ event: CellEvent<[UInt8], [UInt8]>) {
        guard !isFreed else { return }
        let ended = event.type == .state && cell.currentLoad == nil
        if let page = pendingNext, page.cell === cell {
            return pendingEvent(page, event, forward: true, ended: ended)
        }
        if let page = pendingPrevious, page.cell === cell {
            return pendingEvent(page, event, forward: false, ended: ended)
        }
        guard let index = pages.firstIndex(where: { $0.cell === cell }) else { return }
        let page = pages[index]
        let state = shown(event.state, of: page)
        var flags: Flags = []
        if unstarted === page {
            unstarted = nil
            flags.insert(.loadStart)
        }
        var continueWith: [UInt8]?
        if ended, refreshing === page {
            refreshing = nil
            if state.status == .loaded, !event.isCancelled, index + 1 < pages.count {
                if let next = page.next, next == page.nextBeforeRefresh {
                    continueWith = next
                } else {
                    // Another cursor (or none): the pages after this one no longer follow it.
                    for dropped in pages[(index + 1)...] { release(dropped) }
                    pages.removeSubrange((index + 1)...)
                    if let p = pendingNext {
                        release(p)
                        pendingNext = nil
                    }
                    flags.insert(.dropped)
                }
            }
        }
        record(event, state: state, page: page)
        publish()
        emit(event, state: state, index: index, flags: flags)
        if let cursor = continueWith, let base, !isFreed, index + 1 < pages.count {
            let following = pages[index + 1]
            following.cursor = cursor
            following.direction = 1
            var spec = spec(base, cursor: cursor, direction: 1)
            spec.options.silent = true
            if let cache = spec.cache, cache.policy == .cacheFirst || cache.policy == .cacheThenLoad {
                spec.cache = cache.with(policy: .loadOnly)
            }
            refreshing = following
            start(following, spec)
        }
    }

    /// An event of a next or previous page not in the list yet.
    private func pendingEvent(_ page: Page, _ event: CellEvent<[UInt8], [UInt8]>, forward: Bool, ended: Bool) {
        let state = shown(event.state, of: page)
        var flags: Flags = forward ? [] : [.previous]
        var index = forward ? pages.count : 0
        var discard = false
        if ended {
            if forward { pendingNext = nil } else { pendingPrevious = nil }
            if state.status == .loaded && !event.isCancelled {
                if pages.count >= maxPages, let dropped = forward ? pages.first : pages.last {
                    release(dropped)
                    if forward { pages.removeFirst() } else { pages.removeLast() }
                    flags.insert(.dropped)
                }
                if forward {
                    pages.append(page)
                    index = pages.count - 1
                } else {
                    pages.insert(page, at: 0)
                }
            } else {
                discard = true
            }
        }
        record(event, state: state, page: page)
        if ended {
            let next = pendingNext != nil, previous = pendingPrevious != nil
            withShared { s in
                if forward { s.nextBusy = next } else { s.previousBusy = previous }
            }
        }
        publish()
        emit(event, state: state, index: index, flags: flags)
        if discard { release(page) }
    }

    /// A page cell's state as the pages cell shows it: the page's own
    /// value, the load's request; a value that does not decode is an
    /// error. Records the page's cursors when it loaded.
    private func shown(_ state: CellState<[UInt8], [UInt8]>, of page: Page) -> CellState<[UInt8], [UInt8]> {
        var shown = state
        shown.request = base?.request
        guard state.status == .loaded, let bytes = state.value else { return shown }
        switch PageWire.decodeValue(bytes) {
        case .success(let decoded):
            shown.value = decoded.value
            if !state.isPartial {
                page.next = decoded.next
                page.previous = decoded.previous
            }
        case .failure(let failure):
            shown.status = .error
            shown.value = nil
            shown.isPartial = false
            shown.error = failure == .cursorTooBig
                ? LoadError(.tooBig, message: "a page's cursor is longer than LDS_CURSOR_MAX")
                : LoadError(.invalidArgument, message: "a page's value does not decode")
            page.next = nil
            page.previous = nil
        }
        return shown
    }

    private func record(_ event: CellEvent<[UInt8], [UInt8]>, state: CellState<[UInt8], [UInt8]>, page: Page) {
        guard event.type == .state else { return }
        var latest = event
        latest.state = state
        page.latest = latest
    }

    /// Publishes the pages' latest events and the cursors at both ends.
    private func publish() {
        var events: [CellEvent<[UInt8], [UInt8]>] = []
        events.reserveCapacity(pages.count)
        for (index, page) in pages.enumerated() {
            var event = page.latest ?? CellEvent(type: .state, cell: id, seq: 0, load: 0,
                                                 state: .initial(at: Clock.wallMs()), stateChanged: true,
                                                 isCancelled: false, elapsedMs: 0, progressDone: 0, progressTotal: 0)
            event.cell = id
            event.state.kind = Int32(truncatingIfNeeded: index)
            events.append(event)
        }
        let hasNext = pages.last?.next != nil, hasPrevious = pages.first?.previous != nil
        withShared { s in
            s.events = events
            s.hasNext = hasNext
            s.hasPrevious = hasPrevious
        }
    }

    private func emit(_ event: CellEvent<[UInt8], [UInt8]>, state: CellState<[UInt8], [UInt8]>, index: Int,
                      flags: Flags) {
        var out = event
        out.state = state
        out.state.kind = Int32(truncatingIfNeeded: index)
        deliver(out, flags: flags)
    }

    private func emit(_ state: CellState<[UInt8], [UInt8]>, index: Int, load: UInt64, flags: Flags,
                      cancelled: Bool = false) {
        var out = CellEvent(type: .state, cell: id, seq: 0, load: load, state: state, stateChanged: true,
                            isCancelled: cancelled, elapsedMs: 0, progressDone: 0, progressTotal: 0)
        out.state.kind = Int32(truncatingIfNeeded: index)
        deliver(out, flags: flags)
    }

    private func deliver(_ event: CellEvent<[UInt8], [UInt8]>, flags: Flags) {
        guard !isFreed else { return }
        seq &+= 1
        var out = event
        out.cell = id
        out.seq = seq
        observer.pagesEvent(self, out, flags: flags)
        // The runtime observer sees the pages cell's event, not its page's.
        if let watcher = runtime.observer { watcher.cellEvent(observed, out) }
    }
}

/// Forwards the events of a page's cell to its pages cell.
private final class PageObserver: CellObserver<[UInt8], [UInt8]> {
    unowned let owner: PagesCell

    init(_ owner: PagesCell) {
        self.owner = owner
    }

    override func cellEvent(_ cell: Cell<[UInt8], [UInt8]>, _ event: CellEvent<[UInt8], [UInt8]>) {
        owner.pageEvent(cell, event)
    }
}

/// What a pages cell reports its events to, on the loop thread.
@_spi(LoadstateC) open class PagesObserver {
    package init() {}

    /// One event of `cell`: `event.state.kind` is the index of the page it
    /// is about, `event.state.value` that page's own value.
    open func pagesEvent(_ cell: PagesCell, _ event: CellEvent<[UInt8], [UInt8]>, flags: PagesCell.Flags) {}
}

extension PagesCell: CacheViewer {
    /// Each page showing an invalidated entry reloads it (as any cell).
    func cacheInvalidated(_ store: AnyObject, prefix: [UInt8]) {
        for page in pages { page.cell.cacheInvalidated(store, prefix: prefix) }
    }
}

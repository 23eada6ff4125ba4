import Loadstate

/// A page of the server: its number and how many bytes it has.
struct Page: Sendable, Equatable {
    var number: Int
    var length: Int
}

/// A view model on the main actor: pages loaded over http by number, kept
/// in a memory cache, refreshed on demand; and a greeting loaded by a
/// closure that reads the model's own state.
@MainActor
final class PagesModel {
    let page: LoadableCellWith<Int, Page>
    @Loadable var greeting: LoadableState<String>
    var name = "loadstate"
    var slowHintShown = false

    init(server: String, http: BuiltinLoader<HTTPRequest, HTTPResponse>, cache: MemoryCache) {
        // The loader: one http request per page number.
        let pages = LoadFunction<Int, Page> { number in
            let response = try await http.fetch(HTTPRequest(url: "\(server)/bytes/\(number)"))
            return Page(number: number, length: response.body.count)
        }
        // How a page is kept in the cache: "number length" as text.
        let codec = ValueCodec<String>.utf8.map(
            { text -> Page? in
                let parts = text.split(separator: " ").compactMap { Int($0) }
                return parts.count == 2 ? Page(number: parts[0], length: parts[1]) : nil
            },
            { page in "\(page.number) \(page.length)" })
        page = LoadableCellWith(
            loader: pages,
            cache: LoadCache(cache, codec: codec, policy: .cacheFirst, freshFor: .seconds(60)) { "page/\($0)" })
    }

    func open(_ number: Int) async {
        await page.load(number)
    }

    func reload() async {
        page.refresh()
        await page.waitForLoad()
    }

    func greet() async {
        await $greeting.load(interrupts: [.seconds(5)]) {
            "hello, \(self.name)"  // the closure runs on the main actor
        } onInterrupt: { interrupt in
            self.slowHintShown = interrupt.elapsed >= interrupt.delay
        }
    }
}

@main
struct Tour {
    @MainActor
    static func main() async {
        let server = CommandLine.arguments.dropFirst().first ?? "http://127.0.0.1:8000"
        let http = BuiltinLoader.http()
        let cache = MemoryCache(name: "pages")
        let model = PagesModel(server: server, http: http, cache: cache)

        // Load with a request: the request travels with every state.
        await model.open(3)
        print("page:", model.page.state, "request:", model.page.request ?? 0)

        // Refresh: the old value stays visible until the new one arrives.
        await model.reload()
        print("refreshed:", model.page.state, "from cache:", model.page.snapshot.isFromCache)

        // Another model with the same cache: the fresh entry is shown, no request is made.
        let other = PagesModel(server: server, http: http, cache: cache)
        await other.open(3)
        print("other:", other.page.state, "from cache:", other.page.snapshot.isFromCache)

        // A fetch without a cell: a status outside 2xx is thrown with its response.
        do {
            _ = try await http.fetch(HTTPRequest(url: "\(server)/status/404"))
        } catch let error as HTTPStatusError {
            print("missing:", error.response.status, error.response.text)
        } catch {
            print("failed:", error)
        }

        // A cell keyed by URL: the request is the URL itself.
        let byURL = LoadableCellWith(loader: http.urlFunction())
        await byURL.load("\(server)/bytes/5")
        if case .loaded(let response) = byURL.state { print("by url:", response.status, response.body.count, "bytes") }

        await model.greet()
        print("greeting:", model.greeting)
    }
}

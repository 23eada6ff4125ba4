// A GTK 4 window in Swift: a label shows the state of a LoadableCell, and
// buttons load, load slowly (an interrupt says it takes long), fail and
// cancel. The Swift API needs no descriptor: its closures and its stream
// of states run on the caller's actor, here the main actor, which runs on
// the GTK main thread once GLib's loop runs the main actor's jobs (below).
//
// With LOADSTATE_GTK_SCRIPT=1 the window presses its own buttons, prints
// each text its label shows, closes itself while a load runs and exits 0
// when every update ran on the GTK main thread.
import CGtk4
import Dispatch
import Glibc
import Loadstate

// MARK: - The main actor inside GLib's main loop

// Swift runs the main actor's jobs from Dispatch's main queue, which
// `dispatchMain()` would drain. A GTK program's main thread runs GLib's loop
// instead, so the loop must run the queue: libdispatch gives a descriptor
// that is readable while jobs wait, and the function that runs them. These
// two are the hooks Foundation's run loop uses on Linux for the same job.
@_silgen_name("_dispatch_get_main_queue_handle_4CF")
private func mainQueueDescriptor() -> Int32
@_silgen_name("_dispatch_main_queue_callback_4CF")
private func runMainQueue(_ message: UnsafeMutableRawPointer?)

/// Makes GLib's default main context run the main actor's jobs.
private func runMainActorInGLib() {
    _ = g_unix_fd_add(mainQueueDescriptor(), G_IO_IN, { _, _, _ in
        runMainQueue(nil)
        return 1  // G_SOURCE_CONTINUE: keep watching
    }, nil)
}

// MARK: - Signals

/// A closure a GTK signal runs; GTK calls it on the main thread.
private final class Handler {
    let run: @MainActor () -> Void
    init(_ run: @escaping @MainActor () -> Void) { self.run = run }
}

/// Connects `signal` of `widget` to `run`. GTK emits the signals used here
/// on its main thread, which is the main actor's.
@MainActor
private func connect(_ widget: UnsafeMutablePointer<GtkWidget>, _ signal: String,
                     _ run: @escaping @MainActor () -> Void) {
    let callback: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> gboolean = { _, data in
        guard let data else { return 0 }
        let handler = Unmanaged<Handler>.fromOpaque(data).takeUnretainedValue()
        MainActor.assumeIsolated { handler.run() }
        return 0  // for "close-request": let the window close
    }
    let data = Unmanaged.passRetained(Handler(run)).toOpaque()
    g_signal_connect_data(widget, signal, unsafeBitCast(callback, to: GCallback.self), data, nil, GConnectFlags(0))
}

// MARK: - The window

/// A widget as one of its GTK types (GTK_WINDOW(widget) in C).
private func cast<T>(_ widget: UnsafeMutablePointer<GtkWidget>) -> UnsafeMutablePointer<T> {
    UnsafeMutablePointer<T>(OpaquePointer(widget))
}

/// What a failed load throws; its description is what the label shows.
struct ServerSaidNo: Error, CustomStringConvertible {
    var description: String { "the server said no" }
}

@MainActor
final class LoadWindow {
    let cell = LoadableCell<String>()
    let window: UnsafeMutablePointer<GtkWidget>
    let label: UnsafeMutablePointer<GtkWidget>
    var buttons: [String: UnsafeMutablePointer<GtkWidget>] = [:]
    var loads = 0
    var slowHint = false
    /// Texts the label showed, for the scripted run.
    let shown: AsyncStream<String>
    private let show: AsyncStream<String>.Continuation
    private var lastText = ""
    /// Updates and closures that ran on another thread than GTK's.
    var offMainThread = 0
    let gtkThread = pthread_self()
    var closed = false
    /// Loads whose closure saw its task cancelled.
    var cancelledLoads = 0
    var onLoadCancelled: () -> Void = {}
    var onClosed: () -> Void = {}

    init() {
        (shown, show) = AsyncStream.makeStream(of: String.self)
        window = gtk_window_new()
        gtk_window_set_title(cast(window), "loadstate")
        gtk_window_set_default_size(cast(window), 360, 120)
        label = gtk_label_new("")
        let box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 8)!
        let row = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 8)!
        gtk_box_append(cast(box), label)
        gtk_box_append(cast(box), row)
        for name in ["Load", "Load slowly", "Fail", "Cancel"] {
            let button = gtk_button_new_with_label(name)!
            gtk_box_append(cast(row), button)
            buttons[name] = button
        }
        gtk_window_set_child(cast(window), box)
        connect(buttons["Load"]!, "clicked") { [unowned self] in load(slowly: false) }
        connect(buttons["Load slowly"]!, "clicked") { [unowned self] in load(slowly: true) }
        connect(buttons["Fail"]!, "clicked") { [unowned self] in fail() }
        connect(buttons["Cancel"]!, "clicked") { [unowned self] in cell.cancel() }
        connect(window, "close-request") { [unowned self] in
            closed = true  // the widgets go with the window
            cell.reset()  // cancels a running load: its task ends
            onClosed()
        }
        // The label follows the cell: its stream of states, read on the
        // main actor.
        Task { [unowned self] in
            for await state in cell.states { render(state) }
        }
    }

    func checkThread() {
        if pthread_equal(pthread_self(), gtkThread) == 0 { offMainThread += 1 }
    }

    func render(_ state: LoadableState<String>) {
        checkThread()
        let text: String
        switch state {
        case .absent: text = "nothing loaded"
        case .loading: text = slowHint ? "loading... taking longer than expected" : "loading..."
        case .loaded(let value): text = "loaded: \(value)"
        case .error(let error): text = "error: \(error)"
        }
        guard !closed, text != lastText else { return }
        lastText = text
        gtk_label_set_text(OpaquePointer(label), text)
        show.yield(text)
    }

    func load(slowly: Bool) {
        loads += 1
        let number = loads
        slowHint = false
        cell.load(interrupts: [.milliseconds(300)]) {
            self.checkThread()  // the closure runs on the main actor
            do {
                try await Task.sleep(for: .milliseconds(slowly ? 1_500 : 150))
            } catch {
                self.cancelledLoads += 1
                self.onLoadCancelled()
                throw error
            }
            return "result \(number)"
        } onInterrupt: { _ in
            self.checkThread()
            self.slowHint = true
            self.render(self.cell.state)
        }
    }

    func fail() {
        slowHint = false
        cell.load {
            try await Task.sleep(for: .milliseconds(50))
            throw ServerSaidNo()
        }
    }

    /// Emits "clicked" on a button, as a click does.
    func press(_ name: String) {
        guard let button = buttons[name] else { return }
        var instance = GValue()
        g_value_init(&instance, gtk_button_get_type())
        g_value_set_object(&instance, button)
        g_signal_emitv(&instance, g_signal_lookup("clicked", gtk_button_get_type()), 0, nil)
        g_value_unset(&instance)
    }
}

// MARK: - Scripted run

/// Presses the buttons in turn and waits for what the label shows.
@MainActor
func script(_ window: LoadWindow, quit: @escaping @MainActor () -> Void) async {
    var shown = window.shown.makeAsyncIterator()
    func waitFor(_ prefix: String) async {
        while let text = await shown.next(isolation: #isolation) {
            print("state: \(text)")
            if text.hasPrefix(prefix) { return }
        }
    }
    await waitFor("nothing loaded")
    window.press("Load")
    await waitFor("loaded")
    window.press("Load")
    window.press("Load")  // supersedes the load just started
    await waitFor("loaded")
    window.press("Load")
    window.press("Cancel")  // the value from before comes back
    await waitFor("loaded")
    window.press("Load slowly")
    await waitFor("loading... taking longer")
    await waitFor("loaded")
    window.press("Fail")
    await waitFor("error")
    window.press("Load")
    await waitFor("loading")
    // Closing the window while the load runs: the close handler resets the
    // cell, which cancels the load's task.
    let cancelledBefore = window.cancelledLoads
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        window.onLoadCancelled = { done.resume() }
        gtk_window_close(cast(window.window))
    }
    await window.cell.settled()
    let state = window.cell.state.isAbsent ? "nothing loaded" : "\(window.cell.state)"
    print("closed while loading: state \(state), loads cancelled \(window.cancelledLoads - cancelledBefore)")
    print("updates off the GTK thread: \(window.offMainThread)")
    quit()
}

// MARK: - Main

gtk_init()
runMainActorInGLib()
let loop = g_main_loop_new(nil, 0)
let window = LoadWindow()
var exitCode: Int32 = 0
gtk_window_present(cast(window.window))
if getenv("LOADSTATE_GTK_SCRIPT") != nil {
    Task {
        await script(window) {
            exitCode = window.offMainThread == 0 && window.cell.state.isAbsent ? 0 : 1
            g_main_loop_quit(loop)
        }
    }
} else {
    window.onClosed = { g_main_loop_quit(loop) }
}
g_main_loop_run(loop)
exit(exitCode)

// A Swift program using loadstate's native API: a loadable value with
// streamed partial results, a refresh over the old value, a load that
// gives up at an interrupt, and a process.
import Loadstate

enum Action: Sendable { case save }

@main
struct Example {
    static func main() async {
        let numbers = LoadableCell<[Int]>()

        // Stream partial values; the last one stays when the closure returns.
        await numbers.load { yield in
            var seen: [Int] = []
            for n in [1, 2, 3] {
                seen.append(n)
                yield(seen)
            }
        }
        print("loaded:", numbers.state)

        // Load silently: the old value stays visible until the new one arrives.
        await numbers.load(silently: true) { [4, 5] }
        print("refreshed:", numbers.state)

        // A load that takes too long: the interrupt handler gives up.
        await numbers.load(interrupts: [.milliseconds(20)]) {
            try await Task.sleep(for: .seconds(10))
            return []
        } onInterrupt: { _ in
            throw TimeoutError()
        }
        print("slow load:", numbers.state.error is TimeoutError ? "timed out" : "\(numbers.state)")

        // A process: idle -> running(kind) -> finished(kind) | failed(kind, error).
        let saving = ProcessCell<Action>()
        await saving.run(.save) {}
        print("process:", saving.state)
    }
}

/// What an interrupt handler receives: how long the load was scheduled to
/// run before this interrupt, and how long it has actually run.
///
/// `delay` is the sum of the interrupt delays so far (with delays
/// `[.seconds(2), .seconds(3)]`, the second interrupt has a delay of five
/// seconds), which is what Processed passes to its handlers, so that a
/// handler ported from it keeps comparing the delay:
///
///     onInterrupt: { interrupt in
///         switch interrupt {
///         case .seconds(5): throw TimeoutError()
///         default: showSlowLoadingHint = true
///         }
///     }
///
/// `elapsed` is measured on the runtime's clock when the interrupt fires;
/// it is never less than `delay`. Equality compares the delays only.
public struct Interrupt: Sendable, Hashable, CustomStringConvertible {
    /// The sum of the scheduled delays up to and including this interrupt.
    public var delay: Duration
    /// The time since the load began, measured when the interrupt fired.
    public var elapsed: Duration
    /// 1 for the first interrupt of a load, 2 for the second, ...
    public var number: Int

    /// An interrupt with these times.
    public init(delay: Duration, elapsed: Duration, number: Int) {
        self.delay = delay
        self.elapsed = elapsed
        self.number = number
    }

    /// An interrupt at a scheduled delay, to compare with: `case
    /// .seconds(5):` in a `switch` over an interrupt, or `interrupt ==
    /// .milliseconds(400)`.
    public init(delay: Duration) {
        self.init(delay: delay, elapsed: delay, number: 0)
    }

    /// Interrupts are equal when their scheduled delays are: an interrupt
    /// is named by when it was due, whatever the clock measured.
    public static func == (a: Interrupt, b: Interrupt) -> Bool {
        a.delay == b.delay
    }

    /// Hashes the scheduled delay, as `==` compares it.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(delay)
    }

    /// The interrupt due after `seconds`.
    public static func seconds<T: BinaryInteger>(_ seconds: T) -> Interrupt { Interrupt(delay: .seconds(seconds)) }

    /// The interrupt due after `seconds`.
    public static func seconds(_ seconds: Double) -> Interrupt { Interrupt(delay: .seconds(seconds)) }

    /// The interrupt due after `milliseconds`.
    public static func milliseconds<T: BinaryInteger>(_ milliseconds: T) -> Interrupt {
        Interrupt(delay: .milliseconds(milliseconds))
    }

    /// The interrupt due after `milliseconds`.
    public static func milliseconds(_ milliseconds: Double) -> Interrupt { Interrupt(delay: .milliseconds(milliseconds)) }

    /// A description giving both times.
    public var description: String { "interrupt \(number) at \(delay) (elapsed \(elapsed))" }
}

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
/// it is never less than `delay`.
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

    /// Matches an interrupt whose scheduled delay is `pattern`, so that a
    /// `switch` over an interrupt can name delays as `case .seconds(5):`.
    public static func ~= (pattern: Duration, value: Interrupt) -> Bool {
        pattern == value.delay
    }

    /// Whether the interrupt's scheduled delay is `delay`.
    public static func == (interrupt: Interrupt, delay: Duration) -> Bool {
        interrupt.delay == delay
    }

    /// A description giving both times.
    public var description: String { "interrupt \(number) at \(delay) (elapsed \(elapsed))" }
}

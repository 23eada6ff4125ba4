/// How a cell's loads follow the host's signals (`Runtime.setOnline`,
/// `Runtime.setForeground`): set once on the cell, applied to every load
/// the cell starts from then on (a `refresh` repeats the last load's).
///
///     feed.hostSignals = HostSignalPolicy(offline: .fail,
///                                         refreshOnForeground: .every(.seconds(5)))
public struct HostSignalPolicy: Sendable, Equatable {
    /// What a load does while the runtime is offline; `.wait` by default.
    public var offline: OfflineMode
    /// Whether, and how often, a loaded value is refreshed silently when
    /// the runtime returns to the foreground; nil (the default) for never.
    public var refreshOnForeground: ForegroundRefresh?
    /// A polling load (`refreshInterval`) goes on polling while the runtime
    /// is in the background; false by default (polls wait for the foreground).
    public var pollsInBackground: Bool

    /// A policy; the defaults wait while offline, do not refresh on
    /// foreground and do not poll in the background.
    public init(offline: OfflineMode = .wait, refreshOnForeground: ForegroundRefresh? = nil,
                pollsInBackground: Bool = false) {
        self.offline = offline
        self.refreshOnForeground = refreshOnForeground
        self.pollsInBackground = pollsInBackground
    }
}

/// When a cell refreshes on returning to the foreground
/// (`HostSignalPolicy.refreshOnForeground`).
///
/// Durations are kept in whole milliseconds, at most `UInt32.max`
/// (about 49 days); longer ones are taken as that, negative ones as 0.
public struct ForegroundRefresh: Sendable, Equatable {
    /// The cell refreshes at most once per this long (0: every 5 seconds).
    public var throttle: Duration
    /// A value younger than this is not refreshed (0: any age is).
    public var fresh: Duration

    /// Refresh at most once per `throttle`, and only values older than `fresh`.
    public init(throttle: Duration = .seconds(5), fresh: Duration = .zero) {
        self.throttle = throttle
        self.fresh = fresh
    }

    /// Refresh at most once per `throttle`, and only values older than `fresh`.
    public static func every(_ throttle: Duration, unlessYoungerThan fresh: Duration = .zero) -> ForegroundRefresh {
        ForegroundRefresh(throttle: throttle, fresh: fresh)
    }
}

/// What a Swift cell adds to every load it starts: its host-signal policy
/// and, for loadable cells, keeping previous values and a placeholder.
struct CellLoadDefaults<Value>: @unchecked Sendable {
    var hostSignals = HostSignalPolicy()
    var keepsPrevious = false
    var placeholder: Value?

    /// `spec` with these defaults: the policy replaces the spec's signal
    /// options; a spec that keeps previous values or has a placeholder
    /// of its own keeps them.
    func applied<Request>(to spec: LoadSpec<Value, Request>) -> LoadSpec<Value, Request> {
        var spec = spec
        spec.options.offlineMode = hostSignals.offline
        if let refresh = hostSignals.refreshOnForeground {
            spec.options.refreshesOnForeground = true
            spec.options.foregroundThrottleMs = UInt32(clamping: refresh.throttle.saturatingMilliseconds)
            spec.options.freshMs = UInt32(clamping: refresh.fresh.saturatingMilliseconds)
        } else {
            spec.options.refreshesOnForeground = false
        }
        spec.options.pollsInBackground = hostSignals.pollsInBackground
        spec.options.keepsPrevious = spec.options.keepsPrevious || keepsPrevious
        if spec.placeholder == nil { spec.placeholder = placeholder }
        return spec
    }
}

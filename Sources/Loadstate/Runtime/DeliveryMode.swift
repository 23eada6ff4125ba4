/// Where host callbacks run. The raw values are the C header's `LDS_DELIVER_*`.
public enum DeliveryMode: UInt32, Sendable {
    /// On the loop thread, as soon as they happen.
    case loop = 0
    /// Queued; `Delivery.dispatch` runs them on the thread that calls it.
    case poll = 1
}

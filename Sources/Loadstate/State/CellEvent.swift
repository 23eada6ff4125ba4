/// What happened to a cell.
@usableFromInline package enum EventType: UInt32, Sendable {
    /// The state changed, or a silent load began over it.
    case state = 1
    /// The running job reported progress.
    case progress = 2
    /// A load runs longer than one of its interrupt delays.
    case interrupt = 3
}

/// One event of one cell, in the order the cell produced them.
@_spi(LoadstateC) public struct CellEvent<Value, Request> {
    // Stored properties in this order keep the struct small (a cell keeps
    // its latest event).
    @usableFromInline package var cell: UInt64
    /// 1 for the cell's first event, +1 for each one after it.
    @usableFromInline package var seq: UInt64
    /// The load under way when the event was emitted (1 for the cell's
    /// first load, +1 for each one after it); 0 when none was.
    @usableFromInline package var load: UInt64
    /// The cell's state after the event.
    @usableFromInline package var state: CellState<Value, Request>
    /// Interrupt events: milliseconds since the load began, measured.
    @usableFromInline package var elapsedMs: UInt64
    /// Progress events: units done and units in all (0 = unknown).
    @usableFromInline package var progressDone: UInt64
    @usableFromInline package var progressTotal: UInt64
    @usableFromInline package var type: EventType
    /// False for events that only announce activity over an unchanged
    /// state: a silent load beginning, a retry of a silent load.
    @usableFromInline package var stateChanged: Bool
    /// The state was restored because a load was cancelled.
    @usableFromInline package var isCancelled: Bool
    /// The state came back because a write that showed optimistic values
    /// failed or was cancelled (see `OptimisticLedger`).
    @usableFromInline package var isRolledBack = false
    /// The state came back because the load's job finished without a
    /// value (nothing yielded): the load has no value of its own.
    @usableFromInline package var isWithoutValue = false

    @usableFromInline package init(type: EventType, cell: UInt64, seq: UInt64, load: UInt64, state: CellState<Value, Request>,
                stateChanged: Bool, isCancelled: Bool, elapsedMs: UInt64, progressDone: UInt64,
                progressTotal: UInt64) {
        self.type = type
        self.cell = cell
        self.seq = seq
        self.load = load
        self.state = state
        self.stateChanged = stateChanged
        self.isCancelled = isCancelled
        self.elapsedMs = elapsedMs
        self.progressDone = progressDone
        self.progressTotal = progressTotal
    }
}

extension CellEvent: Sendable where Value: Sendable, Request: Sendable {}

/// The live objects of a runtime by id, for the handle table.
///
/// Open addressing with linear probing, at most 3/4 full (the load factor
/// of Swift's Dictionary, so it takes the same memory). Ids are serial
/// numbers with a kind in their low bits; a multiply-and-fold hash spreads
/// them, where Dictionary's SipHash cost more than the rest of a lookup (a
/// load looks ids up five or six times). Removal shifts the entries after
/// it back, so no tombstones accumulate. Not thread-safe: the table's lock
/// guards it (so its variables go without dynamic exclusivity checks).
@usableFromInline package final class HandleMap {
    /// The ids, 0 for an empty slot (no id is 0), and their objects.
    @exclusivity(unchecked) private var ids: UnsafeMutablePointer<UInt64>
    @exclusivity(unchecked) private var slots: UnsafeMutablePointer<Handle?>
    @exclusivity(unchecked) private var mask: Int
    @exclusivity(unchecked) @usableFromInline package private(set) var count = 0

    static let initialCapacity = 64

    init() {
        (ids, slots) = Self.allocate(Self.initialCapacity)
        mask = Self.initialCapacity - 1
    }

    deinit {
        slots.deinitialize(count: mask + 1)
        slots.deallocate()
        ids.deallocate()
    }

    private static func allocate(_ capacity: Int) -> (UnsafeMutablePointer<UInt64>, UnsafeMutablePointer<Handle?>) {
        let keys = UnsafeMutablePointer<UInt64>.allocate(capacity: capacity)
        keys.initialize(repeating: 0, count: capacity)
        let values = UnsafeMutablePointer<Handle?>.allocate(capacity: capacity)
        values.initialize(repeating: nil, count: capacity)
        return (keys, values)
    }

    @inline(__always)
    private func home(_ id: UInt64) -> Int {
        let h = id &* 0x9E37_79B9_7F4A_7C15
        return Int(truncatingIfNeeded: h ^ (h >> 29)) & mask
    }

    /// The slot holding `id`, or nil.
    @inline(__always)
    private func find(_ id: UInt64) -> Int? {
        var i = home(id)
        while true {
            let key = ids[i]
            if key == id { return i }
            if key == 0 { return nil }
            i = (i &+ 1) & mask
        }
    }

    @usableFromInline package subscript(id: UInt64) -> Handle? {
        get {
            guard id != 0, let i = find(id) else { return nil }
            return slots[i]
        }
        set {
            guard id != 0 else { return }
            if let handle = newValue {
                insert(id, handle)
            } else {
                remove(id)
            }
        }
    }

    /// One probe: the id's slot if it is there, else the empty slot that
    /// ends its run (the map grows first when a new id would fill it past
    /// 3/4; replacing a handle is rare, so growing early for one is fine).
    private func insert(_ id: UInt64, _ handle: Handle) {
        if (count + 1) * 4 > (mask + 1) * 3 { grow() }
        var i = home(id)
        while true {
            let key = ids[i]
            if key == id {
                slots[i] = handle
                return
            }
            if key == 0 { break }
            i = (i &+ 1) & mask
        }
        ids[i] = id
        slots[i] = handle
        count += 1
    }

    private func remove(_ id: UInt64) {
        guard var hole = find(id) else { return }
        slots[hole] = nil
        count -= 1
        // Shift back every later entry of the run that may move into the
        // hole (its home is not between the hole and itself).
        var j = hole
        while true {
            j = (j &+ 1) & mask
            let key = ids[j]
            if key == 0 { break }
            let k = home(key)
            let stays = hole <= j ? (hole < k && k <= j) : (hole < k || k <= j)
            if stays { continue }
            ids[hole] = key
            (slots + hole).moveInitialize(from: slots + j, count: 1)
            (slots + j).initialize(to: nil)
            hole = j
        }
        ids[hole] = 0
    }

    private func grow() {
        let oldIDs = ids, oldSlots = slots, oldCapacity = mask + 1
        let capacity = oldCapacity * 2
        (ids, slots) = Self.allocate(capacity)
        mask = capacity - 1
        for i in 0..<oldCapacity where oldIDs[i] != 0 {
            var j = home(oldIDs[i])
            while ids[j] != 0 { j = (j &+ 1) & mask }
            ids[j] = oldIDs[i]
            (slots + j).deinitialize(count: 1)
            (slots + j).moveInitialize(from: oldSlots + i, count: 1)
            (oldSlots + i).initialize(to: nil)
        }
        oldSlots.deinitialize(count: oldCapacity)
        oldSlots.deallocate()
        oldIDs.deallocate()
    }

    /// Every object, in no particular order.
    @usableFromInline package var values: [Handle] {
        var all: [Handle] = []
        all.reserveCapacity(count)
        for i in 0...mask where ids[i] != 0 {
            if let handle = slots[i] { all.append(handle) }
        }
        return all
    }

    /// Calls `body` with every id, and with the object when `wants(id)`
    /// (objects that are not wanted are neither retained nor released).
    @usableFromInline package func forEach(where wants: (UInt64) -> Bool, _ body: (UInt64, Handle?) -> Void) {
        for i in 0...mask where ids[i] != 0 {
            body(ids[i], wants(ids[i]) ? slots[i] : nil)
        }
    }

    /// Forgets every object, back to the first capacity.
    @usableFromInline package func removeAll() {
        let oldIDs = ids, oldSlots = slots, oldCapacity = mask + 1
        (ids, slots) = Self.allocate(Self.initialCapacity)
        mask = Self.initialCapacity - 1
        count = 0
        // The objects are released once the map is consistent again.
        oldSlots.deinitialize(count: oldCapacity)
        oldSlots.deallocate()
        oldIDs.deallocate()
    }
}

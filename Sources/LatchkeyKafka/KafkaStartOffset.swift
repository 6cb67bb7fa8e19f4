/// Where a manually assigned partition starts reading.
public enum KafkaStartOffset: Hashable, Sendable {
    /// The oldest retained record (offset 0 on a fresh topic).
    case beginning
    /// Only records produced after the assignment.
    case end
    /// The group's committed offset, falling back to `auto.offset.reset` when there is none.
    case committed
    /// An explicit offset.
    case offset(Int64)
}

import Foundation

/// Who caused an event, as an auditor needs to read it.
public struct EventActor: Codable, Sendable, Hashable {
    public enum Kind: String, ProtocolStringEnum {
        /// An administrator (admin token `sub` or the bootstrap key's name).
        case admin
        /// An end user (their UUID).
        case user
        /// Latchkey itself: a background job or an automatic reaction (its name).
        case system
        /// An OAuth client acting for itself (its client id).
        case client

        public static var valueDescription: String { "actor type" }
    }

    public var type: Kind
    public var id: String

    public init(type: Kind, id: String) {
        self.type = type
        self.id = id
    }

    public static func admin(_ id: String) -> EventActor { EventActor(type: .admin, id: id) }
    public static func user(_ id: UUID) -> EventActor { EventActor(type: .user, id: id.uuidString) }
    public static func system(_ name: String) -> EventActor { EventActor(type: .system, id: name) }
    public static func client(_ clientID: String) -> EventActor { EventActor(type: .client, id: clientID) }
}

extension EventActor: CompactJSONObject {
    public func writeMembers(to object: inout CompactJSONObjectWriter) {
        object.member("id", id)
        object.member("type", type)
    }
}

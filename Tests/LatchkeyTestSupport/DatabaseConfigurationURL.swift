import LatchkeyPersistence

extension DatabaseConfiguration {
    /// The `postgres://` URL a test hands a command or a service process it starts (pool options at their
    /// defaults, as in production).
    public var url: String {
        "postgres://\(username):\(password ?? "")@\(host):\(port)/\(database)"
    }
}

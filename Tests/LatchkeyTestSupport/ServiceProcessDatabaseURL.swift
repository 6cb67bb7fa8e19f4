import LatchkeyPersistence

extension DatabaseConfiguration {
    /// The `postgres://` URL a test hands a command or a service process it starts.
    public var url: String {
        "postgres://\(username):\(password ?? "")@\(host):\(port)/\(database)"
    }

    /// The URL a test starts a service process with: each pool keeps one connection open and opens the others
    /// on demand. With the default (the whole pool opened at start, two pools per service) the platforms the
    /// suite runs side by side held most of the test cluster's `max_connections`, and a burst of the rest
    /// of the suite ran into its limit.
    public var serviceProcessURL: String { url + "?pool_min=1" }
}

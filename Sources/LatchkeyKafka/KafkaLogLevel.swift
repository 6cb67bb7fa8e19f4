import Logging

extension Logger.Level {
    /// Maps librdkafka's syslog-style level (0 emergency … 7 debug) onto swift-log.
    init(syslogLevel: Int32) {
        switch syslogLevel {
        case ...2: self = .critical
        case 3: self = .error
        case 4: self = .warning
        case 5: self = .notice
        case 6: self = .info
        default: self = .debug
        }
    }
}

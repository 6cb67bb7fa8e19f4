/// One Kafka record header; a null header value on the wire is read as an empty value.
public struct KafkaHeader: Hashable, Sendable {
    public var key: String
    public var value: [UInt8]

    public init(key: String, value: [UInt8]) {
        self.key = key
        self.value = value
    }

    public init(key: String, value: String) {
        self.init(key: key, value: Array(value.utf8))
    }
}

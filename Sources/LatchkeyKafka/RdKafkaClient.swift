import CRdKafka
import Dispatch
import Logging
import Synchronization

/// The only code that calls librdkafka's C API: one `rd_kafka_t` handle and its callbacks.
///
/// Methods are thin synchronous wrappers; those taking a timeout may block for that long and
/// are run by callers on a ``KafkaBlockingQueue``. librdkafka handles are thread-safe, which is
/// why the type is `@unchecked Sendable`.
final class RdKafkaClient: @unchecked Sendable {
    enum Role: String, Sendable {
        case producer
        case consumer
    }

    /// Swift code reachable from librdkafka's C callbacks through the configuration opaque.
    struct Callbacks: Sendable {
        var logger: Logger
        var delivery: (@Sendable (_ messageID: UInt, _ result: Result<KafkaDeliveryReport, KafkaError>) -> Void)?
        var statistics: (@Sendable (_ json: String) -> Void)?

        init(
            logger: Logger,
            delivery: (@Sendable (UInt, Result<KafkaDeliveryReport, KafkaError>) -> Void)? = nil,
            statistics: (@Sendable (String) -> Void)? = nil
        ) {
            self.logger = logger
            self.delivery = delivery
            self.statistics = statistics
        }
    }

    /// What one consumer poll produced.
    enum ConsumerEvent: Sendable {
        case message(KafkaConsumerMessage)
        case error(KafkaError)
        case idle
    }

    private final class CallbackContext: Sendable {
        let callbacks: Callbacks

        init(_ callbacks: Callbacks) {
            self.callbacks = callbacks
        }
    }

    /// The librdkafka handle; the mock cluster is created on one.
    let handle: OpaquePointer
    // Retained manually: librdkafka holds it as a raw pointer until rd_kafka_destroy returns.
    private let context: Unmanaged<CallbackContext>

    init(role: Role, properties: [String: String], callbacks: Callbacks) throws(KafkaError) {
        guard let configuration = rd_kafka_conf_new() else {
            throw KafkaError(code: .failed, message: "rd_kafka_conf_new failed")
        }
        var errorBuffer = [CChar](repeating: 0, count: 512)
        for (key, value) in properties.sorted(by: { $0.key < $1.key }) {
            guard rd_kafka_conf_set(configuration, key, value, &errorBuffer, errorBuffer.count) == RD_KAFKA_CONF_OK
            else {
                rd_kafka_conf_destroy(configuration)
                // The value is left out on purpose: it may be a credential (sasl.password, ...).
                throw KafkaError.configuration("\(key): \(String(cBuffer: errorBuffer))")
            }
        }

        let context = Unmanaged.passRetained(CallbackContext(callbacks))
        rd_kafka_conf_set_opaque(configuration, context.toOpaque())
        rd_kafka_conf_set_log_cb(configuration) { handle, level, facility, line in
            RdKafkaClient.handleLog(handle: handle, level: level, facility: facility, line: line)
        }
        rd_kafka_conf_set_error_cb(configuration) { handle, code, reason, opaque in
            RdKafkaClient.handleError(handle: handle, code: code, reason: reason, opaque: opaque)
        }
        if callbacks.statistics != nil {
            rd_kafka_conf_set_stats_cb(configuration) { _, json, length, opaque in
                RdKafkaClient.handleStatistics(json: json, length: length, opaque: opaque)
            }
        }
        if role == .producer {
            rd_kafka_conf_set_dr_msg_cb(configuration) { _, message, opaque in
                RdKafkaClient.handleDelivery(message: message, opaque: opaque)
            }
        }

        let type = role == .producer ? RD_KAFKA_PRODUCER : RD_KAFKA_CONSUMER
        guard let handle = rd_kafka_new(type, configuration, &errorBuffer, errorBuffer.count) else {
            // On failure the configuration is still ours to free.
            rd_kafka_conf_destroy(configuration)
            context.release()
            throw KafkaError.configuration(String(cBuffer: errorBuffer))
        }
        if role == .consumer {
            // Serve log/error/statistics callbacks from consumer_poll, so one poll loop suffices.
            rd_kafka_poll_set_consumer(handle)
        }
        self.handle = handle
        self.context = context
        self.name = String(cString: rd_kafka_name(handle))
    }

    deinit {
        guard !destroyed.load(ordering: .acquiring) else { return }
        let resources = HandleResources(handle: handle, context: context)
        // rd_kafka_destroy joins librdkafka's threads (and closes a consumer that was not closed),
        // so it can block; keep it off whichever thread dropped the last reference.
        Self.destroyQueue.async { resources.destroy() }
    }

    private let destroyed = Atomic<Bool>(false)

    /// Destroys the handle now (blocking) instead of at deinit. The caller guarantees that no other
    /// method is running or will be called; idempotent.
    func destroy() {
        guard !destroyed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        HandleResources(handle: handle, context: context).destroy()
    }

    static let destroyQueue = DispatchQueue(label: "latchkey.kafka.destroy")

    private struct HandleResources: @unchecked Sendable {
        let handle: OpaquePointer
        let context: Unmanaged<CallbackContext>

        func destroy() {
            rd_kafka_destroy(handle)
            // Only now can no callback reference the context any more.
            context.release()
        }
    }

    /// librdkafka's instance name, e.g. `gateway#producer-1` (kept, so it outlives the handle).
    let name: String

    // MARK: Producer

    /// Enqueues one record; its outcome arrives later through `Callbacks.delivery` with `messageID`.
    func produce(_ message: KafkaOutgoingMessage, messageID: UInt) -> KafkaError? {
        // librdkafka copies payload, key and headers (MSG_F_COPY, header_add), so these C buffers
        // only need to live for the duration of the call.
        var arena = CArena()
        defer { arena.free() }

        var fields: [rd_kafka_vu_t] = []
        var field = rd_kafka_vu_t()
        field.vtype = RD_KAFKA_VTYPE_TOPIC
        field.u.cstr = UnsafePointer(arena.string(message.topic))
        fields.append(field)

        field = rd_kafka_vu_t()
        field.vtype = RD_KAFKA_VTYPE_PARTITION
        field.u.i32 = message.partition ?? Self.unassignedPartition
        fields.append(field)

        field = rd_kafka_vu_t()
        field.vtype = RD_KAFKA_VTYPE_VALUE
        field.u.mem.ptr = arena.bytes(message.value)
        field.u.mem.size = message.value.count
        fields.append(field)

        if let key = message.key {
            field = rd_kafka_vu_t()
            field.vtype = RD_KAFKA_VTYPE_KEY
            field.u.mem.ptr = arena.bytes(key)
            field.u.mem.size = key.count
            fields.append(field)
        }

        for header in message.headers {
            field = rd_kafka_vu_t()
            field.vtype = RD_KAFKA_VTYPE_HEADER
            field.u.header.name = UnsafePointer(arena.string(header.key))
            field.u.header.val = UnsafeRawPointer(arena.bytes(header.value))
            field.u.header.size = header.value.count
            fields.append(field)
        }

        field = rd_kafka_vu_t()
        field.vtype = RD_KAFKA_VTYPE_MSGFLAGS
        field.u.i = RD_KAFKA_MSG_F_COPY
        fields.append(field)

        field = rd_kafka_vu_t()
        field.vtype = RD_KAFKA_VTYPE_OPAQUE
        field.u.ptr = UnsafeMutableRawPointer(bitPattern: messageID)
        fields.append(field)

        let failure = fields.withUnsafeBufferPointer { rd_kafka_produceva(handle, $0.baseAddress, $0.count) }
        guard let failure else { return nil }
        defer { rd_kafka_error_destroy(failure) }
        return KafkaError(
            code: KafkaErrorCode(rawValue: Int32(rd_kafka_error_code(failure).rawValue)),
            message: String(cString: rd_kafka_error_string(failure)),
            isFatal: rd_kafka_error_is_fatal(failure) != 0
        )
    }

    /// Serves queued callbacks (delivery reports, errors, statistics), waiting up to `timeout`.
    @discardableResult
    func poll(timeout: Duration) -> Int {
        Int(rd_kafka_poll(handle, timeout.kafkaMilliseconds))
    }

    /// Waits until all outstanding records are delivered or failed; returns how many remain.
    func flush(timeout: Duration) -> Int {
        _ = rd_kafka_flush(handle, timeout.kafkaMilliseconds)
        return Int(rd_kafka_outq_len(handle))
    }

    /// Fails every queued and in-flight record; their delivery reports follow on the next poll.
    func purgeOutstanding() {
        _ = rd_kafka_purge(handle, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT)
    }

    // MARK: Consumer

    func subscribe(topics: [String]) throws(KafkaError) {
        let entries = topics.map { (KafkaTopicPartition(topic: $0, partition: Self.unassignedPartition), Int64(0)) }
        let list = Self.makeList(entries)
        defer { rd_kafka_topic_partition_list_destroy(list) }
        try Self.check(rd_kafka_subscribe(handle, list))
    }

    func assign(_ assignment: [KafkaTopicPartition: KafkaStartOffset]) throws(KafkaError) {
        let list = Self.makeList(assignment.map { ($0.key, Self.offsetValue($0.value)) })
        defer { rd_kafka_topic_partition_list_destroy(list) }
        try Self.check(rd_kafka_assign(handle, list))
    }

    /// Returns the next record or error, waiting up to `timeout`; also serves callbacks.
    func consumerPoll(timeout: Duration) -> ConsumerEvent {
        guard let message = rd_kafka_consumer_poll(handle, timeout.kafkaMilliseconds) else { return .idle }
        defer { rd_kafka_message_destroy(message) }
        let record = message.pointee
        if record.err != RD_KAFKA_RESP_ERR_NO_ERROR {
            // For error events the payload carries librdkafka's description.
            var detail = Self.describe(record.err)
            if let payload = record.payload, record.len > 0 {
                detail = String(decoding: UnsafeRawBufferPointer(start: payload, count: record.len), as: UTF8.self)
            }
            return .error(
                KafkaError(
                    code: KafkaErrorCode(rawValue: Int32(record.err.rawValue)),
                    message: detail,
                    isFatal: record.err == RD_KAFKA_RESP_ERR__FATAL
                )
            )
        }
        return .message(Self.consumerMessage(message))
    }

    /// Synchronously commits `offsets` (each the next offset to read) for the consumer group.
    func commit(_ offsets: [KafkaTopicPartition: Int64]) throws(KafkaError) {
        let list = Self.makeList(offsets.map { ($0.key, $0.value) })
        defer { rd_kafka_topic_partition_list_destroy(list) }
        try Self.check(rd_kafka_commit(handle, list, 0))
        // The request can succeed while single partitions fail (e.g. after a rebalance).
        for entry in Self.readList(list) where entry.error != .noError {
            throw KafkaError(code: entry.error, message: "commit of \(entry.partition) failed: \(entry.error.name)")
        }
    }

    /// The group's committed offsets (next offset to read); partitions without one are omitted.
    func committed(
        _ partitions: [KafkaTopicPartition],
        timeout: Duration
    ) throws(KafkaError) -> [KafkaTopicPartition: Int64] {
        let list = Self.makeList(partitions.map { ($0, Self.invalidOffset) })
        defer { rd_kafka_topic_partition_list_destroy(list) }
        try Self.check(rd_kafka_committed(handle, list, timeout.kafkaMilliseconds))
        return Self.validOffsets(in: list)
    }

    /// This consumer's position (offset of the next record it will return); unknown ones are omitted.
    func positions(_ partitions: [KafkaTopicPartition]) throws(KafkaError) -> [KafkaTopicPartition: Int64] {
        let list = Self.makeList(partitions.map { ($0, Self.invalidOffset) })
        defer { rd_kafka_topic_partition_list_destroy(list) }
        try Self.check(rd_kafka_position(handle, list))
        return Self.validOffsets(in: list)
    }

    /// The partitions currently assigned to this consumer.
    func assignment() throws(KafkaError) -> [KafkaTopicPartition] {
        var list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?
        try Self.check(rd_kafka_assignment(handle, &list))
        guard let list else { return [] }
        defer { rd_kafka_topic_partition_list_destroy(list) }
        return Self.readList(list).map(\.partition)
    }

    /// Low and high watermark of a partition, queried from its leader.
    func watermarks(
        _ partition: KafkaTopicPartition,
        timeout: Duration
    ) throws(KafkaError) -> (low: Int64, high: Int64) {
        var low: Int64 = 0
        var high: Int64 = 0
        try Self.check(
            rd_kafka_query_watermark_offsets(
                handle, partition.topic, partition.partition, &low, &high, timeout.kafkaMilliseconds
            )
        )
        return (low, high)
    }

    /// Leaves the group cleanly (revoking partitions); blocks until done.
    func closeConsumer() throws(KafkaError) {
        try Self.check(rd_kafka_consumer_close(handle))
    }

    // MARK: Metadata and admin

    /// Cluster metadata for all topics, or for one topic (which may auto-create it where the
    /// broker and `allow.auto.create.topics` permit).
    func metadata(topic: String? = nil, timeout: Duration) throws(KafkaError) -> KafkaClusterMetadata {
        var topicHandle: OpaquePointer?
        if let topic {
            topicHandle = rd_kafka_topic_new(handle, topic, nil)
            guard topicHandle != nil else {
                throw KafkaError(code: .invalidArgument, message: "invalid topic \(topic)")
            }
        }
        defer { if let topicHandle { rd_kafka_topic_destroy(topicHandle) } }

        var result: UnsafePointer<rd_kafka_metadata>?
        try Self.check(rd_kafka_metadata(handle, topic == nil ? 1 : 0, topicHandle, &result, timeout.kafkaMilliseconds))
        guard let result else { return KafkaClusterMetadata(brokers: [], topics: []) }
        defer { rd_kafka_metadata_destroy(result) }
        let metadata = result.pointee

        let brokers = (0..<Int(metadata.broker_cnt)).map { index in
            let broker = metadata.brokers[index]
            return KafkaBrokerMetadata(id: broker.id, host: String(cString: broker.host), port: Int(broker.port))
        }
        let topics = (0..<Int(metadata.topic_cnt)).map { index in
            let topic = metadata.topics[index]
            let partitions = (0..<Int(topic.partition_cnt)).map { partitionIndex in
                let partition = topic.partitions[partitionIndex]
                return KafkaPartitionMetadata(
                    id: partition.id,
                    leader: partition.leader,
                    replicas: Array(UnsafeBufferPointer(start: partition.replicas, count: Int(partition.replica_cnt))),
                    inSyncReplicas: Array(UnsafeBufferPointer(start: partition.isrs, count: Int(partition.isr_cnt))),
                    error: Self.optionalCode(partition.err)
                )
            }
            return KafkaTopicMetadata(
                name: String(cString: topic.topic),
                partitions: partitions.sorted { $0.id < $1.id },
                error: Self.optionalCode(topic.err)
            )
        }
        return KafkaClusterMetadata(brokers: brokers, topics: topics)
    }

    /// The broker id the cluster reports as controller, or nil if none is known within `timeout`.
    func controllerID(timeout: Duration) -> Int32? {
        let id = rd_kafka_controllerid(handle, timeout.kafkaMilliseconds)
        return id >= 0 ? id : nil
    }

    /// Sends CreateTopics and waits for the result; returns each topic's outcome code.
    func createTopics(
        _ topics: [KafkaTopicSpecification],
        timeout: Duration
    ) throws(KafkaError) -> [String: KafkaError?] {
        var errorBuffer = [CChar](repeating: 0, count: 512)
        var newTopics: [OpaquePointer?] = []
        defer { newTopics.forEach { rd_kafka_NewTopic_destroy($0) } }
        for topic in topics {
            guard
                let newTopic = rd_kafka_NewTopic_new(
                    topic.name, Int32(topic.partitions), Int32(topic.replicationFactor), &errorBuffer, errorBuffer.count
                )
            else { throw KafkaError(code: .invalidArgument, message: "\(topic.name): \(String(cBuffer: errorBuffer))") }
            newTopics.append(newTopic)
            for (key, value) in topic.configs {
                try Self.check(rd_kafka_NewTopic_set_config(newTopic, key, value))
            }
        }

        let options = rd_kafka_AdminOptions_new(handle, RD_KAFKA_ADMIN_OP_CREATETOPICS)
        defer { rd_kafka_AdminOptions_destroy(options) }
        let milliseconds = timeout.kafkaMilliseconds
        _ = rd_kafka_AdminOptions_set_request_timeout(options, milliseconds, &errorBuffer, errorBuffer.count)
        // Ask the controller to answer only once the topics are fully created.
        _ = rd_kafka_AdminOptions_set_operation_timeout(options, milliseconds, &errorBuffer, errorBuffer.count)

        let queue = rd_kafka_queue_new(handle)
        defer { rd_kafka_queue_destroy(queue) }
        newTopics.withUnsafeMutableBufferPointer { buffer in
            rd_kafka_CreateTopics(handle, buffer.baseAddress, buffer.count, options, queue)
        }
        // librdkafka enforces the request timeout itself; the extra second only covers scheduling.
        guard let event = rd_kafka_queue_poll(queue, timeout.kafkaMilliseconds + 1_000) else {
            throw KafkaError(code: .timedOut, message: "CreateTopics did not answer within \(timeout)")
        }
        defer { rd_kafka_event_destroy(event) }
        let eventError = rd_kafka_event_error(event)
        if eventError != RD_KAFKA_RESP_ERR_NO_ERROR {
            throw KafkaError(
                code: KafkaErrorCode(rawValue: Int32(eventError.rawValue)),
                message: String(cString: rd_kafka_event_error_string(event))
            )
        }
        guard let result = rd_kafka_event_CreateTopics_result(event) else {
            let name = String(cString: rd_kafka_event_name(event))
            throw KafkaError(code: .failed, message: "unexpected admin event \(name)")
        }
        var count = 0
        guard let results = rd_kafka_CreateTopics_result_topics(result, &count) else { return [:] }
        var outcomes: [String: KafkaError?] = [:]
        for index in 0..<count {
            let topicResult = results[index]
            let name = String(cString: rd_kafka_topic_result_name(topicResult))
            let code = rd_kafka_topic_result_error(topicResult)
            if code == RD_KAFKA_RESP_ERR_NO_ERROR {
                outcomes[name] = .some(nil)
            } else {
                let detail = rd_kafka_topic_result_error_string(topicResult).map { String(cString: $0) }
                outcomes[name] = KafkaError(
                    code: KafkaErrorCode(rawValue: Int32(code.rawValue)),
                    message: detail ?? Self.describe(code)
                )
            }
        }
        return outcomes
    }

    // MARK: Errors

    static func errorName(_ code: Int32) -> String {
        String(cString: rd_kafka_err2name(rd_kafka_resp_err_t(rawValue: code)))
    }

    static var versionString: String { String(cString: rd_kafka_version_str()) }

    private static func describe(_ code: rd_kafka_resp_err_t) -> String {
        String(cString: rd_kafka_err2str(code))
    }

    static func check(_ code: rd_kafka_resp_err_t) throws(KafkaError) {
        guard code != RD_KAFKA_RESP_ERR_NO_ERROR else { return }
        throw KafkaError(code: KafkaErrorCode(rawValue: Int32(code.rawValue)), message: describe(code))
    }

    private static func check(_ error: OpaquePointer?) throws(KafkaError) {
        guard let error else { return }
        defer { rd_kafka_error_destroy(error) }
        throw KafkaError(
            code: KafkaErrorCode(rawValue: Int32(rd_kafka_error_code(error).rawValue)),
            message: String(cString: rd_kafka_error_string(error)),
            isFatal: rd_kafka_error_is_fatal(error) != 0
        )
    }

    private static func optionalCode(_ code: rd_kafka_resp_err_t) -> KafkaErrorCode? {
        code == RD_KAFKA_RESP_ERR_NO_ERROR ? nil : KafkaErrorCode(rawValue: Int32(code.rawValue))
    }

    // MARK: Offsets and partition lists

    private static let unassignedPartition: Int32 = -1  // RD_KAFKA_PARTITION_UA
    private static let invalidOffset: Int64 = -1001  // RD_KAFKA_OFFSET_INVALID

    private static func offsetValue(_ offset: KafkaStartOffset) -> Int64 {
        switch offset {
        case .beginning: -2  // RD_KAFKA_OFFSET_BEGINNING
        case .end: -1  // RD_KAFKA_OFFSET_END
        case .committed: -1000  // RD_KAFKA_OFFSET_STORED
        case .offset(let value): value
        }
    }

    private static func makeList(
        _ entries: [(KafkaTopicPartition, Int64)]
    ) -> UnsafeMutablePointer<rd_kafka_topic_partition_list_t> {
        let list = rd_kafka_topic_partition_list_new(Int32(max(1, entries.count)))!
        for (topicPartition, offset) in entries {
            let element = rd_kafka_topic_partition_list_add(list, topicPartition.topic, topicPartition.partition)!
            element.pointee.offset = offset
        }
        return list
    }

    private static func readList(
        _ list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>
    ) -> [(partition: KafkaTopicPartition, offset: Int64, error: KafkaErrorCode)] {
        (0..<Int(list.pointee.cnt)).map { index in
            let element = list.pointee.elems[index]
            return (
                KafkaTopicPartition(topic: String(cString: element.topic), partition: element.partition),
                element.offset,
                KafkaErrorCode(rawValue: Int32(element.err.rawValue))
            )
        }
    }

    private static func validOffsets(
        in list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>
    ) -> [KafkaTopicPartition: Int64] {
        var offsets: [KafkaTopicPartition: Int64] = [:]
        for entry in readList(list) where entry.error == .noError && entry.offset >= 0 {
            offsets[entry.partition] = entry.offset
        }
        return offsets
    }

    private static func consumerMessage(_ message: UnsafeMutablePointer<rd_kafka_message_t>) -> KafkaConsumerMessage {
        let record = message.pointee
        var timestampType = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
        let timestamp = rd_kafka_message_timestamp(message, &timestampType)

        var headers: [KafkaHeader] = []
        var headerList: OpaquePointer?
        if rd_kafka_message_headers(message, &headerList) == RD_KAFKA_RESP_ERR_NO_ERROR, let headerList {
            var index = 0
            var name: UnsafePointer<CChar>?
            var value: UnsafeRawPointer?
            var size = 0
            while rd_kafka_header_get_all(headerList, index, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR {
                if let name {
                    headers.append(KafkaHeader(key: String(cString: name), value: [UInt8](cBytes: value, count: size)))
                }
                index += 1
            }
        }

        return KafkaConsumerMessage(
            topic: String(cString: rd_kafka_topic_name(record.rkt)),
            partition: record.partition,
            offset: record.offset,
            key: record.key.map { [UInt8](cBytes: $0, count: record.key_len) },
            value: [UInt8](cBytes: record.payload, count: record.len),
            headers: headers,
            timestampMilliseconds: timestampType == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE || timestamp < 0 ? nil : timestamp
        )
    }

    // MARK: C callbacks

    private static func context(_ opaque: UnsafeMutableRawPointer?) -> CallbackContext? {
        opaque.map { Unmanaged<CallbackContext>.fromOpaque($0).takeUnretainedValue() }
    }

    private static func handleLog(
        handle: OpaquePointer?,
        level: Int32,
        facility: UnsafePointer<CChar>?,
        line: UnsafePointer<CChar>?
    ) {
        // Called on librdkafka's internal threads; swift-log loggers are thread-safe.
        guard let handle, let context = context(rd_kafka_opaque(handle)), let line else { return }
        let facilityName = facility.map { String(cString: $0) } ?? ""
        // Connection failures ("FAIL") also reach the error callback, which rates them; logging
        // them again at error level would turn every broker restart into an error burst.
        let mapped = Logger.Level(syslogLevel: level)
        let level = facilityName == "FAIL" ? min(mapped, .warning) : mapped
        context.callbacks.logger.log(
            level: level,
            "\(String(cString: line))",
            metadata: [
                "kafka.client": "\(String(cString: rd_kafka_name(handle)))",
                "kafka.facility": "\(facilityName)",
            ]
        )
    }

    private static func handleError(
        handle: OpaquePointer?,
        code: Int32,
        reason: UnsafePointer<CChar>?,
        opaque: UnsafeMutableRawPointer?
    ) {
        guard let handle, let context = context(opaque) else { return }
        var error = rd_kafka_resp_err_t(rawValue: code)
        var detail = reason.map { String(cString: $0) } ?? describe(error)
        let isFatal = error == RD_KAFKA_RESP_ERR__FATAL
        if isFatal {
            // The callback only says "fatal"; the underlying cause has to be fetched.
            var buffer = [CChar](repeating: 0, count: 512)
            error = rd_kafka_fatal_error(handle, &buffer, buffer.count)
            detail = String(cBuffer: buffer)
        }
        // Transport errors are routine while brokers restart; librdkafka reconnects on its own.
        let isTransient = error == RD_KAFKA_RESP_ERR__TRANSPORT || error == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN
        let level: Logger.Level = isFatal ? .critical : (isTransient ? .warning : .error)
        context.callbacks.logger.log(
            level: level,
            "\(detail)",
            metadata: [
                "kafka.client": "\(String(cString: rd_kafka_name(handle)))",
                "kafka.error": "\(String(cString: rd_kafka_err2name(error)))",
            ]
        )
    }

    private static func handleStatistics(
        json: UnsafeMutablePointer<CChar>?,
        length: Int,
        opaque: UnsafeMutableRawPointer?
    ) -> Int32 {
        guard let json, let context = context(opaque), let statistics = context.callbacks.statistics else { return 0 }
        statistics(String(decoding: UnsafeRawBufferPointer(start: json, count: length), as: UTF8.self))
        return 0  // 0 = librdkafka frees the JSON buffer
    }

    private static func handleDelivery(message: UnsafePointer<rd_kafka_message_t>?, opaque: UnsafeMutableRawPointer?) {
        guard let message, let context = context(opaque), let delivery = context.callbacks.delivery else { return }
        let record = message.pointee
        let messageID = UInt(bitPattern: record._private)
        guard record.err == RD_KAFKA_RESP_ERR_NO_ERROR else {
            let error = KafkaError(
                code: KafkaErrorCode(rawValue: Int32(record.err.rawValue)),
                message: describe(record.err),
                isFatal: record.err == RD_KAFKA_RESP_ERR__FATAL
            )
            delivery(messageID, .failure(error))
            return
        }
        var timestampType = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
        let timestamp = rd_kafka_message_timestamp(message, &timestampType)
        let report = KafkaDeliveryReport(
            topic: String(cString: rd_kafka_topic_name(record.rkt)),
            partition: record.partition,
            offset: record.offset,
            timestampMilliseconds: timestampType == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE || timestamp < 0 ? nil : timestamp
        )
        delivery(messageID, .success(report))
    }
}

/// The librdkafka this process runs with: the shared library loaded at run time, which may be newer than the
/// headers the code was compiled against (`LD_LIBRARY_PATH`, the image's own build).
public enum KafkaLibrary {
    /// `rd_kafka_version_str()`, e.g. `2.16.0`.
    public static var version: String { RdKafkaClient.versionString }
}

/// Swift values copied out of buffers that C calls filled.
extension String {
    /// The NUL-terminated string in a buffer librdkafka wrote an error message into.
    init(cBuffer buffer: [CChar]) {
        self = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}

extension [UInt8] {
    /// A copy of `count` bytes at `pointer`; empty when there are none (NULL or zero bytes).
    init(cBytes pointer: UnsafeRawPointer?, count: Int) {
        guard let pointer, count > 0 else {
            self = []
            return
        }
        self = Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }
}

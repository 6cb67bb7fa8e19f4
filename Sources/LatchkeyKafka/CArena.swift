/// Malloc'd copies of Swift strings and byte arrays that C calls read, freed together.
struct CArena {
    private var allocations: [UnsafeMutableRawPointer] = []

    mutating func string(_ value: String) -> UnsafeMutablePointer<CChar> {
        let utf8 = Array(value.utf8CString)
        let pointer = UnsafeMutablePointer<CChar>.allocate(capacity: utf8.count)
        pointer.initialize(from: utf8, count: utf8.count)
        allocations.append(UnsafeMutableRawPointer(pointer))
        return pointer
    }

    /// Never returns NULL, even for empty input: librdkafka reads NULL as "null value".
    mutating func bytes(_ value: [UInt8]) -> UnsafeMutableRawPointer {
        let pointer = UnsafeMutableRawPointer.allocate(byteCount: max(1, value.count), alignment: 1)
        value.withUnsafeBytes { source in
            if let base = source.baseAddress { pointer.copyMemory(from: base, byteCount: source.count) }
        }
        allocations.append(pointer)
        return pointer
    }

    func free() {
        allocations.forEach { $0.deallocate() }
    }
}

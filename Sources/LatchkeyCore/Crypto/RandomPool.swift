import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Random bytes from the kernel's generator, asked for 4 KiB at a time.
///
/// swift-crypto's `SymmetricKey(size:)` and the standard library's generator make one `getrandom` system call
/// for every 8 bytes: two for a UUID, four for a 256-bit secret, and a grant makes several of each. Here one
/// call fills a pool that serves the next 4 KiB. Every byte is handed out once and cleared from the pool as it
/// goes, so the pool only ever holds bytes nobody has used. (The services never fork, so no two processes can
/// share a pool's contents.)
enum RandomPool {
    private static let pool = Mutex(Pool())

    /// Fills `destination` with fresh random bytes.
    static func fill(_ destination: UnsafeMutableRawBufferPointer) {
        pool.withLock { $0.take(into: destination) }
    }

    private struct Pool: ~Copyable {
        static let size = 4096
        private var bytes = [UInt8](repeating: 0, count: size)
        private var next = size

        mutating func take(into destination: UnsafeMutableRawBufferPointer) {
            var written = 0
            while written < destination.count {
                if next == Self.size { refill() }
                let count = min(destination.count - written, Self.size - next)
                bytes.withUnsafeMutableBytes { pool in
                    let source = UnsafeMutableRawBufferPointer(rebasing: pool[next..<next + count])
                    UnsafeMutableRawBufferPointer(rebasing: destination[written..<written + count])
                        .copyMemory(from: UnsafeRawBufferPointer(source))
                    source.initializeMemory(as: UInt8.self, repeating: 0)
                }
                next += count
                written += count
            }
        }

        private mutating func refill() {
            #if canImport(Glibc)
                // glibc's arc4random_buf asks the kernel (getrandom) for the whole buffer at once.
                bytes.withUnsafeMutableBytes { arc4random_buf($0.baseAddress!, $0.count) }
            #else
                var generator = SystemRandomNumberGenerator()
                bytes.withUnsafeMutableBytes { buffer in
                    for offset in stride(from: 0, to: buffer.count, by: 8) {
                        buffer.storeBytes(of: generator.next(), toByteOffset: offset, as: UInt64.self)
                    }
                }
            #endif
            next = 0
        }
    }
}

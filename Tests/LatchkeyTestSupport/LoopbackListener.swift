import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A listening socket on 127.0.0.1 and an ephemeral port; the caller closes it.
public func listenOnLoopback() throws -> (fd: Int32, port: Int) {
    let listening = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(listening, $0, length) == 0 && getsockname(listening, $0, &length) == 0
        }
    }
    guard bound, listen(listening, 16) == 0 else {
        close(listening)
        throw TestFailure("could not listen on 127.0.0.1")
    }
    return (listening, Int(UInt16(bigEndian: address.sin_port)))
}

import Configuration
import Foundation
import LatchkeyCore
import LatchkeyServer
import NIOCore
import NIOPosix

/// `dpop-verifier`: the sidecar that verifies access token and DPoP proof in front of an API.
@main
struct Main {
    static func main() async {
        // Swift tasks run on the NIO event loops, so a request does not hop between the HTTP
        // server's threads, Swift's cooperative pool and the proxy client's threads (several
        // context switches per request otherwise). Safe here: nothing on the request path blocks,
        // and Kafka's blocking calls run on their own dispatch queues.
        // One event loop per CPU the sidecar may use: pinned to one CPU (as a sidecar often is), two
        // loops would take turns on it and stall each other's requests for whole scheduler slices.
        if ProcessInfo.processInfo.environment["NIO_SINGLETON_GROUP_LOOP_COUNT"] == nil,
            let allowed = CPUAffinity.allowedCPUCount(), allowed < System.coreCount
        {
            NIOSingletons.groupLoopCountSuggestion = allowed
        }
        NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        await ServiceMain.run(.dpopVerifier) { settings, logger in
            let reader = ConfigReader(providers: [EnvironmentVariablesProvider()])
            return try buildApplication(settings: settings, sidecar: SidecarSettings(reader: reader), logger: logger)
        }
    }
}

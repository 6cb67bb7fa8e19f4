import Configuration
import NIOCore
import NIOPosix
import Shared

/// `dpop-verifier`: the sidecar that verifies access token and DPoP proof in front of an API.
@main
struct Main {
    static func main() async {
        // Swift tasks run on the NIO event loops, so a request does not hop between the HTTP
        // server's threads, Swift's cooperative pool and the proxy client's threads (several
        // context switches per request otherwise). Safe here: nothing on the request path blocks,
        // and Kafka's blocking calls run on their own dispatch queues.
        NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        await ServiceMain.run(.dpopVerifier) { settings, logger in
            let reader = ConfigReader(providers: [EnvironmentVariablesProvider()])
            return try buildApplication(settings: settings, sidecar: SidecarSettings(reader: reader), logger: logger)
        }
    }
}

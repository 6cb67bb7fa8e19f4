import LatchkeyTestSupport

@testable import LatchkeyCLI

extension PlatformProcesses {
    /// The platform's URLs in the demo client's terms.
    var endpoints: DemoEndpoints {
        DemoEndpoints(
            gateway: urls.gateway, tokenService: urls.tokenService, sidecar: urls.sidecar, audit: urls.audit,
            tenant: urls.tenant)
    }
}

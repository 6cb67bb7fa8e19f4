import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Mustache
import Shared

/// Renders the tenant-branded pages and wraps them in the security headers every HTML answer carries.
struct PageRenderer: Sendable {
    private let library: MustacheLibrary

    init() throws {
        library = MustacheLibrary(templates: [
            "header": try MustacheTemplate(string: PageTemplates.header),
            "footer": try MustacheTemplate(string: PageTemplates.footer),
            "form-start": try MustacheTemplate(string: PageTemplates.formStart),
            "sign-in": try MustacheTemplate(string: PageTemplates.signIn),
            "sign-up": try MustacheTemplate(string: PageTemplates.signUp),
            "error": try MustacheTemplate(string: PageTemplates.error),
        ])
    }

    /// A page: `template` rendered with the tenant's branding plus `values`.
    /// `formTarget` is the redirect URI a form on this page may lead to (see ``contentSecurityPolicy``).
    func page(
        _ template: String, title: String, tenant: ResolvedTenant, values: [String: Any] = [:],
        status: HTTPResponse.Status = .ok, formTarget: String? = nil, headers: HTTPFields = [:]
    ) -> Response {
        let branding = tenant.policy.branding
        let primary = branding.primaryColor.flatMap { TenantPolicy.isHexColor($0) ? $0 : nil } ?? "#1f4fd1"
        let background = branding.backgroundColor.flatMap { TenantPolicy.isHexColor($0) ? $0 : nil } ?? "#f2f4f7"
        let css = PageTemplates.css(primary: primary, background: background)
        var context: [String: Any] = [
            "title": title, "brandName": branding.name ?? tenant.displayName, "css": css,
        ]
        if let logo = branding.logoURL, logo.hasPrefix("https://") { context["logoURL"] = logo }
        context.merge(values) { _, new in new }
        let html = library.render(context, withTemplate: template) ?? ""
        var all = Self.securityHeaders(styleHash: Self.hash(css), formTarget: formTarget)
        all.append(contentsOf: headers)
        return Response(status: status, headers: all, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    /// The error page (also used before the redirect URI is verified: it never redirects).
    func error(
        _ message: String, tenant: ResolvedTenant, status: HTTPResponse.Status = .badRequest, retryAfter: Int? = nil
    ) -> Response {
        var headers: HTTPFields = [:]
        var values: [String: Any] = ["message": message]
        if let retryAfter {
            headers[HTTPField.Name("Retry-After")!] = String(retryAfter)
            values["retryAfter"] = String(retryAfter)
        }
        return page("error", title: "Sign-in problem", tenant: tenant, values: values, status: status, headers: headers)
    }

    static func hash(_ css: String) -> String {
        Data(SHA256.hash(data: Data(css.utf8))).base64EncodedString()
    }

    /// DESIGN §4: strict CSP, no framing, never cached.
    static func securityHeaders(styleHash: String, formTarget: String?) -> HTTPFields {
        [
            .contentType: "text/html; charset=utf-8",
            HTTPField.Name("Content-Security-Policy")!: contentSecurityPolicy(styleHash: styleHash, formTarget: formTarget),
            HTTPField.Name("X-Frame-Options")!: "DENY",
            HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            HTTPField.Name("Referrer-Policy")!: "no-referrer",
            .cacheControl: "no-store",
            .pragma: "no-cache",
        ]
    }

    /// `form-action 'self'`, plus the redirect URI's origin (or private-use scheme) when a form's
    /// response redirects there: browsers apply `form-action` to the redirects that follow a submission.
    static func contentSecurityPolicy(styleHash: String, formTarget: String?) -> String {
        var formAction = "'self'"
        if let formTarget, let source = cspSource(for: formTarget) { formAction += " " + source }
        return "default-src 'none'; style-src 'sha256-\(styleHash)'; img-src https: data:; form-action \(formAction); "
            + "frame-ancestors 'none'; base-uri 'none'"
    }

    /// `scheme://host[:port]` for http(s), `scheme:` for a private-use scheme; nil for anything odd.
    static func cspSource(for uri: String) -> String? {
        guard let components = URLComponents(string: uri), let scheme = components.scheme?.lowercased(),
            scheme.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "+" || $0 == "-" })
        else { return nil }
        guard scheme == "http" || scheme == "https" else { return "\(scheme):" }
        guard let host = components.percentEncodedHost, !host.isEmpty,
            host.allSatisfy({ $0.isLetter || $0.isNumber || ".-:[]".contains($0) })
        else { return nil }
        return "\(scheme)://\(host)" + (components.port.map { ":\($0)" } ?? "")
    }
}

import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyServer
import Mustache

/// Renders the admin page's templates with the shared page security headers (strict CSP, no framing, no-store).
struct AdminPageRenderer: Sendable {
    private let library: MustacheLibrary
    private let styleHash = HTMLPageSecurity.styleHash(AdminPageTemplates.css)

    init() throws {
        library = MustacheLibrary(templates: [
            "header": try MustacheTemplate(string: AdminPageTemplates.header),
            "footer": try MustacheTemplate(string: HTMLPageTemplates.footer),
            "sign-in": try MustacheTemplate(string: AdminPageTemplates.signIn),
            "instances": try MustacheTemplate(string: AdminPageTemplates.instances),
            "error": try MustacheTemplate(string: AdminPageTemplates.error),
        ])
    }

    /// `template` for `tenant`'s admin page.
    func page(
        _ template: String, title: String, tenant: String, values: [String: Any] = [:],
        status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]
    ) -> Response {
        var context: [String: Any] = [
            "title": title, "tenant": tenant, "base": AdminPagePaths.base(tenant), "css": AdminPageTemplates.css,
        ]
        context.merge(values) { _, new in new }
        let html = library.render(context, withTemplate: template) ?? ""
        var all = HTMLPageSecurity.headers(styleHash: styleHash)
        all.append(contentsOf: headers)
        return Response(status: status, headers: all, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    /// An error page that links back to the instance list (which asks for a sign-in when needed).
    func error(
        _ message: String, tenant: String, status: HTTPResponse.Status, retryAfter: Int? = nil
    ) -> Response {
        var headers: HTTPFields = [:]
        var values: [String: Any] = ["message": message, "backURL": AdminPagePaths.base(tenant)]
        if let retryAfter {
            headers[HTTPField.Name("Retry-After")!] = String(retryAfter)
            values["retryAfter"] = String(retryAfter)
        }
        let title =
            status == .forbidden
            ? "Request refused" : status == .tooManyRequests ? "Too many attempts" : "Something is wrong"
        return page("error", title: title, tenant: tenant, values: values, status: status, headers: headers)
    }
}

/// The admin page's URLs.
enum AdminPagePaths {
    static func base(_ tenant: String) -> String { "/admin/t/\(tenant)" }
    static func signIn(_ tenant: String) -> String { "\(base(tenant))/sign-in" }

    /// 303 See Other: after a form post the browser loads the target with GET (no resubmission on reload).
    static func seeOther(_ location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
    }
}

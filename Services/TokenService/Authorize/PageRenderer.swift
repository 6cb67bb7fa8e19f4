import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyCore
import LatchkeyServer
import Mustache

/// Renders the tenant-branded pages and wraps them in the security headers every HTML answer carries.
struct PageRenderer: Sendable {
    private let library: MustacheLibrary

    init() throws {
        library = MustacheLibrary(templates: [
            "header": try MustacheTemplate(string: PageTemplates.header),
            "footer": try MustacheTemplate(string: HTMLPageTemplates.footer),
            "form-start": try MustacheTemplate(string: PageTemplates.formStart),
            "sign-in": try MustacheTemplate(string: PageTemplates.signIn),
            "sign-up": try MustacheTemplate(string: PageTemplates.signUp),
            "consent": try MustacheTemplate(string: PageTemplates.consent),
            "change-password": try MustacheTemplate(string: PageTemplates.changePassword),
            "error": try MustacheTemplate(string: PageTemplates.error),
            "sign-out": try MustacheTemplate(string: PageTemplates.signOut),
            "signed-out": try MustacheTemplate(string: PageTemplates.signedOut),
            "account": try MustacheTemplate(string: PageTemplates.account),
            "account-confirm": try MustacheTemplate(string: PageTemplates.accountConfirm),
        ])
    }

    /// A page: `template` rendered with the tenant's branding plus `values`.
    /// `formTarget` is the redirect URI a form on this page may lead to (see ``HTMLPageSecurity``).
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
        var all = HTMLPageSecurity.headers(
            styleHash: HTMLPageSecurity.styleHash(css), formTarget: formTarget, imageSources: "https: data:")
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
}

/// A page's POST: its form, or the error page answering it.
enum PostedForm {
    case accepted(FormParameters)
    case refused(Response)
}

extension PageRenderer {
    /// Reads the form a page posted and checks it came from `page` (the CSRF token bound to the cookie);
    /// an unreadable form or a failed check is answered with an error page.
    func postedForm(_ request: Request, tenant: ResolvedTenant, csrf: CSRFGuard, from page: String) async throws
        -> PostedForm
    {
        let form: FormParameters
        do { form = try await FormParameters.read(from: request) } catch let error as OAuthError {
            return .refused(self.error(error.errorDescription, tenant: tenant, status: error.status))
        }
        guard
            csrf.isValid(
                cookie: request.cookies[CSRFGuard.cookieName]?.value, token: form["csrf_token"], tenant: tenant.id)
        else {
            return .refused(
                self.error(
                    "This form was not sent from \(page), or it has expired. Go back and try again.", tenant: tenant,
                    status: .forbidden))
        }
        return .accepted(form)
    }
}

import Crypto
import Foundation
import HTTPTypes

/// The headers every server-rendered page carries: a strict CSP whose only style is the
/// page's own inline style sheet (by hash), no script at all, no framing, never cached.
public enum HTMLPageSecurity {
    /// base64 of SHA-256 of an inline style sheet, for `style-src 'sha256-…'`.
    public static func styleHash(_ css: String) -> String {
        Data(SHA256.hash(data: Data(css.utf8))).base64EncodedString()
    }

    /// `formTarget`: a URI a form's response may redirect to (see ``contentSecurityPolicy(styleHash:formTarget:imageSources:)``).
    public static func headers(styleHash: String, formTarget: String? = nil, imageSources: String? = nil) -> HTTPFields
    {
        [
            .contentType: "text/html; charset=utf-8",
            HTTPField.Name("Content-Security-Policy")!: contentSecurityPolicy(
                styleHash: styleHash, formTarget: formTarget, imageSources: imageSources),
            HTTPField.Name("X-Frame-Options")!: "DENY",
            HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            HTTPField.Name("Referrer-Policy")!: "no-referrer",
            .cacheControl: "no-store",
            .pragma: "no-cache",
        ]
    }

    /// `form-action 'self'`, plus the redirect URI's origin (or private-use scheme) when a form's
    /// response redirects there: browsers apply `form-action` to the redirects that follow a submission.
    public static func contentSecurityPolicy(styleHash: String, formTarget: String?, imageSources: String? = nil)
        -> String
    {
        var formAction = "'self'"
        if let formTarget, let source = cspSource(for: formTarget) { formAction += " " + source }
        let images = imageSources.map { "img-src \($0); " } ?? ""
        return "default-src 'none'; style-src 'sha256-\(styleHash)'; \(images)form-action \(formAction); "
            + "frame-ancestors 'none'; base-uri 'none'"
    }

    /// `scheme://host[:port]` for http(s), `scheme:` for a private-use scheme; nil for anything odd.
    public static func cspSource(for uri: String) -> String? {
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

extension HTTPField.Name {
    /// HTTP/1.0 cache directive RFC 6749 §5.1 still asks for beside `Cache-Control: no-store`.
    public static let pragma = HTTPField.Name("Pragma")!
}

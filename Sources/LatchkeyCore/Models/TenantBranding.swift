import Foundation

/// How a tenant's sign-in, sign-up and admin pages look; every member is optional.
public struct TenantBranding: Codable, Sendable, Hashable {
    /// Name shown on pages; the tenant's display name when absent.
    public var name: String?
    /// Absolute `https` URL of the logo image.
    public var logoURL: String?
    /// `#rgb` or `#rrggbb`, used for buttons and headers.
    public var primaryColor: String?
    /// `#rgb` or `#rrggbb`, the page background.
    public var backgroundColor: String?

    public init(
        name: String? = nil, logoURL: String? = nil, primaryColor: String? = nil, backgroundColor: String? = nil
    ) {
        self.name = name
        self.logoURL = logoURL
        self.primaryColor = primaryColor
        self.backgroundColor = backgroundColor
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case name
        case logoURL = "logo_url"
        case primaryColor = "primary_color"
        case backgroundColor = "background_color"
    }
}

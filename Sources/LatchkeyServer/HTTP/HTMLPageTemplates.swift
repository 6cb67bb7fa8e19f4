/// The mustache fragments every server-rendered page shares (the token service's sign-in pages and the
/// gateway's admin page): document head with the inline style sheet (allowed by its hash in the CSP,
/// see ``HTMLPageSecurity``), the page heading with the form error, and the document end.
public enum HTMLPageTemplates {
    /// From `<!doctype html>` to `<body>`; `title` is a mustache snippet (escaped variables only).
    public static func documentStart(title: String) -> String {
        """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="no-referrer">
        <title>\(title)</title>
        <style>{{{css}}}</style>
        </head>
        <body>

        """
    }

    /// The `h1` and, after a failed form post, the error the form points at with `aria-describedby`.
    public static let headingAndError = """
        <h1>{{title}}</h1>
        {{#error}}<p class="error" role="alert" id="form-error">{{error}}</p>{{/error}}

        """

    /// The error page body: the message and, when throttled, when to try again.
    public static let errorMessage = """
        <p>{{message}}</p>
        {{#retryAfter}}<p>Try again in {{retryAfter}} seconds.</p>{{/retryAfter}}

        """

    public static let footer = """

        </main>
        </body>
        </html>

        """
}

import LatchkeyServer

/// The mustache templates of the sign-in, sign-up, consent and error pages. Every variable is written with
/// `{{…}}` (HTML-escaped) except the style sheet, which is built from validated colours only.
enum PageTemplates {
    static let header =
        HTMLPageTemplates.documentStart(title: "{{title}} · {{brandName}}") + """
            <main>
            <header>
            {{#logoURL}}<img src="{{logoURL}}" alt="{{brandName}} logo" height="48">{{/logoURL}}
            <p class="brand">{{brandName}}</p>
            </header>

            """ + HTMLPageTemplates.headingAndError

    /// The opening of every form: the CSRF token and the sealed pending request.
    static let formStart = """
        <form method="post" action="{{action}}" {{#error}}aria-describedby="form-error"{{/error}}>
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <input type="hidden" name="authorization_request" value="{{authorizationRequest}}">
        """

    static let signIn = """
        {{> header}}
        {{> form-start}}
        <label for="username">Username</label>
        <input id="username" name="username" type="text" autocomplete="username" required maxlength="128" value="{{username}}" autofocus>
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autocomplete="current-password" required maxlength="1024">
        <button type="submit">Sign in</button>
        </form>
        {{#hasProviders}}<p>Or:</p>{{/hasProviders}}
        {{#providers}}<p><a class="provider" href="{{url}}">Continue with {{displayName}}</a></p>{{/providers}}
        {{#canSignUp}}<p>No account yet? <a href="{{signUpURL}}">Create one</a></p>{{/canSignUp}}
        {{> footer}}
        """

    static let signUp = """
        {{> header}}
        {{> form-start}}
        <label for="username">Username</label>
        <input id="username" name="username" type="text" autocomplete="username" required maxlength="64" value="{{username}}" autofocus>
        <label for="email">Email</label>
        <input id="email" name="email" type="email" autocomplete="email" required maxlength="254" value="{{email}}">
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autocomplete="new-password" required minlength="{{passwordMinLength}}" maxlength="{{passwordMaxLength}}" aria-describedby="password-rule">
        <p id="password-rule" class="hint">{{passwordHint}}</p>
        <button type="submit">Create account</button>
        </form>
        <p>Already have an account? <a href="{{signInURL}}">Sign in</a></p>
        {{> footer}}
        """

    /// Allow or Deny for one client and its scopes; both buttons post the same form (`decision`).
    static let consent = """
        {{> header}}
        {{> form-start}}
        <p><strong class="client">{{clientName}}</strong> wants to access your {{brandName}} account{{#username}} ({{username}}){{/username}}.</p>
        {{#otherUsersInstance}}<p class="hint">This application was registered by another user, not by {{brandName}}.</p>{{/otherUsersInstance}}
        <p id="scope-list-label">It asks for:</p>
        <ul class="scopes" aria-labelledby="scope-list-label">
        {{#scopes}}<li><code>{{.}}</code></li>{{/scopes}}
        </ul>
        <button type="submit" name="decision" value="allow" autofocus>Allow</button>
        <button type="submit" name="decision" value="deny" class="secondary">Deny</button>
        </form>
        {{> footer}}
        """

    /// A signed-in user's password change: current password, new password twice.
    static let changePassword = """
        {{> header}}
        {{#done}}<p role="status">Your password was changed. Other sign-in sessions were ended.</p>{{/done}}
        {{^done}}
        <form method="post" action="{{action}}" {{#error}}aria-describedby="form-error"{{/error}}>
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <p>Signed in as <strong>{{username}}</strong>.</p>
        <label for="current-password">Current password</label>
        <input id="current-password" name="current_password" type="password" autocomplete="current-password" required maxlength="1024" autofocus>
        <label for="new-password">New password</label>
        <input id="new-password" name="new_password" type="password" autocomplete="new-password" required minlength="{{passwordMinLength}}" maxlength="{{passwordMaxLength}}" aria-describedby="password-rule">
        <p id="password-rule" class="hint">{{passwordHint}}</p>
        <label for="confirm-password">New password again</label>
        <input id="confirm-password" name="confirm_password" type="password" autocomplete="new-password" required maxlength="{{passwordMaxLength}}">
        <button type="submit">Change password</button>
        </form>
        {{/done}}
        {{> footer}}
        """

    /// RP-Initiated Logout without a valid `id_token_hint`: the user confirms; the request's members ride
    /// along as hidden fields and are validated again on the post.
    static let signOut = """
        {{> header}}
        <form method="post" action="{{action}}">
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        {{#clientID}}<input type="hidden" name="client_id" value="{{clientID}}">{{/clientID}}
        {{#postLogoutRedirectURI}}<input type="hidden" name="post_logout_redirect_uri" value="{{postLogoutRedirectURI}}">{{/postLogoutRedirectURI}}
        {{#state}}<input type="hidden" name="state" value="{{state}}">{{/state}}
        <p>Do you want to sign out of {{brandName}}{{#username}} as <strong>{{username}}</strong>{{/username}}?</p>
        {{#clientName}}<p class="hint">Requested by <strong class="client">{{clientName}}</strong>.</p>{{/clientName}}
        <button type="submit" name="decision" value="sign_out" autofocus>Sign out</button>
        </form>
        <p class="hint">To stay signed in, close this page.</p>
        {{> footer}}
        """

    static let signedOut = """
        {{> header}}
        <p role="status">You are signed out of {{brandName}}. You can close this page.</p>
        {{> footer}}
        """

    /// The signed-in user's devices: one card per instance, its actions as links to their confirmation.
    static let account = """
        {{> header}}
        {{#username}}<p>Signed in as <strong>{{username}}</strong>.</p>{{/username}}
        {{#notice}}<p class="notice" role="status">{{notice}}</p>{{/notice}}
        {{^signedIn}}<p>You are not signed in here.</p><a class="action" href="{{signInURL}}">Sign in</a>{{/signedIn}}
        {{#signedIn}}
        {{^devices}}<p>No devices yet.</p>{{/devices}}
        <ul class="devices">
        {{#devices}}
        <li>
        <p class="client"><strong>{{name}}</strong></p>
        <dl>
        {{#softwareID}}<dt>App</dt><dd>{{softwareID}}</dd>{{/softwareID}}
        <dt>Registered</dt><dd>{{registered}}{{#registeredByYou}} by you{{/registeredByYou}}</dd>
        <dt>Last used</dt><dd>{{lastUsed}}</dd>
        <dt>Status</dt><dd>{{statusText}}</dd>
        </dl>
        {{#canSignOut}}<a class="action" href="{{signOutURL}}">Sign out of this device</a>{{/canSignOut}}
        {{#canRemove}}<a class="action secondary" href="{{removeURL}}">Remove this device</a>{{/canRemove}}
        </li>
        {{/devices}}
        </ul>
        <p><a href="{{passwordURL}}">Change your password</a> · <a href="{{signOutEverywhereURL}}">Sign out</a></p>
        {{/signedIn}}
        {{> footer}}
        """

    /// Confirms one account action (sign out of, or remove, a device).
    static let accountConfirm = """
        {{> header}}
        <form method="post" action="{{action}}">
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <p>{{question}}</p>
        <p class="hint">{{consequence}}</p>
        <button type="submit" autofocus>{{confirmLabel}}</button>
        </form>
        <p><a href="{{backURL}}">Cancel</a></p>
        {{> footer}}
        """

    static let error = "{{> header}}\n" + HTMLPageTemplates.errorMessage + "{{> footer}}"

    /// The style sheet; `primary` and `background` are validated `#rgb`/`#rrggbb` values.
    static func css(primary: String, background: String) -> String {
        """
        body{margin:0;font:16px/1.5 system-ui,sans-serif;background:\(background);color:#1a1a1a}\
        main{max-width:26rem;margin:3rem auto;padding:2rem;background:#fff;border-radius:.5rem}\
        .brand{font-weight:600;color:\(primary)}label{display:block;margin-top:1rem;font-weight:600}\
        input{box-sizing:border-box;width:100%;padding:.6rem;border:1px solid #595959;border-radius:.25rem;font:inherit}\
        button{margin-top:1.5rem;width:100%;padding:.7rem;border:0;border-radius:.25rem;background:\(primary);color:#fff;font:inherit;font-weight:600}\
        a{color:\(primary)}:focus-visible{outline:3px solid #1a1a1a;outline-offset:2px}\
        .error{color:#a4000f;font-weight:600}.hint{font-size:.9rem;color:#404040}\
        .scopes{padding-left:1.25rem}.client{overflow-wrap:anywhere}\
        button.secondary{margin-top:.75rem;background:#fff;color:#1a1a1a;border:1px solid #595959}\
        .devices{list-style:none;padding:0}.devices li{border:1px solid #c4c4c4;border-radius:.25rem;padding:1rem;margin-top:1rem}\
        .devices p{margin:0}dl{display:grid;grid-template-columns:auto 1fr;gap:.25rem .75rem;margin:.5rem 0}dt{font-weight:600}dd{margin:0;overflow-wrap:anywhere}\
        a.action{display:block;margin-top:.75rem;padding:.6rem;border-radius:.25rem;background:\(primary);color:#fff;text-align:center;text-decoration:none;font-weight:600}\
        a.action.secondary{background:#fff;color:#a4000f;border:1px solid #a4000f}.notice{font-weight:600}
        """
    }
}

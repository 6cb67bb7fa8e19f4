import LatchkeyCore
import LatchkeyServer

/// The mustache templates of the admin page. Every variable is written with `{{…}}` (HTML-escaped:
/// client names, usernames, reasons and filters are user-supplied) except the constant style sheet.
enum AdminPageTemplates {
    static let header =
        HTMLPageTemplates.documentStart(title: "{{title}} · Latchkey admin · {{tenant}}") + """
            <header class="bar">
            <p class="brand">Latchkey admin · <span class="tenant">{{tenant}}</span></p>
            {{#signedIn}}
            <form method="post" action="{{base}}/sign-out" class="sign-out">
            <input type="hidden" name="csrf_token" value="{{csrfToken}}">
            <span>Signed in as {{actor}}</span>
            <button type="submit">Sign out</button>
            </form>
            {{/signedIn}}
            </header>
            <main id="main">

            """ + HTMLPageTemplates.headingAndError

    static let signIn = """
        {{> header}}
        <p>Sign in with an administration client of this tenant (or of the platform tenant): a confidential client whose scope includes <code>admin</code>.</p>
        <form method="post" action="{{base}}/sign-in" class="sign-in" {{#error}}aria-describedby="form-error"{{/error}}>
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <label for="client_id">Client ID</label>
        <input id="client_id" name="client_id" type="text" autocomplete="username" required maxlength="256" value="{{clientID}}" autofocus>
        <label for="client_secret">Client secret</label>
        <input id="client_secret" name="client_secret" type="password" autocomplete="current-password" required maxlength="1024">
        <button type="submit">Sign in</button>
        </form>
        {{> footer}}
        """

    static let instances = """
        {{> header}}
        {{#flash}}<p class="flash" role="status">{{flash}}</p>{{/flash}}
        <section aria-labelledby="search-heading">
        <h2 id="search-heading">Search</h2>
        <form method="get" action="{{base}}" class="search">
        <div><label for="user">User (username or id)</label>
        <input id="user" name="user" type="search" maxlength="128" value="{{filters.user}}"></div>
        <div><label for="status">Status</label>
        <select id="status" name="status">
        {{#statuses}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/statuses}}
        </select></div>
        <div><label for="template">Template (software_id)</label>
        <input id="template" name="template" type="search" maxlength="128" value="{{filters.template}}"></div>
        <div><label for="created_from">Created from</label>
        <input id="created_from" name="created_from" type="date" value="{{filters.createdFrom}}"></div>
        <div><label for="created_to">Created to</label>
        <input id="created_to" name="created_to" type="date" value="{{filters.createdTo}}"></div>
        <div><button type="submit">Search</button></div>
        </form>
        </section>
        {{#revokeAll}}
        <section aria-labelledby="revoke-all-heading">
        <h2 id="revoke-all-heading">All instances of {{userLabel}}</h2>
        <form method="post" action="{{base}}/users/{{userID}}/revoke" class="revoke-all">
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <input type="hidden" name="return_query" value="{{returnQuery}}">
        <label for="revoke-all-reason">Reason for revoking every active instance of {{userLabel}}</label>
        <input id="revoke-all-reason" name="reason" type="text" required maxlength="500">
        <button type="submit" class="danger">Revoke all of this user's instances</button>
        </form>
        </section>
        {{/revokeAll}}
        <section aria-labelledby="instances-heading">
        <h2 id="instances-heading">Instances</h2>
        <div class="table-wrap" role="region" aria-labelledby="instances-caption" tabindex="0">
        <table>
        <caption id="instances-caption">{{caption}}</caption>
        <thead><tr>
        <th scope="col">Client ID</th><th scope="col">Name</th><th scope="col">User</th><th scope="col">Template</th>
        <th scope="col">Status</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Revoke</th>
        </tr></thead>
        <tbody>
        {{#clients}}
        <tr>
        <th scope="row"><code>{{clientID}}</code></th>
        <td>{{clientName}}</td>
        <td>{{user}}</td>
        <td>{{template}}</td>
        <td><span class="status status-{{status}}">{{status}}</span>{{#revocationReason}}<br><small>{{revocationReason}}</small>{{/revocationReason}}</td>
        <td>{{created}}</td>
        <td>{{lastUsed}}</td>
        <td>{{#active}}
        <form method="post" action="{{base}}/clients/{{clientIDPath}}/revoke" class="revoke">
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <input type="hidden" name="return_query" value="{{returnQuery}}">
        <label for="reason-{{row}}">Reason for revoking {{clientID}}</label>
        <input id="reason-{{row}}" name="reason" type="text" required maxlength="500">
        <button type="submit" class="danger">Revoke</button>
        </form>
        {{/active}}</td>
        </tr>
        {{/clients}}
        {{^clients}}<tr><td colspan="8">No instances match.</td></tr>{{/clients}}
        </tbody>
        </table>
        </div>
        <nav aria-label="Pages" class="pages">
        {{#firstPageURL}}<a href="{{firstPageURL}}">First page</a>{{/firstPageURL}}
        {{#nextPageURL}}<a href="{{nextPageURL}}" rel="next">Next page</a>{{/nextPageURL}}
        </nav>
        </section>
        {{> footer}}
        """

    static let error =
        "{{> header}}\n" + HTMLPageTemplates.errorMessage + """
            <p><a href="{{backURL}}">Back to the admin page</a></p>
            {{> footer}}
            """

    /// The style sheet (constant, allowed by its hash in the CSP).
    static let css = """
        body{margin:0;font:16px/1.5 system-ui,sans-serif;background:#f2f4f7;color:#1a1a1a}\
        .bar{display:flex;flex-wrap:wrap;justify-content:space-between;align-items:center;gap:.5rem;padding:.5rem 1rem;background:#1f2a44;color:#fff}\
        .bar .brand{margin:0;font-weight:600}.sign-out{display:flex;gap:.5rem;align-items:center}\
        main{max-width:80rem;margin:1.5rem auto;padding:1rem 1.5rem;background:#fff;border-radius:.5rem}\
        h1{font-size:1.6rem}h2{font-size:1.2rem;margin-top:1.5rem}\
        label{display:block;font-weight:600;margin-top:.5rem}\
        input,select{box-sizing:border-box;width:100%;padding:.45rem;border:1px solid #595959;border-radius:.25rem;font:inherit}\
        button{margin-top:.5rem;padding:.45rem .9rem;border:0;border-radius:.25rem;background:#1f4fd1;color:#fff;font:inherit;font-weight:600;cursor:pointer}\
        button.danger{background:#a4000f}.bar button{margin:0;background:#fff;color:#1f2a44;white-space:nowrap}\
        .sign-in{max-width:24rem}.search{display:grid;grid-template-columns:repeat(auto-fit,minmax(11rem,1fr));gap:.5rem 1rem;align-items:end}\
        .revoke-all{max-width:32rem}.table-wrap{overflow-x:auto}\
        table{border-collapse:collapse;width:100%;font-size:.9rem}caption{text-align:left;font-weight:600;padding:.5rem 0}\
        th,td{border-bottom:1px solid #d0d4dc;padding:.4rem;text-align:left;vertical-align:top}\
        thead th{background:#eef1f6}table code{font-size:.8rem;word-break:break-all}\
        .revoke label{font-weight:400;font-size:.8rem}.status-active{color:#0b6b2b;font-weight:600}.status-revoked{color:#a4000f}\
        .flash{padding:.6rem;border-left:4px solid #0b6b2b;background:#e9f6ee}\
        .error{color:#a4000f;font-weight:600}.pages{display:flex;gap:1rem;margin-top:1rem}\
        a{color:#1f4fd1}:focus-visible{outline:3px solid #1a1a1a;outline-offset:2px}
        """
}

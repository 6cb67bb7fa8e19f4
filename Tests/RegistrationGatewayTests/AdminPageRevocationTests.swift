import Foundation
import HTTPTypes
import HummingbirdTesting
import LatchkeyCore
import LatchkeyTestSupport
import NIOCore
import PostgresNIO
import Testing

@testable import RegistrationGateway

/// The admin page's instance list and its forms: escaping, CSRF, revocation through the same service as
/// the admin API, filters and paging, and hostile input.
@Suite struct AdminPageRevocationTests {
    @Test func userSuppliedValuesAreRenderedEscaped() async throws {
        let h = try await GatewayHarness.make()
        let admin = try await h.createAdminClient()
        let username = #"o"brien's <b>x</b>"#
        let user = try await h.createUser(username)
        try await GatewayHarness.withApp { client in
            _ = try await h.registerInstance(client, name: "<script>alert(1)</script>", user: user)
            var browser = try await h.signedInBrowser(client, as: admin)
            let page = try await browser.get("/admin/t/\(h.tenant)")
            #expect(page.status == 200)
            #expect(!page.body.contains("<script"))
            #expect(page.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
            #expect(page.body.contains("o&quot;brien&#39;s &lt;b&gt;x&lt;/b&gt;"))
            #expect(!page.body.contains("<b>x</b>"))
            // A search value comes back inside an attribute, escaped.
            let hostile = #""><script>alert(2)</script>"#
            let searched = try await browser.get("/admin/t/\(h.tenant)?user=\(AdminPageFilters.encode(hostile))")
            #expect(searched.status == 200)
            #expect(!searched.body.contains("<script"))
            #expect(searched.body.contains(#"value="&quot;&gt;&lt;script&gt;alert(2)&lt;/script&gt;""#))
            // Searching by the quoted username finds the instance and offers "revoke all".
            let byName = try await browser.get("/admin/t/\(h.tenant)?user=\(AdminPageFilters.encode(username))")
            #expect(byName.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
            #expect(byName.body.contains("/users/\(user.uuidString.lowercased())/revoke"))
        }
    }

    @Test func formsWithoutTheSessionsCSRFTokenAreRefusedAndRevokeNothing() async throws {
        let h = try await GatewayHarness.make()
        let admin = try await h.createAdminClient()
        try await GatewayHarness.withApp { client in
            let instance = try await h.registerInstance(client, name: "Phone")
            var other = try await h.signedInBrowser(client, as: admin)
            let otherSessionsToken = try await other.adminCSRFToken(tenant: h.tenant)
            var browser = try await h.signedInBrowser(client, as: admin)
            for token in [nil, "", "forged", otherSessionsToken] as [String?] {
                var form = [("reason", "device stolen")]
                if let token { form.append(("csrf_token", token)) }
                let clientRefused = try await browser.post(
                    "/admin/t/\(h.tenant)/clients/\(instance)/revoke", form: form)
                #expect(clientRefused.status == 403)
                #expect(clientRefused.body.contains("not sent from this admin page"))
                AdminPageSignInTests.expectPageSecurityHeaders(clientRefused)
                let userRefused = try await browser.post(
                    "/admin/t/\(h.tenant)/users/\(h.user.uuidString)/revoke", form: form)
                #expect(userRefused.status == 403)
            }
            #expect(try await h.clientStatus(instance) == "active")
            #expect(try await h.revokedEvents(instance).isEmpty)
        }
    }

    @Test func revokingOnThePageIsTheAdminRevocationWithActorAndReason() async throws {
        let h = try await GatewayHarness.make()
        let admin = try await h.createAdminClient()
        try await GatewayHarness.withApp { client in
            let phone = try await h.registerInstance(client, name: "Phone")
            let tablet = try await h.registerInstance(client, name: "Tablet")
            let laptop = try await h.registerInstance(client, name: "Laptop")
            var browser = try await h.signedInBrowser(client, as: admin)
            let list = try await browser.get("/admin/t/\(h.tenant)?status=active")
            let token = try #require(list.field("csrf_token"))
            #expect(list.field("return_query") == "status=active")

            let revoked = try await browser.post(
                "/admin/t/\(h.tenant)/clients/\(phone)/revoke",
                form: [("csrf_token", token), ("reason", "device stolen"), ("return_query", "status=active")])
            #expect(revoked.status == 303)
            #expect(revoked.location == "/admin/t/\(h.tenant)?status=active")
            let after = try await browser.get(try #require(revoked.location))
            #expect(after.body.contains("Instance \(phone) revoked."))
            #expect(!after.body.contains(">\(phone)<"), "the active filter still lists the revoked instance")
            // The flash is shown once.
            #expect(!(try await browser.get("/admin/t/\(h.tenant)").body.contains("Instance \(phone) revoked.")))
            #expect(try await h.clientStatus(phone) == "revoked")
            let events = try await h.revokedEvents(phone)
            #expect(events.count == 1)
            let data = try #require(events.first?["data"] as? [String: Any])
            #expect(data["reason"] as? String == "admin")
            #expect(data["reason_detail"] as? String == "device stolen")
            #expect((data["actor"] as? [String: String]) == ["type": "admin", "id": admin.id])

            // Again: nothing happens, the flash says why.
            let again = try await browser.post(
                "/admin/t/\(h.tenant)/clients/\(phone)/revoke", form: [("csrf_token", token), ("reason", "again")])
            #expect(again.status == 303)
            #expect(
                try await browser.get("/admin/t/\(h.tenant)").body.contains("Not done: the client is already revoked."))
            #expect(try await h.revokedEvents(phone).count == 1)
            // A reason is required.
            _ = try await browser.post(
                "/admin/t/\(h.tenant)/clients/\(tablet)/revoke", form: [("csrf_token", token), ("reason", "  ")])
            #expect(try await h.clientStatus(tablet) == "active")

            // Every active instance of the user at once: one event each.
            let all = try await browser.post(
                "/admin/t/\(h.tenant)/users/\(h.user.uuidString.lowercased())/revoke",
                form: [("csrf_token", token), ("reason", "account compromised")])
            #expect(all.status == 303)
            #expect(
                try await browser.get("/admin/t/\(h.tenant)").body.contains(
                    "2 instances of the user revoked; their sessions and tokens ended."))
            for id in [tablet, laptop] {
                #expect(try await h.clientStatus(id) == "revoked")
                let events = try await h.revokedEvents(id)
                #expect(events.count == 1)
                #expect((events.first?["data"] as? [String: Any])?["reason_detail"] as? String == "account compromised")
            }
        }
    }

    @Test func filtersAndCursorPagingOverTheSharedSearch() async throws {
        let h = try await GatewayHarness.make()
        let admin = try await h.createAdminClient()
        let token = try await h.dcrToken(sub: "api-admin", scope: "admin", audience: "https://admin.latchkey.test")
        try await GatewayHarness.withApp { client in
            var ids: [String] = []
            for name in ["One", "Two", "Three"] { ids.append(try await h.registerInstance(client, name: name)) }
            // The API pages with the same cursor: every instance exactly once, newest first.
            var seen: [String] = []
            var cursor: String?
            repeat {
                let page = try await client.send(
                    .get,
                    "/admin/tenants/\(h.tenant)/clients?user=\(h.user.uuidString)&limit=1"
                        + (cursor.map { "&cursor=\($0)" } ?? ""),
                    token: token)
                #expect(page.status == .ok)
                seen += (page.json["clients"] as? [[String: Any]] ?? []).compactMap { $0["client_id"] as? String }
                cursor = page.json["next_cursor"] as? String
            } while cursor != nil && seen.count < 10
            #expect(seen == ids.reversed())

            var browser = try await h.signedInBrowser(client, as: admin)
            let today = String(RFC3339Timestamp.string(from: Date()).prefix(10))
            let byDate = try await browser.get(
                "/admin/t/\(h.tenant)?created_from=\(today)&created_to=\(today)&status=active")
            for id in ids { #expect(byDate.body.contains(id)) }
            let past = try await browser.get("/admin/t/\(h.tenant)?created_to=2000-01-01")
            #expect(past.body.contains("No instances match."))
            let unknownTemplate = try await browser.get("/admin/t/\(h.tenant)?template=nope")
            #expect(unknownTemplate.body.contains("No instances match."))
        }
    }

    @Test func hostileInputIsAClientErrorNeverAServerError() async throws {
        let h = try await GatewayHarness.make()
        let admin = try await h.createAdminClient()
        try await GatewayHarness.withApp { client in
            let instance = try await h.registerInstance(client, name: "Phone")
            var browser = try await h.signedInBrowser(client, as: admin)
            let token = try await browser.adminCSRFToken(tenant: h.tenant)
            let revoke = "/admin/t/\(h.tenant)/clients/\(instance)/revoke"

            let oversized = try await browser.send(
                revoke, method: .post,
                body: ByteBuffer(string: "csrf_token=\(token)&reason=" + String(repeating: "x", count: 70_000)))
            #expect(oversized.status == 413)
            let duplicated = try await browser.post(
                revoke, form: [("csrf_token", token), ("reason", "a"), ("reason", "b")])
            #expect(duplicated.status == 400)
            let json = try await browser.send(
                revoke, method: .post, body: ByteBuffer(string: "{}"), contentType: "application/json")
            #expect(json.status == 415)
            let badEncoding = try await browser.send(
                revoke, method: .post, body: ByteBuffer(string: "reason=%zz&csrf_token=\(token)"))
            #expect(badEncoding.status == 400)
            let longReason = try await browser.post(
                revoke, form: [("csrf_token", token), ("reason", String(repeating: "r", count: 501))])
            #expect(longReason.status == 303)
            #expect(try await h.clientStatus(instance) == "active")
            for query in [
                "cursor=not-a-cursor", "cursor=\(Base64URL.encode(Array("x|y".utf8)))", "status=stolen",
                "created_from=yesterday", "user=a&user=b", "template=" + String(repeating: "t", count: 200),
                "user=" + String(repeating: "u", count: 5_000), "user=%00",
            ] {
                let page = try await browser.get("/admin/t/\(h.tenant)?\(query)")
                #expect(page.status == 400, "\(query.prefix(40)) → \(page.status)")
                AdminPageSignInTests.expectPageSecurityHeaders(page)
            }
            for path in [
                "/admin/t/\(h.tenant)/users/not-a-uuid/revoke", "/admin/t/\(h.tenant)/clients/no-such-client/revoke",
                "/admin/t/\(h.tenant)/clients/\(String(repeating: "c", count: 2_000))/revoke",
            ] {
                let response = try await browser.post(path, form: [("csrf_token", token), ("reason", "r")])
                #expect(response.status == 303, "\(path.prefix(60)) → \(response.status)")
            }
            #expect(try await browser.get("/admin/t/Not_A_Tenant").status == 404)
            #expect(try await browser.get("/admin/t/\(TestEnvironment.uniqueTenant("none"))").status == 404)
            let hugeSignIn = try await browser.post(
                "/admin/t/\(h.tenant)/sign-in",
                form: [("client_id", String(repeating: "i", count: 10_000)), ("client_secret", "s")])
            #expect(hugeSignIn.status == 403)
        }
    }

    @Test func theAdminAPIRevokesEveryInstanceOfAUser() async throws {
        let h = try await GatewayHarness.make()
        let token = try await h.dcrToken(sub: "api-admin", scope: "admin", audience: "https://admin.latchkey.test")
        try await GatewayHarness.withApp { client in
            let first = try await h.registerInstance(client, name: "One")
            let second = try await h.registerInstance(client, name: "Two")
            let path = "/admin/tenants/\(h.tenant)/users/\(h.user.uuidString)/revoke-clients"
            #expect(try await client.send(.post, path, token: token, json: "{}").status == .badRequest)
            let revoked = try await client.send(.post, path, token: token, json: #"{"reason":"lost both"}"#)
            #expect(revoked.status == .ok, "\(String(buffer: revoked.body))")
            #expect(Set(revoked.json["revoked"] as? [String] ?? []) == [first, second])
            for id in [first, second] {
                #expect(try await h.revokedEvents(id).count == 1)
                #expect(try await h.clientStatus(id) == "revoked")
            }
            let again = try await client.send(.post, path, token: token, json: #"{"reason":"lost both"}"#)
            #expect((again.json["revoked"] as? [String]) == [])
            #expect(
                try await client.send(
                    .post, "/admin/tenants/\(h.tenant)/users/nope/revoke-clients", token: token,
                    json: #"{"reason":"x"}"#
                ).status == .notFound)
        }
    }
}

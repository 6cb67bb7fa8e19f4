import LatchkeyCore

/// The story of one client and of one user, built from the audit log.
///
/// Lists are bounded (newest kept) and say when they were cut, so a client with years of
/// history still answers in one response; the event listing has everything with paging.
struct AuditTimelines: Sendable {
    static let listLimit = 100
    static let dayLimit = 366
    static let instanceLimit = 100

    let reader: AuditLogReader

    /// nil when the log holds nothing about the client.
    func client(tenant: String, clientID: String) async throws -> JSONValue? {
        let lifecycle = try await reader.events(
            tenant: tenant, subject: clientID, types: [.clientRegistered, .clientRevoked], limit: Self.listLimit)
        let updates = try await reader.events(
            tenant: tenant, subject: clientID, types: [.clientUpdated], newestFirst: true, limit: Self.listLimit + 1)
        let tokenRevocations = try await reader.events(
            tenant: tenant, subject: clientID, types: [.tokenRevoked], newestFirst: true, limit: Self.listLimit + 1)
        let reuse = try await reader.events(
            tenant: tenant, subject: clientID, types: [.refreshTokenReuseDetected], newestFirst: true,
            limit: Self.listLimit + 1)
        let lastIssued = try await reader.events(
            tenant: tenant, subject: clientID, types: [.tokenIssued], newestFirst: true, limit: 1)
        let totals = try await reader.issuanceTotals(tenant: tenant, clientID: clientID)
        guard !lifecycle.isEmpty || !updates.isEmpty || !tokenRevocations.isEmpty || !reuse.isEmpty || totals.count > 0
        else { return nil }
        let perDay = try await reader.issuancePerDay(tenant: tenant, clientID: clientID, days: Self.dayLimit)

        let registration = lifecycle.first { $0.eventType == LatchkeyEventType.clientRegistered.rawValue }
        let revocations = lifecycle.filter { $0.eventType == LatchkeyEventType.clientRevoked.rawValue }
        let days: [JSONValue] = perDay.map { day in
            .object(["day": .string(day.day), "count": .number(Double(day.count)), "last_issued_at": .string(day.last)])
        }
        var tokens: [String: JSONValue] = [:]
        tokens["issued_total"] = .number(Double(totals.count))
        tokens["first_issued_at"] = totals.first.map(JSONValue.string) ?? .null
        tokens["last_issued_at"] = lastIssued.first.map { .string($0.eventTime) } ?? .null
        tokens["last_issued"] = lastIssued.first?.view ?? .null
        tokens["per_day"] = .array(days)
        tokens["per_day_truncated"] = .bool(perDay.count >= Self.dayLimit)
        tokens["revocations"] = Self.bounded(tokenRevocations)
        tokens["revocations_truncated"] = .bool(tokenRevocations.count > Self.listLimit)
        tokens["refresh_token_reuse"] = Self.bounded(reuse)
        tokens["refresh_token_reuse_truncated"] = .bool(reuse.count > Self.listLimit)
        var timeline: [String: JSONValue] = [:]
        timeline["tenant"] = .string(tenant)
        timeline["client_id"] = .string(clientID)
        timeline["status"] = .string(Self.status(registered: registration != nil, revocations: revocations))
        timeline["registration"] = registration?.view ?? .null
        timeline["revocations"] = .array(revocations.map(\.view))
        timeline["updates"] = Self.bounded(updates)
        timeline["updates_truncated"] = .bool(updates.count > Self.listLimit)
        timeline["tokens"] = .object(tokens)
        return .object(timeline)
    }

    private static func bounded(_ events: [StoredAuditEvent]) -> JSONValue {
        .array(events.prefix(listLimit).map(\.view))
    }

    /// nil when the log holds nothing about the user.
    func user(tenant: String, user: String) async throws -> JSONValue? {
        let account = try await reader.accountEvents(tenant: tenant, user: user, limit: Self.listLimit)
        let clients = try await reader.instances(tenant: tenant, user: user, limit: Self.instanceLimit + 1)
        let instanceIDs = Array(clients.prefix(Self.instanceLimit))
        var instances: [JSONValue] = []
        for clientID in instanceIDs {
            if let timeline = try await client(tenant: tenant, clientID: clientID) { instances.append(timeline) }
        }
        let other = try await reader.otherActivity(
            tenant: tenant, user: user, excluding: instanceIDs, limit: Self.listLimit + 1)
        guard !account.isEmpty || !instances.isEmpty || !other.isEmpty else { return nil }
        return .object([
            "tenant": .string(tenant),
            "user": .string(user),
            "account": .array(account.map(\.view)),
            "instances": .array(instances),
            "instances_truncated": .bool(clients.count > Self.instanceLimit),
            "other_activity": .array(
                other.prefix(Self.listLimit).map { entry in
                    .object([
                        "client_id": .string(entry.client), "type": .string(entry.type),
                        "count": .number(Double(entry.count)), "last_at": .string(entry.last),
                    ])
                }),
            "other_activity_truncated": .bool(other.count > Self.listLimit),
        ])
    }

    /// The client's state as the log tells it: its last revocation decides, else registered means active.
    static func status(registered: Bool, revocations: [StoredAuditEvent]) -> String {
        if let last = revocations.last, let reason = last.event?["data"]?["reason"]?.stringValue,
            let parsed = ClientRevoked.Reason(rawValue: reason)
        {
            return parsed.resultingStatus.rawValue
        }
        return registered ? "active" : "unknown"
    }
}

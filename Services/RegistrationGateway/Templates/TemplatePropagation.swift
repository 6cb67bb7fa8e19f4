import Foundation
import HTTPTypes
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging
import PostgresNIO

/// Applies a changed template to every active instance made from it (templatized DCR: instances
/// follow their template), inside the caller's transaction so the template, its instances and
/// their `ClientUpdated` outbox rows commit together or not at all.
///
/// Each instance is rebuilt as the template's metadata plus the members the instance set itself
/// (`template_overrides`) that the template still marks overridable, then validated under the
/// tenant policy. If any instance would become invalid, or would switch between secret and
/// non-secret authentication (it holds a secret, or has none), the whole update is refused.
/// Instances are walked in `client_id` order in batches of ``batchSize`` rows, each locked while
/// it is rewritten, so memory stays bounded however many instances a template has.
struct TemplatePropagation: Sendable {
    static let batchSize = 500

    let outbox: OutboxWriter

    /// One active instance as the propagation reads it.
    private struct Instance {
        var clientID: String
        var metadata: ClientMetadata
        var overrides: ClientMetadata?
        var authenticatedUser: UUID?
    }

    /// The new state of one instance.
    private struct Rewrite {
        var clientID: String
        var metadata: ClientMetadata
        var overrides: ClientMetadata
    }

    /// Rewrites the instances of `template` (already stored at `template.version`); returns how many changed.
    func propagate(
        _ template: ClientTemplate, policy: TenantPolicy, actor: EventActor, on connection: PostgresConnection,
        logger: Logger
    ) async throws -> Int {
        let validator = ClientMetadataValidator(policy: policy)
        let tenant = template.tenant.rawValue
        var after = ""
        var changed = 0
        while true {
            let batch = try await instances(of: template, after: after, on: connection, logger: logger)
            guard let last = batch.last else { break }
            after = last.clientID
            var rewrites: [Rewrite] = []
            var events: [ClientUpdated] = []
            for instance in batch {
                let rewrite = try rebuild(instance, from: template, validator: validator)
                let fields = ClientUpdated.changedFields(from: instance.metadata, to: rewrite.metadata)
                if fields.isEmpty && rewrite.overrides == instance.overrides { continue }
                rewrites.append(rewrite)
                guard !fields.isEmpty else { continue }
                events.append(
                    ClientUpdated(
                        tenant: template.tenant, clientID: instance.clientID, changedFields: fields,
                        authenticatedUser: instance.authenticatedUser, templateID: template.id,
                        templateVersion: template.version, actor: actor))
            }
            try await store(rewrites, tenant: tenant, version: template.version, on: connection, logger: logger)
            for event in events {
                try await outbox.append(
                    CloudEvent(source: EventSource.registrationGateway, data: event), on: connection, logger: logger)
            }
            changed += events.count
            if batch.count < Self.batchSize { break }
        }
        // Instances whose metadata did not change follow the new version too.
        try await connection.query(
            """
            UPDATE clients SET template_version = \(template.version)
            WHERE tenant_id = \(tenant) AND software_id = \(template.id) AND status = 'active'
              AND template_version IS DISTINCT FROM \(template.version)
            """, logger: logger)
        return changed
    }

    /// The instance's metadata under `template`, validated; refusals name the instance.
    private func rebuild(_ instance: Instance, from template: ClientTemplate, validator: ClientMetadataValidator) throws
        -> Rewrite
    {
        // Rows without stored overrides keep every member the template lets them set.
        let overrides = template.allowedOverrides(instance.overrides ?? instance.metadata)
        let metadata: ClientMetadata
        do {
            metadata = try validator.validate(template.validatedInstanceMetadata(for: overrides))
        } catch let error as OAuthError {
            throw Self.refusal(instance.clientID, error.errorDescription)
        }
        let wasSecret = (instance.metadata.tokenEndpointAuthMethod ?? .clientSecretBasic).usesClientSecret
        let isSecret = (metadata.tokenEndpointAuthMethod ?? .clientSecretBasic).usesClientSecret
        guard wasSecret == isSecret else {
            throw Self.refusal(
                instance.clientID, "token_endpoint_auth_method cannot switch between secret and non-secret methods")
        }
        return Rewrite(clientID: instance.clientID, metadata: metadata, overrides: overrides)
    }

    private static func refusal(_ clientID: String, _ reason: String) -> OAuthError {
        OAuthError(
            .badRequest, "invalid_client_metadata",
            "the template change would make instance \(clientID) invalid (\(reason)); nothing was changed")
    }

    /// The next batch of active instances after `after`, locked until the transaction ends.
    private func instances(
        of template: ClientTemplate, after: String, on connection: PostgresConnection, logger: Logger
    ) async throws -> [Instance] {
        let rows = try await connection.query(
            """
            SELECT client_id, metadata::text, template_overrides::text, authenticated_user FROM clients
            WHERE tenant_id = \(template.tenant.rawValue) AND software_id = \(template.id) AND status = 'active'
              AND client_id > \(after)
            ORDER BY client_id LIMIT \(Self.batchSize) FOR UPDATE
            """, logger: logger)
        var batch: [Instance] = []
        for try await (clientID, metadata, overrides, user) in rows.decode((String, String, String?, UUID?).self) {
            batch.append(
                Instance(
                    clientID: clientID,
                    metadata: try LatchkeyJSON.decode(ClientMetadata.self, from: Data(metadata.utf8)),
                    overrides: try overrides.map { try LatchkeyJSON.decode(ClientMetadata.self, from: Data($0.utf8)) },
                    authenticatedUser: user))
        }
        return batch
    }

    /// Writes a batch of rewritten instances with one statement.
    private func store(
        _ rewrites: [Rewrite], tenant: String, version: Int, on connection: PostgresConnection, logger: Logger
    ) async throws {
        guard !rewrites.isEmpty else { return }
        func json(_ metadata: ClientMetadata) throws -> String {
            String(decoding: try LatchkeyJSON.encode(metadata), as: UTF8.self)
        }
        let ids = rewrites.map(\.clientID)
        let metadata = try rewrites.map { try json($0.metadata) }
        let overrides = try rewrites.map { try json($0.overrides) }
        let types = rewrites.map { $0.metadata.clientType.rawValue }
        let applications = rewrites.map { ($0.metadata.applicationType ?? .native).rawValue }
        try await connection.query(
            """
            UPDATE clients AS c
            SET metadata = u.metadata::jsonb, template_overrides = u.overrides::jsonb, client_type = u.client_type,
                application_type = u.application_type, template_version = \(version), updated_at = now()
            FROM unnest(\(ids)::text[], \(metadata)::text[], \(overrides)::text[], \(types)::text[], \(applications)::text[])
                 AS u (client_id, metadata, overrides, client_type, application_type)
            WHERE c.tenant_id = \(tenant) AND c.client_id = u.client_id
            """, logger: logger)
    }
}

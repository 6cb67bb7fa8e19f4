-- Client secrets of a tenant's upstream identity providers, given by a tenant admin as values. Sealed
-- with AES-GCM under the key-encryption key (the same envelope as signing keys), with the tenant and
-- provider as associated data, so a value copied to another row does not open. The policy itself never
-- holds a secret: it is readable by admins and copied into audit records.
CREATE TABLE upstream_client_secrets (
    tenant_id   text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    provider_id text NOT NULL CHECK (length(provider_id) <= 63),
    sealed      bytea NOT NULL CHECK (length(sealed) <= 4096),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, provider_id)
);

ALTER TABLE upstream_client_secrets ENABLE ROW LEVEL SECURITY;
ALTER TABLE upstream_client_secrets FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON upstream_client_secrets TO latchkey_app
    USING (tenant_id = latchkey_current_tenant())
    WITH CHECK (tenant_id = latchkey_current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON upstream_client_secrets TO latchkey_app;

-- Idempotency-Key of POST /t/{tenant}/register: one row per (tenant, principal, key). Only keyed hashes of
-- the key and of the canonical request body are kept; the answer to a replay is the same client with freshly
-- issued credentials, so nothing reversible is stored. A row is 'in_flight' from the first request until its
-- registration commits ('completed', with the client) or fails (deleted).
CREATE TABLE registration_idempotency_keys (
    tenant_id    text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    principal    text NOT NULL CHECK (length(principal) <= 200),
    key_hash     text NOT NULL CHECK (length(key_hash) <= 128),
    request_hash text NOT NULL CHECK (length(request_hash) <= 128),
    state        text NOT NULL CHECK (state IN ('in_flight', 'completed')),
    client_id    text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, principal, key_hash),
    CHECK ((state = 'completed') = (client_id IS NOT NULL))
);
CREATE INDEX registration_idempotency_keys_expiry ON registration_idempotency_keys (expires_at);

ALTER TABLE registration_idempotency_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE registration_idempotency_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON registration_idempotency_keys TO latchkey_app
    USING (tenant_id = latchkey_current_tenant())
    WITH CHECK (tenant_id = latchkey_current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON registration_idempotency_keys TO latchkey_app;

-- The gateway's background job sweeps expired keys of every tenant.
CREATE POLICY system_sweep ON registration_idempotency_keys TO latchkey_system USING (true);
GRANT SELECT, DELETE ON registration_idempotency_keys TO latchkey_system;

-- The RFC 7638 thumbprint of the key a user's registration proved (DPoP): the app instance. A later
-- registration of the same user proving the same key gets this client back instead of a new one.
ALTER TABLE clients ADD COLUMN instance_jkt text CHECK (length(instance_jkt) <= 128);
CREATE INDEX clients_by_instance ON clients (tenant_id, authenticated_user, instance_jkt)
    WHERE instance_jkt IS NOT NULL AND status = 'active';

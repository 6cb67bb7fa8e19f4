-- Consent a user gave a client at /authorize, remembered per (tenant, user, client) until expires_at
-- (the policy's consent.remember_for). scope is the space-separated set the user approved: a request for
-- a scope outside it asks again. Rows die with the user or the client.
CREATE TABLE consents (
    tenant_id  text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    user_id    uuid NOT NULL,
    client_id  text NOT NULL,
    scope      text NOT NULL CHECK (length(scope) <= 4096),
    granted_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, user_id, client_id),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, user_id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, client_id) REFERENCES clients (tenant_id, client_id) ON DELETE CASCADE
);
CREATE INDEX consents_by_client ON consents (tenant_id, client_id);

ALTER TABLE consents ENABLE ROW LEVEL SECURITY;
ALTER TABLE consents FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON consents TO latchkey_app
    USING (tenant_id = latchkey_current_tenant())
    WITH CHECK (tenant_id = latchkey_current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON consents TO latchkey_app;

-- A client an administrator trusts as the tenant's own: a signed-in user is not asked to consent to it.
-- Set only through the admin API; dynamic registration (RFC 7591/7592) never writes this column.
ALTER TABLE clients ADD COLUMN first_party boolean NOT NULL DEFAULT false;

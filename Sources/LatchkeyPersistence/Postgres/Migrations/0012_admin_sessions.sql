-- Sessions of the gateway's admin page (/admin/t/{tenant}). The browser holds a random session id in an
-- HttpOnly cookie; only its keyed hash is stored. A session belongs to the tenant whose page the admin
-- signed in to (Row-Level Security keeps it there); client_tenant_id is the tenant of the admin client,
-- which is the platform tenant for platform administrators. The flash message is the one-line result
-- of the last form post, shown once after the redirect.
CREATE TABLE admin_sessions (
    tenant_id        text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    session_hash     text NOT NULL,
    client_id        text NOT NULL CHECK (length(client_id) <= 256),
    client_tenant_id text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    last_seen_at     timestamptz NOT NULL DEFAULT now(),
    expires_at       timestamptz NOT NULL,
    ended_at         timestamptz,
    flash            text CHECK (length(flash) <= 1000),
    PRIMARY KEY (tenant_id, session_hash)
);
CREATE INDEX admin_sessions_expiry ON admin_sessions (expires_at);

ALTER TABLE admin_sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE admin_sessions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON admin_sessions TO latchkey_app
    USING (tenant_id = latchkey_current_tenant())
    WITH CHECK (tenant_id = latchkey_current_tenant());
GRANT SELECT, INSERT, UPDATE ON admin_sessions TO latchkey_app;

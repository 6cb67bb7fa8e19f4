-- Row-Level Security: latchkey_app sees and writes only the rows of the tenant set with
-- SET LOCAL app.tenant_id. FORCE applies it to the table owner too, so nothing bypasses it by accident.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY[
        'tenants', 'tenant_policy_versions', 'signing_keys', 'users', 'external_identities',
        'client_templates', 'clients', 'initial_access_tokens', 'authorization_codes',
        'refresh_tokens', 'issued_access_tokens', 'sso_sessions', 'outbox', 'audit_events',
        'audit_chain_heads'
    ]
    LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_isolation ON %I TO latchkey_app '
            'USING (tenant_id = latchkey_current_tenant()) '
            'WITH CHECK (tenant_id = latchkey_current_tenant())', t);
    END LOOP;
END
$$;

GRANT USAGE ON SCHEMA public TO latchkey_app, latchkey_system;
GRANT EXECUTE ON FUNCTION latchkey_current_tenant() TO latchkey_app, latchkey_system;

GRANT SELECT, INSERT, UPDATE ON tenants, tenant_policy_versions, signing_keys, users,
    external_identities, client_templates, clients, initial_access_tokens, authorization_codes,
    refresh_tokens, issued_access_tokens, sso_sessions TO latchkey_app;
GRANT DELETE ON signing_keys, external_identities, client_templates, authorization_codes,
    sso_sessions, initial_access_tokens TO latchkey_app;
-- Services only append to the outbox; publishing is the relay's (latchkey_system) job.
GRANT INSERT ON outbox TO latchkey_app;
GRANT SELECT ON audit_events, audit_chain_heads TO latchkey_app;

-- latchkey_system: cross-tenant, but only where its jobs need it.
CREATE POLICY system_relay ON outbox TO latchkey_system USING (true) WITH CHECK (true);
GRANT SELECT, UPDATE, DELETE ON outbox TO latchkey_system;

CREATE POLICY system_audit ON audit_events TO latchkey_system USING (true) WITH CHECK (true);
CREATE POLICY system_audit_heads ON audit_chain_heads TO latchkey_system USING (true) WITH CHECK (true);
GRANT SELECT, INSERT ON audit_events TO latchkey_system;
GRANT SELECT, INSERT, UPDATE ON audit_chain_heads TO latchkey_system;

-- Expiry of inactive dynamic clients runs across tenants: it may read and flip client status only.
CREATE POLICY system_expiry ON clients TO latchkey_system USING (true) WITH CHECK (true);
GRANT SELECT ON clients TO latchkey_system;
GRANT UPDATE (status, revoked_at, revocation_reason, updated_at) ON clients TO latchkey_system;
CREATE POLICY system_expiry_tokens ON refresh_tokens TO latchkey_system USING (true) WITH CHECK (true);
GRANT SELECT ON refresh_tokens TO latchkey_system;
GRANT UPDATE (status, revoked_at, revoke_reason) ON refresh_tokens TO latchkey_system;
GRANT INSERT ON outbox TO latchkey_system;
-- Reading tenant policies (for TTLs) across tenants, nothing else of them.
CREATE POLICY system_read_tenants ON tenants FOR SELECT TO latchkey_system USING (true);
GRANT SELECT ON tenants TO latchkey_system;

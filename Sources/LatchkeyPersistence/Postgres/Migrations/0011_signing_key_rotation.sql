-- Key rotation (issue 4): who staged a key, at most one staged key per tenant, and a cross-tenant
-- view for the token service's lifecycle job that never exposes the sealed private halves.
ALTER TABLE signing_keys ADD COLUMN staged_by text;
CREATE UNIQUE INDEX signing_keys_one_next ON signing_keys (tenant_id) WHERE status = 'next';

-- The lifecycle job finds tenants with due work across tenants (public columns only), then acts
-- on each inside that tenant's Row-Level Security scope as latchkey_app.
CREATE POLICY system_key_lifecycle ON signing_keys FOR SELECT TO latchkey_system USING (true);
GRANT SELECT (tenant_id, kid, algorithm, status, created_at, publish_until) ON signing_keys TO latchkey_system;

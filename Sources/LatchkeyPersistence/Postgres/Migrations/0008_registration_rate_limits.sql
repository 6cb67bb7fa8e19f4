-- Request counters of POST /t/{tenant}/register in fixed one-minute windows, keyed by
-- (tenant, key, window): key 'tenant' for the whole tenant, 'source:<ip>' per TCP peer, and
-- 'open' / 'open-source:<ip>' for requests without a bearer token. Kept in PostgreSQL so every
-- gateway replica counts against the same limits.
CREATE TABLE registration_rate_limits (
    tenant_id    text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    limit_key    text NOT NULL CHECK (length(limit_key) <= 128),
    window_start timestamptz NOT NULL,
    requests     integer NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, limit_key, window_start)
);
CREATE INDEX registration_rate_limits_stale ON registration_rate_limits (window_start);

ALTER TABLE registration_rate_limits ENABLE ROW LEVEL SECURITY;
ALTER TABLE registration_rate_limits FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON registration_rate_limits TO latchkey_app
    USING (tenant_id = latchkey_current_tenant())
    WITH CHECK (tenant_id = latchkey_current_tenant());
GRANT SELECT, INSERT, UPDATE ON registration_rate_limits TO latchkey_app;

-- The gateway's background job prunes finished windows of every tenant.
CREATE POLICY system_prune ON registration_rate_limits TO latchkey_system USING (true);
GRANT SELECT, DELETE ON registration_rate_limits TO latchkey_system;

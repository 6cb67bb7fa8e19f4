-- Password sign-in throttling without account lockout.
--
-- sign_in_sources: per (account, source address) failures since the last success and when the next
-- attempt is allowed (progressive delay), plus whether the account ever signed in from that source.
-- A guesser slows down only itself; the user at a known address keeps signing in.
CREATE TABLE sign_in_sources (
    tenant_id       text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    account         text NOT NULL CHECK (length(account) <= 256),
    source          text NOT NULL CHECK (length(source) <= 256),
    failures        integer NOT NULL DEFAULT 0,
    last_failure_at timestamptz,
    retry_at        timestamptz,
    succeeded_at    timestamptz,
    PRIMARY KEY (tenant_id, account, source)
);
CREATE INDEX sign_in_sources_stale ON sign_in_sources (last_failure_at);

-- sign_in_accounts: failures against one account from sources it never signed in from, per window;
-- at the ceiling such sources are refused for the rest of the window (known ones are not), which is
-- what bounds guessing of short secrets such as numeric PINs.
CREATE TABLE sign_in_accounts (
    tenant_id                text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    account                  text NOT NULL CHECK (length(account) <= 256),
    unknown_source_failures  integer NOT NULL DEFAULT 0,
    window_started_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, account)
);

-- sign_in_rate_limits: sign-in and sign-up form posts in fixed one-minute windows (policy
-- rate_limits.login), keyed 'tenant', 'source:<ip>', 'account:<name>', 'signup' and 'signup-source:<ip>'.
CREATE TABLE sign_in_rate_limits (
    tenant_id    text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    limit_key    text NOT NULL CHECK (length(limit_key) <= 300),
    window_start timestamptz NOT NULL,
    requests     integer NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, limit_key, window_start)
);
CREATE INDEX sign_in_rate_limits_stale ON sign_in_rate_limits (window_start);

ALTER TABLE sign_in_sources ENABLE ROW LEVEL SECURITY;
ALTER TABLE sign_in_sources FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON sign_in_sources TO latchkey_app
    USING (tenant_id = latchkey_current_tenant())
    WITH CHECK (tenant_id = latchkey_current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON sign_in_sources TO latchkey_app;

ALTER TABLE sign_in_accounts ENABLE ROW LEVEL SECURITY;
ALTER TABLE sign_in_accounts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON sign_in_accounts TO latchkey_app
    USING (tenant_id = latchkey_current_tenant())
    WITH CHECK (tenant_id = latchkey_current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON sign_in_accounts TO latchkey_app;

ALTER TABLE sign_in_rate_limits ENABLE ROW LEVEL SECURITY;
ALTER TABLE sign_in_rate_limits FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON sign_in_rate_limits TO latchkey_app
    USING (tenant_id = latchkey_current_tenant())
    WITH CHECK (tenant_id = latchkey_current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON sign_in_rate_limits TO latchkey_app;

-- When a user last signed in interactively (password, sign-up or an upstream provider), for administrators.
ALTER TABLE users ADD COLUMN last_login_at timestamptz;

-- The token service's janitor deletes rows past their use across tenants with the system role: it may
-- read and delete these tables, nothing more (refresh_tokens already has a cross-tenant policy for the
-- gateway's client expiry).
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY[
        'authorization_codes', 'issued_access_tokens', 'sso_sessions', 'admin_sessions', 'login_attempts',
        'sign_in_sources', 'sign_in_accounts', 'sign_in_rate_limits', 'consents'
    ]
    LOOP
        EXECUTE format('CREATE POLICY system_janitor ON %I TO latchkey_system USING (true)', t);
        EXECUTE format('GRANT SELECT, DELETE ON %I TO latchkey_system', t);
    END LOOP;
END
$$;
GRANT DELETE ON refresh_tokens TO latchkey_system;

-- What the janitor's batches select by.
CREATE INDEX authorization_codes_expiry ON authorization_codes (expires_at);
CREATE INDEX issued_access_tokens_expiry ON issued_access_tokens (expires_at);
CREATE INDEX refresh_tokens_expiry ON refresh_tokens (expires_at);
CREATE INDEX sso_sessions_expiry ON sso_sessions (expires_at);
CREATE INDEX sso_sessions_revoked ON sso_sessions (revoked_at) WHERE revoked_at IS NOT NULL;
CREATE INDEX consents_expiry ON consents (expires_at);
CREATE INDEX sign_in_accounts_stale ON sign_in_accounts (window_started_at);

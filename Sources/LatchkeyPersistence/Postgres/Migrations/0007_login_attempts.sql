-- Failed sign-in counters per account (lower-cased username as typed, known or not, so the table
-- itself does not enumerate users) and per source address. Kept in PostgreSQL so every replica of
-- the token service sees the same counts and lockouts.
CREATE TABLE login_attempts (
    tenant_id         text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    kind              text NOT NULL CHECK (kind IN ('account', 'source')),
    subject           text NOT NULL CHECK (length(subject) <= 256),
    failures          integer NOT NULL DEFAULT 0,
    window_started_at timestamptz NOT NULL DEFAULT now(),
    last_failure_at   timestamptz NOT NULL DEFAULT now(),
    lockouts          integer NOT NULL DEFAULT 0,
    locked_until      timestamptz,
    PRIMARY KEY (tenant_id, kind, subject)
);
CREATE INDEX login_attempts_stale ON login_attempts (last_failure_at);

ALTER TABLE login_attempts ENABLE ROW LEVEL SECURITY;
ALTER TABLE login_attempts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON login_attempts TO latchkey_app
    USING (tenant_id = latchkey_current_tenant())
    WITH CHECK (tenant_id = latchkey_current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON login_attempts TO latchkey_app;

CREATE TABLE authorization_codes (
    tenant_id             text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    code_hash             text NOT NULL,
    client_id             text NOT NULL,
    user_id               uuid NOT NULL,
    redirect_uri          text NOT NULL,
    scope                 text NOT NULL,
    code_challenge        text,
    code_challenge_method text,
    nonce                 text,
    dpop_jkt              text,
    auth_time             timestamptz NOT NULL,
    expires_at            timestamptz NOT NULL,
    consumed_at           timestamptz,
    -- Lets a replayed code revoke everything it produced.
    issued_family_id      uuid,
    issued_access_jti     text,
    created_at            timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, code_hash),
    FOREIGN KEY (tenant_id, client_id) REFERENCES clients (tenant_id, client_id) ON DELETE CASCADE
);

CREATE TABLE refresh_tokens (
    tenant_id     text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    token_hash    text NOT NULL,
    family_id     uuid NOT NULL,
    generation    integer NOT NULL DEFAULT 0,
    client_id     text NOT NULL,
    user_id       uuid,
    scope         text NOT NULL,
    dpop_jkt      text,
    status        text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'rotated', 'revoked')),
    expires_at    timestamptz NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    rotated_at    timestamptz,
    revoked_at    timestamptz,
    revoke_reason text,
    PRIMARY KEY (tenant_id, token_hash),
    FOREIGN KEY (tenant_id, client_id) REFERENCES clients (tenant_id, client_id) ON DELETE CASCADE
);
CREATE INDEX refresh_tokens_family ON refresh_tokens (tenant_id, family_id);
CREATE INDEX refresh_tokens_client ON refresh_tokens (tenant_id, client_id) WHERE status = 'active';

-- Access tokens are JWTs; a row per issued jti lets revoke/introspect answer without trusting the JWT alone.
CREATE TABLE issued_access_tokens (
    tenant_id  text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    jti        text NOT NULL,
    client_id  text NOT NULL,
    user_id    uuid,
    family_id  uuid,
    expires_at timestamptz NOT NULL,
    revoked_at timestamptz,
    PRIMARY KEY (tenant_id, jti)
);
CREATE INDEX issued_access_tokens_client ON issued_access_tokens (tenant_id, client_id);

CREATE TABLE sso_sessions (
    tenant_id    text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    session_hash text NOT NULL,
    user_id      uuid NOT NULL,
    auth_time    timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    revoked_at   timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, session_hash),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, user_id) ON DELETE CASCADE
);

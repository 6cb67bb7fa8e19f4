-- Roles the services log in as (or are granted to login roles by the operator).
-- latchkey_app:    tenant-scoped service role, subject to Row-Level Security, never BYPASSRLS.
-- latchkey_system: cross-tenant jobs (outbox relay, audit ingestion, expiry); only the tables it needs.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'latchkey_app') THEN
        CREATE ROLE latchkey_app NOLOGIN NOBYPASSRLS;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'latchkey_system') THEN
        CREATE ROLE latchkey_system NOLOGIN NOBYPASSRLS;
    END IF;
END
$$;

-- The tenant every statement of a latchkey_app transaction is scoped to (SET LOCAL app.tenant_id).
CREATE FUNCTION latchkey_current_tenant() RETURNS text
    LANGUAGE sql STABLE
    AS $$ SELECT NULLIF(current_setting('app.tenant_id', true), '') $$;

CREATE TABLE tenants (
    tenant_id      text PRIMARY KEY CHECK (tenant_id ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
    display_name   text NOT NULL,
    status         text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended')),
    policy         jsonb NOT NULL DEFAULT '{}'::jsonb,
    policy_version integer NOT NULL DEFAULT 1,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);

-- Every policy version is kept so an auditor can see what applied when.
CREATE TABLE tenant_policy_versions (
    tenant_id  text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    version    integer NOT NULL,
    policy     jsonb NOT NULL,
    changed_by text NOT NULL,
    changed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, version)
);

CREATE TABLE signing_keys (
    tenant_id             text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    kid                   text NOT NULL,
    algorithm             text NOT NULL CHECK (algorithm IN ('ES256', 'ES384', 'RS256', 'PS256', 'EdDSA')),
    public_jwk            jsonb NOT NULL,
    encrypted_private_key bytea NOT NULL,
    status                text NOT NULL CHECK (status IN ('next', 'active', 'retired')),
    created_at            timestamptz NOT NULL DEFAULT now(),
    activated_at          timestamptz,
    retired_at            timestamptz,
    -- Published in JWKS until this moment: the longest-lived token it signed has expired.
    publish_until         timestamptz,
    PRIMARY KEY (tenant_id, kid)
);
CREATE UNIQUE INDEX signing_keys_one_active ON signing_keys (tenant_id) WHERE status = 'active';

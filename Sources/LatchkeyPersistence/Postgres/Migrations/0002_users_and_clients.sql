CREATE TABLE users (
    tenant_id     text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    user_id       uuid NOT NULL,
    username      text NOT NULL CHECK (length(username) BETWEEN 1 AND 128),
    email         text CHECK (length(email) <= 320),
    password_hash text,
    status        text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'locked', 'disabled')),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, user_id)
);
CREATE UNIQUE INDEX users_username ON users (tenant_id, lower(username));

-- Idempotent provisioning from upstream providers hangs on this unique key.
CREATE TABLE external_identities (
    tenant_id        text NOT NULL,
    provider         text NOT NULL,
    provider_user_id text NOT NULL,
    user_id          uuid NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, provider, provider_user_id),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, user_id) ON DELETE CASCADE
);

CREATE TABLE client_templates (
    tenant_id          text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    software_id        text NOT NULL,
    metadata           jsonb NOT NULL,
    overridable_fields text[] NOT NULL DEFAULT '{}',
    version            integer NOT NULL DEFAULT 1,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, software_id)
);

CREATE TABLE clients (
    tenant_id                    text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    client_id                    text NOT NULL,
    status                       text NOT NULL DEFAULT 'active'
                                 CHECK (status IN ('active', 'revoked', 'deleted', 'expired')),
    client_kind                  text NOT NULL DEFAULT 'dynamic' CHECK (client_kind IN ('dynamic', 'static')),
    client_type                  text NOT NULL CHECK (client_type IN ('public', 'confidential')),
    application_type             text NOT NULL CHECK (application_type IN ('native', 'web')),
    authenticated_user           uuid,
    software_id                  text,
    registration_mechanism       text NOT NULL
                                 CHECK (registration_mechanism IN ('user_token', 'initial_access_token', 'open', 'admin')),
    metadata                     jsonb NOT NULL,
    client_secret_hash           text,
    client_secret_expires_at     timestamptz,
    registration_token_hash      text,
    created_at                   timestamptz NOT NULL DEFAULT now(),
    updated_at                   timestamptz NOT NULL DEFAULT now(),
    last_used_at                 timestamptz,
    revoked_at                   timestamptz,
    revocation_reason            text,
    PRIMARY KEY (tenant_id, client_id),
    FOREIGN KEY (tenant_id, software_id) REFERENCES client_templates (tenant_id, software_id),
    FOREIGN KEY (tenant_id, authenticated_user) REFERENCES users (tenant_id, user_id)
);
CREATE INDEX clients_by_user ON clients (tenant_id, authenticated_user, status);
CREATE INDEX clients_by_template ON clients (tenant_id, software_id);
CREATE INDEX clients_inactive ON clients (status, last_used_at) WHERE status = 'active' AND client_kind = 'dynamic';

CREATE TABLE initial_access_tokens (
    tenant_id       text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    token_id        uuid NOT NULL,
    token_hash      text NOT NULL,
    description     text,
    remaining_uses  integer NOT NULL CHECK (remaining_uses >= 0),
    expires_at      timestamptz NOT NULL,
    created_by      text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    revoked_at      timestamptz,
    PRIMARY KEY (tenant_id, token_id)
);
CREATE UNIQUE INDEX initial_access_tokens_hash ON initial_access_tokens (tenant_id, token_hash);

-- Transactional outbox: written in the same transaction as the state change it describes.
CREATE TABLE outbox (
    seq           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id      uuid NOT NULL UNIQUE,
    tenant_id     text NOT NULL REFERENCES tenants (tenant_id) ON DELETE CASCADE,
    topic         text NOT NULL,
    message_key   text NOT NULL,
    event_type    text NOT NULL,
    payload       text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    available_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    attempts      integer NOT NULL DEFAULT 0,
    last_error    text,
    claimed_by    text,
    claimed_until timestamptz,
    sent_at       timestamptz
);
CREATE INDEX outbox_unsent ON outbox (seq) WHERE sent_at IS NULL;
CREATE INDEX outbox_unsent_key ON outbox (message_key, seq) WHERE sent_at IS NULL;

-- Audit log: one row per event id, hash-chained per tenant.
CREATE TABLE audit_events (
    tenant_id    text NOT NULL,
    sequence     bigint NOT NULL,
    event_id     uuid NOT NULL,
    event_type   text NOT NULL,
    subject      text,
    user_id      text,
    event_time   timestamptz NOT NULL,
    stored_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    source_topic text NOT NULL,
    source_partition integer NOT NULL,
    source_offset bigint NOT NULL,
    event        jsonb NOT NULL,
    prev_hash    text NOT NULL,
    hash         text NOT NULL,
    PRIMARY KEY (tenant_id, sequence)
);
CREATE UNIQUE INDEX audit_events_event_id ON audit_events (event_id);
CREATE INDEX audit_events_subject ON audit_events (tenant_id, subject, sequence);
CREATE INDEX audit_events_user ON audit_events (tenant_id, user_id, sequence);

-- Head of each tenant's chain; the row lock serialises chain extension per tenant only.
CREATE TABLE audit_chain_heads (
    tenant_id text PRIMARY KEY,
    sequence  bigint NOT NULL,
    hash      text NOT NULL
);

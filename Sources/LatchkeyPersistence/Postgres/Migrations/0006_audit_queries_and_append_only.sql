-- Audit query API: listings filtered by type or by event time inside one tenant, in chain order.
CREATE INDEX audit_events_type ON audit_events (tenant_id, event_type, sequence);
CREATE INDEX audit_events_time ON audit_events (tenant_id, event_time, sequence);

-- The audit log is append-only. No service role holds UPDATE or DELETE on it; this trigger also
-- stops the owner role from editing rows by accident (a deliberate edit needs DISABLE TRIGGER,
-- which the hash chain then exposes through /verify).
CREATE FUNCTION audit_events_append_only() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    RAISE EXCEPTION 'audit_events is append-only (% refused)', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;

CREATE TRIGGER audit_events_append_only
    BEFORE UPDATE OR DELETE ON audit_events
    FOR EACH ROW EXECUTE FUNCTION audit_events_append_only();

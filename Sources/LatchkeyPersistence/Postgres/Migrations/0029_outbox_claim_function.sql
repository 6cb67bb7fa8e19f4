-- compatible_from: 22
-- The outbox relay's claim in one round trip instead of four (BEGIN, advisory lock, claim, COMMIT).

-- Claims up to p_limit unsent rows for p_relay, in sequence order, for p_lease_seconds, skipping p_excluded
-- (rows the relay is still publishing). A row is claimable when it is due, not held by another relay's live
-- claim, and no earlier unsent row of its key is held by another relay or waiting out a backoff, which keeps
-- per-key order. The transaction-scoped advisory lock serialises claims, and is taken before the claim's own
-- statement so that statement's snapshot sees every claim committed before it (each statement of a VOLATILE
-- function takes a new snapshot at READ COMMITTED).
CREATE FUNCTION claim_outbox_batch(p_relay text, p_excluded bigint[], p_limit bigint, p_lease_seconds float8)
RETURNS TABLE (seq bigint, event_id uuid, event_type text, topic text, message_key text, payload text,
               attempts integer, traceparent text)
LANGUAGE plpgsql VOLATILE SECURITY INVOKER AS $$
#variable_conflict use_column
BEGIN
    PERFORM pg_advisory_xact_lock(5497574998040268632);  -- "LKOUTBOX"
    RETURN QUERY
    WITH candidates AS (
        SELECT o.seq FROM outbox o
        WHERE o.sent_at IS NULL AND o.available_at <= clock_timestamp()
          AND (o.claimed_until IS NULL OR o.claimed_until < clock_timestamp() OR o.claimed_by = p_relay)
          AND o.seq <> ALL(p_excluded)
          AND NOT EXISTS (
              SELECT 1 FROM outbox p
              WHERE p.message_key = o.message_key AND p.sent_at IS NULL AND p.seq < o.seq
                AND ((p.claimed_until >= clock_timestamp() AND p.claimed_by <> p_relay)
                     OR p.available_at > clock_timestamp()))
        ORDER BY o.seq
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED)
    UPDATE outbox SET claimed_by = p_relay,
                      claimed_until = clock_timestamp() + make_interval(secs => p_lease_seconds)
    FROM candidates WHERE outbox.seq = candidates.seq
    RETURNING outbox.seq, outbox.event_id, outbox.event_type, outbox.topic, outbox.message_key,
              outbox.payload, outbox.attempts, outbox.traceparent;
END
$$;
REVOKE ALL ON FUNCTION claim_outbox_batch FROM PUBLIC;
GRANT EXECUTE ON FUNCTION claim_outbox_batch TO latchkey_system;

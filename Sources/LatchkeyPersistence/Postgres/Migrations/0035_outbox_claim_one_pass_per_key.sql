-- compatible_from: 22
-- The outbox claim checks per-key order once per key instead of once per row. A row may be claimed only when
-- no earlier unsent row of its key is held by another relay or waiting out a backoff; that check was a
-- subquery per candidate row, each walking its key's earlier unsent rows (and the index entries of rows sent
-- since the last vacuum), so a claim of n rows of one key cost n walks. Now the claimable rows are taken in
-- sequence order a batch at a time, the earliest blocking row of each of their keys below the batch's last
-- row is found in one pass over those keys, and the rows behind one are left; when that leaves the batch
-- short of the limit the next rows are examined, so a key that is held back never holds up the others.
-- The rows are then locked and claimed, their state checked again on the version that is locked.
CREATE OR REPLACE FUNCTION claim_outbox_batch(p_relay text, p_excluded bigint[], p_limit bigint, p_lease_seconds float8)
RETURNS TABLE (seq bigint, event_id uuid, event_type text, topic text, message_key text, payload text,
               attempts integer, traceparent text)
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET plan_cache_mode = force_custom_plan AS $$
#variable_conflict use_column
DECLARE
    v_after bigint := 0;
    v_claimable bigint[] := '{}';
    v_examined bigint;
    v_last bigint;
    v_free bigint[];
BEGIN
    PERFORM pg_advisory_xact_lock(5497574998040268632);  -- "LKOUTBOX"
    LOOP
        WITH examined AS MATERIALIZED (
            SELECT o.seq, o.message_key FROM outbox o
            WHERE o.sent_at IS NULL AND o.seq > v_after AND o.available_at <= clock_timestamp()
              AND (o.claimed_until IS NULL OR o.claimed_until < clock_timestamp() OR o.claimed_by = p_relay)
              AND o.seq <> ALL(p_excluded)
            ORDER BY o.seq
            LIMIT p_limit),
        blocking AS MATERIALIZED (
            SELECT p.message_key, min(p.seq) AS first_seq FROM outbox p
            WHERE p.sent_at IS NULL
              AND p.message_key IN (SELECT e.message_key FROM examined e)
              AND p.seq < (SELECT max(e.seq) FROM examined e)
              AND ((p.claimed_until >= clock_timestamp() AND p.claimed_by <> p_relay)
                   OR p.available_at > clock_timestamp())
            GROUP BY p.message_key)
        SELECT count(*), max(e.seq),
               coalesce(array_agg(e.seq ORDER BY e.seq) FILTER (WHERE NOT EXISTS (
                   SELECT 1 FROM blocking b WHERE b.message_key = e.message_key AND b.first_seq < e.seq)), '{}')
        INTO v_examined, v_last, v_free
        FROM examined e;
        v_claimable := v_claimable || v_free[1:(p_limit - cardinality(v_claimable))::int];
        EXIT WHEN v_examined < p_limit OR cardinality(v_claimable) >= p_limit;
        v_after := v_last;
    END LOOP;
    RETURN QUERY
    WITH locked AS (
        SELECT o.seq FROM outbox o
        WHERE o.seq = ANY(v_claimable) AND o.sent_at IS NULL AND o.available_at <= clock_timestamp()
          AND (o.claimed_until IS NULL OR o.claimed_until < clock_timestamp() OR o.claimed_by = p_relay)
        FOR UPDATE SKIP LOCKED)
    UPDATE outbox SET claimed_by = p_relay,
                      claimed_until = clock_timestamp() + make_interval(secs => p_lease_seconds)
    FROM locked WHERE outbox.seq = locked.seq
    RETURNING outbox.seq, outbox.event_id, outbox.event_type, outbox.topic, outbox.message_key,
              outbox.payload, outbox.attempts, outbox.traceparent;
END
$$;

-- compatible_from: 22
-- A key held back once in a claim stays held back for the rest of that claim. The claim examines the claimable
-- rows a batch at a time, and each batch's statement sees the rows as they are when it starts: when the row
-- that held back a key in one batch was marked sent before the next batch's statement, that statement found
-- nothing holding the key back (the rows skipped in the earlier batch are neither held by a relay nor waiting
-- out a backoff) and claimed the key's later rows ahead of the skipped ones, which were then published after
-- them. Now the keys held back in a batch are remembered (a jsonb object, so a lookup does not grow with their
-- number), their rows in every later batch are left, and their blocking rows are not looked up again.
CREATE OR REPLACE FUNCTION claim_outbox_batch(p_relay text, p_excluded bigint[], p_limit bigint, p_lease_seconds float8)
RETURNS TABLE (seq bigint, event_id uuid, event_type text, topic text, message_key text, payload text,
               attempts integer, traceparent text)
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET plan_cache_mode = force_custom_plan AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz;
    v_after bigint := 0;
    v_claimable bigint[] := '{}';
    v_held jsonb := '{}';
    v_newly_held jsonb;
    v_locked bigint[];
    v_examined bigint;
    v_last bigint;
    v_free bigint[];
BEGIN
    PERFORM pg_advisory_xact_lock(5497574998040268632);  -- "LKOUTBOX"
    v_now := clock_timestamp();
    LOOP
        WITH examined AS MATERIALIZED (
            SELECT o.seq, o.message_key FROM outbox o
            WHERE o.sent_at IS NULL AND o.seq > v_after AND o.available_at <= v_now
              AND (o.claimed_until IS NULL OR o.claimed_until < v_now OR o.claimed_by = p_relay)
              AND o.seq <> ALL(p_excluded)
            ORDER BY o.seq
            LIMIT p_limit),
        blocking AS MATERIALIZED (
            SELECT p.message_key, min(p.seq) AS first_seq FROM outbox p
            WHERE p.sent_at IS NULL
              AND p.message_key IN (SELECT e.message_key FROM examined e WHERE NOT (v_held ? e.message_key))
              AND p.seq < (SELECT max(e.seq) FROM examined e)
              AND ((p.claimed_until >= v_now AND p.claimed_by <> p_relay) OR p.available_at > v_now)
            GROUP BY p.message_key)
        SELECT count(*), max(e.seq),
               coalesce(array_agg(e.seq ORDER BY e.seq) FILTER (
                   WHERE b.message_key IS NULL AND NOT (v_held ? e.message_key)), '{}'),
               coalesce(jsonb_object_agg(e.message_key, true) FILTER (WHERE b.message_key IS NOT NULL), '{}')
        INTO v_examined, v_last, v_free, v_newly_held
        FROM examined e LEFT JOIN blocking b ON b.message_key = e.message_key AND b.first_seq < e.seq;
        v_claimable := v_claimable || v_free[1:(p_limit - cardinality(v_claimable))::int];
        EXIT WHEN v_examined < p_limit OR cardinality(v_claimable) >= p_limit;
        v_held := v_held || v_newly_held;
        v_after := v_last;
    END LOOP;
    SELECT coalesce(array_agg(l.seq), '{}') INTO v_locked FROM (
        SELECT o.seq FROM outbox o
        WHERE o.seq = ANY(v_claimable) AND o.sent_at IS NULL AND o.available_at <= v_now
          AND (o.claimed_until IS NULL OR o.claimed_until < v_now OR o.claimed_by = p_relay)
        FOR UPDATE SKIP LOCKED) l;
    RETURN QUERY
    UPDATE outbox SET claimed_by = p_relay,
                      claimed_until = clock_timestamp() + make_interval(secs => p_lease_seconds)
    WHERE outbox.seq = ANY(v_locked)
      AND NOT EXISTS (
          SELECT 1 FROM outbox s
          WHERE s.seq = ANY(v_claimable) AND s.seq <> ALL(v_locked)
            AND s.message_key = outbox.message_key AND s.seq < outbox.seq)
    RETURNING outbox.seq, outbox.event_id, outbox.event_type, outbox.topic, outbox.message_key,
              outbox.payload, outbox.attempts, outbox.traceparent;
END
$$;

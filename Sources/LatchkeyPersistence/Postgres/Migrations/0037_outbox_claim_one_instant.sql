-- compatible_from: 22
-- The outbox claim decides every row against one instant. It read the clock at each check, so a row whose lease
-- ran out between the check that finds claimable rows and the check that finds the rows holding back their key
-- was neither: the later rows of its key were claimed while it was still unsent, and could be published before
-- it. Now the instant is read once, once the claim lock is held. And a claimable row that another transaction
-- holds locked when the rows are locked (its relay marking it sent, or scheduling its retry) is left, as before,
-- and now also holds back the rows of its key behind it in this claim.
CREATE OR REPLACE FUNCTION claim_outbox_batch(p_relay text, p_excluded bigint[], p_limit bigint, p_lease_seconds float8)
RETURNS TABLE (seq bigint, event_id uuid, event_type text, topic text, message_key text, payload text,
               attempts integer, traceparent text)
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET plan_cache_mode = force_custom_plan AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz;
    v_after bigint := 0;
    v_claimable bigint[] := '{}';
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
              AND p.message_key IN (SELECT e.message_key FROM examined e)
              AND p.seq < (SELECT max(e.seq) FROM examined e)
              AND ((p.claimed_until >= v_now AND p.claimed_by <> p_relay) OR p.available_at > v_now)
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

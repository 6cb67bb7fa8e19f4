-- compatible_from: 34
-- Registration counters spread over eight rows per bucket and window. With one row, every registration of a
-- tenant (and of a source) updated the same row and held its lock until its commit was flushed, so those
-- registrations committed one after another, each waiting for the previous one's WAL flush and wake-up.
-- Stripe 0 of a bucket is its row as before (limit_key); stripes 1 to 7 are rows keyed limit_key || '#' || n,
-- so the table and its key are unchanged and a count already under way when this applies still lands in
-- the bucket. A request adds one to the row of its session's stripe and reads the window's sum. No request
-- over a limit gets through:
--   * Far from the limit (the sum it reads, its own count included, plus one for every other transaction
--     that can be open, max_connections - 1 sessions and max_prepared_transactions, is still within the
--     limit) the request is within the limit whatever the others do: an increment it cannot see belongs to
--     a transaction that has not committed, and a transaction holds at most one per bucket (this function
--     is called once per request, and its buckets have distinct keys).
--   * Otherwise its increment is rolled back (a subtransaction, which also releases the stripe's lock) and
--     the request is counted exactly: one exact count per bucket and window at a time (an advisory lock),
--     every stripe's row locked, so every increment made before is committed and counted and none is made
--     until this one commits. A request over the limit is counted too, as before.
-- A limit at or below that bound is always counted exactly, on stripe 0 alone (one row per bucket, as
-- before): no request can be decided on a stripe, so no other stripe has a row unless the limit was higher
-- earlier in the same window.
-- Builds from 34 on count only through these functions; earlier ones upserted the counters themselves.

CREATE OR REPLACE FUNCTION count_registration_request(
    p_tenant text, p_limit_keys text[], p_limits integer[], p_window_seconds float8, OUT retry_after float8
) LANGUAGE plpgsql SECURITY INVOKER AS $$
DECLARE
    v_window timestamptz;
    v_requests bigint;
    v_others integer;
    v_keys text[];
    v_stripe integer;
BEGIN
    PERFORM set_config('app.tenant_id', p_tenant, true);
    v_window := date_bin(make_interval(secs => p_window_seconds), now(), timestamptz 'epoch');
    v_others := current_setting('max_connections')::integer - 1
                + current_setting('max_prepared_transactions')::integer;
    v_stripe := pg_backend_pid() % 8;
    FOR i IN 1 .. coalesce(array_length(p_limit_keys, 1), 0) LOOP
        v_keys := ARRAY[p_limit_keys[i]]
                  || ARRAY(SELECT p_limit_keys[i] || '#' || n FROM generate_series(1, 7) AS n);
        IF p_limits[i] > v_others THEN
            BEGIN
                INSERT INTO registration_rate_limits AS r (tenant_id, limit_key, window_start, requests)
                VALUES (p_tenant, v_keys[v_stripe + 1], v_window, 1)
                ON CONFLICT (tenant_id, limit_key, window_start) DO UPDATE SET requests = r.requests + 1;
                SELECT sum(requests) INTO v_requests FROM registration_rate_limits
                WHERE tenant_id = p_tenant AND limit_key = ANY (v_keys) AND window_start = v_window;
                IF v_requests + v_others <= p_limits[i] THEN
                    CONTINUE;
                END IF;
                RAISE EXCEPTION USING ERRCODE = 'LKRL1';
            EXCEPTION WHEN SQLSTATE 'LKRL1' THEN
                NULL;
            END;
        END IF;
        PERFORM pg_advisory_xact_lock(hashtextextended(
            'registration_rate_limits ' || p_tenant || ' ' || p_limit_keys[i] || ' '
            || extract(epoch FROM v_window)::bigint, 0));
        IF p_limits[i] > v_others THEN
            -- Every stripe gets its row, so that locking the rows below leaves no increment uncounted.
            INSERT INTO registration_rate_limits (tenant_id, limit_key, window_start, requests)
            SELECT p_tenant, k, v_window, 0 FROM unnest(v_keys) AS k
            ON CONFLICT (tenant_id, limit_key, window_start) DO NOTHING;
        END IF;
        PERFORM 1 FROM registration_rate_limits
        WHERE tenant_id = p_tenant AND limit_key = ANY (v_keys) AND window_start = v_window
        ORDER BY limit_key FOR UPDATE;
        INSERT INTO registration_rate_limits AS r (tenant_id, limit_key, window_start, requests)
        VALUES (p_tenant, p_limit_keys[i], v_window, 1)
        ON CONFLICT (tenant_id, limit_key, window_start) DO UPDATE SET requests = r.requests + 1;
        SELECT sum(requests) INTO v_requests FROM registration_rate_limits
        WHERE tenant_id = p_tenant AND limit_key = ANY (v_keys) AND window_start = v_window;
        IF v_requests > p_limits[i] THEN
            retry_after := extract(epoch FROM v_window + make_interval(secs => p_window_seconds) - now());
            RETURN;
        END IF;
    END LOOP;
END
$$;

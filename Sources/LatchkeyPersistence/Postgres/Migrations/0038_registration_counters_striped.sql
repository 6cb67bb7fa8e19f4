-- compatible_from: 34
-- Registration counters spread over eight rows per bucket and window. With one row, every registration of a
-- tenant (and of a source) updated the same row and held its lock until its commit was flushed, so those
-- registrations committed one after another, each waiting for the previous one's WAL flush and wake-up.
-- Now a request adds one to the row of its session's stripe and reads the window's sum. No request over a
-- limit gets through:
--   * Far from the limit (the sum it reads, its own count included, plus one for every other transaction
--     that can be open, max_connections - 1 sessions and max_prepared_transactions, is still within the
--     limit) the request is within the limit whatever the others do: an increment it cannot see belongs to
--     a transaction that has not committed, and a transaction holds at most one per bucket.
--   * Otherwise its increment is rolled back (a subtransaction, which also releases the stripe's lock) and
--     the request is counted exactly: one exact count per bucket and window at a time (an advisory lock),
--     every stripe's row locked, so every increment made before is committed and counted and none is made
--     until this one commits. A request over the limit is counted too, as before.
-- Builds from 34 on count only through these functions; earlier ones upserted the counters themselves.

ALTER TABLE registration_rate_limits ADD COLUMN stripe smallint NOT NULL DEFAULT 0 CHECK (stripe BETWEEN 0 AND 7);
ALTER TABLE registration_rate_limits DROP CONSTRAINT registration_rate_limits_pkey;
ALTER TABLE registration_rate_limits ADD PRIMARY KEY (tenant_id, limit_key, window_start, stripe);

CREATE OR REPLACE FUNCTION count_registration_request(
    p_tenant text, p_limit_keys text[], p_limits integer[], p_window_seconds float8, OUT retry_after float8
) LANGUAGE plpgsql SECURITY INVOKER AS $$
DECLARE
    v_window timestamptz;
    v_requests bigint;
    v_others integer;
BEGIN
    PERFORM set_config('app.tenant_id', p_tenant, true);
    v_window := date_bin(make_interval(secs => p_window_seconds), now(), timestamptz 'epoch');
    v_others := current_setting('max_connections')::integer - 1
                + current_setting('max_prepared_transactions')::integer;
    FOR i IN 1 .. coalesce(array_length(p_limit_keys, 1), 0) LOOP
        IF p_limits[i] > v_others THEN
            BEGIN
                INSERT INTO registration_rate_limits AS r (tenant_id, limit_key, window_start, stripe, requests)
                VALUES (p_tenant, p_limit_keys[i], v_window, pg_backend_pid() % 8, 1)
                ON CONFLICT (tenant_id, limit_key, window_start, stripe) DO UPDATE SET requests = r.requests + 1;
                SELECT sum(requests) INTO v_requests FROM registration_rate_limits
                WHERE tenant_id = p_tenant AND limit_key = p_limit_keys[i] AND window_start = v_window;
                IF v_requests + v_others <= p_limits[i] THEN
                    CONTINUE;
                END IF;
                RAISE EXCEPTION USING ERRCODE = 'LKRL1';
            EXCEPTION WHEN SQLSTATE 'LKRL1' THEN
                NULL;
            END;
        END IF;
        PERFORM pg_advisory_xact_lock(hashtextextended(
            'registration_rate_limits ' || p_tenant || ' ' || p_limit_keys[i] || ' ' || extract(epoch FROM v_window)::bigint, 0));
        INSERT INTO registration_rate_limits (tenant_id, limit_key, window_start, stripe, requests)
        SELECT p_tenant, p_limit_keys[i], v_window, s, 0 FROM generate_series(0, 7) AS s
        ON CONFLICT (tenant_id, limit_key, window_start, stripe) DO NOTHING;
        PERFORM 1 FROM registration_rate_limits
        WHERE tenant_id = p_tenant AND limit_key = p_limit_keys[i] AND window_start = v_window
        ORDER BY stripe FOR UPDATE;
        UPDATE registration_rate_limits SET requests = requests + 1
        WHERE tenant_id = p_tenant AND limit_key = p_limit_keys[i] AND window_start = v_window AND stripe = 0;
        SELECT sum(requests) INTO v_requests FROM registration_rate_limits
        WHERE tenant_id = p_tenant AND limit_key = p_limit_keys[i] AND window_start = v_window;
        IF v_requests > p_limits[i] THEN
            retry_after := extract(epoch FROM v_window + make_interval(secs => p_window_seconds) - now());
            RETURN;
        END IF;
    END LOOP;
END
$$;

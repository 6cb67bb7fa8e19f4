-- compatible_from: 34
-- A database session counts registrations on the stripe it took from a sequence on its first count, instead of
-- the stripe of its process id modulo 8. With process ids, the eight connections of a gateway fell on five or
-- six distinct stripes on average, and the sessions sharing one waited for each other's row lock until their
-- commits were flushed; consecutive sessions now take consecutive stripes, so eight sessions have one each.
-- The stripe is kept in a session setting; a session whose count rolls back takes the next one.
CREATE SEQUENCE registration_rate_limit_stripes;
GRANT USAGE ON SEQUENCE registration_rate_limit_stripes TO latchkey_app;

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
    -- The session's stripe, taken from the sequence on its first count and kept for the session.
    v_stripe := nullif(current_setting('latchkey.rate_limit_stripe', true), '')::integer;
    IF v_stripe IS NULL THEN
        v_stripe := nextval('registration_rate_limit_stripes') % 8;
        PERFORM set_config('latchkey.rate_limit_stripe', v_stripe::text, false);
    END IF;
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

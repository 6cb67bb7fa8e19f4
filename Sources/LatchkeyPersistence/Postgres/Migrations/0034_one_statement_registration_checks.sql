-- compatible_from: 22
-- The registration gateway's rate-limit count and its Idempotency-Key claim, each one statement and so a
-- transaction of its own: the rows every registration of a tenant or a source updates (its counters), and
-- the row every retry with one key updates, are locked for that statement and its commit only, never across
-- the round trips of a transaction the gateway drives statement by statement. A slow client of the
-- database (a busy process, a long network path) then holds up no other registration. register_client
-- counts through the same function. SECURITY INVOKER: the caller's role and Row-Level Security apply; the
-- tenant is set first, for the statement's transaction only.

-- Counts one registration request in each bucket, most specific first: a source refused at its own limit
-- does not use up the tenant's budget. retry_after is the seconds left in the window of the first bucket
-- over its limit, NULL when the request is within every limit.
CREATE FUNCTION count_registration_request(
    p_tenant text, p_limit_keys text[], p_limits integer[], p_window_seconds float8, OUT retry_after float8
) LANGUAGE plpgsql SECURITY INVOKER AS $$
DECLARE
    v_requests integer;
    v_remaining float8;
BEGIN
    PERFORM set_config('app.tenant_id', p_tenant, true);
    FOR i IN 1 .. coalesce(array_length(p_limit_keys, 1), 0) LOOP
        INSERT INTO registration_rate_limits AS r (tenant_id, limit_key, window_start, requests)
        VALUES (p_tenant, p_limit_keys[i],
                date_bin(make_interval(secs => p_window_seconds), now(), timestamptz 'epoch'), 1)
        ON CONFLICT (tenant_id, limit_key, window_start) DO UPDATE SET requests = r.requests + 1
        RETURNING r.requests, extract(epoch FROM r.window_start + make_interval(secs => p_window_seconds) - now())
        INTO v_requests, v_remaining;
        IF v_requests > p_limits[i] THEN
            retry_after := v_remaining;
            RETURN;
        END IF;
    END LOOP;
END
$$;
REVOKE ALL ON FUNCTION count_registration_request FROM PUBLIC;
GRANT EXECUTE ON FUNCTION count_registration_request TO latchkey_app;

-- Claims an Idempotency-Key of a principal for one request: 'acquired' (the key is new, expired, or was
-- abandoned in flight by a request that died), 'mismatch' (used with another body), 'completed' (with the
-- client it registered) or 'in_flight' (another request with it is still registering, or just failed).
CREATE FUNCTION claim_registration_idempotency_key(
    p_tenant text, p_principal text, p_key_hash text, p_request_hash text,
    p_lifetime_seconds float8, p_abandoned_seconds float8,
    OUT claim text, OUT claimed_client_id text
) LANGUAGE plpgsql SECURITY INVOKER AS $$
DECLARE
    v_request_hash text;
    v_state text;
BEGIN
    PERFORM set_config('app.tenant_id', p_tenant, true);
    INSERT INTO registration_idempotency_keys AS k
           (tenant_id, principal, key_hash, request_hash, state, expires_at)
    VALUES (p_tenant, p_principal, p_key_hash, p_request_hash, 'in_flight',
            now() + make_interval(secs => p_lifetime_seconds))
    ON CONFLICT (tenant_id, principal, key_hash) DO UPDATE
       SET request_hash = EXCLUDED.request_hash, state = 'in_flight', client_id = NULL,
           created_at = now(), updated_at = now(), expires_at = EXCLUDED.expires_at
     WHERE k.expires_at <= now()
        OR (k.state = 'in_flight' AND k.request_hash = EXCLUDED.request_hash
            AND k.updated_at < now() - make_interval(secs => p_abandoned_seconds));
    IF FOUND THEN
        claim := 'acquired';
        RETURN;
    END IF;
    SELECT k.request_hash, k.state, k.client_id INTO v_request_hash, v_state, claimed_client_id
    FROM registration_idempotency_keys AS k
    WHERE k.tenant_id = p_tenant AND k.principal = p_principal AND k.key_hash = p_key_hash;
    IF NOT FOUND THEN
        -- Deleted by a failed registration since the insert: that request is over, a retry may claim it.
        claim := 'in_flight';
    ELSIF v_request_hash <> p_request_hash THEN
        claim := 'mismatch';
        claimed_client_id := NULL;
    ELSIF v_state = 'completed' THEN
        claim := 'completed';
    ELSE
        claim := 'in_flight';
        claimed_client_id := NULL;
    END IF;
END
$$;
REVOKE ALL ON FUNCTION claim_registration_idempotency_key FROM PUBLIC;
GRANT EXECUTE ON FUNCTION claim_registration_idempotency_key TO latchkey_app;

-- The registration in one statement, counting through count_registration_request; otherwise unchanged.
CREATE OR REPLACE FUNCTION register_client(
    p_tenant text, p_limit_keys text[], p_limits integer[], p_window_seconds float8,
    p_iat_hash text, p_user_id uuid, p_instance_jkt text, p_max_clients integer,
    p_software_id text, p_template_version integer,
    p_client_id text, p_client_type text, p_application_type text, p_mechanism text, p_metadata text,
    p_secret_hash text, p_secret_expires_at timestamptz, p_registration_token_hash text, p_created_at timestamptz,
    p_template_overrides text,
    p_event_id uuid, p_topic text, p_message_key text, p_event_type text, p_payload text, p_traceparent text,
    OUT outcome text, OUT retry_after float8
) LANGUAGE plpgsql SECURITY INVOKER AS $$
DECLARE
    v_remaining float8;
    v_version integer;
    v_status text;
BEGIN
    PERFORM set_config('app.tenant_id', p_tenant, true);
    SELECT c.retry_after INTO v_remaining
    FROM count_registration_request(p_tenant, p_limit_keys, p_limits, p_window_seconds) AS c;
    IF v_remaining IS NOT NULL THEN
        outcome := 'rate_limited';
        retry_after := v_remaining;
        RETURN;
    END IF;
    IF p_software_id IS NOT NULL THEN
        -- Shared lock: a template update waits for this registration and then finds its instance.
        SELECT version INTO v_version FROM client_templates
        WHERE tenant_id = p_tenant AND software_id = p_software_id FOR SHARE;
        IF v_version IS DISTINCT FROM p_template_version THEN
            outcome := 'stale';
            RETURN;
        END IF;
    END IF;
    IF p_iat_hash IS NOT NULL THEN
        UPDATE initial_access_tokens SET remaining_uses = remaining_uses - 1
        WHERE tenant_id = p_tenant AND token_hash = p_iat_hash AND remaining_uses > 0
          AND revoked_at IS NULL AND expires_at > now();
        IF NOT FOUND THEN
            outcome := 'invalid_initial_access_token';
            RETURN;
        END IF;
    END IF;
    IF p_user_id IS NOT NULL THEN
        -- The user's row lock serialises that user's registrations (the client count below stays true).
        SELECT status INTO v_status FROM users WHERE tenant_id = p_tenant AND user_id = p_user_id FOR UPDATE;
        IF v_status IS DISTINCT FROM 'active' THEN
            outcome := 'invalid_user';
            RETURN;
        END IF;
        IF p_instance_jkt IS NOT NULL AND EXISTS (
            SELECT 1 FROM clients
            WHERE tenant_id = p_tenant AND authenticated_user = p_user_id AND instance_jkt = p_instance_jkt
              AND status = 'active' AND client_kind = 'dynamic'
        ) THEN
            outcome := 'instance_exists';
            RETURN;
        END IF;
        IF p_max_clients > 0 AND (
            SELECT count(*) FROM clients
            WHERE tenant_id = p_tenant AND authenticated_user = p_user_id AND status = 'active'
        ) >= p_max_clients THEN
            outcome := 'at_client_limit';
            RETURN;
        END IF;
    END IF;
    INSERT INTO clients (tenant_id, client_id, status, client_kind, client_type, application_type,
                         authenticated_user, software_id, registration_mechanism, metadata,
                         client_secret_hash, client_secret_expires_at, registration_token_hash,
                         created_at, updated_at, template_overrides, template_version, first_party, instance_jkt)
    VALUES (p_tenant, p_client_id, 'active', 'dynamic', p_client_type, p_application_type,
            p_user_id, CASE WHEN p_template_version IS NOT NULL THEN p_software_id END, p_mechanism,
            p_metadata::jsonb, p_secret_hash, p_secret_expires_at, p_registration_token_hash,
            p_created_at, p_created_at, p_template_overrides::jsonb, p_template_version, false, p_instance_jkt);
    INSERT INTO outbox (event_id, tenant_id, topic, message_key, event_type, payload, traceparent)
    VALUES (p_event_id, p_tenant, p_topic, p_message_key, p_event_type, p_payload, p_traceparent);
    outcome := 'registered';
END
$$;

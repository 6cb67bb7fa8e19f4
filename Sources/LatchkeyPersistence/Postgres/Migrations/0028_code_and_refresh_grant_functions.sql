-- compatible_from: 22
-- An authorization-code redemption and a refresh-token rotation in two round trips each: one read of the
-- code's or token's state, then one statement that uses it up and writes what the grant issues with its
-- TokenIssued row, committed together.

-- Whether a client may still be granted tokens, decided on its stored record: active, its secret not expired,
-- the secret it authenticated with (NULL: none, against a record read in the same request) still one of its
-- secrets (the current one, or the rotated-out one within its overlap), and its metadata (scope, grant types,
-- DPoP binding) the one the request was decided on (NULL: not compared). The caller has set the tenant.
CREATE FUNCTION client_still_grantable(p_client_id text, p_secret_hash text, p_metadata text)
RETURNS boolean LANGUAGE sql STABLE SECURITY INVOKER AS $$
    SELECT EXISTS (
        SELECT 1 FROM clients
        WHERE client_id = p_client_id AND status = 'active'
          AND (client_secret_expires_at IS NULL OR client_secret_expires_at > now())
          AND (p_secret_hash IS NULL OR client_secret_hash = p_secret_hash
               OR (previous_client_secret_hash = p_secret_hash AND previous_client_secret_expires_at > now()))
          AND (p_metadata IS NULL OR metadata = p_metadata::jsonb))
$$;
REVOKE ALL ON FUNCTION client_still_grantable FROM PUBLIC;
GRANT EXECUTE ON FUNCTION client_still_grantable TO latchkey_app;

-- A refresh token's state, with whether its user may still obtain tokens. Read without a lock: the rotation
-- below changes the token only while it is still in the state read.
CREATE FUNCTION refresh_token_state(p_tenant text, p_token_hash text)
RETURNS TABLE (family_id uuid, generation integer, client_id text, user_id uuid, scope text, dpop_jkt text,
               status text, expires_at timestamptz, rotated_at timestamptz, user_active boolean)
LANGUAGE plpgsql STABLE SECURITY INVOKER AS $$
BEGIN
    PERFORM set_config('app.tenant_id', p_tenant, true);
    RETURN QUERY
        SELECT r.family_id, r.generation, r.client_id, r.user_id, r.scope, r.dpop_jkt, r.status, r.expires_at,
               r.rotated_at, (r.user_id IS NULL OR u.status = 'active')
        FROM refresh_tokens r LEFT JOIN users u ON u.user_id = r.user_id
        WHERE r.token_hash = p_token_hash;
END
$$;
REVOKE ALL ON FUNCTION refresh_token_state FROM PUBLIC;
GRANT EXECUTE ON FUNCTION refresh_token_state TO latchkey_app;

-- Rotates an active refresh token of generation p_generation to its successor and records the access token
-- issued with it and its TokenIssued row, only while the client may still be granted tokens and the user is
-- still active. False, with nothing written, when any of that no longer holds (a concurrent rotation, reuse, a
-- revocation): the caller then decides the request again inside one transaction.
CREATE FUNCTION rotate_refresh_token(
    p_tenant text, p_client_id text, p_secret_hash text, p_metadata text, p_user_id uuid,
    p_token_hash text, p_generation bigint,
    p_new_token_hash text, p_family_id uuid, p_scope text, p_dpop_jkt text, p_refresh_expires_at timestamptz,
    p_jti text, p_access_expires_at timestamptz,
    p_event_id uuid, p_topic text, p_message_key text, p_event_type text, p_payload text, p_traceparent text
) RETURNS boolean LANGUAGE plpgsql SECURITY INVOKER AS $$
BEGIN
    PERFORM set_config('app.tenant_id', p_tenant, true);
    IF NOT client_still_grantable(p_client_id, p_secret_hash, p_metadata) THEN
        RETURN false;
    END IF;
    IF p_user_id IS NOT NULL THEN
        PERFORM 1 FROM users WHERE user_id = p_user_id AND status = 'active';
        IF NOT FOUND THEN
            RETURN false;
        END IF;
    END IF;
    UPDATE refresh_tokens SET status = 'rotated', rotated_at = now()
    WHERE token_hash = p_token_hash AND status = 'active' AND generation = p_generation
      AND client_id = p_client_id AND expires_at > now();
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO issued_access_tokens (tenant_id, jti, client_id, user_id, family_id, expires_at)
    VALUES (p_tenant, p_jti, p_client_id, p_user_id, p_family_id, p_access_expires_at);
    INSERT INTO refresh_tokens (tenant_id, token_hash, family_id, generation, client_id, user_id, scope, dpop_jkt,
                                expires_at)
    VALUES (p_tenant, p_new_token_hash, p_family_id, p_generation + 1, p_client_id, p_user_id, p_scope, p_dpop_jkt,
            p_refresh_expires_at);
    INSERT INTO outbox (event_id, tenant_id, topic, message_key, event_type, payload, traceparent)
    VALUES (p_event_id, p_tenant, p_topic, p_message_key, p_event_type, p_payload, p_traceparent);
    RETURN true;
END
$$;
REVOKE ALL ON FUNCTION rotate_refresh_token FROM PUBLIC;
GRANT EXECUTE ON FUNCTION rotate_refresh_token TO latchkey_app;

-- An authorization code's state, with whether its user may still obtain tokens. Read without a lock: the
-- redemption below uses the code only while it is still unused.
CREATE FUNCTION authorization_code_state(p_tenant text, p_code_hash text)
RETURNS TABLE (client_id text, user_id uuid, redirect_uri text, scope text, code_challenge text,
               code_challenge_method text, nonce text, dpop_jkt text, auth_time timestamptz,
               expires_at timestamptz, consumed_at timestamptz, user_active boolean)
LANGUAGE plpgsql STABLE SECURITY INVOKER AS $$
BEGIN
    PERFORM set_config('app.tenant_id', p_tenant, true);
    RETURN QUERY
        SELECT c.client_id, c.user_id, c.redirect_uri, c.scope, c.code_challenge, c.code_challenge_method, c.nonce,
               c.dpop_jkt, c.auth_time, c.expires_at, c.consumed_at, coalesce(u.status = 'active', false)
        FROM authorization_codes c LEFT JOIN users u ON u.user_id = c.user_id
        WHERE c.code_hash = p_code_hash;
END
$$;
REVOKE ALL ON FUNCTION authorization_code_state FROM PUBLIC;
GRANT EXECUTE ON FUNCTION authorization_code_state TO latchkey_app;

-- Uses up an unused, unexpired authorization code of p_client_id and records what it issued: the access
-- token's record, the first refresh token of a new family when one is issued (p_refresh_token_hash not NULL),
-- and the TokenIssued row, only while the client may still be granted tokens and the user is still active.
-- False, with nothing written, when any of that no longer holds (a concurrent redemption, a replay, a
-- revocation): the caller then decides the request again inside one transaction.
CREATE FUNCTION redeem_authorization_code(
    p_tenant text, p_client_id text, p_secret_hash text, p_metadata text, p_user_id uuid, p_code_hash text,
    p_refresh_token_hash text, p_family_id uuid, p_scope text, p_dpop_jkt text, p_refresh_expires_at timestamptz,
    p_jti text, p_access_expires_at timestamptz,
    p_event_id uuid, p_topic text, p_message_key text, p_event_type text, p_payload text, p_traceparent text
) RETURNS boolean LANGUAGE plpgsql SECURITY INVOKER AS $$
BEGIN
    PERFORM set_config('app.tenant_id', p_tenant, true);
    IF NOT client_still_grantable(p_client_id, p_secret_hash, p_metadata) THEN
        RETURN false;
    END IF;
    PERFORM 1 FROM users WHERE user_id = p_user_id AND status = 'active';
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    UPDATE authorization_codes SET consumed_at = now(), issued_family_id = p_family_id, issued_access_jti = p_jti
    WHERE code_hash = p_code_hash AND client_id = p_client_id AND user_id = p_user_id AND consumed_at IS NULL
      AND expires_at > now();
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO issued_access_tokens (tenant_id, jti, client_id, user_id, family_id, expires_at)
    VALUES (p_tenant, p_jti, p_client_id, p_user_id, p_family_id, p_access_expires_at);
    IF p_refresh_token_hash IS NOT NULL THEN
        INSERT INTO refresh_tokens (tenant_id, token_hash, family_id, generation, client_id, user_id, scope,
                                    dpop_jkt, expires_at)
        VALUES (p_tenant, p_refresh_token_hash, p_family_id, 0, p_client_id, p_user_id, p_scope, p_dpop_jkt,
                p_refresh_expires_at);
    END IF;
    INSERT INTO outbox (event_id, tenant_id, topic, message_key, event_type, payload, traceparent)
    VALUES (p_event_id, p_tenant, p_topic, p_message_key, p_event_type, p_payload, p_traceparent);
    RETURN true;
END
$$;
REVOKE ALL ON FUNCTION redeem_authorization_code FROM PUBLIC;
GRANT EXECUTE ON FUNCTION redeem_authorization_code TO latchkey_app;

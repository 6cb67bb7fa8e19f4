-- compatible_from: 22
-- The statements run on every grant, registration and relay round are prepared once per connection and then
-- only bound and executed, so their text must not change between calls: whether the caller wakes its own
-- relay becomes an argument instead of an optional FROM item. Builds that select FROM
-- outbox_woken_by_caller() are unaffected.
CREATE FUNCTION outbox_woken_by_caller(p_woken_by_caller boolean) RETURNS void LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF p_woken_by_caller THEN
        PERFORM set_config('latchkey.outbox_notify', 'off', true);
    END IF;
END
$$;
REVOKE ALL ON FUNCTION outbox_woken_by_caller(boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox_woken_by_caller(boolean) TO latchkey_app;

-- A SQL function whose body has a subquery is not inlined, and PostgreSQL plans its body again on every
-- call; as PL/pgSQL its statement's plan is kept for the session. Same decision as before: active, secret
-- not expired, the secret it authenticated with (NULL: none) still one of its secrets (the current one, or
-- the rotated-out one within its overlap), and its metadata the one the request was decided on (NULL: not
-- compared). The caller has set the tenant.
CREATE OR REPLACE FUNCTION client_still_grantable(p_client_id text, p_secret_hash text, p_metadata text)
RETURNS boolean LANGUAGE plpgsql STABLE SECURITY INVOKER AS $$
BEGIN
    RETURN EXISTS (
        SELECT 1 FROM clients
        WHERE client_id = p_client_id AND status = 'active'
          AND (client_secret_expires_at IS NULL OR client_secret_expires_at > now())
          AND (p_secret_hash IS NULL OR client_secret_hash = p_secret_hash
               OR (previous_client_secret_hash = p_secret_hash AND previous_client_secret_expires_at > now()))
          AND (p_metadata IS NULL OR metadata = p_metadata::jsonb));
END
$$;

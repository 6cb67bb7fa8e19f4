-- compatible_from: 22
-- A token grant's writes as one statement, so a grant costs one round trip: the access-token record and
-- its TokenIssued outbox row, committed together, only while the client is still active, the secret it
-- authenticated with still authenticates it (the current secret's hash, or the rotated-out one's within
-- its overlap) and its metadata (scope, grant types, DPoP binding) is the one the request was decided on.
-- The service caches client records; this is where a revocation, a secret rotation or a metadata change
-- it has not heard of yet still stops the grant. A NULL hash means the client authenticated without a
-- secret, against the record read in the same request. SECURITY INVOKER: the caller's role and Row-Level Security
-- apply; the tenant is set first, for this transaction only.
CREATE FUNCTION issue_access_token(
    p_tenant text, p_client_id text, p_secret_hash text, p_jti text, p_user_id uuid, p_family_id uuid,
    p_expires_at timestamptz, p_event_id uuid, p_topic text, p_message_key text, p_event_type text,
    p_payload text, p_metadata text, p_traceparent text
) RETURNS boolean LANGUAGE plpgsql SECURITY INVOKER AS $$
BEGIN
    PERFORM set_config('app.tenant_id', p_tenant, true);
    PERFORM 1 FROM clients
    WHERE client_id = p_client_id AND status = 'active'
      AND (client_secret_expires_at IS NULL OR client_secret_expires_at > now())
      AND (p_secret_hash IS NULL OR client_secret_hash = p_secret_hash
           OR (previous_client_secret_hash = p_secret_hash AND previous_client_secret_expires_at > now()))
      AND (p_metadata IS NULL OR metadata = p_metadata::jsonb);
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO issued_access_tokens (tenant_id, jti, client_id, user_id, family_id, expires_at)
    VALUES (p_tenant, p_jti, p_client_id, p_user_id, p_family_id, p_expires_at);
    INSERT INTO outbox (event_id, tenant_id, topic, message_key, event_type, payload, traceparent)
    VALUES (p_event_id, p_tenant, p_topic, p_message_key, p_event_type, p_payload, p_traceparent);
    RETURN true;
END
$$;
REVOKE ALL ON FUNCTION issue_access_token FROM PUBLIC;
GRANT EXECUTE ON FUNCTION issue_access_token TO latchkey_app;

-- When clients were last used, recorded in batches off the grant path: at most once a minute per client.
CREATE FUNCTION record_client_use(p_tenant text, p_client_ids text[], p_used_at timestamptz)
RETURNS void LANGUAGE plpgsql SECURITY INVOKER AS $$
BEGIN
    PERFORM set_config('app.tenant_id', p_tenant, true);
    UPDATE clients SET last_used_at = p_used_at
    WHERE client_id = ANY (p_client_ids)
      AND (last_used_at IS NULL OR last_used_at < p_used_at - interval '60 seconds');
END
$$;
REVOKE ALL ON FUNCTION record_client_use FROM PUBLIC;
GRANT EXECUTE ON FUNCTION record_client_use TO latchkey_app;

-- Services cache client records; a change to what they cache, or a deletion, tells them to drop the
-- record (payload: tenant, space, client id) when the change commits. Recording use does not.
CREATE FUNCTION clients_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('latchkey_clients', OLD.tenant_id || ' ' || OLD.client_id);
    RETURN NULL;
END
$$;
CREATE TRIGGER clients_changed AFTER UPDATE OF
    tenant_id, client_id, status, client_kind, client_type, application_type, authenticated_user, metadata,
    client_secret_hash, client_secret_expires_at, previous_client_secret_hash, previous_client_secret_expires_at,
    first_party
ON clients FOR EACH ROW EXECUTE FUNCTION clients_notify();
CREATE TRIGGER clients_deleted AFTER DELETE ON clients FOR EACH ROW EXECUTE FUNCTION clients_notify();

-- The tenant's signing key as one statement (every grant reads it: the active key changes at rotation).
CREATE FUNCTION active_signing_key(p_tenant text)
RETURNS TABLE (kid text, algorithm text, encrypted_private_key bytea)
LANGUAGE plpgsql STABLE SECURITY INVOKER AS $$
BEGIN
    PERFORM set_config('app.tenant_id', p_tenant, true);
    RETURN QUERY SELECT k.kid, k.algorithm, k.encrypted_private_key FROM signing_keys k
                 WHERE k.tenant_id = p_tenant AND k.status = 'active';
END
$$;
REVOKE ALL ON FUNCTION active_signing_key FROM PUBLIC;
GRANT EXECUTE ON FUNCTION active_signing_key TO latchkey_app;

-- compatible_from: 22
-- Token services cache which key signs for each tenant; any change to a tenant's keys (a new key, an
-- activation or retirement, a deletion) tells them to read it again when the change commits (payload: the
-- tenant id). Builds that do not listen are unaffected.
CREATE FUNCTION signing_keys_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('latchkey_signing_keys', OLD.tenant_id);
    ELSE
        PERFORM pg_notify('latchkey_signing_keys', NEW.tenant_id);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER signing_keys_changed AFTER INSERT OR UPDATE OR DELETE ON signing_keys
    FOR EACH ROW EXECUTE FUNCTION signing_keys_notify();

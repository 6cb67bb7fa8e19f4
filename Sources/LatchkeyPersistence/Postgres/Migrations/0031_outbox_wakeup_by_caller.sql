-- compatible_from: 22
-- A notification makes every transaction that sends one commit one after another (PostgreSQL holds a
-- cluster-wide lock from queueing it until its commit record is flushed), so concurrent grants could not
-- share a WAL flush. A statement whose caller wakes its own process's relay once it returns turns the
-- notification off for its transaction by selecting FROM outbox_woken_by_caller(); every other insert
-- still notifies. Builds that do not call it are unaffected.
CREATE OR REPLACE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('latchkey.outbox_notify', true) = 'off' THEN
        RETURN NULL;
    END IF;
    PERFORM pg_notify('latchkey_outbox', '');
    RETURN NULL;
END
$$;

CREATE FUNCTION outbox_woken_by_caller() RETURNS void LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM set_config('latchkey.outbox_notify', 'off', true);
END
$$;
REVOKE ALL ON FUNCTION outbox_woken_by_caller FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox_woken_by_caller() TO latchkey_app;

-- compatible_from: 22
-- Wakes the outbox relays when events are written: one notification per inserting statement, delivered
-- when its transaction commits (never for a rolled-back one) and merged with others of the same
-- transaction, so relays need not poll. The relays still poll slowly for rows whose claim lapsed.
CREATE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('latchkey_outbox', '');
    RETURN NULL;
END
$$;
CREATE TRIGGER outbox_notify AFTER INSERT ON outbox FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();

-- The W3C traceparent of the traced operation that wrote an event (NULL when it was not traced): the
-- relay's Kafka produce span continues that trace and passes it on in the record's traceparent header.
-- Builds without it neither read nor write the column, so they keep working once it exists.
-- compatible_from: 22
ALTER TABLE outbox ADD COLUMN traceparent text
    CHECK (traceparent IS NULL OR traceparent ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$');

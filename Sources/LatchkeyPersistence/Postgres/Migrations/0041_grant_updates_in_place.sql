-- compatible_from: 22
-- The updates every grant and every relay round make leave the indexes alone. PostgreSQL writes an updated row
-- without new index entries (a heap-only tuple) when no indexed column changes, including the columns in an
-- index's predicate, and the new version fits on the row's page. A redeemed code (consumed_at and what it
-- issued), a rotated refresh token (status, rotated_at) and a claimed outbox row (claimed_by, claimed_until)
-- change no indexed column once the refresh tokens' client and user indexes no longer depend on status; free
-- space on each page keeps the new version beside the old. Without it, each of those updates added an entry to
-- every index of its table: four for a refresh token, four for an outbox row, two for a code.

-- Pages written from now on keep this share free for updated versions of their rows.
ALTER TABLE authorization_codes SET (fillfactor = 80);
ALTER TABLE refresh_tokens SET (fillfactor = 80);
ALTER TABLE outbox SET (fillfactor = 50);

-- Every query by client or user filters on status itself ('active', 'active' or 'rotated', not 'revoked').
DROP INDEX refresh_tokens_client;
CREATE INDEX refresh_tokens_client ON refresh_tokens (tenant_id, client_id);
DROP INDEX refresh_tokens_by_user;
CREATE INDEX refresh_tokens_by_user ON refresh_tokens (tenant_id, user_id);

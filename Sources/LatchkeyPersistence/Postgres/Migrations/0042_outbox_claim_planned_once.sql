-- compatible_from: 22
-- The relay's claim keeps the plans of its statements for the session instead of planning each one on every
-- call. Planned once while the outbox was nearly empty, a plan could read the whole table by a sequential scan
-- and keep doing so as the outbox grew to thousands of rows within seconds (faster than autovacuum refreshes
-- its statistics), which is why every call used to be planned again. With sequential and bitmap scans
-- turned off for the function, every plan it can make walks the outbox's indexes in order, which is the right
-- plan at any size, and PostgreSQL keeps it after the first few calls.
ALTER FUNCTION claim_outbox_batch(text, bigint[], bigint, double precision) RESET plan_cache_mode;
ALTER FUNCTION claim_outbox_batch(text, bigint[], bigint, double precision) SET enable_seqscan = off;
ALTER FUNCTION claim_outbox_batch(text, bigint[], bigint, double precision) SET enable_bitmapscan = off;

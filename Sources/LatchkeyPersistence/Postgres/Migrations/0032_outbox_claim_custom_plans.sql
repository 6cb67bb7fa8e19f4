-- compatible_from: 22
-- The outbox swings from a few rows to many thousands within seconds under load, faster than autovacuum
-- refreshes its statistics. A plan cached for a small outbox (a sequential scan) then makes every claim read
-- the whole table, sent rows included. Each claim is planned for the outbox as it is (the planner scales
-- its row estimates by the table's current size); a claim serves a whole batch, so planning it is cheap
-- next to what it saves.
ALTER FUNCTION claim_outbox_batch(text, bigint[], bigint, float8) SET plan_cache_mode = force_custom_plan;

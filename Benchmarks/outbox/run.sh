#!/usr/bin/env bash
# outbox claim benchmark: how long the outbox relay's claims take to drain a backlog (what builds up while
# Kafka is down), with the claim of the current schema and, as the same-run baseline, the claim as
# migration 0029 defined it (with 0032's planning setting), loaded next to it under another name.
# Each drain inserts the backlog in one statement, then claims batches of 200 and marks them sent, as the
# relay does, until nothing is claimable; the two claims alternate on the same database.
# Usage: Benchmarks/run.sh outbox   (knobs: BENCH_BACKLOGS, default "1000 3000 6000"; BENCH_KEYS, default
#        "1 50": distinct message keys in the backlog; BENCH_HELD, default "5000x3 20000x1 1x10000": keys held
#        back x rows behind each; BENCH_ROUNDS, default 2). Writes Benchmarks/results/outbox.md.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$ROOT"

DB=latchkey_bench_outbox
bench_build latchkey
bench_database "$DB"
psql_bench() { as_postgres "$PG_BIN/psql" -h "$PG_DIR/socket" -p "$PG_PORT" -U postgres -d "$DB" -v ON_ERROR_STOP=1 -qAt "$@"; }

MIGRATIONS="$ROOT/Sources/LatchkeyPersistence/Postgres/Migrations"
# The baseline: 0029's claim and 0032's setting for it, renamed.
sed 's/claim_outbox_batch/claim_outbox_batch_0029/g' \
    "$MIGRATIONS/0029_outbox_claim_function.sql" "$MIGRATIONS/0032_outbox_claim_custom_plans.sql" | psql_bench
psql_bench <<'SQL'
-- Inserts p_rows unsent rows over p_keys keys, then claims (p_claim) and marks sent until nothing is
-- claimable; returns the seconds the claims and marks took and the batches claimed.
CREATE FUNCTION bench_drain(p_claim text, p_rows int, p_keys int, OUT seconds float8, OUT batches int)
LANGUAGE plpgsql AS $$
DECLARE started timestamptz; claimed bigint[];
BEGIN
    INSERT INTO outbox (event_id, tenant_id, topic, message_key, event_type, payload)
    SELECT gen_random_uuid(), 'bench', 'latchkey.tokens', 'client-' || (i % p_keys), 'TokenIssued', repeat('x', 800)
    FROM generate_series(1, p_rows) AS i;
    started := clock_timestamp();
    batches := 0;
    LOOP
        EXECUTE format('SELECT coalesce(array_agg(seq), ''{}'') FROM %I(''bench-relay'', ''{}'', 200, 120)', p_claim)
            INTO claimed;
        EXIT WHEN cardinality(claimed) = 0;
        batches := batches + 1;
        UPDATE outbox SET sent_at = clock_timestamp(), claimed_by = NULL, claimed_until = NULL WHERE seq = ANY(claimed);
    END LOOP;
    seconds := extract(epoch FROM clock_timestamp() - started);
END
$$;
SQL

load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
rows=""
for backlog in ${BENCH_BACKLOGS:-1000 3000 6000}; do
    for keys in ${BENCH_KEYS:-1 50}; do
        current=() baseline=()
        for round in $(seq 1 "${BENCH_ROUNDS:-2}"); do
            for claim in claim_outbox_batch claim_outbox_batch_0029; do
                # Each drain starts from an outbox without unsent rows and with its dead rows vacuumed.
                psql_bench -c "DELETE FROM outbox" -c "VACUUM ANALYZE outbox"
                result="$(psql_bench -F ' ' -c "SELECT round(seconds::numeric, 3), batches FROM bench_drain('$claim', $backlog, $keys)")"
                log "backlog $backlog over $keys key(s), $claim: $result (seconds, batches)"
                if [ "$claim" = claim_outbox_batch ]; then current+=("${result% *}"); else baseline+=("${result% *}"); fi
            done
        done
        ratio="$(python3 -c "import sys; c=[float(x) for x in sys.argv[1].split()]; b=[float(x) for x in sys.argv[2].split()]; print(', '.join(f'{x / y:.2f}' for x, y in zip(c, b)))" "${current[*]}" "${baseline[*]}")"
        rows+="| $backlog | $keys | $(IFS=/; echo "${current[*]}") | $(IFS=/; echo "${baseline[*]}") | $ratio |"$'\n'
    done
done
# Keys held back: the first row of every key waits out a backoff and rows of the key follow it, then 200 rows
# of other keys; one claim of 200 (rolled back) must walk past the held-back rows to the free ones. The
# same-run baseline is the claim of migration 0037, which looked up each key's blocking row again in every
# batch.
sed 's/claim_outbox_batch/claim_outbox_batch_0037/g' "$MIGRATIONS/0037_outbox_claim_one_instant.sql" | psql_bench
psql_bench <<'SQL'
CREATE FUNCTION bench_hold_keys(p_keys int, p_behind int) RETURNS void LANGUAGE sql AS $$
    INSERT INTO outbox (event_id, tenant_id, topic, message_key, event_type, payload, available_at)
    SELECT gen_random_uuid(), 'bench', 'latchkey.tokens', 'held-' || k, 'TokenIssued', repeat('x', 800),
           clock_timestamp() + interval '1 hour'
    FROM generate_series(1, p_keys) AS k;
    INSERT INTO outbox (event_id, tenant_id, topic, message_key, event_type, payload)
    SELECT gen_random_uuid(), 'bench', 'latchkey.tokens', 'held-' || k, 'TokenIssued', repeat('x', 800)
    FROM generate_series(1, p_behind) AS r, generate_series(1, p_keys) AS k ORDER BY r, k;
    INSERT INTO outbox (event_id, tenant_id, topic, message_key, event_type, payload)
    SELECT gen_random_uuid(), 'bench', 'latchkey.tokens', 'free-' || k, 'TokenIssued', repeat('x', 800)
    FROM generate_series(1, 200) AS k;
$$;
-- Milliseconds one claim of 200 takes; it must claim the 200 rows of the keys held back by nothing.
CREATE FUNCTION bench_claim_ms(p_claim text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE started timestamptz; claimed bigint[];
BEGIN
    started := clock_timestamp();
    EXECUTE format('SELECT coalesce(array_agg(seq), ''{}'') FROM %I(''bench-relay'', ''{}'', 200, 120)', p_claim)
        INTO claimed;
    IF cardinality(claimed) <> 200 THEN RAISE EXCEPTION 'claimed % rows instead of 200', cardinality(claimed); END IF;
    RETURN 1000 * extract(epoch FROM clock_timestamp() - started);
END
$$;
SQL
held_rows=""
for shape in ${BENCH_HELD:-5000x3 20000x1 1x10000}; do
    keys="${shape%x*}" behind="${shape#*x}"
    psql_bench -c "DELETE FROM outbox" -c "SELECT bench_hold_keys($keys, $behind)" -c "VACUUM ANALYZE outbox"
    current=() baseline=()
    for round in $(seq 1 "${BENCH_ROUNDS:-2}"); do
        for claim in claim_outbox_batch claim_outbox_batch_0037; do
            result="$(psql_bench -c "BEGIN" -c "SELECT round(bench_claim_ms('$claim')::numeric, 1)" -c "ROLLBACK")"
            log "$keys key(s) held back with $behind row(s) behind each, $claim: $result ms"
            if [ "$claim" = claim_outbox_batch ]; then current+=("$result"); else baseline+=("$result"); fi
        done
    done
    held_rows+="| $keys | $behind | $(IFS=/; echo "${current[*]}") | $(IFS=/; echo "${baseline[*]}") |"$'\n'
done

load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

report="$RESULTS/outbox.md"
cat >"$report" <<REPORT
# outbox claim benchmark — $(date -u +%Y-%m-%dT%H:%M:%SZ)

Machine: $(machine_summary), load average $load_before before / $load_after after (shared machine).
PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') (fsync on, synchronous_commit on).

Seconds to drain a backlog of unsent outbox rows, claiming batches of 200 and marking each sent, as the relay
does (inside one function, so no round trips are counted): the current claim against the claim of migration
0029, alternating on the same database, each drain from a vacuumed outbox. One value per round.

| backlog (rows) | keys | current claim, s | 0029 claim, s | current / 0029 |
|---|---|---|---|---|
$rows
Milliseconds of one claim of 200 rows past keys held back (each key's first row waiting out a backoff, rows of
the key behind it, then 200 rows of other keys), rolled back after each claim: the current claim against the
claim of migration 0037, alternating on the same database. One value per round.

| keys held back | rows behind each | current claim, ms | 0037 claim, ms |
|---|---|---|---|
$held_rows
REPORT
log "report written to $report"

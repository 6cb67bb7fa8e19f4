#!/usr/bin/env bash
# Benchmarks/run.sh startup (this file: Benchmarks/startup/run.sh) — every service must start in under
# 1 s and idle under 64 MB RSS.
#
# Builds release binaries in .build-bench (shared with the other benchmarks), starts PostgreSQL and the
# embedded Kafka cluster, then starts each of the four services several times (measure.py): time from
# spawn to the first 200 on /healthz (listening) and on /readyz (PostgreSQL, schema and Kafka checked),
# and the resident set after idling. Writes Benchmarks/results/startup.md.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$ROOT"

ensure_packages
bench_build registration-gateway token-service dpop-verifier audit-consumer latchkey

WORK="$(mktemp -d)"
KAFKA_PID=""
cleanup() {
    [ -z "$KAFKA_PID" ] || { kill -TERM "$KAFKA_PID" 2>/dev/null || true; wait "$KAFKA_PID" 2>/dev/null || true; }
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

LATCHKEY_TEST_DB=latchkey_bench "$ROOT/scripts/postgres.sh" start
"$ROOT/scripts/postgres.sh" recreate latchkey_bench_startup
eval "$("$ROOT/scripts/postgres.sh" env latchkey_bench_startup)"
"$BIN/latchkey" migrate >/dev/null
"$BIN/latchkey" kafka-cluster --brokers 1 --bootstrap-file "$WORK/kafka.bootstrap" >"$WORK/kafka.log" 2>&1 &
KAFKA_PID=$!
for _ in $(seq 1 100); do [ -s "$WORK/kafka.bootstrap" ] && break; sleep 0.1; done
[ -s "$WORK/kafka.bootstrap" ] || die "embedded Kafka cluster did not start"
export KAFKA_BROKERS="$(cat "$WORK/kafka.bootstrap")"

# What the services need besides the database and Kafka (development values, as scripts/run.sh sets them).
for name in KEY_ENCRYPTION_KEY SECRET_HASH_KEY DPOP_NONCE_SECRET ADMIN_BOOTSTRAP_KEY; do export "$name=$(openssl rand -base64 32)"; done
export LOG_LEVEL=warning TOKEN_SERVICE_PUBLIC_URL=http://127.0.0.1:8082 REGISTRATION_GATEWAY_PUBLIC_URL=http://127.0.0.1:8081
export DPOP_UPSTREAM_URL=http://127.0.0.1:9 DPOP_EXTERNAL_ORIGINS=https://api.example.com
export DPOP_ISSUERS=http://127.0.0.1:8082/t/demo DPOP_AUDIENCES=https://api.example.com

MACHINE="$(nproc) CPUs, $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1), $(date -u '+%Y-%m-%d %H:%M UTC'); load average at the start $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$ROOT/Benchmarks/startup/measure.py" --bin "$BIN" --machine "$MACHINE" \
    --runs "${BENCH_RUNS:-5}" --idle-seconds "${BENCH_IDLE_SECONDS:-10}" --report "$ROOT/Benchmarks/results/startup.md"
log "report written to Benchmarks/results/startup.md"

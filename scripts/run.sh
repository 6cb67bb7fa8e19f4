#!/usr/bin/env bash
# The README's first command: runs the whole platform locally, no Docker.
# Installs what is missing, builds, starts PostgreSQL + the embedded Kafka cluster + the four
# services + the demo API, migrates, seeds the demo tenant (through the admin API), prints the URLs
# and demo credentials, streams logs, and stops everything on Ctrl-C.
# Knobs (for a second platform beside the first, as scripts/fuzz-api.sh runs one): LATCHKEY_PORT_BASE
# (default 8080: gateway +1, token service +2, sidecar +3, audit +4, demo API +10), LATCHKEY_DATABASE
# (default latchkey), LATCHKEY_KEEP_POSTGRES=1
# (leave the PostgreSQL cluster running on exit), LATCHKEY_INSTANCE_DIR (logs, Kafka bootstrap file and
# credentials of this platform; default the run folder).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

ensure_packages
CONFIG="${LATCHKEY_BUILD_CONFIG:-debug}"
mkdir -p "$RUN_DIR"
log "building ($CONFIG; the first build takes several minutes, output in $RUN_DIR/build.log)"
swift build -c "$CONFIG" >"$RUN_DIR/build.log" 2>&1 || { tail -40 "$RUN_DIR/build.log"; die "build failed"; }
BIN="$(swift build -c "$CONFIG" --show-bin-path)"

DATABASE="${LATCHKEY_DATABASE:-latchkey}"
[[ "$DATABASE" =~ ^[a-z_][a-z0-9_]*$ ]] || die "LATCHKEY_DATABASE is not a plain database name: $DATABASE"
# start also creates the database when it does not exist yet.
LATCHKEY_TEST_DB="${LATCHKEY_TEST_DB:-} $DATABASE" "$ROOT/scripts/postgres.sh" start
eval "$("$ROOT/scripts/postgres.sh" env "$DATABASE")"
BASE="${LATCHKEY_PORT_BASE:-8080}"
GATEWAY_PORT=$((BASE + 1)) TOKEN_PORT=$((BASE + 2)) SIDECAR_PORT=$((BASE + 3)) AUDIT_PORT=$((BASE + 4)) DEMO_PORT=$((BASE + 10))

INSTANCE_DIR="${LATCHKEY_INSTANCE_DIR:-$RUN_DIR}"
LOG_DIR="$INSTANCE_DIR/logs"
mkdir -p "$LOG_DIR"
PIDS=()
cleanup() {
    trap - INT TERM EXIT
    log "stopping services"
    # Services first (they drain and flush to Kafka), then the embedded cluster (PIDS[0]).
    for pid in "${PIDS[@]:1}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]:1}"; do wait "$pid" 2>/dev/null || true; done
    if ((${#PIDS[@]})); then kill -TERM "${PIDS[0]}" 2>/dev/null || true; wait "${PIDS[0]}" 2>/dev/null || true; fi
    [ -n "${LATCHKEY_KEEP_POSTGRES:-}" ] || "$ROOT/scripts/postgres.sh" stop
    log "stopped"
}
trap cleanup INT TERM EXIT

# Starts one process with its output prefixed by its name, into the terminal and a log file.
# The process itself is the background job, so its PID is the one we signal on exit.
start() {
    local name="$1"; shift
    "$@" > >(sed -u "s/^/[$name] /" | tee "$LOG_DIR/$name.log") 2>&1 &
    PIDS+=($!)
}

rm -f "$INSTANCE_DIR/kafka.bootstrap"
start kafka "$BIN/latchkey" kafka-cluster --brokers 1 --bootstrap-file "$INSTANCE_DIR/kafka.bootstrap"
for _ in $(seq 1 100); do [ -s "$INSTANCE_DIR/kafka.bootstrap" ] && break; sleep 0.1; done
[ -s "$INSTANCE_DIR/kafka.bootstrap" ] || die "embedded Kafka cluster did not start (see $LOG_DIR/kafka.log)"
export KAFKA_BROKERS="$(cat "$INSTANCE_DIR/kafka.bootstrap")"

log "migrating"
"$BIN/latchkey" migrate

export LOG_LEVEL="${LOG_LEVEL:-info}"
# Token service: public URLs, and development secrets generated once and kept beside the local database
# (the key-encryption key must outlive a run: it seals the tenants' signing keys stored there).
SECRETS="$RUN_DIR/token-service-secrets.env"
if [ ! -s "$SECRETS" ]; then
    (umask 077; for name in KEY_ENCRYPTION_KEY SECRET_HASH_KEY DPOP_NONCE_SECRET ADMIN_BOOTSTRAP_KEY; do
        echo "export $name='$(openssl rand -base64 32)'"; done > "$SECRETS")
fi
# shellcheck disable=SC1090
. "$SECRETS"
# Secrets files written before the bootstrap key existed get one now.
if [ -z "${ADMIN_BOOTSTRAP_KEY:-}" ]; then
    (umask 077; echo "export ADMIN_BOOTSTRAP_KEY='$(openssl rand -base64 32)'" >> "$SECRETS")
    # shellcheck disable=SC1090
    . "$SECRETS"
fi
export ADMIN_BOOTSTRAP_KEY
# The demo tenant's admin tokens may read its audit log.
export PLATFORM_TENANT="${PLATFORM_TENANT:-demo}"
export TOKEN_SERVICE_PUBLIC_URL="${TOKEN_SERVICE_PUBLIC_URL:-http://127.0.0.1:$TOKEN_PORT}"
export REGISTRATION_GATEWAY_PUBLIC_URL="${REGISTRATION_GATEWAY_PUBLIC_URL:-http://127.0.0.1:$GATEWAY_PORT}"
# dpop-verifier guards the demo API for the demo tenant's tokens.
export DPOP_UPSTREAM_URL="${DPOP_UPSTREAM_URL:-http://127.0.0.1:$DEMO_PORT}"
export DPOP_EXTERNAL_ORIGINS="${DPOP_EXTERNAL_ORIGINS:-http://127.0.0.1:$SIDECAR_PORT}"
export DPOP_ISSUERS="${DPOP_ISSUERS:-$TOKEN_SERVICE_PUBLIC_URL/t/demo}"
export DPOP_AUDIENCES="${DPOP_AUDIENCES:-$TOKEN_SERVICE_PUBLIC_URL/t/demo}"
export DPOP_NONCE_MODE="${DPOP_NONCE_MODE:-required}"
export DPOP_PUBLIC_PATHS="${DPOP_PUBLIC_PATHS:-/health}"
HTTP_PORT=$GATEWAY_PORT start registration-gateway "$BIN/registration-gateway"
HTTP_PORT=$TOKEN_PORT start token-service "$BIN/token-service"
HTTP_PORT=$SIDECAR_PORT start dpop-verifier "$BIN/dpop-verifier"
HTTP_PORT=$AUDIT_PORT start audit-consumer "$BIN/audit-consumer"
DEMO_API_PORT=$DEMO_PORT start demo-api "$BIN/demo-api"

# Health, readiness and metrics answer on each service's management port (its port + 1000).
for port in $GATEWAY_PORT $TOKEN_PORT $SIDECAR_PORT $AUDIT_PORT; do
    for _ in $(seq 1 300); do curl -fsS "http://127.0.0.1:$((port + 1000))/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
done
CREDENTIALS="${LATCHKEY_CREDENTIALS:-$INSTANCE_DIR/demo-credentials.json}"
if [ ! -s "$CREDENTIALS" ]; then
    log "seeding the demo tenant"
    "$BIN/latchkey" demo seed --credentials "$CREDENTIALS" --gateway "$REGISTRATION_GATEWAY_PUBLIC_URL" \
        --token-service "$TOKEN_SERVICE_PUBLIC_URL" --sidecar "http://127.0.0.1:$SIDECAR_PORT" \
        --audit "http://127.0.0.1:$AUDIT_PORT" || die "seeding failed (see the logs above)"
fi
DEMO_URLS=""
[ "$BASE" = 8080 ] || DEMO_URLS=" --gateway $REGISTRATION_GATEWAY_PUBLIC_URL --token-service $TOKEN_SERVICE_PUBLIC_URL --sidecar http://127.0.0.1:$SIDECAR_PORT --audit http://127.0.0.1:$AUDIT_PORT"
DEMO_USER="$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); print(c["username"], c["password"])' "$CREDENTIALS")"
cat <<INFO

  Latchkey is running.
    registration-gateway  http://127.0.0.1:$GATEWAY_PORT
    token-service         http://127.0.0.1:$TOKEN_PORT
    dpop-verifier         http://127.0.0.1:$SIDECAR_PORT
    audit-consumer        http://127.0.0.1:$AUDIT_PORT   (/audit/t/demo/...)
    demo API              http://127.0.0.1:$DEMO_PORT   (reach it through dpop-verifier)
    management            http://127.0.0.1:$((GATEWAY_PORT + 1000)) … $((AUDIT_PORT + 1000))  (/healthz /readyz /metrics /openapi.json)
    PostgreSQL            127.0.0.1:$PG_PORT  (database $DATABASE)
    Kafka (embedded)      $KAFKA_BROKERS
  Demo tenant 'demo': issuer $TOKEN_SERVICE_PUBLIC_URL/t/demo
    sign-in page          $TOKEN_SERVICE_PUBLIC_URL/t/demo/authorize?... (user/password: $DEMO_USER)
    credentials           $CREDENTIALS (admin client, DCR client, template demo-mobile)
    walk the mobile story: $BIN/latchkey demo run --credentials $CREDENTIALS$DEMO_URLS
  Logs: $LOG_DIR   Ctrl-C stops everything.

INFO
wait

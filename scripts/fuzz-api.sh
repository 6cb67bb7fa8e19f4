#!/usr/bin/env bash
# Fuzzes every HTTP service with schemathesis (PyPI), driven by the OpenAPI document each one serves at
# /openapi.json: starts a second, throw-away platform (scripts/run.sh on its own ports, database
# <test database>_fuzz and folder, with the demo tenant seeded), runs schemathesis against the four services with
# the `not_a_server_error` check, then requires every service to still be alive. Exits non-zero on any
# 5xx, dropped connection or crash. Run by scripts/test.sh; on its own: bash scripts/fuzz-api.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

VENV="$RUN_DIR/venv"
# Its own database, ports and folder per test database, so parallel test runs on one machine do not meet.
TEST_DB="${LATCHKEY_TEST_DB:-latchkey_test}"
DATABASE="${TEST_DB}_fuzz"
BASE="${LATCHKEY_FUZZ_PORT_BASE:-$((18000 + $(printf '%s' "$TEST_DB" | cksum | cut -d' ' -f1) % 100 * 20))}"
FUZZ_DIR="$RUN_DIR/fuzz-$TEST_DB"
MAX_EXAMPLES="${LATCHKEY_FUZZ_EXAMPLES:-30}"

if [ ! -x "$VENV/bin/python" ]; then
    mkdir -p "$RUN_DIR"
    python3 -m venv "$VENV" 2>/dev/null || { ensure_debian_packages python3-venv; python3 -m venv "$VENV"; } \
        || die "could not create $VENV"
fi
if [ ! -x "$VENV/bin/st" ]; then
    log "installing schemathesis into $VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check schemathesis || die "could not install schemathesis from PyPI"
fi
if ! "$VENV/bin/python" -c 'import selenium' 2>/dev/null; then
    log "installing selenium into $VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check selenium || die "could not install selenium from PyPI"
fi

ensure_packages chromium chromium-driver
"$ROOT/scripts/postgres.sh" start
"$ROOT/scripts/postgres.sh" recreate "$DATABASE"
rm -rf "$FUZZ_DIR" && mkdir -p "$FUZZ_DIR"
log "starting a throw-away platform for fuzzing (ports $((BASE + 1))–$((BASE + 10)), log $FUZZ_DIR/platform.log)"
# A cheaper scrypt: the fuzzer creates users as fast as it can, and at production cost the hashing limit
# answers 503 by design, which the not-a-server-error check would count.
LATCHKEY_PORT_BASE="$BASE" LATCHKEY_DATABASE="$DATABASE" LATCHKEY_KEEP_POSTGRES=1 \
    LATCHKEY_INSTANCE_DIR="$FUZZ_DIR" LOG_LEVEL=warning PASSWORD_SCRYPT_LOG_N="${PASSWORD_SCRYPT_LOG_N:-14}" \
    bash "$ROOT/scripts/run.sh" >"$FUZZ_DIR/platform.log" 2>&1 &
PLATFORM=$!
stop_platform() {
    kill -TERM "$PLATFORM" 2>/dev/null || true
    wait "$PLATFORM" 2>/dev/null || true
}
trap stop_platform EXIT
for _ in $(seq 1 1200); do
    grep -q "Latchkey is running" "$FUZZ_DIR/platform.log" 2>/dev/null && break
    kill -0 "$PLATFORM" 2>/dev/null || { tail -40 "$FUZZ_DIR/platform.log"; die "the platform did not start"; }
    sleep 0.5
done
grep -q "Latchkey is running" "$FUZZ_DIR/platform.log" || { tail -40 "$FUZZ_DIR/platform.log"; die "the platform did not start in time"; }

# An admin token of the demo tenant, so the admin API and the audit API are fuzzed past authentication.
ADMIN_TOKEN="$("$VENV/bin/python" - "$FUZZ_DIR/demo-credentials.json" "http://127.0.0.1:$((BASE + 2))/t/demo/token" <<'PY'
import base64, json, sys, urllib.parse, urllib.request
credentials = json.load(open(sys.argv[1]))
basic = base64.b64encode(f"{credentials['adminClientID']}:{credentials['adminClientSecret']}".encode()).decode()
request = urllib.request.Request(sys.argv[2], data=urllib.parse.urlencode(
    {"grant_type": "client_credentials", "scope": "admin"}).encode(), headers={"Authorization": f"Basic {basic}"})
print(json.load(urllib.request.urlopen(request))["access_token"])
PY
)" || die "could not get an admin token from the fuzzing platform"

failed=()

# The pages in a real browser, driven by selenium (before fuzzing, which may change the demo tenant's policy).
SCREENSHOTS="$ROOT/.build/screenshots/selenium"
log "selenium: sign-up, sign-in and the admin page in headless Chromium (screenshots in $SCREENSHOTS)"
if ! "$VENV/bin/python" "$ROOT/scripts/browser/selenium_flow.py" --issuer "http://127.0.0.1:$((BASE + 2))/t/demo" \
    --gateway "http://127.0.0.1:$((BASE + 1))" --credentials "$FUZZ_DIR/demo-credentials.json" \
    --admin-token "$ADMIN_TOKEN" --screenshots "$SCREENSHOTS"; then
    failed+=("selenium browser flow")
fi

# The document comes from the service's management port (its port + 1000); requests go to the service port.
run_schemathesis() {
    local service="$1" port="$2"; shift 2
    "$VENV/bin/st" --config-file "$ROOT/scripts/fuzz/schemathesis.toml" run \
        "http://127.0.0.1:$((port + 1000))/openapi.json" --url "http://127.0.0.1:$port" --checks not_a_server_error --max-examples "$MAX_EXAMPLES" \
        --workers 2 --request-timeout 10 --no-color --report junit --report-dir "$FUZZ_DIR/reports/$service" \
        "$@" >"$FUZZ_DIR/$service.log" 2>&1
}
fuzz() {
    local service="$1"
    log "schemathesis: $service (at most $MAX_EXAMPLES examples per operation)"
    if run_schemathesis "$@"; then
        tail -4 "$FUZZ_DIR/$service.log"
        return
    fi
    # A run that found no failing response but crashed inside schemathesis/hypothesis (seen once:
    # CPython's "AST constructor recursion depth mismatch") says nothing about us: it is run once more.
    # Anything our services did (5xx, broken connection) is listed under "Failures:" and is never retried.
    if ! grep -q '^Failures:' "$FUZZ_DIR/$service.log" && grep -q 'Runtime Error' "$FUZZ_DIR/$service.log"; then
        log "schemathesis itself failed on $service (no failing response); its error, then one more run:"
        grep -A12 '^Errors:' "$FUZZ_DIR/$service.log" | head -30
        mv "$FUZZ_DIR/$service.log" "$FUZZ_DIR/$service.first-run.log"
        if run_schemathesis "$@"; then
            tail -4 "$FUZZ_DIR/$service.log"
            return
        fi
    fi
    tail -60 "$FUZZ_DIR/$service.log"
    failed+=("$service")
}
# The admin's revocation endpoints are left out: one generated request would revoke the admin client
# whose token the rest of the run uses (they are covered by the Swift tests' hostile-input cases).
fuzz registration-gateway $((BASE + 1)) -H "Authorization: Bearer $ADMIN_TOKEN" --exclude-path-regex '/revoke$'
fuzz token-service $((BASE + 2))
fuzz dpop-verifier $((BASE + 3))
fuzz audit-consumer $((BASE + 4)) -H "Authorization: Bearer $ADMIN_TOKEN"

for port in $((BASE + 1)) $((BASE + 2)) $((BASE + 3)) $((BASE + 4)); do
    curl -fsS "http://127.0.0.1:$((port + 1000))/healthz" >/dev/null || failed+=("service on port $port stopped answering")
done
((${#failed[@]} == 0)) || die "fuzzing found problems: ${failed[*]} (logs in $FUZZ_DIR)"
log "fuzzing: no 5xx, no crash"

# Shared helpers for the scripts: paths, logging, package installation.
# shellcheck shell=bash
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUN_DIR="${LATCHKEY_RUN_DIR:-$ROOT/.run}"
# Below Linux's ephemeral range (32768–60999): a port in it can be held by any outgoing connection at the
# moment PostgreSQL starts (it once was, on 55490).
PG_PORT="${LATCHKEY_PG_PORT:-25432}"
PG_DIR="$RUN_DIR/postgres"
# PostgreSQL runs as the `postgres` OS user, which may not reach a checkout under a private home
# folder; then the cluster lives under /tmp instead (one per checkout).
if [ "$(id -u)" -eq 0 ] && id postgres >/dev/null 2>&1 && ! runuser -u postgres -- test -x "$ROOT"; then
    PG_DIR="/tmp/latchkey-postgres-$(printf '%s' "$ROOT" | md5sum | cut -c1-8)"
fi
PG_BIN="${LATCHKEY_PG_BIN:-/usr/lib/postgresql/15/bin}"
export PATH="/opt/swift/usr/bin:$PATH"

log() { printf '\033[1;34m[latchkey]\033[0m %s\n' "$*" >&2; }
die() { printf '\033[1;31m[latchkey] %s\033[0m\n' "$*" >&2; exit 1; }

# Installs the given Debian packages, only those that are missing.
ensure_debian_packages() {
    local missing=()
    for pkg in "$@"; do
        dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
    done
    if ((${#missing[@]})); then
        log "installing Debian packages: ${missing[*]}"
        local sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
}

# Installs the Debian packages Latchkey needs, only when one is missing.
ensure_packages() {
    ensure_debian_packages librdkafka-dev postgresql python3 pkg-config "$@"
    if ! python3 -c 'import jsonschema' 2>/dev/null; then
        log "installing the jsonschema Python package (event schema tests)"
        python3 -m pip install --quiet jsonschema || die "could not install jsonschema from PyPI"
    fi
    command -v swift >/dev/null || die "Swift not found (expected at /opt/swift)"
}

# Runs a command as the postgres OS user (PostgreSQL refuses to run as root).
as_postgres() {
    if [ "$(id -un)" = "postgres" ]; then "$@"; elif [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

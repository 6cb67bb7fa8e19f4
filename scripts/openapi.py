#!/usr/bin/env python3
"""The per-service OpenAPI documents: docs/openapi/<service>.yaml is the source, each service serves it
as JSON at GET /openapi.json from the copy its target bundles, Services/<Service>/OpenAPI/<service>.json.

  openapi.py bundle   regenerate the JSON copies from the YAML documents (after editing a document)
  openapi.py check    the JSON copies are current, and each document matches its service's routes:
                      every route the service's Swift sources register is documented, and every
                      documented operation is registered (routes in Sources/LatchkeyServer/HTTP belong
                      to every service)

Route registrations are found as `.get/.post/.put/.delete/.patch("path")` calls; group prefixes are not
resolved, so a registered path matches a documented one it is a suffix of. The exact comparison against
the running router is a Swift test (OpenAPIRouteTests); this check runs without a build.
Needs PyYAML (validate-deploy.sh provides it in .run/venv).
"""
import json
import os
import re
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs", "openapi")
SERVICES = {  # service name -> source folder
    "registration-gateway": "Services/RegistrationGateway",
    "token-service": "Services/TokenService",
    "dpop-verifier": "Services/DPoPVerifier",
    "audit-consumer": "Services/AuditConsumer",
}
SHARED_ROUTES = "Sources/LatchkeyServer/HTTP"
METHODS = ("get", "post", "put", "delete", "patch")
ROUTE = re.compile(r'\.(get|post|put|delete|patch)\("([^"]*)"')


def load(service):
    with open(os.path.join(DOCS, f"{service}.yaml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def rendered(service):
    return json.dumps(load(service), ensure_ascii=False, separators=(",", ":")) + "\n"


def registered_routes(folder):
    for directory, _, files in os.walk(os.path.join(ROOT, folder)):
        for name in sorted(files):
            if not name.endswith(".swift"):
                continue
            path = os.path.join(directory, name)
            with open(path, encoding="utf-8") as source:
                for number, line in enumerate(source, 1):
                    if "parameters.get(" in line or "headers" in line:
                        continue
                    for method, route in ROUTE.findall(line):
                        normalized = "/" + re.sub(r":([A-Za-z_]+)", r"{\1}", route).strip("/")
                        yield method, normalized, f"{os.path.relpath(path, ROOT)}:{number}"


def bundled(service):
    """The JSON copy's path in the repository: a resource of the service's own target."""
    return os.path.join(SERVICES[service], "OpenAPI", f"{service}.json")


def bundle():
    for service in SERVICES:
        os.makedirs(os.path.dirname(os.path.join(ROOT, bundled(service))), exist_ok=True)
        with open(os.path.join(ROOT, bundled(service)), "w", encoding="utf-8") as handle:
            handle.write(rendered(service))
        print(f"wrote {bundled(service)}")
    return 0


def check():
    failures = 0
    for service, folder in SERVICES.items():
        bundled_path = os.path.join(ROOT, bundled(service))
        current = open(bundled_path, encoding="utf-8").read() if os.path.exists(bundled_path) else None
        if current != rendered(service):
            print(f"  ✗ {bundled(service)} is stale: run scripts/openapi.py bundle")
            failures += 1
        document = load(service)
        operations = [(method, path) for path, item in document["paths"].items() for method in item
                      if method in METHODS]
        routes = list(registered_routes(folder)) + list(registered_routes(SHARED_ROUTES))
        missing = [f"{m.upper()} {r} ({where})" for m, r, where in routes
                   if not any(om == m and (op == r or op.endswith(r)) for om, op in operations)]
        stale = [f"{m.upper()} {p}" for m, p in operations
                 if not any(rm == m and (p == r or p.endswith(r)) for rm, r, _ in routes)]
        for entry in missing:
            print(f"  ✗ registered but not in docs/openapi/{service}.yaml: {entry}")
        for entry in stale:
            print(f"  ✗ in docs/openapi/{service}.yaml but not registered by {folder}: {entry}")
        failures += len(missing) + len(stale)
        print(f"{'FAIL' if missing or stale else 'ok  '} {service}: {len(operations)} documented operations, "
              f"{len(routes)} registered routes")
    return 1 if failures else 0


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command not in ("bundle", "check"):
        print(__doc__)
        sys.exit(2)
    sys.exit(bundle() if command == "bundle" else check())

#!/usr/bin/env python3
"""Checks docs/openapi.yaml against the routes the services register (used by validate-deploy.sh).

Every `.get/.post/.put/.delete/.patch("path")` route registration under Services/ and Shared/HTTP must
match an OpenAPI operation with that method whose path ends with the registered path (`:name` →
`{name}`; group prefixes are not resolved, hence the suffix match). A route missing from the
document fails the check.
"""
import os
import re
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROUTE = re.compile(r'\.(get|post|put|delete|patch)\("([^"]*)"')


def registered_routes():
    for folder in ("Services", "Shared/HTTP"):
        for directory, _, files in os.walk(os.path.join(ROOT, folder)):
            for name in files:
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


def main():
    with open(os.path.join(ROOT, "docs/openapi.yaml"), encoding="utf-8") as handle:
        document = yaml.safe_load(handle)
    operations = [(method, path) for path, item in document["paths"].items() for method in item
                  if method in ("get", "post", "put", "delete", "patch")]
    missing = []
    count = 0
    for method, route, where in registered_routes():
        count += 1
        if not any(m == method and (p == route or p.endswith(route)) for m, p in operations):
            missing.append(f"{method.upper()} {route} ({where})")
    for entry in missing:
        print(f"  ✗ not in docs/openapi.yaml: {entry}")
    if count == 0:
        print("  ✗ no route registrations found in the sources")
        return 1
    print(f"{'FAIL' if missing else 'ok  '} docs/openapi.yaml covers {count - len(missing)} of {count} registered routes")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())

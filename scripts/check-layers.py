#!/usr/bin/env python3
"""Checks the library layering from `swift package describe --type json`, before anything is built.

  LatchkeyCore         Foundation and swift-crypto only: no other target, no other product
  LatchkeyKafka        may use CRdKafka only of the package's own targets
  LatchkeyPersistence  may use LatchkeyCore and LatchkeyKafka
  LatchkeyServer       may use LatchkeyCore, LatchkeyKafka and LatchkeyPersistence

It also reads the sources: SwiftPM on Linux lets a file import any module the build happens to have
built, so the core's `import` lines are held to the same list, and every target must declare each
package target it imports (or a product would link without a layer it uses). LatchkeyCoreTests must run
without PostgreSQL or Kafka: it may not use the test database or the embedded cluster.

Usage: check-layers.py [path to describe JSON; default: run `swift package describe` in the repository]
"""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORE = "LatchkeyCore"
CORE_PRODUCTS = {"Crypto", "_CryptoExtras"}
# Modules of the toolchain and the platform, importable without a dependency.
SYSTEM_MODULES = {"Foundation", "FoundationEssentials", "Dispatch", "Synchronization", "Glibc", "Musl", "Darwin"}
ALLOWED_TARGETS = {
    CORE: set(),
    "LatchkeyKafka": {"CRdKafka"},
    "LatchkeyPersistence": {"LatchkeyCore", "LatchkeyKafka"},
    "LatchkeyServer": {"LatchkeyCore", "LatchkeyKafka", "LatchkeyPersistence"},
}
CORE_TESTS = "LatchkeyCoreTests"
CORE_TESTS_FORBIDDEN = re.compile(r"\b(TestDatabase|EmbeddedKafkaCluster|withEmbeddedKafkaCluster|PostgresNIO|PostgresClient)\b")
IMPORT = re.compile(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*import\s+(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?(\w+)", re.M)


def describe():
    if len(sys.argv) > 1:
        with open(sys.argv[1], encoding="utf-8") as handle:
            return json.load(handle)
    result = subprocess.run(["swift", "package", "describe", "--type", "json"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        sys.exit(f"swift package describe failed:\n{result.stderr}")
    return json.loads(result.stdout)


def imports(path):
    found = {}
    for folder, _, files in os.walk(path):
        for name in sorted(files):
            if name.endswith(".swift"):
                file = os.path.join(folder, name)
                with open(file, encoding="utf-8") as source:
                    for module in IMPORT.findall(source.read()):
                        found.setdefault(module, os.path.relpath(file, ROOT))
    return found


def main():
    package = describe()
    targets = {target["name"]: target for target in package["targets"]}
    errors = []
    for name, allowed in ALLOWED_TARGETS.items():
        if name not in targets:
            errors.append(f"{name}: no such target")
            continue
        for dependency in sorted(set(targets[name].get("target_dependencies") or []) - allowed):
            errors.append(f"{name} depends on target {dependency} (allowed: {', '.join(sorted(allowed)) or 'none'})")
    core = targets.get(CORE, {})
    for product in sorted(set(core.get("product_dependencies") or []) - CORE_PRODUCTS):
        errors.append(f"{CORE} depends on product {product} (allowed: Foundation and {', '.join(sorted(CORE_PRODUCTS))})")
    if core:
        for module, file in sorted(imports(os.path.join(ROOT, core["path"])).items()):
            if module not in CORE_PRODUCTS | SYSTEM_MODULES:
                errors.append(f"{file} imports {module}: {CORE} may use only Foundation and swift-crypto")
    if CORE_TESTS in targets:
        folder = os.path.join(ROOT, targets[CORE_TESTS]["path"])
        for directory, _, files in os.walk(folder):
            for file in sorted(files):
                path = os.path.join(directory, file)
                if file.endswith(".swift"):
                    with open(path, encoding="utf-8") as source:
                        for number, line in enumerate(source, 1):
                            match = CORE_TESTS_FORBIDDEN.search(line)
                            if match:
                                errors.append(f"{os.path.relpath(path, ROOT)}:{number} uses {match.group(1)}: "
                                              f"{CORE_TESTS} must run without PostgreSQL and Kafka")
    for name, target in sorted(targets.items()):
        if target.get("type") == "system-target":
            continue
        declared = set(target.get("target_dependencies") or [])
        for module, file in sorted(imports(os.path.join(ROOT, target["path"])).items()):
            if module in targets and module != name and module not in declared:
                errors.append(f"{file} imports {module}, which target {name} does not declare")
    for error in errors:
        print(f"  ✗ {error}")
    if not errors:
        print(f"layers ok: {CORE} uses Foundation and swift-crypto only, {CORE_TESTS} no PostgreSQL or Kafka; "
              "every target declares the layers it imports")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

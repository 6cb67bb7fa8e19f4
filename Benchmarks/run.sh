#!/usr/bin/env bash
# Runs one benchmark by name: Benchmarks/run.sh audit   (each lives in Benchmarks/<name>/run.sh)
set -euo pipefail
DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
name="${1:-}"
if [ -z "$name" ] || [ ! -x "$DIR/$name/run.sh" ]; then
    echo "usage: Benchmarks/run.sh <name>; available: $(cd "$DIR" && ls -d */ 2>/dev/null | tr -d / | tr '\n' ' ')" >&2
    exit 2
fi
shift
exec "$DIR/$name/run.sh" "$@"

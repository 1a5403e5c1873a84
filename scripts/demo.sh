#!/usr/bin/env bash
# `make demo`: build a vllm-diag database from nothing and show it with the CLI.
# (Placeholder main job until `check`/`analyze` land; then this runs them on bundled assets.)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
VENV=${VENV:-.venv}
DB=${DEMO_DB:-build/demo.db}
"$VENV/bin/python" scripts/make_demo_db.py "$DB"
echo "\$ vllm-diag sessions $DB"
"$VENV/bin/vllm-diag" sessions "$DB"
echo
echo "\$ vllm-diag show $DB"
"$VENV/bin/vllm-diag" show "$DB"

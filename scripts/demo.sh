#!/usr/bin/env bash
# `make demo`: the main job on bundled data, no GPU and no vLLM needed.
#  1. pre-flight: predict the #43626 crash of a bundled `vllm serve` line (assets/commands) and
#     propose re-checked fixes;
#  2. post-mortem: diagnose a real vLLM 0.26.0 GPU crash log and a pasted bug report (assets/logs);
#  3. everything lands in one SQLite session store; list it, apply a suggestion to new files and
#     write the HTML report of the pre-flight session.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
VENV=${VENV:-.venv}
OUT=${DEMO_OUT:-build/demo}
DB="$OUT/demo.db"
diag() { echo; echo "\$ vllm-diag $*"; "$VENV/bin/vllm-diag" "$@"; }

rm -rf "$OUT" && mkdir -p "$OUT"
# `check` exits 1 when a finding would stop the engine: that is the expected outcome here.
diag check --vllm-version 0.20.2 --gpu "RTX PRO 6000" --db "$DB" \
    --file assets/commands/seed-43626-dense-draft-hybrid.sh || [[ $? == 1 ]]
diag analyze assets/logs/nemotronh-prefix-caching-ngram-vllm0.26-gpu.log --db "$DB"
echo; echo "\$ vllm-diag analyze assets/logs/seed-39809-nemotron-prefix-caching-mtp.log --markdown > $OUT/seed-39809.md"
"$VENV/bin/vllm-diag" analyze assets/logs/seed-39809-nemotron-prefix-caching-mtp.log --markdown > "$OUT/seed-39809.md"
head -n 12 "$OUT/seed-39809.md"; echo "[... Markdown for a vLLM bug report: $OUT/seed-39809.md]"
diag sessions "$DB"
first=$("$VENV/bin/vllm-diag" sessions "$DB" --json | "$VENV/bin/python" -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
diag suggest "$first" --db "$DB" --apply 1 --out "$OUT"
# the pictures: one self-contained HTML file per session (page-size map, state-index view, timeline)
diag report "$first" --db "$DB" -o "$OUT/report-$first.html"
echo; echo "open $OUT/report-$first.html in a browser (offline; nothing is fetched); 'vllm-diag tui $DB' for the terminal UI"

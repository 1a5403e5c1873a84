#!/usr/bin/env bash
# Run the test suite in $VENV (default .venv); arguments go to pytest. Used by `make test`.
# pytest exit code 5 (no tests collected) is a failure here, not a silent pass.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
VENV=${VENV:-.venv}
start=$(date +%s)
set +e
"$VENV/bin/python" -m pytest --timeout=900 -p no:cacheprovider --durations=15 "$@"
rc=$?
set -e
echo "run-tests: pytest exit code $rc after $(( $(date +%s) - start )) s"
if [[ $rc -eq 5 ]]; then
    echo "run-tests: pytest collected no tests; failing" >&2
fi
exit $rc

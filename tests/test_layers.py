"""The layering is a checked contract: import-linter runs the contracts of pyproject.toml
([tool.importlinter]: the core never imports the front ends, views never touch the store, views
are pure, renderers never load or diagnose, the pipeline and the presentation are layered, the
probes record through the store) over the installed layout of the package."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).parent / "lint-imports"
MAPPED = {"probes": REPO / "probes", "ui": REPO / "ui"}  # pyproject [tool.setuptools] package-dir


def installed_layout(root: Path, extra: dict[str, str] | None = None) -> Path:
    """``root/vllm_diag`` as the wheel lays it out (diag/ with probes/ and ui/ inside), by symlinks;
    ``extra`` adds files (relative path -> source) to test that a broken contract is reported."""
    pkg = root / "vllm_diag"
    pkg.mkdir(parents=True)
    for entry in (REPO / "diag").iterdir():
        if entry.name == "__pycache__":
            continue
        if extra and any(rel.split("/")[0] == entry.name for rel in extra):
            (pkg / entry.name).mkdir()
            for sub in entry.iterdir():
                (pkg / entry.name / sub.name).symlink_to(sub)
        else:
            (pkg / entry.name).symlink_to(entry)
    for name, src in MAPPED.items():
        (pkg / name).symlink_to(src)
    for rel, text in (extra or {}).items():
        (pkg / rel).write_text(text)
    return root


def lint(root: Path) -> subprocess.CompletedProcess:
    assert LINT.is_file(), "import-linter missing (the `test` extra installs it)"
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(LINT), "--no-cache"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def test_import_contracts_are_kept(tmp_path):
    r = lint(installed_layout(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout and "Contracts: 7 kept" in r.stdout


@pytest.mark.parametrize("module, text, contract", [
    ("views/_probe_store.py", "from ..store import Store\n", "Views never touch the store BROKEN"),
    ("rules/_probe_cycle.py", "def f():\n    from ..preflight import run_check\n",  # a function-body import counts
     "The diagnosis pipeline is layered: commands, api, post-mortem, pre-flight, suggestions, rules, model BROKEN"),
    ("render/_probe_ui.py", "import plotly\n",
     "The core is reachable without the front ends (only the commands that start one import vllm_diag.ui) BROKEN"),
])
def test_a_broken_contract_is_reported(tmp_path, module, text, contract):
    r = lint(installed_layout(tmp_path, {module: text}))
    assert r.returncode != 0
    out = " ".join(r.stdout.split())
    assert contract in out, out

"""Another git revision's ``vllm_diag``, for benchmarks that compare it with the working tree in one run
(``--compare-rev REV``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def export_revision(rev: str) -> Path:
    """``vllm_diag`` as of git revision ``rev`` (diag/ with ui/ and probes/ inside, as the package
    maps them), exported once into ``build/bench/rev-REV/``; returns the folder to put on PYTHONPATH."""
    sha = subprocess.run(["git", "rev-parse", "--short", rev], capture_output=True, text=True, cwd=REPO, check=False)
    if sha.returncode != 0:
        raise SystemExit(f"--compare-rev: no such git revision: {rev}")
    root = REPO / "build" / "bench" / f"rev-{sha.stdout.strip()}"
    pkg = root / "vllm_diag"
    if not pkg.is_dir():
        tmp = root / "src"
        shutil.rmtree(root, ignore_errors=True)
        tmp.mkdir(parents=True)
        archive = subprocess.run(["git", "archive", sha.stdout.strip(), "diag", "ui", "probes"], capture_output=True,
                                 cwd=REPO, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
        shutil.move(str(tmp / "diag"), str(pkg))
        shutil.move(str(tmp / "ui"), str(pkg / "ui"))
        shutil.move(str(tmp / "probes"), str(pkg / "probes"))
        shutil.rmtree(tmp)
    return root

"""The core (``vllm_diag``, the ``diag/`` folder) must import on a laptop without vLLM: no module under ``diag/`` may pull in vllm, torch,
textual, dash or plotly at import time. Each check runs in a fresh interpreter; the package is walked
with pkgutil, so modules added later are covered without editing this file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = ("vllm", "torch", "textual", "dash", "plotly")

CHECKER = textwrap.dedent(
    """
    import importlib, json, pkgutil, sys, traceback

    package, forbidden = sys.argv[1], tuple(sys.argv[2].split(","))

    def heavy():
        return sorted(m for m in sys.modules if m.split(".")[0] in forbidden)

    report = {"modules": [], "culprits": {}, "errors": {}, "preloaded": heavy()}
    pkg = importlib.import_module(package)
    names = [package] + [m.name for m in pkgutil.walk_packages(pkg.__path__, package + ".",
                                                               onerror=lambda name: report["errors"].setdefault(name, "walk failed"))]
    for name in names:
        if name.endswith(".__main__"):  # running it is the CLI's job (covered below), not an import
            continue
        before = set(heavy())
        try:
            importlib.import_module(name)
        except BaseException as exc:
            report["errors"][name] = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            continue
        report["modules"].append(name)
        new = sorted(set(heavy()) - before)
        if new:
            report["culprits"][name] = new[:5]
    if package == "vllm_diag":  # the CLI builds its parser from every command module
        import vllm_diag.cli
        before = set(heavy())
        vllm_diag.cli.build_parser()
        new = sorted(set(heavy()) - before)
        if new:
            report["culprits"]["vllm_diag.cli.build_parser()"] = new[:5]
    report["final"] = heavy()
    print("REPORT " + json.dumps(report))
    """
)


def run_checker(package: str, extra_path: Path | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")}
    if extra_path:
        env["PYTHONPATH"] = str(extra_path)
    r = subprocess.run([sys.executable, "-c", CHECKER, package, ",".join(FORBIDDEN)], capture_output=True,
                       text=True, timeout=120, env=env, cwd=REPO_ROOT)
    lines = [line for line in r.stdout.splitlines() if line.startswith("REPORT ")]
    assert r.returncode == 0 and lines, f"checker failed (rc {r.returncode}):\n{r.stdout}\n{r.stderr}"
    return json.loads(lines[-1][len("REPORT "):])


def test_diag_imports_no_heavy_dependency():
    report = run_checker("vllm_diag")
    assert report["preloaded"] == []
    assert not report["errors"], f"modules under diag/ failed to import: {report['errors']}"
    assert not report["culprits"], (
        "these diag modules import heavy packages at import time (import them inside functions instead): "
        + "; ".join(f"{mod} -> {', '.join(mods)}" for mod, mods in report["culprits"].items())
    )
    assert report["final"] == []
    # the walk found the foundation's modules (and so will find new ones)
    assert {"vllm_diag", "vllm_diag.cli", "vllm_diag.model", "vllm_diag.store", "vllm_diag.schema", "vllm_diag.errors", "vllm_diag.render.text",
            "vllm_diag.commands.sessions", "vllm_diag.commands.show", "vllm_diag.rules.base"} <= set(report["modules"])


def test_checker_catches_a_heavy_import(tmp_path):
    """The same checker, on a throwaway package whose submodule imports a (stub) forbidden module."""
    (tmp_path / "textual").mkdir()
    (tmp_path / "textual" / "__init__.py").write_text("")
    pkg = tmp_path / "h1fakepkg"
    (pkg / "deep").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "clean.py").write_text("import json\n")
    (pkg / "deep" / "__init__.py").write_text("")
    (pkg / "deep" / "ui.py").write_text("import textual\n")
    (pkg / "broken.py").write_text("raise ImportError('half-written module')\n")
    report = run_checker("h1fakepkg", extra_path=tmp_path)
    assert report["culprits"] == {"h1fakepkg.deep.ui": ["textual"]}
    assert "half-written module" in report["errors"]["h1fakepkg.broken"]
    assert "h1fakepkg.clean" in report["modules"]


@pytest.mark.parametrize("argv", [["--help"], ["--version"]])
def test_cli_startup_imports_no_heavy_dependency(argv):
    code = (
        "import sys, runpy\n"
        f"sys.argv = ['vllm-diag', *{argv!r}]\n"
        "try:\n"
        "    runpy.run_module('vllm_diag', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        f"heavy = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert "HEAVY []" in r.stderr, r.stderr

"""What a user gets from ``pip install vllm-diag``: one ``vllm_diag`` namespace, the package data the
code reads, and no trace of the machine the repository was written on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
FOLDERS = PYPROJECT["tool"]["setuptools"]["package-dir"]  # import name -> folder


def _packages_on_disk() -> set[str]:
    found = set()
    for name, folder in FOLDERS.items():
        root = REPO / folder
        for init in root.rglob("__init__.py"):
            rel = init.parent.relative_to(root)
            if "__pycache__" in rel.parts:
                continue
            found.add(".".join((name, *rel.parts)) if rel.parts else name)
    return found


def test_every_subpackage_is_listed_in_pyproject():
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    missing = _packages_on_disk() - listed
    assert not missing, f"add these to [tool.setuptools] packages in pyproject.toml: {sorted(missing)}"
    assert not listed - _packages_on_disk(), "pyproject.toml lists packages that have no folder"


def _tracked_files() -> list[Path]:
    r = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, timeout=60)
    if r.returncode != 0:
        pytest.skip("not a git checkout")
    return [REPO / p for p in r.stdout.decode().split("\0") if p]


def test_no_tracked_file_names_the_checkout_path():
    needle = str(REPO).encode()
    offenders = []
    for path in _tracked_files():
        try:
            if needle in path.read_bytes():
                offenders.append(str(path.relative_to(REPO)))
        except OSError:  # deleted in the working tree, not yet committed
            continue
    assert not offenders, f"tracked files contain this checkout's absolute path {REPO}: {offenders}"


def test_the_guard_sees_a_machine_path(tmp_path):
    """The check above is a byte search; prove it would catch a path in a file of another checkout."""
    f = tmp_path / "log.txt"
    f.write_text(f"model='{tmp_path}/.testbed-models/llama'\n")
    assert str(tmp_path).encode() in f.read_bytes()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-q",
                        "-w", str(out), str(REPO)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    (whl,) = out.glob("vllm_diag-*.whl")
    return whl


@pytest.mark.slow
def test_wheel_holds_one_namespace_and_its_data(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"vllm_diag"}
    assert "vllm_diag/data/configs/index.json" in names
    assert "vllm_diag/data/configs/Qwen3.6-27B/config.json" in names
    assert "vllm_diag/data/vllm_flags.json" in names
    assert "vllm_diag/probes/plugin.py" in names and "vllm_diag/ui/__init__.py" in names
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "vllm_diag = vllm_diag.probes.plugin:register" in entry_points
    assert "vllm-diag = vllm_diag.cli:main" in entry_points


@pytest.mark.slow
def test_installed_wheel_checks_a_bundled_config(wheel, tmp_path):
    """A fresh venv (no checkout on sys.path, no editable install): `check` finds the bundled demo
    config through importlib.resources and the plugin entry point resolves."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    r = subprocess.run([str(py), "-m", "pip", "install", "--disable-pip-version-check", "-q", str(wheel)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VLLM_DIAG_MODEL_PATH")}
    env.update(HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="1")
    check = subprocess.run([str(venv / "bin" / "vllm-diag"), "check", "--vllm-version", "0.20.2", "--gpu", "RTX PRO 6000",
                            "--", "vllm", "serve", "Qwen/Qwen3-Coder-Next-80B-A3B-NVFP4", "--kv-cache-dtype", "fp8_e4m3",
                            "--speculative-config",
                            '{"model": "LocoOperator/LocoOperator-4B", "num_speculative_tokens": 3}'],
                           capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert check.returncode == 1, check.stdout + check.stderr  # the #43626 assertion is predicted
    assert "[bundled demo config]" in check.stdout
    doc = subprocess.run([check.args[0], "check", "--json", *check.args[2:]], capture_output=True, text=True,
                         timeout=120, env=env, cwd=tmp_path)
    src = json.loads(doc.stdout)["config_source"]  # the header names a bundled config by its folder; the JSON has the path
    assert "site-packages" in src and json.loads(doc.stdout)["bundled_config"] is True, src
    assert "kv_page_size" in check.stdout or "kv_unify_mamba_assert" in check.stdout
    plugin = subprocess.run([str(py), "-c", (
        "import importlib.metadata as md, sys\n"
        "(ep,) = [e for e in md.entry_points(group='vllm.general_plugins') if e.name == 'vllm_diag']\n"
        "ep.load()(); print(ep.value, sorted(m for m in sys.modules if m in ('diag', 'probes', 'ui')))")],
        capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert plugin.stdout.strip() == "vllm_diag.probes.plugin:register []", plugin.stderr

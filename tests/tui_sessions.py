"""Real sessions for the TUI tests (tests/test_tui*.py), built the way users build them.

* ``seed_db(path)``: ``vllm-diag check --db`` of the seed commands of ``tests/test_preflight_seeds.py``
  (vLLM issues #43626, #41560, #43457, #38196, #39809), each with its version and GPU;
* ``log_db(path)``: ``vllm-diag analyze --db`` of the real GPU crash log and bug report in
  ``assets/logs/`` and the real test-bed logs in ``tests/fixtures/logs/real/``;
* ``gpu_db(dest_dir, name)``: a copy of a real vLLM 0.26.0 GPU recording (``assets/gpu/``);
* ``session_id(db, **match)``: the id of the one session whose fields match.
"""

from __future__ import annotations

import contextlib
import io
import shlex
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GPU_DIR = REPO / "assets" / "gpu"
LOGS = (
    REPO / "assets" / "logs" / "nemotronh-prefix-caching-ngram-vllm0.26-gpu.log",
    REPO / "assets" / "logs" / "seed-39809-nemotron-prefix-caching-mtp.log",
    REPO / "tests" / "fixtures" / "logs" / "real" / "nemotronh_prefix_caching_long_prompt.log",
    REPO / "tests" / "fixtures" / "logs" / "real" / "llama_ok.log",
)


def cli(*argv: str) -> tuple[int, str]:
    from vllm_diag.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = main(list(argv))
    return rc, out.getvalue()


def seed_db(db: Path) -> Path:
    from tests.test_preflight_seeds import SEEDS

    for name, seed in SEEDS.items():
        argv = shlex.split(seed["command"].replace("\\\n", " "))
        rc, out = cli("check", "--db", str(db), "--vllm-version", seed["version"], "--gpu", seed["gpu"], "--", *argv)
        assert rc == 1, f"{name}: {out}"  # every seed is predicted to fail
    return db


def log_db(db: Path) -> Path:
    for log in LOGS:
        rc, out = cli("analyze", str(log), "--db", str(db))
        assert rc in (0, 1), f"{log.name}: {out}"
    return db


def gpu_db(dest_dir: Path, name: str) -> Path:
    src = GPU_DIR / f"{name}.db"
    assert src.is_file(), f"{src} missing (real vLLM 0.26.0 GPU recordings, assets/gpu/README.md)"
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / src.name
    shutil.copyfile(src, dest)
    return dest


def session_id(db: Path, **match) -> str:
    from vllm_diag.store import Store

    with Store.open(db) as store:
        hits = [s.id for s in store.sessions()
                if all(value in str(getattr(s, key) or "") for key, value in match.items())]
    assert len(hits) == 1, f"{match}: {len(hits)} sessions match"
    return hits[0]


def long_gpu_db(dest_dir: Path, steps: int, name: str = "qwen3next-serve-ngram3") -> tuple[Path, str]:
    """A copy of a GPU recording whose steps are repeated (through the store, as the probes append
    them) until ``steps`` steps; every 997th step also gets 2 spec decodes (a mixed step)."""
    import dataclasses

    from vllm_diag.store import Store

    db = gpu_db(dest_dir, name)
    long = db.with_name(f"{db.stem}-{steps}.db")
    db.rename(long)
    with Store.open(long, create=True) as store:
        sid = store.sessions()[0].id
        recorded = store.load(sid, steps=True).state.steps
        first = min(s.step_index for s in recorded)
        period = max(s.step_index for s in recorded) - first + 1
        by_step: dict[int, list] = {}
        for s in recorded:
            by_step.setdefault(s.step_index - first, []).append(s)
        start = max(s.step_index for s in recorded) + 1
        new = []
        for step in range(start, steps):
            for s in by_step.get(step % period, ()):
                extra = {"num_spec_decodes": 2} if step % 997 == 0 and s.num_decodes else {}
                new.append(dataclasses.replace(s, step_index=step, **extra))
        for i in range(0, len(new), 50_000):
            chunk = new[i:i + 50_000]
            store.add_rows("batch_steps", sid, 0, chunk)
    return long, sid

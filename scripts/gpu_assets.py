#!/usr/bin/env python3
"""Turn ``scripts/gpu-check`` output into fixtures for ``assets/gpu/``: each chosen run's DB (its WAL
folded in) and logs, with the GPU machine's paths rewritten the way the captured logs do it
(models under ``/models``, vLLM under ``/opt/venv/lib/python3.12/site-packages``, the check's own
folders under ``/data``, the checkout under ``/src/vllm-diag``), then VACUUMed so no old text survives in free pages.

    python scripts/gpu_assets.py GPU_CHECK_OUT DEST PREFIX JOB [JOB ...]
    e.g. python scripts/gpu_assets.py out/gc3 assets/gpu h200- nemotronh-pc-ngram3 llama-v2-mp

Writes ``DEST/<PREFIX><JOB>.db``, ``.log`` (the server's log too for ``vllm serve`` jobs) and ``.json``
(the run's result: vLLM's own objects as the worker saw them, which ``tests/test_probes_gpu_assets.py``
compares with the DB again) and refuses to write a file that still holds a ``/tmp/`` or ``/work/`` path.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

REWRITES = [
    (re.compile(r"/tmp/models/"), "/models/"),
    (re.compile(r"/tmp/site/"), "/opt/venv/lib/python3.12/site-packages/"),
    (re.compile(r"/tmp/stash/"), "/opt/stash/"),
    (re.compile(r"/tmp/g[a-z0-9]*/(dbs|logs)/"), "/data/"),
    (re.compile(r"/tmp/g[a-z0-9]*/"), "/data/"),
    (re.compile(r"/tmp/(vllm|torchinductor|tmp)[A-Za-z0-9_.-]*"), "/var/tmp/run"),
    (re.compile(r"/work/[A-Za-z0-9_.-]+/"), "/src/vllm-diag/"),  # the checkout the check ran from
]
FORBIDDEN = (b"/tmp/", b"/work/")


def rewrite(text: str) -> str:
    for pat, rep in REWRITES:
        text = pat.sub(rep, text)
    return text


def export_db(src: Path, dst: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / src.name
        for suffix in ("", "-wal", "-shm"):
            if Path(str(src) + suffix).is_file():
                shutil.copy(str(src) + suffix, str(work) + suffix)
        conn = sqlite3.connect(work, isolation_level=None)
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            tables = [r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")]
            conn.execute("BEGIN")
            for table in tables:
                cols = [r[1] for r in conn.execute(f"pragma table_info({table})")]
                try:
                    rows = conn.execute(f"select rowid, * from {table}").fetchall()
                except sqlite3.OperationalError:  # WITHOUT ROWID tables hold numbers only
                    continue
                for row in rows:
                    changed = {c: rewrite(v) for c, v in zip(cols, row[1:]) if isinstance(v, str) and rewrite(v) != v}
                    if changed:
                        sets = ", ".join(f'"{c}" = ?' for c in changed)
                        conn.execute(f"update {table} set {sets} where rowid = ?", [*changed.values(), row[0]])
            conn.execute("COMMIT")
            conn.execute("PRAGMA journal_mode = DELETE")
            conn.execute("VACUUM")
        finally:
            conn.close()
        data = work.read_bytes()
        bad = [f.decode() for f in FORBIDDEN if f in data]
        if bad:
            raise SystemExit(f"gpu_assets: {src.name} still holds {bad} after the rewrite; extend REWRITES")
        shutil.copy(work, dst)


def main(argv: list[str]) -> int:
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    src, dst, prefix, jobs = Path(argv[0]), Path(argv[1]), argv[2], argv[3:]
    dst.mkdir(parents=True, exist_ok=True)
    for job in jobs:
        db = src / "dbs" / f"{job}.db"
        if not db.is_file():
            print(f"gpu_assets: {db}: no such file", file=sys.stderr)
            return 2
        export_db(db, dst / f"{prefix}{job}.db")
        for log, out in ((src / "logs" / f"{job}.log", f"{prefix}{job}.log"),
                         (src / "logs" / f"{job}.server.log", f"{prefix}{job}.server.log"),
                         (src / "logs" / f"{job}.json", f"{prefix}{job}.json")):  # the run's result: vLLM's objects
            if log.is_file() and log.stat().st_size:
                text = rewrite(log.read_text(errors="replace"))
                if any(f.decode() in text for f in FORBIDDEN):
                    raise SystemExit(f"gpu_assets: {log.name} still holds a machine path; extend REWRITES")
                (dst / out).write_text(text)
        print(f"{dst / (prefix + job)}.db")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

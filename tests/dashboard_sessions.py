"""Real sessions for the dashboard, metrics and exporter tests (no engine needed).

* ``gpu_db(tmp, name)``: a copy of a real vLLM 0.26.0 GPU recording (``assets/gpu/*.db``, or the
  ``gpu/recordings`` folder of the shared checkout beside the repository while they are being
  copied in), opened once for writing so an older schema is migrated;
* ``analyzed_db(path, log)``: ``vllm-diag analyze LOG --db PATH`` of a real crash log;
* ``checked_db(path, command_file, version, gpu)``: ``vllm-diag check --file ... --db PATH``;
* ``fleet_dir(tmp)``: a folder of per-host DBs built from all three kinds (the seed #43626 pre-flight,
  the 0.26.0 GPU crash log, the #39809 bug report, the real test-bed logs, the GPU recordings; the
  recorded 11-vs-12 capture failure diagnosed as the probes do at a failure).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
GPU_DIRS = (REPO / "assets" / "gpu", REPO.parent / "shared" / "gpu" / "recordings")
GPU_RECORDINGS = (
    "nemotronh-pc-ngram3-capture-11v12",  # failed: CUDA-graph capture 11 vs 12
    "qwen3next-serve-ngram3",  # serves: 4 KV groups, 243 step rows
    "nemotronh-serve-tp2",  # serves on two GPUs: TP ranks write the same steps
)
SEED_43626 = REPO / "assets" / "commands" / "seed-43626-dense-draft-hybrid.sh"
GPU_LOG = REPO / "assets" / "logs" / "nemotronh-prefix-caching-ngram-vllm0.26-gpu.log"
SEED_39809_LOG = REPO / "assets" / "logs" / "seed-39809-nemotron-prefix-caching-mtp.log"
REAL_LOGS = REPO / "tests" / "fixtures" / "logs" / "real"


def gpu_source(name: str) -> Path:
    for d in GPU_DIRS:
        p = d / f"{name}.db"
        if p.is_file():
            return p
    pytest.fail(f"GPU recording {name}.db not found in assets/gpu/ (nor in the shared recordings)")


def gpu_db(dest_dir: Path, name: str, dest_name: str | None = None) -> Path:
    from vllm_diag.store import Store

    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / (dest_name or f"{name}.db")
    shutil.copyfile(gpu_source(name), dest)
    Store.open(dest, create=True).close()  # migrate an older schema in the copy
    return dest


def _cli(*argv: str) -> tuple[int, str]:
    from vllm_diag.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = main(list(argv))
    return rc, out.getvalue()


def analyzed_db(db: Path, log: Path) -> Path:
    rc, out = _cli("analyze", str(log), "--db", str(db))
    assert rc in (0, 1), out
    return db


def checked_db(db: Path, command_file: Path, version: str, gpu: str) -> Path:
    rc, out = _cli("check", "--vllm-version", version, "--gpu", gpu, "--db", str(db), "--file", str(command_file))
    assert rc in (0, 1), out
    return db


def fleet_dir(root: Path) -> Path:
    """One DB per "host": pre-flight, post-mortems, GPU recordings."""
    root.mkdir(parents=True, exist_ok=True)
    checked_db(root / "preflight-host.db", SEED_43626, "0.20.2", "RTX PRO 6000")
    analyzed_db(root / "gpu-crash-host.db", GPU_LOG)
    analyzed_db(root / "gpu-crash-host.db", SEED_39809_LOG)
    for log in sorted(REAL_LOGS.glob("*.log")):
        analyzed_db(root / "testbed-logs.db", log)
    for name in GPU_RECORDINGS:
        gpu_db(root, name)
    diagnosed_gpu_failure(root / "nemotronh-pc-ngram3-capture-11v12.db")
    return root


def diagnosed_gpu_failure(db: Path) -> str:
    """Run the rules on the recorded 11-vs-12 capture failure and store the findings, as the probes
    do at a failure now (``vllm_diag.live.diagnose_and_store``); returns the session id."""
    from vllm_diag.live import diagnose_and_store
    from vllm_diag.store import Store

    with Store.open(db, create=True) as st:
        sid = st.resolve_session(None)
        diagnose_and_store(st, sid)
    return sid


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1500,1000"]


def start_browser(download_dir: Path, performance_log: bool = False):
    """Debian's chromium through chromium-driver (selenium), headless, with a fresh profile;
    downloads land in ``download_dir``; ``performance_log`` records DevTools network events."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.fail("Debian's chromium and chromium-driver are needed (apt-get install chromium chromium-driver; "
                    "scripts/setup-env.sh does)")
    download_dir.mkdir(parents=True, exist_ok=True)
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS + [f"--user-data-dir={tempfile.mkdtemp(prefix='vllm-diag-chromium-')}"]:
        opts.add_argument(flag)
    opts.add_experimental_option("prefs", {"download.default_directory": str(download_dir),
                                           "download.prompt_for_download": False})
    if performance_log:
        opts.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.execute_cdp_cmd("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(download_dir)})
    return driver


class DashboardServer:
    """The dashboard of ``roots`` on a free loopback port, served from a thread (``url``; ``close()``)."""

    def __init__(self, roots, token: str | None = None):
        import threading

        from vllm_diag.fleet import Fleet
        from vllm_diag.ui.web.app import create_app, serve
        from vllm_diag.ui.web.data import Sources

        self.fleet = Fleet(roots)
        self.sources = Sources(self.fleet, refresh_s=0.5)
        self.sources.snapshot(force=True)
        self.app = create_app(self.sources, token=token, loopback_only=True)
        self.httpd = serve(self.app, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.fleet.close()

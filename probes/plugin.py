"""The ``vllm.general_plugins`` entry point: ``vllm_diag = "vllm_diag.probes.plugin:register"``.

vLLM calls ``register()`` once in every process it starts (API server / ``LLM`` process,
EngineCore, each worker; the model-registry inspection subprocess too). It is inert unless
``VLLM_DIAG_DB`` is set. Otherwise it:

1. works out which process this is (``role`` api_server / engine_core / worker / main, and
   ``rank``), and leaves the registry-inspection subprocess alone;
2. joins the engine's session: the first process creates the id and exports it as
   ``VLLM_DIAG_SESSION`` so every child (spawned or forked) writes into the same session;
3. starts a :class:`~vllm_diag.probes.recorder.Recorder` (background writer) and records versions, GPU
   facts and the (redacted) command line and environment;
4. installs the hook points this process needs, chosen per vLLM version by ``vllm_diag.probes.adapters``.

Nothing here may break vLLM: every failure logs one line and the plugin steps aside.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import platform
import re
import socket
import sys
import threading
import time
from typing import Any

from vllm_diag.redact import redact_argv, redact_env

ENV_DB = "VLLM_DIAG_DB"
ENV_SESSION = "VLLM_DIAG_SESSION"


_STATE: dict[str, Any] = {"probe": None, "registered": False, "pid": None, "fork_pending": False, "fork_hooks": False}

def detect_process() -> tuple[str | None, int | None]:
    """``(role, rank)`` of this process; role ``None`` means "stay inert here"."""
    name = multiprocessing.current_process().name or ""
    m = re.search(r"(\d+)$", name)
    num = int(m.group(1)) if m else None
    if name.startswith("EngineCore"):
        return "engine_core", num
    if name.startswith(("VllmWorker", "Worker")):
        return "worker", num
    if name.startswith("ApiServer"):
        return "api_server", num
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    main_name = getattr(spec, "name", "") or ""
    argv0 = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if main_name == "vllm.model_executor.models.registry" or sys.argv[0:1] and sys.argv[0].endswith(
        os.path.join("models", "registry.py")
    ):
        return None, None  # vLLM's architecture-inspection subprocess: nothing to record
    if name == "MainProcess":
        if (argv0 == "vllm" and "serve" in sys.argv[1:2]) or main_name.startswith("vllm.entrypoints"):
            return "api_server", None
        return "main", None
    return "other", num


def _in_process_engine() -> bool:
    return os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING", "1").strip().lower() in ("0", "false", "no", "off")


def collect_environment(role: str, vllm_version: str) -> dict[str, Any]:
    from . import gpu

    env: dict[str, Any] = {
        "vllm_version": vllm_version,
        "python_version": platform.python_version(),
        "os": platform.platform(),
        "hostname": socket.gethostname(),
        "argv": redact_argv(list(sys.argv)),
        "env": redact_env(dict(os.environ)),
        "role": role,
    }
    torch = sys.modules.get("torch")
    try:
        if torch is None:
            import torch  # noqa: F811 - vLLM has imported it already in every real process
        env["torch_version"] = str(torch.__version__)
        env["cuda_version"] = torch.version.cuda or "not available"
        env["cuda_available"] = bool(torch.cuda.is_available()) if torch.version.cuda else False
    except Exception:
        env.setdefault("torch_version", "not available")
        env.setdefault("cuda_version", "not available")
    try:
        from vllm.platforms import current_platform

        env["vllm_platform"] = type(current_platform).__name__
        env["device_type"] = getattr(current_platform, "device_type", None)
        # the rules' vocabulary: "cuda", "cpu", "rocm", ... (vllm_diag.live.platform_of)
        from vllm_diag.live import platform_of

        env["platform"] = platform_of(env)
    except Exception:
        pass
    env.update(gpu.gpu_facts())
    return env


def _vllm_version() -> str:
    try:
        import vllm

        return str(getattr(vllm, "__version__", None) or "unknown")
    except Exception:
        try:
            from importlib.metadata import version

            return version("vllm")
        except Exception:
            return "unknown"


def _is_cpu_platform() -> bool:
    try:
        from vllm.platforms import current_platform

        return bool(current_platform.is_cpu())
    except Exception:
        return False


def register() -> None:
    """Entry point. Inert without ``VLLM_DIAG_DB``; never raises."""
    db = os.environ.get(ENV_DB, "").strip()
    if not db or _STATE["registered"]:
        return
    _STATE["registered"] = True
    try:
        _register(db)
    except Exception as exc:  # noqa: BLE001 - a probe must never stop vLLM
        from .recorder import log_once_line

        log_once_line(f"vllm-diag: probes disabled in pid {os.getpid()} ({exc.__class__.__name__}: {exc})")


def _register(db: str) -> None:
    role, rank = detect_process()
    if role is None:
        return
    from vllm_diag.model import ProcessInfo, SessionInfo
    from vllm_diag.store import new_session_id

    from .recorder import Recorder

    db = os.path.abspath(db)
    os.environ[ENV_DB] = db  # children may start in another working directory
    session_id = os.environ.get(ENV_SESSION)
    owner = not session_id
    if owner:
        session_id = new_session_id()
        os.environ[ENV_SESSION] = session_id
    version = _vllm_version()
    now = time.time()
    session = SessionInfo(
        id=session_id,
        kind="engine",
        status="running",
        started_at=now,
        vllm_version=version,
        source=" ".join(redact_argv(list(sys.argv)))[:2000],
        host=socket.gethostname(),
        label=os.environ.get("VLLM_DIAG_LABEL") or None,
    )
    proc = ProcessInfo(
        pid=os.getpid(),
        role=role,
        rank=rank,
        ppid=os.getppid(),
        name=multiprocessing.current_process().name,
        host=session.host,
        started_at=now,
    )
    rec = Recorder(db, session, proc, owner=owner)
    rec.set_items("environment", collect_environment(role, version))

    from .hooks import Probe

    probe = Probe(rec, version, planning_rows=role != "worker")
    _STATE["probe"] = probe
    _install_for_role(probe, role, version)
    if role in ("main", "api_server"):
        _hook_excepthook(probe)
    if role == "api_server":  # vllm_diag_* metrics on vLLM's own /metrics (probes/metrics.py)
        from .metrics import register_collector

        register_collector(db, session_id)
    _STATE["pid"] = os.getpid()
    _install_fork_support()
    rec.flush_soon()


def _install_for_role(probe, role: str, version: str) -> None:
    from . import adapters

    in_process = _in_process_engine()
    frontend = role in ("main", "api_server")
    engine = role == "engine_core" or (frontend and in_process)
    runner = role in ("engine_core", "worker", "other") or (frontend and in_process)
    probe.planning_rows = role != "worker"
    probe.diagnose_on = "engine" if engine else ("config" if frontend else None)
    _wire_diagnosis(probe)
    outcome = adapters.install(version, probe, engine=engine, runner=runner, is_cpu=_is_cpu_platform(), frontend=frontend)
    if outcome:
        probe.rec.set_items("environment", {"probe_hooks": outcome})


def _wire_diagnosis(probe) -> None:
    """The live diagnosis runs on the recorder's writer thread, right after a flush commits."""
    rec = probe.rec

    runs = {"n": 0}

    def on_diagnose(store, reason: str) -> None:
        from vllm_diag.live import diagnose_and_store

        if reason == "frontend-exit":
            # asked when vLLM has stopped the engine's processes, and again at this process's exit
            why = "this process diagnosed the engine already" if runs["n"] else _engine_left_undiagnosed(store, rec.session.id)
            if why is not True:
                store.set_items("environment", rec.session.id, {"live_diagnosis_skipped": why}, pid=rec.pid)
                return
        findings = diagnose_and_store(store, rec.session.id)
        runs["n"] += 1
        store.set_items("environment", rec.session.id, {
            "live_diagnoses": runs["n"], "live_diagnosis_last": reason, "live_findings": len(findings)}, pid=rec.pid)

    rec.on_diagnose = on_diagnose if probe.diagnose_on else None
    rec.diagnose_at_exit = {"engine": True, "config": "frontend"}.get(probe.diagnose_on or "", False)
    if probe.diagnose_on == "engine":
        # import the rules now, while the engine starts: at its stop vLLM gives the EngineCore a few
        # seconds at most (``vllm serve`` none) before it kills it
        threading.Thread(target=_warm_diagnosis, name="vllm-diag-warmup", daemon=True).start()


def _warm_diagnosis() -> None:
    try:
        from vllm_diag import live
        from vllm_diag.postmortem import analyze, reader  # noqa: F401
        from vllm_diag.rules import all_rules

        all_rules()
        import vllm_diag.preflight  # noqa: F401
        import vllm_diag.suggest  # noqa: F401

        del live
    except Exception:  # noqa: BLE001 - a failed warm-up only makes the first diagnosis slower
        pass


def _engine_left_undiagnosed(store, session_id: str) -> bool | str:
    """At the exit of an API-server/LLM process whose engine ran in another process: True when that
    EngineCore has stopped without diagnosing itself at its stop (``vllm serve`` force-kills it right
    after SIGTERM), so this process diagnoses the engine instead -- still once per engine. Otherwise
    the reason not to (recorded as ``live_diagnosis_skipped``)."""
    rows = store.db.execute("select pid, host from processes where session_id = ? and role = 'engine_core'",
                            [session_id]).fetchall()
    if not rows:
        return "no EngineCore was started"  # a rejected config is diagnosed at its failure
    me = socket.gethostname()
    for pid, host in rows:
        done = store.db.execute("select value from environment where session_id = ? and pid = ? and key = "
                                "'live_diagnosis_last'", [session_id, pid]).fetchone()
        if done:
            return f"the EngineCore (pid {pid}) diagnosed the engine (at its {json.loads(done[0])})"
        if host in (None, me) and _alive(pid):
            return f"the EngineCore (pid {pid}) is still running and diagnoses at its stop"
    return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie (exited, not yet reaped by its parent) is not running
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


# ------------------------------------------------------------------------------- fork support
#
# On GPU hosts vLLM starts EngineCore and workers with ``fork`` by default
# (VLLM_WORKER_MULTIPROC_METHOD). A forked child inherits vLLM's ``plugins_loaded`` flag, so
# ``register()`` is not called again there, and it inherits this process's recorder without its
# writer thread. So: right after a fork the child's recorder pauses (``detach_after_fork``); when
# the child then calls ``load_general_plugins()`` (EngineCore.__init__, WorkerWrapperBase.init_worker
# do, by a local import of the module attribute), the wrapper below gives the child its own
# identity (role, rank, pid), installs the hooks its role needs and restarts the writer.


def _install_fork_support() -> None:
    if _STATE["fork_hooks"]:
        return
    _STATE["fork_hooks"] = True
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_after_fork_in_child)
    try:
        import vllm.plugins as vp

        from .adapters.common import wrap_attr

        def factory(orig):
            def load_general_plugins(*args, **kwargs):
                if _STATE["fork_pending"] and os.getpid() != _STATE["pid"]:
                    _STATE["fork_pending"] = False
                    try:
                        _rejoin_after_fork()
                    except Exception as exc:  # noqa: BLE001
                        from .recorder import log_once_line

                        log_once_line(f"vllm-diag: probes disabled in forked pid {os.getpid()} ({exc})")
                return orig(*args, **kwargs)

            return load_general_plugins

        wrap_attr(vp, "load_general_plugins", factory)
    except Exception as exc:  # noqa: BLE001
        from .recorder import log_once_line

        log_once_line(f"vllm-diag: no fork support ({exc.__class__.__name__}: {exc}); forked vLLM processes are not recorded")


def _after_fork_in_child() -> None:
    probe = _STATE["probe"]
    if probe is None:
        return
    try:
        probe.rec.detach_after_fork()
        probe.reset_after_fork()
        _STATE["fork_pending"] = True
    except Exception:
        pass


def _rejoin_after_fork() -> None:
    from vllm_diag.model import ProcessInfo

    probe = _STATE["probe"]
    role, rank = detect_process()
    if probe is None or role is None:
        return
    rec = probe.rec
    rec.restart(
        ProcessInfo(
            pid=os.getpid(),
            role=role,
            rank=rank,
            ppid=os.getppid(),
            name=multiprocessing.current_process().name,
            host=rec.session.host,
            started_at=time.time(),
        )
    )
    _STATE["pid"] = os.getpid()
    rec.set_items("environment", {**collect_environment(role, probe.version), "forked_from": rec.process.ppid})
    _install_for_role(probe, role, probe.version)
    rec.flush_soon()


def _hook_excepthook(probe) -> None:
    """Record an exception that ends the main process (e.g. "Engine core initialization failed")."""
    previous = sys.excepthook

    def excepthook(exc_type, exc, tb):
        try:
            if exc is not None and not isinstance(exc, KeyboardInterrupt):
                # (the steps run in the EngineCore: an EngineDeadError here is an engine that died while serving)
                serving = probe.step_index > 0 or type(exc).__name__ == "EngineDeadError"
                probe._record_error(exc, "step" if serving else "init", [], {})
        except Exception:
            pass
        previous(exc_type, exc, tb)

    sys.excepthook = excepthook


def current_probe():
    """The probe of this process (``None`` when inert); tests and benchmarks use it."""
    return _STATE["probe"]

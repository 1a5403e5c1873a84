"""The ``vllm_diag_*`` metrics on vLLM's own ``/metrics`` (no new port).

``vllm serve`` exposes ``prometheus_client``'s default registry on ``/metrics``
(``vllm/entrypoints/serve/instrumentator/metrics.py``: ``attach_router`` mounts
``make_asgi_app(registry=get_prometheus_registry())``, and ``get_prometheus_registry()`` in
``vllm/v1/metrics/prometheus.py`` returns ``REGISTRY`` unless ``PROMETHEUS_MULTIPROC_DIR`` is set).
The plugin registers :class:`SessionCollector` there in the API-server process. On each scrape it
opens the session's DB read-only (the EngineCore and workers write it from other processes), loads
the record without its steps, counts only the step rows written since the previous scrape
(:func:`vllm_diag.metrics.read_step_tally`) and yields :func:`vllm_diag.metrics.session_families`:
the same numbers ``vllm-diag exporter`` serves from the DB. The findings are the stored ones, or the
front ends' diagnosis on open (:func:`vllm_diag.recorded.diagnose`, without suggestions), run again
only when the recorded state changed.

A scrape never fails because of the probes: any error is logged once and the collector yields
nothing. With several API servers (``--api-server-count > 1``) vLLM sets ``PROMETHEUS_MULTIPROC_DIR``
and serves a per-request registry that only holds multiprocess files; the collector is then not
registered (one log line points to ``vllm-diag exporter``).
"""

from __future__ import annotations

import os
import threading

from vllm_diag import metrics


class SessionCollector:
    def __init__(self, db_path: str, session_id: str):
        self.db_path = db_path
        self.session_id = session_id
        self._tally: metrics.StepTally | None = None
        self._diagnosed: tuple | None = None  # (what the diagnosis read, its findings)
        self._lock = threading.Lock()
        self._warned = False

    def describe(self):
        return metrics.to_prometheus(metrics.declared_families())

    def families(self) -> list[metrics.Family]:
        # what every front end shows (vllm_diag.recorded, not the api: no views here)
        from vllm_diag.recorded import diagnose
        from vllm_diag.store import Store

        with self._lock, Store.open(self.db_path) as store:
            record = store.load(self.session_id, steps=False)
            self._tally = metrics.read_step_tally(store.db, self.session_id, self._tally)
            # the stored findings, or (none stored yet while the engine serves) `vllm-diag diagnose`'s findings of
            # what the probes recorded so far; diagnosed again only when what it reads changed: the session row,
            # the recorded state, the stored findings, and of the steps only the mixed ones the rules read (the
            # first one; with a recorded error, how many) -- plain serving steps never re-run it
            mixed = self._tally.mixed_steps if record.state.errors else min(self._tally.mixed_steps, 1)
            key = (record.session, record.state, record.findings, mixed)
            if self._diagnosed is None or self._diagnosed[0] != key:
                self._diagnosed = (key, diagnose(record, suggestions=False, store=store).findings)
            return metrics.session_families(record, self._tally, findings=self._diagnosed[1])

    def collect(self):
        try:
            fams = self.families()
        except Exception as exc:  # noqa: BLE001 - /metrics of vLLM must keep working
            if not self._warned:
                self._warned = True
                from .recorder import log_once_line

                log_once_line(f"vllm-diag: no vllm_diag_* metrics on /metrics yet ({type(exc).__name__}: {exc})")
            return []
        self._warned = False
        return metrics.to_prometheus(fams)


_REGISTERED: dict[str, SessionCollector] = {}


def register_collector(db_path: str, session_id: str, registry=None) -> SessionCollector | None:
    """Register the session's collector with ``registry`` (default: prometheus_client's REGISTRY,
    the one ``vllm serve`` exposes). Never raises; returns None when not registered."""
    from .recorder import log_once_line

    try:
        if registry is None and os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            log_once_line("vllm-diag: PROMETHEUS_MULTIPROC_DIR is set (several API servers): vllm_diag_* metrics "
                          "are not added to /metrics; serve them with `vllm-diag exporter DB`")
            return None
        if registry is None:
            from prometheus_client import REGISTRY as registry
        key = f"{id(registry)}:{session_id}"
        if key in _REGISTERED:
            return _REGISTERED[key]
        collector = SessionCollector(db_path, session_id)
        registry.register(collector)
        _REGISTERED[key] = collector
        return collector
    except Exception as exc:  # noqa: BLE001
        log_once_line(f"vllm-diag: vllm_diag_* metrics not registered ({type(exc).__name__}: {exc})")
        return None

"""``vllm-diag exporter DB...|DIR [--host 127.0.0.1] [--port N] [--max-sessions N] [--once]``

Serves the ``vllm_diag_*`` metrics (:mod:`vllm_diag.metrics`) of the sessions in the given DBs on
``http://HOST:PORT/metrics`` for Prometheus: for engines started without the probes' ``/metrics``
or for post-mortem sessions. A folder is searched for DBs at every scrape, so DBs that appear later
are served too; each scrape reads only the rows written since the last one. ``--once`` prints the
exposition once and exits (scripts, cron + node-exporter's textfile collector).

Needs ``prometheus_client`` (``pip install 'vllm-diag[web]'``).
"""

from __future__ import annotations

import sys
import time

from ..errors import DiagError

HELP = "Serve the vllm_diag_* Prometheus metrics of the sessions in DBs (files or folders of per-host DBs)."
DEFAULT_PORT = 9470
INSTALL_HINT = "the exporter needs prometheus_client: pip install 'vllm-diag[web]'"


def add_arguments(p) -> None:
    p.add_argument("sources", metavar="DB|DIR", nargs="+", help="vllm-diag databases, or folders of them")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, loopback only)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default: {DEFAULT_PORT}; 0 picks a free one)")
    p.add_argument("--max-sessions", type=int, default=100, metavar="N",
                   help="export the newest N sessions (bounds the 'session' label; default: 100)")
    p.add_argument("--once", action="store_true", help="print the exposition once to stdout and exit")


def _prometheus():
    try:
        import prometheus_client
    except ImportError:
        raise DiagError(INSTALL_HINT) from None
    return prometheus_client


class FleetCollector:
    """A ``prometheus_client`` collector over a :class:`~vllm_diag.fleet.Fleet`."""

    def __init__(self, fleet, max_sessions: int):
        self.fleet = fleet
        self.max_sessions = max_sessions

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        from .. import metrics

        yield from metrics.to_prometheus(self.fleet.metric_families(self.max_sessions))
        problems = GaugeMetricFamily("vllm_diag_exporter_unreadable_dbs",
                                     "Given DB files the exporter cannot read (missing, foreign, newer schema).")
        problems.add_metric([], len(self.fleet.snapshot().problems))
        yield problems


def run(args) -> int:
    prometheus_client = _prometheus()
    from ..fleet import Fleet

    if args.max_sessions < 1:
        raise DiagError("--max-sessions must be at least 1")
    if not 0 <= args.port <= 65535:
        raise DiagError(f"--port {args.port}: not a port number")
    fleet = Fleet(args.sources)
    try:
        snap = fleet.refresh()
        if not snap.rows and len(snap.problems) == len(args.sources) and all(
            p.message == "no such file or folder" for p in snap.problems
        ):
            raise DiagError("; ".join(f"{p.name}: {p.message}" for p in snap.problems))
        for p in snap.problems:
            print(f"vllm-diag: exporter: {p.name}: {p.message}", file=sys.stderr)
        registry = prometheus_client.CollectorRegistry()
        registry.register(FleetCollector(fleet, args.max_sessions))
        if args.once:
            sys.stdout.write(prometheus_client.generate_latest(registry).decode())
            return 0
        try:
            server, _thread = prometheus_client.start_wsgi_server(args.port, args.host, registry)
        except OSError as exc:
            raise DiagError(f"cannot listen on {args.host}:{args.port} ({exc.strerror or exc})") from None
        host, port = server.server_address[:2]
        print(f"vllm-diag exporter: {len(snap.rows)} sessions; serving http://{host}:{port}/metrics (Ctrl-C stops)",
              flush=True)
        try:
            while True:
                time.sleep(3600)
        finally:
            server.shutdown()
    finally:
        fleet.close()

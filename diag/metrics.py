"""The ``vllm_diag_*`` Prometheus metrics of a session, computed from its record (pure, stdlib only).

One definition serves two exporters: the probes' collector inside ``vllm serve`` (its ``/metrics``,
:mod:`vllm_diag.probes.metrics`) and ``vllm-diag exporter DB...|DIR`` (post-mortem sessions, engines
started without the plugin). Both hand a :class:`~vllm_diag.model.SessionRecord` (loaded without its
steps) and a :class:`StepTally` to :func:`session_families`; :func:`to_prometheus` turns the result
into ``prometheus_client`` metric families (imported only there).

Conventions (https://prometheus.io/docs/practices/naming/): every name starts with ``vllm_diag_``,
sizes are in bytes, counts of things that only grow are counters (``_total``), shares are
``_ratio`` in 0..1. Label sets are bounded: ``session`` (one per session served: the engine's own,
or the newest ``--max-sessions`` of the exporter's DBs), ``category``/``severity`` from the fixed
vocabularies of :mod:`vllm_diag.model`, ``group`` (KV-cache group index, a handful), ``spec_type``,
``builder`` and ``buffer`` (vLLM class and tensor names), ``phase`` (init/profile/capture/step/log/other).
Every category x severity pair is exported, zeros included, so ``vllm_diag_findings > 0`` alerts
work without ``absent()``. Nothing secret is exported: no command line, environment or paths other
than the model name vLLM itself exports.

Metric                                   type     labels
---------------------------------------  -------  -------------------------------------------------
vllm_diag_session_info                   gauge=1  session, host, model_name, vllm_version, kind, status, gpu
vllm_diag_findings                       gauge    session, category, severity
vllm_diag_errors_total                   counter  session, phase
vllm_diag_kv_cache_groups                gauge    session
vllm_diag_kv_cache_page_size_bytes       gauge    session, group, spec_type, draft   (page after padding)
vllm_diag_kv_cache_page_padding_bytes    gauge    session, group, spec_type, draft
vllm_diag_kv_cache_block_size_tokens     gauge    session, group, spec_type, draft
vllm_diag_block_table_columns            gauge    session, group
vllm_diag_block_table_rows               gauge    session, group
vllm_diag_state_index_columns            gauge    session, group, builder, buffer
vllm_diag_steps_total                    counter  session   (distinct engine steps recorded)
vllm_diag_mixed_batch_steps_total        counter  session   (steps with decodes and spec decodes together)
vllm_diag_spec_decode_steps_total        counter  session   (steps with at least one spec decode)
vllm_diag_spec_decode_steps_ratio        gauge    session   (spec-decode steps / steps; absent without steps)
vllm_diag_last_step_index                gauge    session
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .model import CATEGORIES, SEVERITIES, Finding, SessionRecord

PREFIX = "vllm_diag_"
ERROR_PHASES = ("init", "profile", "capture", "step", "log", "other")


@dataclass(frozen=True)
class Sample:
    labels: tuple[tuple[str, str], ...]
    value: float

    def label(self, name: str) -> str | None:
        return dict(self.labels).get(name)


@dataclass(frozen=True)
class Family:
    """One metric family. ``name`` is the full exposed name; a counter's ends in ``_total``."""

    name: str
    kind: str  # gauge | counter
    help: str
    label_names: tuple[str, ...]
    samples: tuple[Sample, ...] = ()


@dataclass(frozen=True)
class StepTally:
    """Distinct steps of one session, counted incrementally (see :func:`read_step_tally`).

    ``last_rowid`` and ``watermark`` (the highest step index counted) let the next read look only at
    rows written since: a later row of an already counted step (another TP rank's copy) is skipped.
    """

    steps: int = 0
    mixed_steps: int = 0
    spec_steps: int = 0
    last_step: int | None = None
    last_rowid: int = 0
    watermark: int = -1

    @property
    def spec_ratio(self) -> float | None:
        return self.spec_steps / self.steps if self.steps else None


# One pass in SQLite over the rows after (last_rowid, watermark); the index on session_id holds
# rowid, so the range is read directly: the cost is the number of new rows, not the session's size.
_TALLY_SQL = """
select count(distinct step_index),
       count(distinct case when num_decodes > 0 and num_spec_decodes > 0 then step_index end),
       count(distinct case when num_spec_decodes > 0 then step_index end),
       max(step_index), max(rowid)
from batch_steps where session_id = ? and rowid > ? and step_index > ?
"""


def read_step_tally(db, session_id: str, previous: StepTally | None = None) -> StepTally:
    """``previous`` plus the steps written since it (``db``: a sqlite3 connection or sqlite-utils
    Database of a vllm-diag store). A step is mixed when any row of it (the runner's or a builder's
    own split) holds decodes and spec decodes together."""
    prev = previous or StepTally()
    steps, mixed, spec, last, rowid = db.execute(_TALLY_SQL, [session_id, prev.last_rowid, prev.watermark]).fetchone()
    if not rowid:
        return prev
    return StepTally(
        steps=prev.steps + steps,
        mixed_steps=prev.mixed_steps + mixed,
        spec_steps=prev.spec_steps + spec,
        last_step=max(last, prev.last_step) if prev.last_step is not None else last,
        last_rowid=rowid,
        watermark=max(last, prev.watermark),
    )


def tally_steps(steps, previous: StepTally | None = None) -> StepTally:
    """The same count over in-memory :class:`~vllm_diag.model.BatchStep` objects (records loaded
    with their steps; tests compare both)."""
    prev = previous or StepTally()
    seen: dict[int, list[bool]] = {}
    for s in steps:
        if s.step_index <= prev.watermark:
            continue
        flags = seen.setdefault(s.step_index, [False, False])
        flags[0] |= s.num_decodes > 0 and s.num_spec_decodes > 0
        flags[1] |= s.num_spec_decodes > 0
    if not seen:
        return prev
    last = max(seen)
    return StepTally(
        steps=prev.steps + len(seen),
        mixed_steps=prev.mixed_steps + sum(1 for m, _ in seen.values() if m),
        spec_steps=prev.spec_steps + sum(1 for _, sp in seen.values() if sp),
        last_step=max(last, prev.last_step) if prev.last_step is not None else last,
        last_rowid=prev.last_rowid,
        watermark=max(last, prev.watermark),
    )


def gpu_name(environment: dict[str, Any]) -> str:
    """``"H200"``, ``"2x H200"``, a pre-flight's ``--gpu``, or ``""`` (NVML names, never UUIDs)."""
    gpu = environment.get("gpu")
    if isinstance(gpu, str) and gpu:
        return gpu
    gpus = environment.get("gpus")
    if isinstance(gpus, list):
        names = [str(g.get("name")) for g in gpus if isinstance(g, dict) and g.get("name")]
        if names:
            first = names[0].removeprefix("NVIDIA ")
            return f"{len(names)}x {first}" if len(names) > 1 else first
    return ""


def _labels(**kw: Any) -> tuple[tuple[str, str], ...]:
    return tuple((k, "" if v is None else str(v)) for k, v in kw.items())


@dataclass
class _Builder:
    families: dict[str, Family] = field(default_factory=dict)
    samples: dict[str, list[Sample]] = field(default_factory=dict)

    def add(self, name: str, kind: str, help_: str, label_names: tuple[str, ...]) -> None:
        self.families[name] = Family(PREFIX + name, kind, help_, label_names)
        self.samples[name] = []

    def sample(self, name: str, value: float, **labels: Any) -> None:
        fam = self.families[name]
        assert tuple(labels) == fam.label_names, (name, tuple(labels))
        self.samples[name].append(Sample(_labels(**labels), float(value)))

    def build(self) -> list[Family]:
        return [Family(f.name, f.kind, f.help, f.label_names, tuple(self.samples[k])) for k, f in self.families.items()]


def _first_by(items, key):
    """The first item per key, preferring rows of the serving KV cache over those recorded while
    vLLM profiled with its throwaway cache (``phase == "profile"``, vLLM 0.19+)."""
    out: dict = {}
    for it in sorted(items, key=lambda x: getattr(x, "phase", None) == "profile"):
        out.setdefault(key(it), it)
    return out


def session_families(record: SessionRecord, tally: StepTally | None = None,
                     findings: list[Finding] | None = None) -> list[Family]:
    """The metric families of one session. ``tally`` defaults to counting ``record.state.steps``;
    ``findings`` to ``record.findings``. Rows several processes recorded (TP ranks) count once."""
    return merge_families([_one_session(record, tally, findings)])


def merge_families(per_session: list[list[Family]]) -> list[Family]:
    """Families of several sessions as one list (samples concatenated per name)."""
    if not per_session:
        per_session = [_empty()]
    merged: dict[str, Family] = {}
    for fams in per_session:
        for f in fams:
            cur = merged.get(f.name)
            merged[f.name] = f if cur is None else Family(f.name, f.kind, f.help, f.label_names, cur.samples + f.samples)
    return list(merged.values())


def _declare(b: _Builder) -> None:
    b.add("session_info", "gauge", "A diagnosed vLLM session (always 1); its identity as labels.",
          ("session", "host", "model_name", "vllm_version", "kind", "status", "gpu"))
    b.add("findings", "gauge", "Findings of the session by category and severity (every pair, zeros included).",
          ("session", "category", "severity"))
    b.add("errors_total", "counter", "Exceptions recorded for the session, by phase.", ("session", "phase"))
    b.add("kv_cache_groups", "gauge", "Number of KV-cache groups (main and draft model).", ("session",))
    b.add("kv_cache_page_size_bytes", "gauge", "Page size of a KV-cache group after page-size unification (padded).",
          ("session", "group", "spec_type", "draft"))
    b.add("kv_cache_page_padding_bytes", "gauge", "Bytes of padding in a KV-cache group's page (padded - unpadded).",
          ("session", "group", "spec_type", "draft"))
    b.add("kv_cache_block_size_tokens", "gauge", "Block size of a KV-cache group, in tokens.",
          ("session", "group", "spec_type", "draft"))
    b.add("block_table_columns", "gauge", "Width of a KV-cache group's block table (max blocks per request).",
          ("session", "group"))
    b.add("block_table_rows", "gauge", "Rows of a KV-cache group's block table (max requests).", ("session", "group"))
    b.add("state_index_columns", "gauge",
          "Columns of a metadata builder's state-index buffer (compare with vllm_diag_block_table_columns).",
          ("session", "group", "builder", "buffer"))
    b.add("steps_total", "counter", "Distinct engine steps recorded.", ("session",))
    b.add("mixed_batch_steps_total", "counter", "Steps whose batch held decodes and spec decodes together.",
          ("session",))
    b.add("spec_decode_steps_total", "counter", "Steps with at least one speculative decode.", ("session",))
    b.add("spec_decode_steps_ratio", "gauge", "Share of recorded steps with speculative decodes (0..1).", ("session",))
    b.add("last_step_index", "gauge", "Index of the newest recorded engine step.", ("session",))


def _empty() -> list[Family]:
    b = _Builder()
    _declare(b)
    return b.build()


def declared_families() -> list[Family]:
    """Every family without samples (a collector's ``describe()``)."""
    return _empty()


def _one_session(record: SessionRecord, tally: StepTally | None, findings: list[Finding] | None) -> list[Family]:
    b = _Builder()
    _declare(b)
    info, st = record.session, record.state
    sid = info.id
    model = info.model or st.config.get("model") or ""
    b.sample("session_info", 1, session=sid, host=info.host or "", model_name=model,
             vllm_version=info.vllm_version or st.vllm_version or "", kind=info.kind, status=info.status,
             gpu=gpu_name(st.environment))

    counts = {(c, s): 0 for c in CATEGORIES for s in SEVERITIES}
    for f in record.findings if findings is None else findings:
        counts[(f.category, f.severity)] += 1
    for (cat, sev), n in counts.items():
        b.sample("findings", n, session=sid, category=cat, severity=sev)

    phases = {p: 0 for p in ERROR_PHASES}
    for e in st.errors:
        phase = e.phase if e.phase in phases else "other"
        phases[phase] += 1
    for phase, n in phases.items():
        b.sample("errors_total", n, session=sid, phase=phase)

    groups = _first_by(st.kv_cache_groups, lambda g: (bool(g.is_draft), g.group_index))
    b.sample("kv_cache_groups", len(groups), session=sid)
    for (draft, idx), g in sorted(groups.items()):
        lab = dict(session=sid, group=idx, spec_type=g.spec_type, draft=str(draft).lower())
        page = g.page_size_padded or g.page_size_bytes
        if page is not None:
            b.sample("kv_cache_page_size_bytes", page, **lab)
        if g.page_size_padded is not None and g.page_size_bytes is not None:
            b.sample("kv_cache_page_padding_bytes", max(0, g.page_size_padded - g.page_size_bytes), **lab)
        if g.block_size is not None:
            b.sample("kv_cache_block_size_tokens", g.block_size, **lab)

    for idx, t in sorted(_first_by(st.block_tables, lambda t: t.group_index).items()):
        b.sample("block_table_columns", t.columns, session=sid, group=idx)
        b.sample("block_table_rows", t.rows, session=sid, group=idx)

    bufs = _first_by((x for x in st.builder_buffers if "state_indices" in x.name and x.shape),
                     lambda x: (x.group_index, x.builder, x.name))
    for (_g, _b, _n), x in sorted(bufs.items(), key=lambda kv: (kv[0][0] if kv[0][0] is not None else -1, kv[0][1], kv[0][2])):
        b.sample("state_index_columns", x.shape[1] if len(x.shape) >= 2 else 1, session=sid,
                 group="" if x.group_index is None else x.group_index, builder=x.builder, buffer=x.name)

    t = tally if tally is not None else tally_steps(st.steps)
    b.sample("steps_total", t.steps, session=sid)
    b.sample("mixed_batch_steps_total", t.mixed_steps, session=sid)
    b.sample("spec_decode_steps_total", t.spec_steps, session=sid)
    if t.spec_ratio is not None:
        b.sample("spec_decode_steps_ratio", t.spec_ratio, session=sid)
    if t.last_step is not None:
        b.sample("last_step_index", t.last_step, session=sid)
    return b.build()


def to_prometheus(families: list[Family]):
    """``prometheus_client`` metric families (``GaugeMetricFamily`` / ``CounterMetricFamily``) for
    a custom collector's ``collect()``. Imports prometheus_client (the ``web`` extra, or vLLM's)."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    out = []
    for f in families:
        if f.kind == "counter":
            mf = CounterMetricFamily(f.name.removesuffix("_total"), f.help, labels=list(f.label_names))
        else:
            mf = GaugeMetricFamily(f.name, f.help, labels=list(f.label_names))
        for s in f.samples:
            mf.add_metric([v for _k, v in s.labels], s.value)
        out.append(mf)
    return out


def sample_map(families: list[Family]) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """``{(name, labels): value}`` for tests and tools."""
    return {(f.name, s.labels): s.value for f in families for s in f.samples}

"""Header view: who/what/where of a session -- the facts every output prints first.

``header(record) -> HeaderVM``. Facts come in display order as ``Fact(label, value)``; a fact the
session cannot know is a :class:`~vllm_diag.views.primitives.Missing` with the reason.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..model import EngineState, SessionRecord
from .primitives import Missing, fmt, pairs

LONG_VALUE = 200  # config/environment values longer than this are cut in the details table
FRAME_LIMIT = 6


@dataclass(frozen=True)
class Fact:
    label: str
    value: object  # str | int | Missing


@dataclass(frozen=True)
class FrameVM:
    file: str
    line: int
    function: str
    code: str | None
    log_line: int | None


@dataclass(frozen=True)
class RootErrorVM:
    """The exception that stopped the engine (post-mortem): the root, not a wrapper."""

    exc_type: str
    message: str  # first line
    where: str  # "line 150" / "b.log.gz line 12"
    process: str | None
    frames: tuple[FrameVM, ...]
    last_frame: FrameVM | None
    tail_frames: tuple[FrameVM, ...]  # the last FRAME_LIMIT frames (what a bug report shows)


@dataclass(frozen=True)
class ErrorVM:
    """An exception of the engine state (recorded by probes, predicted, or the log's root)."""

    phase: str
    exc_type: str
    message: str
    location: str | None
    notes: tuple[str, ...]
    numbers: tuple[tuple[str, object], ...]
    process: str | None  # "engine_core pid 3143"


@dataclass(frozen=True)
class ProcessVM:
    pid: int
    role: str
    rank: int | None
    name: str | None


@dataclass(frozen=True)
class HeaderVM:
    session_id: str
    kind: str  # engine | log | check
    status: str
    label: str | None
    started: str  # "2026-11-26 06:40:07 UTC" or "-"
    state_source: str  # recorded | predicted | log
    facts: tuple[Fact, ...]
    environment_table: tuple[Fact, ...]  # the "Your current environment" rows of a vLLM bug report
    command: str | None  # the whole command as the user wrote it (secrets redacted)
    root_error: RootErrorVM | None
    errors: tuple[ErrorVM, ...]
    numbers: tuple[tuple[str, object], ...]  # numbers read out of the log's messages
    startup: tuple[tuple[str, object], ...]  # startup facts read out of the log
    notes: tuple[str, ...]
    processes: tuple[ProcessVM, ...]
    config: tuple[tuple[str, object], ...]  # sorted; shown with --details
    environment: tuple[tuple[str, object], ...]


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts)) if ts else "-"


def _engine_line(config: dict) -> str | Missing:
    if not config:
        return Missing("no engine settings in this session")
    parts = []
    if config.get("block_size") is not None:
        parts.append(f"block {config['block_size']} tokens")
    for key, label in (("max_model_len", "max_model_len"), ("max_num_seqs", "max_num_seqs")):
        if config.get(key) is not None:
            parts.append(f"{label} {config[key]}")
    if "enable_prefix_caching" in config:
        pc = "on" if config.get("enable_prefix_caching") else "off"
        if config.get("mamba_cache_mode"):
            pc += f" (mamba mode {config['mamba_cache_mode']})"
        parts.append(f"prefix caching {pc}")
    k = config.get("num_speculative_tokens")
    if k:
        parts.append(f"spec {config.get('speculative_method') or '?'} k={k}")
    tp, pp = config.get("tensor_parallel_size"), config.get("pipeline_parallel_size")
    if tp or pp:
        parts.append(f"TP={tp or 1} PP={pp or 1}")
    return "; ".join(parts) if parts else Missing("none of the normalised settings is known")


def _kv_plan(st: EngineState) -> str | None:
    groups = _first_pid(st.kv_cache_groups)
    if not groups:
        return None
    kinds: dict[str, int] = {}
    for g in groups:
        kinds[g.spec_type] = kinds.get(g.spec_type, 0) + 1
    pages = sorted({g.page_size_padded or g.page_size_bytes for g in groups if (g.page_size_padded or g.page_size_bytes)})
    tables = sorted({f"{b.rows}x{b.columns}" for b in _first_pid(st.block_tables)})
    text = ", ".join(f"{n} x {t}" for t, n in kinds.items()) + " groups"
    if pages:
        text += "; page " + "/".join(f"{p:,}" for p in pages) + " B"
    if tables:
        text += "; block tables " + ", ".join(tables)
    return text


def _first_pid(rows: list) -> list:
    """Rows of the first process that wrote any (TP workers repeat the same plan)."""
    if not rows:
        return []
    pid = rows[0].pid
    return [r for r in rows if r.pid == pid]


def _proc_label(record: SessionRecord, pid: int | None) -> str | None:
    if pid is None or pid == 0:
        return None
    p = next((p for p in record.processes if p.pid == pid), None)
    if p is None:
        return f"pid {pid}"
    return f"{p.role}{'' if p.rank is None else ' rank ' + str(p.rank)} pid {pid}"


def _location(files: list[dict], line: int | None) -> str:
    if line is None:
        return "line ?"
    if len(files) > 1:
        cur = None
        for info in files:
            if info.get("first_line", 1) <= line:
                cur = info
        if cur is not None:
            return f"{cur['name']} line {line - cur.get('first_line', 1) + 1}"
    return f"line {line}"


def header(record: SessionRecord) -> HeaderVM:
    s, st, t, log = record.session, record.state, record.target, record.log
    facts: list[Fact] = []
    cfg = st.config
    if log is not None:
        facts.append(Fact("log", f"{log.source or s.source or '-'} ({log.total_lines:,} lines"
                          + (f" in {len(log.files)} files" if len(log.files) > 1 else "") + ")"))
    model = s.model or cfg.get("model") or (log.model if log else None)
    arch = s.architecture or cfg.get("architecture") or (log.architecture if log else None)
    model_text = f"{model or '?'} ({arch or '?'}"
    if t is not None and t.model_summary:
        model_text = f"{model or '?'} ({t.model_summary}"
    facts.append(Fact("model", model_text + ")" if model or arch else Missing("the session names no model")))
    if t is not None and t.config_source:
        # a bundled config is named by its folder, not by where the package is installed (outputs and
        # snapshots must not depend on the checkout's or site-packages' path)
        src = "/".join(t.config_source.replace("\\", "/").split("/")[-2:]) if t.bundled_config else t.config_source
        facts.append(Fact("config", src + (" [bundled demo config]" if t.bundled_config else "")))
    version = s.vllm_version or st.vllm_version
    vsrc = t.vllm_version_source if t is not None else None
    if s.kind == "engine" and version:
        vsrc = vsrc or "recorded"
    elif s.kind == "log" and version:
        vsrc = vsrc or "the log"
    vtext = (f"vLLM {version}" + (f" ({vsrc})" if vsrc else "")) if version else \
        f"vLLM {Missing('the log does not say' if s.kind == 'log' else 'not recorded')}"
    facts.append(Fact("target", f"{vtext}; GPU {fmt(_gpu_text(record))}"))
    facts.append(Fact("engine", _engine_line(cfg)))
    plan = _kv_plan(st)
    if plan:
        facts.append(Fact("kv plan", plan))
    elif record.predicted is not None and _kv_plan(record.predicted):
        facts.append(Fact("kv plan", f"{_kv_plan(record.predicted)} (predicted)"))
    if st.environment.get("kv_plan"):
        facts.append(Fact("kv plan", str(st.environment["kv_plan"])))
    command = (t.command if t is not None else None) or (log.command if log else None)
    if command:  # without the comment lines of a command file
        command = "\n".join(line for line in command.splitlines() if not line.lstrip().startswith("#")).strip() or command
    if command:
        one = " ".join(command.replace("\\\n", " ").split())
        facts.append(Fact("command", one[:300] + (" ..." if len(one) > 300 else "")))
    elif s.source and s.kind == "engine":
        facts.append(Fact("command", s.source[:300] + (" ..." if len(s.source) > 300 else "")))

    root = None
    if log is not None and log.root is not None:
        r = log.root
        frames = tuple(FrameVM(f.file, f.line, f.function, f.code, f.log_line) for f in r.frames)
        root = RootErrorVM(exc_type=r.exc_type, message=(r.message.splitlines()[0] if r.message else "")[:400],
                           where=_location(log.files, r.log_line), process=r.process, frames=frames,
                           last_frame=frames[-1] if frames else None, tail_frames=frames[-FRAME_LIMIT:])
    errors = []
    for e in st.errors:
        if e.phase == "log" and root is not None:
            continue  # the root error above is the same exception, with its frames
        errors.append(ErrorVM(phase=e.phase, exc_type=e.exc_type, message=e.message, location=e.location,
                              notes=tuple(e.notes), numbers=pairs(e.numbers), process=_proc_label(record, e.pid)))
    notes = list(record.notes)
    if t is not None and t.gpu_source and s.kind == "check":
        pass  # shown in the GPU fact
    if log is not None and log.skipped_files:
        notes.append("skipped (binary): " + ", ".join(log.skipped_files[:5])
                     + (f" and {len(log.skipped_files) - 5} more" if len(log.skipped_files) > 5 else ""))
    for rf in record.rule_failures:
        notes.append(f"rule {rf.rule} failed and was skipped: {rf.error}")
    teardown = (log.startup or {}).get("errors_after_shutdown") if log is not None else None
    if isinstance(teardown, int) and teardown > 0:
        notes.append(f"{teardown} error(s) after the server was told to stop, no error before: the shutdown's "
                     "teardown (the engine client finding the engine gone), not a failure")
    numbers = tuple((k, v) for k, v in pairs(log.numbers if log else {}) if not isinstance(v, str) or len(v) < 80)
    env = _environment_table(record, version, model, arch)
    return HeaderVM(
        session_id=s.id, kind=s.kind, status=s.status, label=s.label, started=_when(s.started_at), state_source=st.source,
        facts=tuple(facts), environment_table=env, command=command or (s.source if s.kind != "log" else None),
        root_error=root, errors=tuple(errors), numbers=numbers,
        startup=tuple((k, _cut(v)) for k, v in pairs(log.startup if log else {})), notes=tuple(notes),
        processes=tuple(ProcessVM(p.pid, p.role, p.rank, p.name) for p in record.processes),
        config=tuple(sorted(pairs(cfg))), environment=tuple((k, _cut(v)) for k, v in sorted(pairs(st.environment))),
    )


def _cut(value: object) -> object:
    text = fmt(value)
    return value if len(text) <= LONG_VALUE else text[:LONG_VALUE] + f" ... ({len(text):,} chars)"


def _gpu_text(record: SessionRecord) -> str | Missing:
    return _gpu(record)[0]


def _gpu(record: SessionRecord) -> tuple[str | Missing, list | None]:
    """(the GPU as one text, its compute capability) from the target, the log or the recorded NVML facts."""
    t, st, log = record.target, record.state, record.log
    name = t.gpu if t is not None else None
    cc = t.compute_capability if t is not None else None
    count = t.gpu_count if t is not None else None
    if name is None and log is not None and log.gpu_names:
        name = ", ".join(dict.fromkeys(log.gpu_names))
        count = count or log.gpu_count
    if name is None and st.environment.get("gpus"):
        gpus = st.environment["gpus"]
        if isinstance(gpus, list) and gpus and isinstance(gpus[0], dict):
            name = ", ".join(dict.fromkeys(str(g.get("name")) for g in gpus))
            count = count or len(gpus)
            cap = gpus[0].get("compute_capability")
            if cc is None and isinstance(cap, str) and "." in cap:
                cc = [int(x) for x in cap.split(".")[:2] if x.isdigit()]
    if name is None and (t is not None and t.platform == "cpu" or st.environment.get("kv_cache_device") == "CPU"):
        name = "none (CPU backend)"
    if name is None:
        src = t.gpu_source if t is not None and t.gpu_source else (
            "the log names no GPU" if record.session.kind == "log" else "not recorded")
        return Missing(src), cc
    text = name
    if cc:
        text += " (sm_%s)" % "".join(str(x) for x in cc)
    if count and count > 1:
        text += f" x{count}"
    if t is not None and t.gpu_source:
        text += f" ({t.gpu_source})"
    return text, cc


def _environment_table(record: SessionRecord, version, model, arch) -> tuple[Fact, ...]:
    t, log, cfg = record.target, record.log, record.state.config
    args = log.args if log is not None else {}
    gpu, cc = _gpu(record)
    if isinstance(gpu, str) and t is not None and t.gpu_source and gpu.endswith(f" ({t.gpu_source})"):
        gpu = gpu[: -len(f" ({t.gpu_source})")]
    tp = args.get("tensor_parallel_size") or cfg.get("tensor_parallel_size") or 1
    pp = args.get("pipeline_parallel_size") or cfg.get("pipeline_parallel_size") or 1
    return (
        Fact("vLLM version", version or Missing("unknown")),
        Fact("GPU", gpu),
        Fact("Compute capability", ".".join(map(str, cc)) if cc else Missing("unknown")),
        Fact("Tensor / pipeline parallel", f"{tp} / {pp}"),
        Fact("Model", model or Missing("unknown")),
        Fact("Architecture", arch or Missing("unknown")),
        Fact("Python", (log.python_version if log is not None else None) or record.state.environment.get("python_version")
             or Missing("unknown")),
    )

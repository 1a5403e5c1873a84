"""Exceptions out of a stream of cleaned log lines: tracebacks, frames, chained and wrapped errors.

One state machine per process prefix, so interleaved tracebacks of EngineCore and workers stay apart.
Lines without a prefix continue the traceback of the process that printed last. Handles Python 3.13
``~~~^^^`` markers and ``...<N lines>...`` elisions, frames pasted without the ``Traceback`` header,
frames printed after the exception line (reporter edits), multi-line messages (a worker's repr cut
over several lines), chained exceptions, and vLLM's wrappers (``Worker failed with error '…'``,
``Engine core initialization failed``, ``EngineCore encountered an issue``, ``EngineDeadError``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..model import Frame, LogException
from .lines import Line

MAX_EXCEPTIONS = 400
MAX_FRAMES = 200
MAX_MESSAGE = 8_000

_TB_HEAD = re.compile(r"^\s*(?:\|\s*)?(?:\+\s*)?(?:Exception Group )?Traceback \(most recent call last\):?\s*$")
# (a reporter may elide a frame's line number: 'File "x.py", line ..., in f' -- read as line 0, unknown)
_FRAME = re.compile(r'^\s*(?:\|\s*)?File "([^"]+)", line (\d+|\.{2,3}|\u2026|\?{1,3}|N)(?:,\s*in(?:\s+(.+?))?|,)?\s*$')
# IPython's / Jupyter's verbose traceback (notebooks, Colab): "AssertionError      Traceback (most recent call last)",
# then per frame "/path/file.py in func(args)" and its source with an arrow at the line that ran: "--> 1127   code"
_IPY_HEAD = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit)\s{2,}Traceback \(most recent call last\)\s*$")
def _line_no(text: str) -> int:
    return int(text) if text.isdigit() else 0


_IPY_FRAME = re.compile(r"^((?:/|~/|\.\.\./)?[\w.\-]+(?:/[\w.\-]+)*\.py) in ([\w<>.]+(?: line: \d+>)?)\(")
_IPY_ARROW = re.compile(r"^-*-> ?(\d+)\s+(.*)$")
# IPython 8+: "File ~/env/site-packages/vllm/x.py:812, in func(args)" -- the line number is on the frame line
_IPY8_FRAME = re.compile(r"^\s*File ((?:/|~/|\.\.\./|[A-Za-z]:\\)?[\w.\-\\]+(?:[/\\][\w.\-]+)*\.py):(\d+), in ([\w<>.]+)")
# the rest of a frame line hard-wrapped by a reporter: "gdn_attention_core" or "in causal_conv1d_update"
# a frame line hard-wrapped right after the path: 'File "/x/y.py",' + ' line 320, in build'
# (a terminal's fixed-width wrap may also cut after "line", or inside the path: 'File "/x/v1/at' + 'tention/y.py", line 3')
_FRAME_FILE_ONLY = re.compile(r'^\s*(?:\|\s*)?File "([^"]+)(?:",?(?:\s*line)?)?\s*$')
_FRAME_WRAPPED_REST = re.compile(r"^\s*(?:line )?(\d+)(?:,\s*in\s+(\S+))?\s*$")
_FRAME_PATH_REST = re.compile(r'^([\w.\-/]*\.py)", line (\d+)(?:,\s*in\s+(\S+))?\s*$')
_FRAME_TAIL = re.compile(r"^\s*(?:in\s+)?([A-Za-z_<][\w<>.]*)\s*$")
# reporter edits of a frame line: "vllm/x.py:444", "vllm/x.py, in f", "vllm/x.py, line 3, in f" (no File "...")
_FRAME_LOOSE = re.compile(r'^\s*((?:\.\.\./|/|~/)?[\w.\-]+(?:/[\w.\-]+)+\.py)(?::(\d+))?(?:,\s*line\s*(\d+))?'
                          r'(?:,?\s+in\s+([\w<>.]+))?\s*:?\s*$')
_MARKER = re.compile(r"^\s*[~^\s]+$")
# (also a reporter's own elision inside a traceback: "..." or "...   (torch.compile wrapper frames)" on its own line)
# or in brackets: "[...]", "[... model forward frames ...]", "<snip>", "(12 frames omitted)")
_ELISION = re.compile(r"^\s*\.\.\.\s*<\d+ lines>\s*\.\.\.\s*$|^\s*\[Previous line repeated \d+ more times?\]\s*$|"
                      r"^\s*(?:\.\.\.|…)(?:\s+\([^()]{0,80}\))?\s*$|"
                      # (an arrow inside names the calls left out: "[... run_fused_postprocess -> jit.py frames ...]")
                      r"^\s*[\[(<]\s*(?:\.\.\.|…)(?:[^\[\]()<>-]|-(?!>)|->){0,100}[\])>]\s*$|"
                      r"^\s*[\[(<]\s*(?:snip(?:ped)?|\d+ (?:more )?(?:frames?|lines?) (?:omitted|elided|trimmed|removed|snipped))"
                      r"\s*[\])>]\s*$")
_CHAIN = re.compile(
    r"The above exception was the direct cause of the following exception|"
    r"During handling of the above exception, another exception occurred"
)
_EXC_NAME = r"(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*"
# an exception line anywhere: the type name must say it is one
_EXC_STRICT = re.compile(
    r"^\s*(?:\|\s*)?(" + _EXC_NAME + r"(?:Error|Exception|Exit|Interrupt|Iteration|Timeout|Failure|Fault|Warning|NotFound))"
    r"(?::\s?(.*))?\s*$"
)
# right after frames, any dotted name followed by ': msg' or alone on its line is the exception
_EXC_AFTER_FRAMES = re.compile(r"^(?:\|\s*)?(" + _EXC_NAME + r")(?::\s?(.*))?\s*$")
# pydantic's "1 validation error for VllmConfig": the error itself is on the next lines
_PYDANTIC_HEAD = re.compile(r"\d+ validation errors? for \w+")
# pydantic closes each error with "For further information visit https://errors.pydantic.dev/..."; only its next
# error (a field name, "Value error, ...") goes on after that line
_PYDANTIC_NEXT = re.compile(r"[\w.\[\]-]+$|(?:Value error|Assertion failed|Input should)\b|.*\[type=\w+")
# a message that stops on a word that needs more after it: a reporter's or a terminal's wrap cut it there
_OPEN_WORD = re.compile(r"\s(?:but|and|or|of|to|than|with|for|in|at|from|by|the|a|an|is|are|got|expected)\s*$")
# a bare lower-case name: a line of a statement of several lines (exception names are CamelCase)
_LOWER_NAME = re.compile(r"^[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*,?$")
# a traceback's own lines, which never continue a message or stand for a frame's code
# an indented row of columns ("  kubelet  Back-off restarting ...", kubectl's event table): a word, two spaces, more
_TABLE_ROW = re.compile(r"\s+[\w.-]+ {2,}\S")
_TB_TEXT = ("Traceback", "File ", "The above", "During handling")
_PROBE_NOTE = "vllm-diag: "
_WORKER_WRAP = re.compile(r"^Worker failed with error (['\"])(.*?)(?:\1, please check the stack trace above for the root cause\.?)?\s*$", re.S)

WRAPPER_TEXTS = (
    "Engine core initialization failed",
    "EngineCore encountered an issue",
    "WorkerProc failed to start",
    "EngineCore failed to start",
    "See root cause above",
    "please check the stack trace above",
    # the engine's wait on a worker that no longer answers (multiproc_executor.get_response): a worker's own error
    # before it, if any, is why
    "RPC call to ",
)
NOISE_TYPES = {
    "KeyboardInterrupt", "SystemExit", "asyncio.exceptions.CancelledError", "CancelledError", "BrokenPipeError",
    "ConnectionResetError", "EngineDeadError", "vllm.v1.engine.exceptions.EngineDeadError", "GeneratorExit",
    "EngineGenerateError", "ResourceWarning", "UserWarning", "DeprecationWarning", "FutureWarning", "RuntimeWarning",
    # a client (a benchmark, the OpenAI SDK) losing its connection to a server that died: the aftermath, not the cause
    "ServerDisconnectedError", "RemoteProtocolError", "RemoteDisconnected", "APIConnectionError", "ClientPayloadError",
}
ORPHAN_TYPE = "(traceback without an exception line)"
NOISE_MESSAGES = ("Found no NVIDIA driver", "cannot schedule new futures after", "Event loop is closed")


@dataclass
class _State:
    frames: list[Frame] = field(default_factory=list)
    in_tb: bool = False
    awaiting_code: bool = False
    last_exc: LogException | None = None
    cont_lines: int = 0
    chained: bool = False
    last_line: int = 0
    last_line_seen: int = 0  # the line before the current one (a hard-wrapped record continues on the next)
    pending_file: str | None = None  # 'File "<path>",' whose ' line N, in f' was wrapped onto the next line
    ipy_frame: tuple[str, str] | None = None  # IPython's "<file> in <function>(" awaiting its "--> N code" line
    exc_src: str | None = None  # the [file.py:N] of the log record that printed the last exception line
    exc_level: str | None = None  # that record's level (ERROR): a record of another level is the next record
    exc_line_chars: int = 0  # that line's length (a paste hard-wrapped at a column cuts long ones)
    exc_prefixed: bool = False  # that line carried its process's prefix ("(APIServer pid=1) RuntimeError: ...")
    exc_colon_only: bool = False  # the last exception line ended at its colon ("RuntimeError: "): a wrap cut it there


_EXC_WORDS = ("Error", "Exception", "Exit", "Interrupt", "Iteration", "Timeout", "Failure", "Fault", "Warning", "NotFound")


def _unindented_code(text: str, line: Line) -> bool:
    """A frame's source line that a paste lost the indentation of (markdown outside a code block): a
    statement with a call, an index or an assignment, not an exception line or a traceback's own text."""
    if line.level is not None or text.startswith(_TB_TEXT):
        return False
    if _LOWER_NAME.match(text):
        return True
    return ("(" in text or "[" in text or "=" in text) and not _EXC_AFTER_FRAMES.match(text) and not _EXC_STRICT.match(text)


def _maybe_exc(text: str) -> bool:
    head = text[:200]
    return any(w in head for w in _EXC_WORDS)


_RECORD_SRC = re.compile(r"\[([\w.\-/]+\.py:\d+)\]")


def _record_src(line: Line) -> str | None:
    """The ``[file.py:N]`` of a vLLM log record's header (one record's lines share it)."""
    m = _RECORD_SRC.search(line.display[:200]) if "[" in line.display[:200] else None
    return m.group(1) if m else None


def _is_wrapper(exc_type: str, message: str) -> bool:
    if message.startswith("Worker failed with error"):
        return True
    if exc_type.endswith("EngineDeadError"):
        return True
    return any(t in message for t in WRAPPER_TEXTS)


def is_noise(exc: LogException) -> bool:
    short = exc.exc_type.rsplit(".", 1)[-1]
    return exc.exc_type in NOISE_TYPES or short in NOISE_TYPES or any(t in exc.message for t in NOISE_MESSAGES)


def _quote_open(msg: str) -> bool:
    m = re.match(r"Worker failed with error (['\"])", msg)
    if not m:
        return False
    q = m.group(1)
    body = msg[m.end():]
    return q not in body.replace("\\" + q, "")


class TracebackParser:
    """Feed cleaned lines in order; read ``exceptions`` (in order of appearance) at the end."""

    def __init__(self) -> None:
        self.states: dict[str | None, _State] = {}
        self.exceptions: list[LogException] = []
        self.counts: dict[tuple[str, str], int] = {}
        self.chain_of: dict[int, int] = {}  # id(exception) -> id of the exception it was caused by / raised during
        self.dropped = 0
        self._last_proc: str | None = None

    def _state(self, key: str | None) -> _State:
        st = self.states.get(key)
        if st is None:
            if len(self.states) > 256:  # bounded: forget idle processes
                self.states.clear()
            st = self.states[key] = _State()
        return st

    def feed(self, line: Line) -> None:
        text = line.text
        key = line.process
        if key is None and line.level is None and self._last_proc is not None:
            # unprefixed continuation line: belongs to whoever is mid-traceback
            st_prev = self.states.get(self._last_proc)
            if st_prev and (st_prev.in_tb or st_prev.cont_lines) and line.lineno - st_prev.last_line <= 3:
                key = self._last_proc
        st = self._state(key)
        if st.last_line and (line.lineno - st.last_line > 400 or line.lineno < st.last_line):
            st.in_tb = False
            st.frames = []
            st.last_exc = None
            st.cont_lines = 0
        st.last_line_seen = st.last_line
        st.last_line = line.lineno
        self._last_proc = key

        if "Traceback" in text and (_TB_HEAD.match(text) or _IPY_HEAD.match(text)):
            st.in_tb, st.frames, st.awaiting_code, st.cont_lines, st.ipy_frame = True, [], False, 0, None
            return
        if st.in_tb and ".py in " in text:
            m = _IPY_FRAME.match(text)
            if m:
                st.ipy_frame = (m.group(1), m.group(2))
                return
        if st.in_tb and text.lstrip().startswith("File ") and 'File "' not in text:
            m = _IPY8_FRAME.match(text)
            if m:
                if len(st.frames) < MAX_FRAMES:
                    # (IPython names the method with its class, "LLM.__init__"; a traceback names "__init__")
                    st.frames.append(Frame(m.group(1), int(m.group(2)), m.group(3).rsplit(".", 1)[-1], None, line.lineno))
                st.ipy_frame, st.awaiting_code = None, False
                return
        if text[:1] == "-" and st.in_tb and st.ipy_frame is None and st.frames and st.frames[-1].code is None:
            m = _IPY_ARROW.match(text)  # IPython 8's arrow at the line that ran: the frame's code
            if m and int(m.group(1)) == st.frames[-1].line:
                st.frames[-1].code = m.group(2).strip() or None
                return
        if st.ipy_frame is not None and text[:1] == "-":
            m = _IPY_ARROW.match(text)
            if m:
                (path, func), st.ipy_frame = st.ipy_frame, None
                if len(st.frames) < MAX_FRAMES:
                    st.frames.append(Frame(path, int(m.group(1)), func, m.group(2).strip() or None, line.lineno))
                return
        if st.in_tb and st.frames and st.frames[-1].function == "?" and st.frames[-1].code is None and st.awaiting_code:
            t = _FRAME_TAIL.match(text)
            if t and not _EXC_STRICT.match(text.strip()):
                st.frames[-1].function = t.group(1)
                return
        if st.pending_file is not None:  # the rest of a frame line the reporter's wrap cut after the path
            pending, st.pending_file = st.pending_file, None
            w = _FRAME_WRAPPED_REST.match(text)
            if w:
                text = f'File "{pending}", line {w.group(1)}' + (f", in {w.group(2)}" if w.group(2) else "")
            elif (w := _FRAME_PATH_REST.match(text)) is not None:  # the path itself was cut: join without a space
                text = f'File "{pending}{w.group(1)}", line {w.group(2)}' + (f", in {w.group(3)}" if w.group(3) else "")
        elif 'File "' in text and st.in_tb:
            w = _FRAME_FILE_ONLY.match(text)
            if w:
                st.pending_file = w.group(1)
                return
        m = _FRAME.match(text) if 'File "' in text else None
        if m:
            if not st.in_tb:
                if st.last_exc is not None and not st.last_exc.frames and line.lineno - (st.last_exc.log_line or 0) <= 3:
                    # frames pasted after the exception line (reporter edit)
                    st.last_exc.frames.append(Frame(m.group(1), _line_no(m.group(2)), (m.group(3) or "?").strip(), None, line.lineno))
                    st.awaiting_code = True
                    st.cont_lines = 0
                    return
                st.in_tb, st.frames = True, []
            if len(st.frames) < MAX_FRAMES:
                st.frames.append(Frame(m.group(1), _line_no(m.group(2)), (m.group(3) or "?").strip(), None, line.lineno))
            st.awaiting_code = True
            st.cont_lines = 0
            return
        if ".py" in text and 'File "' not in text:
            m = _FRAME_LOOSE.match(text)
            if m and (m.group(2) or m.group(3) or m.group(4)):
                if not st.in_tb:
                    st.in_tb, st.frames = True, []
                if len(st.frames) < MAX_FRAMES:
                    st.frames.append(Frame(m.group(1), int(m.group(2) or m.group(3) or 0), (m.group(4) or "?").strip(),
                                           None, line.lineno))
                st.awaiting_code = True
                st.cont_lines = 0
                return
        if st.awaiting_code and st.in_tb and st.frames and st.frames[-1].code is None and \
                (re.match(r"^(assert|raise|return)\b", text.strip()) or _unindented_code(text.strip(), line)):
            st.frames[-1].code = text.strip()  # the source line of a pasted frame, not indented
            st.awaiting_code = False
            return
        if (("..." in text or "…" in text or "Previous line" in text or "snip" in text or "omitted" in text
             or "elided" in text or "trimmed" in text or "removed" in text) and _ELISION.match(text)) or (
                st.in_tb and text.strip() and _MARKER.match(text)):
            return
        if "above exception" in text and _CHAIN.search(text):
            st.chained = True
            st.in_tb = False
            st.cont_lines = 0
            return
        if st.awaiting_code and text.startswith(" ") and text.strip():
            target = st.frames if st.in_tb else (st.last_exc.frames if st.last_exc else [])
            if target and target[-1].code is None:
                target[-1].code = text.strip()
            st.awaiting_code = False
            return
        st.awaiting_code = False
        stripped = text.strip()
        if st.in_tb:
            m = _EXC_AFTER_FRAMES.match(stripped) or _EXC_STRICT.match(stripped)
            if m and " " not in m.group(1):
                self._emit(st, key, m.group(1), m.group(2) or "", line)
                return
            if not stripped:
                return
            # something else inside a traceback (a log record of another kind): give up on it
            if line.level is not None:
                st.in_tb = False
        m = _EXC_STRICT.match(stripped) if _maybe_exc(stripped) else None
        if m:
            st.frames = []
            self._emit(st, key, m.group(1), m.group(2) or "", line)
            return
        # continuation of the last exception's message
        exc = st.last_exc
        if stripped.startswith("```"):  # a Markdown fence closes the pasted block: no message goes on past it
            st.cont_lines = 0
            return
        # (the vllm-diag probes' note on the exception -- "vllm-diag: recorded in run.db ..." -- that Python prints
        # after its message is not part of it)
        pydantic_done = exc is not None and "errors.pydantic.dev" in exc.message.rsplit("\n", 1)[-1] \
            and _PYDANTIC_HEAD.match(exc.message) is not None and not _PYDANTIC_NEXT.match(stripped)
        if exc is not None and st.cont_lines and stripped and st.cont_lines < 30 \
                and not stripped.startswith(_PROBE_NOTE) and not pydantic_done:
            # (a record of another logger -- "[metrics.py:120] SpecDecoding metrics: ..." after the exception's
            # "[hermes_tool_parser.py:117]" -- is the next record, not the rest of a wrapped one)
            src = _record_src(line)
            # (an INFO access or stats line after an ERROR record's exception is the next record, whatever its header)
            same_level = line.level is None or st.exc_level is None or line.level == st.exc_level
            wrapped_record = (line.level is not None and same_level and line.lineno == st.last_line_seen + 1
                              and not (src is not None and st.exc_src is not None and src != st.exc_src)
                              and exc.message and exc.message.rstrip()[-1:] not in ".!?:]}'\""
                              and not _EXC_STRICT.match(stripped) and not stripped.startswith(("Traceback", "File "))
                              and not any(w in stripped for w in WRAPPER_TEXTS) and not stripped.endswith(":"))
            # the next line of the same log record (same [file.py:N] header): a message of several lines, such as
            # vLLM's assert "Aiter MLA supports num_heads of 4, 8, ...\nProvided 10 number of heads."
            same_record = (not wrapped_record and line.level is not None and line.lineno == st.last_line_seen + 1
                           and st.exc_src is not None and src == st.exc_src
                           and not _EXC_STRICT.match(stripped) and not stripped.startswith(("Traceback", "File ", "The above"))
                           and not any(w in stripped for w in WRAPPER_TEXTS))
            # pydantic's "1 validation error for VllmConfig" holds its error on the next lines, indented by pydantic
            # but not always in a reporter's paste
            body = line.level is None and _PYDANTIC_HEAD.match(exc.message) is not None \
                and not stripped.startswith(_TB_TEXT)
            # a message that stops mid-clause ("max seq len (128000),") goes on, however the paste indented it
            unfinished = (line.level is None or line.lineno == st.last_line_seen + 1) \
                and (exc.message.rstrip()[-1:] in (",", "(") or (st.exc_colon_only and not exc.message)
                     or _OPEN_WORD.search(exc.message[-40:]) is not None) \
                and not _EXC_STRICT.match(stripped) and not stripped.startswith(_TB_TEXT)
            # a paste hard-wrapped at a fixed column: the exception's line ran to the column, and the next line -- no
            # prefix, no traceback text -- is the rest of its message ("ValueError: Hybrid" / "KV cache manager is ...")
            hard_wrapped = (line.level is None and line.process is None and line.lineno == st.last_line_seen + 1
                            and st.exc_line_chars >= 78 and st.cont_lines < 4 and exc.message
                            and exc.message.rstrip()[-1:] not in ".!?:)]}'\""
                            and not _EXC_STRICT.match(stripped) and not stripped.startswith(_TB_TEXT)
                            and not any(w in stripped for w in WRAPPER_TEXTS))
            # (an indented row of columns without the process prefix the exception's own line carries -- a Kubernetes
            # event "  kubelet  Back-off restarting ..." among a container's timestamped lines -- is another source's)
            indented = text[:1] in " \t" and line.level is None \
                and not (line.process is None and st.exc_prefixed and _TABLE_ROW.match(text))
            if _quote_open(exc.message) or indented or wrapped_record or same_record \
                    or body or unfinished or hard_wrapped:
                if len(exc.message) < MAX_MESSAGE:
                    exc.message = ((exc.message + "\n" + stripped) if exc.message else stripped)[:MAX_MESSAGE]
                st.cont_lines += 1
                return
        st.cont_lines = 0

    def flush_orphans(self) -> None:
        """Frames never followed by an exception line (an excerpt that ends inside a traceback, frames
        pasted alone): one exception of type ``ORPHAN_TYPE`` holding them, so their files and functions
        still count as evidence."""
        for key, st in list(self.states.items()):
            if st.in_tb and st.frames:
                exc = LogException(exc_type=ORPHAN_TYPE, message="", frames=st.frames, process=key,
                                   log_line=st.frames[-1].log_line)
                st.frames = []
                st.in_tb = False
                if len(self.exceptions) < MAX_EXCEPTIONS:
                    self.exceptions.append(exc)

    def _emit(self, st: _State, key: str | None, exc_type: str, message: str, line: Line) -> None:
        message = message.strip()[:MAX_MESSAGE]
        exc = LogException(exc_type=exc_type, message=message, frames=st.frames, process=key, log_line=line.lineno)
        exc.wrapped = _is_wrapper(exc_type, message)
        prev = st.last_exc
        if st.chained and prev is not None:
            self.chain_of[id(exc)] = id(prev)
        st.chained = False
        st.frames = []
        st.in_tb = False
        st.last_exc = exc
        st.cont_lines = 1
        st.exc_src = _record_src(line) if line.level is not None else None
        st.exc_level = line.level
        st.exc_line_chars = len(line.display)
        st.exc_prefixed = line.process is not None
        st.exc_colon_only = not message and line.text.rstrip().endswith(":")
        sig = (exc_type, message[:300])
        self.counts[sig] = self.counts.get(sig, 0) + 1
        if len(self.exceptions) >= MAX_EXCEPTIONS:
            # keep the first half and a sliding window of the latest: memory stays flat
            del self.exceptions[MAX_EXCEPTIONS // 2]
            self.dropped += 1
        self.exceptions.append(exc)


def inner_error(exc: LogException) -> tuple[str, str] | None:
    """For ``Worker failed with error '<msg>'`` return (exc type guess, inner message)."""
    m = _WORKER_WRAP.match(exc.message)
    if not m:
        return None
    inner = m.group(2)
    if re.match(r"(['\"])?, please check the stack trace above", inner):
        return None  # an empty error relayed ("Worker failed with error ''"), a later line joined after it
    inner = re.sub(r"\s*\n\s*", " ", inner).strip().rstrip("'\"")
    inner = re.sub(r", please check the stack trace above for the root cause\.?$", "", inner).rstrip("'\"")
    if not inner:
        return None
    mm = re.match(r"^(" + _EXC_NAME + r"(?:Error|Exception)):\s?(.*)$", inner, re.S)
    if mm:
        return mm.group(1), mm.group(2)
    return exc.exc_type, inner


# the fault's own name (not asyncfault.ASYNC, whose widest match -- "CUDA error: an illegal" -- another
# rank's or a Triton launch's message of the same fault does not repeat): what two reports of one fault share
FAULT_NAME = re.compile(r"illegal memory access|misaligned address|illegal instruction|unspecified launch failure|"
                          r"device-side assert(?:ion)? triggered|[Mm]emory access fault|"
                          r"operation not supported on global/shared address space")


def message_key(e: LogException) -> tuple[str, str]:
    """The error as ranks and copies of a traceback print it alike: its type and its message, whitespace folded."""
    return e.exc_type, " ".join(e.message.split())[:300]


def dedupe(excs: list[LogException]) -> list[LogException]:
    """Same type + message printed by several processes (or pasted twice) -> one, the richest."""
    out: dict[tuple, LogException] = {}
    order: list[tuple] = []
    for e in excs:
        sig = message_key(e)
        if e.exc_type == ORPHAN_TYPE:  # frames without an exception line: distinct pieces of an excerpt stay apart
            sig += tuple((f.file.rsplit("/", 1)[-1], f.line) for f in e.frames[-3:])
        cur = out.get(sig)
        if cur is None:
            out[sig] = e
            order.append(sig)
        elif len(e.frames) > len(cur.frames) and not (raised_in_teardown(e) and not raised_in_teardown(cur)):
            out[sig] = e
    return [out[s] for s in order]


# a sticky CUDA error is raised again by every later CUDA call: a copy raised while a process shut down is the
# fault's aftermath, never a fuller copy of the step that met it
_TEARDOWN_FRAME = re.compile(r"^_*(?:shutdown|cleanup)\w*$")


def raised_in_teardown(e: LogException) -> bool:
    return any(_TEARDOWN_FRAME.match(f.function or "") for f in e.frames)

"""Turning one raw log line into (process, level, text).

Handles, in this order: ANSI colour (real ESC bytes and the caret form ``^[[0;36m``), HTML entities
of a log copied from a web page, wrapper prefixes (docker/k8s/CRI timestamps, journald
``Jun 23 18:03:05 host vllm[123]:``, docker compose's ``vllm-1  | ``, ``kubectl logs --prefix``'s
``[pod/vllm-0/vllm]``, SkyPilot's ``(head, rank=0, pid=…)``, glog's ``I1126 10:00:00.123456 4412
pb_stub.cc:412]`` (Triton Inference Server), a reporter's markdown quote ``> ``,
aggregator timestamp+tab, timestamp-only aggregator lines), vLLM process prefixes (``(EngineCore pid=2518)``,
``(Worker_TP0_EP0 pid=…)``, doubled ``(Worker pid=357) (Worker_TP0 pid=357)``, Ray
``(RayWorkerWrapper pid=…, ip=…)``, a lost leading ``(``, pids edited to ``XXXXX``), raw
``[rank0]:`` prefixes, and vLLM's ``LEVEL MM-DD HH:MM:SS [file.py:NNN]`` record header.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

MAX_LINE_CHARS = 16_384  # longer lines are cut: nothing we parse needs more

_ANSI = re.compile(r"(?:\x1b|\^\[)\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][0-9A-B]")
_CTRL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_TS = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
_DOCKER = re.compile(r"^\s*" + _TS + r"(?: (?:stdout|stderr) [FP](?=[ \t]|$))?(?:[ \t]|$)")
_TS_ONLY = re.compile(r"^\s*(?:" + _TS + r"|\d\d:\d\d:\d\d(?:\.\d+)?)\s*$")
# (the month as the host's locale writes it: "Mar", "mar", "fév.", "Mär", "11月")
_JOURNALD = re.compile(r"^(?:[A-Za-z\u00c0-\u017f]{3,4}\.?|\d{1,2}\u6708) [ \d]\d \d\d:\d\d:\d\d \S+ [^\s:\[]+(?:\[\d+\])?: ")
# a launcher's prefix: docker compose's service ("vllm-1  | ", v1's "vllm_1     | "; the replica number is always
# there), `kubectl logs --prefix`'s "[pod/vllm-0/vllm] ", SkyPilot's node in front of vLLM's own prefix ("(head,
# rank=0, pid=7781) ", "(worker1, rank=1, pid=912, ip=10.0.0.2) ": a name, then comma-separated key=value items;
# vLLM's and Ray's own prefixes start "(Name pid=")
_LAUNCHER = re.compile(r"^[A-Za-z0-9][\w.\-]*[-_]\d+\s+\|(?: |$)|^\[pod/[\w.\-]+/[\w.\-]+\] |"
                      r"^\([\w.\-]+(?:, (?:rank|pid|ip|node|host)=[^,()\s]+)+\) ")
# glog's header, as Triton Inference Server's Python backend prints what a vLLM model writes:
# "I1126 10:00:00.123456 4412 pb_stub.cc:412] "
_GLOG = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6}\s+\d+ [\w.\-]+:\d+\] ")
# a reporter's markdown quote ("> ", nested "> > "); the REPL's ">>> " is the line itself
_QUOTE = re.compile(r"^(?:>(?!>) ?)+")
# a log copied from a web page with its HTML entities left in (&quot; &#39; &gt; ...)
_ENTITY = re.compile(r"&(?:[a-zA-Z]{2,6}|#\d{2,4}|#x[0-9a-fA-F]{2,4});")
# what a copy through a chat tool or a word processor changed, back to what vLLM printed
_CHARS = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u2032": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u2033": '"',
    "\u00a0": " ", "\u2007": " ", "\u2009": " ", "\u202f": " ", "\u3000": " ",
    "\u2013": "-", "\u2212": "-",
    "\u200b": None, "\u200c": None, "\u200d": None, "\u2060": None, "\ufeff": None,
})

# "(EngineCore_DP0 pid=1)", "(RayWorkerWrapper pid=1, ip=…)", and vLLM 0.8-0.10's "(VllmWorker rank=2 pid=1)" /
# "(VllmWorker TP0 pid=1)"
# (Ray Serve's replica names hold colons: "(ServeReplica:app:LLMServer:model pid=1)", Ray Data's actors parentheses:
# "(MapWorker(MapBatches(vLLMEngineStageUDF)) pid=4417, ip=10.0.3.17)" -- only with a pid / rank)
_PROC_NAME = (r"VllmWorker TP\d+(?= pid=)|[A-Za-z][\w.\-]*(?::[\w.\-]+)+(?= (?:rank|pid)=)|"
              r"[A-Za-z][\w.\-]*\([\w.\-]+(?:\([\w.\-]+\))?\)(?= (?:rank|pid)=)|[A-Za-z][\w.\-]*")
_PROC_PAREN = re.compile(r"^\((" + _PROC_NAME + r")(?: rank=(\d+))?(?: pid=([^)\s,]*))?(?:, ip=[^)]*)?\)\s?")
# a Ray task or actor without a name: "(pid=88213)", "(pid=4417, ip=10.0.3.17)"
_PROC_ANON = re.compile(r"^\(pid=(\d+)(?:, ip=[^)]*)?\)\s?")
_PROC_NOPAREN = re.compile(r"^([A-Za-z][\w.\-]*)(?: rank=(\d+))? pid=([^)\s,]*)(?:, ip=[^)]*)?\)\s?")
_MIDLINE_RECORD = re.compile(r"\((?:" + _PROC_NAME + r")(?: rank=\d+)? pid=[^)\s]*(?:, ip=[^)]*)?\) "
                             r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) ")
_RANK = re.compile(r"^\[rank(\d+)\]:")
# a name a launcher or a reporter put in front of a vLLM record ("W2 ERROR 12-03 16:53:05 [...]", "EngineCore INFO
# 11-26 ..."): one word, then the record's level and date
_NAME_BEFORE_RECORD = re.compile(r"^([A-Za-z][\w.\-:]{0,39}) (?=(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+\d\d-\d\d\s+\d\d:\d\d:\d\d)")
_LEVEL = re.compile(
    r"^(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+(?:\d\d-\d\d\s+\d\d:\d\d:\d\d(?:[.,]\d+)?\s+)?"
    # (a reporter may elide the line number: "[core.py:..]", "[multiproc_executor.py:…]", "[core.py:xxx]")
    # (or cut it with its colon: "[multiproc_executor.py]")
    r"\[?([\w.\-/]+\.py)(?::(\d+|\.{2,3}|\u2026|[A-Za-z]{1,4}|\?{1,3}))?\]\s?"
)
_UVICORN = re.compile(r"^(INFO|ERROR|WARNING|DEBUG|CRITICAL):\s+")
# (the message may start with a traceback's indentation: "ERROR   File ...", the timestamp and location cut out)
# (or stood in for by an elision: "(Worker_TP0 pid=88512) ERROR ... AssertionError: ...")
# (or with its timestamp but no logger location: "(Worker_TP0 pid=8) ERROR 09-03 17:24:14 torch.OutOfMemoryError: ...")
_BARE_LEVEL = re.compile(r"^(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) (?:\d\d-\d\d\s+\d\d:\d\d:\d\d(?:[.,]\d+)? )?"
                         r"(?:(?:\.{3}|\u2026|\[\.{3}\]) )?(?=\s*\S)")

# process names vLLM uses; anything else in parentheses is kept as text
_KNOWN_PROC = re.compile(
    r"^(?:APIServer|EngineCore|Worker|VllmWorker|RayWorkerWrapper|ApiServer|ProcessPool|VLLM|DPCoordinator|"
    r"EngineCoreProc|MainProcess|LLMEngine|WorkerProc|Ray)\w*$|^VllmWorker TP\d+$"
)


@dataclass
class Line:
    lineno: int
    text: str  # message text, indentation kept (traceback source lines are indented)
    process: str | None = None  # "EngineCore_DP0", "Worker_TP0", "APIServer", "rank0" ...
    level: str | None = None  # INFO / WARNING / ERROR ... when the line is a vLLM log record
    display: str = ""  # the line without colour and wrapper prefixes (for evidence)


# colour codes whose ESC byte was lost in a copy from a terminal or a web page ("[1;36m(Worker_TP1 pid=5)[0;0m ERROR ...");
# only SGR codes (digits and ';' then 'm') at the start of the line or after a space / ')' / another code
_BARE_SGR = re.compile(r"(?:^|(?<=[\s)]|m))\[\d{1,3}(?:;\d{1,3})*m")


def normalise_chars(text: str) -> str:
    """Typographic quotes and dashes, odd spaces and zero-width characters back to ASCII."""
    return text if text.isascii() else text.translate(_CHARS)


def strip_ansi(text: str) -> str:
    if "\x1b" in text or "^[" in text:
        text = _ANSI.sub("", text)
    if "m" in text and "[" in text and _BARE_SGR.search(text):
        text = _BARE_SGR.sub("", text)
    return text


# the key that carries the line in a shipper's JSON envelope: docker's json-file and Fluent Bit ("log"), Vector,
# Datadog and CloudWatch ("message"), Google Cloud Logging ("textPayload"), a Loki export ("line"), structlog and
# python-json-logger's renamed fields ("msg")
_ENVELOPE_KEYS = ("log", "message", "textPayload", "line", "msg")
# what makes a JSON object a log record: a level, a logger, a time or a stream
RECORD_KEYS = ("levelname", "level", "severity", "log.level", "logger", "name", "asctime", "timestamp", "@timestamp",
               "time", "ts", "stream")
# ... or a shipper's envelope around one: its line field, the date, host, service and status columns of an export
_SHIPPER_KEYS = RECORD_KEYS + ("log", "textPayload", "line", "date", "host", "service", "status")


# a structured logger's record (VLLM_LOGGING_CONFIG_PATH with a JSON formatter: python-json-logger, structlog, ECS):
# the message without vLLM's prefix, its level, the logger's file:line and process, and the traceback in a field
_LEVEL_KEYS = ("levelname", "level", "severity", "log.level")
_EXC_KEYS = ("exc_info", "exception", "exc_text", "stack_trace", "error.stack_trace", "stacktrace")
_RECORD_PREFIX = re.compile(r"^\s*(?:\([^)]{1,80}\)\s*)*(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+\d\d-\d\d ")
_FILE_LINE = re.compile(r"^[\w.\-/]+\.py:\d+$")


def envelope_text(obj: object) -> str | None:
    """The text a shipper's decoded JSON record carries, or ``None`` when it is no such record."""
    if not isinstance(obj, dict):
        return None
    text = next((obj[k] for k in _ENVELOPE_KEYS if isinstance(obj.get(k), str)), None)
    if text is None:
        return None
    level = next((obj[k] for k in _LEVEL_KEYS if isinstance(obj.get(k), str)), None)
    exc = next((obj[k] for k in _EXC_KEYS if isinstance(obj.get(k), str) and obj[k].strip()), None)
    if level and not _RECORD_PREFIX.match(text) and (exc or any(k in obj for k in ("file", "logger", "name", "proc"))):
        # rebuilt as vLLM's own record, so the level, the process and the traceback read as they would in a terminal
        where = obj.get("file") if isinstance(obj.get("file"), str) and _FILE_LINE.match(obj["file"]) else None
        proc = obj.get("proc") or obj.get("process_name") or obj.get("processName")
        text = (f"({proc}) " if isinstance(proc, str) and proc.isidentifier() else "") + level.upper() + " " \
            + (f"[{where}] " if where else "") + text
    if exc:
        text = text.rstrip("\r\n") + "\n" + exc
    return text


def _json_log(raw: str) -> str:
    """A log shipper's JSON envelope: ``{"log":"<line>\\n","stream":"stdout","time":…}`` -> the line it carries
    (JSON escapes decoded); anything else unchanged."""
    s = raw.lstrip()
    if not s.startswith("{") or not s.rstrip().endswith("}") or not any(f'"{k}"' in s for k in _ENVELOPE_KEYS):
        return raw
    import json

    try:
        obj = json.loads(s)
    except ValueError:
        return raw
    if isinstance(obj, dict) and "message" in obj and not any(k in obj for k in _SHIPPER_KEYS):
        return raw  # a JSON object with a message that no shipper wrote: an API error body ({"object": "error", ...})
    val = envelope_text(obj)
    return val.rstrip("\r\n") if val is not None else raw


# a row of a log explorer's CSV export (Kibana, Splunk, a Grafana / Loki table): quoted fields, the time first, the
# line last, its own quotes doubled -- `"2026-05-01 10:00:03","(EngineCore pid=9) ERROR ... ""x"" ..."`
_CSV_ROW = re.compile(r'^\s*"[^"]*\d\d:\d\d[^"]*",(?:"(?:[^"]|"")*",)*"((?:[^"]|"")*)"\s*$')


def _csv_row(raw: str) -> str:
    m = _CSV_ROW.match(raw)
    return m.group(1).replace('""', '"') if m else raw


def clean_line(raw: str, lineno: int) -> Line | None:
    """One decoded line -> :class:`Line`; ``None`` for a line that only carries a wrapper timestamp."""
    if len(raw) > MAX_LINE_CHARS:
        raw = raw[:MAX_LINE_CHARS]
    if raw[:1] == "{" or raw.lstrip()[:1] == "{":
        raw = _json_log(raw)
    elif raw[:1] == '"' and '","' in raw:
        raw = _csv_row(raw)
    text = normalise_chars(strip_ansi(raw.rstrip("\r\n")))
    if "\r" in text:  # progress bars rewrite the line; keep the last state
        text = text.rsplit("\r", 1)[-1] or text.replace("\r", "")
    if _CTRL.search(text):  # NULs, bells, backspaces ... (tabs are kept)
        text = _CTRL.sub("", text)
    if _TS_ONLY.match(text):
        return None
    if "&" in text and _ENTITY.search(text):
        text = html.unescape(text)
    # wrapper prefixes (may stack: journald around docker, a quoted compose log ...)
    for _ in range(4):
        m = _DOCKER.match(text) or _JOURNALD.match(text) or _LAUNCHER.match(text) or _QUOTE.match(text) \
            or _GLOG.match(text)
        if not m:
            break
        text = text[m.end():]
        if text.startswith("\t"):
            text = text[1:]
    if text[:1] in "\t " and text.strip():
        # aggregator tab indentation, or a reporter's re-indentation, in front of a record
        stripped = text.lstrip("\t ")
        if (stripped[:1] == "(" and (_PROC_PAREN.match(stripped) or _PROC_ANON.match(stripped))) or stripped[:1] == "[" and _RANK.match(stripped) \
                or _LEVEL.match(stripped):
            text = stripped
        elif text[:1] == "\t":  # an editor's tabs for a traceback's indentation (Python prints spaces)
            body = text.lstrip("\t")
            text = "    " * (len(text) - len(body)) + body
    if " pid=" in text and not text.startswith("("):
        # a progress bar (or other output) without a newline in front of a vLLM record
        m = _MIDLINE_RECORD.search(text)
        if m and m.start() > 0:
            text = text[m.start():]
    display = text
    process = None
    level = None
    for _ in range(4):
        m = _PROC_PAREN.match(text)
        if m and (m.group(3) is not None or _KNOWN_PROC.match(m.group(1))):
            process = m.group(1) + (f"_rank{m.group(2)}" if m.group(2) else "")
            text = text[m.end():]
            continue
        m = _PROC_ANON.match(text)
        if m:
            process = f"pid{m.group(1)}"
            text = text[m.end():]
            continue
        m = _PROC_NOPAREN.match(text)
        if m:
            process = m.group(1) + (f"_rank{m.group(2)}" if m.group(2) else "")
            text = text[m.end():]
            continue
        m = _RANK.match(text)
        if m:
            process = process or f"rank{m.group(1)}"
            text = text[m.end():]
            continue
        m = _NAME_BEFORE_RECORD.match(text) if process is None else None
        if m:
            process = m.group(1)
            text = text[m.end():]
            continue
        break
    m = _LEVEL.match(text)
    if m:
        level = "WARNING" if m.group(1) == "WARN" else m.group(1)
        text = text[m.end():]
    else:
        m = _UVICORN.match(text) if process else None
        if m is None and process:
            # a record whose timestamp and logger location the reporter trimmed: "(EngineCore_DP0 pid=87) ERROR
            # Traceback (most recent call last):" -- behind a process prefix only
            m = _BARE_LEVEL.match(text)
        if m and process:
            level = "WARNING" if m.group(1) == "WARN" else m.group(1)
            text = text[m.end():]
    return Line(lineno=lineno, text=text, process=process, level=level, display=display.strip()[:500])

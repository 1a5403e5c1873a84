"""Undo what copying or relaying a log did to it, before its lines are read.

A terminal or a mail client hard-wraps long lines at its width (every piece but the last exactly that
wide, with no indentation), an editor or a chat tool at the last space before it; some web views
double-space every line; a launcher or log shipper may tag every line it relays (Ray's
``(pid=4012)``, torchrun's ``[default0]:``, srun's ``0:``). vLLM's own lines have none of this, so
each is detected from the text itself and undone only where it is unmistakable: a tag starts most
lines; a wrap width is the length of the longest line, shared by at least three different lines;
double spacing is a blank line after nearly every line. A log shipper's export of JSON records (Datadog,
Loki, Cloud Logging) may carry a whole traceback in one record's message and list the records newest first:
the records are put back in time order and their messages split into lines. (Characters a copy changed, one
line at a time, are :func:`.lines.normalise_chars`'s job.)
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Callable

from .lines import MAX_LINE_CHARS, RECORD_KEYS, envelope_text, strip_ansi

# where a new line of a log starts for sure (also behind srun's rank label "0: "): a continuation of a wrapped
# line is not joined to it
# (a "(" opens a record only as a process prefix -- "(EngineCore_DP0 pid=7)", "(head, rank=0, pid=7781)": a piece of
# a wrap may start with the "(" of a path or a value, "(/workspace/DeepGEMM/csrc/apis/attention.hpp:196): ...")
_LINE_START = re.compile(r"^\s*(?:\d{1,3}: )?(?:\([^()\n]{0,80}\bpid=\d|\[|\d{4}-\d\d-\d\d|[A-Z][a-z]{2} [ \d]\d \d\d:|"
                         r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\b|"
                         r"Traceback \(|File \"|During handling|The above exception)")

MIN_WRAP_WIDTH = 40  # narrower "widths" are short lines that happen to share a length


def wrap_width(lines: list[str]) -> int | None:
    """The width a terminal hard-wrapped these lines at, or ``None`` when they were not wrapped: the longest
    lines' length, or -- a terminal's output pasted inside a report whose own prose runs longer -- the length
    the most lines share when the few longer lines are prose, not log records."""
    width = max((len(line) for line in lines), default=0)
    if width < MIN_WRAP_WIDTH:
        return None
    if _wraps_at(lines, width):
        return width
    shared = Counter(len(line) for line in lines if MIN_WRAP_WIDTH <= len(line) < width).most_common(2)
    for w, n in shared:
        longer = [line for line in lines if len(line) > w]
        if n >= 3 and len(longer) <= 2 and not any(_LINE_START.match(line) for line in longer) and _wraps_at(lines, w):
            return w
    return None


# a field of a tool's aligned output ("        GPU Slowdown Temp                 : 87 C", nvidia-smi -q): every such line
# has the table's width, and none is a piece of a wrap
_ALIGNED_FIELD = re.compile(r"^\s{2,}[A-Za-z][\w .()/+-]*?\s{2,}: \S")
# a rule a tool prints across its output, bare or around a title (`vllm bench serve`'s 50-wide
# "===== Serving Benchmark Result =====" and "-----Speculative Decoding-----"): whole lines, not pieces of a wrap
_RULE_LINE = re.compile(r"^\s*[=\-~*#]{3,}(?:[^=\-~*#]{0,60}[=\-~*#]{3,})?\s*$")
# a markdown table's row, padded to the table's width like every other row: whole, not a wrap's piece
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")


def _wraps_at(lines: list[str], width: int) -> bool:
    at_width = {line for line in lines if len(line) == width and not _ALIGNED_FIELD.match(line)
                and not _RULE_LINE.match(line) and not _TABLE_ROW.match(line)}
    pairs = [(a, b) for a, b in zip(lines, lines[1:]) if a in at_width]
    continued = sum(1 for _, b in pairs if b and not _LINE_START.match(b))
    # a terminal cuts mid-word: most pieces end without the space a word wrap breaks at
    mid_word = sum(1 for a, _ in pairs if not a.endswith(" "))
    if mid_word * 2 < len(pairs):
        return False
    # most pieces of that width go on in a line that starts no new log line (vLLM's fixed-format metrics lines share
    # a length too, but each is followed by the next record)
    if len(at_width) >= 3 and continued * 2 >= len(pairs):
        return True
    # a short excerpt: two pieces of that width, each continued
    return len(at_width) == 2 and width >= 60 and bool(pairs) and continued == len(pairs)


# vLLM's process prefix up to its pid: "(EngineCore_DP0 pid=", "(VllmWorker rank=2 pid=", "(VllmWorker TP0 pid="
_PROC_PID = r"[A-Za-z][\w.:\-]*(?: rank=\d+| TP\d+)? pid="
# where a new record or traceback line starts for sure (a word wrap's piece may start with "(" or "[" of prose)
_RECORD_START = re.compile(r"^\s*(?:\(" + _PROC_PID + r"|\[rank\d+\]|\d{4}-\d\d-\d\d[T ]|"
                           r"[A-Z][a-z]{2} [ \d]\d \d\d:|(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) \d\d-\d\d)")


def _word_piece(line: str, nxt: str) -> bool:
    """A piece of a word wrap: it ends with the space(s) it was broken at (a break inside indentation keeps them
    all), and the next line starts no record."""
    return line.endswith(" ") and line.strip() != "" and bool(nxt.strip()) and not _RECORD_START.match(nxt)


def word_wrapped(lines: list[str]) -> bool:
    """An editor or a chat tool word-wrapped these lines: each piece but the last ends with the space it was broken
    at (long paths without spaces stay longer than the width, so no width is read), and most lines that end with
    a space are such pieces."""
    pieces = sum(1 for a, b in zip(lines, lines[1:]) if _word_piece(a, b))
    spaced = sum(1 for line in lines if line.endswith(" ") and line.strip())
    filled = sum(1 for line in lines if line.strip())
    # a wrap at a chat window's width breaks most of vLLM's long records; a message of several lines that ends each
    # with a space (transformers' "from one of: \n(1) ... , \n(2) ...") is a few lines of a long log
    return pieces >= 3 and pieces * 4 >= spaced * 3 and pieces * 5 >= filled


def _double_spaced(lines: list[str]) -> bool:
    filled = [i for i, line in enumerate(lines) if line.strip()]
    if len(filled) < 6:
        return False
    adjacent = sum(1 for a, b in zip(filled, filled[1:]) if b == a + 1)
    return adjacent * 10 <= len(filled)


# a tag a launcher or a log shipper puts in front of every line it relays: "(pid=4012) " (Ray), "[default0]:"
# (torchrun --tee), "0: " (srun --label), "[vllm] " (a wrapper's tag)
_TAG = re.compile(r"^(?:\([^()\n]{1,60}\)|\[[^\[\]\n]{1,60}\]:?|\d{1,4}:)")
# vLLM's own prefixes (they carry the process) and PyTorch's "[rank0]:" -- never a launcher's tag
_OWN_TAG = re.compile(r"^\((?:" + _PROC_PID + r"|[A-Za-z][\w.\-]* rank=)|^\[rank\d+\]:")
MIN_TAGGED_SHARE = 0.6
_TAG_FIRST = frozenset("([0123456789")


def launcher_tag(lines: list[str]) -> re.Pattern[str] | None:
    """The tag (digits may vary: pids, ranks) that most lines of a relayed log start with, or ``None``; with the
    space after it where the tag is always followed by one (a separator, not the line's own indentation)."""
    counts: dict[str, list[int]] = {}  # tag -> [lines, lines with a space after it]
    filled = 0
    for line in lines:
        if not line.strip():
            continue
        filled += 1
        m = _TAG.match(line) if line[:1] in _TAG_FIRST else None
        if m and not _OWN_TAG.match(line):
            c = counts.setdefault(re.sub(r"\d+", "#", m.group(0)), [0, 0])
            c[0] += 1
            c[1] += line[m.end():m.end() + 1] == " "
    if not counts or filled < 3:
        return None
    key, (n, spaced) = max(counts.items(), key=lambda kv: kv[1][0])
    if n < 3 or n < MIN_TAGGED_SHARE * filled:
        return None
    return re.compile("^" + re.escape(key).replace("\\#", "\\d+") + (" ?" if spaced * 10 >= n * 9 else ""))


# where a shipper's record keeps its time: Datadog ("date"), Elastic / Loki ("@timestamp", "timestamp"),
# docker's json-file and Fluent Bit ("time"), Vector ("ts")
_TIME_KEYS = ("@timestamp", "timestamp", "date", "time", "ts")


def shipped_records(lines: list[str]) -> list[tuple[int, str]] | None:
    """A shipper's JSON export whose records carry several lines each, or list the newest first: ``(index of the
    record's line, carried line)`` in time order, the lines around the records where they were; ``None`` for any
    other text (a one-line-per-record envelope is :func:`.lines.clean_line`'s job)."""
    # a record may come behind a relay's tag ("[pod/vllm-0/vllm] {...}") or in colour
    starts = {}
    relayed = False  # a tag or colour in front of the records: the line cleaner's envelope reading misses them
    for i, line in enumerate(lines):
        if "{" not in line[:100]:
            continue
        if "\x1b" in line or "^[" in line:
            line = strip_ansi(line)
        at = line.find("{")
        if at <= 80 and line.rstrip().endswith("}") and (at == 0 or line[at:at + 2] == '{"'):
            starts[i] = line[at:]
            relayed = relayed or at > len(line) - len(line.lstrip()) or line is not lines[i]
    filled = sum(1 for line in lines if line.strip())
    if len(starts) < 3 or len(starts) * 2 < filled:
        return None
    records = []  # (slot, time, carried text)
    for i, record in starts.items():
        try:
            obj = json.loads(record)
        except ValueError:
            obj = None
        carried = envelope_text(obj)
        when = next((obj[k] for k in _TIME_KEYS if isinstance(obj.get(k), (str, int, float))), None) \
            if isinstance(obj, dict) else None
        records.append((i, when, carried if carried is not None else lines[i]))
    times = [w for _, w, _ in records if w is not None]
    same_kind = times and len(times) == len(records) and len({isinstance(t, str) for t in times}) == 1
    newest_first = bool(same_kind) and sum(a > b for a, b in zip(times, times[1:])) > \
        2 * sum(a < b for a, b in zip(times, times[1:]))
    if not newest_first and not relayed and not any("\n" in text.rstrip("\r\n") for _, _, text in records):
        return None
    ordered = records
    if newest_first:  # back to time order; records of one timestamp keep their order of printing
        ordered = sorted(reversed(records), key=lambda r: r[1])
    texts = iter(text for _, _, text in ordered)
    out: list[tuple[int, str]] = []
    for i, line in enumerate(lines):
        if i not in starts:
            out.append((i, line))
            continue
        out += [(i, piece.rstrip("\r")) for piece in next(texts).rstrip("\r\n").split("\n")]
    return out


# a log line as a value of a pretty-printed JSON document (a log API's response: Datadog, Loki, CloudWatch, Elastic):
# `"message": "(EngineCore pid=64) ERROR ... \n(EngineCore pid=64) ERROR ...  File \"...\", line 3 ...",`
_JSON_VALUE = re.compile(r'^\s*"(?:message|log|line|textPayload|msg|exc_info|exception|stack_trace|stacktrace)"\s*:\s*'
                         r'("(?:[^"\\]|\\.)*")\s*,?\s*$')


def _json_values(lines: list[str]) -> list[tuple[int, str]] | None:
    """The lines a pretty-printed JSON document's log fields carry, each decoded and split at its newlines, the
    document's other lines blanked; None when no field carries a line break or a traceback."""
    values: dict[int, str] = {}
    for i, line in enumerate(lines):
        m = _JSON_VALUE.match(line) if '"' in line[:40] and ":" in line else None
        if m:
            try:
                text = json.loads(m.group(1))
            except ValueError:
                continue
            if isinstance(text, str):
                values[i] = text
    if not any("\n" in t.rstrip("\r\n") or "Traceback" in t for t in values.values()):
        return None
    out: list[tuple[int, str]] = []
    for i, line in enumerate(lines):
        if i in values:
            out += [(i, piece.rstrip("\r")) for piece in values[i].rstrip("\r\n").split("\n")]
        else:
            # the document's own lines (brackets, other fields) would read as the end of an exception message
            out.append((i, "" if _JSON_SYNTAX.match(line) else line))
    return out


_JSON_SYNTAX = re.compile(r'^\s*(?:[\[\]{}]+,?|"[\w.@\-]+"\s*:\s*(?:[\[{]|"(?:[^"\\]|\\.)*"|-?[\d.]+|true|false|null)'
                          r',?)\s*$')


# a structured logger's record (a JSON formatter) kept inside another layer of an export: behind vLLM's process prefix
# ("(APIServer pid=1) {"levelname": ...}"), in a CSV cell with its quotes doubled, in a markdown table's cell, or as a
# JSON string value of a shipper's envelope ("log": "(APIServer pid=1) {\"asctime\": ...}")
_RECORD_AT = re.compile(r'\{\s*"(?:[\w.@\-]+)"\s*:')
_DECODER = json.JSONDecoder()


def _layer(text: str) -> str | None:
    """The text one layer of an export wraps (a CSV row's last cell, a markdown row's record cell, a shipper's JSON
    envelope), or None."""
    t = text.strip()
    if t[:1] == '"' and '","' in t:
        import csv

        try:
            cells = next(csv.reader([t]))
        except (csv.Error, StopIteration):
            return None
        cell = next((c for c in reversed(cells) if "{" in c), None)
        return cell
    if t[:1] == "|" and t.endswith("|") and "{" in t:
        return next((c.strip() for c in reversed(t.strip("|").split(" | ")) if c.strip()[:1] in "({" and "{" in c), None)
    if t[:1] == "{":
        try:
            obj = _DECODER.decode(t)
        except ValueError:
            return None
        return envelope_text(obj)
    return None


def _record_lines(text: str) -> list[str] | None:
    """The lines of a JSON log record embedded in ``text`` (behind a process prefix, inside a CSV / markdown / JSON
    layer), rebuilt as vLLM prints them, its traceback split at its newlines; None when it holds none."""
    for _ in range(4):  # (layers may nest: a CSV cell holding an envelope holding a prefixed record)
        m = _RECORD_AT.search(text)
        if m is None:
            inner = _layer(text)
            if inner is None or inner == text:
                return None
            text = inner
            continue
        prefix = text[:m.start()]
        try:
            obj, _ = _DECODER.raw_decode(text, m.start())
        except ValueError:
            inner = _layer(text)
            if inner is None or inner == text:
                return None
            text = inner
            continue
        if not isinstance(obj, dict) or not any(k in obj for k in RECORD_KEYS):
            return None  # (a JSON object that is no log record: an API error body, a config)
        carried = envelope_text(obj)
        if carried is None:
            return None
        if prefix.strip() and not _OWN_TAG.match(prefix.lstrip()):
            prefix = ""  # (a timestamp or a shipper's label in front: vLLM's own lines carry no such thing)
        if _RECORD_AT.search(carried) and carried.lstrip()[:1] != "{":
            nested = _record_lines(carried)  # an envelope's line that is itself a prefixed record
            if nested is not None:
                return [prefix.lstrip() + line if prefix.strip() and not _OWN_TAG.match(line) else line for line in nested]
        return [prefix.lstrip() + line for line in carried.rstrip("\r\n").split("\n")]
    return None


def records_within(pairs: list[tuple[int, str]]) -> list[tuple[int, str]] | None:
    """``pairs`` with every line that holds an embedded JSON log record replaced by the record's lines; None when no
    line holds one (the common case: a plain terminal log)."""
    out: list[tuple[int, str]] = []
    found = False
    for i, text in pairs:
        lines = _record_lines(text) if '{"' in text or '{""' in text or '{\\"' in text else None
        if lines is None:
            out.append((i, text))
            continue
        found = True
        out += [(i, line.rstrip("\r")) for line in lines]
    return out if found else None


def logical_lines(lines: list[str]) -> list[tuple[int, str]]:
    """``(index of the first physical line, text)`` for each line as vLLM printed it."""
    shipped = shipped_records(lines)
    if shipped is None:
        shipped = _json_values(lines)
    within = records_within(shipped if shipped is not None else list(enumerate(lines)))
    if within is not None:
        shipped = within
    if shipped is None:
        return _logical_lines(lines)
    return [(shipped[k][0], text) for k, text in _logical_lines([text for _, text in shipped])]


def _logical_lines(lines: list[str]) -> list[tuple[int, str]]:
    tag = launcher_tag(lines)
    if tag is not None:
        lines = [tag.sub("", line, count=1) for line in lines]
    if _double_spaced(lines):
        kept: list[tuple[int, str]] = []
        i = 0
        while i < len(lines):
            if lines[i].strip():
                kept.append((i, lines[i]))
                i += 1
                continue
            j = i
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j - i >= 2:  # a blank line of the original, doubled with the rest
                kept.append((i, ""))
            i = j
    else:
        kept = list(enumerate(lines))
    texts = [t for _, t in kept]
    width = wrap_width(texts)
    if width is not None:
        # (a word wrap can pass for a hard wrap where several of its pieces happen to share the longest length)
        words = word_wrapped(texts)
        kept = _join(kept, lambda last, nxt: len(last) == width and bool(nxt) and not _LINE_START.match(nxt)
                     or words and _word_piece(last, nxt))
    elif word_wrapped(texts):
        return _join(kept, _word_piece)
    return _join_exception_pieces(kept)


# an exception line: "ValueError: ...", behind vLLM's prefix or a relay's tag
_EXC_LINE = re.compile(r"(?:^|[\s\]|)])(?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception)\b: \S")


_RECORD_PREFIX = re.compile(r"\(" + _PROC_PID + r"\d+\)|\b(?:ERROR|WARNING|INFO|DEBUG) \d\d-\d\d \d\d:")


def _join_exception_pieces(kept: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """A log whose lines were not all wrapped, with a long exception line word-wrapped after it was relayed (a
    narrow terminal, a chat window): the pieces after the tagged part carry no prefix and the one before ends with
    the space it was broken at. Only exception lines are joined so -- the message is what the diagnosis reads."""
    if not any(t.endswith(" ") and len(t) >= 60 for _, t in kept):
        return kept
    out: list[tuple[int, str]] = []
    k = 0
    while k < len(kept):
        start, text = kept[k]
        k += 1
        m = _EXC_LINE.search(text) if len(text) >= 60 and text.endswith(" ") else None
        # vLLM's logger prefixes every line of a multi-line message: a piece without the record's prefix is a wrap
        # (a message printed bare -- transformers' "from one of: \n(1) ..." -- is several lines of its own)
        if m and _RECORD_PREFIX.search(text[:m.start() + 1]):
            last, size = text, len(text)
            while k < len(kept) and _word_piece(last, kept[k][1]) and not kept[k][1].lstrip().startswith(
                    ("File \"", "Traceback", "During handling", "The above exception", "```", "~~~")) and size < MAX_LINE_CHARS:
                last = kept[k][1]
                text += last
                size += len(last)
                k += 1
        out.append((start, text))
    return out


def _join(kept: list[tuple[int, str]], continues: Callable[[str, str], bool]) -> list[tuple[int, str]]:
    """Each line with the pieces that continue it (``continues(last piece, next line)``); past the reader's line
    limit the rest of the pieces still belong to the line but are not kept, as the reader cuts any longer line."""
    out: list[tuple[int, str]] = []
    k = 0
    while k < len(kept):
        start, text = kept[k]
        pieces, size, last = [text], len(text), text
        k += 1
        while k < len(kept) and continues(last, kept[k][1]):
            last = kept[k][1]
            if size < MAX_LINE_CHARS:
                pieces.append(last)
                size += len(last)
            k += 1
        out.append((start, "".join(pieces)))
    return out

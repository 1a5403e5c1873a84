"""Undo what copying or relaying a log did to it, before its lines are read.

A terminal or a mail client hard-wraps long lines at its width (every piece but the last exactly that
wide, with no indentation); some web views double-space every line; chat tools and word processors
turn quotes typographic and spaces non-breaking, and may leave zero-width characters. A launcher or
log shipper may tag every line it relays (Ray's ``(pid=4012)``, torchrun's ``[default0]:``, srun's
``0:``). vLLM's own lines have none of this, so each is detected from the text itself and undone
only where it is unmistakable: a tag starts most lines; a wrap width is the length of the longest
line, shared by at least three different lines; double spacing is a blank line after nearly every
line.
"""

from __future__ import annotations

import re

# what a character-level copy changed, back to what vLLM printed
_CHARS = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u2032": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u2033": '"',
    "\u00a0": " ", "\u2007": " ", "\u2009": " ", "\u202f": " ", "\u3000": " ",
    "\u2013": "-", "\u2212": "-",
    "\u200b": None, "\u200c": None, "\u200d": None, "\u2060": None, "\ufeff": None,
})

# where a new line of a log starts for sure: a continuation of a wrapped line is not joined to it
_LINE_START = re.compile(r"^\s*(?:\(|\[|\d{4}-\d\d-\d\d|[A-Z][a-z]{2} [ \d]\d \d\d:|"
                         r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\b|"
                         r"Traceback \(|File \"|During handling|The above exception)")

MIN_WRAP_WIDTH = 40  # narrower "widths" are short lines that happen to share a length
MAX_JOINED_CHARS = 16_384  # as lines.MAX_LINE_CHARS: nothing the reader parses needs more


def normalise_chars(text: str) -> str:
    """Typographic quotes and dashes, odd spaces and zero-width characters back to ASCII."""
    return text if text.isascii() else text.translate(_CHARS)


def wrap_width(lines: list[str]) -> int | None:
    """The width a terminal hard-wrapped these lines at, or ``None`` when they were not wrapped."""
    width = 0
    for line in lines:
        if len(line) > width:
            width = len(line)
    if width < MIN_WRAP_WIDTH:
        return None
    at_width = {line for line in lines if len(line) == width}
    pairs = [(a, b) for a, b in zip(lines, lines[1:]) if len(a) == width]
    continued = sum(1 for _, b in pairs if b and not _LINE_START.match(b))
    # a terminal cuts mid-word: most pieces end without the space a word wrap breaks at
    mid_word = sum(1 for a, _ in pairs if not a.endswith(" "))
    if mid_word * 2 < len(pairs):
        return None
    # most pieces of that width go on in a line that starts no new log line (vLLM's fixed-format metrics lines share
    # a length too, but each is followed by the next record)
    if len(at_width) >= 3 and continued * 2 >= len(pairs):
        return width
    # a short excerpt: two pieces of that width, each continued
    if len(at_width) == 2 and width >= 60 and pairs and continued == len(pairs):
        return width
    return None


# where a new record or traceback line starts for sure (a word wrap's piece may start with "(" or "[" of prose)
_RECORD_START = re.compile(r"^\s*(?:\([A-Za-z][\w.:\-]*(?: rank=\d+)? pid=|\[rank\d+\]|\d{4}-\d\d-\d\d[T ]|"
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
_OWN_TAG = re.compile(r"^\((?:[A-Za-z][\w.:\-]*(?: rank=\d+)? pid=|[A-Za-z][\w.\-]* rank=)|^\[rank\d+\]:")
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


def logical_lines(lines: list[str]) -> list[tuple[int, str]]:
    """``(index of the first physical line, text)`` for each line as vLLM printed it."""
    out: list[tuple[int, str]] = []
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
    if width is None:
        return _join_word_pieces(kept) if word_wrapped(texts) else kept
    k = 0
    while k < len(kept):
        start, text = kept[k]
        pieces, size, piece = [text], len(text), len(text)
        k += 1
        while piece == width and k < len(kept) and kept[k][1] and not _LINE_START.match(kept[k][1]):
            piece = len(kept[k][1])
            if size < MAX_JOINED_CHARS:  # the reader cuts longer lines anyway; the rest of the pieces still belong
                pieces.append(kept[k][1])
                size += piece
            k += 1
        out.append((start, "".join(pieces)))
    return out


def _join_word_pieces(kept: list[tuple[int, str]]) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    k = 0
    while k < len(kept):
        start, text = kept[k]
        pieces, size = [text], len(text)
        k += 1
        while k < len(kept) and _word_piece(pieces[-1], kept[k][1]) and size < MAX_JOINED_CHARS:
            pieces.append(kept[k][1])
            size += len(kept[k][1])
            k += 1
        out.append((start, "".join(pieces)))
    return out

"""Undo what copying a log did to it, before its lines are read.

A terminal or a mail client hard-wraps long lines at its width (every piece but the last exactly that
wide, with no indentation); some web views double-space every line; chat tools and word processors
turn quotes typographic and spaces non-breaking, and may leave zero-width characters. vLLM's own
lines have none of this, so each is detected from the text itself and undone only where it is
unmistakable: a wrap width is the length of the longest line, shared by at least three different
lines; double spacing is a blank line after nearly every line.
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
    if len(at_width) >= 3:
        return width
    # a short excerpt: two pieces of that width, each continued by a line that starts no new log line
    follows = [b for a, b in zip(lines, lines[1:]) if len(a) == width]
    if len(at_width) == 2 and width >= 60 and all(b and not _LINE_START.match(b) for b in follows):
        return width
    return None


def _double_spaced(lines: list[str]) -> bool:
    filled = [i for i, line in enumerate(lines) if line.strip()]
    if len(filled) < 6:
        return False
    adjacent = sum(1 for a, b in zip(filled, filled[1:]) if b == a + 1)
    return adjacent * 10 <= len(filled)


def logical_lines(lines: list[str]) -> list[tuple[int, str]]:
    """``(index of the first physical line, text)`` for each line as vLLM printed it."""
    out: list[tuple[int, str]] = []
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
    width = wrap_width([t for _, t in kept])
    if width is None:
        return kept
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

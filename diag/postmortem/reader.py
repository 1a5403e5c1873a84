"""Streaming input: files, folders, stdin, .gz -> cleaned lines -> :class:`FactCollector`.

Small inputs (< ``FULL_PARSE_BYTES``) are parsed line by line. Larger ones are read in binary chunks;
a few byte anchors (``bytes.find``, C speed) locate candidate regions, and only windows of lines around
the hits are decoded and parsed: a traceback header opens a long forward window, an engine launch line
(``vLLM server version``/``Initializing a V1 LLM engine``) opens the startup window, an error line
takes a few lines of context before and after. Lines before a hit come from the tail of the previous
chunk, so memory stays at a few chunks whatever the file size. Metrics lines (prefix-cache hit rate)
are read in place without decoding a window.
"""

from __future__ import annotations

import gzip
import io
import os
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from ..errors import DiagError
from ..model import LogFacts
from .extract import FactCollector
from .lines import clean_line

FULL_PARSE_BYTES = 4 << 20
HEAD_LINES = 2000  # always parse the first lines of a large file in full
CHUNK = 2 << 20
BACK_BYTES = 256 << 10
MAX_LINE_BYTES = 1 << 20  # a longer "line" is cut into pieces of this size
MAX_FILES = 10_000

ANCHORS = (b"rror", b"Traceback", b"ssert", b"xception", b"ersion", b"Watchdog", b"vllm serve")
HIT_RATE = b"Prefix cache hit rate: "
# (back lines, forward lines) per anchor
WINDOWS = {
    b"rror": (60, 40),
    b"Traceback": (3, 400),
    b"ssert": (30, 40),
    b"xception": (30, 40),
    b"ersion": (3, 12),
    b"Watchdog": (5, 20),
    b"vllm serve": (2, 60),
}
LAUNCH_MARKERS = (b"server version", b"Initializing a V1 LLM engine", b"version ")
LAUNCH_WINDOW = 6000


class InputError(DiagError):
    """The input cannot be read as a log."""


def _looks_binary(head: bytes) -> bool:
    if not head:
        return False
    sample = head[:8192]
    if sample.startswith((b"\x7fELF", b"PK\x03\x04", b"SQLite format 3", b"\x89PNG", b"%PDF", b"\xfd7zXZ", b"BZh")):
        return True
    nul = sample.count(b"\x00")
    if nul > len(sample) // 100:
        return True
    ctrl = sum(1 for b in sample if b < 9 or 13 < b < 27 or 27 < b < 32)
    return ctrl > len(sample) // 10


class _Decoder:
    """Decode one line of bytes the way logs need: UTF-8 with replacement, never raising."""

    @staticmethod
    def line(b: bytes) -> str:
        return b.decode("utf-8", "replace")


class Scanner:
    def __init__(self, collector: FactCollector) -> None:
        self.c = collector
        self.line_base = 0  # lines of earlier files (folder input)
        self.bytes_read = 0

    # ---------------------------------------------------------------- public
    def scan_stream(self, stream: BinaryIO, name: str) -> int:
        """Scan one stream; returns the number of lines it had."""
        self.c.sources.append((self.line_base + 1, name))
        magic = _read(stream, 2)
        stream = _Prefixed(magic, stream)
        if magic == b"\x1f\x8b":
            stream = gzip.GzipFile(fileobj=stream, mode="rb")  # type: ignore[assignment]
        first = _read(stream, FULL_PARSE_BYTES + 1)
        if _looks_binary(first[:65536]):
            raise InputError(f"{name}: looks like a binary file, not a text log")
        if len(first) <= FULL_PARSE_BYTES:
            self.bytes_read += len(first)
            return self._full(first)
        return self._chunked(stream, first)

    # ---------------------------------------------------------------- full parse
    def _feed_bytes_lines(self, data: bytes, first_lineno: int) -> int:
        n = 0
        feed = self.c.feed
        for n, raw in enumerate(data.split(b"\n"), start=0):
            if len(raw) > MAX_LINE_BYTES:
                raw = raw[:MAX_LINE_BYTES]
            line = clean_line(raw.decode("utf-8", "replace"), first_lineno + n)
            if line is not None:
                feed(line)
        return n + 1

    def _full(self, data: bytes) -> int:
        if data.endswith(b"\n"):
            data = data[:-1]
        if not data:
            return 0
        n = self._feed_bytes_lines(data, self.line_base + 1)
        self.line_base += n
        return n

    # ---------------------------------------------------------------- chunked scan
    def _chunked(self, stream: BinaryIO, first: bytes) -> int:
        carry = first
        tail = b""  # complete lines before the current buffer's new part (already counted)
        tail_lines = 0
        line_at_new = self.line_base + 1  # line number of the first line after the tail
        parsed_until = self.line_base  # last line number handed to the collector
        force = HEAD_LINES  # lines to parse in full from the start of the next new region
        eof = False
        while not eof:
            chunk = _read(stream, CHUNK)
            if not chunk:
                eof = True
                data = carry
                if not data:
                    break
                if not data.endswith(b"\n"):
                    data += b"\n"
                complete, carry = data, b""
            else:
                data = carry + chunk
                cut = data.rfind(b"\n")
                if cut < 0:
                    if len(data) >= MAX_LINE_BYTES:
                        complete, carry = data[:MAX_LINE_BYTES] + b"\n", b""  # cut a giant line
                    else:
                        carry = data
                        continue
                else:
                    complete, carry = data[: cut + 1], data[cut + 1 :]
                if len(carry) > MAX_LINE_BYTES:  # a giant unterminated line: keep its head only
                    carry = carry[:MAX_LINE_BYTES]
            self.bytes_read += len(complete)
            buf = tail + complete
            new_start = len(tail)
            ranges, force = self._ranges(buf, new_start, force)
            # line number of the buffer's first line
            buf_first_line = line_at_new - tail_lines
            known_pos, known_line = 0, buf_first_line
            for start, end in ranges:
                known_line += buf.count(b"\n", known_pos, start)
                known_pos = start
                first_no = known_line
                if first_no + buf.count(b"\n", start, end) - 1 <= parsed_until:
                    continue
                seg = buf[start:end]
                if first_no <= parsed_until:  # skip lines already parsed
                    skip = parsed_until - first_no + 1
                    pos = 0
                    for _ in range(skip):
                        pos = seg.find(b"\n", pos) + 1
                    seg = seg[pos:]
                    first_no = parsed_until + 1
                if seg.endswith(b"\n"):
                    seg = seg[:-1]
                n = self._feed_bytes_lines(seg, first_no)
                parsed_until = first_no + n - 1
            self._hit_rates(buf, new_start, line_at_new)
            new_lines = complete.count(b"\n")
            line_at_new += new_lines
            # keep the tail for the next chunk's back context
            if len(complete) > BACK_BYTES:
                cut = complete.find(b"\n", len(complete) - BACK_BYTES) + 1
                tail = complete[cut:]
            else:
                tail = (tail + complete)[-BACK_BYTES:]
                nl = tail.find(b"\n") + 1 if len(tail) == BACK_BYTES else 0
                tail = tail[nl:]
            tail_lines = tail.count(b"\n")
        total = line_at_new - 1 - self.line_base
        self.line_base = line_at_new - 1
        return total

    def _ranges(self, buf: bytes, new_start: int, force: int) -> tuple[list[tuple[int, int]], int]:
        """Byte ranges (line-aligned) to parse in ``buf``, and lines still forced into the next chunk."""
        spans: list[tuple[int, int, int]] = []  # (hit pos, back, fwd)
        n = len(buf)
        if force > 0:
            spans.append((new_start, 0, force))
        for anchor in ANCHORS:
            pos = buf.find(anchor, new_start)
            if pos < 0:
                continue
            back, fwd = WINDOWS[anchor]
            count = 0
            while pos >= 0:
                if anchor == b"ersion":
                    ls = buf.rfind(b"\n", 0, pos) + 1
                    le = buf.find(b"\n", pos)
                    line = buf[ls: le if le >= 0 else n]
                    if any(m in line for m in LAUNCH_MARKERS) and (b"vLLM" in line or b"\xe2\x96\x88" in line or b"LLM engine" in line):
                        spans.append((pos, 3, LAUNCH_WINDOW))
                    else:
                        spans.append((pos, back, fwd))
                else:
                    spans.append((pos, back, fwd))
                count += 1
                # skip past this line: one hit per line per anchor
                nl = buf.find(b"\n", pos)
                if nl < 0:
                    break
                pos = buf.find(anchor, nl)
        if not spans:
            return [], 0
        spans.sort()
        ranges: list[tuple[int, int]] = []
        carry_force = 0
        cur_s = cur_e = -1
        for pos, back, fwd in spans:
            if pos < cur_e:  # inside the current range: extend forward only when needed
                e, left = _forward(buf, pos, fwd)
                if e > cur_e:
                    cur_e = e
                carry_force = max(carry_force, left) if e >= n else carry_force
                continue
            s = _backward(buf, pos, back)
            e, left = _forward(buf, pos, fwd)
            if e >= n:
                carry_force = max(carry_force, left)
            if cur_e >= 0 and s <= cur_e:
                cur_e = max(cur_e, e)
            else:
                if cur_e >= 0:
                    ranges.append((cur_s, cur_e))
                cur_s, cur_e = s, e
        if cur_e >= 0:
            ranges.append((cur_s, cur_e))
        return ranges, carry_force

    def _hit_rates(self, buf: bytes, new_start: int, line_at_new: int) -> None:
        pos = buf.find(HIT_RATE, new_start)
        last = -1
        fast = self.c.fast_hit_rate
        while pos >= 0:
            vstart = pos + len(HIT_RATE)
            if buf.startswith(b"GPU: ", vstart):
                vstart += 5
            pct = buf.find(b"%", vstart, vstart + 12)
            if pct > vstart:
                try:
                    value = float(buf[vstart:pct])
                except ValueError:
                    value = None
                if value is not None:
                    self.c.hit_rate_count += 1
                    self.c.hit_rate_max = max(self.c.hit_rate_max, value)
                    self.c.facts.startup["prefix_cache_hit_rate"] = value
                    last = pos
            nl = buf.find(b"\n", pos)
            if nl < 0:
                break
            pos = buf.find(HIT_RATE, nl)
        if last >= 0:
            ls = buf.rfind(b"\n", 0, last) + 1
            le = buf.find(b"\n", last)
            lineno = line_at_new + buf.count(b"\n", new_start, ls)
            text = buf[ls: le if le >= 0 else len(buf)].decode("utf-8", "replace")
            line = clean_line(text, lineno)
            self.c.facts.lines["prefix_cache_hit_rate"] = (lineno, (line.display if line else text)[:500])
            del fast


def _backward(buf: bytes, pos: int, lines: int) -> int:
    s = buf.rfind(b"\n", 0, pos) + 1
    for _ in range(lines):
        if s <= 0:
            return 0
        s = buf.rfind(b"\n", 0, s - 1) + 1
    return s


def _forward(buf: bytes, pos: int, lines: int) -> tuple[int, int]:
    """End offset after ``lines`` more lines past the hit's line, and how many lines were missing."""
    e = buf.find(b"\n", pos)
    if e < 0:
        return len(buf), lines
    e += 1
    for i in range(lines):
        nxt = buf.find(b"\n", e)
        if nxt < 0:
            return len(buf), lines - i
        e = nxt + 1
    return e, 0


class _Prefixed(io.RawIOBase):
    """``prefix`` then the rest of ``stream`` (lets us sniff the gzip magic of stdin)."""

    def __init__(self, prefix: bytes, stream: BinaryIO):
        self.prefix = prefix
        self.stream = stream

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        if self.prefix:
            if n is None or n < 0:
                out, self.prefix = self.prefix + self.stream.read(), b""
                return out
            out, self.prefix = self.prefix[:n], self.prefix[n:]
            return out
        return self.stream.read(n)

    def readinto(self, b) -> int:
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)


def _read(stream: BinaryIO, n: int) -> bytes:
    out = []
    got = 0
    # gzip: read1 returns what one decompression step gives, so a truncated .gz loses only its tail
    read = stream.read1 if isinstance(stream, gzip.GzipFile) else stream.read
    while got < n:
        try:
            b = read(n - got)
        except (EOFError, zlib.error, gzip.BadGzipFile, OSError) as exc:
            if out:
                break  # truncated .gz: keep what came out
            raise InputError(f"cannot decompress the input ({exc})") from None
        if not b:
            break
        out.append(b)
        got += len(b)
    return b"".join(out)


# ------------------------------------------------------------------------------------------------
# inputs
# ------------------------------------------------------------------------------------------------


def _open(path: Path) -> BinaryIO:
    try:
        fh = path.open("rb")
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return fh


def iter_inputs(path: str) -> Iterator[tuple[str, BinaryIO]]:
    """(display name, binary stream) for a file, ``-`` (stdin), or each file of a folder."""
    if path == "-":
        yield "<stdin>", sys.stdin.buffer
        return
    p = Path(path)
    if not p.exists():
        raise InputError(f"{path}: no such file or directory")
    if p.is_dir():
        files = sorted(f for f in p.rglob("*") if f.is_file() and not f.name.startswith("."))
        if not files:
            raise InputError(f"{path}: the folder holds no files")
        for f in files[:MAX_FILES]:
            fh = _open(f)
            try:
                yield str(f.relative_to(p)), fh
            finally:
                fh.close()
        return
    fh = _open(p)
    try:
        yield p.name, fh
    finally:
        fh.close()


def read_facts(path: str) -> tuple[LogFacts, dict]:
    """Read ``path`` (file, folder, ``-``; gzip detected by content). Returns (facts, info) where
    info has ``files`` (name, first line, lines) and ``bytes``, ``skipped`` (binary files in a folder)."""
    c = FactCollector()
    sc = Scanner(c)
    files: list[dict] = []
    skipped: list[str] = []
    is_dir = path != "-" and Path(path).is_dir()
    for name, stream in iter_inputs(path):
        start = sc.line_base + 1
        try:
            n = sc.scan_stream(stream, name)
        except InputError:
            if is_dir:
                skipped.append(name)
                continue
            raise
        files.append({"name": name, "first_line": start, "lines": n})
    if sc.bytes_read == 0:
        if skipped:
            raise InputError(f"{path}: no text logs in the folder ({len(skipped)} binary files skipped)")
        raise InputError(f"{path}: empty input, nothing to analyze")
    facts = c.finish()
    return facts, {"files": files, "bytes": sc.bytes_read, "skipped": skipped, "collector": c}


def facts_from_bytes(data: bytes, name: str = "<text>") -> LogFacts:
    c = FactCollector()
    sc = Scanner(c)
    sc.scan_stream(io.BytesIO(data), name)
    return c.finish()


def facts_from_text(text: str) -> LogFacts:
    return facts_from_bytes(text.encode("utf-8", "surrogatepass"), "<text>")


def file_size(path: str) -> int | None:
    try:
        return os.path.getsize(path)
    except OSError:
        return None

"""Streaming input: files, folders, stdin, .gz -> cleaned lines -> :class:`FactCollector`.

Small inputs (< ``FULL_PARSE_BYTES``, i.e. anything a person pastes) are parsed line by line. Larger ones
(server logs of any size) are read in binary chunks into one reusable buffer; a byte anchor
(``bytes.find``, C speed) locates the ERROR records, and only windows of lines around them are decoded
and parsed (an ERROR record that opens a traceback grows its window to the whole traceback). The head of
the file (engine start: version, command, non-default args, startup facts) and its end (what killed the
process) are always parsed in full. Lines before a hit come from the tail of the previous chunk, so
memory stays at a few chunks whatever the file size. Prefix-cache metrics lines are sampled in place
(first and last of each chunk) without decoding windows. Gzip is detected by its magic bytes (files and
stdin); a truncated .gz yields what it holds.
"""

from __future__ import annotations

import gzip
import io
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from ..errors import DiagError
from ..model import LogFacts
from .extract import FactCollector
from .lines import clean_line
from .paste import logical_lines

FULL_PARSE_BYTES = 2 << 20
HEAD_LINES = 2000  # always parse the first lines of a large file in full
CHUNK = 8 << 20
BACK_BYTES = 512 << 10  # back context for windows; also the end of the file that is always parsed
MAX_LINE_BYTES = 1 << 20  # a longer "line" is cut into pieces of this size
MAX_FILES = 10_000

# Large logs are vLLM's own output: exceptions are logged as ERROR records or printed after a
# ``Traceback (most recent call last):`` header right after an ERROR line (uvicorn, logger.exception):
# an ERROR window that holds a traceback header grows to the whole traceback. The head of the file
# (engine start: version, command, non-default args, startup facts) and its end (what killed the
# process: an uncaught exception, a C++ abort such as the NCCL watchdog's ``terminate called after
# throwing``, the engine start before a start-up failure) are always parsed in full. One needle = one
# C-speed pass, plus one newline count.
ANCHORS = (b"ERROR",)
TB_NEEDLE = b"most recent call last"
HIT_RATE = b"Prefix cache hit rate: "
MAX_HITS_PER_CHUNK = 4000
TB_WINDOW = 400  # lines after an ERROR record that opens a traceback
# (back lines, forward lines) per anchor
WINDOWS = {
    b"ERROR": (60, 40),
}


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
    if ctrl > len(sample) // 10:
        return True
    # random or compressed bytes: control bytes plus a run of invalid UTF-8 (a GBK or Latin-1 report has the latter
    # but no control bytes)
    text = sample.decode("utf-8", "replace")
    return ctrl > len(sample) // 33 and text.count("\ufffd") > len(text) // 5


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
        self.c.count_hit_rates = False  # the scanner counts every metrics line itself
        try:
            return self._chunked(stream, first)
        finally:
            self.c.count_hit_rates = True

    # ---------------------------------------------------------------- full parse
    def _feed_bytes_lines(self, data: bytes, first_lineno: int) -> int:
        feed = self.c.feed
        texts = [raw[:MAX_LINE_BYTES].decode("utf-8", "replace").rstrip("\r") for raw in data.split(b"\n")]
        for offset, text in logical_lines(texts):  # hard wraps and double spacing of a copy undone
            line = clean_line(text, first_lineno + offset)
            if line is not None:
                feed(line)
        return len(texts)

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
        """Scan a large stream. One reusable buffer holds ``[tail | new data]``: the tail is the end of
        the data already scanned (back context for windows, and the end of the file at EOF); new data is
        read into the buffer in place (``readinto``), so no per-chunk allocation or copy of the chunk."""
        buf = bytearray(first)
        keep = 0  # bytes at the front already scanned (the tail), all complete lines
        tail_lines = 0
        line_at_new = self.line_base + 1  # line number of the first line after the tail
        parsed_until = self.line_base  # last line number handed to the collector
        force = HEAD_LINES  # lines to parse in full from the start of the next new region
        parsed_ivs: list[tuple[int, int]] = []  # line intervals already parsed (within the tail)
        end = len(buf)
        eof = False
        reader = _Filler(stream)
        while True:
            if not eof:
                # make room and read the next chunk behind what is in the buffer
                want = end + CHUNK
                if len(buf) < want:
                    buf.extend(bytes(want - len(buf)))
                got = reader.fill(buf, end, want)
                if got == 0:
                    eof = True
                end += got
            if end <= keep:
                break
            cut = buf.rfind(b"\n", keep, end)
            if cut < 0:
                if eof or end - keep >= MAX_LINE_BYTES:
                    # last line without newline, or a giant line: treat what we have as one line
                    if len(buf) <= end:
                        buf.append(10)
                    else:
                        buf[end] = 10
                    cut = end
                    end += 1
                    if not eof:
                        # drop the rest of the giant line as it arrives: resync at its next newline
                        reader.skip_to_newline = True
                else:
                    continue
            elif eof and cut < end - 1:
                if len(buf) <= end:
                    buf.append(10)
                else:
                    buf[end] = 10
                end += 1
                cut = end - 1
            stop = cut + 1  # [keep, stop) are new complete lines; [stop, end) is a partial line
            self.bytes_read += stop - keep
            ranges, force = self._ranges(buf, keep, stop, force)
            buf_first_line = line_at_new - tail_lines
            known_pos, known_line = 0, buf_first_line
            for r_start, r_end in ranges:
                known_line += buf.count(b"\n", known_pos, r_start)
                known_pos = r_start
                first_no = known_line
                if first_no + buf.count(b"\n", r_start, r_end) - 1 <= parsed_until:
                    continue
                seg = bytes(buf[r_start:r_end])
                if first_no <= parsed_until:  # skip lines already parsed
                    pos = 0
                    for _ in range(parsed_until - first_no + 1):
                        pos = seg.find(b"\n", pos) + 1
                    seg = seg[pos:]
                    first_no = parsed_until + 1
                if seg.endswith(b"\n"):
                    seg = seg[:-1]
                n = self._feed_bytes_lines(seg, first_no)
                parsed_until = first_no + n - 1
                parsed_ivs.append((first_no, parsed_until))
            new_lines = buf.count(b"\n", keep, stop)
            self._hit_rates(buf, keep, stop, line_at_new + new_lines)
            line_at_new += new_lines
            # the new tail: the last BACK_BYTES of complete lines
            ts = max(0, stop - BACK_BYTES)
            if ts > 0:
                ts = buf.find(b"\n", ts - 1, stop) + 1 or stop
            tail_lines = buf.count(b"\n", ts, stop)
            tail_first = line_at_new - tail_lines
            while parsed_ivs and parsed_ivs[0][1] < tail_first:  # only the tail's intervals matter later
                parsed_ivs.pop(0)
            partial = end - stop
            buf[0 : stop - ts + partial] = buf[ts:end]
            keep = stop - ts
            end = keep + partial
            if eof and partial == 0:
                break
        # a crash log ends with the crash: the last lines are always parsed in full (those that no
        # window parsed yet; they reach the collector after later lines, which it tolerates)
        if keep:
            first_no = line_at_new - tail_lines
            lines = bytes(buf[:keep]).split(b"\n")
            if lines and lines[-1] == b"":
                lines.pop()
            parsed = [iv for iv in parsed_ivs if iv[1] >= first_no]
            k = 0
            run: list[bytes] = []
            run_start = first_no
            for i, raw in enumerate(lines):
                no = first_no + i
                while k < len(parsed) and parsed[k][1] < no:
                    k += 1
                done = k < len(parsed) and parsed[k][0] <= no <= parsed[k][1]
                if done:
                    if run:
                        self._feed_bytes_lines(b"\n".join(run), run_start)
                        run = []
                    continue
                if not run:
                    run_start = no
                run.append(raw)
            if run:
                self._feed_bytes_lines(b"\n".join(run), run_start)
        total = line_at_new - 1 - self.line_base
        self.line_base = line_at_new - 1
        return total

    def _ranges(self, buf: bytearray, new_start: int, stop: int, force: int) -> tuple[list[tuple[int, int]], int]:
        """Byte ranges (line-aligned) to parse in ``buf[:stop]``, and lines still forced into the next chunk."""
        spans: list[tuple[int, int, int]] = []  # (hit pos, back, fwd)
        if force > 0:
            spans.append((new_start, 0, force))
        for anchor in ANCHORS:
            pos = buf.find(anchor, new_start, stop)
            if pos < 0:
                continue
            back, fwd = WINDOWS[anchor]
            hits: list[int] = []
            while pos >= 0:
                hits.append(pos)
                nl = buf.find(b"\n", pos, stop)  # one hit per line per anchor
                if nl < 0:
                    break
                pos = buf.find(anchor, nl, stop)
            if len(hits) > MAX_HITS_PER_CHUNK:  # a log that is all errors: keep both ends of the chunk
                half = MAX_HITS_PER_CHUNK // 2
                hits = hits[:half] + hits[-half:]
            spans.extend((h, back, fwd) for h in hits)
        if not spans:
            return [], 0
        spans.sort()
        ranges: list[tuple[int, int]] = []
        carry_force = 0
        cur_s = cur_e = -1
        for pos, back, fwd in spans:
            if pos < cur_e:  # inside the current range: extend forward only by what is missing
                missing = fwd - buf.count(b"\n", pos, cur_e) + 1
                if missing > 0 and cur_e < stop:
                    e, left = _forward(buf, cur_e - 1, missing, stop)
                    cur_e = e
                    if e >= stop:
                        carry_force = max(carry_force, left)
                elif missing > 0:
                    carry_force = max(carry_force, missing)
                continue
            s = _backward(buf, pos, back)
            e, left = _forward(buf, pos, fwd, stop)
            if fwd < TB_WINDOW and buf.find(TB_NEEDLE, pos, e) >= 0:  # a traceback follows: take all of it
                e, left = _forward(buf, pos, TB_WINDOW, stop)
            if e >= stop:
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

    def _hit_rates(self, buf: bytearray, new_start: int, stop: int, line_after: int) -> None:
        """Prefix-cache metrics in a large log: the first and the last metrics line of each chunk are read
        (a chunk spans minutes of serving), which is enough to tell "stuck at 0 %" from "hits" without a
        pass over every line. ``line_after`` is the line number just past ``buf[:stop]``."""
        first = buf.find(HIT_RATE, new_start, stop)
        if first < 0:
            return
        last = buf.rfind(HIT_RATE, new_start, stop)
        for pos in (first, last) if last != first else (first,):
            value = _rate_at(buf, pos)
            if value is None:
                continue
            self.c.count_hit_rate(value)
        ls = buf.rfind(b"\n", 0, last) + 1
        le = buf.find(b"\n", last, stop)
        lineno = line_after - buf.count(b"\n", ls, stop)
        text = bytes(buf[ls: le if le >= 0 else stop]).decode("utf-8", "replace")
        line = clean_line(text, lineno)
        self.c.facts.lines["prefix_cache_hit_rate"] = (lineno, (line.display if line else text)[:500])


class _Filler:
    """``readinto`` a stream until a slice of the buffer is full or the stream ends; a truncated gzip
    ends the stream (what came out is kept); after a giant line, the rest of it is skipped."""

    def __init__(self, stream: BinaryIO):
        self.stream = stream
        self.gz = isinstance(stream, gzip.GzipFile)
        self.done = False
        self.skip_to_newline = False

    def fill(self, buf: bytearray, start: int, stop: int) -> int:
        if self.done:
            return 0
        got = 0
        with memoryview(buf) as mv:
            while start + got < stop:
                try:
                    if self.gz:
                        n = self.stream.readinto1(mv[start + got : stop])  # type: ignore[attr-defined]
                    else:
                        n = self.stream.readinto(mv[start + got : stop])  # type: ignore[attr-defined]
                except (EOFError, zlib.error, gzip.BadGzipFile, OSError):
                    self.done = True
                    break
                if not n:
                    self.done = True
                    break
                if self.skip_to_newline:
                    nl = buf.find(b"\n", start + got, start + got + n)
                    if nl < 0:
                        continue  # drop this piece of the giant line
                    # keep from the newline on
                    keep = start + got + n - nl - 1
                    buf[start + got : start + got + keep] = buf[nl + 1 : start + got + n]
                    n = keep
                    self.skip_to_newline = False
                got += n
        return got


def _rate_at(buf: bytes, pos: int) -> float | None:
    vstart = pos + len(HIT_RATE)
    if buf.startswith(b"GPU: ", vstart):
        vstart += 5
    pct = buf.find(b"%", vstart, vstart + 12)
    if pct <= vstart:
        return None
    try:
        return float(buf[vstart:pct])
    except ValueError:
        return None


def _backward(buf: bytearray, pos: int, lines: int) -> int:
    s = buf.rfind(b"\n", 0, pos) + 1
    for _ in range(lines):
        if s <= 0:
            return 0
        s = buf.rfind(b"\n", 0, s - 1) + 1
    return s


def _forward(buf: bytearray, pos: int, lines: int, stop: int) -> tuple[int, int]:
    """End offset after ``lines`` more lines past the hit's line (within ``buf[:stop]``), and how many
    lines were missing."""
    e = buf.find(b"\n", pos, stop)
    if e < 0:
        return stop, lines
    e += 1
    for i in range(lines):
        nxt = buf.find(b"\n", e, stop)
        if nxt < 0:
            return stop, lines - i
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
        if not self.prefix and hasattr(self.stream, "readinto"):
            return self.stream.readinto(b) or 0
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

"""A tiny, safe reader for the Python-literal text vLLM prints in its logs.

vLLM logs ``non-default args: {'model': 'x', 'enable_prefix_caching': True, ...}`` (a dict repr) and
``Initializing a V1 LLM engine (v0.19.0) with config: model='x', speculative_config=SpeculativeConfig(...),
tensor_parallel_size=4, ...`` (a ``key=value`` list). Nothing here evaluates anything: a small
recursive-descent reader understands strings, numbers, True/False/None, dicts, lists, tuples and sets;
anything else (``torch.bfloat16``, ``<CompilationMode.NONE: 0>``, ``SpeculativeConfig(...)``) comes back
as its text, with balanced brackets. Malformed input raises :class:`LiteralError`, never anything else.
"""

from __future__ import annotations

import re

from typing import Any

MAX_DEPTH = 40
_OPEN = {"(": ")", "[": "]", "{": "}", "<": ">"}


class LiteralError(ValueError):
    pass


class _Reader:
    def __init__(self, text: str, pos: int = 0):
        self.t = text
        self.i = pos
        self.n = len(text)
        self.cut = False  # the text ended after an item's comma: the containers read so far stand

    def ws(self) -> None:
        while self.i < self.n and self.t[self.i] in " \t\r\n":
            self.i += 1

    def peek(self) -> str:
        return self.t[self.i] if self.i < self.n else ""

    def elision(self) -> bool:
        """A reporter's ``...`` (or ``…``) standing for items cut from a pasted repr: skipped with its comma."""
        self.ws()
        for tok in ("[...]", "[\u2026]", "...", "\u2026"):  # ("[...]": the reporter's bracketed elision)
            if self.t.startswith(tok, self.i):
                self.i += len(tok)
                self.ws()
                if self.peek() == ",":
                    self.i += 1
                return True
        return False

    def value(self, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise LiteralError("nested too deeply")
        self.ws()
        c = self.peek()
        if not c:
            raise LiteralError("unexpected end of text")
        if c == "{":
            return self._dict_or_set(depth)
        if c == "[":
            return self._seq("]", depth)
        if c == "(":
            items = self._seq(")", depth)
            return items
        if c in "'\"":
            return self._string()
        if c in "bru" and self.i + 1 < self.n and self.t[self.i + 1] in "'\"":
            self.i += 1
            return self._string(raw=c == "r")
        return self._atom(depth)

    def _string(self, raw: bool = False) -> str:
        q = self.t[self.i]
        triple = self.t.startswith(q * 3, self.i)
        end_tok = q * 3 if triple else q
        self.i += 3 if triple else 1
        out: list[str] = []
        while self.i < self.n:
            if self.t.startswith(end_tok, self.i):
                self.i += len(end_tok)
                return "".join(out)
            c = self.t[self.i]
            if c == "\\" and self.i + 1 < self.n:
                nxt = self.t[self.i + 1]
                if raw:
                    out.append(c + nxt)
                else:
                    out.append({"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "0": "\0"}.get(nxt, "\\" + nxt))
                self.i += 2
                continue
            if c == "\n" and not triple:
                raise LiteralError("newline in string")
            out.append(c)
            self.i += 1
        raise LiteralError("unterminated string")

    def _seq(self, close: str, depth: int) -> list[Any]:
        self.i += 1
        items: list[Any] = []
        while True:
            self.ws()
            if self.peek() == close:
                self.i += 1
                return items
            items.append(self.value(depth + 1))
            self.ws()
            c = self.peek()
            if c == ",":
                self.i += 1
                while self.elision():
                    pass
                self.ws()
                if not self.peek():  # cut after an item
                    self.cut = True
                    return items
            elif c == close:
                self.i += 1
                return items
            elif not c and self.cut:
                return items
            else:
                raise LiteralError(f"expected ',' or {close!r} at {self.i}")

    def _dict_or_set(self, depth: int) -> Any:
        self.i += 1
        while self.elision():  # {..., "cudagraph_mode": [2, 1], ...}: the reporter cut the first items
            pass
        self.ws()
        if self.peek() == "}":
            self.i += 1
            return {}
        first = self.value(depth + 1)
        self.ws()
        if self.peek() != ":":  # a set: return as a sorted-ish list
            items = [first]
            while True:
                self.ws()
                c = self.peek()
                if c == "}":
                    self.i += 1
                    return items
                if c != ",":
                    raise LiteralError("bad set")
                self.i += 1
                self.ws()
                if self.peek() == "}":
                    self.i += 1
                    return items
                items.append(self.value(depth + 1))
        out: dict[str, Any] = {}
        key = first
        while True:
            self.ws()
            if self.peek() != ":":
                raise LiteralError(f"expected ':' at {self.i}")
            self.i += 1
            out[str(key)] = self.value(depth + 1)
            self.ws()
            c = self.peek()
            if c == "}":
                self.i += 1
                return out
            if not c and self.cut:  # an inner container was cut
                return out
            if c != ",":
                raise LiteralError(f"expected ',' or '}}' at {self.i}")
            self.i += 1
            while self.elision():  # {"mode": 3, ..., "max_cudagraph_capture_size": 384, ...}
                pass
            self.ws()
            if self.peek() == "}":
                self.i += 1
                return out
            if not self.peek():  # the line was cut after an item ("..., 'max_cudagraph_capture_size': 512, ..."):
                self.cut = True  # what was read stands
                return out
            key = self.value(depth + 1)

    def _atom(self, depth: int) -> Any:
        """A bare token up to the next top-level ',', ':', or closing bracket; brackets inside balanced."""
        start = self.i
        stack: list[str] = []
        while self.i < self.n:
            c = self.t[self.i]
            if stack:
                if c in "'\"":
                    self._string()
                    continue
                if c in _OPEN:
                    stack.append(_OPEN[c])
                elif c == stack[-1]:
                    stack.pop()
                self.i += 1
                if len(stack) > MAX_DEPTH:
                    raise LiteralError("nested too deeply")
                continue
            if c in ",}])" or (c == ":" and not self.t[start : self.i].startswith("<")):
                break
            if c in _OPEN and c != "{":
                stack.append(_OPEN[c])
            self.i += 1
        if stack:
            raise LiteralError("unbalanced brackets")
        word = self.t[start : self.i].strip()
        # a reporter's elision after the last value ("enable_prefix_caching=True ...") is no part of it
        word = re.sub(r"\s+(?:\.\.\.|\u2026)$", "", word)
        if not word:
            raise LiteralError(f"unexpected {self.peek()!r} at {self.i}")
        return convert_atom(word)


def convert_atom(word: str) -> Any:
    if word == "True":
        return True
    if word == "False":
        return False
    if word == "None":
        return None
    try:
        return int(word.replace("_", "")) if word.lstrip("-+").replace("_", "").isdigit() else float(word)
    except ValueError:
        return word


def parse_literal(text: str) -> Any:
    """Read one literal that fills ``text`` (trailing whitespace allowed)."""
    r = _Reader(text)
    v = r.value()
    r.ws()
    if r.i != r.n:
        raise LiteralError(f"trailing text at {r.i}")
    return v


def parse_literal_prefix(text: str, pos: int = 0) -> tuple[Any, int]:
    """Read one literal starting at ``pos``; returns (value, end offset)."""
    r = _Reader(text, pos)
    v = r.value()
    return v, r.i


def parse_kwargs(text: str) -> dict[str, Any]:
    """``a=1, b='x', c=Foo(d=2)`` -> {'a': 1, 'b': 'x', 'c': 'Foo(d=2)'}; stops quietly at the first
    piece it cannot read (log lines are often cut)."""
    out: dict[str, Any] = {}
    r = _Reader(text)
    n = len(text)
    while r.i < n:
        if r.elision():  # "model='x', ..., tensor_parallel_size=4, ..." as reporters paste the config line
            continue
        start = r.i
        while r.i < n and (text[r.i].isalnum() or text[r.i] == "_"):
            r.i += 1
        key = text[start : r.i]
        r.ws()
        if not key or r.peek() != "=":
            break
        r.i += 1
        try:
            out[key] = r.value()
        except LiteralError:
            break
        r.ws()
        if r.peek() == ",":
            r.i += 1
        else:
            break
    return out

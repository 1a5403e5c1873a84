"""Shell-like tokenizer that remembers where each token came from, and POSIX quoting.

``tokenize(text) -> list[Token]``: quotes, backslash escapes, backslash-newline continuations and
``#`` comments, like a POSIX shell reads a ``vllm serve`` line; every token keeps its span in the
source text so a patch can rewrite exactly what the user typed. ``shell_quote(value, prefer)``
quotes a value back, preferring the user's quote style.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import DiagError


class CommandError(DiagError):
    """The command line cannot be read (bad quoting, bad JSON, missing value, unreadable --config)."""


@dataclass
class Token:
    value: str
    start: int  # offset of the raw token in the source text
    end: int

    def raw(self, text: str) -> str:
        return text[self.start : self.end]


def tokenize(text: str) -> list[Token]:
    """POSIX-shell-like split: quotes, backslash escapes, backslash-newline continuations,
    ``#`` comments. Raises CommandError on an unterminated quote."""
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n;":
            i += 1
            continue
        if c == "\\" and i + 1 < n and text[i + 1] in "\r\n":
            i += 2
            continue
        if c == "#":
            while i < n and text[i] != "\n":
                i += 1
            continue
        start = i
        buf: list[str] = []
        while i < n:
            c = text[i]
            if c in " \t\r\n;":
                break
            if c == "\\":
                if i + 1 < n and text[i + 1] == "\n":
                    i += 2
                    continue
                if i + 1 < n:
                    buf.append(text[i + 1])
                    i += 2
                    continue
                i += 1
                continue
            if c == "'":
                j = text.find("'", i + 1)
                if j < 0:
                    raise CommandError(f"unterminated single quote at offset {i} of the command")
                buf.append(text[i + 1 : j])
                i = j + 1
                continue
            if c == '"':
                j = i + 1
                while j < n and text[j] != '"':
                    if text[j] == "\\" and j + 1 < n and text[j + 1] in '"\\$`\n':
                        if text[j + 1] != "\n":
                            buf.append(text[j + 1])
                        j += 2
                        continue
                    buf.append(text[j])
                    j += 1
                if j >= n:
                    raise CommandError(f"unterminated double quote at offset {i} of the command")
                i = j + 1
                continue
            buf.append(c)
            i += 1
        tokens.append(Token("".join(buf), start, i))
    return tokens


_SAFE = re.compile(r"^[A-Za-z0-9_@%+=:,./\-]+$")


def shell_quote(value: str, prefer: str = "'") -> str:
    """Quote for a POSIX shell, preferring the user's quote style."""
    if value and _SAFE.match(value):
        return value
    if prefer == '"' and not re.search(r'["\\$`]', value):
        return f'"{value}"'
    return "'" + value.replace("'", "'\"'\"'") + "'"

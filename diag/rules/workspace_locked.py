"""workspace_locked -- a kernel asks the locked workspace for more than was reserved before capture.

vLLM's shared workspace (vllm/v1/worker/workspace.py, 0.14+) is sized while the engine warms up and then
locked for CUDA-graph capture; a later request for more raises ``Workspace is locked but allocation from
'<file>:<line>:<function>' requires X MB, current size is Y MB``. The site it names is the kernel whose
scratch grew: an MLA / attention backend's decode sized for ``max_num_seqs`` single-token decodes that now
sees ``max_num_seqs x (1 + k)`` query rows under speculative decoding is the kernel's limit under drafts
(the ratio of the two sizes is often exactly 1 + k); anything else is a workspace sizing failure outside
the families.

Versions: 0.14+ (the workspace manager). Evidence: the log's root error; the configuration's drafts.
"""

from __future__ import annotations

import re

from ..model import Comparison, Finding
from ._util import spec_k
from .base import Rule, RuleContext
from .other_common import exc_evidence, find_exc

ID = "workspace_locked"
_LOCKED = re.compile(r"Workspace is locked but allocation from '([^':]+):(\d+):(\w+)' requires ([\d.]+) MB, "
                     r"current size is ([\d.]+) MB")
_ATTENTION = re.compile(r"mla|attn|attention|flashinfer|flash_attn|indexer", re.I)


def attention_allocation(message: str) -> str | None:
    """The allocating file named by a locked-workspace error when it is an attention / MLA / indexer kernel's."""
    m = _LOCKED.search(message)
    return m.group(1) if m and _ATTENTION.search(m.group(1)) else None


def check(ctx: RuleContext) -> list[Finding]:
    exc = find_exc(ctx, _LOCKED, root_only=True)
    if exc is None:
        return []
    m = _LOCKED.search(exc.message)
    site, line, function, need, have = m.group(1), int(m.group(2)), m.group(3), float(m.group(4)), float(m.group(5))
    k = spec_k(ctx)
    numbers = {"required_mb": need, "current_mb": have, f"{site.rsplit('.', 1)[0]}_line": line}
    drafts = k > 0 and bool(_ATTENTION.search(site))
    if drafts:
        numbers["num_speculative_tokens"] = k
        ratio = need / have if have else 0
        tell = f" ({need:g} MB is {ratio:g} x {have:g} MB, and 1 + k = {k + 1})" if abs(ratio - (k + 1)) < 0.01 else ""
        msg = (f"{site}:{function} asked the locked workspace for {need:g} MB where {have:g} MB was reserved before "
               f"CUDA-graph capture: its scratch was sized for single-token decodes, and under speculative decoding a "
               f"decode carries 1 + k = {k + 1} query rows{tell}.")
        title = f"Attention kernel scratch sized for single-token decodes, asked for {need:g} MB under drafts"
    else:
        msg = (f"{site}:{function} asked the locked workspace for {need:g} MB where {have:g} MB was reserved before "
               "CUDA-graph capture; the workspace may not grow after it is locked.")
        title = f"Workspace too small after capture ({site}:{function} needs {need:g} MB)"
    return [Finding(rule=ID, category="spec_kernel_limit" if drafts else "other", severity="error", title=title,
                    message=msg, numbers=numbers, evidence=exc_evidence(exc, 2),
                    comparisons=[Comparison("workspace reserved before capture", need, have, "MB")])]


RULE = Rule(id=ID, title="Locked workspace asked for more than it reserved", category="spec_kernel_limit", check=check,
            versions=">=0.14 (workspace manager)", reads=("log",), doc=__doc__ or "")

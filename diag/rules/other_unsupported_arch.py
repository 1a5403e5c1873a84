"""other: the model's architecture is not supported by this vLLM (unknown to the registry, failed to be
inspected, or removed)."""

from __future__ import annotations

import re

from ..model import Finding
from .other_common import exc_evidence, find_exc
from .base import Rule, RuleContext

ID = "other_unsupported_arch"
_ARCH = re.compile(r"Model architectures? \[([^\]]*)\] (?:are|is) not supported|Model architectures? \[([^\]]*)\] failed to be inspected|"
                   r"has no vLLM implementation|Cannot find model module|is not supported for now|was removed from vLLM")


def check(ctx: RuleContext) -> list[Finding]:
    exc = find_exc(ctx, _ARCH)
    if exc is None:
        return []
    m = _ARCH.search(exc.message)
    archs = (m.group(1) or m.group(2) or "") if m else ""
    names = re.findall(r"'(\w+)'", archs)
    inspected = "failed to be inspected" in exc.message
    arch = names[0] if names else ((ctx.log.architecture if ctx.log else None) or "?")
    title = (f"Architecture {arch} failed to import/inspect in this vLLM" if inspected
             else f"Architecture {arch} is not supported by this vLLM")
    msg = ("vLLM knows the architecture but importing its model module failed (a missing optional dependency such as "
           "torchvision is the usual cause; the first traceback shows which)." if inspected else
           "config.json names an architecture this vLLM version does not register. Check the spelling in config.json, "
           "upgrade vLLM, or load it through the Transformers backend (--model-impl transformers) if it supports it.")
    f = Finding(rule=ID, category="other", severity="error", title=title, message=msg, evidence=exc_evidence(exc, 1))
    ev0 = f.evidence[0]
    if len(ev0.text) > 200:
        ev0.text = ev0.text[:200] + " ..."
    f.numbers["architecture"] = arch
    return [f]


RULE = Rule(id=ID, title="Unsupported model architecture", category="other", check=check, reads=("log",),
            doc=__doc__ or "")

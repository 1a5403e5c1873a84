"""other: the engine configuration was rejected at startup (pydantic ``ValidationError`` /
``ValueError`` from config validation) -- a typo'd flag value, an option this version does not know, or
options that cannot be combined. Architecture errors are ``other_unsupported_arch``."""

from __future__ import annotations

import re

from ..model import Finding
from .other_common import exc_evidence, find_exc
from .base import Rule, RuleContext

ID = "other_config_invalid"
_VALID = re.compile(r"validation errors? for (\w+)")
_ARCH = re.compile(r"Model architectures? \[|has no vLLM implementation|Transformers does not recognize this architecture")


def check(ctx: RuleContext) -> list[Finding]:
    exc = find_exc(ctx, _VALID, types=("ValidationError",), root_only=True)
    if exc is None or _ARCH.search(exc.message):
        return []
    m = _VALID.search(exc.message)
    cls = m.group(1) if m else "config"
    detail = [ln.strip() for ln in exc.message.splitlines()[1:] if ln.strip() and "errors.pydantic.dev" not in ln]
    f = Finding(rule=ID, category="other", severity="error", title=f"{cls} rejected the configuration",
                message=(detail[0][:300] if detail else exc.message[:300]),
                evidence=exc_evidence(exc, 1))
    return [f]


RULE = Rule(id=ID, title="Configuration rejected at startup (ValidationError)", category="other", check=check,
            reads=("log",), doc=__doc__ or "")

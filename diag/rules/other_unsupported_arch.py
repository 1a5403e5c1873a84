"""other: the model's architecture is not supported by this vLLM (unknown to the registry, failed to be
inspected, or removed), or its config.json's model type is unknown to the installed Transformers (a release
older than the model: Transformers' own "does not recognize this architecture", or the KeyError of its config
mapping)."""

from __future__ import annotations

import re

from ..model import Finding
from .other_common import exc_evidence, find_exc
from .base import Rule, RuleContext

ID = "other_unsupported_arch"
_ARCH = re.compile(r"Model architectures? \[([^\]]*)\] (?:are|is) not supported|Model architectures? \[([^\]]*)\] failed to be inspected|"
                   r"has no vLLM implementation|Cannot find model module|is not supported for now|was removed from vLLM")


# Transformers' AutoConfig not knowing config.json's model_type: its own message, or the mapping's bare KeyError
_MODEL_TYPE = re.compile(r"has model type `([\w.-]+)` but Transformers does not recognize this architecture|"
                         r"Unrecognized model in \S+\. Should have a `model_type` key")
_AUTO_KEYERROR = re.compile(r"KeyError: '([\w.-]+)'")


def _unknown_model_type(ctx: RuleContext) -> Finding | None:
    exc = find_exc(ctx, _MODEL_TYPE)
    m = _MODEL_TYPE.search(exc.message) if exc else None
    if exc is None:
        root = ctx.log.root if ctx.log else None
        last = root.last_frame if root else None
        k = _AUTO_KEYERROR.search(f"{root.exc_type}: {root.message}") if root else None
        if not (k and last and last.file.endswith("models/auto/configuration_auto.py")):
            return None
        exc, mtype = root, k.group(1)
    else:
        mtype = m.group(1) if m and m.group(1) else None
    version = (ctx.log.startup.get("transformers_version") if ctx.log else None)
    installed = f"Transformers {version}" if version else "the installed Transformers"
    f = Finding(rule=ID, category="other", severity="error",
                title=f"Model type {mtype or '?'} is unknown to {installed}",
                message=(f"config.json's model_type {mtype or '(not given)'} is not one {installed} knows (a release "
                         "older than the model). Install a Transformers release that has it, within what this vLLM "
                         "accepts, or a vLLM release whose Transformers pin knows the model."),
                evidence=exc_evidence(exc, 1))
    root = ctx.log.root if ctx.log else None
    if root is not None and root is not exc:  # the mapping's KeyError that the validation error reports again
        f.evidence = exc_evidence(root, 0) + f.evidence
    if mtype:
        f.numbers["model_type"] = mtype
    if version:
        f.numbers["transformers_version"] = version
    return f


def check(ctx: RuleContext) -> list[Finding]:
    unknown = _unknown_model_type(ctx)
    if unknown is not None:
        return [unknown]
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

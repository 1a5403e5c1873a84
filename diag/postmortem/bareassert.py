"""A bare ``assert`` in a config class's validation, which pydantic reports with no text of its own.

vLLM's config classes are pydantic dataclasses: an ``AssertionError`` raised while one validates
(``VllmConfig.__post_init__``: ``assert self.scheduler_config.long_prefill_token_threshold >=
self.cache_config.block_size``) reaches the user as ``1 validation error for VllmConfig`` /
``Assertion failed, [type=assertion_error, ...]``. A bare assert has no message, so no template in the
catalog matches it. The candidates are the class's bare asserts in the log's release; each one's
condition is evaluated (``preflight.pyeval``, nothing executed) over the values the log's command sets.
A name the command does not set is not modelled, so that candidate stays undecided. When exactly one
candidate is false on the command's own values, that assert is the site.
"""

from __future__ import annotations

import re
from typing import Any

from ..model import LogException, LogFacts

# "1 validation error for VllmConfig" / "... for SchedulerConfig": the class whose validation raised
_VALIDATED_CLASS = re.compile(r"validation errors? for (\w+)")
_BARE = re.compile(r"^\s*Assertion failed\s*(?:,\s*\[type=assertion_error|$)", re.M)
# a config object's sub-configs: their fields are the flags of the same names
_SUB_CONFIGS = ("scheduler_config", "cache_config", "parallel_config", "model_config", "speculative_config",
                "compilation_config", "load_config", "lora_config", "kv_transfer_config", "observability_config",
                "structured_outputs_config", "attention_config", "device_config")


def _flag_values(facts: LogFacts) -> dict[str, Any]:
    """The command's flags as vLLM's config fields hold them (numbers as numbers, booleans as booleans)."""
    out: dict[str, Any] = {}
    for k, v in facts.args.items():
        if isinstance(v, str) and re.fullmatch(r"-?\d+", v.strip()):
            v = int(v)
        out[k] = v
    spec = out.get("speculative_config")
    if isinstance(spec, dict) and "num_speculative_tokens" not in out:
        out["num_speculative_tokens"] = spec.get("num_speculative_tokens")
    return {k: v for k, v in out.items() if v is not None}


def _namespace(cls: str, flags: dict[str, Any]) -> dict[str, Any]:
    from ..preflight.pyeval import Obj

    if cls == "VllmConfig":
        own = {name: (dict(flags[name]) if name in ("speculative_config", "compilation_config")
                      and isinstance(flags.get(name), dict) else dict(flags)) for name in _SUB_CONFIGS}
    else:
        own = dict(flags)
    return {"self": Obj(own, "self")}


def comparison(condition: str, values: dict[str, str]):
    """``a >= b`` with both operands among ``values`` (operand name -> value) as an expected-vs-actual pair."""
    import ast

    from ..model import Comparison

    try:
        node = ast.parse(condition, mode="eval").body
    except SyntaxError:
        return None
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1):
        return None
    names = [ast.unparse(x).rsplit(".", 1)[-1] for x in (node.left, node.comparators[0])]
    if not all(n in values for n in names):
        return None
    op = {ast.GtE: ">=", ast.Gt: ">", ast.LtE: "<=", ast.Lt: "<", ast.Eq: "==", ast.NotEq: "!="}.get(type(node.ops[0]))
    if op is None:
        return None
    return Comparison(f"{names[0]} {op} {names[1]}", expected=f"{op} {values[names[1]]}", actual=values[names[0]])


def bare_config_assert(facts: LogFacts, root: LogException, version: str | None):
    """The catalog site of a config class's bare assert that the log's command fails, as a ``SiteMatch``
    (``None`` when the error is not such an assert, or when no single candidate is false)."""
    from ..catalog import load
    from ..catalog.match import SiteMatch
    from ..preflight.pyeval import NotModelled, eval_expr

    message = root.message or ""
    m = _VALIDATED_CLASS.search(f"{root.exc_type} {message}")
    if m is None or "ValidationError" not in root.exc_type or not _BARE.search(message):
        return None
    cls = m.group(1)
    flags = _flag_values(facts)
    if not flags:
        return None
    env = _namespace(cls, flags)
    failing, decided = [], 0
    for site in load().sites:
        if (site.kind != "assert" or site.message or not site.condition or not site.function.startswith(f"{cls}.")
                or "/config/" not in site.file or site.exists_in(version) is False):
            continue
        try:
            ok = eval_expr(site.condition, dict(env))
        except NotModelled:
            continue
        except Exception:  # a condition pyeval cannot evaluate (an unsupported call or operand): undecided
            continue
        decided += 1
        if not ok:
            failing.append(site)
    if len({(s.file, s.condition) for s in failing}) != 1:
        return None
    site = failing[0]
    values = {}
    for name in sorted(set(re.findall(r"self(?:\.\w+)*\.(\w+)", site.condition))):
        if isinstance(flags.get(name), (int, float)) and not isinstance(flags.get(name), bool):
            values[name] = str(flags[name])
    return SiteMatch(site=site, how="config_assert", score=0.8, values=values,
                     note=f"the only one of {cls}'s bare asserts the command's flags fail ({decided} evaluated)")

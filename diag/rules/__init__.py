"""The rule registry: every module in ``diag/rules/`` exposing ``RULE`` is a rule.

Discovery is by module name (``pkgutil``), in sorted order, so the list is stable; modules whose
name starts with ``_`` and ``base`` are not rules. A module may also expose
``suggest(finding, ctx) -> list[Suggestion]``: candidate changes (``Suggestion.changes``) that
``vllm_diag.suggest`` turns into patched commands and re-checks before showing them.

``run_rules(ctx)`` returns a :class:`RuleRun`: the findings (a list, sorted by severity -- error,
warning, info -- then rule order) and ``.failures``, the rules that raised. A rule that raises is a
bug: ``strict=True`` (tests) re-raises; otherwise it is recorded in the run's ``failures`` and
skipped, so one broken rule never hides the others' findings. Nothing is kept between runs, so
several threads (the dashboard's users) can run rules at once.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache
from types import ModuleType

from ..model import SEVERITIES, Finding
from .base import Rule, RuleContext



class RuleRun(list):
    """The findings of one ``run_rules`` call (a ``list[Finding]``) plus ``failures``: the
    ``(rule id, "ExcType: message")`` of every rule that raised and was skipped."""

    def __init__(self, findings=(), failures=()):
        super().__init__(findings)
        self.failures: list[tuple[str, str]] = list(failures)


@lru_cache(maxsize=1)
def _modules() -> tuple[ModuleType, ...]:
    mods = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_") or info.name == "base":
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        if isinstance(getattr(mod, "RULE", None), Rule):
            mods.append(mod)
    return tuple(mods)


def all_rules() -> list[Rule]:
    return [m.RULE for m in _modules()]


def get_rule(rule_id: str) -> Rule | None:
    return next((r for r in all_rules() if r.id == rule_id), None)


def rule_module(rule_id: str) -> ModuleType | None:
    return next((m for m in _modules() if m.RULE.id == rule_id), None)


def run_rules(ctx: RuleContext, strict: bool = False, only: set[str] | None = None) -> RuleRun:
    failures: list[tuple[str, str]] = []
    findings: list[tuple[int, int, Finding]] = []
    for order, rule in enumerate(all_rules()):
        if only is not None and rule.id not in only:
            continue
        if "state" not in rule.reads and "log" in rule.reads and ctx.log is None and ctx.state is None:
            continue
        try:
            out = rule.check(ctx) or []
        except Exception as exc:  # a rule bug must not hide the others
            if strict:
                raise
            failures.append((rule.id, f"{type(exc).__name__}: {exc}"))
            continue
        for f in out:
            if f.versions is None and rule.versions:
                f.versions = rule.versions
            if f.fixed_in is None and rule.fixed_in:
                f.fixed_in = rule.fixed_in
            findings.append((SEVERITIES.index(f.severity), order, f))
    findings.sort(key=lambda t: (t[0], t[1]))
    return RuleRun([f for _, _, f in findings], failures)


def suggestions_for(finding: Finding, ctx: RuleContext) -> list:
    mod = rule_module(finding.rule)
    fn = getattr(mod, "suggest", None) if mod else None
    return list(fn(finding, ctx)) if fn else []

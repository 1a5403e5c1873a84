"""The configuration checked against the failed comparison: when a check compares a quantity with a constant
(``next_n <= 4``, ``TVM_FFI_ICHECK_LE(max_q_len, 4)``, ``num_tokens > 64``) and the configuration gives that
quantity's value (``next_n`` = 1 + num_speculative_tokens, the query tokens per request of a speculative
decode, ``max_num_seqs``, ``block_size`` ...), the finding says whether the configured value breaks the check.
A value that breaks it is evidence for the finding (a ``low`` class inference becomes ``medium``); a value that
satisfies it is said too (the failing step then differed from the configuration: a padded, ragged or truncated
batch)."""

from __future__ import annotations

import operator
import re
from typing import Any

from ..model import LogFacts
from .configuration import Setup
from .diagnosis import Diagnosis

_OPS = {"<=": operator.le, "<": operator.lt, ">=": operator.ge, ">": operator.gt, "==": operator.eq, "!=": operator.ne}
# what speculative decoding sets: the query tokens of each decode
_QUERY_LEN = re.compile(r"^(?:next_n|q_len\w*|qo_len\w*|max_q_len|max_qo_len|max_query_len|query_len\w*|seqlen_q|"
                        r"max_seqlen_q|q_seqlen|qseqlen|num_q_tokens|decode_query_len|uniform_decode_query_len)$")
_ARGS = ("max_num_seqs", "max_num_batched_tokens", "block_size", "max_model_len", "num_speculative_tokens",
         "tensor_parallel_size", "decode_context_parallel_size")


def configured_value(operand: str, setup: Setup, facts: LogFacts) -> tuple[int, str] | None:
    """(value, how) of a check's operand that the configuration gives, else None."""
    name = re.sub(r"^(?:self|params|args|metadata|attn_metadata|m)\.", "", operand.strip()).lower()
    if _QUERY_LEN.match(name) and setup.spec_k > 0:
        return setup.spec_k + 1, f"1 + num_speculative_tokens ({setup.spec_k})"
    if name in ("num_speculative_tokens", "num_spec_tokens", "k") and setup.spec_k > 0:
        return setup.spec_k, "num_speculative_tokens"
    if name in _ARGS and isinstance(facts.args.get(name), int) and not isinstance(facts.args.get(name), bool):
        return facts.args[name], name
    return None


def confirm_by_numbers(d: Diagnosis, setup: Setup, facts: LogFacts) -> None:
    """Say whether the configured value of the check's operand breaks the check; raise a ``low`` finding of a
    hybrid/spec category to ``medium`` when it does."""
    n = facts.numbers
    operand, op, limit = n.get("check_operand"), n.get("check_op"), n.get("check_threshold")
    if not isinstance(operand, str) or op not in _OPS or not isinstance(limit, int):
        cond = n.get("kernel_assert_condition") or n.get("assert_condition")
        m = re.fullmatch(r"\(?\s*([A-Za-z_][\w.]*)\s*(<=|>=|<|>|==|!=)\s*(-?\d+)\s*\)?", str(cond or ""))
        if not m:
            return
        operand, op, limit = m.group(1), m.group(2), int(m.group(3))
    got = configured_value(operand, setup, facts)
    if got is None:
        return
    value, how = got
    nums: dict[str, Any] = {"configured_value": value, "check_threshold": limit}
    if not _OPS[op](value, limit):
        d.basis += (f"; the configuration breaks this check: {operand} = {how} = {value}, and the check needs "
                    f"{operand} {op} {limit}")
        if d.confidence == "low" and d.category != "other":
            d.confidence = "medium"
    else:
        d.basis += (f"; the configured {operand} ({how} = {value}) satisfies {operand} {op} {limit}: the failing step's "
                    f"value differed from the configuration's (a padded, ragged or truncated batch)")
    for k, v in nums.items():
        d.numbers.setdefault(k, v)

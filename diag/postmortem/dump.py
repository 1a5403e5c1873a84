"""vLLM's crash dump: the batch the engine was running when a step failed.

When ``EngineCore`` dies inside a step, vLLM (``vllm/logging_utils/dump_input.py``, 0.10+) logs::

    Dumping input data for V1 LLM engine (v0.26.0) with config: model='…', speculative_config=…, …
    Dumping scheduler output for model execution: SchedulerOutput(scheduled_new_reqs=[NewRequestData(
        req_id=…,prompt_token_ids_len=6,…,num_computed_tokens=0,…)], scheduled_cached_reqs=CachedRequestData(
        req_ids=[…], …, num_computed_tokens=[…], …), num_scheduled_tokens={id: n, …},
        total_num_scheduled_tokens=N, scheduled_spec_decode_tokens={id: [t, …], …}, …)

:func:`parse_scheduler_output` reads the scheduler output (also cut or hard-wrapped) into the batch
composition: requests, tokens scheduled per request, draft tokens per request, computed tokens, and what
kind of step it was (prefills, plain decodes, spec decodes, mixed).
"""

from __future__ import annotations

import re
from typing import Any

DUMP_CONFIG = "Dumping input data for V1 LLM engine"
DUMP_SCHED = "Dumping scheduler output for model execution"
DUMP_STATS = "Dumping scheduler stats"

_NEW = re.compile(r"NewRequestData\(\s*req_id=([^,\s)]+)")
_PROMPT_LEN = re.compile(r"prompt_token_ids_len=(\d+)")
_NEW_COMPUTED = re.compile(r"num_computed_tokens=(\d+)")
_CACHED = re.compile(r"CachedRequestData\((.*?)\)(?=,\s*num_scheduled_tokens=|$)", re.S)
_LIST_FIELD = r"{name}=\[([^\]]*)\]"
_SCHED = re.compile(r"(?<![\w_])num_scheduled_tokens=\{([^}]*)\}")
_TOTAL = re.compile(r"total_num_scheduled_tokens=(\d+)")
# (the dict ends before the next field, a reporter's elision of the rest -- "...", "[...]" -- or the record's end)
_SPEC = re.compile(r"scheduled_spec_decode_tokens=\{(.*?)\}(?=,\s*(?:[a-z_]+=|\.\.\.|\u2026|\[\s*(?:\.\.\.|\u2026)\s*\])|"
                   r"\)?\s*$)", re.S)
_SPEC_ITEM = re.compile(r"['\"]?([^:'\"\s,{}]+)['\"]?\s*:\s*\[([^\]]*)\]")
_PAIR = re.compile(r"['\"]?([^:'\"\s,{}]+)['\"]?\s*:\s*(\d+)")
_TO_SCHEDULE = re.compile(r"num_spec_tokens_to_schedule=(\d+)")
# a list or dict the reporter elided down to its length: "[...27 ids...]", "{... 26 entries ...}", "[27 reqs]"
# the last item of a list elided after its first ids: "... 31 entries", "... 46 total", "... 29 more"
_COUNT_TAIL = re.compile(r"^(?:\.\.\.|\u2026)?\s*(\d+)\s+(entries|total|ids|requests|reqs|items|more)\s*(?:\.\.\.|\u2026)?$", re.I)
_COUNTED = re.compile(r"^\s*(?:\.\.\.|\u2026)?\s*(\d+)\s+(?:ids?|req(?:uest)?s?|entries|items|elements)\s*(?:\.\.\.|\u2026)?\s*$")


_STATS_PAIR = re.compile(r"(?<![\w.])([a-z][a-z0-9_]*)=(-?\d+(?:\.\d+)?)(?!\w|\.\d)")


def parse_scheduler_stats(text: str) -> dict[str, Any]:
    """The scheduler's counters at the crash, from the dump's second line (``Dumping scheduler stats:
    SchedulerStats(num_running_reqs=92, num_waiting_reqs=0, kv_cache_usage=0.87, prefix_cache_stats=…)``):
    the top-level ``name=number`` fields only, as the nested stats objects reuse names (``requests=``)."""
    body = text[text.find("(") + 1:] if "(" in text[:40] else text
    depth, flat = 0, []
    for ch in body[:4000]:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth < 0:
                break
        elif depth == 0:
            flat.append(ch)
    out: dict[str, Any] = {}
    for name, val in _STATS_PAIR.findall("".join(flat)):
        out.setdefault(name, float(val) if "." in val else int(val))
    return out


def _ints(text: str) -> list[int]:
    return [int(x) for x in re.findall(r"-?\d+", text)]


def parse_scheduler_output(text: str, spec_k: int = 0, token_budget: int | None = None) -> dict[str, Any] | None:
    """The batch of the failing step, or None if the text holds no scheduler output. ``spec_k``: the engine's
    num_speculative_tokens, for a dump whose draft lists are elided as a whole (``scheduled_spec_decode_tokens={...}``)."""
    if "SchedulerOutput" not in text and "num_scheduled_tokens" not in text:
        return None
    t = " ".join(text.split())
    new_ids: list[str] = []
    prompt_lens: dict[str, int] = {}
    computed: dict[str, int] = {}
    pieces = t.split("NewRequestData(")
    for piece in pieces[1:]:
        m = re.match(r"\s*req_id=([^,\s)]+)", piece)
        if not m:
            continue
        rid = m.group(1).strip("'\"")
        new_ids.append(rid)
        body = piece.split("NewRequestData(")[0]
        pm = _PROMPT_LEN.search(body)
        if pm:
            prompt_lens[rid] = int(pm.group(1))
        cm = _NEW_COMPUTED.search(body)
        if cm:
            computed[rid] = int(cm.group(1))
    cached_ids: list[str] = []
    counted_reqs = 0  # cached requests of a req_ids list elided to its length
    resumed: list[str] = []
    outputs: dict[str, int] = {}  # a cached request's output tokens so far (0: its prompt is still being prefilled)
    cm = re.search(r"CachedRequestData\((.*)", t)
    if cm:
        body = cm.group(1)
        end = body.find("num_scheduled_tokens=")
        body = body[:end] if end >= 0 else body
        m = re.search(_LIST_FIELD.format(name="req_ids"), body)
        if m and _COUNTED.match(m.group(1)):
            counted_reqs = int(_COUNTED.match(m.group(1)).group(1))
        elif m:  # (an elision mark in the list is no request)
            items = [x.strip() for x in m.group(1).split(",") if x.strip()]
            tail = _COUNT_TAIL.match(items[-1]) if items else None
            if tail:  # "['a', 'b', ... 46 total]": the list's length, its first ids shown; "... 29 more": those after
                items = items[:-1]
            cached_ids = [x.strip("'\"") for x in items if x not in ("...", "\u2026")]
            if tail:
                n = int(tail.group(1))
                counted_reqs = n if tail.group(2).lower() == "more" else max(0, n - len(cached_ids))
        m = re.search(_LIST_FIELD.format(name="num_computed_tokens"), body)
        if m:
            for rid, n in zip(cached_ids, _ints(m.group(1))):
                computed[rid] = n
        m = re.search(_LIST_FIELD.format(name="num_output_tokens"), body)
        if m:
            for rid, n in zip(cached_ids, _ints(m.group(1))):
                outputs[rid] = n
        # requests resumed after preemption: they restart from their cached blocks (resumed_req_ids, or the older
        # resumed_from_preemption=[true, false, ...] in req_ids order)
        # (a set from 0.14 on: resumed_req_ids={'id', ...} or set())
        m = re.search(_LIST_FIELD.format(name="resumed_req_ids"), body) or re.search(r"resumed_req_ids=\{([^}]*)\}", body)
        if m:
            resumed = [x.strip().strip("'\"") for x in m.group(1).split(",") if x.strip() and x.strip() not in ("...", "\u2026")]
        elif re.search(r"resumed_req_ids=set\(\)", body):
            resumed = []
        else:
            m = re.search(_LIST_FIELD.format(name="resumed_from_preemption"), body)
            flags = [x.strip().lower() == "true" for x in m.group(1).split(",")] if m else []
            # (a flag past the ids the dump elided still counts a resumed request)
            resumed = [cached_ids[i] if i < len(cached_ids) else f"#{i}" for i, f in enumerate(flags) if f]
    cached_total = len(cached_ids) + counted_reqs  # the cached list's length, its elided ids included
    scheduled: dict[str, int] = {}
    m = _SCHED.search(t)
    if m:
        for rid, n in _PAIR.findall(m.group(1)):
            scheduled[rid] = int(n)
    if not computed and not cached_ids and scheduled:
        # a fragment quoted without CachedRequestData(...): its num_computed_tokens list, in request order
        m = re.search(r"(?<![\w])num_computed_tokens=\[([^\]]*)\]", t)
        if m:
            for rid, n in zip(scheduled, _ints(m.group(1))):
                computed[rid] = n
    spec: dict[str, int] = {}
    m = _SPEC.search(t)
    if m and counted_reqs and _COUNTED.match(m.group(1)) and not new_ids and not scheduled:
        return _counted_step(counted_reqs, int(_COUNTED.match(m.group(1)).group(1)), t, spec_k)
    if m:
        for rid, toks in _SPEC_ITEM.findall(m.group(1)):
            spec[rid] = len([x for x in toks.split(",") if x.strip()])
            if toks.strip() in ("...", "\u2026") and scheduled.get(rid, 0) > 1:
                spec[rid] = scheduled[rid] - 1  # drafts elided ("[...]"): a spec decode schedules 1 + its drafts
        if spec_k > 0 and m.group(1).strip() in ("...", "\u2026"):
            # the whole dict elided ("={...}"): a request already decoding (outputs, or cached with computed tokens)
            # that schedules exactly 1 + k tokens is a spec decode with its k drafts
            for rid, n in scheduled.items():
                if n == 1 + spec_k and rid not in new_ids and (outputs.get(rid, 0) > 0 or (
                        rid not in outputs and computed.get(rid, 0) > 0)):
                    spec[rid] = spec_k
    out: dict[str, Any] = {}
    # (a request the drafts' dict names is of the step too, where the reporter elided the id lists)
    ids = list(dict.fromkeys(new_ids + cached_ids + list(scheduled) + list(spec)))
    if not ids and not spec:
        return None
    # (cached requests elided to their count, "req_ids=[...131 ids...]", are requests of the step all the same)
    out["num_reqs"] = max(len(ids), len(new_ids) + cached_total) if ids or cached_total else None
    out["num_new_reqs"] = len(new_ids)
    out["num_cached_reqs"] = cached_total
    if scheduled:
        out["tokens_per_req"] = [scheduled[r] for r in ids if r in scheduled]
        out["num_scheduled_tokens"] = out["tokens_per_req"]  # the dump's own name for them (a dict by request id there)
    m = _TOTAL.search(t)
    if m:
        out["total_num_scheduled_tokens"] = int(m.group(1))
    elif scheduled:
        out["total_num_scheduled_tokens"] = sum(scheduled.values())
    if spec:
        out["spec_tokens_per_req"] = [spec.get(r, 0) for r in ids] if ids else list(spec.values())
    out["num_spec_decode_reqs"] = sum(1 for v in spec.values() if v > 0)
    if computed:
        out["num_computed_tokens"] = [computed[r] for r in ids if r in computed]
    if prompt_lens:
        out["prompt_lens"] = [prompt_lens[r] for r in ids if r in prompt_lens]
    # computed tokens of the requests that (re)start in this step from cached blocks: a new request with a prefix-cache
    # hit, a request resumed after preemption
    starts = [computed[r] for r in list(dict.fromkeys(new_ids + resumed)) if computed.get(r, 0) > 0]
    if starts:
        out["cached_start_tokens"] = starts
    if resumed:
        out["num_resumed_reqs"] = len(resumed)
    m = _TO_SCHEDULE.search(t)
    if m:
        out["num_spec_tokens_to_schedule"] = int(m.group(1))
    # what kind of step: a request with drafts is a spec decode (it schedules 1 + drafts tokens); a
    # request without drafts that schedules one token is a plain decode; more tokens is a prefill chunk
    kinds = {"spec_decode": 0, "decode": 0, "prefill": 0}
    threshold = 1 + max(spec.values(), default=0)  # the builders' decode threshold, 1 + k, under drafts
    short = 0
    decode_tokens = 0  # the tokens of the decode rows, spec decodes included (the attention builders' num_decode_tokens)
    for r in ids:
        n = scheduled.get(r)
        k = spec.get(r, 0)
        if k > 0:
            kinds["spec_decode"] += 1
            decode_tokens += n or 1 + k
        elif n is None and r in spec and r not in new_ids:
            # listed among the drafts' requests with none ("r-1112: []"): a decode of one token beside spec decodes
            kinds["decode"] += 1
            decode_tokens += 1
        elif n is None:
            continue
        elif n == 1 and r not in new_ids:
            kinds["decode"] += 1
            decode_tokens += 1
        else:
            kinds["prefill"] += 1
            # (a new request's prompt, or a cached one still without output: its prompt's last chunk; not a decoding
            # request whose drafts an elided dump lost)
            if threshold > 1 and n <= threshold and (r in new_ids or outputs.get(r) == 0):
                short += 1
    listed = sum(scheduled.values()) if scheduled else 0
    total = out.get("total_num_scheduled_tokens")
    # (not a step that filled the token budget: a full step holds a prefill chunk the elision hid as well)
    if spec_k > 0 and scheduled and isinstance(total, int) and total > listed and (total - listed) % (1 + spec_k) == 0 \
            and total != token_budget and re.search(r"num_scheduled_tokens=\{[^}]*(?:\.\.\.|…)", t):
        # a dump whose per-request token counts the reporter elided ("{... 210 x 3, a: 1, b: 1 ...}"): the tokens the
        # total has beyond the listed rows, in whole steps of 1 + k, are spec decodes the excerpt does not show
        hidden = (total - listed) // (1 + spec_k)
        kinds["spec_decode"] += hidden
        out["elided_spec_decodes"] = hidden
        # (the requests the listed ids do not show; a list elided to its length counts them already)
        out["num_reqs"] = max(out.get("num_reqs") or 0, len(ids) + hidden) if counted_reqs else \
            (out.get("num_reqs") or 0) + hidden
    if decode_tokens and not out.get("elided_spec_decodes"):
        out["num_decode_tokens"] = decode_tokens
    out["num_spec_decodes"] = kinds["spec_decode"]
    out["num_decodes"] = kinds["decode"]
    out["num_prefills"] = kinds["prefill"]
    # mixed: plain decodes beside spec decodes, the rows vLLM's GDN/Mamba builders cannot keep apart ("num_decodes and
    # num_spec_decodes are mutually exclusive", gdn_attn.py); prefill chunks beside spec decodes are their normal path
    # -- except a prefill chunk of at most 1 + k tokens (a short prompt, a prompt's last chunk): the builders split
    # decodes from prefills by query length (split_decodes_and_prefills, decode_threshold = 1 + k), so it is counted
    # as a decode and run with the spec decodes' state handling
    if kinds["spec_decode"] and short:
        out["short_prefills"] = short
    out["mixed"] = kinds["spec_decode"] > 0 and (kinds["decode"] > 0 or short > 0)
    drafts = sorted({v for v in spec.values() if v > 0})
    out["ragged_drafts"] = len(drafts) > 1
    return out


def _counted_step(num_reqs: int, num_spec: int, text: str, spec_k: int) -> dict[str, Any]:
    """A dump whose request and draft lists were elided to their lengths (req_ids=[...27 ids...],
    scheduled_spec_decode_tokens={...26 entries...}): the total token count tells the rest, when every request that
    is not a spec decode took one token (a plain decode) -- 26 x (1 + 3) + 1 = 105."""
    out: dict[str, Any] = {"num_reqs": num_reqs, "num_new_reqs": 0, "num_cached_reqs": num_reqs,
                           "num_spec_decode_reqs": num_spec, "num_spec_decodes": num_spec, "num_decodes": 0,
                           "num_prefills": 0}
    m = _TOTAL.search(text)
    rest = num_reqs - num_spec
    if m:
        out["total_num_scheduled_tokens"] = total = int(m.group(1))
        if spec_k > 0 and rest > 0 and total - num_spec * (1 + spec_k) == rest:
            out["num_decodes"] = rest
    out["mixed"] = num_spec > 0 and out["num_decodes"] > 0
    out["ragged_drafts"] = False
    return out


def describe(batch: dict[str, Any]) -> str:
    parts = []
    if batch.get("num_reqs") is not None:
        parts.append(f"{batch['num_reqs']} request(s)")
    kinds = [f"{batch[k]} {k.replace('num_', '').replace('_', ' ')}" for k in ("num_prefills", "num_decodes", "num_spec_decodes")
             if batch.get(k)]
    if kinds:
        parts.append(" + ".join(kinds))
    if batch.get("tokens_per_req"):
        parts.append(f"tokens per request {batch['tokens_per_req'][:16]}")
    if batch.get("spec_tokens_per_req") and any(batch["spec_tokens_per_req"]):
        parts.append(f"draft tokens per request {batch['spec_tokens_per_req'][:16]}")
    if batch.get("total_num_scheduled_tokens") is not None:
        parts.append(f"{batch['total_num_scheduled_tokens']} tokens in all")
    if batch.get("num_computed_tokens"):
        parts.append(f"computed tokens {batch['num_computed_tokens'][:16]}")
    if batch.get("num_resumed_reqs"):
        parts.append(f"{batch['num_resumed_reqs']} resumed after preemption")
    return "; ".join(parts)

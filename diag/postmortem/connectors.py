"""KV connectors (P/D transfer, offloading) on hybrid models: the prefix-cache / block bookkeeping a connector shares
with the scheduler disagrees with the Mamba/GDN KV-cache groups (family B, ``state_index``).

Two classes, from vLLM's source:

* **zero new tokens after a prompt truncation** -- the scheduler's ``assert num_new_tokens > 0``
  (``Scheduler.schedule``, every release) holds for a local prefix-cache hit by construction (the hit is capped at
  ``num_tokens - 1``), so it fires only when the computed tokens reach the prompt's length some other way: an
  external connector hit covering the whole prompt (the connector's own accounting: a near miss), or the prompt
  shrinking after the lookup. The latter is what P/D connectors do to hybrid models on the prefill side: they drop
  the last prompt token (``_truncate_mamba_request_for_prefill``: NIXL since 0.19, Mooncake since 0.25, MoRIIO since
  0.31), so a replayed prompt whose prefix-cache hit already counted ``N - 1`` tokens has nothing left to compute.
  A prefill-side role (``kv_producer`` / ``kv_both``) of such a connector, prefix caching not off and a model that is
  not known to be dense make it this class.
* **a connector's block bookkeeping across KV-cache groups** -- asserts in a connector's scheduler side that compare
  the locally computed tokens or blocks with a group's blocks (the offloading connector's
  ``update_state_after_alloc``, ...): with one KV-cache group they hold by construction (the count comes from that
  group's own cached blocks); they fail when the groups cache at different granularities -- a hybrid model's
  Mamba/GDN groups (prefix caching's ``align``/``all`` modes, speculative blocks) next to its attention group.

* **block sizes that differ between the P and D instances** -- a connector's handshake compares the local and the
  remote KV block size (NIXL's ``TransferTopology.block_size_ratio``: "Local block size X is not divisible by remote
  block size Y"). On a hybrid model neither side chose its block size: vLLM raises the attention block size until
  one attention page covers a Mamba/GDN state page (``Setting attention block size to N tokens``), and that page is
  per rank, so a prefill and a decode instance at different tensor-parallel sizes get different block sizes -- the
  block-size alignment sibling (README family E, ``block_size_alignment``). A block size set on the command line
  (and no alignment line) is the operator's own choice: not this class.

Both are ``medium`` for a hybrid model the log names, ``low`` when the log does not name the model, and not this
class for a model known to be dense.
"""

from __future__ import annotations

import re

from ..model import LogException, LogFacts
from .configuration import Setup
from .diagnosis import Diagnosis, exc_evidence, fact_evidence, title_of
from .kvtransfer import truncates_hybrid_prompts

_CONNECTOR_FILE = re.compile(r"kv_transfer/kv_connector/|/kv_connector/|lmcache|offloading/scheduler|nixl|mooncake",
                             re.I)
# what a bookkeeping check compares: tokens / blocks / groups (not a socket, a handshake, a dtype or a device)
_BOOKKEEPING = re.compile(r"computed|num_\w*tokens|num_\w*blocks|block_ids|blocks?\b|group|len\(\w*block|hit", re.I)
_NOT_BOOKKEEPING = re.compile(r"dtype|device|handshake|socket|port|rank|world|tp_size|tp_ratio|layout|engine_id|"
                              r"remote_host|transfer_id|notif|xfer|agent|block_size|block_len|page_size|"
                              r"num_layers|head", re.I)
_ZERO_NEW = re.compile(r"num_new_tokens\s*>\s*0")
# factory.py's refusal: "Connector MultiConnector does not support HMA but HMA is enabled."
_NO_HMA = re.compile(r"Connector (\w+) does not support HMA but HMA is enabled")


def _vllm_frames(exc: LogException):
    return [f for f in exc.frames if "vllm/" in f.file or f.file.count("/") <= 3]


def _zero_new_tokens(exc: LogException, site_condition: str | None) -> bool:
    if "AssertionError" not in exc.exc_type and not exc.exc_type.startswith("("):
        return False
    last = exc.last_frame
    code = (last.code or "") if last is not None else ""
    in_scheduler = last is not None and "schedule" in last.function and "sched" in last.file
    return bool(in_scheduler and (_ZERO_NEW.search(code) or _ZERO_NEW.search(site_condition or "")))


def _model_words(setup: Setup) -> tuple[str, str]:
    """(confidence, what the model is) for a class that needs a hybrid model."""
    if setup.hybrid:
        return "medium", next((w for w in setup.why if w.startswith("hybrid model")), "a hybrid model")
    return "low", "the log does not name the model; the class needs a hybrid (Mamba/GDN) one"


_BLOCK_SIZE = re.compile(r"block[ _]size", re.I)


def _handshake_block_size(facts: LogFacts, root: LogException, setup: Setup, nums: dict, ev: list) -> Diagnosis | None:
    frames = _vllm_frames(root)
    last = frames[-1] if frames else None
    if last is None or not _CONNECTOR_FILE.search(last.file):
        return None
    if not _BLOCK_SIZE.search(f"{root.message or ''} {last.code or ''}"):
        return None
    runs = [b for b in facts.startup.get("attention_block_size_runs") or [] if isinstance(b, int)]
    aligned = facts.startup.get("attention_block_size")
    if not (setup.hybrid or aligned) or (facts.args.get("block_size") is not None and not aligned):
        return None
    where = f"{last.file.rsplit('/', 1)[-1]}:{last.function}"
    seen = (f"this log's runs chose {', '.join(map(str, dict.fromkeys(runs)))} tokens" if len(set(runs)) > 1 else
            f"this instance chose {aligned} tokens" if aligned else "the log does not show the chosen block size")
    model = next((w for w in setup.why if w.startswith("hybrid model")), "a hybrid model (the log's alignment line)")
    d = Diagnosis(
        category="block_size_alignment", confidence="medium" if (setup.hybrid and aligned) else "low",
        rule="failure_class",
        basis=(f"the KV connector's handshake ({where}) compares the local and the remote KV block size; on {model} "
               "vLLM sets the attention block size so one attention page covers a Mamba/GDN state page per rank "
               f"('Setting attention block size to N tokens'; {seen}), so instances at different tensor-parallel "
               "sizes (or dtypes) get different block sizes nobody chose"),
        title=f"{title_of('block_size_alignment')}: P/D instances with different aligned block sizes",
        message=f"{root.exc_type}: {(root.message or '').strip()[:160]}",
        numbers={**nums, **({"attention_block_size": aligned} if aligned else {})}, evidence=ev)
    d.missing.append("the other instance's 'Setting attention block size' line and its tensor-parallel size; one "
                     "--block-size both instances accept (a multiple of each one's aligned size) removes the mismatch")
    return d


def connector_class(facts: LogFacts, root: LogException, setup: Setup, base_numbers: dict,
                    site_condition: str | None = None) -> Diagnosis | None:
    """The connector-bookkeeping class of a hybrid model, or None (the caller's diagnosis stands)."""
    if setup.hybrid is False:
        return None
    nums = {**base_numbers, **facts.numbers}
    ev = exc_evidence(root, 2) + fact_evidence(facts, "kv_connector", "kv_role", "command", "non_default_args")
    if _zero_new_tokens(root, site_condition):
        conn = truncates_hybrid_prompts(setup.kv_connector)
        if conn is None or setup.kv_role == "kv_consumer" or setup.prefix_caching is False:
            return None
        conf, model = _model_words(setup)
        role = setup.kv_role or "role not stated"
        d = Diagnosis(
            category="state_index", confidence=conf, rule="failure_class",
            basis=("the scheduler's `assert num_new_tokens > 0` cannot fire on a local prefix-cache hit (capped at "
                   f"num_tokens - 1); with {conn} ({role}) the prefill side drops the last prompt token of a hybrid "
                   "(Mamba/GDN) request after the prefix-cache lookup already counted it, so a repeated prompt has no "
                   f"token left to compute; {model}"),
            title=f"{title_of('state_index')}: hybrid prompt truncated by {conn} after a prefix-cache hit",
            message="assert num_new_tokens > 0 in Scheduler.schedule: the prompt shrank below the tokens the prefix "
                    f"cache had counted ({conn}, {role})",
            numbers=nums, evidence=ev)
        d.missing.append("the model (a hybrid Mamba/GDN model makes this the truncation; a dense one would point at the "
                         "connector's external hit instead)" if not setup.hybrid else
                         "whether the failing request repeated an earlier prompt (a full prefix-cache hit)")
        return d
    handshake = _handshake_block_size(facts, root, setup, nums, ev)
    if handshake is not None:
        return handshake
    m = _NO_HMA.search(root.message or "")
    if m and setup.hybrid:
        # factory.py create_connector: a connector without hybrid-manager support while the manager is on. On a
        # Mamba/GDN hybrid the flag vLLM names only moves the failure: without the manager every layer must unify
        # into one full-attention layout, which Mamba/GDN pages cannot -- the hybrid KV layout (family A)
        conn = m.group(1)
        d = Diagnosis(
            category="kv_page_size", confidence="medium", rule="failure_class",
            basis=(f"{conn} does not support the hybrid KV cache manager, and the model is a Mamba/GDN hybrid "
                   f"({', '.join(setup.why) or 'hybrid'}): it needs the manager's one KV-cache group per layer type, so "
                   "--disable-hybrid-kv-cache-manager (the flag the message names) only moves the failure to the "
                   "page-size unification of Mamba/GDN and attention pages"),
            title=f"{title_of('kv_page_size')}: {conn} without hybrid KV cache manager support on a hybrid model",
            message=(root.message.strip().splitlines() or [""])[0][:300],
            numbers={**nums, "kv_connector": conn}, evidence=ev)
        d.missing.append("a connector that supports the hybrid KV cache manager for this release (every child of a "
                         "MultiConnector must), or the run without the connector")
        return d
    frames = _vllm_frames(root)
    if "AssertionError" not in root.exc_type or not frames:
        return None
    last = frames[-1]
    if not _CONNECTOR_FILE.search(last.file):
        return None
    code = f"{last.code or ''} {root.message or ''} {site_condition or ''}"
    if not _BOOKKEEPING.search(code) or _NOT_BOOKKEEPING.search(code):
        return None
    conf, model = _model_words(setup)
    where = f"{last.file.rsplit('/', 1)[-1]}:{last.function}"
    conn = setup.kv_connector or last.file.rsplit("/", 2)[-2]
    d = Diagnosis(
        category="state_index", confidence=conf, rule="failure_class",
        basis=(f"an assert of a KV connector's block bookkeeping ({where}: {(last.code or '').strip()[:80]}) compares "
               "the locally computed tokens / blocks with each KV-cache group's blocks; with one group it holds by "
               "construction, it fails when the groups cache at different granularities -- a hybrid model's Mamba/GDN "
               f"groups (prefix caching, speculative blocks) next to its attention group; {model}"),
        title=f"{title_of('state_index')}: KV connector bookkeeping across hybrid KV-cache groups ({last.function})",
        message=f"AssertionError in {where} ({conn}): the connector's per-group block accounting disagrees",
        numbers=nums, evidence=ev)
    d.missing.append("the KV-cache groups of the run (the 'KV cache groups' / Mamba cache mode startup lines) and the "
                     "model, to confirm a hybrid layout")
    return d

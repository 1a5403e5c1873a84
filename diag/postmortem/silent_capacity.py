"""The families' readings of a report without an error whose symptom is lost capacity or lost prefix hits on a
hybrid: the state blocks every Mamba/GDN group holds per request, the block a quantized KV cache or a drafter's pages
raise, the state pages' padding, and a prefix cache that never hits. Each reads numbers the log holds (``low``: the
arithmetic, not the KV cache config)."""

from __future__ import annotations

import re

from ..model import LogFacts
from ..rules.kv_quant_hybrid_capacity import QUANTIZED_KV_DTYPES
from .configuration import Setup
from .diagnosis import Diagnosis, fact_evidence, family_warning, title_of
from .quietmisses import kv_cache_idle


def hybrid_prefix_never_hit(facts: LogFacts, setup: Setup, base_numbers: dict) -> Diagnosis | None:
    """No error; a hybrid model with prefix caching on whose metrics report a 0 % prefix-cache hit rate on every line:
    its Mamba/GDN states are cached only at block boundaries of a block raised to hold a state page (hundreds to
    thousands of tokens), so prefixes shorter than a block -- or a step that never lands on one -- never hit."""
    st = facts.startup
    rate, samples = st.get("prefix_cache_hit_rate_max"), st.get("prefix_cache_hit_rate_samples") or 0
    # (a /metrics scrape's counters are the whole run's: queries looked up and not one token hit)
    scraped = _never_hit_counters(st.get("metrics") or {})
    if scraped is not None and (rate is None or samples < 2):
        rate, samples = 0.0, 0
    one_run = st.get("prefix_cache_zero_run_samples")  # one engine run of the log never hit; another did
    if one_run:
        rate, samples = 0.0, one_run
    # (one metrics line is enough where the report's own run without the drafts hits)
    told = st.get("hits_without_spec_prose")
    if not (setup.hybrid and setup.prefix_caching) or rate is None or float(rate) != 0.0 or (
            samples < 2 and not scraped and not told):
        return None
    if not st.get("hit_rate_prose") or st.get("unique_prompts_prose"):
        # the report does not speak of the hits (a workload without shared prefixes reads the same), or says its
        # prompts share no prefix
        return None
    if (st.get("num_preemptions_max") or 0) > 0:
        return None  # a full pool evicting every cached block is the other reading (kv_cache_pressure)
    block = st.get("attention_block_size") or st.get("block_size_prose")
    shared = st.get("shared_prefix_tokens")
    # the reporter's shared prefix against the block: shorter than one block, it can never be a cached state
    shorter = isinstance(shared, int) and isinstance(block, int) and shared < block
    missing = [] if isinstance(shared, int) and block else [
        "the attention block size vLLM chose ('Setting attention block size to N tokens') against the shared prefix's "
        "length"]
    return Diagnosis(
        category="prefix_cache_degraded", confidence="medium" if shorter else "low", rule="failure_class",
        severity="warning",
        basis=((f"no error; {samples} metrics lines of one engine run (another run of the log hits) report"
                if one_run else f"no error; {samples} metrics lines report" if samples else
                f"no error; the /metrics counters report {scraped:g} prefix-cache queries and no hit:") +
               f" a 0% prefix-cache hit rate with prefix caching on, on "
               f"{', '.join(setup.why)}: a hybrid caches its Mamba/GDN states only at block boundaries"
               + (f" of {block}-token blocks" if block else " of its raised attention block (hundreds to thousands of "
                  "tokens)") + ", so shared prefixes that do not span a whole block -- or whose state was not "
               "checkpointed there -- never hit"
               + (f"; the requests share {shared} tokens, less than one {block}-token block" if shorter else "")
               + (f"; the report's run without the drafts hits ('{told}'): with drafts the states are not "
                  "checkpointed at the block boundaries a hit needs" if told else "")),
        title=f"{title_of('prefix_cache_degraded')}: a hybrid's prefix cache never hit",
        message=(f"prefix cache hit rate 0.0% over {samples} metrics lines" if samples else
                 f"no prefix-cache hit in {scraped:g} queried tokens (/metrics)"), numbers={
            **base_numbers, "prefix_cache_hit_rate_max": rate, "prefix_cache_hit_rate_samples": samples,
            **({"attention_block_size": block} if block else {}),
            **({"shared_prefix_tokens": shared} if isinstance(shared, int) else {})},
        evidence=fact_evidence(facts, "prefix_cache_hit_rate", "attention_block_size", "block_size_prose",
                               "shared_prefix_tokens"),
        missing=missing)


def _never_hit_counters(metrics: dict) -> float | None:
    """The tokens a /metrics scrape counts as looked up in the prefix cache when it counts no hit (vllm:prefix_cache_*;
    vllm:gpu_prefix_cache_* before 0.11); ``None`` otherwise."""
    for prefix in ("vllm:prefix_cache", "vllm:gpu_prefix_cache"):
        queries = metrics.get(f"{prefix}_queries_total", metrics.get(f"{prefix}_queries"))
        hits = metrics.get(f"{prefix}_hits_total", metrics.get(f"{prefix}_hits"))
        if isinstance(queries, (int, float)) and queries > 0 and hits == 0:
            return float(queries)
    return None


_OWN_KV_DRAFT = re.compile(r"eagle|draft_model|draft model|dflash|dspark|medusa", re.I)


def draft_capacity_loss(facts: LogFacts, setup: Setup, base_numbers: dict) -> Diagnosis | None:
    """No error, the report says the KV capacity fell, on a Mamba/GDN hybrid (or an MLA model) with a drafter that has
    attention layers of its own (EAGLE / a draft model): the drafter's layers need KV pages of their own, and the
    engine unifies every page to the largest -- a draft page larger than the target's raises the attention block and
    pads every state page to it, so the same memory holds fewer blocks (the draft vs hybrid KV layout, ``low``)."""
    said = facts.startup.get("capacity_prose")
    method = str(setup.spec_method or "")
    if not said or not (setup.hybrid or setup.mla) or not _OWN_KV_DRAFT.search(method) or kv_cache_idle(facts):
        return None
    block = facts.startup.get("attention_block_size")
    runs = [t for t in facts.startup.get("gpu_kv_cache_tokens_runs") or [] if isinstance(t, int)]
    nums = {**base_numbers, **facts.numbers}
    if block:
        nums["attention_block_size"] = block
    if len(runs) >= 2:
        nums.update(kv_cache_tokens_first=runs[0], kv_cache_tokens_last=runs[-1])
    return Diagnosis(
        category="kv_page_size", confidence="low", rule="failure_class", severity="warning",
        basis=(f"no error; the report says the KV capacity fell ('{said}') with a {method} drafter on {', '.join(setup.why)}: "
               "the drafter's attention layers need KV pages of their own and the engine unifies every page to the "
               "largest, so a draft page larger than the target's raises the block and pads every state page to it -- "
               "the same memory holds fewer blocks (the draft vs hybrid KV layout)"),
        title=f"{title_of('kv_page_size')} (silent: capacity lost to the drafter's KV pages)",
        message=f"KV capacity lower with the drafter: {said}", numbers=nums,
        evidence=fact_evidence(facts, "capacity_prose", "attention_block_size", "gpu_kv_cache_tokens"),
        missing=["the KV-cache groups and page sizes vLLM planned with and without the drafter (the probes record them: "
                 "VLLM_DIAG_DB=run.db), or the 'Setting attention block size' lines of both runs"])


def kv_quant_block_growth(facts: LogFacts, setup: Setup, base_numbers: dict) -> Diagnosis | None:
    """No error; two starts of a hybrid pasted side by side, the quantized-KV one with an attention block two or four
    times the other's, and the report says what got worse (prefix-cache hits, capacity, speed): the KV dtype halves the
    attention bytes per token but not the Mamba/GDN state page, so vLLM doubles the block to keep one page size --
    prefix hits come only at the larger block boundaries (the hybrid's prefix-cache class) and the requests that fit do
    not grow (quantized KV on a hybrid's layout), ``low``."""
    kv = str(facts.args.get("kv_cache_dtype") or "").lower()
    runs = [b for b in facts.startup.get("attention_block_size_runs") or [] if isinstance(b, int) and b > 0]
    said = (facts.startup.get("capacity_prose") or facts.startup.get("slow_prose")
            or ("prefix-cache hits" if facts.startup.get("hit_rate_prose") else None))
    if not setup.hybrid or not kv.startswith(QUANTIZED_KV_DTYPES) or len(runs) < 2 or not said:
        return None
    small, big = min(runs[-2:]), max(runs[-2:])
    if big // small not in (2, 4) or big % small:
        return None
    hits = facts.startup.get("hit_rate_prose") and not facts.startup.get("capacity_prose")
    # (lost hits are the hybrid's prefix-cache class, the larger block their cause; lost capacity is the layout's)
    return family_warning(
        facts, base_numbers, "prefix_cache_degraded" if hits else "kv_page_size", "low",
        basis=(f"no error; two starts of {', '.join(setup.why)}: with --kv-cache-dtype {kv} vLLM raised the attention "
               f"block from {small} to {big} tokens, because the quantized KV halves the attention bytes per token but "
               "not the Mamba/GDN state page that every page must match; the report's symptom ('" + str(said) + "') follows "
               "from that block: " + ("prefix-cache hits come only at the larger block's boundaries, so shared prefixes "
                                       f"shorter than {big} tokens stop hitting" if hits else
                                       "the same memory holds the same number of pages, so the requests that fit do "
                                       "not grow") + " -- quantized KV on a hybrid"),
        title=f"{title_of('prefix_cache_degraded' if hits else 'kv_page_size')} (silent: {kv} KV raised the hybrid's block "
              f"from {small} to {big} tokens)",
        message=f"{said} after --kv-cache-dtype {kv}",
        numbers={"attention_block_size_before": small, "attention_block_size": big,
                 "kv_cache_dtype": kv},
        evidence=("attention_block_size", "hit_rate_prose", "capacity_prose", "gpu_kv_cache_tokens"),
        missing=["the same load with --kv-cache-dtype auto and the shared-prefix lengths of the requests"])


def padding_capacity_loss(facts: LogFacts, setup: Setup, base_numbers: dict) -> Diagnosis | None:
    """No error; the report says fewer requests fit (or serving got slower) and vLLM's 'Padding mamba page size by N%'
    lines show the state pages padded far more in the failing start than in the other (or by a fifth or more): the
    padding holds nothing, so the same KV memory holds fewer blocks -- the hybrid's page-size unification (``low``)."""
    # (a slowdown told with the prefix-cache hits is the hits' symptom: the granularity reading's)
    # (and a slowdown the report's platform explains -- all-reduce over PCIe, P2P off, a throttled or shared GPU -- is
    # that platform's: padding costs capacity, not the speed of a step)
    platform = any(facts.startup.get(k) for k in ("custom_allreduce_off", "nccl_p2p_disabled", "gpu_throttled_prose",
                                                  "cotenant_prose"))
    said = facts.startup.get("capacity_prose") or (None if facts.startup.get("hit_rate_prose") or platform
                                                   else facts.startup.get("slow_prose"))
    runs = [p for p in facts.startup.get("mamba_padding_percent_runs") or [facts.startup.get("mamba_padding_percent")]
            if isinstance(p, (int, float))]
    if not said or not runs or setup.hybrid is False:
        return None
    worst, least = max(runs), min(runs)
    # (vLLM's own warning that it added empty layers to group the KV specs: "Add 3 padding layers, may waste at most
    # 8.33% KV cache memory" -- more of the same memory holding nothing)
    layers = facts.startup.get("kv_padding_waste_percent")
    layers = layers if isinstance(layers, (int, float)) and layers >= 5.0 else None
    if not (worst >= 20.0 or len(runs) >= 2 and worst >= 5.0 and worst >= 2 * least or layers and worst >= 5.0):
        return None
    blocks = [b for b in facts.startup.get("attention_block_size_runs") or [] if isinstance(b, int)]
    return family_warning(
        facts, base_numbers, "kv_page_size", "low",
        basis=(f"no error; the report says '{said}', and vLLM padded every Mamba/GDN state page by {worst:g}% to match "
               "the attention page" + (f" (the other start: {least:g}%)" if least < worst else "")
               + (f", with attention blocks of {' and '.join(map(str, blocks[-2:]))} tokens" if len(blocks) >= 2 else "")
               + (f", and added {facts.startup.get('kv_padding_layers')} empty padding layers to group the KV specs (up "
                  f"to {layers:g}% of the KV memory)" if layers else "")
               + ": that share of every state page holds nothing, so the same KV memory holds fewer blocks and fewer "
                 "requests at once -- the hybrid's page-size unification"),
        title=f"{title_of('kv_page_size')} (silent: state pages padded by {worst:g}%)",
        message=f"capacity lost to Mamba page padding: {said}",
        numbers={"mamba_padding_percent": worst, **({"mamba_padding_percent_least": least} if least < worst else {})},
        evidence=("capacity_prose", "slow_prose", "mamba_padding_percent", "attention_block_size", "kv_padding_layers"),
        missing=["the 'Available KV cache memory' and block counts of both starts; a start with the block size vLLM picks "
                 "itself"])


def state_blocks_capacity(facts: LogFacts, setup: Setup, base_numbers: dict) -> Diagnosis | None:
    """No error, fewer requests run than expected, on a hybrid: vLLM's MambaManager holds state blocks of every
    Mamba/GDN KV-cache group per running request -- the running state, in the 'align' mode of prefix caching the
    block-boundary state too, and under speculative decoding k speculative blocks (1 + k, or 2 + k in align mode) --
    each a whole raised block of the shared pool, whatever the request's length. The stats lines show the cache full
    with each running request holding far more blocks than its tokens need: the hybrid's block budget caps
    concurrency, which 'GPU KV cache size' (tokens at max_model_len) does not show (``low``: the arithmetic, not the
    KV cache config). Without drafts the report must say how long its requests are."""
    said, k, st = facts.startup.get("capacity_prose"), max(setup.spec_k, 0), facts.startup
    mode = st.get("mamba_cache_mode") or setup.mamba_cache_mode or ("align" if setup.prefix_caching else "none")
    fullest = st.get("blocks_at_fullest")
    told = st.get("request_tokens_prose")
    told = told if isinstance(told, int) and told > 0 else None
    if not said or not setup.hybrid or mode not in ("align", "none", "all") or not fullest or fullest[2] < 90 \
            or not k and told is None:
        return None
    blocks, running, usage, tokens = fullest
    block = st["attention_block_size"]
    # (the pool's own size where /metrics' cache_config_info labels it, else estimated from the KV cache size's tokens)
    pool = (st.get("cache_config") or {}).get("num_gpu_blocks")
    pool = pool if isinstance(pool, int) and pool > 0 else None
    if pool:
        blocks = usage / 100 * pool / running
    attention = -(-told // block) if told else 1
    # (vLLM's MambaSpec: the running state, k speculative blocks, and in align mode the block-boundary state; in 'all'
    # mode a state per block of the request's tokens, as attention holds)
    base = attention if mode == "all" else 2 if mode == "align" else 1
    per_group = base + k
    surplus = blocks - attention
    if surplus < max(per_group, attention):
        return None  # (the requests' own tokens fill most of what they hold: the states are not what caps them)
    groups = max(1, round(surplus / per_group))
    held = ("a state per block of the request's tokens" if mode == "all" else
            "the running state, the block-boundary state" if mode == "align" else "the running state") \
        + (" and k speculative blocks" if k else "")
    return family_warning(
        facts, base_numbers, "mamba_block_budget", "low",
        basis=(f"no error; the report says '{said}' on {', '.join(setup.why)} with the Mamba cache in '{mode}' mode"
               + (f" and speculative decoding (k={k})" if k else "") + ": every Mamba/GDN KV-cache group then holds up to "
               + (f"{base} + k = " if k else "") + f"{per_group} state block(s) per running request ({held}), each a "
               f"whole {block}-token block of the shared pool"
               + ("" if mode == "all" else ", whatever the request's length") + "; the stats lines show "
               f"{running} requests filling {usage:g}% of "
               + (f"{pool:,}" if pool else f"about {tokens // block:,}")
               + f" blocks, {blocks:.1f} blocks each -- "
               f"{attention} for the attention of " + (f"their ~{told:,} tokens" if told else "a short request")
               + f" and the rest (~{groups} group(s) x {per_group}) for the states. 'GPU KV cache size' counts tokens "
                 "at max_model_len, not these per-request state blocks: the hybrid's block budget caps concurrency"),
        title=(f"{title_of('mamba_block_budget')} (silent: {per_group} state block(s) per Mamba group per request"
               + (f" under k={k} drafts" if k else "") + f" cap running requests at ~{running})"),
        message=f"capacity without an error: {said}",
        numbers={"num_speculative_tokens": k, "attention_block_size": block, "num_requests_running_at_full": running,
                 "blocks_per_running_request": round(blocks, 1), "state_blocks_per_group": per_group,
                 **({"num_gpu_blocks": pool} if pool else {"num_gpu_blocks_estimate": tokens // block})},
        evidence=("capacity_prose", "mamba_cache_mode", "attention_block_size", "gpu_kv_cache_tokens",
                  "num_requests_running_max", "gpu_kv_cache_usage_percent_max"),
        missing=["the KV cache config's num_blocks and groups (the probes record them: VLLM_DIAG_DB=run.db), and the "
                 "running count with fewer speculative tokens or without prefix caching"])

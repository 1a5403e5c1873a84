"""prefix_cache_granularity -- prefix caching that is on but cannot help much (or is off).

* Hybrid models cache Mamba states only at block boundaries ('align' mode, 0.20+ default; 'all'
  mode uses chunk-aligned blocks): with an attention block of N tokens (often 500-4000 after the
  Mamba alignment) a shared prefix shorter than N never hits, and a hit reuses at most
  ``floor(prefix / N) x N`` tokens.
* MLA models on a non-GPU platform: vLLM forces prefix caching off ("MLA is enabled on a non-GPU
  platform; forcing chunked prefill and prefix caching to be disabled").
* Log: ``Prefix cache hit rate: 0.0%`` over several metric lines with prefix caching on.
* Log: vLLM's startup line that a hybrid model without prefix-caching support runs with it off
  ("Hybrid or mamba-based model detected without support for prefix caching: disabling", 0.11-0.17).

Versions: all. Severity: warning.
"""

from __future__ import annotations

import re

from ..model import Comparison, Evidence, Finding
from ._util import cfg, log_evidence, state_source
from .base import Rule, RuleContext
from .kv_cache_pressure import kv_cache_full

ID = "prefix_cache_granularity"
# a complaint about the prompt's side of serving, which prefix hits speed up (also read by the post-mortem's ordering)
PREFILL_COMPLAINT = re.compile(r"TTFT|first token|prefill|prompt", re.I)
MIN_INTERESTING_BLOCK = 256


def check(ctx: RuleContext) -> list[Finding]:
    out: list[Finding] = []
    st = ctx.state
    if st is not None and st.config.get("prefix_caching_forced_off"):
        out.append(Finding(rule=ID, category="prefix_cache_degraded", title="Prefix caching is forced off",
                           severity="warning", message=f"--enable-prefix-caching is ignored: {st.config['prefix_caching_forced_off']}.",
                           evidence=[Evidence("enable_prefix_caching requested, platform disables it", source=state_source(st))]))
    if ctx.log is not None and ctx.log.startup.get("prefix_caching_disabled_hybrid") and ctx.log.root is None and (
            cfg(ctx, "enable_prefix_caching") or ctx.log.startup.get("prefix_cache_hit_rate") is not None):
        # vLLM's own startup line: the hybrid's layers have no prefix-caching support in this release, so the
        # engine serves with prefix caching off whatever was asked (0.11-0.17; Mamba 'align' mode lifts it); said
        # when the report is about it -- prefix caching asked for, or its hit rate watched -- and nothing crashed
        rate = ctx.log.startup.get("prefix_cache_hit_rate_max")
        out.append(Finding(
            rule=ID, category="prefix_cache_degraded", title="Prefix caching is forced off", severity="warning",
            message="vLLM turned prefix caching off at startup: this hybrid (Mamba/GDN) model has no prefix-caching "
                    "support in this release, so no prefix is ever reused"
                    + (f" (the metrics report a {float(rate):g}% hit rate)" if rate is not None else "") + ".",
            evidence=log_evidence(ctx, None, "prefix_caching_disabled_hybrid", "prefix_cache_hit_rate"),
            numbers={"prefix_cache_hit_rate_max": rate} if rate is not None else {},
            confidence="high", basis="vLLM's startup line that it disables prefix caching for this hybrid model"))
    if ctx.log is not None and ctx.log.root is None and cfg(ctx, "enable_prefix_caching") is False \
            and ctx.log.startup.get("prefix_cache_hit_rate_max") == 0.0 and ctx.log.startup.get("hit_rate_prose") \
            and (ctx.log.startup.get("attention_block_size") or ctx.log.startup.get("mamba_padding_percent") is not None) \
            and not ctx.log.startup.get("prefix_caching_disabled_hybrid"):
        # the engine ran with prefix caching off (vLLM leaves it off for Mamba/GDN hybrids unless asked) and the report
        # asks why nothing hits: nothing is cached at all -- the command's own choice where it passed the flag (outside
        # the families), the hybrid default where it did not
        told = f"{ctx.log.command or ''} {(ctx.log.lines.get('non_default_args') or (0, ''))[1]}"
        asked_off = bool(re.search(r"--no-enable-prefix-caching\b|['\"]enable_prefix_caching['\"]\s*:\s*False\b", told))
        out.append(Finding(
            rule=ID, category="other" if asked_off else "prefix_cache_degraded",
            title="Prefix caching is off: the command turns it off" if asked_off else "Prefix caching is off on this hybrid",
            severity="warning",
            message=("the command passes --no-enable-prefix-caching, so no prefix is reused: the metrics' 0% hit rate is "
                     "that, not a broken cache." if asked_off else
                     "the engine's config says enable_prefix_caching=False (vLLM leaves it off for Mamba/GDN hybrids "
                     "unless --enable-prefix-caching is passed), so no prefix is reused: the metrics' 0% hit rate is "
                     "that, not a broken cache."),
            evidence=log_evidence(ctx, None, "engine_config", "prefix_cache_hit_rate"),
            numbers={"prefix_cache_hit_rate_max": 0.0},
            confidence="medium", basis="the engine config's enable_prefix_caching=False on a hybrid (its attention block "
                                       "raised for a Mamba page) and a 0% hit rate the report asks about"))
    mode = cfg(ctx, "mamba_cache_mode")
    block = cfg(ctx, "mamba_block_size") if mode in ("align", "all") else None
    if ctx.log is not None and block is None and ctx.log.startup.get("mamba_cache_mode") in ("align", "all"):
        block = ctx.log.startup.get("attention_block_size")
        mode = ctx.log.startup.get("mamba_cache_mode")
    # (a log whose metrics show the cache hitting well, with no word against its hits or the prefill's time, has no use
    # for the warning: the prefixes it serves are longer than the block)
    hitting = ctx.log is not None and isinstance(ctx.log.startup.get("prefix_cache_hit_rate_max"), (int, float)) \
        and ctx.log.startup["prefix_cache_hit_rate_max"] >= 30 and not ctx.log.startup.get("hit_rate_prose") \
        and not PREFILL_COMPLAINT.search(" ".join(str((ctx.log.lines.get(k) or (0, ""))[1])
                                               for k in ("slow_prose", "spec_slower_prose", "capacity_prose")))
    if cfg(ctx, "enable_prefix_caching") and block and int(block) >= MIN_INTERESTING_BLOCK and not hitting:
        ev = ([Evidence(f"mamba_cache_mode {mode}, Mamba/attention block {block} tokens", source=state_source(st))]
              if st is not None else [])
        if ctx.log is not None:  # what the log itself states of it
            ev += log_evidence(ctx, None, "mamba_cache_mode", "attention_block_size")
        out.append(Finding(
            rule=ID, category="prefix_cache_degraded", title=f"Hybrid prefix-cache hits only in {block}-token steps",
            severity="warning",
            message=(f"Mamba states are cached only at {block}-token block boundaries (cache mode '{mode}'): shared prefixes "
                     f"shorter than {block} tokens never hit, longer ones reuse floor(prefix/{block}) x {block} tokens."),
            evidence=ev, comparisons=[Comparison("prefix-cache granularity", expected=_plain_block(ctx), actual=int(block),
                                                 unit="tokens")],
            numbers={"granularity_tokens": int(block), "mamba_cache_mode": mode}))
    if ctx.log is not None and cfg(ctx, "enable_prefix_caching") is not False:
        rate = ctx.log.startup.get("prefix_cache_hit_rate_max")
        samples = ctx.log.startup.get("prefix_cache_hit_rate_samples") or 0
        # (vLLM's raised block too, or the one the reporter quotes: "block size ended up at 1056")
        size = cfg(ctx, "block_size") or ctx.log.startup.get("attention_block_size") or ctx.log.startup.get(
            "block_size_prose")
        # Mamba cache mode 'align' / 'all' is set only with prefix caching on (vllm/config: "Mamba cache mode is set to
        # 'align' ... when prefix caching and speculative decoding are enabled")
        pc_on = cfg(ctx, "enable_prefix_caching") or ctx.log.startup.get("mamba_cache_mode") in ("align", "all")
        if ctx.log.startup.get("unique_prompts_prose"):
            return out  # (the report says its prompts share no prefix: a 0% hit rate is all a cache can do there)
        if rate is not None and float(rate) == 0.0 and samples >= 1 and not block and isinstance(size, int) \
                and not isinstance(size, bool) and size >= MIN_INTERESTING_BLOCK and pc_on \
                and not ctx.log.startup.get("prefix_caching_disabled_hybrid"):
            # prefix caching keys whole blocks only (any model): with a block of N tokens -- a hybrid's attention
            # block raised to hold a Mamba page, hundreds to thousands of tokens -- a shared prefix shorter than N
            # never hits, so a 0% hit rate is what the block size predicts before anything is broken
            out.append(Finding(
                rule=ID, category="prefix_cache_degraded", title=f"Prefix-cache hits only in {size}-token blocks",
                severity="warning",
                message=(f"the metrics report a 0% prefix cache hit rate with a {size}-token block: prefix caching reuses "
                         f"whole blocks only, so shared prefixes shorter than {size} tokens never hit."),
                evidence=log_evidence(ctx, None, "prefix_cache_hit_rate"),
                comparisons=[Comparison("prefix-cache granularity", expected=_plain_block(ctx), actual=size, unit="tokens")],
                numbers={"granularity_tokens": size, "prefix_cache_hit_rate_max": rate}))
        elif rate is not None and float(rate) == 0.0 and samples >= 5 and \
                not ctx.log.startup.get("prefix_caching_disabled_hybrid") and not kv_cache_full(ctx):
            # (a full pool preempting requests evicts every cached block: kv_cache_pressure says so)
            out.append(Finding(rule=ID, category="prefix_cache_degraded", title="Prefix cache never hit",
                               severity="warning", message=f"{samples} metrics lines all report a 0.0% prefix cache hit rate.",
                               evidence=log_evidence(ctx, None, "prefix_cache_hit_rate"),
                               numbers={"prefix_cache_hit_rate_max": rate, "samples": samples}))
        # Prometheus counters pasted from /metrics: queries (tokens looked up) with no hit at all
        metrics = ctx.log.startup.get("metrics") or {}
        queries = metrics.get("vllm:prefix_cache_queries_total", metrics.get("vllm:gpu_prefix_cache_queries_total"))
        hits = metrics.get("vllm:prefix_cache_hits_total", metrics.get("vllm:gpu_prefix_cache_hits_total"))
        if isinstance(queries, (int, float)) and isinstance(hits, (int, float)) and queries >= 100 and hits == 0 \
                and not any(f.title == "Prefix cache never hit" for f in out):
            out.append(Finding(rule=ID, category="prefix_cache_degraded", title="Prefix cache never hit",
                               severity="warning",
                               message=f"vllm:prefix_cache_queries_total = {queries:g} tokens looked up, "
                                       f"vllm:prefix_cache_hits_total = 0: no prefix was ever reused"
                                       + (f" (hits come only in {block}-token blocks)" if block else "") + ".",
                               evidence=[Evidence("vllm:prefix_cache_queries_total / vllm:prefix_cache_hits_total "
                                                  "metrics in the log", source="log")],
                               numbers={"prefix_cache_queries_total": queries, "prefix_cache_hits_total": hits}))
    return out


def _plain_block(ctx: RuleContext) -> int:
    """The block size (= hit granularity) the engine would use without the Mamba alignment."""
    st = ctx.state
    requested = st.environment.get("block_size_requested") if st is not None else None
    value = requested or cfg(ctx, "user_specified_block_size")
    # (vLLM's cache config also has a boolean user_specified_block_size: a flag, not a size)
    return int(value) if isinstance(value, (int, str)) and not isinstance(value, bool) and str(value).isdigit() else 16


RULE = Rule(id=ID, title="Prefix caching degraded or off", category="prefix_cache_degraded", check=check, versions="all",
            reads=("state", "log"), doc=__doc__ or "")

"""Failures that raise nothing: output that goes wrong under speculative decoding (the reporter's words, an
evaluation's failed score check), drafts that slow or stop being accepted, and the order in which a report without an
error is read (``quiet_report``: causes outside the families first, then the families' silent classes -- lost
capacity and prefix hits are :mod:`.silent_capacity`'s -- then the near misses). The class comes from the symptom,
the configuration and vLLM's own warnings, never from a failure site, so every diagnosis here is ``low`` or
``medium``."""

from __future__ import annotations

import re

from ..model import Evidence, LogException, LogFacts
from ..rules.kv_scales_hybrid import calibrates_scales
from .clientside import (answer_as_reasoning, chat_template_twice, chunks_counted_as_tokens, client_capped_concurrency,
                         client_path_corruption, encoded_twice, eval_format_only, eval_misgraded, foreign_chat_format,
                         foreign_template_prompts, foreign_tokenizer, hard_to_draft_text, history_resent,
                         idle_engine_hang, ignore_eos_loops, left_truncated_prompts, load_on_one_engine,
                         prompt_logprobs_skip_cache, proxy_buffers_stream, proxy_retry_duplicates, proxy_slows_stream,
                         proxy_timeout_truncation, random_prompts_output, raw_prompt_transcript,
                         reasoning_spends_budget, repeats_rewarded, replayed_prompts_hit, replicas_differ,
                         salted_prefixes, short_outputs_workload, split_routing, stop_string_truncation,
                         thinking_in_content, token_cap_truncation, tool_calls_unparsed, unique_prompts_miss,
                         varying_prefix)
from .configuration import Setup, drafts_outgrow_budget, ran_eager
from .diagnosis import Diagnosis, fact_evidence, family_warning, log_version, title_of
from .platform_slowdowns import (cotenant_gpu_slowdown, cpu_starved_slowdown, gpu_throttled_slowdown, mig_slice_limits,
                                 rocm_without_aiter, socket_network_slowdown, wsl_slowdown)
from .quietmisses import (SYMPTOMS, activation_reserve_capacity, batch_variant_numerics, blocking_launch_slowdown,
                          blocks_per_running_request, collective_hang, cpu_offload_slowdown, drafts_never_accepted,
                          eager_slowdown, grammar_compile_stall, hot_sampling_garbage, kv_saturated_workload,
                          long_context_capacity, long_prompt_prefill, lora_slot_queueing, low_memory_share_capacity,
                          mismatched_drafter, modelfree_drafts_unmatched, pcie_allreduce_slowdown,
                          prefill_budget_slowdown, prefill_chunks_stall_decodes, random_prompts_acceptance,
                          sampled_away_acceptance, sampled_by_generation_config, scheduler_cap, slow_tokenizer_latency,
                          slow_weight_loading, spec_batch_slowdown, static_rope_quality, toggles_clear_families,
                          untuned_moe_slowdown)
from .silent_capacity import (draft_capacity_loss, hybrid_prefix_never_hit, kv_quant_block_growth,
                              padding_capacity_loss, state_blocks_capacity)
from .specpath import model_names, no_spec_path
from .symptom_words import BUNCHED_STREAM, FIRST_TOKEN

__all__ = ["fp16_overflow_quality", "own_quality_gate", "quiet_report", "silent_corruption",
           "unexplained_symptom"]


# hybrids whose linear-attention builder has no speculative-decoding path (MiniMax's lightning attention)
_NO_SPEC_BUILDER = re.compile(r"MiniMaxText01|MiniMaxM1|minimax[-_]?(?:m1|text)", re.I)


def unrounded_capture_sizes(facts: LogFacts, setup: Setup, base_numbers: dict) -> Diagnosis | None:
    """No error; before 0.12 vLLM did not round the CUDA-graph capture sizes to multiples of 1 + k (issue #28207, fixed
    by CompilationConfig.adjust_cudagraph_sizes_for_spec_decode): a uniform spec-decode step of n x (1 + k) tokens that
    is no capture size is padded to the next one and replayed through a full decode graph whose rows split a request
    -- acceptance and output degrade at some concurrencies and not others (``low``: the release, the sizes and the
    load, not a recorded step)."""
    said = facts.startup.get("acceptance_prose") or facts.startup.get("wrong_output_prose")
    k = setup.spec_k
    v = log_version(facts)
    sizes = sorted({s for s in facts.startup.get("cudagraph_capture_sizes") or [] if isinstance(s, int) and s > 0})
    n = facts.startup.get("concurrent_requests")
    if not said or not k or k < 1 or v is None or v >= (0, 12, 0) or ran_eager(facts) or not sizes \
            or not isinstance(n, int) or n < 2:
        return None
    mode = str(facts.args.get("cudagraph_mode") or "").upper()
    if ("NONE" in mode or "PIECEWISE" in mode) and "FULL" not in mode:
        return None
    tokens = n * (k + 1)
    padded = next((s for s in sizes if s >= tokens), None)
    odd = [x for x in sizes if x % (k + 1)]
    if padded is None or padded == tokens or not odd:
        return None  # (the step has a graph of its own size, or the sizes are rounded to 1 + k)
    return family_warning(
        facts, base_numbers, "cudagraph_shape", "low",
        basis=(f"no error; the report says '{said}' at {n} concurrent requests under speculative decoding (k={k}) on vLLM "
               f"{facts.vllm_version}: a uniform spec-decode step of {n} x {k + 1} = {tokens} tokens has no CUDA graph of "
               f"its size and is padded to {padded}; the release captures its full decode graphs at sizes that are not "
               f"multiples of {k + 1} ({', '.join(map(str, odd[:6]))}), so graphs replay rows that split a request "
               f"(releases before 0.12 do not round the capture sizes to multiples of 1 + k)"),
        title=f"{title_of('cudagraph_shape')} (silent: {tokens}-token spec-decode steps padded to a {padded}-token graph)",
        message=f"spec decoding degrades at some concurrencies: {said}",
        numbers={"num_speculative_tokens": k, "concurrent_requests": n,
                 "num_scheduled_tokens": tokens, "padded_num_tokens": padded},
        evidence=("acceptance_prose", "wrong_output_prose", "cudagraph_capture_sizes", "concurrent_requests",
                  "engine_config"),
        missing=["the same load with --enforce-eager or cudagraph_capture_sizes that are multiples of "
                 f"{k + 1}, or on vLLM 0.12+"])


# the report ties wrong output to a cache hit: "the second identical request returns nonsense", "garbage on repeated
# prompts", "only when prefix caching is on"
_ON_HIT = re.compile(r"\b(?:second|repeated|identical|same (?:prompt|request|question)|cached|cache hits?|prefix[- ]cache hits?|"
                     r"(?:when|with|once) (?:automatic )?prefix[- ]caching (?:is )?(?:on|enabled))\b", re.I)


def quiet_report(facts: LogFacts, setup: Setup, base_numbers: dict, batch_ev: list[Evidence]) -> Diagnosis | None:
    """A report without an error: the first reading that fits, those a cause outside the families explains first
    (sampling defaults, a RoPE override), then the families' silent classes, then the near misses read from metrics
    and settings. When the report's own A/B tests take the families out, a reading that names the cause outside them
    still says more than the tests alone; a family's reading then gives way to the tests."""
    cleared = toggles_clear_families(facts, setup, base_numbers)
    d = _first_reading(facts, setup, base_numbers, batch_ev)
    if cleared is not None and (d is None or d.category != "other"):
        d = cleared
    if d is not None:
        d.answers_symptom = any(facts.startup.get(k) for k in SYMPTOMS)
    return d


def _first_reading(facts: LogFacts, setup: Setup, base_numbers: dict, batch_ev: list[Evidence]) -> Diagnosis | None:
    return (fp16_overflow_quality(facts, base_numbers)
            or slow_tokenizer_latency(facts, base_numbers) or slow_weight_loading(facts, base_numbers)
            or reasoning_spends_budget(facts, base_numbers) or token_cap_truncation(facts, base_numbers)
            or left_truncated_prompts(facts, base_numbers)
            or proxy_timeout_truncation(facts, base_numbers) or repeats_rewarded(facts, base_numbers)
            or client_path_corruption(facts, base_numbers) or encoded_twice(facts, base_numbers)
            or chunks_counted_as_tokens(facts, base_numbers) or raw_prompt_transcript(facts, base_numbers)
            or proxy_retry_duplicates(facts, base_numbers)
            or ignore_eos_loops(facts, base_numbers)
            or proxy_slows_stream(facts, base_numbers) or proxy_buffers_stream(facts, base_numbers)
            or chat_template_twice(facts, base_numbers) or foreign_chat_format(facts, base_numbers)
            or foreign_template_prompts(facts, base_numbers)
            or thinking_in_content(facts, base_numbers) or answer_as_reasoning(facts, base_numbers)
            or tool_calls_unparsed(facts, base_numbers)
            or stop_string_truncation(facts, base_numbers)
            or replicas_differ(facts, base_numbers) or eval_format_only(facts, base_numbers)
            or eval_misgraded(facts, base_numbers)
            or batch_variant_numerics(facts, setup, base_numbers)
            or foreign_tokenizer(facts, base_numbers)
            or random_prompts_acceptance(facts, setup, base_numbers) or random_prompts_output(facts, base_numbers)
            or short_outputs_workload(facts, base_numbers)
            or modelfree_drafts_unmatched(facts, setup, base_numbers)
            or lora_slot_queueing(facts, base_numbers) or client_capped_concurrency(facts, base_numbers)
            or idle_engine_hang(facts, base_numbers)
            or history_resent(facts, base_numbers)
            or load_on_one_engine(facts, base_numbers)
            or grammar_compile_stall(facts, base_numbers)
            or cpu_starved_slowdown(facts, base_numbers) or gpu_throttled_slowdown(facts, base_numbers)
            or socket_network_slowdown(facts, base_numbers) or cotenant_gpu_slowdown(facts, base_numbers)
            or mig_slice_limits(facts, base_numbers) or wsl_slowdown(facts, base_numbers)
            or rocm_without_aiter(facts, base_numbers)
            or prefill_chunks_stall_decodes(facts, base_numbers)
            or sampled_by_generation_config(facts, base_numbers) or hot_sampling_garbage(facts, base_numbers)
            or static_rope_quality(facts, base_numbers)
            or draft_capacity_loss(facts, setup, base_numbers) or kv_quant_block_growth(facts, setup, base_numbers)
            or low_memory_share_capacity(facts, base_numbers)
            or padding_capacity_loss(facts, setup, base_numbers) or unrounded_capture_sizes(facts, setup, base_numbers)
            or fp8_kv_quality(facts, setup, base_numbers)
            or state_blocks_capacity(facts, setup, base_numbers)
            or activation_reserve_capacity(facts, base_numbers) or scheduler_cap(facts, base_numbers)
            or kv_saturated_workload(facts, base_numbers)
            or indexer_native_next_n_quality(facts, setup, base_numbers) or mla_decode_quality(facts, setup, base_numbers)
            or reset_running_stale_state(facts, setup, base_numbers)
            or silent_corruption(facts, setup, base_numbers, batch_ev)
            or drafts_never_accepted(facts, setup, base_numbers) or mismatched_drafter(facts, setup, base_numbers)
            or sampled_away_acceptance(facts, base_numbers) or hard_to_draft_text(facts, base_numbers)
            or acceptance_lost_on_mixed_steps(facts, setup, base_numbers)
            # (a per-request value at the prompts' head, shown in the report, before an inference from the set-up that
            # a report about the hits also names low acceptance)
            or varying_prefix(facts, base_numbers)
            or acceptance_lost_on_prefix_hits(facts, setup, base_numbers) or salted_prefixes(facts, base_numbers)
            or unique_prompts_miss(facts, base_numbers)
            or split_routing(facts, base_numbers)
            or prompt_logprobs_skip_cache(facts, base_numbers)
            or replayed_prompts_hit(facts, base_numbers)
            or hybrid_prefix_never_hit(facts, setup, base_numbers) or cpu_offload_slowdown(facts, base_numbers)
            or eager_slowdown(facts, base_numbers) or blocking_launch_slowdown(facts, base_numbers)
            or pcie_allreduce_slowdown(facts, base_numbers)
            or collective_hang(facts, base_numbers)
            or capture_ceiling_slowdown(facts, setup, base_numbers) or indexer_flattening_slowdown(facts, base_numbers)
            or spec_slowdown(facts, setup, base_numbers) or untuned_moe_slowdown(facts, base_numbers)
            or spec_batch_slowdown(facts, setup, base_numbers) or long_prompt_prefill(facts, base_numbers)
            or long_context_capacity(facts, base_numbers)
            or prefill_budget_slowdown(facts, setup, base_numbers))


def fp16_overflow_quality(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, the output wrong, and vLLM cast a bfloat16 checkpoint to float16: activations overflow fp16's range
    into inf / NaN logits -- garbage or one token repeated, whatever the model's layers or drafts (first: a drafts' or
    an MLA decode's reading of the same symptom would read the numerics as theirs)."""
    symptom = facts.startup.get("wrong_output_prose")
    cast = facts.startup.get("dtype_cast_from") == "bfloat16" and facts.startup.get("dtype_cast_to") == "float16"
    # (or the command asks for float16 of a model the report says is fine in bfloat16)
    asked = str(facts.args.get("dtype") or "").lower() in ("float16", "half", "fp16") and facts.startup.get("bf16_fine_prose")
    if not (symptom and (cast or asked)):
        return None
    return Diagnosis(
        category="other", confidence="medium", rule="near_miss", severity="warning",
        basis=("no error in the log; the report says the output goes wrong and "
               + ("vLLM cast the bfloat16 checkpoint to float16 ('Casting torch.bfloat16 to torch.float16')" if cast else
                  f"the command runs it in float16 while the report finds it right in bfloat16 "
                  f"('{facts.startup.get('bf16_fine_prose')}')")
               + ": activations of a model trained in bfloat16 overflow float16's range (inf / NaN logits), outside "
                 "the hybrid/spec-decode families"),
        title="float16 overflow: a bfloat16 model run in float16", message=f"wrong output without an error: {symptom}",
        numbers={**base_numbers, **facts.numbers}, evidence=fact_evidence(facts, "dtype_cast_from", "bf16_fine_prose", "wrong_output_prose"),
        missing=["a run with --dtype bfloat16 (or auto) on a GPU that has it; fp16-only GPUs (V100, T4) need a "
                 "float16-safe checkpoint"])


def fp8_kv_quality(facts: LogFacts, setup: Setup, base_numbers: dict) -> Diagnosis | None:
    """No error, quality down, no drafts, and an fp8 KV cache without calibrated scales: K/V quantized with a scale of
    1.0 lose precision, most over long contexts -- numerics, outside the families (``low``: the report's A/B says it)."""
    symptom = facts.startup.get("wrong_output_prose")
    kv = str(facts.args.get("kv_cache_dtype") or facts.startup.get("kv_cache_dtype_logged") or "").lower()
    # with drafts on, only a loss that grows with the context under scales vLLM itself says are the defaults names the
    # K/V numerics (a draft or state fault does not grow with the context; an MLA kernel that warned of an uneven
    # query is the drafts' own limit)
    lengthwise = facts.startup.get("length_dependent_prose")
    default_scales = facts.startup.get("kv_scale_default_dtype")
    if setup.spec_k > 0 and not (lengthwise and default_scales and not facts.startup.get("mla_uneven_query")):
        return None
    if not symptom or not kv.startswith("fp8") or (setup.hybrid and calibrates_scales(
            facts.args.get("calculate_kv_scales"), kv, log_version(facts))):
        return None  # (scales calibrated on a hybrid's uninitialised state: the KV layout class, silent_corruption)
    why = (f"and the loss grows with the context ('{lengthwise}')" if setup.spec_k > 0 else "and no drafts")
    return Diagnosis(
        category="other", confidence="low", rule="near_miss", severity="warning",
        basis=(f"no error; the report says quality dropped ('{symptom}') with an {kv} KV cache {why}: K/V quantized to "
               "fp8 without calibrated scales (a checkpoint without k/v scales runs with 1.0"
               + (", as vLLM logged" if default_scales else "") + ") lose precision, most over long contexts -- "
               "numerics, outside the hybrid/spec-decode families"),
        title=f"Quality drop from an uncalibrated {kv} KV cache (numerics, not the engine's state)",
        message=f"quality drop without an error: {symptom}", numbers={**base_numbers, **facts.numbers},
        evidence=fact_evidence(facts, "wrong_output_prose", "length_dependent_prose", "kv_scale_default_dtype",
                               "non_default_args", "command"),
        missing=["the same evaluation with --kv-cache-dtype auto, and with a checkpoint that carries k/v scales"])


# a slow start, not slow serving: the weights' load, a download, compilation, the engine's start-up
_STARTUP_SLOW = re.compile(r"\b(?:load\w*|download\w*|compil\w*|start(?:s|ing|up|-up)?|boot\w*|init\w*|warm[- ]?up)\b", re.I)


def acceptance_lost_on_mixed_steps(facts: LogFacts, setup: Setup, base_numbers: dict) -> Diagnosis | None:
    """No error, draft acceptance falls on a hybrid under drafts, and the report ties it to steps that mix prefills or
    ragged draft counts with the spec decodes (its words, or the builder's counts it printed): the Mamba/GDN
    builders split such a batch by kind, and a spec-decode row on another kind's state path drafts from a wrong state
    -- the drafts are rejected while the output stays right (``low``, the builders' mixed batch)."""
    said = facts.startup.get("acceptance_prose")
    if not said or not setup.hybrid or setup.spec_k <= 0 or not setup.mixed_evidence or setup.prefix_caching_needed:
        return None
    return family_warning(
        facts, base_numbers, "mixed_batch", "low",
        basis=(f"no error; the report says draft acceptance falls ('{said}') on {', '.join(setup.why)} and ties it to "
               f"mixed steps ({setup.mixed_evidence}): the Mamba/GDN builders split a batch by kind, and a spec-decode "
               "row taken down another kind's state path drafts from a wrong recurrent state, so its drafts are "
               "rejected -- the builders on a mixed decode / spec-decode batch"),
        title=f"{title_of('mixed_batch')} (silent: acceptance lost on mixed steps)",
        message=f"acceptance falls without an error: {said}", evidence=("acceptance_prose", "mixed_prose"),
        missing=["acceptance per step split by the step's mix (prefills, ragged drafts); a run with the probes on "
                 "(VLLM_DIAG_DB=run.db) records each step's batch and the builders' split"])


def acceptance_lost_on_prefix_hits(facts: LogFacts, setup: Setup, base_numbers: dict) -> Diagnosis | None:
    """No error, draft acceptance falls on a hybrid under drafts once prefix caching hits (the report ties it to the
    cache, or the metrics show hits): a state restored from a cached block into another slot than the spec-decode path
    reads makes the target verify against a wrong state -- the drafts are rejected (``low``, the state indices)."""
    said = facts.startup.get("acceptance_prose")
    hit = facts.startup.get("prefix_cache_hit_rate_max")
    hits = isinstance(hit, (int, float)) and hit > 0
    if not said or not setup.hybrid or setup.spec_k <= 0 or not setup.prefix_cached_states or not (
            hits or setup.prefix_caching_needed):
        return None
    if not setup.prefix_caching_needed and drafts_outgrow_budget(facts, setup):
        return None  # (a full batch's drafts do not fit the step's token budget: the scheduler trims them -- the budget's)
    if not setup.prefix_caching_needed and facts.startup.get("slow_prose") and ran_eager(facts):
        return None  # (a slow report on an eager run: the launch-bound steps are its reading, not the drafts' state)
    if facts.startup.get("persists_without_pc_prose"):
        return None  # (the acceptance stays as low with prefix caching off: no restored state is behind it)
    return family_warning(
        facts, base_numbers, "state_index", "low",
        basis=(f"no error; the report says draft acceptance falls ('{said}') on {', '.join(setup.why)} with prefix caching "
               + (f"hitting (up to {hit:g}%)" if hits else f"('{setup.prefix_caching_needed}')")
               + ": a Mamba/GDN state restored from a cached block is read through the state indices the spec-decode "
                 "path uses; restored into another slot, the target verifies the drafts against a wrong state and "
                 "rejects them"),
        title=f"{title_of('state_index')} (silent: acceptance lost on prefix-cache hits)",
        message=f"acceptance falls without an error: {said}", evidence=("acceptance_prose", "prefix_cache_hit_rate"),
        missing=["acceptance split by requests with and without a prefix hit; a run with the probes on "
                 "(VLLM_DIAG_DB=run.db)"])


def _capacity_the_block_cannot_explain(facts: LogFacts) -> str | None:
    """The report's capacity complaint, unless a hybrid's raised attention block may be what holds requests back: a
    short request still takes a whole block, so the block explains lost capacity only while a running request's
    tokens (the cache's used share over the running count) fill no more than a few blocks."""
    said, block = facts.startup.get("capacity_prose"), facts.startup.get("attention_block_size")
    if not said or not isinstance(block, int):
        return said
    blocks = blocks_per_running_request(facts)
    if blocks is None:
        return None  # (the footprint is unknown: the raised block may be the cause)
    return said if blocks >= 4 else None


def unexplained_symptom(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, the report states a symptom (wrong output, slow serving, drafts that slow or stop being accepted,
    fewer requests than expected) and nothing in the log explains it: say so (``low``), so that notes about the
    configuration are not read as its cause."""
    st = facts.startup
    said = st.get("wrong_output_prose") or st.get("slow_prose") or st.get("truncated_prose") \
        or st.get("spec_slower_prose") or st.get("acceptance_prose") or _capacity_the_block_cannot_explain(facts) \
        or st.get("hang_prose")
    if not said:
        return None
    return Diagnosis(
        category="other", confidence="low", rule="unexplained_symptom", severity="warning",
        basis=(f"no error in the log; the report's symptom ('{said}') is not explained by anything vllm-diag reads "
               "here (no failure site, warning or metric of the hybrid/spec-decode families ties to it) -- not "
               "modelled"),
        title="Symptom without an error that the log does not explain (not modelled)",
        message=f"symptom without an error: {said}", numbers={**base_numbers, **facts.numbers},
        evidence=fact_evidence(facts, "wrong_output_prose", "slow_prose", "truncated_prose", "spec_slower_prose",
                               "acceptance_prose", "capacity_prose"),
        missing=["a run with the vllm-diag probes on (VLLM_DIAG_DB=run.db) and the same load with and without the "
                 "suspected feature (drafts, prefix caching, KV dtype)"])


def own_quality_gate(root: LogException, facts: LogFacts) -> bool:
    """The root error is raised by the reporter's own script (no frame in vLLM, torch or any installed package) while
    the report says the output went wrong: an evaluation's score check, not a failure of the engine."""
    if not root.frames or not facts.startup.get("wrong_output_prose"):
        return False
    return not any(re.search(r"vllm/|site-packages/|dist-packages/|torch/|/lib/python", f.file) for f in root.frames)


_CLIFF = re.compile(r"\bcliff\b|\b(?:falls?|fell|drops?|dropped) off\b|\bknee\b", re.I)


def capture_ceiling_slowdown(facts: LogFacts, setup: Setup, base_numbers: dict) -> Diagnosis | None:
    """No error, serving slower under drafts at a load whose decode steps outgrow the largest CUDA graph: a step of n
    spec decodes carries n x (1 + k) tokens, and above the largest capture size it runs without a full decode graph
    (piecewise or eager) -- the latency cliff of capture sizes vs speculative decoding (``low``: the numbers, not a
    profile)."""
    slow = facts.startup.get("slow_prose") or facts.startup.get("spec_slower_prose")
    k = setup.spec_k
    if not slow or not k or k < 1 or ran_eager(facts) or facts.startup.get("degraded_over_time_prose"):
        return None  # (the graphs' ceiling costs from the start: not a slowdown that came with time)
    sizes = [s for s in facts.startup.get("cudagraph_capture_sizes") or [] if isinstance(s, int) and s > 0]
    v = log_version(facts)
    if sizes and v is not None and v >= (0, 12, 0):
        # from 0.12 vLLM rounds the capture sizes up to multiples of 1 + k and drops those past the largest
        # (CompilationConfig.adjust_cudagraph_sizes_for_spec_decode): [.., 128, 256] with k = 2 captures up to 129
        top = facts.args.get("max_cudagraph_capture_size") or max(sizes)
        sizes = sorted({-(-s // (k + 1)) * (k + 1) for s in sizes if -(-s // (k + 1)) * (k + 1) <= top}) or sizes
    # (vLLM's own "Truncating max_cudagraph_capture_size to N" is the largest graph it captured)
    # (of two starts -- the report's and a rerun it tells of -- the smaller graph is the one with the cliff)
    truncated = [t for t in facts.startup.get("max_cudagraph_capture_size_truncated_runs")
                 or [facts.startup.get("max_cudagraph_capture_size_truncated")] if isinstance(t, int) and t > 0]
    cap = min(truncated) if truncated else (max(sizes) if sizes else facts.args.get("max_cudagraph_capture_size"))
    # the requests the engine ran (its stats line) are what a step carries; clients connected may wait in the server
    running = facts.startup.get("num_requests_running_max") or facts.startup.get("num_requests_running")
    loads = [n for n in ((running,) if isinstance(running, int) and running > 0 else
                         (facts.startup.get("concurrent_requests"),)) if isinstance(n, int) and n > 0]
    if not loads and truncated and isinstance(cap, int) and cap // (k + 1) < 4:
        # no load stated, but vLLM cut the largest graph to fewer than four requests' decode steps: any load past
        # that few runs without a full decode graph
        loads = [cap // (k + 1) + 1]
        told_load = f"at any load above {cap // (k + 1)} request(s) (the report states none)"
    else:
        told_load = f"at {max(loads, default=0)} concurrent requests"
    # (a load that fills vLLM's truncated largest graph exactly is past it too: a step that adds one prefill token to
    # the full decode step no longer fits)
    if not isinstance(cap, int) or cap <= 0 or not loads or max(loads) * (k + 1) < cap or (
            max(loads) * (k + 1) == cap and not truncated):
        return None
    load = max(loads)
    told = " ".join(str((facts.lines.get(f) or (0, ""))[1]) for f in ("slow_prose", "spec_slower_prose"))
    if not truncated and load >= 128 and not (_CLIFF.search(told) or re.search(rf"\b{cap // (k + 1)}\b", told)):
        # (at a batch this large the GPUs are compute-bound: graphs save little, and verifying 1 + k tokens per request
        # is the drafts' cost -- the large-batch reading's, unless vLLM itself cut the graphs short or the report
        # tells a cliff at the graphs' edge)
        return None
    fills = load * (k + 1) == cap
    if fills and facts.args.get("max_num_batched_tokens") == cap:
        return None  # the step budget cut the graph and caps the load: the token-budget reading
    return family_warning(
        facts, base_numbers, "cudagraph_shape", "low",
        basis=(f"no error; the report says serving gets slower ('{slow}') with speculative decoding (k={k}) {told_load}"
               f": a decode step of n requests carries n x {k + 1} tokens, so {load} requests make "
               f"{load * (k + 1)} tokens, " + (
                   f"exactly the largest CUDA graph vLLM kept ({cap} tokens): a step that adds a prefill chunk or a "
                   "padded draft to the full decode step runs" if fills else
                   f"above the largest CUDA graph ({cap} tokens, {cap // (k + 1)} requests) -- those steps run") +
               " without a full decode graph, a latency cliff past that concurrency"),
        title=f"{title_of('cudagraph_shape')} (silent: decode steps of {load * (k + 1)} tokens "
              + ("fill" if fills else "above") + f" the largest graph, {cap})",
        message=f"slower under drafts at high concurrency: {slow}",
        numbers={"max_cudagraph_capture_size": cap, "num_speculative_tokens": k,
                 "decode_tokens_at_load": load * (k + 1), "requests_per_graph": cap // (k + 1),
                 **({"truncated_capture_size": cap} if truncated else {}),
                 **({"max_cudagraph_capture_size": facts.args["max_cudagraph_capture_size"]} if truncated
                    and isinstance(facts.args.get("max_cudagraph_capture_size"), int) else {})},
        evidence=("slow_prose", "spec_slower_prose", "cudagraph_capture_sizes", "num_requests_running",
                  "concurrent_requests"),
        missing=["vLLM's CUDA-graph stats (--cudagraph-metrics) at that load, or a run with --max-cudagraph-capture-size "
                 f"{load * (k + 1)}"])


def indexer_flattening_slowdown(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, serving slower, and vLLM's DSA indexer says it flattens its decode (``use_flattening=True (next_n=N)``):
    DeepGEMM's paged-MQA-logits kernel does not take that next_n natively on this GPU, so every spec-decode row of the
    indexer is scored as its own one-token query -- the kernel's next_n limit, seen as performance (``medium``)."""
    slow = facts.startup.get("slow_prose") or facts.startup.get("spec_slower_prose")
    next_n = facts.startup.get("dsa_flattened_next_n")
    if not slow or not isinstance(next_n, int) or next_n < 2:
        return None
    return family_warning(
        facts, base_numbers, "spec_kernel_limit", "medium",
        basis=(f"no error; the report says serving got slower ('{slow}') and vLLM's DSA indexer logged "
               f"'use_flattening=True (next_n={next_n})': DeepGEMM's paged-MQA-logits kernel does not take next_n = "
               f"k + 1 = {next_n} natively on this GPU, so the indexer scores every draft position as a separate "
               "one-token query -- the kernel's next_n limit under drafts, paid in latency"),
        title=f"{title_of('spec_kernel_limit')} (silent: the DSA indexer flattens next_n={next_n})",
        message=f"slower with drafts: {slow}",
        numbers={"next_n": next_n, "num_speculative_tokens": next_n - 1},
        evidence=("slow_prose", "spec_slower_prose", "dsa_flattened_next_n"),
        missing=["the same load with num_speculative_tokens = 1 (next_n = 2, native on Hopper), or on Blackwell"])


# a model whose attention runs vLLM's DSA sparse indexer (DeepSeek-V3.2's lightning indexer, GLM-5), or its backend
_SPARSE_INDEXER = re.compile(r"deepseek[-_ ]?v3\.?2|DeepseekV32|glm-?5|Glm5|FLASHMLA_SPARSE|sparse[-_ ]mla", re.I)


def indexer_native_next_n_quality(facts: LogFacts, setup: Setup, base_numbers: dict) -> Diagnosis | None:
    """No error, the output wrong, and vLLM's DSA indexer says it hands its multi-token decode to the kernel as it is
    (``use_flattening=False (next_n=N)``, N > 2): DeepGEMM's paged-MQA-logits kernel took next_n 1 or 2 for most of its
    life, and vLLM trusts the build on this GPU to take N -- a build that does not scores the draft positions wrongly,
    and sparse attention then reads the wrong tokens. The kernel's next_n limit, seen as quality (``low``). Without the
    indexer's line, a sparse-indexer model run at k >= 2 is read the same way, said as inferred."""
    symptom = facts.startup.get("wrong_output_prose")
    next_n = facts.startup.get("dsa_native_next_n_max")
    logged = isinstance(next_n, int)
    if not logged and setup.spec_k >= 2 and facts.startup.get("dsa_flattened_next_n") is None and any(
            _SPARSE_INDEXER.search(str(n or "")) for n in (*model_names(facts), facts.startup.get("attention_backend_selected"))):
        next_n = setup.spec_k + 1
    if not symptom or not isinstance(next_n, int) or next_n <= 2:
        return None
    told = (f"vLLM's DSA indexer logged 'use_flattening=False (next_n={next_n})': the indexer hands" if logged else
            f"the model runs vLLM's DSA sparse indexer with k = {next_n - 1} (the log has no 'DSA indexer decode path' "
            "line to say whether it flattens): unflattened, the indexer hands")
    return family_warning(
        facts, base_numbers, "spec_kernel_limit", "low",
        basis=(f"no error; the report says the output went wrong ('{symptom}') and {told} next_n = k + 1 = {next_n} "
               "query rows per request to DeepGEMM's paged-MQA-logits kernel as they are, and a kernel build that takes "
               "only next_n 1 or 2 scores the draft positions wrongly, so sparse attention reads the wrong tokens -- the "
               "kernel's next_n limit under drafts, seen as quality"),
        title=f"{title_of('spec_kernel_limit')} (silent: the DSA indexer " + (f"passes next_n={next_n} to the kernel)"
                                                                             if logged else f"at next_n={next_n})"),
        message=f"wrong output with drafts: {symptom}",
        numbers={"next_n": next_n, "num_speculative_tokens": next_n - 1},
        evidence=("wrong_output_prose", "dsa_native_next_n_max", "attention_backend_selected", "command"),
        missing=["the same evaluation with num_speculative_tokens = 1 (next_n = 2), and the DeepGEMM build's version"]
        + ([] if logged else ["vLLM's 'DSA indexer decode path: use_flattening=...' line (INFO, at start)"]))


def mla_decode_quality(facts: LogFacts, setup: Setup, base_numbers: dict) -> Diagnosis | None:
    """No error, the output wrong with drafts on an MLA model, and vLLM logged the MLA decode backend it runs: MLA
    decode kernels take a request's 1 + k verification rows as one uniform query (``QueryLenSupport.UNIFORM``) or, in
    older releases, as one token (rocm_aiter_mla.py 0.11: ``max_seqlen_qo = 1``), so rows past the kernel's query
    length are attended wrongly and wrong drafts get verified -- the kernel's limit under drafts, seen as quality
    (``low``). A sparse indexer's next_n is :func:`indexer_native_next_n_quality`'s."""
    symptom = facts.startup.get("wrong_output_prose")
    backend = str(facts.startup.get("attention_backend_selected") or "")
    if not (symptom and setup.spec_k and setup.mla and not setup.hybrid and "MLA" in backend):
        return None
    q = setup.spec_k + 1 if setup.spec_k > 0 else None
    return family_warning(
        facts, base_numbers, "spec_kernel_limit", "low",
        basis=(f"no error; the report says the output went wrong ('{symptom}') with drafts on an MLA model "
               f"({', '.join(setup.why)}), decoded by {backend} as vLLM logged: the MLA decode kernel takes each "
               f"request's {q or '1 + k'} verification rows as one query of a fixed length (one token in older "
               "releases), so rows past what the kernel attends are scored wrongly and wrong drafts are accepted -- the "
               "kernel's query-length limit under drafts, seen as quality"),
        title=f"{title_of('spec_kernel_limit')} (silent: {backend} decode with {q or '1 + k'} query rows a request)",
        message=f"wrong output with drafts: {symptom}", numbers={"decode_query_len": q} if q else {},
        evidence=("wrong_output_prose", "attention_backend_selected", "command", "non_default_args"),
        missing=["the same evaluation with num_speculative_tokens = 1 and with another MLA backend "
                 "(VLLM_ATTENTION_BACKEND, or VLLM_ROCM_USE_AITER_MLA=0 on ROCm)"])


def spec_slowdown(facts: LogFacts, setup: Setup, base_numbers: dict) -> Diagnosis | None:
    """No error, but speculative decoding made an MLA model slower (``low``): the MLA decode kernels of a backend that
    takes one query token per request (FlashInfer / TRT-LLM MLA before 0.12, FlashMLA's early releases, AITER) send
    the 1 + k verification rows down the prefill path -- the kernel-limit class without a crash. Other models: not
    modelled (vLLM's own warning that full CUDA graphs were dropped is a rule of its own)."""
    # (a slowdown told without naming the drafts counts too on an MLA model serving them, unless vLLM's own warning of
    # untuned MoE tiles explains it)
    said = facts.startup.get("spec_slower_prose")
    if not said and not facts.startup.get("moe_default_config") \
            and not _STARTUP_SLOW.search((facts.lines.get("slow_prose") or (0, ""))[1]) \
            and not FIRST_TOKEN.search(str(facts.startup.get("slow_prose") or "")):
        # (a slow first token is the prefill's and the queue's: drafts verify during decode)
        said = facts.startup.get("slow_prose")
    # (a slowdown that came with time under the same deployment is not a backend's cost, which is there from the start;
    # a stream delivered in bursts is the path to the client, not the decode kernel's speed)
    if not said or not setup.spec_k or not setup.mla or facts.startup.get("degraded_over_time_prose") \
            or BUNCHED_STREAM.search(said):
        return None
    backend = facts.startup.get("attention_backend_selected")
    return Diagnosis(
        category="spec_kernel_limit", confidence="low", rule="failure_class", severity="warning",
        basis=(f"no error in the log; the report says speculative decoding made serving slower ('{said}') on an MLA "
               f"model ({', '.join(setup.why)}): an MLA decode backend"
               + (f" ({backend}, as vLLM logged)" if backend else "") + " that takes one query token per request runs the "
               "1 + k verification rows of every step through the prefill path (or without full CUDA graphs), so the "
               "drafts cost more than they save -- the backend's query-length limit under drafts"),
        title=f"{title_of('spec_kernel_limit')} (slower with drafts, no error)",
        message=f"slower with speculative decoding: {said}", numbers={**base_numbers, **facts.numbers},
        evidence=fact_evidence(facts, "spec_slower_prose", "slow_prose", "attention_backend_selected", "command",
                               "non_default_args"),
        missing=([] if backend else ["the attention backend vLLM chose (its 'Using ... backend' line)"])
        + [f"whether {backend or 'the backend'}'s decode takes q_len > 1 in this release; a profile of one decode step "
           "with and without drafts"])


def reset_running_stale_state(facts: LogFacts, setup: Setup, base_numbers: dict) -> Diagnosis | None:
    """No error, wrong output on a hybrid after ``reset_prefix_cache(reset_running_requests=True)`` (an RL trainer
    updating weights mid-rollout): the running requests are force-preempted and resume by recomputation, but before
    0.17 the Mamba align-mode bookkeeping cleared a request's state-block index only for finished or preempted ids the
    scheduler listed, so a resumed request keeps a stale state index -- the state-index class (``medium``)."""
    if not facts.startup.get("wrong_output_prose") or not facts.startup.get("reset_running_requests") \
            or setup.hybrid is not True:
        return None
    v = log_version(facts)
    if v is not None and v >= (0, 17):
        return None
    return family_warning(
        facts, base_numbers, "state_index", "medium",
        basis=(f"no error; the report says the output goes wrong ('{facts.startup['wrong_output_prose']}') on a hybrid "
               "model after reset_prefix_cache(reset_running_requests=True): the running requests are force-preempted "
               "and resume by recomputation, and before vLLM 0.17 their Mamba state-block index was not cleared (only "
               "finished or listed preempted requests were), so a resumed request reads its state from a stale slot"),
        title=f"{title_of('state_index')} (silent: stale state index after a reset of running requests)",
        message=f"wrong output after a prefix-cache reset with requests running: {facts.startup['wrong_output_prose']}",
        evidence=("wrong_output_prose", "reset_running_requests"),
        missing=["the same rollout with the weight update after the running requests finish (or on vLLM 0.17+)"])


def _these_drafts_off_kept_it(facts: LogFacts, setup: Setup) -> bool:
    """The report's trial switched this run's drafter off ("Turning off ngram: output same") and the symptom stayed:
    a switch it names outright (off, disabled, removed, without), of the drafter configured or of drafts in general --
    not a hedged verdict ("Maybe MTP is not the problem") nor another drafter than the one the run uses."""
    said = str(facts.startup.get("faults_without_spec_prose") or "")
    if not _SWITCHED_OFF.search(said):
        return False
    named = {m.lower()[:4] for m in _DRAFTER.findall(said)}
    method = str(setup.spec_method or "").lower()
    return not named or any(n in method for n in named)


_SWITCHED_OFF = re.compile(r"\b(?:off|disabl\w*|remov\w*|without|dropp\w*|no (?:spec\w*|drafts?|MTP|ngram|EAGLE\w*))\b",
                           re.I)
_DRAFTER = re.compile(r"\b(mtp|eagle\w*|ngram|suffix|medusa)\b", re.I)


def silent_corruption(facts: LogFacts, setup: Setup, base_numbers: dict, batch_ev: list[Evidence]) -> Diagnosis | None:
    """No error at all, but the output goes wrong under speculative decoding (``low``/``medium``: the symptom, the
    configuration and vLLM's own warnings, not a failure site):

    * an MLA model whose decode backend warned that it got a query of uneven length (vLLM's FlashInfer / Tokenspeed
      MLA: decodes with different 1 + k lengths fall back to one query row per token) -- the kernel limit;
    * a hybrid whose batches mix draft lengths or spec decodes with other rows: a row on another kind's state path
      in the Mamba/GDN builders corrupts its state;
    * a hybrid whose recurrent layers have no speculative-decoding path in the release (specpath: Mamba1, LFM2's
      short convolution before 0.29, Kimi-Linear's KDA before 0.27) -- the spec-decode rows reach them anyway;
    * a hybrid whose linear-attention builder has no speculative-decoding path (MiniMax-Text-01 / M1's lightning
      attention, vllm/v1/attention/backends/linear_attn.py LinearAttentionMetadataBuilder: reorder threshold 1, no
      accepted-token counts): every 1 + k verification row goes down the prefill path and the rejected drafts stay
      in the recurrent state -- the builder's split of the batch;
    * a hybrid with prefix caching whose cache hits: the state restored from the cached block is not the slot the
      spec-decode path reads -- the state index."""
    symptom = facts.startup.get("wrong_output_prose")
    uneven = facts.startup.get("mla_uneven_query")
    chunk = facts.startup.get("last_chunk_tokens")

    def told(category: str, confidence: str, basis: str, title: str, evidence: list[Evidence], missing: list[str],
             rule: str = "failure_class", **numbers) -> Diagnosis:
        """A reading of the wrong output the report states (no error in the log)."""
        return Diagnosis(category=category, confidence=confidence, rule=rule, basis="no error in the log; " + basis,
                         title=title, message=f"wrong output without an error: {symptom}",
                         numbers={**base_numbers, **facts.numbers, **numbers}, evidence=evidence, missing=missing)

    client = facts.startup.get("client_cause_prose")
    if symptom and client:
        # the report ties the wrong output to the prompt the client built (another model's tokenizer, a wrong chat
        # template): the engine computed what it was given, whatever its layers or drafts
        return told(
            "other", "medium", rule="near_miss",
            basis=(f"the report ties the wrong output to what the client sent ('{client}'): the "
                   "prompt the model saw was already wrong, outside the hybrid/spec-decode families (low draft "
                   "acceptance follows from a nonsense prompt)"),
            title="Wrong output from the client's prompt (tokenizer / chat template), not the engine",
            evidence=fact_evidence(facts, "client_cause_prose", "wrong_output_prose"),
            missing=["the same prompt sent as text (or with the server's tokenizer) to the same server"])
    if symptom and setup.spec_k and facts.startup.get("draft_kv_group_unidentified"):
        # vLLM's own warning that none of the hybrid's KV-cache groups is the EAGLE draft's: the draft's layers run on a
        # layout laid out for the target's Mamba/GDN and attention groups
        return told(
            "kv_page_size", "medium",
            basis=(f"the report says the output goes wrong ({symptom}), and vLLM warned at start-up "
                   "that no KV-cache group could be identified as the draft model's on this Mamba/GDN hybrid: the "
                   "EAGLE draft's layers read and write a KV layout built for the target's groups -- the draft vs "
                   "hybrid KV layout"),
            title=f"{title_of('kv_page_size')} (silent: the draft's KV-cache group not identified)",
            evidence=fact_evidence(facts, "draft_kv_group_unidentified", "wrong_output_prose"),
            missing=["the KV-cache groups vLLM planned (the probes record them: VLLM_DIAG_DB=run.db)"])
    if symptom and setup.hybrid and calibrates_scales(facts.args.get("calculate_kv_scales"), facts.args.get(
            "kv_cache_dtype"), log_version(facts)):
        # --calculate-kv-scales on a Mamba/GDN hybrid before 0.19: the calibration pass computes the fp8 KV scales of
        # the attention layers while the recurrent state is uninitialised (vLLM 0.19+ turns the flag off for hybrids:
        # "uninitialized recurrent state corrupts scales during the calibration pass", issue #37554)
        kv = facts.args.get("kv_cache_dtype")
        return told(
            "kv_page_size", "medium",
            basis=(f"the report says the output goes wrong ({symptom}) on a Mamba/GDN hybrid with "
                   f"a quantized KV cache ({kv or 'fp8'}) and --calculate-kv-scales: in vLLM "
                   f"{facts.vllm_version or '(version not in the log)'} the scales are calibrated while the recurrent "
                   "state is uninitialised, so every attention layer's fp8 KV is scaled wrong -- quantized KV on a "
                   "hybrid (from 0.19.0 vLLM turns the flag off for hybrids itself)"),
            title=f"{title_of('kv_page_size')} (silent: fp8 KV scales calibrated on a hybrid's uninitialised state)",
            evidence=fact_evidence(facts, "args", "command", "non_default_args", "wrong_output_prose"),
            missing=["the same run without --calculate-kv-scales (default scale 1.0), or on vLLM 0.19+"])
    k = setup.spec_k
    if symptom and setup.hybrid and isinstance(chunk, int) and (k == 0 and chunk == 1 or k > 0 and 1 <= chunk <= 1 + k):
        # a chunked prompt's last chunk as short as a decode: without drafts, one token beside plain decodes makes a
        # step of one-token rows replayed as a decode CUDA graph while the Mamba builder (0.20-0.21:
        # split_decodes_and_prefills(..., treat_short_extends_as_decodes=False)) counts the chunk as a prefill; with
        # drafts, at most 1 + k tokens, split by query length onto the spec-decode rows -- either way a builder on a
        # batch mixing kinds of rows
        how = ("that chunk beside plain decodes makes a step of one-token rows, replayed as a decode CUDA graph, while "
               "the Mamba/GDN builder counts the chunk as a prefill -- the builder's split of a mixed step (hybrid "
               "model, no drafts needed)" if k == 0 else
               f"no longer than a spec decode's 1 + {k}, the Mamba/GDN builders split decodes from prefills by query "
               f"length (and the full CUDA-graph dispatch by the step's shape), so that chunk runs on the spec-decode "
               f"rows beside the drafts -- the builder's split of a mixed batch")
        return told(
            "mixed_batch", "low", last_chunk_tokens=chunk,
            basis=(f"the report says the output goes wrong ({symptom}) for prompts whose last prefill chunk is "
                   f"{'one token' if chunk == 1 else f'{chunk} tokens'}: {how}"),
            title=f"{title_of('mixed_batch')} (silent: a last prefill chunk of {chunk} token(s) "
                  f"{'beside decodes' if k == 0 else 'among spec decodes'})",
            evidence=fact_evidence(facts, "wrong_output_prose", "last_chunk_tokens") + batch_ev,
            missing=["a run with the vllm-diag probes on (VLLM_DIAG_DB=run.db) records each step's batch and the "
                     "builders' split", "whether --max-num-batched-tokens above the longest prompt (no chunking) or "
                     "--compilation-config '{\"cudagraph_mode\": \"PIECEWISE\"}' makes it go away"])
    on_hit = setup.prefix_caching_needed or _ON_HIT.search((facts.lines.get("wrong_output_prose") or (0, ""))[1])
    if setup.spec_k == 0 and symptom and setup.hybrid and setup.prefix_cached_states and on_hit:
        # no drafts, prefix caching on a hybrid: a request that hits the cache restores its Mamba/GDN state from the
        # cached block through the state indices -- restored into another slot, it reads a wrong state silently
        return told(
            "state_index", "low",
            basis=(f"the report says the output goes wrong ({symptom}) with {', '.join(setup.why)} "
                   "and no drafts: a request that hits the prefix cache restores its Mamba/GDN state from the cached "
                   "block through the state indices; a state restored into another slot (or from a block whose state "
                   "was not saved) is read silently"),
            title=f"{title_of('state_index')} (silent: wrong output on prefix-cache hits, no drafts)",
            evidence=fact_evidence(facts, "wrong_output_prose", "prefix_cache_hit_rate"),
            missing=["the same request with prefix caching off (or after reset_prefix_cache); a run with the probes on "
                     "(VLLM_DIAG_DB=run.db) records the block tables"])
    if setup.spec_k == 0 or not (symptom or uneven):
        return None
    nums = {**base_numbers, **facts.numbers}
    spec = ", ".join(setup.why)
    missing = ["a run with the vllm-diag probes on (VLLM_DIAG_DB=run.db) records each step's batch and the builders' "
               "split, which shows the steps whose output went wrong"]

    def out(cat: str, conf: str, why: str, ev_names: tuple[str, ...]) -> Diagnosis:
        return Diagnosis(
            category=cat, confidence=conf, rule="failure_class",
            basis="no error in the log; " + (f"the report says the output goes wrong ({symptom}) " if symptom else "")
                  + f"with {spec}; {why}",
            title=f"{title_of(cat)} (silent: wrong output, no error)",
            message="wrong output without an error" + (f": {symptom}" if symptom else " (vLLM warned of it)"),
            numbers=nums, evidence=fact_evidence(facts, *ev_names) + batch_ev, missing=list(missing))

    if uneven and (setup.mla or not setup.hybrid):
        return out("spec_kernel_limit", "medium",
                   "vLLM's MLA decode warned that it got a query of uneven length: decodes of different 1 + k lengths "
                   "(drafts of different lengths, a request near its end) fall back to one query row per token, which "
                   "attends with the wrong causal extent -- the kernel's uniform query-length limit",
                   ("mla_uneven_query", "wrong_output_prose"))
    if not symptom or not setup.hybrid:
        return None
    if facts.startup.get("faults_without_spec_prose") and not setup.prefix_cached_states:
        return None  # it goes wrong without the drafts too, and no states are cached: no drafts' path explains it
    if _these_drafts_off_kept_it(facts, setup) and not setup.prefix_caching_needed:
        # the configured drafter switched off and the output as wrong: every reading below is of the spec-decode path
        # (its state indices, its split of the batch), which that run did not take
        return None
    batch = setup.batch or {}
    mixed = setup.mixed_evidence or ("the crash dump's batch" if batch.get("mixed") or batch.get("ragged_drafts") else None)
    dependent = facts.startup.get("batch_dependent_prose")
    if not mixed and isinstance(dependent, str) and not setup.prefix_caching:
        # fine alone, wrong with other requests in flight: only a shared batch mixes one request's spec decodes with
        # another's prefill or plain decode (a single request's own steps never mix kinds)
        mixed = f"it goes wrong only with other requests in the batch: {dependent}"
    if mixed:
        return out("mixed_batch", "low",
                   f"the report shows batches that mix draft lengths or spec decodes with other rows ({mixed}): a row of "
                   f"such a batch taking another kind's state path in the Mamba/GDN builders corrupts its state silently",
                   ("wrong_output_prose", "mixed_prose", "batch_dependent_prose"))
    short, short_n = facts.startup.get("short_prompt_prose"), facts.startup.get("short_prompt_tokens")
    if short and (not isinstance(short_n, int) or setup.spec_k < 0 or short_n <= setup.spec_k + 1):
        # the builders split a step's rows into decodes and prefills by query length (a decode carries 1 + k tokens
        # under drafts), and a batch whose requests all carry 1 + k tokens is dispatched as a uniform decode: a prompt
        # (or a prompt's last chunk) that short runs the spec-decode path without drafts or accepted-token counts
        k1 = f"1 + k = {setup.spec_k + 1}" if setup.spec_k > 0 else "1 + k"
        return out("mixed_batch", "low",
                   f"the report ties it to short prompts ({short}): a prefill of at most {k1} tokens is counted as a "
                   f"decode by the Mamba/GDN builders' split (and a step of such rows is replayed as a uniform "
                   f"spec-decode graph), so its state is read and written on the spec-decode path without drafts",
                   ("wrong_output_prose", "short_prompt_prose"))
    model = f"{facts.architecture or facts.args.get('architecture') or ''} {facts.args.get('model') or facts.model or ''}"
    if _NO_SPEC_BUILDER.search(model):
        return out("mixed_batch", "low",
                   "this model's linear-attention layers are built by vLLM's LinearAttentionMetadataBuilder, which has no "
                   "speculative-decoding path (decode threshold 1, no accepted-token counts): the 1 + k verification "
                   "rows are split off as prefills and the rejected drafts stay in the recurrent state",
                   ("wrong_output_prose",))
    # (a layer without a spec-decode path goes wrong with or without the cache: a report that it is right without
    # prefix caching points at the states the cache restores instead)
    nsp = no_spec_path(model_names(facts), facts.vllm_version) if not setup.prefix_caching_needed else None
    if nsp is not None:
        return out("mixed_batch", "low",
                   f"the model's {nsp.layers} have no speculative-decoding path {nsp.since_text()}: the builder's "
                   f"spec-decode rows (1 + k tokens a request) reach layers that advance their recurrent state over "
                   f"every draft token, rejected ones included", ("wrong_output_prose",))
    structured = facts.startup.get("structured_outputs_prose")
    if structured and not setup.prefix_caching_needed:
        # structured-output requests in the traffic, and nothing ties the symptom to prefix caching: the grammar cuts
        # the drafts it rejects, so one step carries requests with different draft lengths (and accepted counts that
        # lag them under async scheduling) -- ragged rows in the builders' spec-decode split, whatever the cache hits
        return out("mixed_batch", "low",
                   f"structured outputs are in the traffic ({structured}): the grammar rejects drafts per request, so a "
                   f"step mixes requests with different draft and accepted-token counts in the Mamba/GDN builders' "
                   f"spec-decode rows", ("wrong_output_prose", "structured_outputs_prose"))
    hit = facts.startup.get("prefix_cache_hit_rate_max")
    pc_hits = setup.prefix_caching and isinstance(hit, (int, float)) and hit > 0
    tied = facts.startup.get("spec_tied_prose")
    if pc_hits:
        return out("state_index", "low",
                   f"prefix caching hits (up to {hit:g}%): the Mamba/GDN state restored from a cached block is read "
                   f"through the state indices the spec-decode path uses (the running block plus the accepted-token "
                   f"offset), so a hit that lands the state in another slot than the one read corrupts it silently",
                   ("wrong_output_prose", "prefix_cache_hit_rate"))
    if setup.prefix_caching and setup.mamba_cache_mode in ("align", "all") and not isinstance(hit, (int, float)):
        return out("state_index", "low",
                   f"prefix caching is on (Mamba cache mode '{setup.mamba_cache_mode}'): the Mamba/GDN states are saved "
                   f"to and restored from blocks through the state indices the spec-decode path also reads; a state "
                   f"restored into another slot than the one read corrupts it silently (the hit rate would confirm it)",
                   ("wrong_output_prose",))
    every = facts.startup.get("every_request_prose")
    if every and not re.search(r"ngram|n-gram|suffix|prompt_lookup", str(setup.spec_method or ""), re.I):
        # wrong for a lone request too, with a drafter that always drafts: no step mixes kinds of rows -- the drafts'
        # own weights or the kernels, not the builders' split (a class this report does not show)
        return None
    # no prefix caching: every request keeps one state slot, so a bad index would fault, not corrupt quietly; what goes
    # wrong without an error is which path a row's state takes -- the builders split each step's rows into spec
    # decodes, plain decodes and prefills by their query lengths and drafts (ragged or missing drafts, padded rows of a
    # CUDA graph, a short prefill chunk), and a row run on another kind's path reads or advances its state wrongly
    return out("mixed_batch", "low",
               "without prefix caching a request's state has one slot, so the silent failure is the path its rows take: "
               "the Mamba/GDN builders split each step into spec decodes, plain decodes and prefills by query length "
               "and drafts, and a row on another kind's path (no drafts this step, a CUDA-graph padding row, a short "
               "prefill chunk) reads or advances its state wrongly"
               + (f"; the report says it is fine without drafts ({tied})" if tied else ""),
               ("wrong_output_prose", "spec_tied_prose"))

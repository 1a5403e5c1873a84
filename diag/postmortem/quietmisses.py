"""Reports without an error whose cause is a setting, the workload or the platform, not a hybrid/spec-decode class:
the near misses a quiet report is read as first (the memory share, the context length, the token budget, eager mode,
CPU offload, PCIe tensor parallelism, a slow tokenizer, LoRA slots, sampling defaults, the report's own A/B tests).
Each reading is a warning of category ``other`` with the setting as its evidence; the client's side of the engine is
:mod:`.clientside`'s, the platform's (the host's CPUs, throttled or shared GPUs, a MIG slice, the network)
:mod:`.platform_slowdowns`'."""

from __future__ import annotations

import re

from ..model import LogFacts
from ..rules.spec_capture_sizes import rounded_for_drafts
from .configuration import (AB_TEST_FACTS, Setup, ab_tests_clear_families, drafts_outgrow_budget, ran_eager,
                            truthy)
from .diagnosis import Diagnosis, fact_evidence
from .symptom_words import FIRST_TOKEN


def outside_families(facts: LogFacts, base_numbers: dict, *, basis: str, title: str, message: str,
                     evidence: tuple[str, ...], missing: list[str]) -> Diagnosis:
    """A no-error report read as a cause outside the families (``medium``, a warning: nothing failed)."""
    return Diagnosis(category="other", confidence="medium", rule="near_miss", severity="warning", basis=basis,
                     title=title, message=message, numbers={**base_numbers, **facts.numbers},
                     evidence=fact_evidence(facts, *evidence), missing=missing)


# a decode rate said (a number of tokens/s, or the rate named as a share of another's: "~1/3 of the decode tok/s")
_RATE = re.compile(r"\d\s*(?:tok(?:en)?s?/s|t/s)\b|\bof (?:the |our )?(?:decode |gen(?:eration)? |output )?"
                   r"(?:tok(?:en)?s?/s|t/s|throughput)\b")
_PER_TOKEN_TIME = re.compile(r"\b(?:TPOT|ITL)\b")


def said_slow(facts: LogFacts) -> str | None:
    """The reporter's words that serving is slow (with or without naming the drafts), or the engine's own stats lines
    showing generation throughput halve at the same load."""
    return facts.startup.get("slow_prose") or facts.startup.get("spec_slower_prose") or facts.startup.get("throughput_fell")


def slow_from(facts: LogFacts, base_numbers: dict, slow: str, *, cause: str, title: str, evidence: tuple[str, ...],
               missing: str) -> Diagnosis:
    """A slowdown the report tells, read as ``cause`` outside the families (a setting, the platform)."""
    capacity = slow == facts.startup.get("capacity_prose") and slow != said_slow(facts)
    return outside_families(facts, base_numbers,
                    basis=f"no error; the report says "
                          f"{'fewer requests fit than expected' if capacity else 'serving is slow'} ('{slow}') and "
                          f"{cause} -- outside the hybrid/spec-decode families",
                    title=title, message=f"{'capacity' if capacity else 'slow serving'} without an error: {slow}",
                    evidence=("slow_prose", "spec_slower_prose", *evidence), missing=[missing])


def _never_accepted(metrics: dict) -> str | None:
    """The spec-decode metrics say no draft was accepted, on the first line as on the last: a mean acceptance length
    of ~1 (the bonus token alone) or a draft acceptance rate of ~0 %."""
    for name, ceiling, text in (("spec_mean_acceptance_length", 1.05, "mean acceptance length {v}"),
                                ("spec_avg_draft_acceptance_rate", 2.0, "draft acceptance rate {v}%")):
        v, first = metrics.get(name), metrics.get(f"{name}_first")
        if isinstance(v, (int, float)) and v <= ceiling and (first is None or first <= ceiling):
            return text.format(v=v)
    return None


def random_prompts_acceptance(facts: LogFacts, setup: Setup, base_numbers: dict) -> Diagnosis | None:
    """No error, slower with drafts, vLLM's metrics show drafts almost never accepted, and the load is random prompts
    (``vllm bench serve --dataset-name random``): random tokens leave a drafter nothing to predict, so every step pays
    for drafts it throws away -- the benchmark's data, not an engine failure (a hybrid's rejected drafts can be a
    state fault: those stay with the families)."""
    slow = said_slow(facts) or facts.startup.get("acceptance_prose")
    metrics = facts.startup.get("metrics") or {}
    rates = [r for r in (metrics.get("spec_avg_draft_acceptance_rate"), metrics.get("spec_avg_draft_acceptance_rate_first"))
             if isinstance(r, (int, float))]
    told = facts.startup.get("random_prompts_prose")
    # (on a hybrid, rejected drafts can be a state fault -- unless the same server accepts them on other traffic)
    told_length = facts.startup.get("acceptance_length_told_max")
    accepts_elsewhere = any(r >= 50 for r in rates) or (isinstance(told_length, float) and setup.spec_k > 0
                                                        and told_length >= 1 + 0.6 * setup.spec_k) \
        or bool(facts.startup.get("persists_without_pc_prose"))  # (nor a state the cache restored: as low without it)
    if not slow or (setup.hybrid and not accepts_elsewhere) or not rates or min(rates) >= 20 or not told:
        return None
    rate = min(rates)
    return outside_families(
        facts, base_numbers,
        basis=(f"no error; the report says serving is slower with drafts ('{slow}') and vLLM's metrics show a draft "
               f"acceptance rate of {rate:g}% on random prompts ('{told}'): random tokens leave the drafter "
               "nothing to predict, so each step verifies drafts it rejects -- the benchmark's data, outside the "
               "hybrid/spec-decode families"),
        title=f"Drafts rejected on random prompts ({rate:g}% accepted): the benchmark's data",
        message=f"slower with drafts without an error: {slow}",
        evidence=("spec_slower_prose", "slow_prose", "random_prompts_prose"),
        missing=["the same benchmark on a real dataset (sharegpt, the production traffic) with and without the drafts"])


# the proposers that copy text instead of running a model: their drafts match only where the output repeats its input
_MODEL_FREE = ("ngram", "suffix", "suffix_decoding", "ngram_gpu")


def modelfree_drafts_unmatched(facts: LogFacts, setup: Setup, base_numbers: dict) -> Diagnosis | None:
    """No error, slower with drafts, the proposer copies text (n-gram, suffix decoding) and vLLM's metrics show its
    drafts almost never accepted (a mean acceptance length of 1.2 or less): the workload's output does not repeat its
    prompt or earlier outputs, so every step verifies drafts it rejects -- the workload against the method, outside the
    families (on a hybrid with prefix caching a lost acceptance can be the restored state's: those stay with them)."""
    slow = said_slow(facts)
    metrics = facts.startup.get("metrics") or {}
    length, first = metrics.get("spec_mean_acceptance_length"), metrics.get("spec_mean_acceptance_length_first")
    if not slow or setup.spec_method not in _MODEL_FREE or facts.startup.get("wrong_output_prose") \
            or not isinstance(length, (int, float)) or length > 1.2 or (isinstance(first, (int, float)) and first > 1.2) \
            or (setup.hybrid and setup.prefix_cached_states):
        return None
    return slow_from(
        facts, base_numbers, slow,
        cause=(f"the drafts come from {setup.spec_method}, which copies earlier text, and vLLM's metrics show a mean "
               f"acceptance length of {length:g}: this workload's output rarely repeats its prompt or earlier outputs, so "
               "each step verifies drafts it then rejects"),
        title=f"Copy-based drafts ({setup.spec_method}) rarely match this workload (mean acceptance length {length:g})",
        evidence=("spec_slower_prose", "slow_prose", "command"),
        missing="the same load without --speculative-config, or with a model-based drafter (EAGLE, MTP)")


# a model's size and generation in its name: "70B", "8B", "3.3", "3.1" (an EAGLE head is trained on one target)
_SIZE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)[Bb]\b")
_GENERATION = re.compile(r"(?i)(?:llama|qwen|mistral|glm|deepseek|gemma|phi)[-_ ]?v?(\d+(?:\.\d+)?)")


def mismatched_drafter(facts: LogFacts, setup: Setup, base_numbers: dict) -> Diagnosis | None:
    """No error, drafts rarely accepted or serving slower with them, and the EAGLE / Medusa head loaded names another
    target than the served model (another size or generation): such a head is trained on one target's hidden states,
    so its drafts miss -- the checkpoint chosen, outside the families."""
    draft, model = facts.args.get("draft_model"), facts.args.get("model")
    if setup.spec_method not in ("eagle", "eagle3", "medusa") or not isinstance(draft, str) or not isinstance(model, str):
        return None
    metrics = facts.startup.get("metrics") or {}
    length, rate = metrics.get("spec_mean_acceptance_length"), metrics.get("spec_avg_draft_acceptance_rate")
    low = (isinstance(length, (int, float)) and length <= 1.3) or (isinstance(rate, (int, float)) and rate <= 10)
    if not low and not facts.startup.get("acceptance_prose"):
        return None
    d_name, m_name = draft.rsplit("/", 1)[-1], model.rsplit("/", 1)[-1]
    differs = []
    for what, rx in (("size", _SIZE), ("generation", _GENERATION)):
        ours, theirs = rx.search(d_name), rx.search(m_name)
        if ours and theirs and ours.group(1) != theirs.group(1):
            differs.append(f"{what} {ours.group(1)} vs {theirs.group(1)}")
    if not differs:
        return None
    said = facts.startup.get("acceptance_prose") or said_slow(facts) or (
        f"mean acceptance length {length:g}" if isinstance(length, (int, float)) else f"draft acceptance rate {rate:g}%")
    return outside_families(
        facts, base_numbers,
        basis=(f"no error; the report says '{said}', and the {setup.spec_method} head ({draft}) names another target than "
               f"the served model ({model}: {'; '.join(differs)}): a head is trained on one target's hidden states, so "
               "on another model its drafts miss and every step verifies tokens it throws away -- the checkpoint chosen, "
               "outside the hybrid/spec-decode families"),
        title=f"Drafts from a head trained for another model ({draft})",
        message=f"low acceptance without an error: {said}", evidence=("acceptance_prose", "spec_slower_prose", "command",
                                                                      "non_default_args"),
        missing=[f"the acceptance with the {setup.spec_method} head trained for {model} (or without drafts)"])


def drafts_never_accepted(facts: LogFacts, setup: Setup, base_numbers: dict) -> Diagnosis | None:
    """No error, and vLLM's spec-decode metrics show no draft accepted from the first line on (``medium``): the drafter
    proposes what the target never agrees with -- its weights (an MTP head a quantized or exported checkpoint left
    out, so vLLM runs it randomly initialised; a draft model of another tokenizer or vocabulary) -- not one of the
    hybrid/spec failure classes, which break the output or the engine rather than acceptance alone from step one."""
    metrics = facts.startup.get("metrics") or {}
    said = never = _never_accepted(metrics)
    broken = facts.startup.get("draft_weights_prose")  # (the report found the drafter's weights broken)
    if said is None and broken:
        # (the first metrics line is the broken drafter's; a later one may be the report's fixed rerun)
        length = min((v for v in (metrics.get("spec_mean_acceptance_length"),
                                  metrics.get("spec_mean_acceptance_length_first")) if isinstance(v, (int, float))),
                     default=None)
        rate = metrics.get("spec_avg_draft_acceptance_rate")
        said = facts.startup.get("acceptance_prose") or facts.startup.get("spec_slower_prose") or (
            f"mean acceptance length {length:g}" if isinstance(length, (int, float)) and length <= 1.5 else
            f"draft acceptance rate {rate:g}%" if isinstance(rate, (int, float)) and rate <= 20 else None)
    # (drafts accepted once prefix caching is off: the same drafter matches, so its weights are not the cause)
    if said is None or facts.startup.get("wrong_output_prose") or setup.prefix_caching_needed:
        return None
    return outside_families(
        facts, base_numbers,
        basis=((f"no error; the report says '{said}' and finds the drafter's weights broken ('{broken}'): its "
                "proposals rarely match the target" if broken else
                f"no error; the spec-decode metrics show no accepted drafts from the first line on ({said}): the "
                "drafter's proposals never match the target") +
               " -- typically its weights (an MTP head missing from a quantized or re-exported checkpoint and left "
               "randomly initialised, or quantized without calibration; a draft model with another tokenizer or "
               "vocabulary); outside the hybrid/spec-decode failure classes -- not modelled beyond the metrics"),
        title=("Drafts rarely accepted: the drafter's weights are broken (not an engine failure)" if broken and
               never is None else
               "Drafts never accepted (the drafter's weights or vocabulary, not an engine failure)"),
        message=f"no draft accepted: {said}", evidence=("command", "non_default_args"),
        missing=["the draft weights the checkpoint holds (for MTP: the mtp.* tensors in its safetensors index) and the "
                 "acceptance with the original checkpoint"])


_ROPE_OVERRIDE = re.compile(r"rope_(?:scaling|parameters|type)\W+[^}]{0,120}?(?:yarn|dynamic|factor)", re.I)


def static_rope_quality(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, output quality down, and the command overrides the model's RoPE scaling (``hf_overrides`` /
    ``--rope-scaling`` with YaRN or a factor): vLLM applies a static scaling to every request whatever its length, so
    short prompts are encoded with the long-context positions (model cards warn of it) -- outside the families."""
    symptom = facts.startup.get("wrong_output_prose")
    said = " ".join(str(facts.args.get(k) or "") for k in ("hf_overrides", "rope_scaling", "rope_parameters"))
    m = _ROPE_OVERRIDE.search(said)
    if not symptom or m is None:
        return None
    return outside_families(
        facts, base_numbers,
        basis=(f"no error; the report says quality dropped ('{symptom}') and the command overrides the model's RoPE "
               f"scaling ({m.group(0)[:80]}): vLLM applies static scaling to every request, so short prompts are "
               "encoded with long-context positions and lose quality -- outside the hybrid/spec-decode families"),
        title="Quality drop from a static RoPE scaling override (hf_overrides), not the engine's state or drafts",
        message=f"quality drop without an error: {symptom}", evidence=("wrong_output_prose", "non_default_args", "command"),
        missing=["the same evaluation without the RoPE override (the model's native context), drafts and KV dtype "
                 "unchanged"])


def blocks_per_running_request(facts: LogFacts) -> float | None:
    """How many of a hybrid's raised attention blocks each running request fills at the fullest the stats lines show
    (the cache's used share over the running count); None when the log lacks one of those figures."""
    st = facts.startup
    fullest = st.get("blocks_at_fullest")
    if fullest:  # (read line by line: one run's usage, running count and cache size)
        return float(fullest[0])
    # (the block vLLM printed raising it, or the one its cache_config_info metric labels)
    block = st.get("attention_block_size") or (st.get("cache_config") or {}).get("block_size")
    tokens, running, usage = (st.get("gpu_kv_cache_tokens"), st.get("num_requests_running_max"),
                              st.get("gpu_kv_cache_usage_percent_max"))
    if not all(isinstance(x, (int, float)) and x > 0 for x in (block, tokens, running, usage)):
        return None
    return usage / 100 * tokens / running / block


def raised_block_holds_requests(facts: LogFacts) -> bool:
    """A hybrid's raised attention block may be what holds requests back: the running requests fill the cache with
    fewer than four such blocks each, so a short request still takes whole blocks -- as silent.py's capacity reading
    weighs it."""
    blocks = blocks_per_running_request(facts)
    if blocks is None:
        return False
    if blocks < 4:
        return True
    # (the cache holds far more per running request than the report's requests have tokens: the rest is what a hybrid
    # pins per request whatever its length -- a state page in every Mamba/GDN group)
    block = facts.startup["attention_block_size"]
    told = facts.startup.get("request_tokens_prose")
    if isinstance(told, int) and told > 0 and blocks * block > 2 * max(told, block):
        return True
    said = " ".join(str((facts.lines.get(k) or (0, ""))[1]) for k in ("capacity_prose", "report_prose"))
    return blocks < 16 and _SHORT_REQUESTS.search(said) is not None


# the report's word that its requests are short ("KV 'full' with short prompts")
_SHORT_REQUESTS = re.compile(r"\b(?:short|small|tiny) (?:prompts?|requests?|chats?|inputs?|conversations?|questions?)\b", re.I)


def low_memory_share_capacity(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, fewer requests fit than the reporter expects, and the engine was given a small share of the GPU's
    memory (``--gpu-memory-utilization`` 0.6 or less): the weights come out of that share first, the KV cache gets the
    rest -- the setting, outside the families."""
    said = facts.startup.get("capacity_prose")
    share = facts.args.get("gpu_memory_utilization")
    try:
        share = float(share)
    except (TypeError, ValueError):
        return None
    runs = [k for k in facts.startup.get("available_kv_cache_gib_runs") or [facts.startup.get("available_kv_cache_gib")]
            if isinstance(k, (int, float))]
    kv = runs[0] if runs else None
    # (up to 0.75 when the report's own rerun with a larger share found several times the KV memory)
    rerun = len(runs) >= 2 and kv is not None and max(runs[1:]) >= 2 * kv
    if not said or not 0 < share <= (0.75 if rerun else 0.6) or kv_cache_idle(facts) \
            or share > 0.5 and raised_block_holds_requests(facts):
        return None  # (a KV cache the stats lines show mostly empty is not what holds the requests back, nor one whose
        # requests each hold a few of a hybrid's raised blocks -- unless the engine has less than half of the GPU:
        # then the blocks are few because the memory is)
    return outside_families(
        facts, base_numbers,
        basis=(f"no error; the report says '{said}', and the engine runs with --gpu-memory-utilization {share:g}: vLLM "
               f"budgets only that share of the GPU's memory, the weights and activations come out of it first and the KV "
               "cache gets the rest" + (f" ({kv:g} GiB here, as vLLM logged)" if kv is not None else "")
               + " -- the memory setting, outside the hybrid/spec-decode families"),
        title=f"Small KV cache from --gpu-memory-utilization {share:g} (the engine's share of the GPU)",
        message=f"capacity without an error: {said}",
        evidence=("capacity_prose", "available_kv_cache_gib", "non_default_args", "command"),
        missing=["the same start with a larger --gpu-memory-utilization (0.9) when nothing else shares the GPU"])


def kv_cache_idle(facts: LogFacts) -> bool:
    """The engine's stats lines show the KV cache mostly empty (below half at its peak) and no request preempted: what
    holds requests back is not the KV capacity."""
    usage = facts.startup.get("gpu_kv_cache_usage_percent_max")
    return isinstance(usage, (int, float)) and usage < 50 and not (facts.startup.get("num_preemptions_max") or 0)


def scheduler_cap(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error; the report says fewer requests run than it expects, and the stats lines show the running count pinned
    at its peak while requests wait and the KV cache (which holds the Mamba/GDN states too) stays mostly empty: the
    scheduler's own limit (max_num_seqs, set or defaulted) caps the batch, not the KV layout or the state budget."""
    said = facts.startup.get("capacity_prose")
    st = facts.startup
    running, peak = st.get("num_requests_running"), st.get("num_requests_running_max")
    waiting, usage = st.get("num_requests_waiting_max"), st.get("gpu_kv_cache_usage_percent_max")
    if not said or not isinstance(running, int) or running != peak or not isinstance(waiting, int) or waiting < 1 \
            or not kv_cache_idle(facts) or st.get("max_cudagraph_capture_size_capped"):
        return None
    seqs = facts.args.get("max_num_seqs")
    if isinstance(seqs, int) and running < seqs:
        return None  # the batch stops below max_num_seqs: another limit holds it (the token budget, drafts' slots)
    return outside_families(
        facts, base_numbers,
        basis=(f"no error; the report says fewer requests run than expected ('{said}'), and the stats lines show "
               f"{running} requests running at most while up to {waiting} wait and the KV cache is {usage:g}% used: "
               "the pool that holds the KV pages and the Mamba/GDN states has room, so the scheduler's own cap on "
               "running requests (max_num_seqs" + (f" = {seqs}" if isinstance(seqs, int) else ", set or defaulted")
               + ") is what holds the batch -- outside the hybrid/spec-decode failure classes"),
        title=f"Batch capped at {running} running requests by the scheduler (max_num_seqs), not by KV memory",
        message=f"requests wait with the KV cache {usage:g}% used: {said}",
        evidence=("capacity_prose", "num_requests_running", "num_requests_waiting_max", "gpu_kv_cache_usage_percent_max"),
        missing=["the engine config's max_num_seqs (the 'Initializing a V1 LLM engine' line or the non-default args)"])


def sampled_by_generation_config(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, an evaluation's quality differs between runs, the requests set no temperature and vLLM says the
    model's generation_config supplies the sampling defaults: the "greedy" evaluation is sampled, so the gap is
    run-to-run noise -- outside the families."""
    symptom = facts.startup.get("wrong_output_prose")
    unset = facts.startup.get("no_temperature_prose")
    defaults = facts.startup.get("generation_config_sampling")
    varies = symptom and re.search(r"determinis|different|vary|varies|differ", str(symptom), re.I)
    if not (symptom and unset and (defaults or varies)):
        return None
    shown = f" {defaults}" if isinstance(defaults, str) else ""
    source = (f"vLLM took the model's generation_config sampling defaults{shown}" if defaults else
              "without one a request samples at the server's default temperature (1.0 unless the model's "
              "generation_config sets another)")
    return outside_families(
        facts, base_numbers,
        basis=(f"no error; the report's requests set no temperature ('{unset}') and {source}: the evaluation is "
               f"sampled, not greedy, so its answers vary from run to run ('{symptom}') -- outside the "
               "hybrid/spec-decode families"),
        title=("Sampled, not greedy: the model's generation_config sets the default temperature" if defaults else
               "Sampled, not greedy: the requests set no temperature"),
        message=f"quality difference without an error: {symptom}",
        evidence=("generation_config_sampling", "no_temperature_prose", "wrong_output_prose"),
        missing=["the same evaluation with temperature 0 in the requests (or --generation-config vllm), several runs "
                 "each way"])


def untuned_moe_slowdown(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, serving slower than the reporter expects, and vLLM warned that it has no tuned fused-MoE kernel
    config for this expert shape on this GPU: the MoE GEMMs run with default tiles -- outside the families."""
    slow = said_slow(facts)
    moe = facts.startup.get("moe_default_config")
    if not slow or not moe or facts.startup.get("wrong_output_prose"):
        return None
    shape = f" ({moe})" if isinstance(moe, str) else ""
    return outside_families(
        facts, base_numbers,
        basis=(f"no error; the report says serving is slow ('{slow}') and vLLM warned 'Using default MoE config. "
               f"Performance might be sub-optimal!'{shape}: no tuned fused-MoE config exists for this expert shape "
               "and GPU, so the MoE GEMMs run with default tile sizes -- outside the hybrid/spec-decode families"),
        title="Slow MoE layers: no tuned fused-MoE config for this GPU (default tiles)",
        message=f"slow serving without an error: {slow}", evidence=("moe_default_config", "slow_prose", "spec_slower_prose"),
        missing=["a profile of one step (the share of fused_moe kernels); a tuned config from "
                 "benchmarks/kernels/benchmark_moe.py --tune for this GPU"])


# the reporter's words for what went wrong without an error (prose.py)
SYMPTOMS = ("wrong_output_prose", "slow_prose", "spec_slower_prose", "acceptance_prose", "capacity_prose", "truncated_prose",
             "hit_rate_prose", "slow_start_prose", "throughput_fell")


# a change the reporter made (not a run under other conditions -- a cold cache, a fresh server, the first request)
_A_CHANGE = re.compile(r"\b(?:remov|dropp|drop|switch|using|use|set|point|disabl|mov|fix|chang|replac|revert|pinn|upgrad|"
                       r"downgrad|sort|strip|add|delet|unset|rebuil|re-?export|re-?quantiz)\w*", re.I)


def toggles_clear_families(facts: LogFacts, setup: Setup, base_numbers: dict) -> Diagnosis | None:
    """No error; the report's own A/B tests take the hybrid/spec-decode readings out (:func:`ab_tests_clear_families`)
    -- a near miss, as an asynchronous fault with the same tests is."""
    # (a run without drafts counts as the drafts-off test once prefix caching, the other half, was tested off too)
    cleared, by_own_fix = ab_tests_clear_families(
        facts, setup, no_drafts_counts=bool(facts.startup.get("persists_without_pc_prose"))), False
    if cleared and cleared.startswith("it persists without speculative decoding") and facts.startup.get("spec_slower_prose"):
        # (a report that the drafts bring no gain is the same without them by definition: that test confirms it)
        cleared = None
    fix = facts.startup.get("other_fix_prose")
    if cleared is None and fix and facts.startup.get("wrong_output_prose") and _A_CHANGE.search(str(fix)):
        # (a wrong output that a change outside the classes makes right: a state or batch fault of the drafts or the
        # cache would stay with them on)
        cleared = f"a change outside them makes the output right ('{fix}')"
    if cleared is None and (ruled_out := facts.startup.get("families_ruled_out_prose")):
        # (the reporter's verdict after their own tests: "So spec decode / the 1184 block size are not it")
        cleared = f"the report rules them out ('{ruled_out}')"
    if cleared is None and (resolved := facts.startup.get("resolved_prose")):
        # (the reporter's own fix, a change outside the families' settings that ended the symptom: trials.py)
        cleared, by_own_fix = f"the report's own fix changes nothing of theirs ('{resolved}')", True
    named = facts.startup.get("cause_named_prose")
    if cleared is None and not named:
        return None
    st = facts.startup
    # (a symptom read as a flag -- "hit_rate_prose": yes -- is quoted from its line)
    symptom = next((st[k] if isinstance(st[k], str) else str((facts.lines.get(k) or (0, "the reported symptom"))[1])[:160]
                    for k in SYMPTOMS + ("hang_prose",) if st.get(k)), "the reported symptom")
    # (no error, and the report's own verdict names the cause outside vLLM's model paths: "the quant itself is the
    # problem")
    said = " and ".join(x for x in (cleared and f"its own A/B tests take the hybrid/spec-decode classes out: {cleared}",
                                    named and f"its own finding names the cause outside them ('{named}')") if x)
    return outside_families(
        facts, base_numbers,
        basis=f"no error; the report says '{symptom}', and {said}",
        title="Symptom outside the hybrid/spec-decode classes (the report's "
              + ("own fix)" if by_own_fix else "A/B tests)" if cleared else "own finding)"),
        message=f"symptom without an error: {symptom}",
        evidence=(*AB_TEST_FACTS, "cause_named_prose", "resolved_prose", "families_ruled_out_prose"),
        missing=["the run that shows the symptom with the suspected setting alone changed"])


def activation_reserve_capacity(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, KV capacity lower than the reporter expects, and a very large token budget: vLLM's memory profiler
    runs a dummy step of max_num_batched_tokens and reserves its activation peak before sizing the KV cache."""
    said = facts.startup.get("capacity_prose")
    budget = facts.args.get("max_num_batched_tokens")
    if not said or not isinstance(budget, int) or budget < _HUGE_TOKEN_BUDGET:
        return None
    return outside_families(
        facts, base_numbers,
        basis=(f"no error; the report says the KV capacity is lower than expected ('{said}') and the token budget is "
               f"{budget:,} tokens: vLLM's memory profiler runs one step of max_num_batched_tokens and keeps its activation "
               "peak out of the KV cache, so a huge budget leaves little for KV -- outside the hybrid/spec-decode families"),
        title=f"KV capacity spent on a {budget:,}-token step's activations (max_num_batched_tokens)",
        message=f"KV capacity lower than expected: {said}", evidence=("capacity_prose", "non_default_args", "command"),
        missing=["the 'Available KV cache memory' with the default --max-num-batched-tokens (and capture sizes)"])


_HUGE_TOKEN_BUDGET = 65536  # (vLLM's defaults: 2,048-16,384 tokens a step)


def cpu_offload_slowdown(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, serving slow, and the command offloads weights to the CPU (``--cpu-offload-gb``): every step streams
    those weights over PCIe, whatever the model's layers or drafts -- outside the families."""
    slow = said_slow(facts)
    gb = facts.args.get("cpu_offload_gb")
    if not slow or not isinstance(gb, (int, float)) or gb <= 0:
        return None
    return slow_from(
        facts, base_numbers, slow,
        cause=(f"the command offloads {gb:g} GB of weights to the CPU (--cpu-offload-gb): every forward pass streams "
               "them over PCIe, so decode is bound by the host link (drafts only add passes)"),
        title=f"Slow from CPU weight offload ({gb:g} GB streamed over PCIe every step)", evidence=("command",),
        missing="the same load on enough GPU memory (more GPUs, a quantized checkpoint) without --cpu-offload-gb")


def grammar_compile_stall(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, serving slow, and the report finds the engine compiling structured output's grammar (a stack dump in
    xgrammar's compiler, a compile per request): a schema that differs per request misses the grammar cache, and each
    compile holds the scheduling loop -- the requests' schemas, outside the families."""
    slow = said_slow(facts) or facts.startup.get("capacity_prose")
    said = facts.startup.get("grammar_compile_prose")
    if not slow or not said:
        return None
    return slow_from(
        facts, base_numbers, slow,
        cause=(f"the report finds the engine compiling structured output's grammar ('{said}'): a JSON schema that differs "
               "per request misses the grammar cache, and each compile holds the engine's scheduling loop for every "
               "request"),
        title="Slow from structured-output grammar compiles (a schema per request misses the grammar cache)",
        evidence=("grammar_compile_prose", "command"),
        missing="the same load with one fixed schema (or the grammar cache hit rate), and a stack dump of the engine core")


def eager_slowdown(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, serving slow, and the command runs eager (``--enforce-eager``): no torch.compile and no CUDA graphs,
    so each decode step launches every small kernel from Python and the GPU idles between them -- outside the
    families (the capture-size class needs graphs to be captured at all)."""
    slow = said_slow(facts)
    # (a hang's words read as slowness, unless the report measures a decode rate: a hang has none)
    if not slow or not ran_eager(facts) or (
            facts.startup.get("hang_prose") and not _RATE.search(slow) and not _PER_TOKEN_TIME.search(slow)):
        return None  # (a hang is no launch-bound decode; a time per token measured is no hang)
    return slow_from(
        facts, base_numbers, slow,
        cause=("the engine runs with --enforce-eager: without torch.compile and CUDA graphs every decode step launches "
               "its many small kernels from Python, so decode is launch-bound (low GPU utilisation), with or without "
               "drafts"),
        title="Slow decode from eager mode (--enforce-eager: no CUDA graphs, launch-bound steps)",
        evidence=("non_default_args", "command"),
        missing="the same load without --enforce-eager (CUDA graphs captured: 'Capturing CUDA graphs' lines at start)")

# a reporter telling a debugging rerun, not a setting the slow engine ran with
_DEBUG_RERUN = re.compile(r"\b(?:re-?r[au]n\w*|tried|try|trying|debug\w*|repro\w*|makes? it|to find|once)\b", re.I)


def blocking_launch_slowdown(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, serving slow, and the engine's environment sets CUDA_LAUNCH_BLOCKING=1 (an env file, an export, a
    container's env): every launch waits for its kernel, so a step's thousands of small kernels run one after another
    with the GPU idle between them -- a debugging setting left on, outside the families."""
    slow = said_slow(facts)
    said = str((facts.lines.get("cuda_launch_blocking") or (0, ""))[1])
    if not slow or (facts.startup.get("env_numbers") or {}).get("cuda_launch_blocking") != 1 or _DEBUG_RERUN.search(said):
        return None
    return slow_from(
        facts, base_numbers, slow,
        cause=(f"the engine's environment sets CUDA_LAUNCH_BLOCKING=1 ('{said.strip()[:120]}'): every kernel launch "
               "waits for the kernel to finish, so the host serialises a step's many small kernels and the GPU idles "
               "between them -- a debugging setting left in the environment"),
        title="Slow from CUDA_LAUNCH_BLOCKING=1 left set (every kernel launch synchronous)",
        evidence=("cuda_launch_blocking", "env_numbers"),
        missing="the same load with CUDA_LAUNCH_BLOCKING unset in the engine's environment")


def lora_slot_queueing(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error; serving slow or requests queueing, with more LoRA adapters in use than the engine's adapter slots
    (``--max-loras``, 1 by default): a step runs the requests of at most that many adapters, the others wait --
    the scheduler's LoRA limit, outside the families."""
    said = facts.startup.get("capacity_prose") or facts.startup.get("slow_prose")
    if not said or not truthy(facts.args.get("enable_lora")):
        return None
    text = " ".join(str(t) for t in (facts.command, (facts.lines.get("non_default_args") or (0, ""))[1]) if t)
    adapters = max(len(_LORA_PATH.findall(text)), len(re.findall(r"LoRAModulePath\(", text)))
    slots = facts.args.get("max_loras")
    slots = slots if isinstance(slots, int) and slots > 0 else 1
    if adapters <= slots:
        return None
    return outside_families(
        facts, base_numbers,
        basis=(f"no error; the report says '{said}', and the engine serves {adapters} LoRA adapters with {slots} adapter "
               f"slot(s) a step (--max-loras{'' if facts.args.get('max_loras') else ', default 1'}): requests of the "
               "other adapters wait for a slot -- the scheduler's LoRA limit, outside the hybrid/spec-decode families"),
        title=f"Requests waiting for LoRA slots ({adapters} adapters, --max-loras {slots})",
        message=f"queueing without an error: {said}", evidence=("capacity_prose", "slow_prose", "command",
                                                                  "non_default_args"),
        missing=[f"the same load with --max-loras {adapters} (and the memory it takes)"])


# an adapter given to --lora-modules as name=path
_LORA_PATH = re.compile(r"(?<![\w-])[\w.-]+=(?:/|\./|~/)[^\s'\",]+")


def slow_tokenizer_latency(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, serving slow, and vLLM warned that it loaded a slow (Python) tokenizer: the API server tokenizes every
    prompt and detokenizes every streamed token in Python, on one core, while the GPUs wait -- outside the families."""
    slow = said_slow(facts)
    if not slow or not facts.startup.get("slow_tokenizer"):
        return None
    return slow_from(
        facts, base_numbers, slow,
        cause=("vLLM warned that it uses a slow tokenizer ('Using a slow tokenizer'): without a tokenizer.json the "
               "Python tokenizer encodes every prompt and decodes every streamed token on the API server's CPU while "
               "the GPUs wait"),
        title="Slow from a slow (Python) tokenizer: vLLM's own warning",
        evidence=("slow_tokenizer", "command", "non_default_args"),
        missing="the same load with a fast tokenizer (a tokenizer.json in the tokenizer folder)")


def pcie_allreduce_slowdown(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, serving slow, and vLLM says its custom all-reduce is off because the TP group's GPUs talk over PCIe
    without P2P: every layer's all-reduce crosses the host link through NCCL, so decode is bound by communication,
    whatever the model's layers or drafts -- outside the families."""
    slow = said_slow(facts)
    off, topo = facts.startup.get("custom_allreduce_off"), facts.startup.get("gpu_link_no_nvlink")
    p2p_off = facts.startup.get("nccl_p2p_disabled")
    tp = facts.args.get("tensor_parallel_size")
    if p2p_off and isinstance(tp, int) and tp >= 2:
        why = (f"the environment sets {p2p_off}, so neither NCCL nor vLLM's custom all-reduce "
               "uses NVLink / P2P between the GPUs")
    elif off:
        why = f"vLLM disabled its custom all-reduce because {off}"
    elif topo and not facts.startup.get("gpu_link_nvlink") and isinstance(tp, int) and tp >= 2:
        why = f"nvidia-smi topo -m links the GPUs without NVLink ('{topo}')"
    else:
        why = None
    if not slow or not why or facts.startup.get("max_num_scheduled_tokens_reduced") is not None:
        return None  # (vLLM's own word that the drafts' slots cut the step's token budget: the families' reading)
    return slow_from(
        facts, base_numbers, slow,
        cause=(f"{why}: every layer's all-reduce"
               + (f" across the {tp} GPUs" if tp else "") + " goes through NCCL over the host's PCIe / socket link, so "
               "each step waits on communication, with or without drafts"),
        title=("Slow from tensor parallelism with GPU peer-to-peer turned off (NCCL_P2P_DISABLE=1)" if p2p_off else
               "Slow from tensor parallelism over PCIe (no NVLink / P2P between the GPUs)"),
        evidence=("nccl_p2p_disabled", "custom_allreduce_off", "gpu_link_no_nvlink", "command"),
        missing="the same load at a smaller TP size (or pipeline parallelism across the sockets), and `nvidia-smi topo -m`")


def collective_hang(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, the engine hangs, and a stack dump of the workers (py-spy, faulthandler) waits inside a collective
    (NCCL all_reduce / all_gather / broadcast), with no device fault reported (no Xid, no illegal access): a collective
    that never completes -- the GPUs' transport (P2P over PCIe, IOMMU/ACS, a VM), outside the families."""
    hang = facts.startup.get("hang_prose")
    stack = facts.startup.get("collective_stack") or facts.startup.get("collective_prose")
    if not hang or not stack or facts.numbers.get("xid") or any(
            _FAULT_WORDS.search(str(t)) for _, t in facts.startup.get("error_lines") or []):
        return None
    return outside_families(
        facts, base_numbers,
        basis=(f"no error; the report says the engine hangs ('{hang}') and "
               + (f"its stack dump waits in a collective ('{stack}')" if facts.startup.get("collective_stack") else
                  f"tells the collective or the transport ('{stack}')")
               + " with no device fault reported: the ranks never complete a collective -- the GPUs' "
               "transport (NCCL P2P over PCIe, IOMMU/ACS, a VM's passthrough) or a peer that never arrived, outside the "
               "hybrid/spec-decode families"),
        title="Hang in a collective (NCCL): the ranks never complete an all-reduce",
        message=f"hang without an error: {hang}", evidence=("hang_prose", "collective_stack", "collective_prose",
                                                            "shm_broadcast_wait_seconds"),
        missing=["NCCL_DEBUG=INFO output of the hang, and the same run with NCCL_P2P_DISABLE=1 (and with one GPU)"])


_FAULT_WORDS = re.compile(r"illegal memory access|illegal address|device-side assert|\bXid\b|unspecified launch failure",
                          re.I)


_SAMPLING_KNOBS = ("presence_penalty", "frequency_penalty", "repetition_penalty")


def sampled_away_acceptance(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, draft acceptance low, and the requests sample at a high temperature or with penalties: the target's
    sampled tokens disagree with the drafts more often (a property of the sampling, not of the engine)."""
    said = facts.startup.get("acceptance_prose")
    if not said and facts.startup.get("greedy_accepts_prose"):
        # (slower under drafts, and the report's own greedy run has them accepted: the sampling is what rejects them)
        said = facts.startup.get("spec_slower_prose")
    def hot(p: dict) -> bool:
        t = p.get("temperature")
        return isinstance(t, (int, float)) and t >= 1.0 or any(
            isinstance(p.get(k), (int, float)) and p[k] not in (0, 1) for k in _SAMPLING_KNOBS)

    # (of the requests the report shows -- a production one beside a greedy benchmark's, in either order -- the one that
    # samples is the one whose drafts are rejected)
    logged = [p for p in (facts.startup.get("request_params_last"), facts.startup.get("request_params")) if p]
    params = next((p for p in logged if hot(p)), logged[0] if logged else {})
    temp = params.get("temperature")
    knobs = [k for k in _SAMPLING_KNOBS if isinstance(params.get(k), (int, float)) and params[k] not in (0, 1)]
    if not said or facts.startup.get("wrong_output_prose") or not (
            isinstance(temp, (int, float)) and temp >= 1.0 or knobs):
        return None
    how = ", ".join(([f"temperature {temp:g}"] if isinstance(temp, (int, float)) else []) + [f"{k} {params[k]:g}" for k in knobs])
    return outside_families(
        facts, base_numbers,
        basis=(f"no error; the report says "
               + ("draft acceptance is low" if facts.startup.get("acceptance_prose") else
                  "the drafts make serving slower while its greedy run accepts them") +
               f" ('{said}') and the requests sample with {how}: "
               "rejection sampling accepts a draft token with the target's probability of it, which high temperatures "
               "and penalties spread thin -- acceptance falls with the sampling, outside the hybrid/spec-decode families"),
        title="Low draft acceptance from the requests' sampling (high temperature / penalties)",
        message=f"low acceptance without an error: {said}", evidence=("acceptance_prose", "request_params"),
        missing=["the acceptance of the same prompts sent with temperature 0 and no penalties"])


def _hot(params: dict) -> bool:
    """A request sampling at temperature 1.5 or more with no top-p / top-k / min-p cut."""
    temp = params.get("temperature")
    cut = any(isinstance(params.get(k), (int, float)) and 0 < params[k] < (0.95 if k == "top_p" else 10 ** 6)
              for k in ("top_p", "min_p")) or (isinstance(params.get("top_k"), int) and 0 < params["top_k"] <= 100)
    return isinstance(temp, (int, float)) and temp >= 1.5 and not cut


def hot_sampling_garbage(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, the output said to be garbage, and the requests sample at a temperature of 1.5 or more without a
    top-p / top-k / min-p cut: the tail of the vocabulary is drawn often enough that any model's text falls apart (its
    drafts are rejected too) -- the requests' sampling, outside the families."""
    said = facts.startup.get("wrong_output_prose")
    # (of two requests the report shows -- the failing one and a comparison that is fine, in either order -- the one
    # sampling hot)
    hot = [p for p in (facts.startup.get("request_params_last"), facts.startup.get("request_params")) if p and _hot(p)]
    if not said or not hot:
        return None
    temp = hot[0]["temperature"]
    return outside_families(
        facts, base_numbers,
        basis=(f"no error; the report says the output goes wrong ('{said}') and the requests sample at temperature "
               f"{temp:g} with no top-p / top-k / min-p cut: at that temperature the vocabulary's tail is drawn often "
               "enough that any model's text turns incoherent, drafts or not -- the requests' sampling, outside the "
               "hybrid/spec-decode families"),
        title=f"Incoherent text from sampling at temperature {temp:g} (the requests, not the engine)",
        message=f"wrong output without an error: {said}", evidence=("wrong_output_prose", "request_params"),
        missing=["the same prompts sent with temperature 0 (greedy) or the model's recommended sampling"])


def _graphs_stop_below(facts: LogFacts, k: int, tokens: int) -> bool:
    """The operator's own capture sizes (or their cap), as vLLM keeps them under ``k`` drafts (rounded up to
    multiples of 1 + k, those past the cap dropped), stop below a decode step of ``tokens`` at a small batch (graphs
    for fewer than 64 requests): that step runs without a CUDA graph while it is still launch-bound -- the
    capture-size class, not the drafts' compute (past a hundred requests a step is compute-bound, graph or not)."""
    given = facts.args.get("cudagraph_capture_sizes")
    sizes = [s for s in given if isinstance(s, int) and s > 0] if isinstance(given, list) else []
    cap = facts.args.get("max_cudagraph_capture_size")
    cap = cap if isinstance(cap, int) and cap > 0 else None
    kept = rounded_for_drafts(sizes, k, cap) if sizes else []
    top = max(kept) if kept else cap
    return isinstance(top, int) and top < tokens and top // (k + 1) < 64


def spec_batch_slowdown(facts: LogFacts, setup: Setup, base_numbers: dict) -> Diagnosis | None:
    """No error; drafts said to make serving slower at a large batch, on a model without MLA: at that batch the GPUs
    are compute-bound, and every step verifies 1 + k tokens per request for the few it accepts -- speculative decoding's
    own trade-off, outside the families (an MLA model's decode backend is :func:`spec_slowdown`'s)."""
    said = facts.startup.get("spec_slower_prose")
    load = max(int(facts.startup.get("concurrent_requests") or 0), int(facts.startup.get("num_requests_running_max") or 0))
    if not said or not setup.spec_k or setup.mla or load < 32:
        return None
    if FIRST_TOKEN.search(str((facts.lines.get("spec_slower_prose") or (0, ""))[1])):
        return None  # (a slow first token is the prefill's and the queue's: drafts verify during decode)
    # (drafts' steps that outgrow the graphs or the token budget, or vLLM's word that it dropped full CUDA graphs for a
    # backend under drafts, are the families' reading)
    if facts.startup.get("max_cudagraph_capture_size_truncated") is not None or drafts_outgrow_budget(facts, setup) \
            or facts.startup.get("cudagraph_spec_downgrade_backend") \
            or _graphs_stop_below(facts, setup.spec_k, load * (setup.spec_k + 1)):
        return None
    acc = (facts.startup.get("metrics") or {}).get("spec_mean_acceptance_length")
    return outside_families(
        facts, base_numbers,
        basis=(f"no error; the report says the drafts make serving slower ('{said}') at {load} concurrent requests: at "
               f"that batch the GPUs are compute-bound, and each step verifies 1 + k = {setup.spec_k + 1} tokens per "
               "request" + (f" for a mean acceptance length of {acc:g}" if isinstance(acc, (int, float)) else "")
               + " -- the drafts cost more compute than they save, speculative decoding's own trade-off at large "
               "batches, outside the hybrid/spec-decode failure families"),
        title="Slower with drafts at a large batch (compute-bound verification, no failure)",
        message=f"slower with speculative decoding at {load} concurrent requests: {said}",
        evidence=("spec_slower_prose", "slow_prose", "num_requests_running", "command"),
        missing=["the same load with fewer speculative tokens, and the throughput at low and high concurrency"])


def long_prompt_prefill(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, the first token said slow, and the report's prompts are long (16k tokens or more) against the prompt
    throughput vLLM's stats lines show: one prompt alone takes a second or more of prefill, and the requests queued
    behind it wait for theirs -- the workload's prefill, outside the families."""
    slow = str(facts.startup.get("slow_prose") or "")
    tokens, rate = facts.startup.get("request_tokens_prose"), facts.startup.get("prompt_throughput_tok_s")
    if not FIRST_TOKEN.search(slow) or not isinstance(tokens, int) or tokens < 16000 \
            or not isinstance(rate, (int, float)) or rate <= 0 or tokens / rate < 1.0:
        return None
    d = slow_from(
        facts, base_numbers, slow,
        cause=(f"its prompts run to about {tokens:,} tokens while vLLM's stats lines show {rate:,.0f} prompt tokens/s: "
               f"one prompt alone takes about {tokens / rate:.1f} s of prefill, and each request queued behind it waits "
               "for those before it -- the workload's prefill time, whatever the model's layers"),
        title=f"Long time to first token from {tokens:,}-token prompts (prefill-bound at {rate:,.0f} prompt tokens/s)",
        evidence=("request_tokens_prose", "prompt_throughput_tok_s", "command"),
        missing="the time to first token of one such prompt on an idle engine")
    d.numbers.update(prompt_tokens=tokens, prefill_seconds_per_prompt=round(tokens / rate, 1))
    return d


def long_context_capacity(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error; fewer requests run at once than the reporter expects, and vLLM's own 'Maximum concurrency for L tokens
    per request: X' says the KV cache holds only a few requests of the configured length: the context length (and
    what the clients ask for), not the KV layout -- outside the families."""
    said = facts.startup.get("capacity_prose")
    x, tokens = facts.startup.get("max_concurrency"), facts.startup.get("max_concurrency_tokens")
    if not said or not isinstance(x, (int, float)) or x > 4 or not isinstance(tokens, int) or tokens < 65536 \
            or raised_block_holds_requests(facts):
        return None  # (running requests that each hold a few of a hybrid's raised blocks: the block's count, not their length)
    asked = (facts.startup.get("request_params") or {}).get("max_tokens")
    if kv_cache_idle(facts) and not (isinstance(asked, int) and asked * 4 >= tokens):
        # the stats lines show the cache mostly empty while requests wait, and no client asks for a context-long
        # answer: the configured length does not fill it
        return None
    return outside_families(
        facts, base_numbers,
        basis=(f"no error; the report says '{said}', and vLLM logged 'Maximum concurrency for {tokens:,} tokens per "
               f"request: {x:g}x': the KV cache holds about {x:g} requests of the configured length"
               + (f", and the clients ask for max_tokens {asked:,}" if isinstance(asked, int) else "")
               + " -- long contexts fill the cache, not a hybrid/spec-decode failure"),
        title=f"Few requests at once from {tokens:,}-token requests (the KV cache holds {x:g} of them)",
        message=f"capacity without an error: {said}",
        evidence=("capacity_prose", "max_concurrency", "request_params", "command"),
        missing=["the requests' real lengths (prompt + max_tokens) against the KV cache size"])


def prefill_budget_slowdown(facts: LogFacts, setup: Setup, base_numbers: dict) -> Diagnosis | None:
    """No error; the time to the first token is said to be long, and the step's token budget is small (2,048 or less):
    chunked prefill splits every prompt into chunks of that many tokens, one chunk a step -- the setting, outside the
    families (drafts whose slots eat into that budget are the token-budget class)."""
    slow = facts.startup.get("slow_prose") or ""
    budget = facts.args.get("max_num_batched_tokens")
    if "TTFT" not in slow.upper() and "first token" not in slow.lower() or not isinstance(budget, int) or budget > 2048:
        return None
    if setup.spec_k > 0 or facts.startup.get("max_num_scheduled_tokens_reduced") is not None:
        return None
    return outside_families(
        facts, base_numbers,
        basis=(f"no error; the report says '{slow}', and the engine runs with max_num_batched_tokens {budget}: chunked "
               f"prefill feeds each prompt {budget} tokens a step, so a long prompt takes many steps before its first "
               "token -- the token budget, outside the hybrid/spec-decode families"),
        title=f"Long time to first token from a {budget}-token step budget (chunked prefill)",
        message=f"slow first tokens without an error: {slow}",
        evidence=("slow_prose", "non_default_args", "command"),
        missing=["the same load with a larger --max-num-batched-tokens (8192 or more)"])


def kv_saturated_workload(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error; serving slow or requests queueing, and the engine's stats lines show the KV cache full with requests
    preempted or waiting, with no family reading of the lost capacity before this one (padding, drafts' pages, KV
    quantization): the workload's tokens (long outputs, n > 1, long prompts) outgrow the cache -- the load, outside the
    families."""
    said = facts.startup.get("slow_prose") or facts.startup.get("capacity_prose")
    st = facts.startup
    usage = st.get("gpu_kv_cache_usage_percent_max")
    if not said or not isinstance(usage, (int, float)) or usage < 95 or not (
            (st.get("num_preemptions_max") or 0) > 0 or (st.get("num_requests_waiting_max") or 0) > 0):
        return None
    if st.get("hybrid_kv_cache_manager_disabled"):
        return None  # (vLLM runs the model without its hybrid KV cache manager: every layer keeps full-length KV)
    shared, block = st.get("shared_prefix_tokens"), st.get("attention_block_size")
    if st.get("hit_rate_prose") and isinstance(shared, int) and isinstance(block, int) and shared < block:
        return None  # (the report's shared prefix is shorter than the hybrid's raised block: its hits never come)
    tokens, per_request, running = st.get("gpu_kv_cache_tokens"), st.get("request_tokens_prose"), st.get("num_requests_running_max")
    if all(isinstance(x, int) and x > 0 for x in (tokens, per_request, running)) and running * per_request * 2 <= tokens:
        return None  # the requests the report sizes should fit twice over: the cache's layout, not the load, holds fewer
    if raised_block_holds_requests(facts):
        return None
    return outside_families(
        facts, base_numbers,
        basis=(f"no error; the report says '{said}' and the engine's stats lines show the KV cache at {usage:g}% with "
               f"{st.get('num_preemptions_max') or 0} preempted and {st.get('num_requests_waiting_max') or 0} waiting: "
               "the running requests' tokens fill the cache, so requests wait or are recomputed -- the workload's "
               "size against the cache, outside the hybrid/spec-decode families"),
        title=f"KV cache full under this workload ({usage:g}% used, requests preempted or waiting)",
        message=f"capacity without an error: {said}",
        evidence=("slow_prose", "capacity_prose", "gpu_kv_cache_usage_percent_max", "num_preemptions_max"),
        missing=["the load's tokens per request (prompt + max_tokens x n) against the KV cache's token count"])


def prefill_chunks_stall_decodes(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error; the time between tokens spikes (streams freeze) when long prompts arrive, and the step's token budget
    is large (``--max-num-batched-tokens`` 16,384 or more): chunked prefill puts that many prompt tokens into one step
    beside the running decodes, so every decode waits for the whole chunk -- the setting, outside the families."""
    slow = said_slow(facts)
    budget = facts.args.get("max_num_batched_tokens")
    said = slow + " " + str((facts.lines.get("slow_prose") or (0, ""))[1]) if slow else ""
    # (gaps while long prompts arrive; a time per token that grows with the load is another reading's)
    if not slow or not _INTER_TOKEN.search(said) or not _STALLS.search(said) or not isinstance(budget, int) \
            or budget < 16384:
        return None
    return slow_from(
        facts, base_numbers, slow,
        cause=(f"the engine runs with max_num_batched_tokens {budget}: chunked prefill puts up to that many prompt tokens "
               "into one step beside the running decodes, so each decode waits for the whole chunk and the streams stall "
               "whenever long prompts arrive"),
        title=f"Token gaps from {budget}-token prefill chunks (the step budget), not the drafts or the layers",
        evidence=("non_default_args", "command"),
        missing="the same load with a smaller --max-num-batched-tokens (8192) or --max-num-partial-prefills / "
                "--long-prefill-token-threshold")


# the time between tokens stopping for a while: spikes, stalls, freezes, gaps
_STALLS = re.compile(r"spik|stall|freez|stutter|\bgaps?\b|paus|jitter|hiccup|choppy|jerky|hang", re.I)
# the time between tokens, in the report's words: ITL / TPOT / a stream that freezes or stalls
_INTER_TOKEN = re.compile(r"\b(?:ITL|TPOT|inter[- ]token|time per output token|stream\w* (?:freez|stall|stutter))", re.I)


_SLOW_LOAD_S = 300  # (a checkpoint read from a local NVMe at >1 GB/s loads in a minute or two)


def slow_weight_loading(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, the server said to take long to start, and vLLM's own 'Loading weights took N seconds' is most of it:
    the storage the checkpoint is read from (a network share, a cold object store) -- outside the families."""
    said = facts.startup.get("slow_start_prose")
    took = facts.startup.get("weights_loading_seconds") or facts.startup.get("model_loading_seconds")
    shard, shards = facts.startup.get("weights_shard_seconds"), facts.startup.get("weights_shards")
    if took is None and isinstance(shard, float) and isinstance(shards, int):
        took = shard * shards  # (the progress bar's pace over all the shards: a load the report cut short)
    if not said or not isinstance(took, (int, float)) or took < _SLOW_LOAD_S:
        return None
    return outside_families(
        facts, {**base_numbers, "weights_loading_seconds": took},
        basis=(f"no error; the report says the server is slow to start ('{said}') and vLLM logged that loading the "
               f"weights took {took:,.0f} s: the time goes to reading the checkpoint from its storage (a network share, "
               "a cold object store, a slow disk), before any layer, cache or draft is set up -- outside the "
               "hybrid/spec-decode families"),
        title=f"Slow start: loading the weights took {took:,.0f} s (the checkpoint's storage)",
        message=f"slow start without an error: {said}", evidence=("slow_start_prose", "weights_loading_seconds",
                                                                  "model_loading_seconds"),
        missing=["the read speed of the checkpoint's storage (the same load from a local disk, or --load-format with "
                 "a pre-sharded / cached copy)"])


def batch_variant_numerics(facts: LogFacts, setup: Setup, base_numbers: dict) -> Diagnosis | None:
    """No error; greedy answers that differ between runs, and the report ties them to the batch's floating-point
    numerics (batch-invariant kernels make them identical; ties broken by reduction order): the kernels' results depend on
    the batch a request shares, whatever the drafts or the cache -- outside the families. With drafts on, only the
    batch-invariant run itself rules the drafts' batches out."""
    said, cause = facts.startup.get("wrong_output_prose"), facts.startup.get("batch_numerics_prose")
    if not said or not cause:
        return None
    if setup.spec_k and not facts.startup.get("faults_without_spec_prose") and "BATCH_INVARIANT" not in str(cause):
        return None
    return outside_families(
        facts, base_numbers,
        basis=(f"no error; the report says the answers differ ('{said}') and ties it to the batch's numerics "
               f"('{cause}'): a kernel's reduction order depends on the batch a request runs in, so a near-tie token can "
               "flip between runs at temperature 0 -- expected without batch-invariant kernels, outside the "
               "hybrid/spec-decode families"),
        title="Greedy answers that vary with the batch (floating-point numerics, not a fault)",
        message=f"answers differ between runs without an error: {said}",
        evidence=("wrong_output_prose", "batch_numerics_prose", "batch_dependent_prose"),
        missing=["the same runs with VLLM_BATCH_INVARIANT=1 (batch-invariant kernels), or at concurrency 1"])


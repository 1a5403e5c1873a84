"""The configuration as the log states it (model kind, speculative decoding, prefix caching, Mamba cache
mode, async scheduling, the crash-dump batch), whether the log states it whole, and the setting each family needs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..model import LogException, LogFacts
from ..rules._modelnames import DENSE_MODEL, HYBRID_ARCH, HYBRID_MODEL, MLA_ARCH, MLA_MODEL

HYBRID_WORDS = re.compile(r"\bGDN\b|gated ?deltanet|\bmamba\d?\b|linear[ -]attention", re.I)
MLA_WORDS = re.compile(r"\bMLA\b|\bDSA\b|sparse[ -]?MLA|indexer|DeepGEMM", re.I)
HYBRID_FRAMES = re.compile(r"mamba|gdn|linear_attn|short_conv|/fla/|causal_conv1d|ssd_|qwen3_next|qwen3_5|nemotron_h|"
                           r"kda|lightning", re.I)
MLA_FRAMES = re.compile(r"/mla/|mla_attention|flashmla|flash_mla|deep_gemm|indexer|sparse_attn|deepseek|aiter_mla|"
                        r"triton_mla|cutlass_mla|flashinfer_mla", re.I)
# the GEMMs of the same libraries and models: DeepGEMM serves the MoE experts' and the linear layers' matmuls
# (vllm/utils/deep_gemm.py m_grouped_fp8_gemm_nt_contiguous, fp8_gemm_nt; csrc/apis/gemm.hpp) as well as the
# sparse indexer's attention logits (fp8_paged_mqa_logits, csrc/apis/attention.hpp); a frame of a MoE layer, a
# quantized linear layer or a GEMM is not attention code, whatever module it is in
GEMM_FRAMES = re.compile(r"fused_moe|/quantization/|layers/linear\.py|\bgemm|_gemm|gemm_|grouped_|scaled_mm|"
                         r"marlin|cutlass_moe|\bmoe_|_moe\b|experts\b", re.I)


def mla_frame(file: str, function: str) -> bool:
    """An MLA / sparse-indexer attention frame (not a GEMM of the same library or model)."""
    text = f"{file} {function}"
    return bool(MLA_FRAMES.search(text)) and not GEMM_FRAMES.search(text)


@dataclass
class Setup:
    hybrid: bool | None
    mla: bool | None
    spec_k: int
    spec_method: str | None
    prefix_caching: bool | None
    mamba_cache_mode: str | None
    async_scheduling: bool | None
    batch: dict[str, Any] | None
    why: list[str]
    mixed_evidence: str | None = None  # the report's own words about mixed decode / spec-decode batches
    kv_connector: str | None = None  # the KV connector(s), comma-separated (P/D transfer, offloading)
    kv_role: str | None = None  # kv_producer | kv_consumer | kv_both
    prefix_caching_needed: str | None = None  # the report's words that the failure needs prefix caching

    @property
    def prefix_cached_states(self) -> bool:
        """Prefix caching routes the Mamba/GDN states through the block table (the 'align' or 'all' cache mode)."""
        return bool(self.prefix_caching or self.mamba_cache_mode in ("align", "all"))


def command_spec_k(args: dict[str, Any]) -> int:
    """num_speculative_tokens as the command (or the engine's config line) gives it, 0 where neither does."""
    k = args.get("num_speculative_tokens")
    spec = args.get("speculative_config")
    if k is None and isinstance(spec, dict):
        k = spec.get("num_speculative_tokens")
    try:
        return int(k or 0)
    except (TypeError, ValueError):
        return 0


def truthy(v: Any) -> bool | None:
    if v is None:
        return None
    if isinstance(v, str):
        return v.strip().lower() in ("1", "true", "yes", "on")
    return bool(v)


# what vLLM logs once it has captured CUDA graphs: the capture's memory, or a capture progress bar's sizes
_CAPTURED = ("cudagraph_memory_gib", "mixed_piecewise_capture_sizes", "decode_full_capture_sizes",
             "mixed_full_capture_sizes", "decode_piecewise_capture_sizes")


def ran_eager(facts: LogFacts) -> bool:
    """The run had no CUDA graphs: its command says --enforce-eager and vLLM logged no capture (a report that quotes
    --enforce-eager as its comparison while the log shows the graphs captured was not eager)."""
    return bool(truthy(facts.args.get("enforce_eager"))) and not any(
        facts.startup.get(k) and not _QUOTED_CAPTURE.search(str((facts.lines.get(k) or (0, ""))[1])) for k in _CAPTURED)


# a capture line quoted in the reporter's sentence ('staging log has "Graph capturing finished in 31 secs"'): another
# run's line, not this one's
_QUOTED_CAPTURE = re.compile(r"[\"'`]\s*(?:Graph capturing finished|Capturing CUDA graphs)")


def drafts_outgrow_budget(facts: LogFacts, setup: Setup) -> bool:
    """A full batch's spec decodes (max_num_seqs x (1 + k) tokens) do not fit the step's token budget
    (--max-num-batched-tokens): the scheduler trims their drafts."""
    seqs, budget = facts.args.get("max_num_seqs"), facts.args.get("max_num_batched_tokens")
    return isinstance(seqs, int) and isinstance(budget, int) and budget < seqs * (setup.spec_k + 1)


def read_setup(facts: LogFacts, exc: LogException | None) -> Setup:
    a = facts.args
    why: list[str] = []
    arch = facts.architecture or a.get("architecture") or facts.startup.get("resolved_architecture") or ""
    model = str(a.get("model") or facts.model or "")
    frames_text = " ".join(f"{f.file} {f.function}" for e in facts.exceptions for f in e.frames[-12:])
    mla_frames = any(mla_frame(f.file, f.function) for e in facts.exceptions for f in e.frames[-12:])
    # a model named only in prose (a test id, an error line, a repo id quoted in the text)
    terms = " ".join(facts.startup.get("prose_terms") or [])
    prose = " ".join([t for _, t in (facts.startup.get("error_lines") or [])][-20:]
                     + list(facts.startup.get("repo_mentions") or []) + [terms])
    if not model and not arch:
        # (an attention-only family named in the prose only when no hybrid or MLA name is there)
        m = HYBRID_MODEL.search(prose) or MLA_MODEL.search(prose) or DENSE_MODEL.search(terms)
        if m:
            model = m.group(0)
    hybrid = None
    if arch and HYBRID_ARCH.search(arch) or HYBRID_MODEL.search(model):
        hybrid = True
        why.append(f"hybrid model ({arch or model})")
    elif not arch and not a.get("model") and not facts.model and HYBRID_WORDS.search(terms):
        hybrid = True
        why.append(f"hybrid model (the text speaks of {HYBRID_WORDS.search(terms).group(0)} layers)")
    elif any(k in facts.startup for k in ("mamba_cache_mode", "mamba_padding_percent", "attention_block_size",
                                          "prefix_caching_disabled_hybrid")):
        hybrid = True
        why.append("hybrid model (Mamba page alignment in the startup lines)")
    elif HYBRID_FRAMES.search(frames_text):
        hybrid = True
        why.append("hybrid model (Mamba/GDN frames)")
    elif arch or model:
        hybrid = False
    mla = None
    if arch and MLA_ARCH.search(arch) or not arch and MLA_MODEL.search(model) or mla_frames:
        mla = True
        why.append(f"MLA / sparse-indexer model ({arch or model or 'frames'})")
    elif "MLA" in str(facts.startup.get("attention_backend_selected") or "").upper():
        # vLLM's own choice of an MLA backend says the model's attention is MLA, whatever its name suggests
        mla = True
        why.append(f"MLA model (vLLM chose the {facts.startup['attention_backend_selected']} backend)")
    elif not arch and not a.get("model") and not facts.model and MLA_WORDS.search(terms) and not hybrid:
        mla = True
        why.append(f"MLA / sparse-indexer model (the text speaks of {MLA_WORDS.search(terms).group(0)})")
    elif arch or model:
        mla = False
    k = command_spec_k(a)
    spec = a.get("speculative_config")
    method = a.get("speculative_method") or (spec.get("method") if isinstance(spec, dict) else None)
    if not k and isinstance(facts.startup.get("num_speculative_tokens_default"), int):
        k = facts.startup["num_speculative_tokens_default"]  # vLLM's default for the method (suffix decoding)
        method = method or "suffix"
    batch = facts.startup.get("crash_batch")
    if not k and batch and batch.get("spec_tokens_per_req"):
        k = max(batch["spec_tokens_per_req"])
    if not k and batch and batch.get("num_spec_tokens_to_schedule"):
        k = int(batch["num_spec_tokens_to_schedule"])
    dsa_next_n = facts.startup.get("dsa_next_n")
    if not k and isinstance(dsa_next_n, int) and dsa_next_n > 1:  # the DSA indexer's next_n = k + 1
        k = dsa_next_n - 1
        method = method or "the DSA indexer's next_n"
    prose = facts.startup.get("spec_prose") if isinstance(facts.startup.get("spec_prose"), dict) else None
    if not k and not method and prose:  # the reporter's words: "with MTP", "EAGLE3, 4 speculative tokens"
        method = f"{prose.get('method')}, from the text"
        if isinstance(prose.get("k"), int) and prose["k"] > 0:
            k = prose["k"]
    elif k and not method and prose and prose.get("method"):  # a depth from a quoted flag, the method in words
        method = f"{prose.get('method')}, from the text"
    if not k and not method and re.search(r"vllm/v1/spec_decode/|/spec_decode/|\bpropose\b|\bproposer\b|draft_model|"
                                          r"_draft\w*|eagle|mtp", frames_text):
        method = "seen in the frames"
    if not k and not method:
        branch = spec_branch_frame(facts)
        if branch:
            method = f"its branch ran: {branch}"
    if k:
        why.append(f"speculative decoding ({method or 'draft'}, k={k})")
    elif method:
        why.append(f"speculative decoding ({method})")
        k = -1  # on, depth unknown
    pc = truthy(a.get("enable_prefix_caching"))
    if pc is None and isinstance(facts.startup.get("prefix_caching_prose"), bool):
        pc = facts.startup["prefix_caching_prose"]
    mode = a.get("mamba_cache_mode") or facts.startup.get("mamba_cache_mode")
    if mode in ("align", "all") or facts.startup.get("hits_without_spec_prose"):
        # (align / all cache Mamba states for prefix caching; a run that hits once the drafts are off has it on)
        pc = True if pc is None else pc
    if pc:
        why.append("prefix caching on" + (f" (Mamba cache mode '{mode}')" if mode else ""))
    asy = truthy(a.get("async_scheduling"))
    mixed = facts.startup.get("mixed_prose") if isinstance(facts.startup.get("mixed_prose"), str) else None
    if mixed is None:
        mixed = _printed_mixed(facts.startup.get("printed_values"))
    if mixed is None and isinstance(facts.startup.get("acceptance_by_prefill"), str):
        mixed = facts.startup["acceptance_by_prefill"]  # (the metrics lines: drafts lost only while prompts prefill)
    near = facts.startup.get("near_limit_prose")
    if mixed is None and k and isinstance(near, str) and not pc:
        # the scheduler drafts fewer tokens for a request near max_model_len than for the others: ragged drafts (with
        # prefix caching's align/all modes the same request's state-index window runs past its block-table row instead)
        mixed = f"requests {near} get fewer drafts than the rest of the batch"
    conn, role = _kv_transfer(facts)
    return Setup(hybrid=hybrid, mla=mla, spec_k=k, spec_method=method, prefix_caching=pc, mamba_cache_mode=mode,
                 async_scheduling=asy, batch=batch, why=why, mixed_evidence=mixed, kv_connector=conn, kv_role=role,
                 prefix_caching_needed=facts.startup.get("prefix_caching_needed") if pc else None)


def _printed_mixed(printed: Any) -> str | None:
    """Values the reporter printed for the failing step (a debug print in a builder) that show a mixed batch: the
    hybrid builders' counters with spec decodes next to prefills or plain decodes, or a state-index tensor holding
    a negative slot (PAD_SLOT_ID = -1: a row of the batch with no state of its own on the spec-decode path)."""
    if not isinstance(printed, dict):
        return None
    spec = printed.get("num_spec_decodes")
    others = [printed.get(k) for k in ("num_prefills", "num_decodes")]
    if isinstance(spec, int) and spec > 0 and any(isinstance(o, int) and o > 0 for o in others):
        return (f"printed counters: num_spec_decodes={spec}, "
                + ", ".join(f"{k}={printed.get(k)}" for k in ("num_prefills", "num_decodes") if printed.get(k) is not None))
    for name, val in printed.items():
        # (block_idx_*: the column of a request's state in the state indices, prefix caching's mode 'all')
        if not re.search(r"state_\w*ind|state_idx|cache_indices|slot_ids?(?:_min)?$|^block_idx_", str(name)):
            continue
        if isinstance(val, list) and any(isinstance(x, int) and x < 0 for x in val):
            return f"printed {name} holds {min(val)} (a row without a state slot)"
        if isinstance(val, int) and not isinstance(val, bool) and val < 0:
            return f"printed {name} = {val} (a row without a state slot)"  # "spec_state_indices_tensor.min()=-1"
    for name, val in printed.items():
        # the drafts each request kept, printed for the failing step: different lengths in one step are ragged drafts
        if re.search(r"draft_tokens|num_drafts|draft_len", str(name)) and isinstance(val, list) and len(val) > 1 \
                and len({x for x in val if isinstance(x, int)}) > 1:
            return f"printed {name} = {val} (ragged draft lengths in one step)"
    return None


# a statement that runs only on the speculative-decoding path of a builder / runner: it computes with the
# spec-decode rows, their masks, query starts, state indices or accepted counts (vLLM's GDN / Mamba / attention
# builders, e.g. gdn_attn.py `spec_sequence_masks = async_tensor_h2d(...)` under `num_spec_decodes > 0`); an
# assignment of None / 0 or a None test runs on every path and says nothing
_SPEC_NAMES = re.compile(r"\b(?:spec_(?:sequence_masks|query_start_loc|state_indices|token_indx|token_masks)\w*|"
                         r"num_spec_decode\w*|num_accepted_tokens\w*|num_draft_tokens\w*|draft_token_ids\w*)\b")
_EVERY_PATH = re.compile(r"=\s*(?:None|0|False|\[\]|\{\})\s*$|\bis (?:not )?None\b|speculative_config\b|^\s*(?:el)?if\b|"
                         r"^\s*(?:return|assert)\b|_make_buffer|torch\.(?:empty|zeros|ones|full)\b|"
                         r"np\.(?:empty|zeros|ones|full)\b")


def spec_branch_frame(facts: LogFacts) -> str | None:
    """``file:function: code`` of a vLLM frame whose statement runs on the speculative-decoding path only."""
    for e in facts.exceptions:
        for fr in reversed(e.frames[-12:]):
            code = (fr.code or "").strip()
            if code and "vllm/" in fr.file and fr.function.rsplit(".", 1)[-1] != "__init__" \
                    and _SPEC_NAMES.search(code) and not _EVERY_PATH.search(code):
                return f"{fr.file.rsplit('/', 1)[-1]}:{fr.function}: {code[:80]}"
    return None


def _kv_transfer(facts: LogFacts) -> tuple[str | None, str | None]:
    """The KV connector and its role: the collector's reading of the lines, else a parsed config's dict."""
    conn, role = facts.startup.get("kv_connector"), facts.startup.get("kv_role")
    cfg = facts.args.get("kv_transfer_config")
    if isinstance(cfg, dict):
        conn = conn or (str(cfg["kv_connector"]) if cfg.get("kv_connector") else None)
        role = role or (str(cfg["kv_role"]) if cfg.get("kv_role") else None)
    return (conn if isinstance(conn, str) else None), (role if isinstance(role, str) else None)


# the facts the reporter's A/B tests leave (abtests.ABTestReader): the evidence of a reading they decide
AB_TEST_FACTS = ("faults_without_spec_prose", "persists_without_pc_prose", "other_fix_prose", "one_host_prose",
                 "other_engine_prose", "no_spec_prose")


def ab_tests_clear_families(facts: LogFacts, setup: Setup, *, no_drafts_counts: bool = True) -> str | None:
    """What in the reporter's A/B tests clears a failure of the hybrid/spec-decode classes: it persists with the drafts
    off, and with prefix caching off too, or a toggle outside those classes ends it, or it stays on one host (a model
    without Mamba/GDN layers has no class left once the drafts are out). ``None`` when the tests do not.
    ``no_drafts_counts``: a run with no drafts at all counts as the drafts-off test (for a fault; a quiet report's own
    readings of a setting say more than a toggle beside it)."""
    said = facts.startup
    if said.get("prefix_caching_needed") and setup.hybrid is not False:
        return None  # (the report's own trial ended it with prefix caching off: a hybrid's cached states are in it)
    fix_line = str((facts.lines.get("other_fix_prose") or (0, ""))[1])
    if said.get("other_fix_prose") and (kept := _FAMILY_KEPT.search(fix_line)):
        # a change outside the classes ended it while the drafts / the cache stayed as they were: their paths ran
        # the same and the symptom went
        return f"a change outside them ended it with the rest kept ('{said['other_fix_prose']}'; '{kept.group(0)}')"
    if said.get("other_engine_prose"):
        # the same failure without vLLM at all (transformers, another engine): no vLLM path is its cause
        return f"it reproduces without vLLM ('{said['other_engine_prose']}')"
    without_spec = said.get("faults_without_spec_prose")
    if without_spec:
        without_spec = f"it persists without speculative decoding ('{without_spec}')"
    elif no_drafts_counts and setup.spec_k == 0 and (said.get("no_spec_prose") or config_known(facts)):
        # no drafts in the run at all (the whole configuration shows none, or the report says so): the spec-decode
        # classes are out from the start
        without_spec = ("the run has no speculative decoding" +
                        (f" ('{said['no_spec_prose']}')" if said.get("no_spec_prose") else " (its configuration has none)"))
    others = [f"'{said[k]}'" for k in ("persists_without_pc_prose", "other_fix_prose", "one_host_prose") if said.get(k)
              and not (k == "other_fix_prose" and _turns_hma_back_on(str(said[k]), facts, setup))]
    if not without_spec or not (others or setup.hybrid is False):
        return None
    return "; ".join([without_spec, *others])


# the report keeping the families' settings as they were beside a fix: "same flags, MTP still on", "suffix decoding
# back on"
_FAMILY_KEPT = re.compile(r"\bsame flags\b|\b(?:MTP|EAGLE\w*|spec(?:ulative)?(?:[ -]decod\w*)?|drafts?|ngram|suffix decoding|"
                          r"prefix caching|APC)\s+(?:still|back|kept)\s+(?:on|enabled)\b", re.I)
# what vLLM turns the hybrid KV cache manager off for: a KV connector (LMCache, NIXL, Mooncake, offloading), KV events,
# or the flag itself
_HMA_OFF_CAUSES = re.compile(r"connector|kv[-_ ]?transfer|lmcache|nixl|mooncake|offload\w*|kv[-_ ]events|"
                             r"hybrid[-_ ]kv[-_ ]cache[-_ ]manager", re.I)


def _turns_hma_back_on(fix: str, facts: LogFacts, setup: Setup) -> bool:
    """The reporter's fix removes what made vLLM run this hybrid without its hybrid KV cache manager ("without the
    connector -> OK"): the fix confirms the page-unification class instead of clearing it."""
    return bool(setup.hybrid and facts.startup.get("hybrid_kv_cache_manager_disabled") and _HMA_OFF_CAUSES.search(fix))


def config_known(facts: LogFacts) -> bool:
    """The log states the whole configuration: vLLM's own config line, its non-default args, or a command
    pasted whole (an excerpt that cuts the command proves nothing by what it lacks)."""
    if facts.lines.get("engine_config") or facts.lines.get("non_default_args"):
        return True
    return bool(facts.command) and facts.startup.get("command_complete") is True


_SPEC_COMPONENT = re.compile(r"spec_?decod|specdecod|speculat|draft|eagle|\bmtp|_mtp|proposer", re.I)


# a Mamba builder counting the step's requests against the state indices' rows (mamba_attn.py update_block_table:
# "Mismatch in number of requests when updating block table. Expected X, got Y")
REQUEST_COUNT_CHECK = re.compile(r"num_prefills\s*\+\s*[\w.]*num_decodes\s*==\s*[\w.]*state_ind\w*\.shape\[0\]")


def precondition_fails(cat: str, setup: Setup, facts: LogFacts, site=None) -> str | None:
    """A family needs its setting: speculative decoding for the kernel-limit and mixed-batch classes (and for
    any check of the speculative-decoding path), a hybrid model for the Mamba classes. When the log states a
    configuration without it, say so."""
    if not config_known(facts):
        return None
    if cat == "token_budget" and site is not None and getattr(site, "rule", "") == "block_size_vs_token_budget":
        # the KV block against the step's token budget: the block a hybrid raised to hold a Mamba state (Mamba
        # 'align' mode), whatever the drafts
        return "the model is not a hybrid (Mamba/GDN) model" if setup.hybrid is False else None
    if cat in ("spec_kernel_limit", "mixed_batch", "token_budget") and setup.spec_k == 0 and not (
            cat == "mixed_batch" and setup.hybrid and (facts.startup.get("last_chunk_tokens") == 1 or (
                site is not None and REQUEST_COUNT_CHECK.search(getattr(site, "condition", "") or "")))):
        # (a hybrid's one-token last prefill chunk beside plain decodes mixes kinds of rows without any draft; so does
        # a builder counting the step's requests against rows padded for a CUDA graph or a data-parallel peer)
        return "the log's configuration has no speculative decoding"
    if cat != "other" and site is not None and setup.spec_k == 0 and \
            _SPEC_COMPONENT.search(f"{site.function} {site.file.rsplit('/', 1)[-1]}"):
        return f"the check belongs to the speculative-decoding path ({site.function}) and the log's configuration has none"
    if cat in ("state_index", "mamba_block_budget", "mixed_batch") and setup.hybrid is False:
        return "the model is not a hybrid (Mamba/GDN) model"
    return None

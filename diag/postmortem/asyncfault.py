"""Asynchronous faults (illegal memory access, launch failures, device-side asserts): the frame that
reports one is not the kernel that faulted, so the class comes from the configuration (``low``)."""

from __future__ import annotations

import re

from ..model import Evidence, LogException, LogFacts
from .configuration import Setup, truthy
from .diagnosis import Diagnosis, describe_batch, exc_evidence, fact_evidence, log_version, title_of
from .shapes import capture_sizes
from .specpath import model_names, no_spec_path

# (not PyTorch's boilerplate after any CUDA/HIP error: "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.")
ASYNC = re.compile(r"illegal memory access|illegal address|device-side assert(?!ions)|unspecified launch failure|misaligned address|"
                   r"illegal instruction|an illegal address|CUDA error: (?:an )?illegal|hipErrorIllegalAddress|"
                   r"Xid\s*(?:\(PCI:[^)]*\)\s*:?\s*)?(?:13|31|43)\b|CUBLAS_STATUS_EXECUTION_FAILED|cudaErrorIllegalAddress|"
                   r"CUDA_ERROR_ILLEGAL_ADDRESS|memory access fault|Invalid __(?:global|shared|local)__ (?:read|write)|"
                   r"(?:Warp|Lane|Device) (?:Illegal|Out-of-range|Misaligned) Address|CUDA_EXCEPTION_\d+|"
                   r"cudaErrorLaunchFailure|hipErrorLaunchFailure|"
                   # cudaErrorInvalidAddressSpace: a load/store on the wrong address space, also reported later
                   r"operation not supported on global/shared address space|cudaErrorInvalidAddressSpace|"
                   # ROCm's HSA runtime: a queue aborted on a GPU memory violation / exception
                   r"HSA_STATUS_ERROR_(?:MEMORY_APERTURE_VIOLATION|MEMORY_FAULT|EXCEPTION|ILLEGAL_INSTRUCTION)", re.I)


def from_async(facts: LogFacts, root: LogException, setup: Setup, base_numbers: dict,
                batch_ev: list[Evidence]) -> Diagnosis:
    m = ASYNC.search(f"{root.exc_type}: {root.message}")
    # (ROCm's HSA report: the agent handle and the address say nothing about the class)
    first = re.sub(r"\s*\(Agent handle: [^)]*\)|\s+on address 0x[0-9a-fA-F]+\.?", "",
                   (root.message.strip().splitlines() or [""])[0])
    first = re.sub(r"(Reason: [^.]*)\..*", r"\1", first)  # one report (the next GPU's report joined to it)
    hsa = re.search(r"HSA_STATUS_ERROR_\w+(?:: [^.]*)?", first)  # ':0:rocdevice.cpp :N: ... Callback: Queue ... : HSA_...'
    first = hsa.group(0) if hsa else first
    fault = first[:120] if m else "asynchronous CUDA fault"
    fault = fault.split(" Search for", 1)[0].rstrip(".") or "asynchronous CUDA fault"
    if not m:  # the root error (an NCCL call, a later sync) does not name the fault; another error line may
        hit = next((str(t) for _, t in (facts.startup.get("error_lines") or []) if ASYNC.search(str(t))), None)
        name = re.search(r"illegal memory access|device-side assert|unspecified launch failure|misaligned address|"
                         r"illegal instruction|illegal address|memory access fault|memory aperture violation|"
                         r"HSA_STATUS_ERROR_\w+", hit or "", re.I)
        fault = (f"the {name.group(0)} another error line reports" if name else
                 "the device fault another error line reports" if hit else "an asynchronous CUDA fault")
    last = root.last_frame
    surfaced = f"{last.file.rsplit('/', 1)[-1]}:{last.function}" if last else "a later synchronisation"
    batch = setup.batch or {}
    nums = {**base_numbers, **facts.numbers}
    ev = exc_evidence(root, 2) + batch_ev + fact_evidence(facts, "command", "non_default_args", "engine_config")
    blocking = facts.blocking_launches()
    common = (f"{fault} with synchronous launches (CUDA_LAUNCH_BLOCKING=1): {surfaced} launched the kernel that faulted"
              if blocking else
              f"{fault} is reported asynchronously: it surfaced at {surfaced}, which is not the kernel that faulted "
              f"(the process may even exit 0)")
    # the model unnamed, but the fault surfaced in a dense attention backend's decode (FlashInfer / TRTLLM / XQA):
    # the uneven decode counters speak for that kernel, not for a hybrid's state
    dense_decode = setup.hybrid is None and any(_DENSE_DECODE.search(f.file or "") for f in root.frames)
    drafter = drafter_frame(root, setup)
    nsp = no_spec_path(model_names(facts), facts.vllm_version, [f.file for f in root.frames[-3:]]) if setup.spec_k else None
    # synchronous launches put the fault in the worker's copy of the Mamba/GDN states between blocks (align mode's
    # state copy after a step): the state indices and block ids it copies by, whatever the layers' own kernels
    align_copy = blocking and last is not None and setup.hybrid is not False \
        and re.search(r"(?:^|/)worker/mamba_utils\.py$", (last.file or "").replace("\\", "/")) is not None
    if align_copy:
        cat = "state_index"
        basis = (f"{common}; the kernel is the worker's copy of the Mamba/GDN states between blocks "
                 f"({last.function}, align mode's state copy after a step)"
                 + (f" with {', '.join(setup.why)}" if setup.why else "")
                 + ": the copy runs by the step's state indices and block ids, and one points outside the states")
        title = f"{title_of(cat)} (fault launched in the Mamba state copy: {fault})"
    elif nsp is not None:
        # (first: on a model whose layers never take drafts, a fault in the drafter is still that layer's -- vLLM
        # 0.26.0 Jamba + a dense draft faulted in the drafter and in the decode graph alike)
        # a recurrent layer with no spec-decode path in this release: the builder's spec-decode rows reach a layer
        # whose decode takes one token a request
        cat = "mixed_batch"
        basis = (f"{common}; inferred from the configuration: {', '.join(setup.why) or 'speculative decoding'} -> the "
                 f"model's {nsp.layers} have no speculative-decoding path {nsp.since_text()}: the metadata builder "
                 f"hands them the spec-decode rows of the batch (1 + k tokens a request) that their decode never reads")
        title = f"Spec-decode batch on {nsp.layers}, which have no spec-decode path (inferred: {fault})"
    elif drafter is not None:
        # a separate (dense) draft model on a hybrid target: the drafter's attention reads KV-cache metadata built
        # for the target's groups (vLLM 0.26 hands a draft_model proposer the first group's -- on NemotronH the Mamba
        # group's 1 + k-block table -- and its slot mapping indexes past it): the draft vs hybrid KV layout
        cat = "kv_page_size"
        basis = (f"{common}; it {'was launched' if blocking else 'surfaced'} in the "
                 f"drafter ({drafter.file.rsplit('/', 1)[-1]}:{drafter.function}) of a separate draft model on a hybrid "
                 f"target ({', '.join(setup.why)}): the draft's attention runs on the hybrid's KV-cache groups, block "
                 "tables and pages, laid out for the target's Mamba/GDN and attention layers")
        title = f"Draft model vs the hybrid's KV-cache layout (inferred: {fault} in the draft model's proposer)"
    elif (pad := unrounded_spec_padding(facts, setup)) is not None:
        # vLLM before 0.12 did not round the capture sizes to multiples of 1 + k (issue #28207, fixed by
        # CompilationConfig.adjust_cudagraph_sizes_for_spec_decode): a uniform spec-decode step padded to a size that
        # is not replays a full decode graph whose rows split a request, over the hybrid's Mamba/GDN state
        tokens, padded, reqs = pad
        cat = "cudagraph_shape"
        basis = (f"{common}; the crash dump's step is {reqs} spec decodes of 1 + {setup.spec_k} tokens ({tokens} "
                 f"tokens), padded to the full decode CUDA graph of {padded} tokens, not a multiple of "
                 f"{setup.spec_k + 1}: vLLM {facts.vllm_version} does not round the capture sizes to multiples of "
                 f"1 + k (from 0.12.0 it does), so the graph replays rows that split a request over the hybrid's "
                 f"state ({', '.join(setup.why)})")
        title = f"{title_of(cat)} (inferred: {fault} in a spec-decode step padded from {tokens} to {padded} tokens)"
        nums.update({"num_scheduled_tokens": tokens, "padded_num_tokens": padded, "uniform_decode_query_len": setup.spec_k + 1})
    elif separate_draft(setup):
        # the same configuration, the fault surfacing at a later synchronisation (the rejection sampler's copy) instead
        # of in the drafter: on vLLM 0.26.0 NemotronH + a dense draft model (k = 3) faulted in every run at unified
        # blocks of 48 and 80 tokens, in the drafter or at the next sync (with blocks of 128 and 160 it ran)
        cat = "kv_page_size"
        basis = (f"{common}; inferred from the configuration: a separate draft model on a hybrid target "
                 f"({', '.join(setup.why)}): the draft's attention runs on the hybrid's KV-cache groups, block tables "
                 "and pages, laid out for the target's Mamba/GDN and attention layers")
        title = f"Draft model vs the hybrid's KV-cache layout (inferred: {fault} with a separate draft model on a hybrid)"
    elif blocking and setup.spec_k and not setup.hybrid and last is not None and _DENSE_DECODE.search(last.file or "") \
            and _DECODE_CALL.search(f"{last.function} {last.code or ''}"):
        # synchronous launches: the frame that launched the faulting kernel is an attention backend's decode call, run
        # with the 1 + k query tokens a request that the drafts add -- the attention kernel's limit under drafts
        cat = "spec_kernel_limit"
        basis = (f"{common}; the kernel is the attention backend's decode ({last.function}: "
                 f"{(last.code or '').strip().rstrip('(')[:60] or last.file.rsplit('/', 1)[-1]}) under speculative decoding "
                 f"({', '.join(setup.why) or 'drafts'}): each decode request carries 1 + k = {setup.spec_k + 1 if setup.spec_k > 0 else '1 + k'} "
                 "query tokens, past what the decode kernel's indexing (block-table rows, sequence lengths per request) "
                 "takes in this release")
        title = f"{title_of(cat)} (fault launched in the attention decode under drafts: {fault})"
        if setup.spec_k > 0:
            nums.setdefault("next_n", setup.spec_k + 1)
    elif setup.hybrid and setup.spec_k or setup.spec_k and setup.hybrid is None and setup.mla is None and not (
            dense_decode and uneven_decode(facts)):
        cat, why = hybrid_spec_fault_class(setup, facts.startup.get("structured_outputs_prose"))
        if setup.hybrid:
            basis = f"{common}; inferred from the configuration: {', '.join(setup.why)} -> {why}"
            title = f"{title_of(cat)} (inferred: {fault} with a hybrid model and speculative decoding)"
        else:
            # the model is not named: with speculative decoding, vLLM's asynchronous faults come from the
            # Mamba/GDN state indices and batches the drafts index (the hybrid MTP models) far more than from
            # anything else
            basis = (f"{common}; the log does not name the model; with {', '.join(setup.why)} the likely class is "
                     f"{why} of a hybrid MTP model (a dense model would rule it out; an MLA model would point at the "
                     f"attention kernels instead)")
            title = f"{title_of(cat)} (inferred: {fault} with speculative decoding, model unknown)"
    elif setup.mla and setup.spec_k:
        cat = "spec_kernel_limit"
        basis = f"{common}; inferred from the configuration: {', '.join(setup.why)} -> MLA / indexer kernels with multi-token decode"
        title = f"{title_of(cat)} (inferred: {fault} with MLA and speculative decoding)"
        if setup.spec_k > 0:
            nums.setdefault("next_n", setup.spec_k + 1)
    elif setup.hybrid and setup.spec_k == 0 and facts.startup.get("last_chunk_tokens") == 1:
        # no drafts, but a prompt's one-token last prefill chunk beside plain decodes: a step of one-token rows is
        # replayed as a decode CUDA graph while the Mamba/GDN builder counts the chunk as a prefill, so the graph's
        # decode state indices are stale -- the builder's split of a mixed step (the silent form of the same is read
        # in silent.silent_corruption)
        cat = "mixed_batch"
        basis = (f"{common}; the report ties it to a prompt's one-token last prefill chunk among plain decodes "
                 f"({', '.join(setup.why)}): a step of one-token rows replays the decode CUDA graph while the Mamba/GDN "
                 f"builder counts the chunk as a prefill, leaving the graph's decode state indices stale -- the "
                 f"builder's split of a mixed step, no drafts needed")
        title = f"{title_of(cat)} (inferred: {fault} with a one-token last prefill chunk)"
        nums["last_chunk_tokens"] = 1
        ev = ev + fact_evidence(facts, "last_chunk_tokens")
    elif setup.hybrid and setup.spec_k == 0 and setup.prefix_cached_states:
        # prefix caching on a hybrid without drafts: the Mamba/GDN states are read and copied through the block
        # table (align mode copies the last block's state at every step; 'all' keeps one per block)
        cat = "state_index"
        basis = (f"{common}; inferred from the configuration: {', '.join(setup.why)} -> the Mamba/GDN state indices "
                 f"and block copies that prefix caching routes through the block table "
                 f"(mode '{setup.mamba_cache_mode or 'as configured'}')")
        title = f"{title_of(cat)} (inferred: {fault} with a hybrid model and prefix caching)"
    elif setup.spec_k and not setup.hybrid and uneven_decode(facts):
        # vLLM's spec-as-decode attention kernels need one query length per decode request (flashinfer.py: "TRTLLM
        # decode requires uniform query lengths per request"; where num_decode_tokens % num_decodes != 0 the
        # TRTLLM call falls back to q_len_per_req = 1 and reads num_decode_tokens requests' block tables): decodes of
        # different 1 + k lengths (fewer drafts near max_model_len / max_tokens) are past the kernel's limit
        cat = "spec_kernel_limit"
        basis = (f"{common}; {uneven_decode(facts)} under speculative decoding ({', '.join(setup.why)}): the decode "
                 f"kernels that take one query length per request (TRTLLM / FlashInfer decode, the MLA decode "
                 f"kernels) get a ragged multi-token decode")
        title = f"{title_of(cat)} (inferred: {fault} with uneven decode query lengths)"
        if setup.spec_k > 0:
            nums.setdefault("next_n", setup.spec_k + 1)
    else:
        cat = "other"
        basis = (f"{common}; the configuration ({', '.join(setup.why) or 'nothing known'}) does not point at a "
                 f"hybrid/spec-decode failure class")
        title = f"Asynchronous CUDA fault: {fault}"
    # the drafter launched it (synchronous launches): the place is known, the mechanism still inferred
    conf = "medium" if drafter is not None and blocking else "low"
    d = Diagnosis(category=cat, confidence=conf, basis=basis, title=title,
                  message=f"{common}." + (f" Batch at the crash: {describe_batch(batch)}." if batch else ""),
                  numbers=nums, evidence=ev, rule="async_fault")
    layers = _SPEC_LAYERS_NOT_MODELLED.get(facts.architecture or "")
    if layers and setup.spec_k and cat != "other":
        # the class above is the configuration's prior, not a mechanism
        d.basis += f"; not modelled: how {layers} run speculative decoding (vllm-diag models the GDN and Mamba2 paths)"
        d.missing.append(f"not modelled: the speculative-decoding path of {layers}; a run without drafts (or with "
                         "--enforce-eager) tells whether the drafts are the trigger")
    if not blocking:
        d.missing.append("rerun with CUDA_LAUNCH_BLOCKING=1 (and --enforce-eager) so the faulting kernel is the frame "
                         "shown; with the vllm-diag probes on (VLLM_DIAG_DB=run.db) each step's batch is recorded")
    return d


# hybrids whose recurrent layers are neither GDN/Mamba2 nor in specpath's table: their spec-decode path is not modelled
_SPEC_LAYERS_NOT_MODELLED = {
    "MiniMaxText01ForCausalLM": "MiniMax's lightning-attention layers",
    "MiniMaxM1ForCausalLM": "MiniMax's lightning-attention layers",
}

# an attention backend's decode call or its kernel ("trtllm_batch_decode_with_kv_cache(", "forward_decode",
# "flash_attn_with_kvcache(")
_DECODE_CALL = re.compile(r"decode|with_kvcache|xqa|paged_attention", re.I)
_DENSE_DECODE = re.compile(r"attention/backends/(?!gdn|mamba|linear|short_conv)\w+\.py|flashinfer/|trtllm|xqa", re.I)


def unrounded_spec_padding(facts: LogFacts, setup: Setup) -> tuple[int, int, int] | None:
    """A hybrid's uniform spec-decode step (every request 1 + k tokens, from the crash dump) that full decode CUDA
    graphs pad to a capture size that is not a multiple of 1 + k, in a release that does not round the sizes (before
    0.12.0): (tokens, padded size, requests)."""
    v = log_version(facts)
    batch = setup.batch or {}
    k, reqs = setup.spec_k, batch.get("num_reqs") or 0
    if not (setup.hybrid and k > 0 and v and v < (0, 12, 0) and reqs and batch.get("num_spec_decodes") == reqs):
        return None
    a = facts.args
    mode = str(a.get("cudagraph_mode") or "")
    if truthy(a.get("enforce_eager")) or mode.upper().endswith(("NONE", "PIECEWISE")) and "FULL" not in mode.upper():
        return None
    tokens = batch.get("total_num_scheduled_tokens")
    if tokens != reqs * (1 + k) or any(t != 1 + k for t in batch.get("tokens_per_req") or []):
        return None
    top = int(a.get("max_cudagraph_capture_size") or 512)
    padded = next((s for s in sorted(capture_sizes(facts)) if tokens <= s <= top), None)
    if padded is None or padded == tokens or padded % (1 + k) == 0:
        return None
    return tokens, padded, reqs


def uneven_decode(facts: LogFacts) -> str | None:
    """The decode counters the report printed for the failing step when its decode tokens do not split evenly over
    its decode requests (num_decode_tokens % num_decodes != 0: decodes of different query lengths)."""
    batch = facts.startup.get("crash_batch")
    if isinstance(batch, dict) and batch.get("ragged_drafts") and batch.get("num_spec_decodes") and (
            facts.startup.get("trtllm_attention")
            or str(facts.startup.get("attention_backend_selected") or "") in _UNIFORM_QUERY_BACKENDS):
        # the crash dump's spec decodes carry different numbers of drafts, on a backend whose decode takes one query
        # length per request
        lens = sorted({n + 1 for n in batch.get("spec_tokens_per_req") or [] if n > 0})
        backend = "TRTLLM" if facts.startup.get("trtllm_attention") else facts.startup["attention_backend_selected"]
        return (f"the crash dump's spec decodes carry different query lengths ({', '.join(map(str, lens))} tokens) on "
                f"the {backend} decode, which takes one query length per request")
    printed = facts.startup.get("printed_values")
    if not isinstance(printed, dict):
        return None
    tokens, reqs = printed.get("num_decode_tokens"), printed.get("num_decodes")
    if isinstance(tokens, int) and isinstance(reqs, int) and not isinstance(tokens, bool) and not isinstance(reqs, bool) \
            and tokens > 0 and reqs > 0 and tokens % reqs:
        return f"the printed decode counters num_decode_tokens={tokens}, num_decodes={reqs} do not divide evenly"
    return None


# attention backends whose decode kernel takes one query length per request (spec decodes as uniform 1 + k rows)
_UNIFORM_QUERY_BACKENDS = ("FLASHMLA", "FLASHMLA_SPARSE", "FLASHINFER_MLA", "TRTLLM", "TRTLLM_MLA")

_DRAFTER = re.compile(r"v1/spec_decode/(?:\w*proposer|draft_model|utils)\.py$")


def separate_draft(setup: Setup) -> bool:
    """A separate draft model (``draft_model``, not an MTP / EAGLE head of the target) runs on a hybrid target."""
    return bool(setup.hybrid and re.search(r"draft_model", str(setup.spec_method or "")))


def drafter_frame(root: LogException, setup: Setup):
    """The innermost frame of vLLM's spec-decode proposer in the fault's traceback, when a separate draft model
    (``draft_model``) runs on a hybrid target; None otherwise."""
    if not separate_draft(setup):
        return None
    # vLLM's own source (not the compile cache under ~/.cache/vllm, whose generated files add frames of their own)
    vllm = [f for f in root.frames if "vllm/" in (f.file or "") and "/.cache/" not in f.file][-12:]
    return next((f for f in reversed(vllm) if _DRAFTER.search(f.file.replace("\\", "/"))), None)


def hybrid_spec_fault_class(setup: Setup, structured: str | None = None) -> tuple[str, str]:
    """An asynchronous fault of a hybrid model under speculative decoding: which of the two classes the
    evidence points at (a prior, ``low``): the batch composition (mixed decode / spec-decode rows, ragged or
    zero accepted drafts) or the state indices through the block table (prefix caching's align/all modes)."""
    batch = setup.batch or {}
    starts = batch.get("cached_start_tokens")
    if starts and setup.prefix_cached_states:
        # a request of the failing step (re)starts from cached blocks -- a prefix-cache hit of a new request, a request
        # resumed after preemption: its Mamba/GDN state is restored from the cached block and read through the state
        # indices / block table (align mode's running block plus the speculative blocks), whatever else the batch mixes
        return "state_index", (f"the crash dump shows a request starting from cached blocks at {starts[0]} computed "
                               f"tokens (a prefix-cache hit or a resumed request): its state is restored through the "
                               f"block table's state indices under speculative decoding"
                               + ("; the batch also mixes spec decodes with other rows (the mixed-batch class fits "
                                  "it too)" if batch.get("mixed") else ""))
    if batch.get("num_resumed_reqs") and setup.spec_k:
        # a request of the failing step resumes after preemption: the scheduler hands it new blocks that replace its
        # block-table row (new_block_ids replace, not append, for resumed_req_ids), so its Mamba/GDN state slots and
        # spec-decode state indices are rebuilt in the middle of a spec-decode batch
        return "state_index", (f"the crash dump shows {batch['num_resumed_reqs']} request(s) resumed after preemption in "
                               "the failing step: their block-table rows are replaced, not extended, so their Mamba/GDN "
                               "state slots and spec-decode state indices are rebuilt mid-batch"
                               + ("; the batch also mixes spec decodes with other rows (the mixed-batch class fits "
                                  "it too)" if batch.get("mixed") else ""))
    if setup.prefix_cached_states and setup.prefix_caching_needed:
        # the report says the fault goes away without prefix caching: a builder's split of a mixed batch fails with
        # or without it, the states prefix caching restores and copies through the block table do not
        return "state_index", (f"the report says the fault needs prefix caching ('{setup.prefix_caching_needed}'): the "
                               "Mamba/GDN states it routes through the block table's state indices under speculative "
                               "decoding" + ("; the batch also mixes spec decodes with other rows, a split that fails "
                                             "without prefix caching too" if batch.get("mixed") or setup.mixed_evidence
                                             else ""))
    if batch.get("mixed") or batch.get("ragged_drafts"):
        if batch.get("mixed") and batch.get("short_prefills") and not batch.get("num_decodes"):
            return "mixed_batch", ("the crash dump shows a prefill of at most 1 + k tokens beside spec decodes: the "
                                   "builders split decodes from prefills by query length, so it is run as a spec decode")
        return "mixed_batch", "the crash dump shows " + ("a mixed batch" if batch.get("mixed") else "ragged draft lengths")
    if setup.mixed_evidence:
        return "mixed_batch", f"the log speaks of mixed batches ({setup.mixed_evidence})"
    # the other class the same configuration allows: a row of a spec-decode batch with no accepted draft reads
    # its state at num_accepted - 1 = -1 (vLLM's GDN spec-decode kernels index the state with the accepted count)
    alt = ("; the mixed-batch class (a row with no accepted draft reading its state at num_accepted - 1 = -1) fits "
           "the same evidence: the crash dump's batch or a run with CUDA_LAUNCH_BLOCKING=1 tells the two apart")
    if setup.prefix_cached_states:
        return "state_index", ("the Mamba/GDN state indices that prefix caching routes through the block table "
                               f"(mode '{setup.mamba_cache_mode or 'align'}') under speculative decoding" + alt)
    if structured and not batch.get("num_reqs"):
        # the grammar of a structured-output request rejects draft tokens, so the scheduler keeps fewer drafts for it
        # than for the requests beside it: one step carries ragged draft lengths (the crash dump would show them)
        return "mixed_batch", (f"structured outputs are in use ({structured}): the grammar cuts the drafts it rejects, "
                               "so the rows of one spec-decode step carry different draft lengths")
    if batch.get("num_reqs") and batch.get("num_spec_decodes"):
        # the crash dump's batch is of one kind (spec decodes with the same drafts, nothing mixed in): the drafter's
        # variable proposals did not make this step mixed
        return "state_index", ("the crash dump shows spec decodes only, every one with its drafts (no plain decode, "
                               "prefill or ragged draft beside them): the states they read through the state indices "
                               "under speculative decoding" + alt)
    if re.search(r"ngram|n-gram|suffix|prompt_lookup", str(setup.spec_method or ""), re.I):
        # n-gram / suffix drafters propose a variable number of tokens (none where no match is found): the GDN / Mamba
        # builders then split one batch into spec decodes and plain decodes (gdn_attn.py: spec_sequence_masks =
        # num_decode_draft_tokens >= 0), so every step under load mixes the two kinds of rows
        return "mixed_batch", (f"the {setup.spec_method} drafter proposes a variable number of tokens per request (none "
                               "where nothing matches), so its batches mix spec decodes with plain decodes; no prefix "
                               "caching routes states through the block table")
    return "state_index", ("Mamba/GDN state indices under speculative decoding (no evidence of mixed decode / "
                           "spec-decode batches: the crash dump or the report would show one)" + alt)

"""The diagnosis of a log: which failure class, how sure, and why.

Evidence, strongest first:

1. **a known vLLM failure site** (``vllm_diag.catalog``): the root error's message matches a site's
   template (its holes give the numbers), or its frame and ``assert`` line match a site's condition, or a
   kernel check's text matches a kernel site. The site's category is the diagnosis (``high`` when the
   numbers or the exact condition are there, ``medium`` otherwise); the basis names the site and the vLLM
   releases that carry it.
2. **the failure class from where vLLM failed**: no site matches (a fork, a newer release, a generic
   PyTorch error such as a shape mismatch or an index out of range), so the frames (innermost vLLM frame
   outward) and the message are classified by the same rules that classify the catalog's sites
   (``vllm_diag.catalog.categorize``); ``medium``.
3. **an asynchronous fault** (illegal memory access, device-side assert, launch failure): the frame that
   reports it is not the kernel that faulted, so the family comes from the configuration -- a hybrid
   (Mamba/GDN) model with speculative decoding (state indices; a mixed batch when the crash dump shows
   one), an MLA/sparse-indexer model with speculative decoding (kernel limits) -- ``low``; without such a
   configuration it stays ``other``.

Near misses (out of memory, missing weights or tokenizer, unsupported architecture, NCCL timeouts,
Triton on old GPUs, platform kernels missing) are ``other`` whatever the model is.

vLLM's crash dump (``Dumping input data … / Dumping scheduler output …``, :mod:`.dump`) adds the batch of
the failing step: a mixed decode + spec-decode batch or the draft length is shown from the dump itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..model import Evidence, Finding, LogException, LogFacts

ASYNC = re.compile(r"illegal memory access|illegal address|device-side assert|unspecified launch failure|misaligned address|"
                   r"illegal instruction|an illegal address|CUDA error: (?:an )?illegal|hipErrorIllegalAddress|"
                   r"Xid\s*(?:13|31|43)\b|CUBLAS_STATUS_EXECUTION_FAILED|cudaErrorIllegalAddress|"
                   r"CUDA_ERROR_ILLEGAL_ADDRESS|memory access fault|Invalid __(?:global|shared|local)__ (?:read|write)|"
                   r"(?:Warp|Lane|Device) (?:Illegal|Out-of-range|Misaligned) Address|CUDA_EXCEPTION_\d+|"
                   r"cudaErrorLaunchFailure|hipErrorLaunchFailure", re.I)

# near misses: errors whose cause is outside the hybrid / spec-decode families
NEAR_MISS: list[tuple[str, re.Pattern[str]]] = [
    ("out of memory", re.compile(r"out of memory|OutOfMemoryError|CUDA_ERROR_OUT_OF_MEMORY|hipErrorOutOfMemory|"
                                 r"No available memory for the cache blocks|KV cache is needed, which is larger than the "
                                 r"available KV cache memory|Insufficient memory|not enough memory", re.I)),
    ("missing or mismatched weights", re.compile(r"weights? (?:were |was )?not (?:initialized|found|loaded)|"
                                                 r"Following weights were not|KeyError: '[\w.]*(?:weight|bias|scale)'|"
                                                 r"size mismatch for|safetensors|checkpoint|Cannot find any of|"
                                                 r"does not appear to have a file named", re.I)),
    ("tokenizer", re.compile(r"tokenizer|chat template", re.I)),
    ("unsupported architecture", re.compile(r"architectures? .{0,40}(?:not supported|are not supported|has no vLLM implementation)|"
                                            r"Model architectures? \[|not supported for now|trust_remote_code", re.I)),
    ("distributed set-up (NCCL)", re.compile(r"NCCL|Watchdog caught|ProcessGroup|ncclInternalError|"
                                             r"collective operation timeout|Connection refused|RayActorError", re.I)),
    ("host synchronisation during CUDA-graph capture", re.compile(r"operation not permitted when stream is capturing|"
                                                                   r"cudaErrorStreamCaptureUnsupported|"
                                                                   r"stream is capturing", re.I)),
    ("Triton / GPU generation", re.compile(r"triton\.compiler|CompilationError|fp8e4nv not supported|"
                                           r"type fp8e4nv not supported|PTXASError|no kernel image is available|"
                                           r"Unsupported architecture|not supported on (?:this|your) GPU|"
                                           r"compute capability|sm_?\d{2,3}\b.{0,40}not supported", re.I)),
]

HYBRID_ARCH = re.compile(r"Qwen3Next|Qwen3_5|Qwen3p5|NemotronH|GraniteMoeHybrid|FalconH1|Jamba|Zamba|Bamba|Plamo2|"
                         r"Mamba|Lfm2|KimiLinear|MiniMaxText01|MiniMaxM1|OlmoHybrid|Hymba|Kimi(?:K3)|GptOssHybrid", re.I)
HYBRID_MODEL = re.compile(r"qwen3[-_.]?next|qwen3\.[5-9]|qwen3[-_]coder[-_]next|qwen3\.?[5-9][-_]|nemotron[-_]?h\b|"
                          r"nemotron[-_ ]?(?:3|nano[-_]?9b|nano[-_]?12b|super|ultra)|granite[-_]4|falcon[-_]?h1|jamba|zamba|"
                          r"bamba|mamba|lfm2|kimi[-_]linear|kimi[-_]k3|minimax[-_]?(?:m1|text)|plamo|hymba|apriel[-_]?h|"
                          r"(?:ling|ring)[-_](?:mini|flash|plus)?[-_]?(?:2\.\d[-_])?linear", re.I)
MLA_ARCH = re.compile(r"DeepseekV[23]|DeepseekV32|DeepseekV4|Deepseek|KimiK2|Glm.*Dsa|GlmMoeDsa|MiniMaxM3|Kimi", re.I)
MLA_MODEL = re.compile(r"deepseek|kimi[-_]k2|glm[-_]?5|dsv[34]|minimax[-_]m3|longcat", re.I)
HYBRID_WORDS = re.compile(r"\bGDN\b|gated ?deltanet|\bmamba\d?\b|linear[ -]attention", re.I)
MLA_WORDS = re.compile(r"\bMLA\b|\bDSA\b|sparse[ -]?MLA|indexer|DeepGEMM", re.I)
HYBRID_FRAMES = re.compile(r"mamba|gdn|linear_attn|short_conv|/fla/|causal_conv1d|ssd_|qwen3_next|qwen3_5|nemotron_h|"
                           r"kda|lightning", re.I)
MLA_FRAMES = re.compile(r"/mla/|mla_attention|flashmla|flash_mla|deep_gemm|indexer|sparse_attn|deepseek|aiter_mla|"
                        r"triton_mla|cutlass_mla|flashinfer_mla", re.I)


@dataclass
class Diagnosis:
    category: str
    confidence: str  # high | medium | low
    basis: str
    title: str
    message: str
    numbers: dict[str, Any] = field(default_factory=dict)
    evidence: list[Evidence] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    site_id: str | None = None
    rule: str = "failure_site"

    def finding(self) -> Finding:
        return Finding(rule=self.rule, category=self.category, title=self.title, severity="error",
                       message=self.message, numbers=dict(self.numbers), evidence=list(self.evidence),
                       missing_evidence=list(self.missing), confidence=self.confidence, basis=self.basis)


# ------------------------------------------------------------------------------------------------
# the configuration as the log states it
# ------------------------------------------------------------------------------------------------


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


def _truthy(v: Any) -> bool | None:
    if v is None:
        return None
    if isinstance(v, str):
        return v.strip().lower() in ("1", "true", "yes", "on")
    return bool(v)


def read_setup(facts: LogFacts, exc: LogException | None) -> Setup:
    a = facts.args
    why: list[str] = []
    arch = facts.architecture or a.get("architecture") or facts.startup.get("resolved_architecture") or ""
    model = str(a.get("model") or facts.model or "")
    frames_text = " ".join(f"{f.file} {f.function}" for e in facts.exceptions for f in e.frames[-12:])
    # a model named only in prose (a test id, an error line, a repo id quoted in the text)
    terms = " ".join(facts.startup.get("prose_terms") or [])
    prose = " ".join([t for _, t in (facts.startup.get("error_lines") or [])][-20:]
                     + list(facts.startup.get("repo_mentions") or []) + [terms])
    if not model and not arch:
        m = HYBRID_MODEL.search(prose) or MLA_MODEL.search(prose)
        if m:
            model = m.group(0)
    hybrid = None
    if arch and HYBRID_ARCH.search(arch) or HYBRID_MODEL.search(model):
        hybrid = True
        why.append(f"hybrid model ({arch or model})")
    elif not arch and not a.get("model") and not facts.model and HYBRID_WORDS.search(terms):
        hybrid = True
        why.append(f"hybrid model (the text speaks of {HYBRID_WORDS.search(terms).group(0)} layers)")
    elif any(k in facts.startup for k in ("mamba_cache_mode", "mamba_padding_percent", "attention_block_size")):
        hybrid = True
        why.append("hybrid model (Mamba page alignment in the startup lines)")
    elif HYBRID_FRAMES.search(frames_text):
        hybrid = True
        why.append("hybrid model (Mamba/GDN frames)")
    elif arch or model:
        hybrid = False
    mla = None
    if arch and MLA_ARCH.search(arch) or MLA_MODEL.search(model) or MLA_FRAMES.search(frames_text):
        mla = True
        why.append(f"MLA / sparse-indexer model ({arch or model or 'frames'})")
    elif not arch and not a.get("model") and not facts.model and MLA_WORDS.search(terms) and not hybrid:
        mla = True
        why.append(f"MLA / sparse-indexer model (the text speaks of {MLA_WORDS.search(terms).group(0)})")
    elif arch or model:
        mla = False
    k = a.get("num_speculative_tokens")
    spec = a.get("speculative_config")
    if k is None and isinstance(spec, dict):
        k = spec.get("num_speculative_tokens")
    method = a.get("speculative_method") or (spec.get("method") if isinstance(spec, dict) else None)
    try:
        k = int(k or 0)
    except (TypeError, ValueError):
        k = 0
    batch = facts.startup.get("crash_batch")
    if not k and batch and batch.get("spec_tokens_per_req"):
        k = max(batch["spec_tokens_per_req"])
    if not k and batch and batch.get("num_spec_tokens_to_schedule"):
        k = int(batch["num_spec_tokens_to_schedule"])
    prose = facts.startup.get("spec_prose") if isinstance(facts.startup.get("spec_prose"), dict) else None
    if not k and not method and prose:  # the reporter's words: "with MTP", "EAGLE3, 4 speculative tokens"
        method = f"{prose.get('method')}, from the text"
        if isinstance(prose.get("k"), int) and prose["k"] > 0:
            k = prose["k"]
    if not k and not method and re.search(r"vllm/v1/spec_decode/|/spec_decode/|\bpropose\b|\bproposer\b|draft_model|"
                                          r"_draft\w*|eagle|mtp", frames_text):
        method = "seen in the frames"
    if k:
        why.append(f"speculative decoding ({method or 'draft'}, k={k})")
    elif method:
        why.append(f"speculative decoding ({method})")
        k = -1  # on, depth unknown
    pc = _truthy(a.get("enable_prefix_caching"))
    if pc is None and isinstance(facts.startup.get("prefix_caching_prose"), bool):
        pc = facts.startup["prefix_caching_prose"]
    mode = a.get("mamba_cache_mode") or facts.startup.get("mamba_cache_mode")
    if mode in ("align", "all"):
        pc = True if pc is None else pc
    if pc:
        why.append("prefix caching on" + (f" (Mamba cache mode '{mode}')" if mode else ""))
    asy = _truthy(a.get("async_scheduling"))
    mixed = facts.startup.get("mixed_prose") if isinstance(facts.startup.get("mixed_prose"), str) else None
    return Setup(hybrid=hybrid, mla=mla, spec_k=k, spec_method=method, prefix_caching=pc, mamba_cache_mode=mode,
                 async_scheduling=asy, batch=batch, why=why, mixed_evidence=mixed)


# ------------------------------------------------------------------------------------------------


def _ev_exc(exc: LogException, frames: int = 2) -> list[Evidence]:
    first = exc.message.strip().splitlines()[0] if exc.message.strip() else ""
    ev = []
    if exc.exc_type and not exc.exc_type.startswith("("):
        ev.append(Evidence(text=f"{exc.exc_type}: {first}".rstrip(": ")[:500], line=exc.log_line, source="log"))
    for fr in exc.frames[-frames:]:
        ev.append(Evidence(text=f'File "{fr.file}", line {fr.line}, in {fr.function}' + (f": {fr.code}" if fr.code else ""),
                           line=fr.log_line, source="log"))
    return ev


def _fact_ev(facts: LogFacts, *names: str) -> list[Evidence]:
    out = []
    for n in names:
        if n in facts.lines:
            line, text = facts.lines[n]
            out.append(Evidence(text=text[:500], line=line, source="log"))
    return out


def _config_numbers(facts: LogFacts, setup: Setup) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in ("num_speculative_tokens", "max_num_seqs", "max_model_len", "max_num_batched_tokens", "block_size",
              "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "decode_context_parallel_size",
              "prefill_context_parallel_size", "gpu_memory_utilization", "max_cudagraph_capture_size",
              "mamba_block_size"):
        v = facts.args.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[k] = v
    if setup.spec_k > 0:
        out.setdefault("num_speculative_tokens", setup.spec_k)
    return out


def _frame_lines(facts: LogFacts) -> dict[str, int]:
    """file:function -> line of the innermost frames printed (root, or frames without an exception line):
    the line numbers tell the release apart and point at the failing statement."""
    out: dict[str, int] = {}
    excs = ([facts.root] if facts.root is not None else []) + [e for e in facts.exceptions if e.exc_type.startswith("(")]
    for e in excs:
        for fr in e.frames[-6:]:
            if fr.line:
                out.setdefault(f"{fr.file.rsplit('/', 1)[-1]}:{fr.function}", fr.line)
    return dict(list(out.items())[-12:])


def _batch_numbers(batch: dict[str, Any] | None) -> dict[str, Any]:
    if not batch:
        return {}
    keys = ("num_reqs", "num_prefills", "num_decodes", "num_spec_decodes", "tokens_per_req", "spec_tokens_per_req",
            "total_num_scheduled_tokens", "num_computed_tokens")
    return {f"crash_batch_{k}": batch[k] for k in keys if batch.get(k) not in (None, [])}


def _site_text(site) -> str:
    if site.kind == "assert":
        what = f"assert {site.condition}" + (f", \"{site.message[:120]}\"" if site.message else "")
    elif site.kind == "kernel":
        what = f"check {site.condition or site.message}"
    else:
        what = f"raise {site.exc}" + (f"(\"{site.message[:120]}\")" if site.message else "")
    return what


def _near_miss(text: str) -> str | None:
    for name, rx in NEAR_MISS:
        if rx.search(text):
            return name
    return None


def _frame_category(exc: LogException, message: str) -> tuple[str, str, Any] | None:
    """The category of the innermost vLLM frames (the catalog's rules), with the frame that decided."""
    from ..catalog.categorize import categorize
    from ..catalog.match import vllm_path

    frames = list(exc.frames)
    seen = 0
    for fr in reversed(frames):
        path = vllm_path(fr.file)
        if not ("vllm/" in path or path.count("/") <= 2):  # torch / triton / site-packages internals
            continue
        seen += 1
        if seen > 5:
            break
        cat, rid = categorize({"file": path, "function": fr.function, "condition": fr.code or "",
                               "message": message, "exc": exc.exc_type})
        if cat != "other":
            return cat, rid, fr
        if rid.startswith("other_") and rid not in ("other_type_narrowing", "other_duplicate_layer"):
            return "other", rid, fr
    return None


def _function_hint(exc: LogException) -> tuple[str, Any] | None:
    """Sites in the frames' functions: the category most of them have (weak)."""
    from ..catalog import load
    from ..catalog.match import vllm_path

    cat = load()
    for depth, fr in enumerate(reversed(exc.frames[-6:])):
        sites = cat.in_function(vllm_path(fr.file), fr.function)
        cats: dict[str, int] = {}
        for s in sites:
            if s.category != "other":
                cats[s.category] = cats.get(s.category, 0) + 1
        if cats and sum(cats.values()) * 2 >= len(sites):
            return max(cats, key=cats.get), fr
    return None


# ------------------------------------------------------------------------------------------------


def diagnose(facts: LogFacts) -> Diagnosis | None:
    setup = read_setup(facts, facts.root)
    d = _diagnose(facts, setup)
    pre = _precondition_fails(d.category, setup, facts) if d is not None and d.category != "other" else None
    if pre:  # every path: a family needs its setting (speculative decoding, a hybrid model)
        d.basis += f"; but {pre}, so the error has another cause: not counted as {d.category}"
        d.title = f"Failure outside the hybrid / spec-decode families (not {d.category}: {pre})"
        d.category = "other"
        d.confidence = "low" if d.confidence == "low" else "medium"
    if d is not None and d.category == "spec_kernel_limit" and setup.spec_k > 0:
        # the decode width the kernel saw: 1 + k tokens per request
        d.numbers.setdefault("next_n", setup.spec_k + 1)
    return d


def _diagnose(facts: LogFacts, setup: Setup) -> Diagnosis | None:
    from ..catalog.match import match_exception, match_kernel, match_message

    root = facts.root
    orphans = [e for e in facts.exceptions if e.exc_type.startswith("(")]
    version = facts.vllm_version
    base_numbers = _config_numbers(facts, setup)
    base_numbers.update(_batch_numbers(setup.batch))
    fl = _frame_lines(facts)
    if fl:
        base_numbers["frame_lines"] = fl
    batch_ev = _fact_ev(facts, "crash_batch")
    if root is None:
        return _diagnose_rootless(facts, orphans, setup, base_numbers, batch_ev)
    message = root.message or ""
    text = f"{root.exc_type}: {message}"

    # 0. a KV-memory error the log itself ties to the hybrid KV layout (checked before the site: the
    #    memory check is an `other` site, the disabled hybrid manager is the cause)
    if facts.startup.get("hybrid_kv_cache_manager_disabled") and re.search(
            r"KV cache is needed|No available memory for the cache blocks|KV cache memory|num_gpu_blocks", message):
        return Diagnosis(
            category="kv_page_size", confidence="medium", rule="failure_class",
            basis="the KV-cache memory check failed while the log says the hybrid KV cache manager is disabled: every "
                  "layer of the hybrid model then gets a full-length KV page per token (no per-group sizing), so the "
                  "KV cache needs far more memory than the hybrid layout would",
            title="KV cache too large because the hybrid KV cache manager is disabled",
            message=(message.strip().splitlines() or [""])[0][:300], numbers={**base_numbers, **facts.numbers},
            evidence=_ev_exc(root) + _fact_ev(facts, "hybrid_kv_cache_manager_disabled"),
            missing=["what disabled the hybrid KV cache manager (a KV connector, --disable-hybrid-kv-cache-manager, "
                     "a feature it does not support) -- the lines before the warning"])
    # 1. a known site ---------------------------------------------------------------------------
    matches = match_exception(root.exc_type, message, root.frames, version)
    best = matches[0] if matches else None
    if best is not None and best.score >= 0.75 and best.how != "function":
        return _from_site(facts, root, best, matches, setup, base_numbers, batch_ev)

    # 2. asynchronous fault ------------------------------------------------------------------------
    if ASYNC.search(text):
        kernel = _faulting_kernel(facts.startup.get("error_lines") or [])
        if kernel is not None:
            return kernel_fault(facts, kernel, setup, base_numbers, batch_ev)
        return _from_async(facts, root, setup, base_numbers, batch_ev)

    # 3. near misses stay other
    pad = _padding_signature(facts)
    if pad is not None:
        big, small, mx, what = pad
        return Diagnosis(
            category="cudagraph_shape", confidence="medium", rule="failure_class",
            basis=f"{what}: {big} is a CUDA-graph capture size above max_num_seqs ({mx}) while the tensor has {small} "
                  f"rows -- a batch padded to the capture size meets a buffer sized for the real batch",
            title=f"CUDA-graph padded batch ({big}) vs a buffer of {small} rows",
            message=(message.strip().splitlines() or [""])[0][:300],
            numbers={**base_numbers, **facts.numbers, "padded_batch": big, "rows": small},
            evidence=_ev_exc(root, 3) + _fact_ev(facts, "args", "command", "non_default_args") + batch_ev)
    nm = _near_miss(text)
    if nm:
        d = Diagnosis(category="other", confidence="medium", rule="near_miss",
                      basis=f"the root error is a {nm} failure, outside the hybrid/spec-decode families",
                      title=f"{nm[0].upper() + nm[1:]}: {root.exc_type.rsplit('.', 1)[-1]}",
                      message=(message.strip().splitlines() or [""])[0][:300],
                      numbers=dict(facts.numbers), evidence=_ev_exc(root))
        return d

    # 4. where vLLM failed ---------------------------------------------------------------------------
    if _NEG_INDEX.search(message):  # a negative index is a row without accepted drafts before it is a bad index
        sc = _shape_class(root, message, setup, facts)
        if sc is not None:
            return sc
    fc = _frame_category(root, message)
    if fc is not None and fc[0] != "other":
        cat, rid, fr = fc
        conf = "medium"
        d = Diagnosis(category=cat, confidence=conf, rule="failure_class",
                      basis=f"no catalog site matches this text; the failing frame {fr.file.rsplit('/', 1)[-1]}:"
                            f"{fr.function} and the message classify as {cat} (rule {rid})"
                            + (f"; setup: {', '.join(setup.why)}" if setup.why else ""),
                      title=f"{_title(cat)} ({root.exc_type.rsplit('.', 1)[-1]} in {fr.function})",
                      message=(message.strip().splitlines() or [""])[0][:300] or root.exc_type,
                      numbers={**base_numbers, **facts.numbers}, evidence=_ev_exc(root, 3) + batch_ev)
        d.missing.append("the exact failure site is not in the catalog (vLLM 0.11-0.33): a fork or a newer release")
        return d
    sc = _shape_class(root, message, setup, facts)
    if sc is not None:
        return sc
    if not any("vllm/" in f.file or f.file.count("/") <= 2 for f in root.frames):
        # no vLLM frame printed (an excerpt of the message alone): the message's own words, the modules it
        # names (causal_conv1d, gdn, indexer ...) standing in for the file
        from ..catalog.categorize import categorize

        cat, rid = categorize({"file": message.lower()[:300], "function": "", "condition": "", "message": message,
                               "exc": root.exc_type})
        if cat != "other" and not _precondition_fails(cat, setup, facts):
            return Diagnosis(category=cat, confidence="low", rule="failure_class",
                             basis=f"no frames and no catalog site for this text; its wording classifies as {cat} "
                                   f"(rule {rid})" + (f"; setup: {', '.join(setup.why)}" if setup.why else ""),
                             title=f"{_title(cat)} (from the message)",
                             message=(message.strip().splitlines() or [""])[0][:300],
                             numbers={**base_numbers, **facts.numbers}, evidence=_ev_exc(root) + batch_ev,
                             missing=["the traceback of this error (which vLLM function raised it)"])
    if fc is not None:  # an 'other' rule decided from the frames (memory, weights, platform, a capability gap)
        return Diagnosis(category="other", confidence="medium", rule="failure_class",
                         basis=f"the failing frame and message classify as outside the families (rule {fc[1]})",
                         title=f"{root.exc_type.rsplit('.', 1)[-1]} in {fc[2].function}",
                         message=(message.strip().splitlines() or [""])[0][:300],
                         numbers=dict(facts.numbers), evidence=_ev_exc(root))
    if best is not None and 0.5 <= best.score < 0.75 and best.how in ("message", "kernel", "raise"):
        return _from_site(facts, root, best, matches, setup, base_numbers, batch_ev, weak=True)
    hint = _function_hint(root)
    if hint is not None:
        cat, fr = hint
        return Diagnosis(category=cat, confidence="low", rule="failure_class",
                         basis=f"the error surfaced in {fr.file.rsplit('/', 1)[-1]}:{fr.function}, a function whose "
                               f"failure sites in vLLM are {cat} checks; the message itself is not one of them",
                         title=f"{_title(cat)} (inferred from {fr.function})",
                         message=(message.strip().splitlines() or [""])[0][:300] or root.exc_type,
                         numbers={**base_numbers, **facts.numbers}, evidence=_ev_exc(root, 3) + batch_ev)
    return None


SHAPE = re.compile(r"size of tensor a \(\d+\) must match|expanded size of the tensor|must match the existing size|"
                   r"shape mismatch|shape '\[[^\]]*\]' is invalid for input of size|split_with_sizes expects|"
                   r"mat1 and mat2 shapes cannot|view size is not compatible|Sizes of tensors must match|"
                   r"doesn't match the broadcast shape|output with shape \[[^\]]*\] doesn't match|"
                   r"Expected size \d+ but got size \d+|inconsistent tensor size", re.I)
KERNEL_CHECK = re.compile(r"Assertion error \(|Check failed|TORCH_CHECK|FLASHINFER_CHECK|TVM_FFI|Expected .{1,80}"
                          r"(?:to be|but got|got)\b|must be (?:<=|>=|less|at most|at least|a multiple|divisible)|"
                          r"exceeds? (?:the )?(?:maximum|limit|max)|only supports? .{0,40}(?:tokens|heads|q_len|seqlen|"
                          r"next_n|batch)", re.I)
# a check about how many tokens / requests / rows a step carries (what speculative decoding multiplies), and one
# about the model's own shapes or a tensor's layout (the same for every batch)
_TOKEN_COUNT_CHECK = re.compile(r"num_decode_tokens|num_decodes|num_tokens|num_reqs|num_requests|num_actual_tokens|"
                                r"q\.shape\[0\]|query|seq_lens|block_table|batch|rows|topk_lens|next_n|q_len|"
                                r"token_to_req|decode_lens", re.I)
_MODEL_SHAPE_CHECK = re.compile(r"dtype|device|contiguous|stride|heads|head_dim|ndim|\.dim\(\)|hidden|compress_ratio|"
                                r"kv_lora|rope|quant|scale", re.I)
_NEG_INDEX = re.compile(r"index -\d+ is out of bounds|negative (?:state )?ind(?:ex|ices)|index -1\b", re.I)
_SPEC_FRAMES = re.compile(r"/spec_decode/|proposer|eagle|mtp|draft|speculat", re.I)


def _shape_class(root: LogException, message: str, setup: Setup, facts: LogFacts) -> Diagnosis | None:
    """A plain PyTorch shape / size error (no failure site of vLLM's says it) classified by where it
    happened and what the configuration makes possible: inside Mamba/GDN code under speculative decoding the
    rows of spec decodes (1 + k tokens) and plain decodes (1 token) of one batch disagree (mixed batch); inside
    MLA / sparse-indexer code under speculative decoding the multi-token decode shape meets a per-request
    buffer (kernel limit). A negative index in Mamba/GDN code under speculative decoding is a row with no
    accepted draft (``num_accepted - 1``). Without frames the model's kind stands in for the place (low)."""
    neg = bool(_NEG_INDEX.search(message))
    # a kernel's own check (C++/TVM/Triton text) about sizes, not about the GPU, dtype or device
    kcheck = bool(KERNEL_CHECK.search(message)) and not re.search(
        r"arch|dtype|sm_?\d|capability|device|fp8|bf16|fp16|float|int32|int64|contiguous|stride|not supported on", message,
        re.I)
    if not (SHAPE.search(message) or neg or kcheck) or setup.spec_k == 0:
        return None
    from ..catalog.match import vllm_path

    frames = [f for f in root.frames if "vllm/" in vllm_path(f.file) or vllm_path(f.file).count("/") <= 2]
    inner = frames[-6:]
    text = " ".join(f"{vllm_path(f.file)} {f.function}" for f in inner)
    hybrid_at = next((f for f in reversed(inner) if HYBRID_FRAMES.search(f"{f.file} {f.function}")), None)
    mla_at = next((f for f in reversed(inner) if MLA_FRAMES.search(f"{f.file} {f.function}")), None)
    where = None
    if hybrid_at is not None and (mla_at is None or inner.index(hybrid_at) > inner.index(mla_at)):
        cat, where = "mixed_batch", hybrid_at
    elif mla_at is not None:
        cat, where = "spec_kernel_limit", mla_at
    elif not inner or _SPEC_FRAMES.search(text) or re.search(r"_build_attention_metadata|_prepare_inputs|build\b", text):
        if setup.hybrid and not setup.mla:
            cat = "mixed_batch"
        elif setup.mla and not setup.hybrid:
            cat = "spec_kernel_limit"
        else:
            return None
    else:
        return None
    if kcheck and not SHAPE.search(message) and not neg and cat != "spec_kernel_limit":
        return None  # a kernel check speaks for the MLA / attention kernels only
    batch = setup.batch or {}
    if cat == "mixed_batch" and not neg and not (batch.get("mixed") or batch.get("ragged_drafts")) and (
            setup.prefix_caching or setup.mamba_cache_mode in ("align", "all")):
        cat = "state_index"
        what = ("a shape mismatch inside Mamba/GDN code under speculative decoding with prefix caching: the state "
                "indices run through the block table, whose width carries extra columns for the draft tokens "
                "(num_speculative_blocks) that a buffer sized without them lacks")
    elif neg and cat == "mixed_batch":
        what = ("a negative index inside Mamba/GDN code under speculative decoding: a row with no accepted draft "
                "indexes its state at num_accepted - 1 = -1")
    elif cat == "mixed_batch":
        what = ("a shape mismatch inside Mamba/GDN code under speculative decoding: spec-decode rows (1 + k tokens) "
                "and plain decode rows (1 token) of one batch disagree about their sizes")
    elif kcheck and not SHAPE.search(message):
        what = ("a kernel's size check failing in MLA / sparse-attention code under speculative decoding: the "
                "multi-token decode (1 + k query tokens per request) is outside what the kernel was built for")
    else:
        what = ("a shape mismatch inside MLA / sparse-indexer code under speculative decoding: the multi-token decode "
                "shape (one row per draft token) meets a buffer sized per request or per block")
    place = (f"at {where.file.rsplit('/', 1)[-1]}:{where.function}" if where is not None
             else f"no frame places it; the model ({', '.join(setup.why)}) does")
    conf = "medium" if where is not None else "low"
    nums = {**_config_numbers(facts, setup), **facts.numbers}
    if cat == "spec_kernel_limit" and setup.spec_k > 0:
        nums.setdefault("next_n", setup.spec_k + 1)
    batch_ev = _fact_ev(facts, "crash_batch")
    d = Diagnosis(category=cat, confidence=conf, rule="failure_class",
                  basis=f"no catalog site matches this text; {what} ({place}; {', '.join(setup.why)})",
                  title=f"{_title(cat)} ({root.exc_type.rsplit('.', 1)[-1]} "
                        + (f"in {where.function})" if where is not None else "inferred from the configuration)"),
                  message=(message.strip().splitlines() or [""])[0][:300],
                  numbers=nums, evidence=_ev_exc(root, 3) + batch_ev + _fact_ev(facts, "spec_prose"))
    if where is None:
        d.missing.append("the traceback of this error (which vLLM function raised it)")
    return d


_CALL_LINE = re.compile(r"^(?:[\w.\[\], ()*]+=\s*)?(?:await\s+)?(?:return\s+)?[\w.\[\]]+\($|\)\s*=|^\w[\w.]*\(.*\)$")


def _ends_at_leaf(exc: LogException) -> bool:
    """The innermost frame printed is where it failed (its line is not a call into a further frame that an
    excerpt cut away): an indexing, an assert, a raise, arithmetic."""
    last = exc.last_frame
    if last is None:
        return False
    code = (last.code or "").strip()
    if not code:
        return False
    if code.startswith(("assert ", "raise ")):
        return True
    return not _CALL_LINE.search(code)


# where in vLLM's step a failure happened, and the family that stage implies for a configuration
_STAGES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"preprocess_mamba|postprocess_mamba|collect_mamba_copy|mamba_copy|copy_spec|precopy|"
                r"state_copy|_update_states.*mamba|mamba_utils", re.I), "state"),
    (re.compile(r"_build_attention_metadata|build_attn_metadata|attn_metadata|attention_metadata|\bbuild\b|"
                r"split_decodes|_prepare_inputs|prepare_inputs|_compute_spec|num_accepted", re.I), "metadata"),
    (re.compile(r"capture_model|_capture_cudagraphs|profile_cudagraph|_dummy_run|cudagraph|capture", re.I), "capture"),
    (re.compile(r"initialize_kv_cache|get_kv_cache_config|_initialize_kv_caches|unify_|get_kv_cache_groups|"
                r"may_reinitialize_input_batch|_reshape_kv_cache|_allocate_kv_cache", re.I), "kv_init"),
]


def _stage(frames, setup: Setup) -> tuple[str, str, Any] | None:
    """The family a failure at this stage of the engine implies for this configuration (low confidence)."""
    stage, at = None, None
    for fr in reversed(list(frames)):
        for rx, name in _STAGES:
            if rx.search(f"{fr.function} {fr.file.rsplit('/', 1)[-1]}"):
                stage, at = name, fr
                break
        if stage:
            break
    hybrid, spec, mla = bool(setup.hybrid), setup.spec_k != 0, bool(setup.mla)
    batch = setup.batch or {}
    if stage is None and not frames:
        stage = "step"  # a crash dump: some step of serving
    if stage is None:
        return None
    if stage == "state" and hybrid:
        return "state_index", "while copying Mamba/GDN states between blocks", at
    if stage in ("metadata", "step") and hybrid and spec:
        if batch.get("mixed") or batch.get("ragged_drafts") or stage == "metadata":
            return "mixed_batch", "while building attention metadata for the step's batch", at
        return "state_index", "inside a step", at
    if stage in ("metadata", "step") and mla and spec:
        return "spec_kernel_limit", "while building the MLA / indexer metadata of a multi-token decode", at
    if stage == "capture" and spec and mla:
        return "spec_kernel_limit", "during CUDA-graph capture/profiling with multi-token decode", at
    if stage == "capture" and hybrid:
        return "cudagraph_shape", "during CUDA-graph capture", at
    if stage == "kv_init" and hybrid:
        return "kv_page_size", "while planning the KV cache", at
    return None


_GDB_KERNEL = re.compile(r"(?:triggered at PC \S+\s+|#\d+\s+|in kernel\s+|kernel\s+|0x[0-9a-f]{6,}\s+in\s+)"
                         r"([A-Za-z_]\w{3,})(?:<<<[^>]*>>>)?\s*(?:\(\))?"
                         r"(?:\s*\(([\w./-]+\.py):(\d+)\)|\s+at\s+([\w./-]+\.py):(\d+))?")
# compute-sanitizer (memcheck): "========= Invalid __global__ read of size 2 bytes" then
# "=========     at kernel+0x1c70" (newer) or "=========     at 0x1c70 in kernel" (older), optionally "in file.py:N"
_SANITIZER_AT = re.compile(r"=+\s+at\s+(?:0x[0-9a-f]+\s+in\s+)?(?:void\s+)?((?:[A-Za-z_][\w]*::)*[A-Za-z_]\w*(?:<[^>]*>)?)"
                           r"(?:\+0x[0-9a-f]+)?(?:\s+in\s+([\w./-]+\.(?:py|cu|cuh)):(\d+))?")
# a device-side assert as CUDA prints it (PyTorch's kernels and Triton's tl.device_assert alike):
# "<file>:<line>: <function>: block: [x,y,z], thread: [x,y,z] Assertion `<condition>` failed."
DEVICE_ASSERT = re.compile(r"([\w./\\-]+\.(?:py|cu|cuh|cpp|h)):(\d+): ([^:]+?): block: \[[\d, ]+\],? thread: \[[\d, ]+\],? "
                           r"Assertion `(.+?)` failed")


def _faulting_kernel(lines) -> tuple[str, str | None, int | None, str, int] | None:
    """cuda-gdb / compute-sanitizer / a device-side assert name the kernel that faulted:
    (kernel, file, line, text, log line)."""
    if not any(ASYNC.search(t) or "Assertion `" in t for _, t in lines):
        return None
    for lineno, t in lines:
        if "Assertion `" in t:
            m = DEVICE_ASSERT.search(t)
            if m:
                func = m.group(3).strip().rsplit(" ", 1)[-1]
                return func, m.group(1), int(m.group(2)), t, lineno
        if "=====" in t and " at " in t:
            m = _SANITIZER_AT.search(t)
            if m:
                return m.group(1), m.group(2), int(m.group(3)) if m.group(3) else None, t, lineno
        m = _GDB_KERNEL.search(t)
        if m and (m.group(2) or m.group(4) or "<<<" in t or "triggered at PC" in t):
            file = m.group(2) or m.group(4)
            ln = m.group(3) or m.group(5)
            return m.group(1), file, int(ln) if ln else None, t, lineno
    return None


_KERNEL_PLACES: list[tuple[str, re.Pattern[str]]] = [
    # the Mamba state copies between blocks (prefix caching's align mode, speculative blocks)
    ("mamba_copy", re.compile(r"v1/worker/mamba_utils|mamba_hybrid|mamba_copy|copy_mamba|state_copy|batch_memcpy", re.I)),
    ("mamba", re.compile(HYBRID_FRAMES.pattern + r"|gated_delta|delta_rule|selective_scan|selective_state|ssd_|"
                         r"chunk_scan|state_passing|conv1d", re.I)),
    ("mla", MLA_FRAMES),
    ("sampling", re.compile(r"/sample/|sampler|sampling|rejection|multinomial|top_?k_?top_?p|Distributions\.cu|"
                            r"TensorCompare\.cu|Multinomial", re.I)),
    ("gemm", re.compile(r"fused_moe|/moe/|quantization|gemm|w8a8|marlin|cutlass(?!.*mla)|/lora/|punica", re.I)),
    ("index", re.compile(r"IndexKernel\.cu|Indexing\.cu|ScatterGatherKernel\.cu|IndexSelect|index_elementwise", re.I)),
    ("attention", re.compile(r"attention|attn|reshape_and_cache|paged_attention|flash_fwd", re.I)),
]


def kernel_place(name: str, file: str | None) -> tuple[str | None, str]:
    """What a GPU kernel computes (``mamba_copy``, ``mamba``, ``mla``, ``sampling``, ``gemm``, ``comm``, ``index``,
    ``attention``) and where it is defined: the file the report prints, else vLLM's own kernels of that name (the
    catalog's ``gpu_kernels``), else the compiled kernels' table (``vllm_diag.catalog.kernels``); (None, place) when
    unknown."""
    from ..catalog import load
    from ..catalog.kernels import cuda_kernel
    from ..catalog.match import vllm_path

    places: list[str] = []
    if file:
        places.append(vllm_path(file))
    known = load().gpu_kernel(name)
    if known:
        places += known[0]
    for place in places:
        for what, rx in _KERNEL_PLACES:
            if rx.search(f"{place} {name}"):
                return what, place
    ck = cuda_kernel(name)
    if ck is not None:
        return ck[2], f"{ck[0]} {ck[1]}"
    for what, rx in _KERNEL_PLACES:
        if rx.search(name):
            return what, places[0] if places else name
    return None, places[0] if places else name


_WHAT = {"mamba_copy": "the Mamba state copies between blocks", "mamba": "a Mamba/GDN state or conv kernel",
         "mla": "an MLA / sparse-indexer attention kernel", "sampling": "the sampler",
         "gemm": "a GEMM / MoE / quantisation kernel", "comm": "a collective (NCCL)", "attention": "a dense attention kernel",
         "index": "PyTorch's indexing kernel"}


def kernel_fault(facts: LogFacts, kernel, setup: Setup, base_numbers: dict, batch_ev: list[Evidence]) -> Diagnosis:
    """A fault whose kernel a debugger or a device-side assert names: what that kernel computes decides, with the
    configuration (a Mamba/GDN kernel under speculative decoding or prefix caching: its state indices or the
    batch; an MLA / indexer kernel under speculative decoding: the kernel limits; the sampler, GEMMs,
    collectives, dense attention: outside the families). PyTorch's own indexing kernels and unknown kernels
    place nothing: the configuration decides, as for any asynchronous fault."""
    name, file, line, text, lineno = kernel
    what, place = kernel_place(name, file)
    ev = [Evidence(text=text[:500], line=lineno, source="log")] + batch_ev
    where = name + (f" ({place}:{line})" if file and line else f" ({place})" if place != name else "")
    nums = {**base_numbers, **facts.numbers}
    assert_text = DEVICE_ASSERT.search(text)
    told = "a device-side assert names" if assert_text else "the debugger names"
    known = _config_known(facts)

    def out(cat: str, conf: str, why: str) -> Diagnosis:
        if cat == "spec_kernel_limit" and setup.spec_k > 0:
            nums.setdefault("next_n", setup.spec_k + 1)
        return Diagnosis(category=cat, confidence=conf, rule="async_fault",
                         basis=f"{told} the faulting kernel {where}, {_WHAT.get(what or '', 'a kernel')}; {why}",
                         title=f"{_title(cat)} (fault in {name})" if cat != "other" else f"GPU fault in {name}",
                         message=f"GPU fault in kernel {where}" + (f": {assert_text.group(4)[:200]}" if assert_text else ""),
                         numbers=nums, evidence=ev)

    if what == "mamba_copy":
        setup.hybrid = True
        return out("state_index", "medium", "the state copies follow the block table's state indices (prefix caching's "
                                            "align mode, the speculative blocks)")
    if what == "mamba":
        if setup.hybrid is not True:
            setup.hybrid = True
            setup.why.append(f"hybrid model (Mamba/GDN kernel {name})")
        if setup.spec_k:
            cat, why = _hybrid_spec_fault_class(setup)
            return out(cat, "medium", f"with {', '.join(setup.why)} -> {why}")
        if setup.prefix_caching or setup.mamba_cache_mode in ("align", "all"):
            return out("state_index", "medium", f"with {', '.join(setup.why)} -> the state indices prefix caching routes "
                                                "through the block table")
        if known:
            return out("other", "low", "the log's configuration has neither speculative decoding nor prefix caching, "
                                       "so the state indices and batches of the families do not apply")
        return out("state_index", "low", "the configuration is not in the log; a Mamba/GDN kernel reads its states "
                                         "through the state indices")
    if what == "attention" and setup.mla:
        what = "mla"  # an MLA model's attention layers all run the MLA decode / prefill kernels
    if what == "attention" and setup.hybrid:
        what = None  # the full-attention layers of a hybrid: the kernel does not tell the class, the setup does
    if what == "mla":
        setup.mla = True
        if setup.spec_k:
            return out("spec_kernel_limit", "medium", f"with {', '.join(setup.why)} -> the multi-token decode "
                                                      "(1 + k query tokens per request) this kernel receives")
        return out("other", "low", "no speculative decoding in the log: the kernel-limit class needs multi-token decodes")
    if what in ("sampling", "gemm", "comm", "attention"):
        return out("other", "medium" if what in ("sampling", "comm") else "low",
                   "outside the hybrid / spec-decode state, batch and kernel-limit paths")
    # PyTorch's indexing kernels or an unknown kernel: the configuration decides
    fake = LogException(exc_type="CUDA error", message=text[:300], log_line=lineno)
    d = _from_async(facts, fake, setup, base_numbers, batch_ev)
    d.basis = f"{told} the faulting kernel {where}, which does not place the fault in vLLM; " + d.basis
    return d


def _capture_sizes(facts: LogFacts) -> set[int]:
    sizes = facts.args.get("cudagraph_capture_sizes")
    if isinstance(sizes, list) and all(isinstance(x, int) for x in sizes):
        return set(sizes)
    # vLLM's default list (config/vllm.py _set_cudagraph_sizes): 1, 2, 4, then steps of 8 to 256, of 16 above
    return {1, 2, 4} | set(range(8, 257, 8)) | set(range(272, 1025, 16))


def _padding_signature(facts: LogFacts) -> tuple[int, int, int, str] | None:
    """A size mismatch whose larger side is a CUDA-graph capture size above ``max_num_seqs`` and whose
    smaller side fits the real batch: the batch was padded for a captured graph."""
    n = facts.numbers
    mx = facts.args.get("max_num_seqs")
    if not isinstance(mx, int):
        return None
    pairs = []
    if isinstance(n.get("split_sizes"), list) and isinstance(n.get("split_sizes_expected_sum"), int):
        pairs.append((sum(n["split_sizes"]), n["split_sizes_expected_sum"], "split sizes vs the tensor"))
        pairs += [(x, n["split_sizes_expected_sum"], "a split size vs the tensor") for x in n["split_sizes"]]
    if isinstance(n.get("tensor_a_size"), int) and isinstance(n.get("tensor_b_size"), int):
        pairs.append((n["tensor_a_size"], n["tensor_b_size"], "tensor sizes"))
    caps = _capture_sizes(facts)
    for a, b, what in pairs:
        big, small = max(a, b), min(a, b)
        if big in caps and big > mx >= small and big != small:
            return big, small, mx, what
    return None


def _title(cat: str) -> str:
    return {
        "kv_page_size": "KV-cache page-size unification failed",
        "state_index": "Mamba/GDN state index or block table mismatch",
        "spec_kernel_limit": "Attention kernel limit under speculative decoding",
        "mixed_batch": "Hybrid builder on a mixed decode / spec-decode batch",
        "cudagraph_shape": "CUDA-graph shape vs the batch",
        "block_size_alignment": "Block size vs kernel / hash alignment",
        "mamba_block_budget": "Mamba cache blocks vs max_num_seqs",
        "prefix_cache_degraded": "Prefix caching unavailable or degraded",
        "token_budget": "Speculative tokens vs the token budget",
        "other": "Failure outside the hybrid / spec-decode families",
    }.get(cat, cat)


def _from_site(facts: LogFacts, root: LogException, best, matches, setup: Setup, base_numbers: dict,
               batch_ev: list[Evidence], weak: bool = False) -> Diagnosis:
    site = best.site
    nums = dict(base_numbers)
    nums.update(facts.numbers)
    nums.update(best.numbers)
    cat = site.category
    how = {"message": "its message template", "condition": "the frame's assert condition",
           "raise": "the frame's raise", "kernel": "the kernel check's text",
           "line": f"the innermost frame's line ({best.note or 'its statement in a scanned release'})"
           }.get(best.how, best.how)
    where = f"{site.file}:{site.function}" if site.function else site.file
    rel = (f"present in vLLM {site.version_text()}" if site.versions
           else f"{site.package or 'kernel'} check" + (f" ({site.source})" if site.source else ""))
    basis = f"matched vLLM failure site {where} ({_site_text(site)[:160]}) by {how}; {rel}"
    if best.version_ok is False and facts.vllm_version:
        basis += f"; not at this place in {facts.vllm_version} as released (a fork or a patched build)"
    others = sorted({m.site.category for m in matches if m.score >= 0.75 and m.site.category != cat})
    if others:
        basis += f"; the same text also exists as a {', '.join(others)} site"
    if cat == "other" and site.kind == "kernel" and setup.spec_k != 0 and (setup.mla or MLA_FRAMES.search(site.file)) \
            and re.search(r"num_tokens|seqlen|q_len|qo_len|next_n|batch|num_heads|topk|shape|size|contiguous",
                          f"{site.condition or ''} {site.message or ''}") \
            and not re.search(r"arch|dtype|sm_?\d|capability|device", site.condition or "", re.I):
        cat = "spec_kernel_limit"
        basis += ("; a shape check of an MLA / sparse-attention kernel failing under speculative decoding: the "
                  "multi-token decode shape is outside what the kernel was built for")
    elif cat == "other" and site.kind != "kernel" and (site.rule or "default") == "default" and setup.spec_k != 0 \
            and MLA_FRAMES.search(site.file) and not HYBRID_FRAMES.search(site.file) \
            and _TOKEN_COUNT_CHECK.search(f"{site.condition or ''} {site.message or ''}") \
            and not _MODEL_SHAPE_CHECK.search(f"{site.condition or ''} {site.message or ''}"):
        cat = "spec_kernel_limit"
        basis += ("; a check of token / request counts in MLA / sparse-indexer code failing under speculative "
                  "decoding: a decode carries 1 + k query tokens per request, which this path sizes per request")
    pre = _precondition_fails(cat, setup, facts, site)
    if pre:
        basis += f"; but {pre}, so the check fired for another reason: not counted as {cat}"
        cat = "other"
    has_numbers = bool(best.numbers) or best.how in ("condition", "kernel")
    conf = "high" if best.score >= 0.9 and has_numbers and not weak else "medium"
    if best.how == "line" and best.score < 0.75:
        conf = "low"
    if weak:
        conf = "low" if best.score < 0.6 else "medium"
    if cat == "spec_kernel_limit" and setup.spec_k > 0:
        nums.setdefault("next_n", setup.spec_k + 1)
    ev = _ev_exc(root, 2)
    if best.frame is not None and all(e.line != best.frame.log_line for e in ev):
        ev.append(Evidence(text=f'File "{best.frame.file}", line {best.frame.line}, in {best.frame.function}'
                                + (f": {best.frame.code}" if best.frame.code else ""), line=best.frame.log_line, source="log"))
    ev.append(Evidence(text=f"catalog site {site.id}: {where} -- {_site_text(site)[:200]} ({rel})", source="catalog"))
    ev += batch_ev
    title = f"{_title(cat)}: {site.exc.rsplit('.', 1)[-1]} in {site.short_function or site.basename}"
    msg = (root.message.strip().splitlines() or [""])[0][:300] or f"bare {root.exc_type} at {_site_text(site)[:120]}"
    if site.limit:
        msg += f" -- kernel limit: {site.limit}"
    if setup.batch:
        from .dump import describe

        msg += f" -- batch at the crash: {describe(setup.batch)}"
    d = Diagnosis(category=cat, confidence=conf, basis=basis, title=title, message=msg, numbers=nums, evidence=ev,
                  site_id=site.id, rule="failure_site")
    if site.kind == "assert" and not site.message and not best.numbers:
        d.missing.append("the assertion carries no values; rerun with the vllm-diag probes on (VLLM_DIAG_DB=run.db) "
                         "to record the specs, block tables and buffers it compares")
    return d


def _config_known(facts: LogFacts) -> bool:
    """The log states the whole configuration: vLLM's own config line, its non-default args, or a command
    pasted whole (an excerpt that cuts the command proves nothing by what it lacks)."""
    if facts.lines.get("engine_config") or facts.lines.get("non_default_args"):
        return True
    return bool(facts.command) and facts.startup.get("command_complete") is True


_SPEC_COMPONENT = re.compile(r"spec_?decod|specdecod|speculat|draft|eagle|\bmtp|_mtp|proposer", re.I)


def _precondition_fails(cat: str, setup: Setup, facts: LogFacts, site=None) -> str | None:
    """A family needs its setting: speculative decoding for the kernel-limit and mixed-batch classes (and for
    any check of the speculative-decoding path), a hybrid model for the Mamba classes. When the log states a
    configuration without it, say so."""
    if not _config_known(facts):
        return None
    if cat in ("spec_kernel_limit", "mixed_batch", "token_budget") and setup.spec_k == 0:
        return "the log's configuration has no speculative decoding"
    if cat != "other" and site is not None and setup.spec_k == 0 and \
            _SPEC_COMPONENT.search(f"{site.function} {site.file.rsplit('/', 1)[-1]}"):
        return f"the check belongs to the speculative-decoding path ({site.function}) and the log's configuration has none"
    if cat in ("state_index", "mamba_block_budget", "mixed_batch") and setup.hybrid is False:
        return "the model is not a hybrid (Mamba/GDN) model"
    return None


def _from_async(facts: LogFacts, root: LogException, setup: Setup, base_numbers: dict,
                batch_ev: list[Evidence]) -> Diagnosis:
    m = ASYNC.search(f"{root.exc_type}: {root.message}")
    fault = (root.message.strip().splitlines() or [""])[0][:120] if m else "asynchronous CUDA fault"
    fault = fault.split(" Search for", 1)[0].rstrip(".") or "asynchronous CUDA fault"
    last = root.last_frame
    surfaced = f"{last.file.rsplit('/', 1)[-1]}:{last.function}" if last else "a later synchronisation"
    batch = setup.batch or {}
    nums = {**base_numbers, **facts.numbers}
    ev = _ev_exc(root, 2) + batch_ev + _fact_ev(facts, "command", "non_default_args", "engine_config")
    common = (f"{fault} is reported asynchronously: it surfaced at {surfaced}, which is not the kernel that faulted "
              f"(the process may even exit 0)")
    if setup.hybrid and setup.spec_k or setup.spec_k and setup.hybrid is None and setup.mla is None:
        cat, why = _hybrid_spec_fault_class(setup)
        if setup.hybrid:
            basis = f"{common}; inferred from the configuration: {', '.join(setup.why)} -> {why}"
            title = f"{_title(cat)} (inferred: {fault} with a hybrid model and speculative decoding)"
        else:
            # the model is not named: with speculative decoding, vLLM's asynchronous faults come from the
            # Mamba/GDN state indices and batches the drafts index (the hybrid MTP models) far more than from
            # anything else
            basis = (f"{common}; the log does not name the model; with {', '.join(setup.why)} the likely class is "
                     f"{why} of a hybrid MTP model (a dense model would rule it out; an MLA model would point at the "
                     f"attention kernels instead)")
            title = f"{_title(cat)} (inferred: {fault} with speculative decoding, model unknown)"
    elif setup.mla and setup.spec_k:
        cat = "spec_kernel_limit"
        basis = f"{common}; inferred from the configuration: {', '.join(setup.why)} -> MLA / indexer kernels with multi-token decode"
        title = f"{_title(cat)} (inferred: {fault} with MLA and speculative decoding)"
        if setup.spec_k > 0:
            nums.setdefault("next_n", setup.spec_k + 1)
    else:
        cat = "other"
        basis = (f"{common}; the configuration ({', '.join(setup.why) or 'nothing known'}) does not point at a "
                 f"hybrid/spec-decode failure class")
        title = f"Asynchronous CUDA fault: {fault}"
    d = Diagnosis(category=cat, confidence="low", basis=basis, title=title,
                  message=f"{common}." + (f" Batch at the crash: {_describe(batch)}." if batch else ""),
                  numbers=nums, evidence=ev, rule="async_fault")
    d.missing.append("rerun with CUDA_LAUNCH_BLOCKING=1 (and --enforce-eager) so the faulting kernel is the frame "
                     "shown; with the vllm-diag probes on (VLLM_DIAG_DB=run.db) each step's batch is recorded")
    return d


def _hybrid_spec_fault_class(setup: Setup) -> tuple[str, str]:
    """An asynchronous fault of a hybrid model under speculative decoding: which of the two classes the
    evidence points at (a prior, ``low``): the batch composition (mixed decode / spec-decode rows, ragged or
    zero accepted drafts) or the state indices through the block table (prefix caching's align/all modes)."""
    batch = setup.batch or {}
    if batch.get("mixed") or batch.get("ragged_drafts"):
        return "mixed_batch", "the crash dump shows " + ("a mixed batch" if batch.get("mixed") else "ragged draft lengths")
    if setup.mixed_evidence:
        return "mixed_batch", f"the log speaks of mixed batches ({setup.mixed_evidence})"
    if setup.prefix_caching or setup.mamba_cache_mode in ("align", "all"):
        return "state_index", ("the Mamba/GDN state indices that prefix caching routes through the block table "
                               f"(mode '{setup.mamba_cache_mode or 'align'}') under speculative decoding")
    return "state_index", ("Mamba/GDN state indices under speculative decoding (no evidence of mixed decode / "
                           "spec-decode batches: the crash dump or the report would show one)")


def _describe(batch: dict) -> str:
    from .dump import describe

    return describe(batch)


def _diagnose_rootless(facts: LogFacts, orphans: list[LogException], setup: Setup, base_numbers: dict,
                       batch_ev: list[Evidence]) -> Diagnosis | None:
    """No exception line: error-like lines (kernel text, excerpts) and frames printed without one."""
    from ..catalog.match import match_kernel, match_message

    lines = facts.startup.get("error_lines") or []
    for lineno, text in reversed(lines):
        ms = match_kernel(text) + match_message(text)
        ms = [m for m in ms if m.score >= 0.75]
        if ms:
            best = max(ms, key=lambda m: m.score)
            fake = LogException(exc_type=best.site.exc or "Error", message=text, log_line=lineno)
            d = _from_site(facts, fake, best, ms, setup, base_numbers, batch_ev)
            d.confidence = "medium" if d.confidence == "high" else d.confidence
            d.basis += "; read from an error line (no Python exception in the excerpt)"
            return d
    kernel = _faulting_kernel(lines)
    if kernel is not None:
        return kernel_fault(facts, kernel, setup, base_numbers, batch_ev)
    async_line = next(((ln, t) for ln, t in reversed(lines) if ASYNC.search(t)), None)
    if async_line is not None:
        fake = LogException(exc_type="CUDA error", message=async_line[1], log_line=async_line[0])
        return _from_async(facts, fake, setup, base_numbers, batch_ev)
    from ..catalog.match import match_frames

    for o in orphans:
        ms = [m for m in match_frames(o.frames, version=facts.vllm_version)
              if m.score >= 0.75 and m.how in ("condition", "kernel", "raise", "line")]
        if ms:  # the innermost frame is a known check (a kernel's TVM/TORCH check, an assert line)
            fake = LogException(exc_type=ms[0].site.exc or "Error", message="", frames=o.frames,
                                log_line=o.frames[-1].log_line)
            d = _from_site(facts, fake, ms[0], ms, setup, base_numbers, batch_ev)
            d.confidence = "medium" if d.confidence == "high" else d.confidence
            d.basis += "; the excerpt has the frames but not the exception line"
            return d
    for o in orphans:
        if not _ends_at_leaf(o):
            # the excerpt stops mid-stack: the frame that failed is not shown; only the stage is
            st = _stage(o.frames, setup)
            if st is not None:
                cat, why, fr = st
                return Diagnosis(category=cat, confidence="low", rule="failure_class",
                                 basis=f"the excerpt stops mid-traceback (no exception line); it failed {why} "
                                       f"({fr.file.rsplit('/', 1)[-1]}:{fr.function}) with {', '.join(setup.why)}",
                                 title=f"{_title(cat)} (inferred from where it failed)",
                                 message="traceback without its exception line",
                                 numbers={**base_numbers, **facts.numbers}, evidence=_ev_exc(o, 3) + batch_ev,
                                 missing=["the exception line and the innermost frames of this traceback"])
            continue
        fc = _frame_category(o, "")
        if fc is not None and fc[0] != "other":
            cat, rid, fr = fc
            return Diagnosis(category=cat, confidence="low", rule="failure_class",
                             basis=f"the excerpt has frames but no exception line; the innermost vLLM frame "
                                   f"{fr.file.rsplit('/', 1)[-1]}:{fr.function} classifies as {cat} (rule {rid})",
                             title=f"{_title(cat)} (frames only, in {fr.function})",
                             message="traceback without its exception line",
                             numbers={**base_numbers, **facts.numbers}, evidence=_ev_exc(o, 3) + batch_ev,
                             missing=["the exception line (type and message) of this traceback"])
        hint = _function_hint(o)
        if hint is not None:
            cat, fr = hint
            return Diagnosis(category=cat, confidence="low", rule="failure_class",
                             basis=f"frames without an exception line; {fr.function} holds {cat} failure sites",
                             title=f"{_title(cat)} (frames only, in {fr.function})",
                             message="traceback without its exception line",
                             numbers={**base_numbers, **facts.numbers}, evidence=_ev_exc(o, 3) + batch_ev,
                             missing=["the exception line (type and message) of this traceback"])
    if setup.batch is not None or "crash_batch" in facts.lines or facts.lines.get("engine_config", (0, ""))[1].find("Dumping input") >= 0:
        # vLLM dumped the step's input: the engine died inside a step, but the excerpt lost the error
        st = _stage([], setup)
        if st is not None:
            cat, why, _ = st
            return Diagnosis(category=cat, confidence="low", rule="failure_class",
                             basis=f"vLLM's crash dump shows the engine died inside a step; the error itself is not in "
                                   f"the excerpt; {why} with {', '.join(setup.why)}",
                             title=f"{_title(cat)} (inferred from the crash dump and the configuration)",
                             message="engine step failed (crash dump), error text missing",
                             numbers={**base_numbers, **facts.numbers},
                             evidence=_fact_ev(facts, "engine_config") + batch_ev,
                             missing=["the exception of the failing step (the lines after the dump)"])
    # an error stated in prose / a kernel message outside the catalog: classify its words
    from ..catalog.categorize import categorize

    for lineno, text in reversed(lines):
        if _near_miss(text):
            return None
        cat, rid = categorize({"file": "", "function": "", "message": text, "exc": ""})
        if cat != "other" and rid not in ("hybrid_batch_any",):
            return Diagnosis(category=cat, confidence="low", rule="failure_class",
                             basis=f"no exception in the excerpt; the error line's wording classifies as {cat} (rule {rid})",
                             title=f"{_title(cat)} (from an error line)", message=text[:300],
                             numbers={**base_numbers, **facts.numbers},
                             evidence=[Evidence(text=text[:500], line=lineno, source="log")] + batch_ev)
    return None

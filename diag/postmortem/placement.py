"""Faults placed by the kernel that faulted (cuda-gdb, compute-sanitizer, device-side asserts): what the
kernel computes, from the report's file, vLLM's own kernels (the catalog) or the compiled-kernel table."""

from __future__ import annotations

import re

from ..model import Evidence, LogException, LogFacts
from .asyncfault import ASYNC, from_async, hybrid_spec_fault_class, uneven_decode
from .configuration import HYBRID_FRAMES, MLA_FRAMES, Setup, config_known
from .diagnosis import Diagnosis, title_of

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


def faulting_kernel(lines) -> tuple[str, str | None, int | None, str, int] | None:
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
        m = _CUDACHECK.search(t)
        if m:  # a C++ CUDA check after a launch: the source file is the kernel's (custom_all_reduce.cuh ...)
            stem = m.group(1).replace("\\", "/").rsplit("/", 1)[-1].split(".", 1)[0]
            return stem, m.group(1), int(m.group(2)), t, lineno
        m = _GDB_KERNEL.search(t)
        if m and (m.group(2) or m.group(4) or "<<<" in t or "triggered at PC" in t):
            file = m.group(2) or m.group(4)
            ln = m.group(3) or m.group(5)
            return m.group(1), file, int(ln) if ln else None, t, lineno
    return None


# vLLM's CUDACHECK ("Failed: Cuda error /…/custom_all_reduce.cuh:368 'an illegal memory access …'") and NCCL's
# "Cuda failure 'an illegal memory access …' at file:line" name the source of the failed launch
_CUDACHECK = re.compile(r"(?:Failed: Cuda error|Cuda failure)\s+(?:'[^']*'\s+at\s+)?([\w./\\-]+\.(?:cu|cuh|cpp|cc|h|hpp)):(\d+)")

_KERNEL_PLACES: list[tuple[str, re.Pattern[str]]] = [
    # the Mamba state copies between blocks (prefix caching's align mode, speculative blocks)
    ("mamba_copy", re.compile(r"v1/worker/mamba_utils|mamba_hybrid|mamba_copy|copy_mamba|state_copy|batch_memcpy", re.I)),
    ("mamba", re.compile(HYBRID_FRAMES.pattern + r"|gated_delta|delta_rule|selective_scan|selective_state|ssd_|"
                         r"chunk_scan|state_passing|conv1d", re.I)),
    # a GEMM of an MLA model's libraries (DeepGEMM's fp8 / grouped MoE GEMMs) is a GEMM, not attention
    ("gemm", re.compile(r"deep_?gemm\W+\w*(?:gemm_|_gemm|grouped|m_grouped)|fused_moe|cutlass_moe|marlin", re.I)),
    ("mla", MLA_FRAMES),
    ("sampling", re.compile(r"/sample/|sampler|sampling|rejection|multinomial|top_?k_?top_?p|Distributions\.cu|"
                            r"TensorCompare\.cu|Multinomial", re.I)),
    ("gemm", re.compile(r"fused_moe|/moe/|quantization|gemm|w8a8|marlin|cutlass(?!.*mla)|/lora/|punica", re.I)),
    ("index", re.compile(r"IndexKernel\.cu|Indexing\.cu|ScatterGatherKernel\.cu|IndexSelect|index_elementwise", re.I)),
    ("attention", re.compile(r"attention|attn|reshape_and_cache|paged_attention|flash_fwd", re.I)),
    # collectives: vLLM's custom all-reduce, quick all-reduce, NCCL / symmetric-memory kernels
    ("comm", re.compile(r"custom_all_reduce|quick_all_reduce|all_reduce|allreduce|all_gather|reduce_scatter|nccl|"
                        r"symm_mem|one_shot|two_shot", re.I)),
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


# the operator's own logits processors ("--logits-processors pkg.mod:Class", the engine config's logits_processors=[...])
_CUSTOM_LOGITS = re.compile(r"--logits[-_]processors?[= ]+\S+|\blogits_processors=\[[^\]]+\]|\[['\"][\w.]+:\w+['\"]\]")
# a kernel's C++ namespace as a debugger prints it ("void acme_kernels::fused_rope_kernel<...>", "at::native::...")
_NAMESPACE = re.compile(r"^(?:void\s+)?([A-Za-z_]\w*)::")
# the namespaces of vLLM's own kernels, PyTorch's and the libraries vLLM builds in or calls (their faults are read by
# what the kernel computes, not by whose it is)
_KNOWN_NAMESPACES = frozenset({
    "vllm", "at", "c10", "torch", "cub", "thrust", "cutlass", "cute", "flash", "flash_mla", "flashinfer", "deep_gemm",
    "deepgemm", "aiter", "ck", "ck_tile", "marlin", "gptq_marlin", "fbgemm", "fbgemm_gpu", "nccl", "trtllm",
    "tensorrt_llm", "tllm", "moe", "mamba_ssm", "causal_conv1d", "sgl_kernel", "flashmla", "fmha", "xformers",
    "triton", "cublas", "cudnn", "machete", "allspark", "quickreduce", "vllm_flash_attn", "hopper", "sm90", "sm100",
    "anonymous_namespace", "detail", "std", "internal", "kernel", "kernels", "cuda", "cooperative_groups"})
# a device-side assert that an index / coordinate / state slot is not negative
_NON_NEGATIVE = re.compile(r"\b\w*(?:idx|index|indices|coord|slot|state\w*|block_id\w*|offset)\w*\s*(?:>=\s*0|>\s*-1|"
                           r"!=\s*-1)(?!\.)\b|\b0\s*<=\s*\w*(?:idx|index|coord|slot|state)", re.I)


def _launching_statement(facts: LogFacts):
    """With CUDA_LAUNCH_BLOCKING=1 a PyTorch kernel (a gather, an index) faults in the statement that launched it: the
    innermost vLLM frame of the root error. In Mamba/GDN code, a statement over the state indices / block table is
    the state-index class; one over the step's batch rows (query starts, spec-decode masks, accepted counts) is the
    mixed-batch class. (category, frame) or None."""
    from ..catalog.categorize import _BATCH_WORDS, _STATE_WORDS, _mamba_code

    root = facts.root
    if root is None or not facts.blocking_launches():
        return None
    fr = next((f for f in reversed(root.frames) if "vllm/" in f.file and (f.code or "").strip()), None)
    if fr is None or not _mamba_code(fr.file.lower(), fr.function):
        return None
    code = (fr.code or "").lower()
    if _STATE_WORDS.search(code):
        return "state_index", fr
    if _BATCH_WORDS.search(code):
        return "mixed_batch", fr
    return None


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
    retold = (facts.startup.get("prose_fault_kernel") or (None,))[0] == name and "=====" not in text
    told = ("a device-side assert names" if assert_text else "the report's retelling of a sanitizer or debugger names"
            if retold else
            "a CUDA check names" if _CUDACHECK.search(text) else
            "with CUDA_LAUNCH_BLOCKING=1 the launching frame names" if facts.blocking_launches()
            and "File " not in text and ".py:" in text else "the debugger names")
    known = config_known(facts)

    def out(cat: str, conf: str, why: str) -> Diagnosis:
        if cat == "spec_kernel_limit" and setup.spec_k > 0:
            nums.setdefault("next_n", setup.spec_k + 1)
        return Diagnosis(category=cat, confidence=conf, rule="async_fault",
                         basis=f"{told} the faulting kernel {where}, {_WHAT.get(what or '', 'a kernel')}; {why}",
                         title=f"{title_of(cat)} (fault in {name})" if cat != "other" else f"GPU fault in {name}",
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
        past = facts.startup.get("state_index_past_pool")
        if past and (setup.spec_k or setup.prefix_cached_states or not known):
            # the report states the slot it read and the pool's size: a state index past the pool, whatever the batch
            nums.setdefault("state_index", past[0])
            nums.setdefault("num_state_blocks", past[1])
            if "state_index_past_pool" in facts.lines:
                ln, said = facts.lines["state_index_past_pool"]
                ev.insert(1, Evidence(text=said, line=ln, source="log"))
            return out("state_index", "medium", f"the report states it read state slot {past[0]} of a pool of "
                                                f"{past[1]}: the state indices handed the kernel a slot past the pool")
        if setup.spec_k and assert_text and _NON_NEGATIVE.search(assert_text.group(4)):
            # the kernel asserts an index / coordinate is not negative: under speculative decoding a row with no
            # accepted draft reads its state at num_accepted - 1 = -1 (the same class as a negative index in Python)
            return out("mixed_batch", "medium", f"with {', '.join(setup.why)} -> the kernel found a negative state "
                                                "index / coordinate: a row of the spec-decode batch without an accepted "
                                                "draft (num_accepted - 1 = -1)")
        if setup.spec_k:
            cat, why = hybrid_spec_fault_class(setup, facts.startup.get("structured_outputs_prose"))
            return out(cat, "medium", f"with {', '.join(setup.why)} -> {why}")
        if setup.mixed_evidence and not setup.prefix_cached_states:
            # (no drafts in the configuration the log shows, but the report's own print of the failing step holds spec
            # decodes beside other rows)
            return out("mixed_batch", "low", f"the report's {setup.mixed_evidence}: the kernel ran on a step that mixes "
                                             "spec decodes with other rows, whose state indices the builder splits by "
                                             "row kind")
        if setup.prefix_cached_states:
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
    if what == "attention" and setup.spec_k and uneven_decode(facts):
        return out("spec_kernel_limit", "medium", f"{uneven_decode(facts)} under speculative decoding: the decode "
                                                  "kernels take one query length per request (vLLM's TRTLLM decode "
                                                  "requires uniform query lengths) and got decodes of different 1 + k")
    if what in ("sampling", "gemm", "comm", "attention"):
        return out("other", "medium" if what in ("sampling", "comm") else "low",
                   "outside the hybrid / spec-decode state, batch and kernel-limit paths")
    vocab = sorted(set(facts.startup.get("vocab_sizes") or []))
    added = facts.startup.get("added_token_id_max")
    sent = facts.startup.get("prompt_token_id_max")
    if isinstance(sent, int) and vocab and sent >= vocab[0] and not (isinstance(added, int) and added >= vocab[0]):
        added = sent  # (the request's own token ids, past the embedding's rows: the same mismatch, from the client)
    if what == "index" and "indexselect" in name.lower() and vocab and isinstance(added, int) and added >= vocab[0]:
        # the same with the tokenizer's own word for it: an added token whose id is past the embedding's rows
        nums.update(vocab_size=vocab[0], added_token_id=added)
        return out("other", "medium", f"the tokenizer adds a token with id {added}, past the model's vocab_size "
                                      f"{vocab[0]}: the embedding lookup of that id (in a prompt, or copied into the "
                                      "drafts) indexes past its rows -- a tokenizer / checkpoint mismatch (embeddings "
                                      "not resized), outside the hybrid / spec-decode families")
    if what == "index" and "indexselect" in name.lower() and len(vocab) >= 2:
        # an index-select (an embedding lookup is one) past the rows of a table, with the report stating vocabularies
        # of different sizes: a token id from the larger one (a tokenizer's added tokens, a draft model's vocabulary)
        # looked up in the smaller embedding -- a model / tokenizer mismatch, whatever the setup around it
        nums["vocab_sizes"] = vocab
        return out("other", "medium", f"the report states vocabulary sizes that differ ({', '.join(map(str, vocab))}): "
                                      "a token id of the larger vocabulary looked up in the smaller embedding table "
                                      "indexes past its rows -- a tokenizer / draft-model vocabulary mismatch, outside "
                                      "the hybrid / spec-decode families")
    custom = _CUSTOM_LOGITS.search(" ".join(str(x) for x in (facts.command, facts.args.get("logits_processors")) if x))
    if what == "index" and custom:
        # PyTorch's gather / scatter / index kernel out of bounds, in a run with the operator's own logits processors
        # (they index the logits tensor with their token ids on the GPU): the processor's indices, not vLLM's
        return out("other", "medium", f"the run loads its own logits processors ({custom.group(0)}), which index the "
                                      "logits with their own token ids on the GPU: an id past the vocabulary trips "
                                      "this bounds check -- the processor's code, outside the hybrid / spec-decode "
                                      "families")
    ns = _NAMESPACE.match(name) if what is None else None
    if ns is not None and ns.group(1).lower() not in _KNOWN_NAMESPACES:
        # a kernel of a C++ namespace that neither vLLM, PyTorch nor the attention / GEMM libraries vLLM calls use (an
        # in-house plugin, a fork's extension): the fault is that library's, whatever the model around it
        return out("other", "medium", f"the kernel is in the C++ namespace {ns.group(1)}::, which is none of vLLM's, "
                                      "PyTorch's or the kernel libraries vLLM ships or calls -- a plugin or extension "
                                      "outside vLLM, outside the hybrid / spec-decode families")
    launched = _launching_statement(facts) if setup.hybrid is not False else None
    if launched is not None:
        cat, fr = launched
        slotless = setup.spec_k and "without a state slot" in (setup.mixed_evidence or "")
        if cat == "state_index" and slotless:
            # the state indices it reads hold -1 for a row of the step (a row the spec-decode path gave no slot): the
            # batch's rows, not the indices' width -- the class of a negative state index in Python
            cat = "mixed_batch"
        return out(cat, "medium", f"launches are synchronous (CUDA_LAUNCH_BLOCKING=1), so the statement that launched "
                                  f"it is exact: {fr.file.rsplit('/', 1)[-1]}:{fr.line} {fr.function}: "
                                  f"{(fr.code or '').strip()[:100]} -- "
                                  + (f"it indexes the Mamba/GDN state indices, and the report's {setup.mixed_evidence}"
                                     if slotless else "it indexes the Mamba/GDN state indices" if cat == "state_index"
                                     else "it indexes the step's batch rows (query starts, spec-decode masks, accepted "
                                          "counts)") + (f"; with {', '.join(setup.why)}" if setup.why else ""))
    # PyTorch's indexing kernels or an unknown kernel: the configuration decides
    # (the root error's frames: where the fault surfaced, or with CUDA_LAUNCH_BLOCKING=1 the launching statement)
    fake = LogException(exc_type="CUDA error", message=text[:300], log_line=lineno,
                        frames=list(facts.root.frames) if facts.root is not None else [])
    d = from_async(facts, fake, setup, base_numbers, batch_ev)
    d.basis = f"{told} the faulting kernel {where}, which does not place the fault in vLLM; " + d.basis
    return d

"""Rules that give a vLLM failure site (or a log's error) one category of vllm-diag's vocabulary.

A site is described by ``file`` (path inside vLLM, ``vllm/...``), ``function`` (qualified,
``Class.method``), ``condition`` (an assert's test, or the enclosing ``if`` tests of a raise),
``message`` (the template, or a log's message), ``exc`` (exception type). The same rules classify the
catalog's sites at build time and, at analysis time, an error no catalog site matches (a fork, a newer
release): what decides is *where* vLLM failed and *what* the check is about, never a particular
report's wording.

Order matters: the first rule that holds wins. Rules that keep near misses out of the hybrid/spec
categories (memory, weights, tokenizer, architectures, distributed set-up, platform support) come first.
``OVERRIDES`` are hand decisions for sites the rules get wrong; each says why.
"""

from __future__ import annotations

import re
from typing import Any, Callable

# ------------------------------------------------------------------------------------------------
# vocabularies (lower-case text)
# ------------------------------------------------------------------------------------------------

# (MiniMax-Text-01 / M1 are lightning-attention hybrids; MiniMax-M3 is a sparse-attention model, not one)
_MAMBA_FILE = re.compile(r"mamba|gdn|linear_attn|short_conv|/fla/|kda|lightning|causal_conv|ssd_|ssm|qwen3_next|qwen3_5|"
                         r"nemotron_h|granitemoehybrid|falcon_h1|jamba|zamba|bamba|plamo|lfm2|kimi_linear|minimax_text|"
                         r"minimax_linear|minimax_m1|olmo_hybrid")
_MLA_KERNEL_FILE = re.compile(r"deep_gemm|indexer|sparse_attn|flashmla|flash_mla|/mla/|mla_attention|sparse_mla|flashinfer|"
                              r"aiter|triton_mla|cutlass_mla|tree_attn|trtllm|rocm_attn|_mla|dsa|deepseek_v4|deepseek_v32|b12x|sparse_attention|"
                              r"minimax_m3|glm5|kimi_k3")
# (a query length, never the "seq_len" / "max_seq_len_kv" a q_len pattern finds inside longer names; the
# indexers' decode seq_lens are [batch, next_n])
_SPEC_WORDS = re.compile(r"next_n|num_speculative|speculative|spec_decode|spec decode|spec_token|spec token|draft|"
                         r"\bmtp\b|eagle|(?<![a-z])q_?len|query_len|query len|seqlen_q|seq_lens?_q|max_seqlen_q|q_seq|qo_len|"
                         r"seq_lens\.shape\[1\]|decode_threshold|reorder_batch|uniform query|uniform_decode|uniform decode|"
                         r"non-uniform|query rows|num_tokens.*per.*req|tokens per request")
_BATCH_WORDS = re.compile(r"num_decodes|num_prefills|num_spec_decodes|num_decode_tokens|num_prefill_tokens|spec_sequence_masks|"
                          r"\w*spec_token_masks?\b|\w*spec_token_ind\w*|"
                          r"spec_query_start|non_spec|has_initial_state|query_start_loc|num_accepted|split_decodes|"
                          r"\bdecodes?\b|\bprefills?\b|spec-decode and non-spec|\bmixed\b|mixed_qkvz?\.shape\[0\]|mismatched batch sizes|cu_seqlens|spec_token_indx|"
                          r"num_computed_tokens_p|prep_initial_states")
_STATE_WORDS = re.compile(r"state_ind|state index|state_idx|state_batch_ind|block_idx|cache_indices|conv_state_indices|"
                          r"ssm_state_indices|\bindices\.shape|"
                          r"mamba_block_size|mamba block size|block_table|block table|block_ids|num_blocks_per_req|"
                          r"mamba_cache_mode|cache mode|'align'|\ball mode|copy_spec|copy_meta|copy func|state_copy|"
                          r"pad_slot|null_block|blocks_per_kv|num_speculative_blocks|temporal|checkpoint")
_PAGE_WORDS = re.compile(r"page_size|page size|unify|uniform type|unified type|same number of block table entries|"
                         r"kv cache group|kv_cache_group|kvcachegroup|same kv cache group|hybrid kv cache manager|"
                         r"hybrid_kv_cache|kv_cache_spec|kvcachespec|kv cache spec|attention spec|same attention spec|"
                         r"same window size|same quantization|kv_sharing|kv cache layout|kv_cache_layout|drafting layers|"
                         r"kv_cache_tensor|shared_by|layer_stride|block_stride")
_KERNEL_LOOKUP = re.compile(r"no (?:[\w-]+ ){0,3}kernels? (?:found|available|for)|kernels? not found|no suitable kernel|"
                            r"missing [\w-]+ kernel|cannot find (?:a |any )?(?:suitable |matching )?(?:[\w-]+ )?kernel")
# a kernel's parameter tuple with a query length per request above 1 (AITER's "mtp:4", "q_len_per_req=3",
# "max_seqlen_q: 2"): the decode query length speculative decoding sets
# (FlashMLA names it s_q: "s_q * h_q must be <= 128 for sparse fp8 decode (got s_q = 5, h_q = 64)")
# (AITER's asm MLA prints it in parentheses: "max_seqlen_q (4) > 1 is only supported with num_heads == 16 or 128")
_QUERY_LEN_PARAM = re.compile(r"\b(?:mtp|q_len_per_req\w*|q_?seq_?len|max_seqlen_qo?|seqlen_q|next_n|s_q)\s*(?:[:=]\s*|\(\s*)"
                              r"(?:[2-9]|\d\d)\b")
_BLOCK_WORDS = re.compile(r"block_size|block size|kernel_block|hash_block|tokens_per_block|tokens_per_hash|"
                          r"block_sizes|prefix-match unit|alignment")
_CAPTURE_WORDS = re.compile(r"cudagraph|cuda graph|cuda_graph|capture_size|capture size|capturing|full_cuda_graph|"
                            r"cudagraph_mode|graph capture|piecewise")
_BUDGET_WORDS = re.compile(r"max_num_batched_tokens|token_budget|token budget|max_num_scheduled_tokens|"
                           r"num_lookahead|lookahead_slots|long_prefill_token_threshold")
_PREFIX_WORDS = re.compile(r"prefix caching|prefix_caching|prefix cache|prefix-caching|enable_prefix_caching|hit rate")

# near misses: never one of the hybrid/spec categories
_OTHER_TEXT = re.compile(
    r"out of memory|\boom\b|gpu_memory_utilization|no available memory|insufficient memory|not enough memory|"
    r"memory profil|available kv cache memory|kv cache is needed|free memory|"
    r"weights? (were )?not (initialized|found|loaded)|\bcheckpoints?\b|safetensors|tokenizer|chat template|"
    r"architecture|not supported (for|by|on) (this )?(model|platform|device|gpu|cpu|rocm|xpu|tpu)|"
    r"nccl|all_reduce|allreduce|world_size|rank \d|distributed|ray |ray\.|placement group|"
    r"\blora\b|multimodal|\bmm_|\bimages?\b|\baudio\b|\bvideo\b|\bpooling\b|\bpooler\b|\bembedding|tool_call|"
    r"\breasoning\b|structured output|\bguided\b|grammar|logprob|\bsampling\b|\bsampler\b|temperature|\btop_p\b|"
    r"\btop_k\b|penalt|detokeniz|quantization method|trust_remote_code|hf_config|huggingface|\bdownload|"
    r"\brevision\b|served_model_name|api_key|\bport\b|\bhost\b")
_OTHER_FILE = re.compile(r"config/(load|lora|multimodal|observability|pooler|profiler|reasoning|speech_to_text|"
                         r"structured_outputs|kv_events|ec_transfer|weight_transfer|device|kernel|offload|quantization|"
                         r"model_arch|utils)\.py|/lora|/pooling|/multimodal|tokeniz|/entrypoints/|/distributed/|"
                         # (the tool-call and reasoning parsers outside entrypoints/ in newer releases)
                         r"/tool_parsers/|/reasoning_parsers?/|/reasoning/|"
                         r"/benchmarks/|/profiler/|/usage/|/layers/quantization/(?!kv_cache|turboquant)")

# a non-CUDA platform or a backend missing from the install (see the other_platform_backend rule)
_PLATFORM = re.compile(r"\b(?:on|for|with|in|by) (?:the )?(?:xpu|tpu|hpu|neuron)\b|"
                       r"\b(?:xpu|tpu|hpu|cpu) (?:backend|fallback|model runner|platform|gdn|attention)\b|"
                       r"\bxpu\b.{0,60}\b(?:not supported|does not support|only supports?)|"
                       r"\bonly supported on (?:xpu|rocm|cuda|cpu|tpu|hpu|nvidia|amd)\b|\bnot importable\b|"
                       r"\bcurrent platform is\b|\bwas requested but\b")

Site = dict[str, Any]
Pred = Callable[[str, str, str, str, str], bool]  # file, function, text (condition+message), exc, condition


def _has(rx: re.Pattern[str]) -> Pred:
    return lambda f, fn, t, e, c: bool(rx.search(t))


def _file(rx: str) -> re.Pattern[str]:
    return re.compile(rx)


def _mamba_code(f: str, fn: str) -> bool:
    """Mamba/GDN/linear-attention code: its file, or a function named for it in a shared module
    (``mamba_get_block_table_tensor`` in attention/backends/utils.py)."""
    return bool(_MAMBA_FILE.search(f)) or bool(re.match(r"_?(?:mamba|gdn|ssm|linear_attn)_", fn.rsplit(".", 1)[-1].lower()))


def _head_or_quant_block(core: str) -> bool:
    """A block-size-looking check about something else: the only 'block' is a weight-quantization block, or the
    check is about the model's head shape and names no KV block size."""
    t2 = re.sub(r"mxfp4[ _]block[ _]size|fp4 block|quantization block|scale block", "", core)
    if not _BLOCK_WORDS.search(t2):
        return True
    return bool(re.search(r"head_dim|head_size|headdim|num_heads|\bheads? of\b", t2)) and not re.search(
        r"block_size|block size|kernel_block|tokens_per_block", t2)


def _is_none_check(c: str) -> bool:
    return bool(re.fullmatch(r"[\w.\[\]'\"()]+ is not None( and [\w.\[\]'\"()]+ is not None)*|isinstance\(.*\)|"
                             r"not isinstance\(.*\)|hasattr\(.*\)", c.strip()))


# (rule id, category, predicate). Evaluated in order; the first that holds decides.
RULES: list[tuple[str, str, Pred]] = [
    # --- near misses first --------------------------------------------------------------------
    ("other_file", "other", lambda f, fn, t, e, c: bool(_OTHER_FILE.search(f))),
    ("other_memory_weights_platform", "other",
     lambda f, fn, t, e, c: bool(_OTHER_TEXT.search(t)) and not re.search(
         r"mamba cache block|page.size|next_n|state_ind|num_speculative|cudagraph|block_size|"
         # a multi-token (speculative) decode's query length checked against a parallel layout (DCP world size)
         r"max_qo_len|\bqo_len|\bq_len|multi-token (?:verify|decode)", t)),
    # a file the install lacks (a JIT kernel's headers -- DeepGEMM's "Failed to open: .../paged_mqa_logits.cuh" --, a
    # shared object, a config): the image, not the batch, the block or the drafts
    ("other_missing_file", "other",
     lambda f, fn, t, e, c: bool(re.search(r"failed to open\b|no such file or directory|cannot open (?:shared object )?file|"
                                           r"could not open file", _core(t)))),
    ("other_type_narrowing", "other",
     lambda f, fn, t, e, c: e == "AssertionError" and _is_none_check(c) and not re.search(
         r"state_ind|state_idx|spec_|non_spec|num_accepted|query_start|has_initial|block_idx|cache_indices|prefill_|is_prefill|"
         r"decode", c)),
    ("other_duplicate_layer", "other", lambda f, fn, t, e, c: "duplicate layer name" in t),
    # a check whose both sides are the model code's own declarations (the state shapes a Mamba layer declares
    # vs the state-copy functions it provides, a copy function's identity, the rank of a state tensor a copy
    # function expects): it fails the same way for every configuration and batch -- an implementation bug of
    # that model (or plugin/fork), not a state-index or page-size mismatch of the configuration
    ("other_model_declaration", "other",
     lambda f, fn, t, e, c: bool(re.search(r"copy_funcs?\b|copy funcs?\b|state_copy_func|declares .{0,60}states?\b"
                                           r"|provides .{0,60}copy", _core(t)))),
    # a quantized KV cache that cannot be laid out for a hybrid model: the quantization needs to know which layers
    # hold an attention KV cache and which a Mamba state (vllm/model_executor/layers/quantization/turboquant/config.py
    # get_boundary_skip_layers: "TurboQuant KV cache requires identifiable full-attention layers, but none were found
    # in the hybrid model config") -- the hybrid KV layout, whatever the exception type
    ("quantized_kv_on_hybrid", "kv_page_size",
     lambda f, fn, t, e, c: bool(re.search(r"kv[ _-]?cache", _core(t)))
     and bool(re.search(r"\bhybrid\b|\bmamba\b|linear[ -]attention|full[ -]attention layers", _core(t)))
     and bool(re.search(r"quant|fp8|fp4|int8|int4|kv_cache_dtype|kv cache dtype|scales?\b", _core(t) + " " + f))),
    # a feature combination the platform or backend does not implement (yet): a capability gap that vLLM
    # states, not a mismatch between components (the page-size NotImplementedError says "cannot unify")
    ("other_not_implemented", "other",
     lambda f, fn, t, e, c: e == "NotImplementedError" and bool(re.search(
         r"(does|do|is|are)? ?not (yet )?(supported|support|implemented)|unsupported|only supports?", t))
     and not bool(re.search(r"page.size|cannot unify|cannot be padded", t))),
    # the same statement in any exception type: a fixed text saying a feature combination is not supported (no
    # values, no limit): "Shuffle KV cache layout is not supported with speculative decoding" is a capability gap
    # of that backend (an opt-in layout; the fix is to turn it off), not a page-size, index or kernel-limit mismatch
    # ("only supports query length <= 1 + k" states a limit and stays with the families)
    ("other_capability_gap", "other",
     lambda f, fn, t, e, c: e in ("AssertionError", "ValueError", "RuntimeError") and bool(re.search(
         r"\bis not (?:yet )?supported (?:with|for|on|when|in)\b|\bare not (?:yet )?supported (?:with|for|on)\b|"
         r"\bdoes not (?:yet )?support\b|\bnot (?:yet )?implemented\b", _core(t)))
     and "{" not in _core(t).replace("{{", "") and not bool(re.search(
         r"page.size|cannot unify|cannot be padded|only supports?|<=|>=|at most|at least|\d", _core(t)))
     # prefix caching a model does not support is its own class (prefix_cache_degraded); so are the hybrid KV
     # cache manager and the CUDA-graph modes
     and not bool(_PREFIX_WORDS.search(t) or _CAPTURE_WORDS.search(t) or "hybrid kv cache manager" in t)),
    # the runner's own bookkeeping counted twice: one block table per KV-cache group (the number of tables the
    # runner passes vs the number of groups the same code registered) -- a structural disagreement between two
    # parts of vLLM (a runner variant, pipeline stages), independent of any index, width or batch
    ("other_runner_bookkeeping", "other",
     lambda f, fn, t, e, c: bool(re.search(r"len\((?:self\.)?\w*block_tables\)\s*(?:==|!=)[^,]*num_groups|"
                                           r"num_groups\s*(?:==|!=)\s*len\((?:self\.)?\w*block_tables\)|"
                                           r"expected (?:\{[\w.]*num_groups\}|\d+) block tables,? got", _core(t)))),
    # a tensor's device or dtype (or the GPU generation a kernel needs) against what a kernel accepts: an input
    # contract of that kernel, the same for every batch and draft length -- not a shape, width or limit of the
    # families (a contiguity or stride check is a layout, and stays with them)
    ("other_device_dtype_contract", "other",
     # (a message that says it outright: "... inputs must be on the same device", whatever tensors the test lists)
     lambda f, fn, t, e, c: "must be on the same device" in t or bool(re.search(r"\.device\b|device_type|\bdtype\b|\.dtype\b|is_cuda\b|same (?:gpu|device)|"
                                           r"requires? (?:bf16|fp16|fp32|bfloat16|float16|sm_?\d+\w*|cuda tensors)|"
                                           r"must be on (?:the )?(?:same )?(?:cpu|gpu|device|query device)", _core(t)))
     and not bool(re.search(r"shape|size|len\(|numel|stride|contiguous|ndim|\bdim\b|num_|batch|page|block_size|"
                            r"blocks\b|block size|"
                            r"next_n|\bq_len|seqlen|topk|heads", _core(t).replace("kv_cache_dtype", "")
                            .replace("cache_dtype", "")))),
    # a platform or backend that is not there: a check that names a non-CUDA platform (XPU, TPU, HPU, the CPU
    # backend or a CPU fallback kernel), or a backend that was requested but is not importable / not built for
    # the current platform -- a capability of that install, the same for every batch and draft length
    # (vllm/model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py _resolve_gdn_prefill_backend,
    # vllm/v1/attention/ops/merge_attn_states.py "CPU fallback does not support FP8 output",
    # vllm/model_executor/layers/mamba/ops/cpu/gdn_attention.py, platforms/xpu.py)
    ("other_platform_backend", "other",
     lambda f, fn, t, e, c: (bool(_PLATFORM.search(_core(t))) or bool(
         re.search(r"/ops/cpu/|cpu_model_runner|platforms/(?:cpu|xpu|tpu)\.py", f)) and bool(
         re.search(r"not (?:yet )?supported|does not support|only supports?|not implemented|should be|requires?", _core(t))))
     and not bool(re.search(
         r"page.size|cannot unify|cannot be padded|next_n|\bq_len|qo_len|seqlen_q", _core(t)))),
    # how flags were given, or a feature outside the families (a profiler, the multimodal encoder's graphs, the
    # compile backend's name, a wrapper's missing attribute): two settings given together that exclude each other
    # fail the same way for every model and batch (vllm/engine/arg_utils.py create_engine_config
    # "cudagraph_capture_sizes and compilation_config.cudagraph_capture_sizes are mutually exclusive",
    # vllm/config/compilation.py "encoder_cudagraph_max_images_per_batch must be non-negative")
    # a setting's value that is not one of the names the code knows (a typo, an option of another release):
    # "Unknown prefix caching hash algorithm: X. Must be one of ...", "Unknown KV cache layout X. Valid layouts: ..."
    ("other_unknown_choice", "other",
     lambda f, fn, t, e, c: bool(re.search(r"\b(?:unknown|unrecognized|unsupported|invalid)\b[^.{]{0,60}(?:\{[^}]*\})?"
                                           r"[^.]{0,30}[.:;,]?\s*(?:must be one of|valid (?:options|values|choices|"
                                           r"layouts|kinds|algorithms|backends)(?: are)?|expected one of|choose from|"
                                           r"supported (?:values|options) are)", _core(t)))
     # (a kernel's query length per request among the values -- "unsupported max_seqlen_q=5 ..., supported values are
     # 1, 2, 4" -- is the decode length speculative decoding sets: spec_query_len_param below)
     and not _QUERY_LEN_PARAM.search(t)),
    # a backend the flags or the GPU do not allow ("Unsupported KDA prefill backend: {backend}", "... prefill backend
    # must be one of 'auto', 'triton' or 'fused'", "FlashInfer fused KDA decode requires CUDA SM100 or SM103,
    # bfloat16 activations ..."): the install's or the flag's choice, the same for every batch and draft length
    ("other_backend_choice", "other",
     lambda f, fn, t, e, c: bool(re.search(r"\bunsupported [\w -]{0,40}\bbackend\b|\bbackend must be one of\b|only supports "
                                           r"the [\w -]{0,30}\bbackend\b|\brequires (?:cuda )?sm ?1?\d{2}\b|\brequires cuda "
                                           r"sm\d|requires its [\w.]+ api\b", _core(t)))
     and not bool(re.search(r"page.size|cannot unify|next_n|\bq_len|qo_len|seqlen_q|query len|specul|draft|\bmtp\b|"
                            r"eagle", _core(t)))),
    ("other_flag_usage", "other",
     lambda f, fn, t, e, c: bool(re.search(r"mutually exclusive|\bprofiler\b|\bproton\b|encoder_cudagraph|"
                                           r"cudagraph_mm_encoder|language-model-only|not exists in the runnable|"
                                           r"invalid backend for piecewise", _core(t)))
     and not bool(re.search(r"page.size|cannot unify|next_n|specul|draft|\bdecode\b|\bq_len|max_num_seqs|mamba",
                            _core(t)))),
    # --- sibling classes with a clear vocabulary ----------------------------------------------
    # the allocated Mamba/conv state slots ("cache lines") against the batch: a batch (a CUDA-graph capture
    # size, max_num_seqs) larger than the state blocks the memory left -- the Mamba block budget, not an index
    ("mamba_cache_lines_vs_batch", "mamba_block_budget",
     lambda f, fn, t, e, c: bool(re.search(
         r"(num_cache_lines|cache_lines|cache lines|\b(?:conv_|ssm_|temporal_)?states?\.(?:size\(0\)|shape\[0\]))\s*"
         r"(?:>=|>|<=|<|==)\s*(?:batch|num_reqs|num_seqs|bs|padded_batch|batch_size)\b|"
         r"\b(?:batch|num_reqs|num_seqs|bs|padded_batch|batch_size)\s*(?:>=|>|<=|<|==)\s*"
         r"(num_cache_lines|cache_lines|\b(?:conv_|ssm_|temporal_)?states?\.(?:size\(0\)|shape\[0\]))", _core(t)))),
    ("mamba_blocks_vs_max_num_seqs", "mamba_block_budget",
     lambda f, fn, t, e, c: bool(re.search(r"max_num_seqs.{0,80}mamba|mamba.{0,40}(cache )?blocks?.{0,80}max_num_seqs|"
                                           r"mamba cache blocks|num_mamba_blocks|mamba_num_blocks|"
                                           r"max_num_reqs > kv_cache_config.num", t))),
    # the KV block size against the per-step token budget: a hybrid's attention block is raised until its page
    # holds a Mamba state (often 500-4000 tokens), and Mamba 'align' mode must schedule a whole block in one step
    # (vllm/config/vllm.py VllmConfig.validate_block_size, 0.18+: "In Mamba cache align mode, block_size (N) must
    # be <= max_num_batched_tokens (M)"; long_prefill_token_threshold >= block_size) -- a budget too small for
    # the block, not a divisibility of the block
    ("block_size_vs_token_budget", "token_budget",
     lambda f, fn, t, e, c: bool(re.search(
         r"block_size\W{0,6}\s*(?:<=|<|>=|>|must be <=|must be >=)\s*\W{0,6}[\w.]*(?:max_num_batched_tokens|"
         r"max_num_scheduled_tokens|long_prefill_token_threshold|token_budget)|"
         r"(?:max_num_batched_tokens|max_num_scheduled_tokens|long_prefill_token_threshold|token_budget)\s*"
         r"(?:<=|<|>=|>)\s*(?:self\.)?[\w.]*block_size\b", _core(t)))),
    ("spec_tokens_vs_token_budget", "token_budget",
     lambda f, fn, t, e, c: bool(_BUDGET_WORDS.search(t)) and bool(re.search(r"spec|draft|lookahead", t))),
    ("hash_block_alignment", "block_size_alignment",
     lambda f, fn, t, e, c: bool(re.search(r"hash_block_size|tokens_per_hash|tokens_per_block|prefix-match", t))),
    # FlashInfer's TRTLLM-gen runner: numTokensPerPage is the KV block size in tokens (a hybrid's raised block,
    # 544 or 1568 tokens, is no power of 2) -- an alignment of the block, not a page-size unification
    ("kernel_tokens_per_page", "block_size_alignment",
     lambda f, fn, t, e, c: "numtokensperpage" in _core(t) and "power" in _core(t)),
    # the TRTLLM-gen runner finds no compiled kernel for the call's parameters: its generation kernels are chosen by
    # the query tokens per request (tileSizeQ; 1 + k under drafts) and heads per KV head, so with drafts it is the
    # decode kernel's limit (without drafts the precondition check makes it another failure)
    ("trtllm_kernel_selection", "spec_kernel_limit",
     # (the runner's file, or the launcher a message names: "Error in function 'trtllm_paged_attention_launcher' at
     # .../trtllm_fmha_kernel_launcher.cu:272: Missing TRTLLM-GEN kernel (decode): ...")
     lambda f, fn, t, e, c: ("trtllm" in f or "trtllm" in _core(t)) and bool(re.search(
         r"kernels? not found|missing trtllm-gen kernel", _core(t)))),
    # (a kernel lookup that lists its parameters -- "no kernel found for ..., max_seqlen_qo=2, page_size=1" -- names
    # a page size as one of the shapes it has no kernel for: the kernel's limit, not the KV layout)
    ("kv_page_unification", "kv_page_size",
     lambda f, fn, t, e, c: bool(_PAGE_WORDS.search(t)) and not _KERNEL_LOOKUP.search(_core(t))
     and not _QUERY_LEN_PARAM.search(t) or bool(re.search(
         # (a KV-cache spec's merge -- FullAttentionSpec.merge, KVCacheSpec.merge: the layers of one group must
         # agree -- not other merges: merge_attn_states merges attention outputs, the DCP indexer merges logits)
         r"unify_|page_size|get_kv_cache_groups|_get_kv_cache_groups|kv_cache_groups_uniform|spec\.merge|"
         r"uniformtypekvcachespecs|_align_hybrid_block_size.*page", fn.lower()))
     # the functions that allocate / reshape / re-stride the KV-cache tensors from the groups' specs:
     # a shape or size check there is a page / layout mismatch (gpu_model_runner _reshape_kv_cache_tensors,
     # _allocate_kv_cache_tensors; worker/gpu/attn_utils _reshape_kv_cache, _restride_*; kv_cache_interface)
     or (bool(re.search(r"(reshape|allocate|restride|init(ialize)?)_?\w*kv_cache|kv_cache\w*_(tensors|storage|layout)|"
                        r"restride_|_kv_first_|blocks_first", fn.lower()))
         and e in ("AssertionError", "ValueError", "RuntimeError", "NotImplementedError")
         and bool(re.search(r"shape|size|stride|numel|layout|==|%", t)))),
    # an attention helper of the speculative-decoding path (vllm/v1/attention/backends/utils.py
    # reshape_query_for_spec_decode, the indexer's update_draft_decode_metadata) comparing the decode tokens with
    # the decode requests: the spec-as-decode kernels (FlashMLA, sparse MLA, the indexer) need every decode to carry
    # the same 1 + k query tokens, so a batch with a decode of another length (a padded / empty entry, a request
    # near its max_tokens) fails there -- a kernel limit under speculative decoding
    ("spec_decode_token_rows", "spec_kernel_limit",
     lambda f, fn, t, e, c: bool(re.search(r"/attention/|_mla|/mla/|indexer", f)) and not _mamba_code(f, fn)
     and bool(re.search(r"spec_decode|spec_as_decode|draft_decode|for_spec\b", fn.rsplit(".", 1)[-1].lower()))
     and bool(re.search(r"total_tokens|num_decode_tokens|num_tokens|num_decodes|batch_size|num_reqs", _core(t)))
     and bool(re.search(r"%|==|!=|<=|>=|<|>|divisible", _core(t)))),
    ("spec_kernel_next_n", "spec_kernel_limit", lambda f, fn, t, e, c: "next_n" in t),
    # a kernel library's lookup / check that prints its parameter tuple with a query length per request above 1
    # (AITER's "mtp:4", "q_len_per_req=3", "max_seqlen_q: 2"): the decode query length speculative decoding
    # sets decides, even where the same tuple also names a block size
    ("spec_query_len_param", "spec_kernel_limit", lambda f, fn, t, e, c: bool(_QUERY_LEN_PARAM.search(t))),
    ("kernel_block_alignment", "block_size_alignment",
     lambda f, fn, t, e, c: bool(_BLOCK_WORDS.search(t)) and bool(re.search(
         r"divis|multiple|align|support|must divide|% |kernel|backend|not a power|power of|common block size", t))
     and not bool(_STATE_WORDS.search(t.replace("block_size", "")))
     # a model's head shape or a weight-quantization block (MXFP4's 32-element scale block) is not the KV block
     and not _head_or_quant_block(t)),
    # a Mamba/GDN state-index tensor whose second dimension (the per-request block columns: one state slot
    # per block with prefix caching, plus the speculative blocks of the drafts) disagrees with what it is copied
    # into: a block-table width mismatch, even when it happens while CUDA graphs are captured (dimension 0,
    # the rows of the batch, is the capture size's business)
    ("hybrid_state_width", "state_index",
     lambda f, fn, t, e, c: bool(_MAMBA_FILE.search(f)) and bool(re.search(
         r"state_ind\w*|block_idx\w*|block_table\w*|cache_indices", _core(t)))
     and bool(re.search(r"(?:non-singleton )?dimension 1\b|\bdim(?:ension)?\s*=\s*1\b", _core(t)))),
    # what the check compares decides over why the value is fixed: an attention kernel's wrapper planned (at
    # capture time or per step) for one query length per request and handed another compares the query
    # length, which speculative decoding sets (1 + k, shorter near max_tokens, longer when a chunked prefill
    # tail is classed as a decode) -- a kernel limit, even when its message says the shape is frozen in a CUDA
    # graph; a check of capture sizes or batch sizes stays with cudagraph_capture
    ("spec_query_len_planned", "spec_kernel_limit",
     lambda f, fn, t, e, c: bool(re.search(r"q_len_per_req|qo_len|qseqlen|max_seqlen_q|seqlen_q|query_len\b|"
                                           r"query length|tokens per request", _core(t)))
     and bool(re.search(r"\bwrapper\b|\bplann?ed\b|\bplan\b|\bkernel\b|heuristic", _core(t)))
     and not bool(re.search(r"capture.?sizes?|batch.?size|num_reqs|max_num_seqs", _core(t)))),
    # the dummy batch of a CUDA-graph capture / profiling run (padded to a capture size; with speculative
    # decoding a uniform decode of max_num_seqs x (1 + k) tokens) against the runner's token buffers
    # (max_num_tokens = max_num_batched_tokens): capture sizes vs the token budget
    ("capture_tokens_vs_token_budget", "cudagraph_shape",
     lambda f, fn, t, e, c: bool(re.search(r"_dummy_run|capture|profile_cudagraph|profile_run", fn.lower()))
     and bool(re.search(r"num_tokens\w*\s*(?:<=|<|>=|>)\s*(?:self\.)?max_num_tokens\b|"
                        r"(?:self\.)?max_num_tokens\s*(?:<=|<|>=|>)\s*num_tokens", _core(t)))),
    # an MLA decode kernel's scheduler metadata against the persistent CUDA-graph buffer it is copied into: the
    # metadata's rows follow the query tokens per KV head (max_query_len x heads, vllm/v1/attention/backends/mla/
    # flashmla.py _build_decode: "assert n <= self.cg_buf_tile_scheduler_metadata.size(0)"), and the query length is
    # what speculative decoding raises to 1 + k -- the kernel's decode-width limit, not the capture sizes
    ("mla_scheduler_metadata_vs_buffer", "spec_kernel_limit",
     lambda f, fn, t, e, c: bool(_MLA_KERNEL_FILE.search(f)) and not _mamba_code(f, fn)
     and bool(re.search(r"\w*tile_scheduler_metadata\w*", _core(t)))
     and bool(re.search(r"<=|>=|<|>|==|\bsize\(0\)|\bshape\[0\]", _core(t)))),
    # a Mamba/GDN/linear-attention builder's check of the batch's query length against 1 + k (Bailing's "only supports
    # speculative decoding with query length <= 1 + number of speculative tokens"): a decode row longer than a spec
    # decode -- ragged drafts or a prefill tail classed as a decode -- even where the check sits in the capture path
    ("hybrid_query_len_vs_spec", "mixed_batch",
     lambda f, fn, t, e, c: _mamba_code(f, fn) and bool(re.search(r"query_len|query length", _core(t)))
     and bool(re.search(r"num_spec|spec(?:ulative)?_tokens|speculative", _core(t)))
     and not _CAPTURE_WORDS.search(_core(t))),  # a check of the capture sizes stays with cudagraph_capture
    ("cudagraph_capture", "cudagraph_shape",
     lambda f, fn, t, e, c: bool(_CAPTURE_WORDS.search(t)) or bool(re.search(
         r"cudagraph_dispatcher|compilation/cuda_graph|cudagraph_utils|cuda_piecewise", f))
     or bool(re.search(r"capture|cudagraph|dummy_run", fn.lower())) and bool(_MAMBA_FILE.search(f))),
    # an attention kernel (or its planned wrapper) refusing the query length per request: with speculative
    # decoding every decode carries 1 + k tokens (FlashInfer q_len_per_req, AITER qseqlen, max_seqlen_q)
    ("spec_query_len_limit", "spec_kernel_limit",
     lambda f, fn, t, e, c: bool(re.search(r"q_len_per_req|qo_len|qseqlen|max_seqlen_q|seqlen_q|query_len|q_len\b|"
                                           r"query length", t))
     and bool(re.search(r"kernel|wrapper|planned|support|heuristic|expect|must|limit|exceed|only", t))
     and not bool(re.search(r"\bprefill\b(?!\s*[:=]\s*0)", t) and not re.search(r"decode", t))),
    ("spec_kernel_limit", "spec_kernel_limit",
     lambda f, fn, t, e, c: bool(_MLA_KERNEL_FILE.search(f)) and bool(_SPEC_WORDS.search(t))),
    ("spec_backend_support", "spec_kernel_limit",
     lambda f, fn, t, e, c: bool(re.search(r"(speculative|spec decod|spec-decod|draft|mtp).{0,60}(not supported|"
                                           r"unsupported|does not support|only supports|requires)|"
                                           r"(not supported|unsupported|does not support).{0,60}(speculative|spec decod|draft)",
                                           t)) and bool(re.search(r"attention|backend|mla|kernel|flashinfer|"
                                                                  r"flashmla|aiter|triton|metadata", t + f))),
    # a boolean mask of the wrong length inside Mamba/GDN code ("The shape of the mask [7] at index 0 does not
    # match the shape of the indexed tensor [9]"): the builders' boolean masks are per-row masks of the step's batch
    # (gdn_attn.py build: block_table_tensor[non_spec_sequence_masks_cpu, 0], query_lens_cpu[spec_sequence_masks_cpu]),
    # so rows counted two ways disagree -- the batch split, whatever the masked tensor holds (state indices too)
    ("hybrid_mask_rows", "mixed_batch",
     lambda f, fn, t, e, c: _mamba_code(f, fn) and "shape of the mask" in t
     and not bool(re.search(r"shape of the mask \[[^\]]*\] at index [1-9]", t))),
    # an index out of range inside Mamba/GDN code whose statement indexes the step's batch (query start locations,
    # spec-decode masks, accepted-draft counts) and no state or block: the rows of the batch disagree
    ("hybrid_batch_index", "mixed_batch",
     lambda f, fn, t, e, c: _mamba_code(f, fn) and (e == "IndexError" or bool(re.search(
         r"out of bounds|index out of range|shape of the mask", t)))
     and bool(_BATCH_WORDS.search(c.lower())) and not bool(_STATE_WORDS.search(c.lower()))),
    # a split of the step's rows by its decode / prefill counts inside Mamba/GDN code that does not add up
    # (mamba_attn.py `torch.split(state_indices_tensor, [num_decodes, num_prefills])`): the batch's composition is
    # counted two ways, even when the rows split are state indices
    ("hybrid_batch_split", "mixed_batch",
     lambda f, fn, t, e, c: _mamba_code(f, fn) and bool(re.search(r"split_with_sizes|split_sizes", t))),
    # a None where Mamba/GDN code expects one side of the builder's spec / non-spec split (kda.py
    # `non_spec_state_indices_tensor[...]`: "'NoneType' object is not subscriptable"): the builder gives a step with
    # only spec decodes (or none) no tensor for the other side, and the layer assumed the batch held both
    ("hybrid_spec_split_none", "mixed_batch",
     lambda f, fn, t, e, c: _mamba_code(f, fn) and "nonetype" in t and bool(re.search(r"\b(?:non_)?spec_\w+", c.lower()))),
    # an index out of range inside Mamba/GDN code -- or an illegal memory access in one of its kernels --
    # indexes a state, a conv cache line, a block or a chunk table
    ("hybrid_index_error", "state_index",
     lambda f, fn, t, e, c: _mamba_code(f, fn) and (e == "IndexError" or bool(re.search(
         r"out of bounds|index out of range|list index|indices? .{0,30}(out of|exceed)|illegal (memory )?access|"
         r"illegal address", t)))),
    ("hybrid_mixed_batch", "mixed_batch",
     lambda f, fn, t, e, c: _mamba_code(f, fn) and bool(_BATCH_WORDS.search(t))
     and not bool(_STATE_WORDS.search(t))),
    ("hybrid_state_index", "state_index",
     lambda f, fn, t, e, c: (_mamba_code(f, fn) or "block_table" in f or "mamba_utils" in f)
     and bool(_STATE_WORDS.search(t))),
    ("mamba_state_copy", "state_index", lambda f, fn, t, e, c: "v1/worker/mamba_utils" in f or
     ("single_type_kv_cache_manager" in f and "mamba" in fn.lower())),
    ("prefix_caching_unavailable", "prefix_cache_degraded", _has(_PREFIX_WORDS)),
    ("hybrid_batch_any", "mixed_batch",
     lambda f, fn, t, e, c: bool(re.search(r"attention/backends/(gdn|mamba\d?|linear|short_conv)_attn", f))
     and bool(re.search(r"build|split|decode|prefill", fn.lower()))),
]

# Hand decisions where the rules above are wrong; keyed by (file suffix, function, text substring).
OVERRIDES: list[tuple[str, str, str, str, str]] = [
    # The GDN builder's capture guard speaks of capture sizes but is raised while building metadata for
    # a decode-only CUDA-graph batch: a CUDA-graph shape problem (vLLM gdn_attn.py, GDNAttentionMetadataBuilder
    # .build_for_cudagraph_capture; README family E), not a mixed batch.
    ("gdn_attn.py", "build_for_cudagraph_capture", "decode-only full cudagraph", "cudagraph_shape", "gdn_capture_guard"),
    # Its next check compares the capture batch's accepted-token counts with its draft counts, row for row (both from
    # the query starts): the spec-decode rows' accepted-token bookkeeping in the builder (D), not a capture size --
    # as the reports of it are labelled
    ("gdn_attn.py", "build_for_cudagraph_capture", "num_accepted_tokens.shape", "mixed_batch",
     "gdn_capture_accepted_rows"),
    # FlashInfer's ReplaySSM keeps a Mamba layer's recurrent state for each draft position of a spec-decode step (0.32+:
    # its buffer must hold 1 + k states, the cache mode must keep one slot, its backend must be FlashInfer's): how the
    # Mamba state is held under drafts (B), not an attention kernel's query-length limit
    ("config/vllm.py", "validate_mamba_cached_kernel", "replayssm speculative decoding requires", "state_index",
     "replayssm_spec_state"),
    # "num_decodes: X, num_spec_decodes: Y" (gdn_attn.py build, 0.17.x, vllm#34845): the mixed-batch assert itself.
    ("gdn_attn.py", "build", "num_decodes", "mixed_batch", "gdn_mixed_assert"),  # (needles: lower case)
    # vLLM's fast_plan_decode is FlashInfer's decode plan for CUDA-graph mode (its own copy of FlashInfer's plan, whose
    # check is guarded by is_cuda_graph_enabled): the indices against the buffer allocated for the graphs
    ("v1/attention/backends/flashinfer.py", "fast_plan_decode", "allocated buffer", "cudagraph_shape",
     "fast_plan_decode_graph_buffer"),
    # vllm/platforms/interface.py (0.32+): the block size that update_block_size_for_backend aligned so one
    # attention page covers a Mamba/GDN state page (hybrids), or so quantized and unquantized KV pages share the
    # block pool, is one the attention backend does not support -- the block-size alignment sibling (README family
    # E), as "No common block size" already is: the fix is a block size both the alignment and the backend accept
    ("platforms/interface.py", "_check_aligned_block_size", "aligned kv cache block size", "block_size_alignment",
     "aligned_block_rejected"),
    ("platforms/interface.py", "_align_heterogeneous_kv_block_size", "page", "kv_page_size",
     "heterogeneous_kv_page_alignment"),
    # gpu_model_runner.py calculate_reorder_batch_threshold (0.11.0): one backend takes decodes of 1 + k tokens
    # (spec decodes as decodes), another only single-token ones -- an attention kernel's query-length limit under
    # drafts (README family C), as the MLA builders' "reorder_batch_threshold must be 1" already is; later
    # releases take the smaller threshold instead of raising
    ("gpu_model_runner.py", "calculate_reorder_batch_threshold", "reorders decodes with threshold", "spec_kernel_limit",
     "reorder_threshold_conflict"),
    # V2 runner's adaptive verification (0.31+): its decode graphs replay verify rows of 1..1 + k query tokens, and the
    # attention backend named must take query lengths that vary within a graph -- the backend's query-length limit
    # under drafts (family C), not the capture sizes
    ("spec_decode/adaptive_verification.py", "maybe_create_adaptive_verification_manager", "query lengths vary",
     "spec_kernel_limit", "adaptive_verification_varlen"),
    # --- what each check compares, read in vLLM's source, where the generic rules read a word of it ----------------
    # one KV-cache group's layers with different KV dtypes (an MTP / draft layer next to fp8_ds_mla target layers):
    # the group's spec cannot be merged -- the draft / quantized KV layout (A); "quantization method" is no weights load
    ("kv_cache_interface.py", "merge", "must use the same quantization method", "kv_page_size", "kv_group_merge_dtype"),
    # the old hybrid coordinator's third layout assumption on the KV-cache groups (its siblings are already A)
    ("kv_cache_coordinator.py", "verify_and_split_kv_cache_groups", "do not interleave", "kv_page_size",
     "hybrid_group_interleave"),
    # DFlash precomputes the context K/V with one block size: draft layers spread over KV-cache groups (next to a
    # hybrid target's) are the draft vs target KV layout (A), not a kernel limit
    ("spec_decode/dflash/speculator.py", "set_attn", "single kv-cache group", "kv_page_size", "dflash_single_group"),
    # the V2 runner's uniform-decode capture splits a capture size into requests of 1 + k tokens
    ("worker/gpu/model_runner.py", "_dummy_run", "% self.decode_query_len", "cudagraph_shape", "v2_capture_vs_decode_len"),
    # a backend that takes only uniform decode query lengths (FlashMLA, TRT-LLM, FlashInfer MLA: require_uniform)
    # handed a batch whose tokens are not num_reqs x (1 + k) -- requests padded (DP, CUDA graphs) but not their
    # tokens: the kernel's query-length requirement under drafts (C), as the reports of it are labelled
    ("backends/utils.py", "split_decodes_and_prefills", "tokens not padded correctly", "spec_kernel_limit",
     "padded_uniform_batch_tokens"),
    # 1 + k sampled rows a request against max_num_batched_tokens (LoRA + drafts), and the scheduler's padded spec
    # rows clipped by a threshold below 1 + k: speculative tokens vs the token budget (E)
    ("gpu_model_runner.py", "_prepare_inputs", "num_sampled_tokens", "token_budget", "sampled_rows_vs_budget"),
    ("sched/scheduler.py", "schedule", "num_new_tokens == 1 + self.num_spec_tokens", "token_budget",
     "padded_spec_rows_vs_budget"),
    # block sizes a backend cannot take (a hybrid's raised attention block, a user's --block-size): the block-size
    # alignment with the backend (E), not a unification of page sizes across layers
    ("flashinfer.py", "__init__", "unexpected flashinfer page size", "block_size_alignment", "flashinfer_page_size_limit"),
    # (FlashInfer's guard of its head-size-256 bug fires at block size 16, the dense default: a hybrid's block is raised
    # far above it, so the guard is a kernel bug of dense models, outside the families)
    ("flashinfer.py", "__init__", "block_size 16 head size 256", "other", "flashinfer_bs16_hd256"),
    ("b12x.py", "__init__", "b12x requires --block-size", "block_size_alignment", "b12x_block_size"),
    ("b12x.py", "_kv_page_size", "b12x requires runtime page size", "block_size_alignment", "b12x_page_size"),
    ("rocm_aiter_mla.py", "__init__", "only supports block size 1", "block_size_alignment", "aiter_mla_block_size"),
    ("mla/sparse_indexer.py", "__init__", "must be a multiple of", "block_size_alignment", "indexer_page_multiple"),
    ("causal_conv1d.py", "causal_conv1d_fn", "divisible by the block_m", "block_size_alignment", "conv1d_block_m"),
    # b12x plans are prepared per (page size, batch size) of the capture sizes (E); a lazily made plan too big for
    # its scratch is single-token decode, no drafts (other)
    ("b12x.py", "_select_plan", "was not prepared before cuda graph capture", "cudagraph_shape", "b12x_plan_capture"),
    ("b12x.py", "_select_plan", "max_query_len <= 1", "other", "b12x_scratch"),
    # the Mamba prefill-state checkpoint's block index against the request's Mamba blocks (B); "checkpoint" is no
    # weights file here
    ("single_type_kv_cache_manager.py", "_cache_partial_tail_block", "checkpoint_idx", "state_index",
     "mamba_checkpoint_idx"),
    # the DSA indexer's decode batch (packed per request with next_n = 1 + k rows) against its decode seq_lens before
    # DeepGEMM's paged MQA logits (C, beside the next_n kernel checks)
    ("sparse_attn_indexer.py", "sparse_attn_indexer", "decode_metadata.seq_lens.shape[0]", "spec_kernel_limit",
     "indexer_decode_batch"),
    ("models/deepseek_v2.py", "sparse_attn_indexer", "decode_metadata.seq_lens.shape[0]", "spec_kernel_limit",
     "indexer_decode_batch_v2"),
    ("rocm_aiter_mla_sparse.py", "rocm_aiter_sparse_attn_indexer", "decode_metadata.seq_lens.shape[0]",
     "spec_kernel_limit", "indexer_decode_batch_aiter"),
    ("rocm_aiter_mla_sparse.py", "rocm_aiter_sparse_attn_indexer_native", "decode_metadata.seq_lens.shape[0]",
     "spec_kernel_limit", "indexer_decode_batch_aiter_native"),
    ("amd/ops/sparse_indexer.py", "_decode_step", "decode.seq_lens.shape[0]", "spec_kernel_limit",
     "indexer_decode_batch_v41"),
    # FlashInfer decode kernels given 1 + k query rows a request (C)
    ("flashinfer/xqa.py", "xqa", "mask is required for speculative decoding", "spec_kernel_limit", "xqa_spec_mask"),
    ("mla/_sparse_mla_sm120.py", "run", "only supported with s_q=1", "spec_kernel_limit", "sm120_sparse_mla_s_q"),
    # ROCm AITER FlashAttention routes decodes of more than one query token (1 + k under drafts) to a unified-attention
    # path that cannot read the shuffled KV layout: the message names the multi-token decode -- the backend's
    # query-length limit under drafts (C), unlike a bare "not supported with X" capability gap
    ("rocm_aiter_fa.py", "forward", "(multi-token decode)", "spec_kernel_limit", "aiter_shuffle_multi_token_decode"),
    # FlashInfer's MLA decode with the cute-dsl backend refuses a batch of variable query lengths (has_var_q: the
    # cum_seq_lens_q that vLLM's FlashInfer-MLA passes for a verify of 1 + k rows a request): the backend's query-length
    # limit under drafts (C), not a flag's gap
    ("mla/_core.py", "trtllm_batch_decode_with_kv_cache_mla", "cute-dsl mla does not support cum_seq_lens_q",
     "spec_kernel_limit", "flashinfer_cute_dsl_var_q"),
    # the V2 model runner binding the KV-cache groups to tensors knows attention specs only: a hybrid's Mamba/GDN groups
    # reach it -- the hybrid KV spec layout, as the V1 runner's _reshape_kv_cache_tensors check of the same is
    ("gpu/attn_utils.py", "_reshape_kv_cache", "isinstance(kv_cache_spec, attentionspec)", "kv_page_size",
     "v2_reshape_attention_specs_only"),
    # the same module's check of the layout's name ('HND' or 'NHD'): a setting's value outside its choices, though the
    # function checks a KV-cache layout
    ("mla/_core.py", "_check_sm120_dsv4_kv_cache_layout", "kv_layout must be either", "other", "kv_layout_choice"),
    # AITER MLA under decode context parallel: the multi-token verify (1 + k query rows) needs a kernel route the
    # build lacks -- the 0.29-0.30 form of the same check is already C; 0.31+ raise it without a condition
    ("rocm_aiter_mla.py", "_select_dcp_decode_route", "dcp multi-token verify requires", "spec_kernel_limit",
     "aiter_mla_dcp_verify_route"),
    ("rocm_aiter_mla.py", "__init__", "dcp multi-token verify has no kernel", "spec_kernel_limit",
     "aiter_mla_dcp_verify_heads"),
    # an attention backend that cannot place the 1 + k query rows of a draft verify against a KV cache interleaved over
    # the context-parallel ranks (supports_mtp_with_cp_non_trivial_interleave_size): its limit under drafts (C)
    ("worker/cp_utils.py", "check_attention_cp_compatibility", "mtp with cp_kv_cache_interleave_size",
     "spec_kernel_limit", "mtp_with_cp_interleave"),
    # --- checks that fail the same way without drafts or hybrids: near misses (other) --------------------------------
    ("flashinfer/data/csrc/trtllm_gemm_runner.cu", "", "kernel not found", "other", "trtllm_gemm_kernel_table"),
    ("config/vllm.py", "__post_init__", "fast prefill optimization for kv sharing", "other", "fast_prefill_vs_eagle"),
    ("config/__init__.py", "__post_init__", "fast prefill optimization for kv sharing", "other", "fast_prefill_vs_eagle_0"),
    # a CUDA-graph *mode* a compilation setting or a feature cannot run: no capture size, batch or 1 + k compared
    ("config/vllm.py", "__post_init__", "when cudagraph_mode piecewise cudagraphs is used", "other", "piecewise_needs_compile"),
    ("config/__init__.py", "__post_init__", "when cudagraph_mode piecewise cudagraphs is used", "other",
     "piecewise_needs_compile_0"),
    ("cudagraph_dispatcher.py", "__init__", "when cudagraph_mode piecewise cudagraphs is used", "other",
     "piecewise_needs_compile_dispatcher"),
    ("config/vllm.py", "__post_init__", "hisparse does not support cudagraph_mode", "other", "hisparse_cudagraph_mode"),
    ("worker/gpu/pcp_manager.py", "validate_config", "cuda graphs", "other", "pcp_cudagraph_mode"),
    ("worker/gpu/pcp_manager.py", "validate_config", "dspark requires dcp", "other", "pcp_dspark_dcp"),
    ("worker/gpu/cudagraph_utils.py", "ubatch_forward_fn", "dbo does not support", "other", "dbo_cudagraph_mode"),
    # FlashMLA's decode metadata against its CUDA-graph split-count buffer (sized for the captured decode batch): with
    # drafts the decode's query tokens per request change the splits the kernel plans -- the backend under
    # multi-token decode (C), as the reports of it are labelled
    ("mla/flashmla.py", "_build_decode", "cg_buf_num_splits", "spec_kernel_limit", "flashmla_num_splits_buffer"),
    # FA3 MLA's ahead-of-time scheduler metadata against its CUDA-graph buffer (max_num_seqs + 1 entries): the same
    # MLA decode planning under multi-token decode (C), as both reports of it are labelled
    ("mla/flashattn_mla.py", "_build_decode", "scheduler metadata size", "spec_kernel_limit",
     "fa3_mla_scheduler_metadata_buffer"),
    # Mamba cache mode 'align' refusing drafts (MambaModelConfig.verify_and_update_config, 0.14-0.17): the aligned
    # state copies keep no slots for rejected drafts -- the state bookkeeping under prefix caching + speculative
    # decoding (B), as the reports of it are labelled, not prefix caching merely unavailable
    ("models/config.py", "verify_and_update_config", "align' is currently not compatible with speculative decoding",
     "state_index", "align_mode_refuses_drafts"),
    # ... and asking for chunked prefill (0.15+): align mode checkpoints a request's Mamba/GDN state at each block
    # boundary, which the scheduler reaches by cutting prefills into block-aligned chunks -- the same state copies
    # through the block table (B), not prefix caching merely unavailable
    ("models/config.py", "verify_and_update_config", "chunked prefill is required for mamba cache mode 'align'",
     "state_index", "align_mode_needs_chunked_prefill"),
    # the Mamba block size set without prefix caching (it only sizes the 'align' mode's state blocks): a flag that
    # needs another, refused before any engine runs -- a command-line mistake (other), as the GPU run read it and as
    # the later reports of it are labelled (no block size of any layer is compared)
    ("config/vllm.py", "validate_mamba_block_size", "can only be set with --enable-prefix-caching", "other",
     "mamba_block_size_needs_prefix_caching"),
    # the runner's spec-decode arguments of the hybrid builders (accepted counts, draft counts per request) cannot be
    # split per micro-batch (dual-batch overlap): checked only on the spec-decode path of a GDN / Mamba2 / linear-
    # attention builder -- the builders' spec-decode batch bookkeeping (D), as the reports of it are labelled
    ("gpu_model_runner.py", "_build_attn_group_metadata", "ubatching not supported with gdn", "mixed_batch",
     "hybrid_spec_args_ubatch"),
    ("worker/gpu/cudagraph_utils.py", "capture", "not torch-compiled", "other", "piecewise_uncompiled_model"),
    ("flex_attention.py", "_maybe_get_custom_mask_mod", "differing mask mods", "other", "flex_mask_mods"),
    ("flex_attention.py", "_get_block_sizes", "flex_attn_q_block_size must be a power of 2", "other", "flex_q_block_flag"),
    # the FLA library's varlen calling convention ([1, T, ...]): not the batch's split
    ("fla/ops/chunk.py", "chunk_gated_delta_rule", "batch size is expected to be 1", "other", "fla_varlen_batch_1"),
    ("fla/ops/fused_recurrent.py", "fused_recurrent_gated_delta_rule", "batch size is expected to be 1", "other",
     "fla_varlen_batch_1_recurrent"),
    ("fla/ops/fused_sigmoid_gating.py", "fused_sigmoid_gating_delta_rule_update", "batch size is expected to be 1",
     "other", "fla_varlen_batch_1_gating"),
    ("fla/ops/kda.py", "fused_recurrent_kda", "batch size is expected to be 1", "other", "fla_varlen_batch_1_kda"),
    ("fla/ops/cumsum.py", "chunk_local_cumsum", "only batch size 1 is supported when cu_seqlens", "other",
     "fla_varlen_batch_1_cumsum"),
    ("fla/ops/kda.py", "fused_kda_gate_chunk_cumsum", "only batch size 1 is supported when cu_seqlens", "other",
     "fla_varlen_batch_1_kda_gate"),
    # backend / flag choices checked before any batch exists, or capability gaps of one backend
    ("kimi_gdn_linear_attn.py", "__init__", "only supports the triton kda prefill backend", "other", "kimi_kda_backend"),
    ("mla/prefill/trtllm_ragged.py", "prepare_metadata", "trtllm ragged prefill requires", "other",
     "trtllm_ragged_prefill_input"),
    ("mla/prefill/trtllm_ragged.py", "prepare_metadata", "query lengths must be non-negative", "other",
     "trtllm_ragged_prefill_sign"),
    ("mla/prefill/trtllm_ragged.py", "prepare_metadata", "prefill_metadata.query_lens_cpu is not none", "other",
     "trtllm_ragged_prefill_present"),
    ("sparse_mla_attention.py", "_run_masked_mha", "top-k mask needs", "other", "sparse_mla_prefill_workspace"),
    ("spec_decode/ngram/speculator.py", "__init__", "requires triton", "other", "ngram_gpu_triton"),
    ("kv_cache_coordinator.py", "_validate_prefix_cache_retention_interval", "has no sliding-window or mamba", "other",
     "prefix_retention_flag"),
    ("kv_cache_utils.py", "resolve_kv_cache_block_sizes", "with a single kv cache group", "other",
     "prefix_match_unit_single_group"),
    ("flashinfer.py", "__init__", "cannot read nvfp4 block scales", "other", "nvfp4_dcp_gap"),
    ("flashinfer.py", "__init__", "misreads nvfp4 at head_size 64", "other", "nvfp4_hd64_gap"),
    ("worker/gpu/model_runner.py", "initialize_kv_cache", "only flash_attn backend is supported", "other",
     "v2_runner_flash_attn_only"),
    ("kv_cache_interface.py", "merge", "both sliding window layers and chunked local attention", "other",
     "sliding_and_chunked_local"),
    # a KV spec of a model version the release does not know (its __post_init__ twin is already other)
    ("kv_cache_interface.py", "real_page_size_bytes", "unsupported model version", "other", "unknown_model_version"),
    ("config/vllm.py", "_verify_aux_output_compatibility", "requires prefix caching", "other", "aux_output_needs_pc"),
    ("single_type_kv_cache_manager.py", "cache_blocks", "should not be called as prefix caching is disabled", "other",
     "cross_attention_cache_guard"),
]


def _text(site: Site) -> str:
    """condition + message, then (after a NUL) the enclosing ``if`` tests: rules about what the check itself
    compares read only the part before the NUL (``_core``)."""
    core = " ".join([site.get("condition") or "", site.get("message") or ""])
    return (core + "\x00" + " ".join(site.get("guards") or [])).lower()


def _core(t: str) -> str:
    return t.split("\x00", 1)[0]


def categorize(site: Site) -> tuple[str, str]:
    """(category, rule id) for a site or a log error (keys: file, function, condition, message, exc)."""
    f = (site.get("file") or "").lower()
    fn = site.get("function") or ""
    t = _text(site)
    for suffix, func, needle, cat, rid in OVERRIDES:
        if f.endswith(suffix) and fn.rsplit(".", 1)[-1] == func and needle in t:
            return cat, "override:" + rid
    e = (site.get("exc") or "").rsplit(".", 1)[-1]
    c = site.get("condition") or ""
    for rid, cat, pred in RULES:
        try:
            if pred(f, fn, t, e, c):
                return cat, rid
        except re.error:  # pragma: no cover - patterns are static
            continue
    return "other", "default"


_VALIDATION_FUNC = re.compile(r"(^|\.)(__post_init__|_?verify\w*|_?validate\w*|check_and_update_config|"
                              r"verify_and_update_config|try_verify_and_update_config|_set_\w+|create_engine_config|"
                              r"create_\w+_config|from_cli_args|__init__|_check\w*|_resolve\w*|resolve\w*|"
                              r"get_and_verify\w*|update_block_size_for_backend|_align_hybrid_block_size|"
                              r"_post_init\w*|model_post_init|__call__)$")


def is_validation(site: Site) -> bool:
    """A check vLLM runs while building its config (evaluated by the pre-flight)."""
    f = site.get("file") or ""
    if f.startswith("vllm/config/") or f.endswith("engine/arg_utils.py"):
        return True
    if f.endswith(("model_executor/models/config.py", "platforms/interface.py", "platforms/cuda.py",
                   "platforms/rocm.py", "platforms/cpu.py", "platforms/xpu.py")):
        return bool(_VALIDATION_FUNC.search(site.get("function") or "")) or "config" in (site.get("function") or "").lower()
    return False

"""Kernel checks outside Python: what the attention kernels vLLM calls refuse, and how the refusal reads.

Two sources:

* FlashInfer: ``flashinfer-python`` on PyPI ships its CUDA sources (``flashinfer/data/csrc``); the
  catalog script extracts their ``TVM_FFI_ICHECK*`` / ``FLASHINFER_CHECK`` / ``TLLM_CHECK_WITH_INFO``
  checks of the attention, MLA and decode entry points (``scripts/build_failure_catalog.py``,
  ``extract_flashinfer``).
* DeepGEMM, FlashMLA and AITER have no usable source package on PyPI (``deep-gemm`` 1.0.0 there is an
  early GEMM-only release without the attention APIs; FlashMLA and AITER are not published). Their
  checks are this hand-written table, each entry naming the package, the source file and where the
  text was read. Each ``cond`` is the text that follows ``Assertion error (<file>:<line>):`` (DeepGEMM's
  ``DG_HOST_ASSERT``) or the ``TORCH_CHECK`` message, as vLLM surfaces it inside a ``RuntimeError``.

Entry keys are those of the catalog's sites (``vllm_diag.catalog``), plus ``package``, ``source`` and
``limit`` (the documented limit in words, for the finding).
"""

from __future__ import annotations

HAND: list[dict] = [
    # DeepGEMM csrc/jit_kernels/impls/smxx_fp8_fp4_paged_mqa_logits.hpp (older builds:
    # smxx_fp8_paged_mqa_logits.hpp): the host assert on next_n = num_speculative_tokens + 1 of the
    # sparse-attention indexer's decode path. Text as quoted in vLLM issue #43457 and in vLLM's own comment
    # (vllm/v1/attention/backends/mla/indexer.py 0.20.2, "deepgemm smxx_fp8_fp4_paged_mqa_logits.hpp:233").
    # SM90 builds later accept 4 as well (vllm/utils/deep_gemm.py native_next_n_supported, 0.28+).
    {"package": "deep_gemm", "file": "csrc/jit_kernels/impls/smxx_fp8_fp4_paged_mqa_logits.hpp",
     "func": "fp8_fp4_paged_mqa_logits", "kind": "kernel", "exc": "RuntimeError",
     "cond": "next_n == 1 or next_n == 2", "cat": "spec_kernel_limit",
     "limit": "next_n (= num_speculative_tokens + 1) in (1, 2) on sm_90; newer SM90 builds also 4",
     "source": "vLLM issue #43457; vllm/v1/attention/backends/mla/indexer.py comment (0.20.2)"},
    {"package": "deep_gemm", "file": "csrc/jit_kernels/impls/smxx_fp8_fp4_paged_mqa_logits.hpp",
     "func": "fp8_fp4_paged_mqa_logits", "kind": "kernel", "exc": "RuntimeError",
     "cond": "next_n == 1 or next_n == 2 or next_n == 4", "cat": "spec_kernel_limit",
     "limit": "next_n in (1, 2, 4) on sm_90",
     "source": "vllm/utils/deep_gemm.py native_next_n_supported (0.28.0+)"},
    # The same kernel's check that the schedule metadata has one row per scheduler slot (+1): vLLM sizes it in
    # get_paged_mqa_logits_metadata, and on SM90 with next_n = 4 the kernel runs one task per 2-CTA multicast
    # cluster, so the slots halve (vllm/utils/deep_gemm.py _paged_mqa_logits_schedule_slots, 0.33.0: "and
    # `fp8_fp4_paged_mqa_logits` asserts its metadata is sized to match"): a DeepGEMM build and a vLLM that count
    # the slots of a multi-token decode differently fail here -- the next_n path of the kernel.
    {"package": "deep_gemm", "file": "csrc/jit_kernels/impls/smxx_fp8_fp4_paged_mqa_logits.hpp",
     "func": "fp8_fp4_paged_mqa_logits", "kind": "kernel", "exc": "RuntimeError",
     "cond": "schedule_meta.size(0) == num_sms + 1", "cat": "spec_kernel_limit",
     "limit": "schedule metadata of (scheduler slots + 1) rows; SM90 next_n = 4 halves the slots (2-CTA multicast)",
     "source": "vllm/utils/deep_gemm.py _paged_mqa_logits_schedule_slots (0.33.0)"},
    # DeepGEMM csrc/apis/attention.hpp, get_paged_mqa_logits_metadata: context_lens must be a contiguous
    # int32 tensor, [batch] or [batch, next_n]. With speculative decoding vLLM passes a slice of a
    # [batch, next_n] buffer of the indexer builder (vllm/v1/attention/backends/mla/indexer.py
    # build -> get_paged_mqa_logits_metadata), which is not contiguous once next_n > 1 and the batch is
    # padded: a spec-decode shape the kernel refuses.
    {"package": "deep_gemm", "file": "csrc/apis/attention.hpp", "func": "get_paged_mqa_logits_metadata",
     "kind": "kernel", "exc": "RuntimeError", "cond": "context_lens.is_contiguous()", "cat": "spec_kernel_limit",
     "limit": "context_lens contiguous ([batch] or [batch, next_n] int32)",
     "source": "DeepGEMM csrc/apis/attention.hpp (get_paged_mqa_logits_metadata); vllm/utils/deep_gemm.py caller"},
    # Same function, no kernel for the GPU generation (only sm_90 / sm_100 are built): a platform limit,
    # not a speculative-decoding one.
    {"package": "deep_gemm", "file": "csrc/apis/attention.hpp", "func": "get_paged_mqa_logits_metadata",
     "kind": "kernel", "exc": "RuntimeError", "cond": "Unsupported architecture", "cat": "other",
     "limit": "sm_90 and sm_100 only",
     "source": "DeepGEMM csrc/apis/attention.hpp (DG_HOST_UNREACHABLE for other arch_major)"},
    {"package": "deep_gemm", "file": "csrc/apis/attention.hpp", "func": "fp8_paged_mqa_logits",
     "kind": "kernel", "exc": "RuntimeError", "cond": "Unsupported architecture", "cat": "other",
     "limit": "sm_90 and sm_100 only", "source": "DeepGEMM csrc/apis/attention.hpp"},
    # FlashMLA csrc/pybind.cpp / flash_api.cpp (vendored by vLLM as vllm._flashmla_C): the decode
    # kernel's query tile. q is reshaped to [batch, seqlen_q * heads_per_kv, ...]; the sparse decode
    # kernels need topk % 64 == 0 and a 64-token page.
    {"package": "flash_mla", "file": "csrc/pybind.cpp", "func": "fwd_kvcache_mla", "kind": "kernel",
     "exc": "RuntimeError", "cond": "page_block_size == 64", "cat": "block_size_alignment",
     "limit": "KV page (block) size 64", "source": "FlashMLA csrc (TORCH_CHECK 'Currently page_block_size must be 64')"},
    {"package": "flash_mla", "file": "csrc/pybind.cpp", "func": "fwd_kvcache_mla", "kind": "kernel",
     "exc": "RuntimeError", "cond": "head_size_k == 576", "cat": "other",
     "limit": "MLA head size 576 only", "source": "FlashMLA csrc (TORCH_CHECK 'Only head_size_k == 576 is supported')"},
    {"package": "flash_mla", "file": "csrc/pybind.cpp", "func": "sparse_decode_fwd", "kind": "kernel",
     "exc": "RuntimeError", "cond": "topk % 64 == 0", "cat": "other",
     "limit": "sparse top-k a multiple of 64", "source": "FlashMLA csrc sparse decode (TORCH_CHECK on topk)"},
    # AITER (ROCm) MLA decode, aiter/mla.py mla_decode_fwd: the assembly decode kernels exist for a
    # query length per request (max_seqlen_q = num_speculative_tokens + 1) of at most 4 (gqa 16/128);
    # longer drafts find no kernel.
    {"package": "aiter", "file": "aiter/mla.py", "func": "mla_decode_fwd", "kind": "kernel", "exc": "RuntimeError",
     "cond": "max_seqlen_q <= 4", "cat": "spec_kernel_limit",
     "limit": "max_seqlen_q (= num_speculative_tokens + 1) <= 4 for the asm MLA decode kernels",
     "source": "AITER aiter/mla.py and hsa/*/mla asm kernel table (query lengths 1-4)"},
    # FlashInfer TRT-LLM-gen decode (flashinfer/decode.py trtllm_batch_decode_with_kv_cache_mla): one
    # query length for every request of a decode batch (q_len_per_req); vLLM's FlashInfer MLA backend
    # sends spec decodes as uniform q_len = k + 1.
    {"package": "flashinfer", "file": "flashinfer/decode.py", "func": "trtllm_batch_decode_with_kv_cache_mla",
     "kind": "kernel", "exc": "ValueError", "cond": "uniform q_len_per_req", "cat": "spec_kernel_limit",
     "limit": "one q_len_per_req (= num_speculative_tokens + 1) per decode batch",
     "source": "flashinfer-python flashinfer/decode.py"},
]


# Compiled GPU kernels (C++/CUDA, not in vLLM's Python) by the names cuda-gdb, compute-sanitizer and device-side
# asserts print, with the source that defines them: (name pattern, package, source file, what it computes).
# ``what`` is one of: "mamba" (Mamba/GDN state and conv kernels), "mla" (MLA / sparse-indexer attention and
# its KV-cache kernels), "attention" (dense attention and its KV-cache writes), "sampling", "gemm" (GEMM, MoE,
# quantisation), "comm" (collectives), "index" (PyTorch's own gather/scatter/index kernels: they run wherever a
# tensor is indexed, so they place nothing). Patterns match the kernel name, C++ namespaces and templates
# stripped; Triton kernels are looked up in the catalog's ``gpu_kernels`` index first.
CUDA_KERNELS: list[tuple[str, str, str, str]] = [
    # vLLM csrc/mamba (CUDA Mamba kernels; causal_conv1d moved to Triton in vLLM's Python later)
    (r"causal_conv1d_(?:fwd|update|channellast)\w*kernel", "vllm", "csrc/mamba/causal_conv1d/causal_conv1d.cu", "mamba"),
    (r"selective_scan_fwd_kernel|selective_scan\w*kernel", "vllm", "csrc/mamba/mamba_ssm/selective_scan_fwd.cu", "mamba"),
    # FlashInfer's GDN / Mamba kernels (flashinfer/gdn_decode.py, flashinfer/mamba)
    (r"gdn_(?:decode|prefill|verify)\w*|gated_delta_rule\w*|selective_state_update\w*", "flashinfer",
     "flashinfer/gdn_decode.py", "mamba"),
    # FlashMLA (vllm/third_party/flashmla; csrc/sm90, csrc/sm100): dense and sparse MLA decode / prefill
    (r"flash_fwd_splitkv_mla\w*|flash_fwd_mla\w*|flash_mla\w*|get_mla_metadata\w*|mla_combine\w*|"
     r"sparse_(?:prefill|decode)_fwd\w*|sm(?:90|100)\w*_mla\w*", "flash_mla", "csrc/sm90/decode/dense/splitkv_mla.cu", "mla"),
    # DeepGEMM paged / ragged MQA logits of the sparse-attention indexer
    (r"\w*paged_mqa_logits\w*|\w*fp8_mqa_logits\w*|\w*mqa_logits_metadata\w*", "deep_gemm",
     "csrc/jit_kernels/impls/smxx_fp8_paged_mqa_logits.hpp", "mla"),
    # vLLM csrc/cache_kernels.cu: the MLA and indexer KV-cache writes and gathers
    (r"concat_and_cache_(?:mla|ds_mla)\w*|indexer_k_quant_and_cache\w*|cp_gather_indexer_k\w*|"
     r"gather_and_maybe_dequant_cache\w*|cp_gather_cache\w*", "vllm", "csrc/cache_kernels.cu", "mla"),
    # CUTLASS / FlashInfer / AITER MLA decode
    (r"\w*cutlass\w*mla\w*|\w*mla\w*cutlass\w*|BatchMLAPagedAttention\w*|\w*MLAPaged\w*|mla_(?:a8w8|a16w16|dec|"
     r"stage1|reduce)\w*", "flashinfer", "csrc/batch_mla_run.cu", "mla"),
    # dense attention and its KV-cache writes
    (r"flash_fwd_(?:splitkv_)?(?:combine_)?kernel\w*|flash_bwd\w*|BatchPrefillWithPagedKVCache\w*|"
     r"BatchDecodeWithPagedKVCache\w*|SinglePrefillWithKVCache\w*|paged_attention_v[12]\w*|"
     r"reshape_and_cache(?:_flash)?_kernel\w*|fmha\w*|\w*Fmha\w*", "vllm", "csrc/attention", "attention"),
    # sampling (PyTorch and FlashInfer): probabilities, top-k / top-p, multinomial
    (r"\w*[Mm]ultinomial\w*|\w*TopKTopP\w*|\w*TopPSampling\w*|\w*SamplingFromProb\w*|_assert_async_cuda_kernel|"
     r"\w*[Rr]enorm\w*|distribution_elementwise\w*|\w*exponential\w*", "torch", "aten/src/ATen/native/cuda/Distributions.cu",
     "sampling"),
    # GEMM, MoE and quantisation kernels
    (r"fused_moe\w*|moe_align\w*|topk_softmax\w*|\w*[Mm]arlin\w*|\w*cutlass\w*|\w*gemm\w*|\w*Gemm\w*|"
     r"\w*quant\w*|\w*deep_ep\w*", "vllm", "csrc/moe", "gemm"),
    (r"nccl\w*|\w*cross_device_reduce\w*|\w*all_?reduce\w*|\w*allgather\w*", "nccl", "collectives", "comm"),
    # PyTorch's own indexing kernels: they run wherever Python indexes a tensor
    (r"index_elementwise_kernel|indexSelect\w*|vectorized_gather_kernel|\w*index_put\w*|\w*scatter_gather\w*|"
     r"\w*index_copy\w*|elementwise_kernel|vectorized_elementwise_kernel|unrolled_elementwise_kernel",
     "torch", "aten/src/ATen/native/cuda/IndexKernel.cu", "index"),
]


def cuda_kernel(name: str) -> tuple[str, str, str] | None:
    """(package, source file, what) of a compiled kernel by name (namespaces / templates stripped), or None."""
    import re

    base = re.sub(r"<.*", "", name).rsplit("::", 1)[-1].strip()
    for pat, package, source, what in CUDA_KERNELS:
        if re.fullmatch(pat, base):
            return package, source, what
    return None


def kernel_sites() -> list[dict]:
    """The hand-written table, with ids (the catalog script adds FlashInfer's extracted checks)."""
    out = []
    for e in HAND:
        d = dict(e)
        d["id"] = f"{e['package']}.{e['func']}.{abs(hash_text(e['cond'])) % 10**6:06d}"
        d.setdefault("v", [])
        out.append(d)
    return out


def hash_text(text: str) -> int:
    import hashlib

    return int(hashlib.sha1(text.encode()).hexdigest()[:12], 16)

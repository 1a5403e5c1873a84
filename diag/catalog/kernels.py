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

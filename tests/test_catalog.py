"""The shipped catalog of vLLM failure sites (vllm_diag.catalog), its version ranges and categories."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

from vllm_diag.catalog import categorize, load, vtuple
from vllm_diag.model import CATEGORIES

ROOT = Path(__file__).resolve().parent.parent


def _script():
    spec = importlib.util.spec_from_file_location("build_failure_catalog", ROOT / "scripts" / "build_failure_catalog.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["build_failure_catalog"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_catalog_spans_the_releases_and_uses_the_vocabulary():
    cat = load()
    assert cat.versions[0] == "0.11.0" and cat.versions[-1] == "0.33.0"
    assert len(cat.sites) > 3000
    assert {s.category for s in cat.all_sites()} <= set(CATEGORIES)
    # every hybrid/spec category has sites of its own
    for c in ("kv_page_size", "state_index", "spec_kernel_limit", "mixed_batch", "cudagraph_shape",
              "block_size_alignment", "mamba_block_budget", "prefix_cache_degraded", "token_budget"):
        assert any(s.category == c for s in cat.sites), c


def test_bare_unify_assert_has_its_release_range():
    cat = load()
    sites = [s for s in cat.in_function("vllm/v1/core/kv_cache_utils.py", "unify_kv_cache_spec_page_size")
             if s.kind == "assert" and s.condition == "new_spec.page_size_bytes == max_page_size"]
    assert len(sites) == 1
    s = sites[0]
    assert s.category == "kv_page_size" and s.message is None
    assert s.exists_in("0.20.2") and s.exists_in("0.17.1")
    assert s.exists_in("0.33.0") is False  # moved to kv_cache_planning.py in 0.33
    moved = [x for x in cat.in_function("kv_cache_planning.py", "unify_kv_cache_spec_page_size") if x.kind == "assert"]
    assert moved and moved[0].exists_in("0.33.0")


def test_known_messages_are_templates_with_holes():
    cat = load()
    capture = [s for s in cat.sites if s.message and "decode-only full CUDAGraph capture" in s.message]
    assert capture and all(s.category == "cudagraph_shape" for s in capture)
    gdn = [s for s in capture if s.message.startswith("GDN")]
    rx = gdn[0].template_regex()
    m = rx.search("GDN only supports decode-only full CUDAGraph capture. Make sure batch size (12) <= cudagraph "
                  "capture sizes (8), and number of tokens (12) <= cudagraph capture sizes (8).")
    assert m and "12" in m.groups()
    budget = [s for s in cat.sites if s.message and "exceeds available Mamba cache blocks" in s.message]
    assert budget and {s.category for s in budget} == {"mamba_block_budget"}
    assert min(vtuple(s.first_version) for s in budget) >= (0, 19, 0)


def test_config_validation_sites_are_marked_for_the_preflight():
    cat = load()
    val = cat.validation_sites("0.32.0")
    assert len(val) > 200
    files = {s.file for s in val}
    assert any(f.startswith("vllm/config/") for f in files) and "vllm/engine/arg_utils.py" in files
    # conditions are the enclosing `if` tests of the raise
    mb = [s for s in val if s.message and "--mamba-block-size can only be set with --enable-prefix-caching" in s.message]
    assert mb and "enable_prefix_caching" in (mb[0].condition or "")
    assert all(s.exists_in("0.32.0") is not False for s in val)


def test_kernel_checks_outside_python():
    cat = load()
    dg = [s for s in cat.kernel_sites if s.package == "deep_gemm"]
    assert any(s.condition == "next_n == 1 or next_n == 2" and s.category == "spec_kernel_limit" for s in dg)
    assert any(s.condition == "Unsupported architecture" and s.category == "other" for s in dg)
    assert all(s.source for s in dg)  # hand entries name where their text comes from
    assert any(s.package == "flashinfer" for s in cat.kernel_sites)


@pytest.mark.parametrize("site,expected", [
    ({"file": "vllm/v1/core/kv_cache_utils.py", "function": "unify_kv_cache_spec_page_size",
      "condition": "new_spec.page_size_bytes == max_page_size", "exc": "AssertionError"}, "kv_page_size"),
    ({"file": "vllm/v1/attention/backends/gdn_attn.py", "function": "GDNAttentionMetadataBuilder.build",
      "message": "num_decodes: {num_decodes}, num_spec_decodes: {num_spec_decodes}", "exc": "AssertionError",
      "condition": "not (num_decodes > 0 and num_spec_decodes > 0)"}, "mixed_batch"),
    ({"file": "vllm/v1/core/kv_cache_utils.py", "function": "check_enough_kv_cache_memory", "exc": "ValueError",
      "message": "No available memory for the cache blocks. Try increasing `gpu_memory_utilization`"}, "other"),
    ({"file": "vllm/v1/worker/mamba_utils.py", "function": "collect_mamba_copy_meta", "exc": "IndexError",
      "message": "list index out of range"}, "state_index"),
    ({"file": "vllm/v1/attention/backends/mla/indexer.py", "function": "DeepseekV32IndexerMetadataBuilder.build",
      "message": "next_n {next_n} is not supported", "exc": "ValueError"}, "spec_kernel_limit"),
    ({"file": "vllm/model_executor/model_loader/default_loader.py", "function": "load_weights", "exc": "ValueError",
      "message": "Following weights were not initialized from checkpoint: {x}"}, "other"),
    # no kernel block size divides the manager's block (a hybrid's raised or a user's block): an alignment
    ({"file": "vllm/v1/worker/utils.py", "function": "select_common_block_size", "exc": "ValueError",
      "message": "No common block size for {kv_manager_block_size}. "}, "block_size_alignment"),
    # a file the install lacks is the image's problem, whatever the function that asked for it
    ({"file": "vllm/utils/deep_gemm.py", "function": "get_paged_mqa_logits_metadata", "exc": "RuntimeError",
      "message": "Assertion error (csrc/jit/include_parser.hpp:69): Failed to open: "
                 "deep_gemm/include/deep_gemm/scheduler/paged_mqa_logits.cuh"}, "other"),
    # Mamba align mode's checkpoint block is a block of the Mamba group, not a weights checkpoint
    ({"file": "vllm/v1/core/single_type_kv_cache_manager.py", "function": "MambaManager.allocate_new_blocks",
      "exc": "AssertionError", "condition": "num_new_blocks <= max_new_blocks",
      "guards": ["not (self.mamba_cache_mode != 'align')",
                 "not (num_required_blocks <= len(req_blocks) and (not has_partial_hit) and (not checkpoint_block))"]},
     "state_index"),
    ({"file": "vllm/model_executor/model_loader/weight_utils.py", "function": "load", "exc": "ValueError",
      "message": "Failed to load the checkpoint: {path}"}, "other"),
    # a context-parallel prefill's sequence lengths are no query length ("seq_len" holds the letters of "q_len")
    ({"file": "vllm/v1/attention/backends/mla/common.py", "function": "reorg_kvcache", "exc": "AssertionError",
      "condition": "max_seq_len_check == max_seq_len"}, "other"),
    ({"file": "flashinfer/mla/_core.py", "function": "_check_inputs", "exc": "ValueError",
      "condition": "(is_varlen_q) and (cum_seq_lens_q is None)",
      "message": "cum_seq_lens_q is required for varlen query input"}, "spec_kernel_limit"),
    # FlashInfer's TRTLLM-gen runner: its kernels are chosen by the query tokens per request; numTokensPerPage
    # is the KV block size
    ({"file": "flashinfer/data/include/flashinfer/trtllm/fmha/fmhaKernels.cuh", "function": "", "exc": "RuntimeError",
      "condition": "findMetaIter != mKernelMetaMap.end()", "message": "Trtllm-gen kernels not found: {info}"},
     "spec_kernel_limit"),
    ({"file": "flashinfer/data/include/flashinfer/trtllm/fmha/kernelParams.h", "function": "", "exc": "RuntimeError",
      "condition": "(options.mNumTokensPerPage & (options.mNumTokensPerPage - 1)) == 0",
      "message": "NumTokensPerPage must be power of 2"}, "block_size_alignment"),
    # a kernel library with no kernel for a decode query length above 1: the length drafts set, though the lookup
    # also names a page size or lists the values it supports
    ({"file": "aiter/mla.py", "function": "get_mla_metadata", "exc": "RuntimeError",
      "message": "no suitable asm kernel: cannot find a matching kernel for heads=32, max_seqlen_qo=3 (only "
                 "max_seqlen_qo=1 with page_size=1)"}, "spec_kernel_limit"),
    ({"file": "aiter/ops/attention.py", "function": "mla_decode_fwd", "exc": "RuntimeError",
      "message": "decode_fwd: unsupported max_seqlen_q=6 for gqa_ratio=8, supported values are 1, 2, 4"},
     "spec_kernel_limit"),
    # AITER MLA's decode-context-parallel route for the multi-token verify (1 + k rows), in every release's form
    ({"file": "vllm/v1/attention/backends/mla/rocm_aiter_mla.py", "function": "_select_dcp_decode_route",
      "exc": "RuntimeError", "message": "ROCM_AITER_MLA DCP multi-token verify requires either segmented MLA or the "
                                        "round-robin asm decode."}, "spec_kernel_limit"),
    # an attention backend that cannot verify drafts against a KV cache interleaved over context-parallel ranks
    ({"file": "vllm/v1/worker/cp_utils.py", "function": "check_attention_cp_compatibility", "exc": "AssertionError",
      "condition": "layer_impl.supports_mtp_with_cp_non_trivial_interleave_size",
      "message": "MTP with cp_kv_cache_interleave_size > 1 is not supported in {layer_impl.__class__.__name__}."},
     "spec_kernel_limit"),
    # FlashMLA's name for the query length per request
    ({"file": "vllm/third_party/flashmla/flash_mla_interface.py", "function": "flash_mla_with_kvcache",
      "exc": "RuntimeError", "message": "s_q * h_q must be <= 128 for sparse fp8 decode (got s_q = 4, h_q = 64)"},
     "spec_kernel_limit"),
    # a kernel's parameters in parentheses, a page size among them: the query length per request decides
    ({"file": "", "function": "", "exc": "RuntimeError",
      "message": "fail to call mla_decode_stage1_asm_fwd: max_seqlen_q (3) > 1 is only supported with num_heads == 128 "
                 "(got num_heads=32, kv_splits=16, page_size=1)"}, "spec_kernel_limit"),
    # the same wording about a setting's value is still a typo's near miss
    ({"file": "vllm/config/cache.py", "function": "CacheConfig._validate", "exc": "ValueError",
      "message": "Unsupported layout X, supported values are NHD, HND"}, "other"),
])
def test_rules_classify_unseen_errors(site, expected):
    assert categorize.categorize(site)[0] == expected


@pytest.mark.parametrize("site,expected", [
    # a block size the backend cannot take is the alignment sibling, though the message says "page size"
    ({"file": "vllm/v1/attention/backends/flashinfer.py", "function": "FlashInferMetadataBuilder.__init__",
      "exc": "AssertionError", "condition": "self.page_size <= 64",
      "message": "Unexpected FlashInfer page size {self.page_size} without trtllm-gen GQA"}, "block_size_alignment"),
    # one KV-cache group's layers with different KV dtypes: the layout, not a weights' quantization method
    ({"file": "vllm/v1/kv_cache_interface.py", "function": "MLAAttentionSpec.merge", "exc": "AssertionError",
      "condition": "len(cache_dtype_str_set) == 1",
      "message": "All attention layers in the same KV cache group must use the same quantization method."},
     "kv_page_size"),
    # the Mamba prefill checkpoint's block index is a state index, not a checkpoint file
    ({"file": "vllm/v1/core/single_type_kv_cache_manager.py", "function": "MambaManager._cache_partial_tail_block",
      "exc": "AssertionError", "condition": "0 <= checkpoint_idx < len(blocks)"}, "state_index"),
    # a CUDA-graph mode a compilation setting cannot run compares no capture size: a near miss
    ({"file": "vllm/config/vllm.py", "function": "VllmConfig.__post_init__", "exc": "AssertionError",
      "condition": "self.compilation_config.mode == CompilationMode.VLLM_COMPILE",
      "message": "Compilation mode should be CompilationMode.VLLM_COMPILE when cudagraph_mode piecewise cudagraphs is "
                 "used, cudagraph_mode={self.compilation_config.cudagraph_mode}"}, "other"),
    # the FLA library's varlen calling convention, whatever the batch holds
    ({"file": "vllm/model_executor/layers/fla/ops/chunk.py", "function": "chunk_gated_delta_rule", "exc": "ValueError",
      "condition": "(cu_seqlens is not None) and (q.shape[0] != 1)",
      "message": "The batch size is expected to be 1 rather than {q.shape[0]} when using `cu_seqlens`."}, "other"),
    # the V2 runner binding KV-cache groups to tensors knows attention specs only: a hybrid's Mamba groups reach it
    ({"file": "vllm/v1/worker/gpu/attn_utils.py", "function": "_reshape_kv_cache", "exc": "AssertionError",
      "condition": "isinstance(kv_cache_spec, AttentionSpec)"}, "kv_page_size"),
    # FlashInfer's cute-dsl MLA decode refusing variable query lengths (a verify of 1 + k rows a request)
    ({"file": "flashinfer/mla/_core.py", "function": "trtllm_batch_decode_with_kv_cache_mla", "exc": "ValueError",
      "condition": "(has_var_q) and (backend == 'cute-dsl')", "message": "cute-dsl MLA does not support cum_seq_lens_q"},
     "spec_kernel_limit"),
    # the DSA indexer's decode batch (next_n = 1 + k rows a request) against its seq_lens
    ({"file": "vllm/model_executor/layers/sparse_attn_indexer.py", "function": "sparse_attn_indexer",
      "exc": "AssertionError", "condition": "batch_size == decode_metadata.seq_lens.shape[0]"}, "spec_kernel_limit"),
    # a Mamba builder's split of the step into decodes and prefills without the step's is_prefilling flags
    ({"file": "vllm/v1/attention/backends/mamba_attn.py", "function": "BaseMambaAttentionMetadataBuilder._compute_common_metadata",
      "exc": "AssertionError", "condition": "is_prefilling is not None"}, "mixed_batch"),
    # FA3 MLA's scheduler-metadata buffer under multi-token decode
    ({"file": "vllm/v1/attention/backends/mla/flashattn_mla.py", "function": "FlashAttnMLAMetadataBuilder._build_decode",
      "exc": "AssertionError", "condition": "n <= self.scheduler_metadata.shape[0]",
      "message": "Scheduler metadata size {n} exceeds buffer size {self.scheduler_metadata.shape[0]}"}, "spec_kernel_limit"),
    # FlashMLA's split-count buffer under multi-token decode
    ({"file": "vllm/v1/attention/backends/mla/flashmla.py", "function": "FlashMLAMetadataBuilder._build_decode",
      "exc": "AssertionError", "condition": "n <= self.cg_buf_num_splits.size(0)"}, "spec_kernel_limit"),
    # the Mamba block size without prefix caching: a flag that needs another, refused (a command-line mistake)
    ({"file": "vllm/config/vllm.py", "function": "VllmConfig.validate_mamba_block_size", "exc": "ValueError",
      "condition": "(self.cache_config.mamba_block_size is not None) and (not self.cache_config.enable_prefix_caching)",
      "message": "--mamba-block-size can only be set with --enable-prefix-caching"}, "other"),
    # the hybrid builders' spec-decode arguments under dual-batch overlap's micro-batches
    ({"file": "vllm/v1/worker/gpu_model_runner.py",
      "function": "GPUModelRunner._build_attention_metadata._build_attn_group_metadata", "exc": "AssertionError",
      "condition": "ubid is None", "message": "UBatching not supported with GDN or linear attn yet"}, "mixed_batch"),
    # the GDN capture batch's accepted-token counts against its draft counts, row for row
    ({"file": "vllm/v1/attention/backends/gdn_attn.py", "function": "GDNAttentionMetadataBuilder.build_for_cudagraph_capture",
      "exc": "AssertionError", "condition": "num_decode_draft_tokens_cpu.shape == num_accepted_tokens.shape"},
     "mixed_batch"),
    # a backend taking only uniform decode query lengths handed requests padded without their tokens
    ({"file": "vllm/v1/attention/backends/utils.py", "function": "split_decodes_and_prefills", "exc": "AssertionError",
      "condition": "num_reqs * query_lens[0] == num_tokens", "message": "tokens not padded correctly"},
     "spec_kernel_limit"),
])
def test_what_a_check_compares_decides_over_a_word_of_it(site, expected):
    """Read in vLLM's source: the word a generic rule keys on ("page size", "quantization method", "checkpoint",
    "cudagraph", "batch size") is not what these checks compare."""
    assert categorize.categorize(site)[0] == expected


def test_cxx_check_messages_concatenated_from_strings_become_templates():
    mod = _script()
    assert mod._cxx_message(['"Trtllm-gen kernels not found: " + info']) == "Trtllm-gen kernels not found: {info}"
    assert mod._cxx_message(['"a " + f(x, "+") + " b"']) == 'a {f(x, "+")} b'


def test_the_shipped_catalog_carries_every_override(tmp_path):
    """A hand decision in OVERRIDES is in the shipped catalog: applying them again (the script's --overrides-only,
    no wheels needed) changes no byte."""
    shipped = ROOT / "diag" / "data" / "failure_sites.json"
    copy = tmp_path / "failure_sites.json"
    copy.write_bytes(shipped.read_bytes())
    assert _script().main(["--overrides-only", "--out", str(copy)]) == 0
    assert copy.read_bytes() == shipped.read_bytes()


def test_extractor_templates(tmp_path):
    mod = _script()
    src = '''
class B:
    def build(self, n, k):
        if n > 0 and k > 0:
            msg = f"num_decodes: {n}, " + "num_spec_decodes: %d" % k
            raise ValueError(msg)
        assert n <= self.bs, "batch {} > {}".format(n, self.bs)
        assert n
'''
    ex = mod.Extractor("vllm/x.py")
    ex.visit(ast.parse(src))
    raise_site, a1, a2 = ex.sites
    assert raise_site["function"] == "B.build" and raise_site["exc"] == "ValueError"
    assert raise_site["message"] == "num_decodes: {n}, num_spec_decodes: {k}"
    assert raise_site["condition"] == "(n > 0 and k > 0)"
    assert a1["message"] == "batch {n} > {self.bs}" and a1["condition"] == "n <= self.bs"
    assert a2["message"] is None and a2["condition"] == "n"
    rows = mod.merge([("0.1.0", ex.sites), ("0.2.0", ex.sites[:1]), ("0.3.0", ex.sites)])
    runs = {r["condition"]: r["versions"] for r in rows}
    assert runs["(n > 0 and k > 0)"] == [["0.1.0", "0.3.0"]]
    assert runs["n"] == [["0.1.0", "0.1.0"], ["0.3.0", "0.3.0"]]


def test_vllms_own_sites_are_diagnosed_in_their_category_in_every_shape_reporters_post():
    """benchmarks/site_categories.py on a fixed sample of the catalog's hybrid / spec-decode sites: written as a
    full traceback, the message alone, frames cut before the exception line, the engine's wrapper and a bare assert
    without source lines, each names its site's category (the whole catalog: 91-100 % per category and shape);
    FlashInfer's and AITER's Python checks are frames like vLLM's own."""
    import random
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from site_categories import shapes

    from vllm_diag.postmortem.analyze import analyze_text

    cat = load()
    sites = sorted((s for s in cat.all_sites() if s.category != "other" and s.file.endswith(".py")), key=lambda s: s.id)
    own = [s for s in sites if s.file.startswith("vllm/")]
    wrappers = [s for s in sites if not s.file.startswith("vllm/")]  # FlashInfer / AITER Python checks
    sample = random.Random(7).sample(own, 60) + random.Random(7).sample(wrappers, 20)
    # a text that two functions raise with different categories is told apart by its frames only
    by_text: dict[str, set[str]] = {}
    for s in cat.all_sites():
        if s.message:
            by_text.setdefault(s.message, set()).add(s.category)
    misses = []
    total = 0
    for site in sample:
        for shape, log in shapes(site, cat.versions).items():
            if shape in ("message", "wrapped") and len(by_text.get(site.message or "", ())) > 1:
                continue
            found = analyze_text(log, use_preflight=False).findings
            total += 1
            if not found or found[0].category != site.category:
                misses.append((shape, site.id, found[0].category if found else None))
    assert total > 250 and not misses, misses

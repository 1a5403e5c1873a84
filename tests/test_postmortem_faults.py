"""GPU faults placed by the kernel that faulted, failure classes decided by what a check compares, and the
configuration numbers an expert quotes, from every place a report states them.

Every log here is written by these tests in the format of the tool that prints it: vLLM's own records
(process prefixes, the worker traceback, the engine config line, the crash dump), cuda-gdb, compute-sanitizer,
CUDA device-side asserts (PyTorch's kernels and Triton's ``tl.device_assert`` print the same line), compose and
Kubernetes manifests. Kernel names and source lines are vLLM's (the releases named next to each).
"""

from __future__ import annotations

import pytest

from vllm_diag.catalog import load
from vllm_diag.catalog.categorize import categorize
from vllm_diag.catalog.kernels import cuda_kernel
from vllm_diag.catalog.match import match_message
from vllm_diag.postmortem.analyze import analyze_text
from vllm_diag.postmortem.diagnose import kernel_place
from vllm_diag.postmortem.reader import facts_from_text

SITE = "/usr/local/lib/python3.12/dist-packages/vllm/"
W = "(Worker_TP0 pid=4411) ERROR 03-02 11:20:07 [multiproc_executor.py:852] "
E = "(EngineCore_DP0 pid=4102) ERROR 03-02 11:20:07 [core.py:1012] "


def _engine(version: str, model: str, spec: tuple[str, int] | None, pc: bool = True, tp: int = 1, dcp: int = 1,
            kv: str = "auto") -> str:
    s = "None" if spec is None else f"SpeculativeConfig(method='{spec[0]}', model='{model}', num_spec_tokens={spec[1]})"
    return (f"(EngineCore_DP0 pid=4102) INFO 03-02 11:02:00 [core.py:96] Initializing a V1 LLM engine (v{version}) with "
            f"config: model='{model}', speculative_config={s}, tokenizer='{model}', skip_tokenizer_init=False, "
            f"tokenizer_mode=auto, revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=65536, "
            f"download_dir=None, load_format=auto, tensor_parallel_size={tp}, pipeline_parallel_size=1, "
            f"data_parallel_size=1, decode_context_parallel_size={dcp}, disable_custom_all_reduce=False, "
            f"quantization=None, enforce_eager=False, kv_cache_dtype={kv}, device_config=cuda, seed=0, "
            f"served_model_name={model}, enable_prefix_caching={pc}, enable_chunked_prefill=True")


def _tb(frames, exc: str, prefix: str = W) -> list[str]:
    out = [f"{prefix}Traceback (most recent call last):"]
    for path, line, fn, code in frames:
        out += [f'{prefix}  File "{path}", line {line}, in {fn}', f"{prefix}    {code}"]
    return out + [f"{prefix}{exc}"]


def _top(text: str):
    fs = analyze_text(text, use_preflight=False).findings
    return fs[0] if fs else None


def _clean(text: str) -> bool:
    """No finding of a hybrid / spec-decode category."""
    return all(f.category == "other" for f in analyze_text(text, use_preflight=False).findings)


HYBRID_MTP_PC = _engine("0.28.0", "Qwen/Qwen3-Next-80B-A3B-Instruct", ("mtp", 2), pc=True, tp=2)
HYBRID_MTP_NOPC = _engine("0.28.0", "Qwen/Qwen3-Next-80B-A3B-Instruct", ("mtp", 2), pc=False, tp=2)
HYBRID_PLAIN = _engine("0.28.0", "Qwen/Qwen3-Next-80B-A3B-Instruct", None, pc=False, tp=2)
MLA_MTP = _engine("0.27.1", "deepseek-ai/DeepSeek-V3.2", ("mtp", 3), pc=True, tp=8, kv="fp8_ds_mla")
MLA_PLAIN = _engine("0.27.1", "deepseek-ai/DeepSeek-V3.2", None, pc=True, tp=8, kv="fp8_ds_mla")
IMA = E + "torch.AcceleratorError: CUDA error: an illegal memory access was encountered"
DUMP_MIXED = (E + "Dumping scheduler output for model execution: SchedulerOutput(scheduled_new_reqs=[], "
              "scheduled_cached_reqs=CachedRequestData(req_ids=['r1', 'r2'],resumed_req_ids=set(),new_token_ids_lens=[],"
              "all_token_ids_lens={},new_block_ids=[None, None],num_computed_tokens=[400, 77],num_output_tokens=[9, 2]), "
              "num_scheduled_tokens={r1: 3, r2: 1}, total_num_scheduled_tokens=4, scheduled_spec_decode_tokens="
              "{r1: [-1, -1]}, scheduled_encoder_inputs={}, num_common_prefix_blocks=[0], finished_req_ids=[], "
              "free_encoder_mm_hashes=[])")


# ------------------------------------------------------------------------------------------------
# the faulting kernel: debuggers, sanitizers and device-side asserts
# ------------------------------------------------------------------------------------------------

SANITIZER_NEW = ["========= Invalid __global__ read of size 4 bytes",
                 "=========     at fused_recurrent_gated_delta_rule_fwd_kernel+0x2b40",
                 "=========     by thread (96,0,0) in block (0,5,11)",
                 "=========     Address 0x7f21c0000400 is out of bounds"]
SANITIZER_OLD = ["========= Invalid __global__ write of size 2 bytes",
                 "=========     at 0x00000a30 in _causal_conv1d_update_kernel",
                 "=========     by thread (0,0,0) in block (12,3,0)"]
GDB_CONV = ["CUDA Exception: Warp Illegal Address",
            "The exception was triggered at PC 0x7f8c4d2e1a90",
            'Thread 1 "VLLM::Worker_TP" received signal CUDA_EXCEPTION_14, Warp Illegal Address.',
            "[Switching focus to CUDA kernel 0, grid 40211, block (3,7,0), thread (32,0,0), device 0, sm 12, warp 2, lane 0]",
            "0x00007f8c4d2e1aa0 in _causal_conv1d_update_kernel<<<(6,32,1),(128,1,1)>>> ()"]


@pytest.mark.parametrize("report", [SANITIZER_NEW, SANITIZER_OLD, GDB_CONV])
def test_a_mamba_kernel_named_by_a_debugger_is_the_state_indices_or_the_batch(report):
    top = _top("\n".join([HYBRID_MTP_PC, *report]))
    assert top.category == "state_index" and top.confidence == "medium" and "faulting kernel" in top.basis
    # the crash dump shows a mixed decode / spec-decode step: the batch
    top = _top("\n".join([HYBRID_MTP_NOPC, DUMP_MIXED, *report]))
    assert top.category == "mixed_batch" and "mixed" in top.basis
    # a hybrid model served without speculative decoding or prefix caching: neither class applies
    assert _clean("\n".join([HYBRID_PLAIN, *report]))


def test_the_sanitizer_report_alone_still_names_the_kernel_and_the_model_kind():
    """No vLLM line at all: the kernel places the fault in Mamba/GDN code (low: the configuration is unknown)."""
    top = _top("\n".join(SANITIZER_NEW))
    assert top.category == "state_index" and top.confidence == "low"
    assert "fused_recurrent_gated_delta_rule_fwd_kernel" in top.basis


def test_an_mla_decode_kernel_under_mtp_is_a_kernel_limit():
    # Triton MLA decode (vllm/v1/attention/ops/triton_decode_attention.py, used by the TRITON_MLA backend)
    gdb = ["CUDA Exception: Warp Out-of-range Address",
           'Thread 1 "VLLM::Worker_TP" received signal CUDA_EXCEPTION_5, Warp Out-of-range Address.',
           "0x00007f5d9c4e2a80 in _fwd_grouped_kernel_stage1<<<(64,1,4),(128,1,1)>>> ()"]
    top = _top("\n".join([MLA_MTP, *gdb]))
    assert top.category == "spec_kernel_limit" and top.confidence == "medium" and top.numbers["next_n"] == 4
    assert top.numbers["kernel_grid"] == [64, 1, 4]
    assert _clean("\n".join([MLA_PLAIN, *gdb]))
    # FlashMLA's compiled decode kernel, as cuda-gdb prints a C++ template
    flashmla = ["CUDA Exception: Warp Illegal Address",
                "0x00007f02aa1b3c40 in flash_fwd_splitkv_mla_kernel<Flash_fwd_kernel_traits_mla<576, 64, 64, 8, "
                "cutlass::bfloat16_t, 512>, true><<<(132,1,1),(256,1,1)>>> ()"]
    assert _top("\n".join([MLA_MTP, *flashmla])).category == "spec_kernel_limit"


def test_kernels_outside_the_families_are_near_misses_even_on_hybrid_mtp_setups():
    sampler = ["/pytorch/aten/src/ATen/native/cuda/TensorCompare.cu:112: _assert_async_cuda_kernel: block: [0,0,0], "
               "thread: [0,0,0] Assertion `probability tensor contains either `inf`, `nan` or element < 0` failed.",
               *_tb([(SITE + "v1/sample/ops/topk_topp_sampler.py", 290, "random_sample",
                      "return probs.div_(q).argmax(dim=-1).view(-1)")],
                    "torch.AcceleratorError: CUDA error: device-side assert triggered")]
    nccl = ["CUDA Exception: Warp Illegal Address",
            "0x00007f11d2a40b10 in ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)<<<(24,1,1),"
            "(640,1,1)>>> ()"]
    moe = ["========= Invalid __global__ read of size 16 bytes", "=========     at fused_moe_kernel+0x1f80"]
    for report in (sampler, nccl, moe):
        assert _clean("\n".join([HYBRID_MTP_PC, *report])), report[0]


def test_a_triton_device_assert_names_its_kernel_and_file():
    text = ("/usr/local/lib/python3.12/dist-packages/vllm/model_executor/layers/mamba/ops/causal_conv1d.py:1123: "
            "_causal_conv1d_update_kernel: block: [5,0,0], thread: [64,0,0] Assertion `conv state index out of range` failed.")
    top = _top("\n".join([HYBRID_MTP_PC, text, W + "RuntimeError: CUDA error: device-side assert triggered"]))
    assert top.category == "state_index" and "causal_conv1d.py" in top.basis
    # PyTorch's own index kernel places nothing: the configuration decides (prefix caching + MTP: state indices)
    aten = ("/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:93: operator(): block: [3,0,0], thread: [5,0,0] "
            "Assertion `-sizes[i] <= index && index < sizes[i] && \"index out of bounds\"` failed.")
    top = _top("\n".join([HYBRID_MTP_PC, aten, W + "RuntimeError: CUDA error: device-side assert triggered"]))
    assert top.category == "state_index" and "does not place the fault" in top.basis


def test_kernel_places_come_from_vllms_source_and_the_compiled_kernels_table():
    cat = load()
    files, versions = cat.gpu_kernel("_causal_conv1d_update_kernel")
    assert "vllm/model_executor/layers/mamba/ops/causal_conv1d.py" in files and versions
    assert any(f.endswith("v1/worker/mamba_utils.py") for f in cat.gpu_kernel("batch_memcpy_kernel")[0])
    assert cat.gpu_kernel("no_such_kernel_anywhere") is None
    assert kernel_place("batch_memcpy_kernel", None)[0] == "mamba_copy"
    assert kernel_place("_fwd_grouped_kernel_stage1", None)[0] == "attention"
    assert kernel_place("anything", ".../vllm/v1/attention/backends/mla/indexer.py")[0] == "mla"
    assert cuda_kernel("void at::native::(anonymous namespace)::indexSelectLargeIndex<float, long>")[2] == "index"
    assert cuda_kernel("sm90_fp8_paged_mqa_logits<128, 2>")[2] == "mla"
    assert cuda_kernel("totally_unknown_kernel") is None


# ------------------------------------------------------------------------------------------------
# what a check compares
# ------------------------------------------------------------------------------------------------


def test_a_state_index_width_mismatch_during_capture_is_the_block_table_not_the_capture_size():
    """vLLM 0.19-0.20 mamba_attn.py _update_metadata_for_cudagraph_capture copies the decode state indices into
    the persistent buffer: with prefix caching ('all' mode) and drafts the index rows have cdiv(L, B) + k columns
    (dimension 1) -- a width mismatch; a row count (dimension 0) is the capture size's business."""
    frames = [(SITE + "v1/worker/gpu_model_runner.py", 6150, "_capture_cudagraphs", "self._dummy_run("),
              (SITE + "v1/worker/gpu_model_runner.py", 2257, "_build_attention_metadata",
               "attn_metadata_i = builder.build_for_cudagraph_capture("),
              (SITE + "v1/attention/backends/mamba_attn.py", 503, "_update_metadata_for_cudagraph_capture",
               "self.state_indices_tensor_d[: metadata.num_decodes].copy_(")]
    engine = _engine("0.19.1", "Qwen/Qwen3.5-27B", ("mtp", 3), pc=True)
    width = "RuntimeError: The size of tensor a (2048) must match the size of tensor b (2051) at non-singleton dimension 1"
    rows = "RuntimeError: The size of tensor a (512) must match the size of tensor b (256) at non-singleton dimension 0"
    top = _top("\n".join([engine, *_tb(frames, width)]))
    assert top.category == "state_index" and "hybrid_state_width" in top.basis
    assert _top("\n".join([engine, *_tb(frames, rows)])).category == "cudagraph_shape"
    assert categorize({"file": "vllm/v1/attention/backends/mamba_attn.py", "function": "f",
                       "condition": "self.block_idx_last_scheduled_token[:n].copy_(x)",
                       "message": "size of tensor a (9) must match the size of tensor b (7) at non-singleton dimension 1",
                       "exc": "RuntimeError"})[0] == "state_index"


@pytest.mark.parametrize("site,expected", [
    # a Mamba helper in a shared module is Mamba code (vllm/v1/attention/backends/utils.py, 0.30+)
    ({"file": "vllm/v1/attention/backends/utils.py", "function": "mamba_get_block_table_tensor",
      "message": "seq_lens has {seq_lens.shape[0]} rows, block_table has {num_reqs}", "exc": "ValueError"}, "state_index"),
    # the state indices of a spec decode need one column per draft position (mamba_ssm.py selective_state_update)
    ({"file": "vllm/model_executor/layers/mamba/ops/mamba_ssm.py", "function": "selective_state_update",
      "condition": "state_batch_indices.shape[1] >= max_seqlen", "exc": "AssertionError"}, "state_index"),
    # MiniMax-M3 is a sparse-attention model, not a lightning-attention hybrid: its uniform decode length is a
    # kernel limit under speculative decoding
    ({"file": "vllm/models/minimax_m3/common/sparse_attention.py", "function": "MiniMaxM3SparseMetadataBuilder.build",
      "condition": "num_decode_tokens == num_decodes * decode_query_len", "exc": "AssertionError"}, "spec_kernel_limit"),
    ({"file": "vllm/v1/attention/backends/mla/triton_mla.py", "function": "TritonMLAImpl.forward_mqa",
      "message": "non-uniform decode block: {B} query rows over {num_decodes} requests", "exc": "ValueError"},
     "spec_kernel_limit"),
    # counter-examples: the model's own shapes in the same code
    ({"file": "vllm/model_executor/layers/mamba/ops/mamba_ssm.py", "function": "selective_state_update",
      "condition": "nheads % ngroups == 0", "message": "nheads must be divisible by ngroups", "exc": "AssertionError"},
     "other"),
    ({"file": "vllm/model_executor/layers/mamba/linear/minimax_linear_attn.py", "function": "weight_direct_load",
      "condition": "param.size() == loaded_weight.size()", "exc": "AssertionError"}, "other"),
])
def test_categorisation_principles(site, expected):
    assert categorize(site)[0] == expected


def test_a_token_count_check_in_mla_code_is_a_kernel_limit_only_under_speculative_decoding():
    """vLLM 0.28 flashmla_sparse.py build: active_num_decodes * decode_query_len == num_decode_tokens (a uniform
    multi-token decode); a catalog site without a category of its own, placed by the configuration."""
    frames = [(SITE + "v1/worker/gpu_model_runner.py", 2540, "_build_attention_metadata", "attn_metadata_i = builder.build("),
              (SITE + "v1/attention/backends/mla/flashmla_sparse.py", 370, "build",
               "assert active_num_decodes * decode_query_len == num_decode_tokens")]
    top = _top("\n".join([MLA_MTP, *_tb(frames, "AssertionError")]))
    assert top.category == "spec_kernel_limit" and top.numbers["next_n"] == 4
    assert _clean("\n".join([MLA_PLAIN, *_tb(frames, "AssertionError")]))
    # a layout / dtype check of the same code stays other under MTP
    frames2 = [(SITE + "v1/attention/backends/mla/indexer.py", 187, "__init__", "assert num_kv_heads == 1")]
    assert _clean("\n".join([MLA_MTP, *_tb(frames2, "AssertionError")]))


def test_a_generic_phrase_does_not_match_a_template():
    """'not supported' is in hundreds of vLLM messages: a partial match needs enough of a template's own text."""
    ms = match_message("mla_decode_fwd: max_seqlen_q 5 is not supported by the asm kernels", "RuntimeError")
    assert all(m.score < 0.5 or "not supported" not in (m.site.message or "") for m in ms)
    top = _top("\n".join(["VLLM_ROCM_USE_AITER=1 vllm serve deepseek-ai/DeepSeek-R1 -tp 8 --speculative-config "
                          "'{\"method\": \"mtp\", \"num_speculative_tokens\": 4}'",
                          W + "RuntimeError: mla_decode_fwd: max_seqlen_q 5 is not supported by the asm kernels"]))
    assert top.category == "spec_kernel_limit" and top.confidence == "low"


# ------------------------------------------------------------------------------------------------
# configuration numbers from every place a report states them
# ------------------------------------------------------------------------------------------------


def test_context_parallel_sizes_from_the_engine_config_line():
    f = facts_from_text(_engine("0.27.1", "deepseek-ai/DeepSeek-V3.2", ("mtp", 1), tp=8, dcp=2))
    assert f.args["decode_context_parallel_size"] == 2 and f.args["tensor_parallel_size"] == 8
    assert f.args["max_model_len"] == 65536 and f.args["num_speculative_tokens"] == 1


@pytest.mark.parametrize("manifest", [
    # Kubernetes args as one flow list over several lines
    ['        args: ["--model", "Qwen/Qwen3.5-122B-A10B", "--tensor-parallel-size", "4", "--max-num-seqs", "128",',
     '               "--max-num-batched-tokens", "16384", "--max-model-len", "131072", "--block-size", "32",',
     """               "--speculative-config", '{"method": "mtp", "num_speculative_tokens": 2}']"""],
    # a YAML block sequence, one argv item per line
    ["    args:", "      - --model", "      - Qwen/Qwen3.5-122B-A10B", "      - --tensor-parallel-size", '      - "4"',
     "      - --max-num-seqs", "      - '128'", "      - --max-num-batched-tokens=16384", "      - --max-model-len",
     "      - '131072'", "      - --block-size", "      - '32'", "      - --speculative-config",
     """      - '{"method": "mtp", "num_speculative_tokens": 2}'""", "    resources:"],
    # a flow list whose JSON flag value is one double-quoted YAML string with escaped quotes
    ['        args: ["--model", "Qwen/Qwen3.5-122B-A10B", "--tensor-parallel-size", "4", "--max-num-seqs", "128",',
     '               "--max-num-batched-tokens", "16384", "--max-model-len", "131072", "--block-size", "32",',
     '               "--speculative-config", "{\\"method\\": \\"mtp\\", \\"num_speculative_tokens\\": 2}"]'],
    # compose exec form
    ['    command: ["vllm", "serve", "Qwen/Qwen3.5-122B-A10B", "--tensor-parallel-size", "4", "--max-num-seqs",',
     '              "128", "--max-num-batched-tokens", "16384", "--max-model-len", "131072", "--block-size", "32",',
     """              "--speculative-config", '{"method": "mtp", "num_speculative_tokens": 2}']"""],
])
def test_argv_lists_of_manifests_are_commands(manifest):
    f = facts_from_text("\n".join([*manifest, IMA]))
    want = {"tensor_parallel_size": 4, "max_num_seqs": 128, "max_num_batched_tokens": 16384, "max_model_len": 131072,
            "block_size": 32, "num_speculative_tokens": 2}
    assert {k: f.args.get(k) for k in want} == want
    assert f.startup.get("command_complete") is True
    top = _top("\n".join([*manifest, IMA]))
    assert top.category == "state_index" and top.numbers["max_num_seqs"] == 128


def test_a_bullet_list_of_a_few_flags_is_not_a_whole_command():
    """A list without the model proves nothing by what it lacks: the precondition check must not fire on it."""
    text = "\n".join(["Things we tried:", "  - --enforce-eager", "  - --max-num-seqs 8",
                      "We serve Qwen3.5-27B with MTP (k=2).", IMA])
    f = facts_from_text(text)
    assert f.args.get("max_num_seqs") == 8 and f.startup.get("command_complete") is not True
    assert _top(text).category == "state_index"


def test_an_index_error_in_gdn_code_is_the_batch_or_the_state_by_what_the_statement_indexes():
    """vLLM 0.26 gdn_attn.py build: the accepted-draft counts of the previous step indexed by this step's
    spec-decode mask -- rows of the batch; a state tensor indexed by state indices -- the state indices."""
    engine = _engine("0.26.0", "Qwen/Qwen3.5-35B-A3B", ("mtp", 2), pc=False)
    batch = [(SITE + "v1/attention/backends/gdn_attn.py", 326, "build",
              "num_accepted_tokens = num_accepted_tokens[spec_sequence_masks_cpu]")]
    mask = "IndexError: The shape of the mask [7] at index 0 does not match the shape of the indexed tensor [8] at index 0"
    assert _top("\n".join([engine, *_tb(batch, mask)])).category == "mixed_batch"
    qsl = [(SITE + "v1/attention/backends/gdn_attn.py", 240, "build",
            "spec_query_start_loc = query_start_loc[: num_spec_decodes + 1]")]
    assert _top("\n".join([engine, *_tb(qsl, "IndexError: index 9 is out of bounds for dimension 0 with size 9")])
                ).category == "mixed_batch"
    state = [(SITE + "model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py", 812, "_forward_core",
              "initial_state = ssm_state[non_spec_state_indices_tensor].contiguous()")]
    assert _top("\n".join([engine, *_tb(state, "IndexError: index 4097 is out of bounds for dimension 0 with size 4097")])
                ).category == "state_index"


def test_a_capability_gap_stated_in_hybrid_code_stays_other():
    """A backend or platform saying it does not support a combination (the XPU GDN path without spec-decode
    masks) is no mismatch: the frames' near-miss rule wins over the weaker hint of the function's other checks. AITER's
    shuffled KV layout names what it cannot take -- a decode of more than one query token, 1 + k under drafts --:
    the backend's query-length limit."""
    engine = _engine("0.28.0", "Qwen/Qwen3.5-27B", ("mtp", 2))
    frames = [(SITE + "model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py", 900, "_forward_core",
               "raise NotImplementedError(")]
    assert _clean("\n".join([engine, *_tb(frames, "NotImplementedError: speculative decoding with GDN is not supported "
                                                  "on XPU yet")]))
    assert categorize({"file": "vllm/v1/attention/backends/rocm_aiter_fa.py", "function": "AiterFlashAttentionImpl.forward",
                       "condition": "not rocm_aiter_ops.is_shuffle_kv_cache_enabled()",
                       "message": "Shuffle KV cache layout is not supported with speculative decoding (multi-token decode).",
                       "exc": "AssertionError"}) == ("spec_kernel_limit", "override:aiter_shuffle_multi_token_decode")
    # a stated limit is not a gap
    assert categorize({"file": "vllm/v1/attention/backends/linear_attn.py", "function": "B.build_for_cudagraph_capture",
                       "condition": "m.max_query_len <= 1 + self.num_spec",
                       "message": "Bailing linear attention only supports speculative decoding with query length <= 1 + "
                                  "number of speculative tokens.", "exc": "AssertionError"})[0] != "other"


def test_the_worker_prefix_with_a_rank_of_older_releases():
    """vLLM 0.8-0.10 prefixed worker records with "(VllmWorker rank=N pid=P)"."""
    p = "(VllmWorker rank=2 pid=5521) ERROR 04-10 09:00:00 [multiproc_executor.py:470] "
    frames = [(SITE + "v1/attention/backends/mamba_attn.py", 503, "_update_metadata_for_cudagraph_capture",
               "self.state_indices_tensor_d[: metadata.num_decodes].copy_(")]
    text = "\n".join(["We run Qwen3-Next with MTP (k=2) and prefix caching enabled on 0.20.0.",
                      *_tb(frames, "RuntimeError: The size of tensor a (4096) must match the size of tensor b (4098) at "
                                   "non-singleton dimension 1", p)])
    f = facts_from_text(text)
    assert f.root is not None and f.root.process == "VllmWorker_rank2" and f.root.frames[-1].line == 503
    assert _top(text).category == "state_index"
    # and "(VllmWorker TP0 pid=P)": the worker's own traceback, not the EngineCore's wrapper of it, is the root
    tp = text.replace("(VllmWorker rank=2 pid=5521)", "(VllmWorker TP0 pid=5521)")
    wrapper = f"{E}RuntimeError: Worker failed with error 'The size of tensor a (4096) must match the size of tensor b " \
              "(4098) at non-singleton dimension 1', please check the stack trace above for the root cause"
    f = facts_from_text(tp + "\n" + wrapper)
    assert f.root.process == "VllmWorker TP0" and f.root.frames and f.root.frames[-1].line == 503


def test_flashinfer_finding_no_trtllm_kernel_is_the_decode_kernels_limit_under_drafts():
    """FlashInfer's TRTLLM-gen runner picks its generation kernel by the query tokens per request (1 + k under
    drafts): no compiled kernel for the call is the decode kernel's limit where the log configures drafts, and
    another failure (head dims, page size, GPU) where it configures none."""
    frames = [(SITE + "v1/attention/backends/mla/flashinfer_mla.py", 190, "forward_mqa",
               "o = trtllm_batch_decode_with_kv_cache_mla("),
              ("/usr/local/lib/python3.12/dist-packages/flashinfer/mla/_core.py", 2941,
               "trtllm_batch_decode_with_kv_cache_mla", "get_trtllm_gen_fmha_module().trtllm_paged_attention_decode(")]
    error = ("RuntimeError: Error in function 'loadKernel' at /workspace/include/flashinfer/trtllm/fmha/fmhaKernels.cuh:"
             "991: Trtllm-gen kernels not found: qkvLayout=2, maskType=0, kernelType=2, headDimQk=576, headDimV=512, "
             "tileSizeQ=8, tileSizeKv=128, numTokensPerPage=64")
    drafts = _engine("0.25.0", "moonshotai/Kimi-K2-Instruct", ("eagle3", 3))
    assert _top("\n".join([drafts, *_tb(frames, error)])).category == "spec_kernel_limit"
    # FlashInfer's other spelling of the same lookup failure
    missing = error.replace("991: Trtllm-gen kernels not found:", "214: Missing TRTLLM-GEN kernel (decode):")
    assert _top("\n".join([drafts, *_tb(frames, missing)])).category == "spec_kernel_limit"
    no_drafts = _engine("0.25.0", "moonshotai/Kimi-K2-Instruct", None)
    assert _top("\n".join([no_drafts, *_tb(frames, error)])).category == "other"


def _uniform_spec_step_fault(version: str, k: int, reqs: int = 5, sizes: str = "") -> str:
    """A hybrid + MTP engine of ``version`` whose crash dump is ``reqs`` spec decodes of 1 + k tokens each, then an
    illegal memory access surfacing at the rejection sampler's host copy."""
    ids = [f"r{i}" for i in range(reqs)]
    dump = (f"{E.replace('[core.py:1012]', '[dump_input.py:79]')}Dumping scheduler output for model execution: "
            f"SchedulerOutput(scheduled_new_reqs=[], scheduled_cached_reqs=CachedRequestData(req_ids={ids}, "
            f"resumed_from_preemption={[False] * reqs}, new_token_ids=[], new_block_ids={[None] * reqs}, "
            f"num_computed_tokens={[1500 + 37 * i for i in range(reqs)]}), "
            f"num_scheduled_tokens={ {i: 1 + k for i in ids} }, total_num_scheduled_tokens={reqs * (1 + k)}, "
            f"scheduled_spec_decode_tokens={ {i: list(range(11, 11 + k)) for i in ids} }, scheduled_encoder_inputs={{}})")
    engine = _engine(version, "Qwen/Qwen3-Next-80B-A3B-Instruct", ("qwen3_next_mtp", k), pc=False, tp=4) + sizes
    return "\n".join([engine, dump] + _tb([
        (SITE + "v1/worker/gpu_model_runner.py", 2147, "_bookkeeping_sync",
         "valid_sampled_token_ids = self.rejection_sampler.parse_output("),
        (SITE + "v1/sample/rejection_sampler.py", 124, "parse_output",
         "output_token_ids_np = output_token_ids.cpu().numpy()")],
        "RuntimeError: CUDA error: an illegal memory access was encountered"))


def test_a_uniform_spec_decode_step_padded_past_a_multiple_of_1_plus_k_before_0_12_is_the_capture_size():
    """Before vLLM 0.12.0 the capture sizes were not rounded to multiples of 1 + k (issue #28207): 5 spec decodes of
    3 tokens (15) replay the full decode graph of 16 tokens, whose rows split a request over the hybrid's state."""
    f = _top(_uniform_spec_step_fault("0.11.0", 2))
    assert f.category == "cudagraph_shape" and "padded from 15 to 16" in f.title
    assert (f.numbers["padded_num_tokens"], f.numbers["uniform_decode_query_len"]) == (16, 3)
    # from 0.12.0 vLLM rounds the sizes itself; k = 3 pads 20 tokens to 24, a multiple of 4; the user's sizes decide
    assert _top(_uniform_spec_step_fault("0.12.0", 2)).category != "cudagraph_shape"
    assert _top(_uniform_spec_step_fault("0.11.0", 3)).category != "cudagraph_shape"
    assert _top(_uniform_spec_step_fault("0.11.0", 2, sizes=", compilation_config={\"cudagraph_capture_sizes\": "
                                         "[1, 3, 6, 9, 12, 15, 18]}")).category != "cudagraph_shape"

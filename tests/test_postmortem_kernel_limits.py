"""Attention-kernel limits under speculative decoding (family C) and their siblings, decided by what a check
compares and where vLLM was, and the numbers an operator quotes from such logs.

Every log here is written by these tests in vLLM's format (process prefixes, worker tracebacks, the scheduler
dump, kernel check text as the libraries print it); models, numbers and wrapping differ from any report.
"""

from __future__ import annotations

from vllm_diag.postmortem.analyze import analyze_text
from vllm_diag.postmortem.reader import facts_from_text
from vllm_diag.render.json import encode

W = "(Worker_TP3 pid=771) ERROR 12-01 10:11:12 [multiproc_executor.py:840] "
SITE = "/opt/conda/lib/python3.11/site-packages/vllm/"


def _tb(frames, exc: str | None, prefix: str = W) -> list[str]:
    out = [f"{prefix}Traceback (most recent call last):"]
    for path, line, fn, code in frames:
        out += [f'{prefix}  File "{path}", line {line}, in {fn}']
        if code:
            out.append(f"{prefix}    {code}")
    return out + ([f"{prefix}{exc}"] if exc else [])


def _top(log: str):
    fs = analyze_text(log, use_preflight=False).findings
    return fs[0] if fs else None


# ------------------------------------------------------------------------------------------------
# a planned query length per request (what speculative decoding sets) vs the step's
# ------------------------------------------------------------------------------------------------

PLANNED = ("ValueError: qo_len per request is fixed by the captured decode wrapper: it was planned for 3 "
           "tokens per request, this step has 5")


def test_a_wrapper_planned_for_one_query_length_is_a_kernel_limit_even_when_frozen_in_a_graph():
    log = "\n".join([
        "vllm serve mistralai/Mistral-Small-3.2-24B-Instruct-2506 --speculative-config "
        "'{\"method\": \"eagle3\", \"model\": \"some-org/eagle3-head\", \"num_speculative_tokens\": 2}' "
        "--compilation-config '{\"cudagraph_mode\": \"FULL_DECODE_ONLY\"}'",
        "[...]",
        PLANNED.replace("captured decode wrapper", "decode wrapper captured in a CUDA graph"),
    ])
    top = _top(log)
    assert top.category == "spec_kernel_limit", (top.category, top.basis)
    assert top.confidence in ("low", "medium") and top.basis


def test_a_capture_size_check_stays_a_cuda_graph_shape():
    log = ("AssertionError: the padded batch size 48 is not one of the CUDA graph capture sizes; the wrapper was "
           "planned for capture sizes [1, 2, 4, 8, 16, 32]")
    top = _top(log)
    assert top is None or top.category in ("cudagraph_shape", "other")


# ------------------------------------------------------------------------------------------------
# frames only: the drafter building metadata for its own (attention) layers
# ------------------------------------------------------------------------------------------------

DRAFT_FRAMES = [
    (SITE + "v1/worker/gpu_model_runner.py", 3391, "propose_draft_token_ids", None),
    (SITE + "v1/spec_decode/eagle.py", 402, "propose", None),
    (SITE + "v1/spec_decode/eagle.py", 733, "build_per_group_and_layer_attn_metadata", None),
]


def test_drafter_metadata_frames_without_an_exception_line_are_a_kernel_limit():
    lines = [f'  File "{p}", line {n}, in {fn}' for p, n, fn, _ in DRAFT_FRAMES]
    top = _top("\n".join(lines))
    assert top.category == "spec_kernel_limit" and top.confidence == "low"
    assert "drafter" in top.basis and top.missing_evidence


def test_target_metadata_frames_of_a_dense_model_without_spec_claim_nothing():
    lines = [f'  File "{SITE}v1/worker/gpu_model_runner.py", line 2410, in _build_attention_metadata',
             f'  File "{SITE}v1/attention/backends/flash_attn.py", line 301, in build']
    top = _top("\n".join(lines))
    assert top is None or top.category == "other"


def test_drafter_frames_of_a_hybrid_model_are_not_claimed_for_the_kernels():
    cmd = ("vllm serve Qwen/Qwen3.5-35B-A3B --speculative-config "
           "'{\"method\": \"mtp\", \"num_speculative_tokens\": 2}' --enable-prefix-caching")
    lines = [f'  File "{p}", line {n}, in {fn}' for p, n, fn, _ in DRAFT_FRAMES]
    top = _top("\n".join([cmd, "[...]", *lines]))
    assert top is None or top.category != "spec_kernel_limit"


# ------------------------------------------------------------------------------------------------
# numbers an operator quotes from such logs
# ------------------------------------------------------------------------------------------------


def test_both_sides_of_a_planned_vs_got_comparison_under_the_quantity_name():
    n = facts_from_text(PLANNED.replace("planned for 3 tokens per request, this step has 5",
                                        "planned with 3, got 5")).numbers
    assert n["qo_len_expected"] == 3 and n["qo_len_got"] == 5
    n = facts_from_text("AssertionError: expected 2 kv cache groups, got 3").numbers
    assert n["kv_cache_groups_expected"] == 2 and n["kv_cache_groups_got"] == 3
    n = facts_from_text("RuntimeError: head_dim must be 128 but got 96").numbers
    assert n["head_dim_expected"] == 128 and n["head_dim_got"] == 96


def test_a_kernel_check_macro_in_a_cuda_frame_gives_its_threshold_and_the_source_line():
    p = "(Worker_TP2 pid=88) ERROR 12-01 10:11:12 [multiproc_executor.py:840] "
    log = "\n".join([
        f'{p}  File "{SITE}v1/attention/backends/mla/flashmla_sparse.py", line 640, in forward_mqa',
        f"{p}    out = sparse_decode_fwd(q, kv_cache, indices, topk_length)",
        f'{p}  File "/root/.cache/flashinfer/csrc/sparse_decode_sm100.cuh", line 87, in void sparse_decode_fwd(...)',
        f"{p}    TVM_FFI_ICHECK_LE(num_q_tokens, 32)",
    ])
    n = facts_from_text(log).numbers
    assert n["sparse_decode_sm100_line"] == 87 and n["flashmla_sparse_line"] == 640
    assert n["check_operand"] == "num_q_tokens" and n["check_op"] == "<=" and n["check_threshold"] == 32
    n = facts_from_text("RuntimeError: Check failed: (next_n <= 2) is false: unsupported draft length").numbers
    assert n["check_operand"] == "next_n" and n["check_threshold"] == 2


def test_kernel_detail_fields_also_under_vllms_name():
    log = "\n".join(["mla_decode_fwd: no kernel for this configuration",
                     "  q_type:fp16 kv_type:bf16 gqa:8 ps:1 qseqlen:3 lse:0"])
    n = facts_from_text(log).numbers
    assert n["qseqlen"] == 3 and n["max_seqlen_q"] == 3 and n["gqa"] == 8


def test_parallel_sizes_implied_by_worker_prefixes_are_lower_bounds():
    rec = "(Worker_PP1_TP0_EP0 pid=4) ERROR 12-01 10:11:12 [multiproc_executor.py:840] RuntimeError: boom"
    rec2 = "(Worker_DP2_TP1 pid=5) ERROR 12-01 10:11:12 [multiproc_executor.py:840] RuntimeError: boom"
    s = facts_from_text("\n".join([rec, rec2])).startup
    assert s["pipeline_parallel_size_seen"] == 2 and s["data_parallel_size_seen"] == 3
    assert s["tensor_parallel_size_seen"] == 2
    # only rank 0 seen proves nothing about the size
    s = facts_from_text("(Worker_PP0_TP0 pid=4) ERROR 12-01 10:11:12 [x.py:1] RuntimeError: boom").startup
    assert "pipeline_parallel_size_seen" not in s


def test_a_memory_message_cut_by_the_excerpt_keeps_the_sides_it_has():
    log = "\n".join(["ValueError: To serve at least one request with the models's max seq len (65536),",
                     "  (12.25 GiB KV cache is needed, which is larger than the available"])
    n = facts_from_text(log).numbers
    assert n["max_model_len"] == 65536 and n["kv_cache_needed_gib"] == 12.25
    assert "kv_cache_available_gib" not in n


def test_scheduler_output_fields_quoted_without_the_dump_header():
    log = "\n".join([
        "RuntimeError: the step broke",
        "[...]",
        "   total_num_scheduled_tokens=9, num_computed_tokens=[4096, 130], num_scheduled_tokens={a: 5, b: 4},",
        "   num_spec_tokens_to_schedule=4",
    ])
    f = facts_from_text(log)
    b = f.startup["crash_batch"]
    assert b["num_computed_tokens"] == [4096, 130] and b["tokens_per_req"] == [5, 4]
    assert b["total_num_scheduled_tokens"] == 9 and b["num_spec_tokens_to_schedule"] == 4
    doc = encode(analyze_text(log, use_preflight=False).to_record())
    assert doc["startup"]["crash_batch"]["num_computed_tokens"] == [4096, 130]


# ------------------------------------------------------------------------------------------------
# block-table widths in the ratio of the context-parallel size
# ------------------------------------------------------------------------------------------------

DCP_CMD = ("vllm serve zai-org/GLM-5-FP8 --tensor-parallel-size 4 --decode-context-parallel-size 4 "
           "--max-model-len 262144 --block-size 64 --speculative-config '{\"method\": \"mtp\", "
           "\"num_speculative_tokens\": 1}'")
WIDTH = ("RuntimeError: The expanded size of the tensor (1024) must match the existing size (4096) at non-singleton "
         "dimension 1.  Target sizes: [6, 1024].  Tensor sizes: [6, 4096]")


def test_widths_in_the_ratio_of_the_decode_context_parallel_size_are_the_indexer_buffer():
    frames = [(SITE + "v1/worker/gpu_model_runner.py", 2301, "_build_attention_metadata", "builder.build("),
              (SITE + "v1/attention/backends/mla/indexer.py", 611, "build",
               "self.expanded_block_table_buffer[:n] = block_table")]
    top = _top("\n".join([DCP_CMD, "[...]", *_tb(frames, WIDTH)]))
    assert top.category == "spec_kernel_limit" and top.confidence == "medium"
    assert "ratio of 4" in top.basis and "context-parallel" in top.basis
    assert top.numbers["buffer_width"] == 1024 and top.numbers["block_table_width"] == 4096
    assert top.numbers["decode_context_parallel_size"] == 4 and top.numbers["max_model_len"] == 262144
    # the bare message with the command: the ratio still matches, no frame places it
    top = _top("\n".join([DCP_CMD, "[...]", WIDTH]))
    assert top.category == "spec_kernel_limit" and top.missing_evidence


def test_a_width_ratio_that_is_not_the_cp_size_or_no_cp_claims_no_width_class():
    other = WIDTH.replace("(1024)", "(2048)").replace("[6, 1024]", "[6, 2048]")
    top = _top("\n".join([DCP_CMD, "[...]", other]))  # ratio 2, DCP 4
    assert top is None or "context-parallel" not in top.basis
    no_cp = DCP_CMD.replace(" --decode-context-parallel-size 4", "")
    top = _top("\n".join([no_cp.replace("--speculative-config", "--x").split(" --x")[0], "[...]", WIDTH]))
    assert top is None or top.category == "other"


def test_a_width_ratio_on_a_hybrid_model_is_left_to_the_state_index_classes():
    cmd = DCP_CMD.replace("zai-org/GLM-5-FP8", "Qwen/Qwen3-Next-80B-A3B-Instruct")
    top = _top("\n".join([cmd, "[...]", WIDTH]))
    assert top is None or "context-parallel" not in top.basis


def test_weight_loading_with_a_width_ratio_stays_a_near_miss():
    frames = [(SITE + "model_executor/model_loader/default_loader.py", 277, "load_weights", "model.load_weights("),
              (SITE + "model_executor/layers/linear.py", 1210, "weight_loader", "param_data.copy_(loaded_weight)")]
    exc = ("RuntimeError: The size of tensor a (1024) must match the size of tensor b (4096) at non-singleton "
           "dimension 1")
    top = _top("\n".join([DCP_CMD.replace(" --speculative-config", " --x").split(" --x")[0], "[...]", *_tb(frames, exc)]))
    assert top is None or top.category == "other"
    # with speculative decoding on as well, the frames still say weights, not a block table
    top = _top("\n".join([DCP_CMD, "[...]", *_tb(frames, exc)]))
    assert top is None or top.category == "other"


def test_yaml_items_holding_several_flags_and_a_json_connector_config():
    log = "\n".join([
        "  - --kv-transfer-config={\"kv_connector\":\"OffloadingConnector\",\"kv_role\":\"kv_both\","
        "\"kv_connector_extra_config\":{\"num_cpu_blocks\":40000,\"api_key\":\"abc\"}}",
        "  - --max-num-seqs 48 --enable-prefix-caching",
        "  - --tensor-parallel-size=4 --gpu-memory-utilization=0.85",
    ])
    a = facts_from_text(log).args
    assert a["max_num_seqs"] == 48 and a["enable_prefix_caching"] is True and a["tensor_parallel_size"] == 4
    cfg = a["kv_transfer_config"]
    assert cfg["kv_connector"] == "OffloadingConnector"
    assert cfg["kv_connector_extra_config"]["num_cpu_blocks"] == 40000
    assert cfg["kv_connector_extra_config"]["api_key"] == "<redacted>"  # secrets inside a JSON config too


def test_counts_named_by_what_they_count():
    n = facts_from_text("AssertionError: ShortConvAttentionBackend declares 3 states, but provides 1 state copy "
                        "func").numbers
    assert n["states"] == 3 and n["state_copy_func"] == 1
    n = facts_from_text("RuntimeError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 3 has a total capacity "
                        "of 44.40 GiB").numbers
    assert not any(k in n for k in ("gib", "has"))


# ------------------------------------------------------------------------------------------------
# a kernel library's check macro as the innermost frame (no exception line, not in the catalog)
# ------------------------------------------------------------------------------------------------

KW = "(Worker_TP6 pid=64) ERROR 12-01 10:11:12 [multiproc_executor.py:1004] "
SPEC_MLA = ("vllm serve moonshotai/Kimi-K2-Instruct -tp 8 --speculative-config "
            "'{\"method\": \"eagle3\", \"model\": \"org/k2-eagle3\", \"num_speculative_tokens\": 5}'")


def _kernel_frame(check: str, file: str = "mla_xqa_decode.cu") -> str:
    return "\n".join([f'{KW}  File "/srv/env/lib/python3.12/site-packages/flashinfer/data/csrc/{file}", line 143, in '
                      f"void flashinfer::mla_xqa(...)", f"{KW}    {check}"])


def test_a_kernel_check_on_the_query_length_under_spec_decoding_is_a_kernel_limit():
    top = _top("\n".join([SPEC_MLA, "[...]", _kernel_frame("TVM_FFI_ICHECK_LE(max_q_len, 4)")]))
    assert top.category == "spec_kernel_limit" and top.confidence == "medium"
    assert "max_q_len <= 4" in top.basis and top.numbers["check_threshold"] == 4
    assert top.numbers["mla_xqa_decode_line"] == 143


def test_kernel_checks_of_dtypes_or_without_spec_decoding_stay_out_of_the_families():
    top = _top("\n".join([SPEC_MLA, "[...]", _kernel_frame("TVM_FFI_ICHECK_EQ(q.dtype(), kv_cache.dtype())")]))
    assert top is None or top.category == "other"
    no_spec = "vllm serve moonshotai/Kimi-K2-Instruct -tp 8 --max-num-seqs 32"
    top = _top("\n".join([no_spec, _kernel_frame("TVM_FFI_ICHECK_LE(max_q_len, 4)")]))
    assert top is None or top.category == "other"


def test_two_engine_starts_in_one_log_keep_each_starts_value():
    e = "(EngineCore pid={}) INFO 12-01 10:00:00 [interface.py:900] "
    log = "\n".join([
        e.format(10) + "Setting attention block size to 1056 tokens to ensure that attention page size is >= mamba page size.",
        e.format(10) + "Padding mamba page size by 2.31% to ensure that mamba page size and attention page size are exactly equal.",
        "--- second run, without the drafter ---",
        e.format(20) + "Setting attention block size to 528 tokens to ensure that attention page size is >= mamba page size.",
        e.format(20) + "Padding mamba page size by 0.75% to ensure that mamba page size and attention page size are exactly equal.",
    ])
    s = facts_from_text(log).startup
    assert s["attention_block_size"] == 528 and s["attention_block_size_runs"] == [1056, 528]
    assert s["mamba_padding_percent_runs"] == [2.31, 0.75]
    # the same value printed by every worker is one start
    one = "\n".join([e.format(n) + "Setting attention block size to 528 tokens to ensure that attention page size is "
                     ">= mamba page size." for n in (1, 2, 3)])
    assert "attention_block_size_runs" not in facts_from_text(one).startup


def test_both_sides_of_a_failed_copy_named_rows_or_width():
    n = facts_from_text("RuntimeError: The expanded size of the tensor (2048) must match the existing size (6144) at "
                        "non-singleton dimension 1.  Target sizes: [12, 2048].  Tensor sizes: [12, 6144]").numbers
    assert n["target_width"] == 2048 and n["source_width"] == 6144 and n["rows"] == 12
    n = facts_from_text("RuntimeError: The expanded size of the tensor (64) must match the existing size (61) at "
                        "non-singleton dimension 0").numbers
    assert n["target_rows"] == 64 and n["source_rows"] == 61
    # an excerpt with only PyTorch's sizes line (no exception line)
    n = facts_from_text("Target sizes: [5, 300].  Tensor sizes: [5, 302]").numbers
    assert n["target_width"] == 300 and n["source_width"] == 302 and n["rows"] == 5
    # a higher-rank tensor: no table words
    n = facts_from_text("RuntimeError: The expanded size of the tensor (4) must match the existing size (8) at "
                        "non-singleton dimension 2.  Target sizes: [3, 5, 4].  Tensor sizes: [3, 5, 8]").numbers
    assert not any(k in n for k in ("target_width", "target_rows", "rows"))


def test_a_command_wrapped_at_a_fixed_width_is_joined_back():
    cmd = ("vllm serve nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B --tensor-parallel-size 2 --max-num-batched-tok"
           "ens 4096 --max-model-len 32768 --port 8011 --speculative-config '{\"method\":\"mtp\",\"num_specula"
           "tive_tokens\":3}' --enable-prefix-caching")
    width = 64
    wrapped = "\n".join(cmd[i:i + width] for i in range(0, len(cmd), width))
    a = facts_from_text(wrapped + "\n(EngineCore_DP0 pid=3) ERROR 12-01 10:00:00 [core.py:1] RuntimeError: x").args
    assert a["max_num_batched_tokens"] == 4096 and a["max_model_len"] == 32768 and a["port"] == 8011
    assert a["num_speculative_tokens"] == 3 and a["enable_prefix_caching"] is True


def test_prose_after_a_whole_command_is_not_joined():
    log = "\n".join(["vllm serve Qwen/Qwen3.5-9B --max-num-seqs 16 --enable-prefix-caching",
                     "crashes after a few minutes with the error below",
                     "RuntimeError: boom"])
    a = facts_from_text(log).args
    assert a["max_num_seqs"] == 16 and a["enable_prefix_caching"] is True
    assert not any("crash" in str(v) for v in a.values())


def test_parallel_sizes_in_the_reporters_shorthand():
    a = facts_from_text("Serving GLM-5 with TP4 + DCP2 and pp 2 on 8x H20, MTP k=1.\nRuntimeError: boom").args
    assert a["tensor_parallel_size"] == 4 and a["decode_context_parallel_size"] == 2
    assert a["pipeline_parallel_size"] == 2
    # ranks in log records and a stated size win over the shorthand
    log = "\n".join(["I use TP2 normally.", "vllm serve m --tensor-parallel-size 4",
                     "(Worker_TP0 pid=1) INFO 12-01 10:00:00 [x.py:1] TP0 ready"])
    assert facts_from_text(log).args["tensor_parallel_size"] == 4
    assert "data_parallel_size" not in facts_from_text("the DP0 engine died\nRuntimeError: boom").args


def test_cp_width_class_from_the_reporters_words_alone():
    log = "\n".join(["Our sparse-MLA (DSA) deployment: TP4 with DCP 4 and MTP. The first decode step dies:",
                     "RuntimeError: The expanded size of the tensor (750) must match the existing size (3000) at "
                     "non-singleton dimension 1"])
    top = _top(log)
    assert top.category == "spec_kernel_limit" and "ratio of 4" in top.basis
    assert top.numbers["decode_context_parallel_size"] == 4 and top.numbers["width_ratio"] == 4
    # the same words about a hybrid model leave it to the state-index classes
    hybrid = log.replace("sparse-MLA (DSA) deployment", "Qwen3-Next deployment")
    top = _top(hybrid)
    assert top is None or "context-parallel" not in top.basis


def test_an_excerpt_with_only_pytorchs_sizes_line_reads_as_the_copy_error():
    sizes = "Target sizes: [9, 3001].  Tensor sizes: [9, 3002]"
    an = analyze_text(sizes, use_preflight=False)
    assert an.facts.root is not None and an.facts.root.exc_type == "RuntimeError"
    assert not an.findings or an.findings[0].category == "other"  # nothing known: no family
    top = _top("DeepSeek-V3.2 with MTP (k=2) on 8x H200, decode dies:\n" + sizes)
    assert top.category == "spec_kernel_limit" and top.confidence == "low"
    top = _top("vllm serve meta-llama/Llama-3.1-8B-Instruct -tp 2\n" + sizes)
    assert top is None or top.category == "other"


def test_a_capture_runs_token_count_against_the_token_buffers_is_a_cuda_graph_shape():
    cmd = ("vllm serve ibm-granite/granite-4.0-h-small --max-num-batched-tokens 512 --max-num-seqs 256 "
           "--speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 4, \"prompt_lookup_max\": 2}'")
    e = "(EngineCore_DP0 pid=12) ERROR 12-01 10:00:00 [core.py:866] "
    frames = [(SITE + "v1/worker/gpu_model_runner.py", 4311, "capture_model", "self._dummy_run("),
              (SITE + "v1/worker/gpu_model_runner.py", 4702, "_dummy_run", "assert num_tokens_padded <= self.max_num_tokens")]
    top = _top("\n".join([cmd, *_tb(frames, "AssertionError", prefix=e)]))
    assert top.category == "cudagraph_shape" and top.numbers["max_num_batched_tokens"] == 512
    from vllm_diag.catalog.categorize import categorize

    site = {"file": "vllm/v1/worker/gpu_model_runner.py", "function": "GPUModelRunner._dummy_run",
            "condition": "num_tokens_after_padding <= self.max_num_tokens", "message": "", "exc": "AssertionError"}
    assert categorize(site)[0] == "cudagraph_shape"
    # the same comparison outside a capture / profiling run is not claimed for the capture sizes
    assert categorize({**site, "function": "GPUModelRunner._prepare_inputs"})[0] != "cudagraph_shape"


def test_a_multi_token_verify_refused_under_decode_context_parallelism_is_a_kernel_limit():
    from vllm_diag.catalog.categorize import categorize

    site = {"file": "vllm/v1/attention/backends/mla/some_mla.py", "function": "SomeMLAImpl.forward_mqa",
            "condition": "(self.dcp_world_size > 1 and int(decode.max_qo_len) > 1)",
            "message": "SOME_MLA: DCP multi-token verify needs the segmented kernel.", "exc": "NotImplementedError"}
    assert categorize(site)[0] == "spec_kernel_limit"
    # a world-size check of the distributed set-up stays a near miss
    assert categorize({**site, "condition": "self.world_size == tp * pp",
                       "message": "world_size does not match the parallel layout"})[0] == "other"


def test_the_configured_value_is_checked_against_the_failed_comparison():
    cmd = ("vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 --speculative-config "
           "'{\"method\": \"mtp\", \"num_speculative_tokens\": 4}'")
    exc = ("RuntimeError: Assertion error (/build/dg/csrc/jit_kernels/impls/sm90_mqa_logits_v2.hpp:311): "
           "next_n <= 3")
    top = _top("\n".join([cmd, "[...]", exc]))
    assert top.category == "spec_kernel_limit" and top.confidence == "medium"
    assert "breaks this check" in top.basis and top.numbers["configured_value"] == 5
    assert top.numbers["check_threshold"] == 3
    # k = 1: next_n = 2 satisfies the check -- said, and no confidence is gained from it
    top = _top("\n".join([cmd.replace('"num_speculative_tokens": 4', '"num_speculative_tokens": 1'), "[...]", exc]))
    assert "satisfies" in top.basis and top.confidence == "low"

"""Numbers of error text an expert quotes, by class: PyTorch's OOM message in both its formats, a message that goes
on over several lines of one log record, labelled values (Triton's resource limits), NCCL's work record, compute
capability, C++/CUDA source positions of error lines, and vLLM's startup / stats lines. Logs written here, in vLLM's
format, with numbers of their own."""

from __future__ import annotations

from vllm_diag.postmortem import facts_from_text

W = "(Worker_TP1 pid=301) ERROR 05-06 07:08:09 [multiproc_executor.py:702] "
E = "(EngineCore_DP0 pid=300) ERROR 05-06 07:08:09 [core.py:866] "


def test_old_pytorch_oom_format_semicolon_fields():
    f = facts_from_text(E + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 40.00 MiB (GPU 0; 23.65 GiB "
                        "total capacity; 22.10 GiB already allocated; 7.19 MiB free; 22.80 GiB reserved in total by "
                        "PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb\n")
    n = f.numbers
    assert n["oom_tried_mib"] == 40.0 and n["gpu_total_gib"] == 23.65
    assert n["allocated_by_pytorch_gib"] == 22.10 and n["gpu_free_mib"] == 7.19
    assert n["reserved_by_pytorch_gib"] == 22.80


def test_oom_values_given_in_mib_keep_their_printed_figure():
    f = facts_from_text(W + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 768.00 MiB. GPU 1 has a total "
                        "capacity of 93.10 GiB of which 311.56 MiB is free. Process 5521 has 92.79 GiB memory in use.\n")
    n = f.numbers
    assert n["oom_tried_mib"] == 768.0 and n["oom_tried_gib"] == 0.75
    assert n["gpu_free_mib"] == 311.56
    assert n["process_memory_in_use_gib"] == 92.79


def test_assert_message_on_several_lines_of_one_record():
    f = facts_from_text(
        W + "Traceback (most recent call last):\n"
        + W + '  File "/opt/py/vllm/v1/attention/backends/mla/some_mla.py", line 211, in __init__\n'
        + W + "    assert ok, (\n"
        + W + "AssertionError: This backend supports num_heads of 16 or 32.\n"
        + W + "Provided 12 number of heads.\n"
        + W + "Try adjusting tensor_parallel_size value.\n"
        + "(Worker_TP1 pid=301) ERROR 05-06 07:08:10 [multiproc_executor.py:740] WorkerProc failed to start.\n")
    assert "Provided 12 number of heads." in f.root.message
    assert "WorkerProc failed to start" not in f.root.message  # the next record is not the message
    assert f.numbers["num_heads"] == 12
    assert "number" not in f.numbers


def test_triton_resource_labels():
    f = facts_from_text(E + "Traceback (most recent call last):\n"
                        + E + '  File "/opt/py/triton/runtime/jit.py", line 390, in <lambda>\n'
                        + E + "    return lambda *args, **kwargs: self.run(grid=grid, *args, **kwargs)\n"
                        + E + "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 131072, "
                        "Hardware limit: 101376. Reducing block sizes or `num_stages` may help.\n")
    assert f.numbers["required"] == 131072 and f.numbers["hardware_limit"] == 101376
    assert 101376 in f.numbers["message_values"]


def test_nccl_work_record_fields():
    f = facts_from_text(
        "(Worker_TP3 pid=8) [rank3]:[E0101 01:02:03.000000001 ProcessGroupNCCL.cpp:688] [Rank 3] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=4242, OpType=ALLGATHER, NumelIn=2048, NumelOut=16384, "
        "Timeout(ms)=1800000) ran for 1800093 milliseconds before timing out.\n" + E + "RuntimeError: boom\n")
    n = f.numbers
    assert n["seq_num"] == 4242 and n["numel_in"] == 2048 and n["numel_out"] == 16384
    assert n["nccl_timeout_ms"] == 1800000
    assert "process_group_nccl_line" not in n and "ProcessGroupNCCL_line" not in n  # the glog prefix


def test_compute_capability_of_the_gpu_and_the_minimum():
    f = facts_from_text(E + "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. "
                        "Your Tesla T4 GPU has compute capability 7.5.\n")
    assert f.numbers["compute_capability"] == 7.5
    assert f.numbers["min_compute_capability"] == 8.0


def test_cuda_source_position_in_an_error_line():
    f = facts_from_text("(Worker_TP0 pid=10) Failed: Cuda error /build/csrc/quick_all_reduce.cuh:211 "
                        "'an illegal memory access was encountered'\n")
    assert f.numbers["quick_all_reduce_line"] == 211


def test_startup_and_stats_lines():
    p = "(EngineCore_DP0 pid=9) INFO 01-02 03:04:05 "
    f = facts_from_text(
        p + "[core.py:77] Initializing a V1 LLM engine (v0.10.1) with config: model='org/M', speculative_config=None, "
        "tensor_parallel_size=2, compilation_config={\"level\":3,\"cudagraph_capture_sizes\":[64,32,16,8,4,2,1],"
        "\"max_capture_size\":64}\n"
        + p + "[gpu_model_runner.py:3580] Graph capturing finished in 7 secs, took 0.82 GiB\n"
        + "(APIServer pid=1) INFO 01-02 03:05:05 [loggers.py:127] Engine 000: Avg prompt throughput: 10.0 tokens/s, "
        "Avg generation throughput: 9.0 tokens/s, Running: 5 reqs, Waiting: 311 reqs, GPU KV cache usage: 99.1%, "
        "Prefix cache hit rate: 0.0%\n" + E + "RuntimeError: boom\n")
    s = f.startup
    assert s["cudagraph_capture_sizes"] == [64, 32, 16, 8, 4, 2, 1]  # as printed
    assert f.args["max_cudagraph_capture_size"] == 64
    assert s["cudagraph_memory_gib"] == 0.82
    assert s["num_requests_running"] == 5 and s["num_requests_waiting"] == 311
    assert s["gpu_kv_cache_usage_percent"] == 99.1


def test_startup_lines_pasted_without_their_prefix():
    f = facts_from_text("The server printed:\nGPU KV cache size: 7,104 tokens\n"
                        "Maximum concurrency for 131,072 tokens per request: 2.71x\n# GPU blocks: 444\n"
                        "Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 12.0 tokens/s, "
                        "Running: 6 reqs, Waiting: 97 reqs, GPU KV cache usage: 98.0%, Prefix cache hit rate: 0.0%\n")
    s = f.startup
    assert s["gpu_kv_cache_tokens"] == 7104 and s["max_concurrency"] == 2.71 and s["num_gpu_blocks"] == 444
    assert s["num_requests_running"] == 6 and s["num_requests_waiting"] == 97


def test_a_value_named_by_the_identifier_before_it():
    f = facts_from_text(E + "Traceback (most recent call last):\n"
                        + E + '  File "/opt/py/vllm/config/vllm.py", line 901, in __post_init__\n'
                        + E + "    raise ValueError(\n"
                        + E + "ValueError: Block_size(32) should be greater than or equal to and divisible by "
                        "dcp_kv_cache_interleave_size (48).\n")
    assert f.numbers["dcp_kv_cache_interleave_size"] == 48 and f.numbers["block_size"] == 32


def test_frames_around_a_reporters_elision_stay_with_the_exception():
    w = "(Worker_TP2 pid=61) ERROR 10-09 22:03:17 [multiproc_executor.py:1007] "
    f = facts_from_text(
        w + '  File "/usr/lib/py/vllm/model_executor/layers/mamba/mamba_mixer2.py", line 977, in conv_ssm_forward\n'
        + w + "    hidden_states_B_C_d = causal_conv1d_update(\n"
        + w + '  File "/usr/lib/py/vllm/model_executor/layers/mamba/ops/causal_conv1d.py", line 1170, in causal_conv1d_update\n'
        + w + "    _causal_conv1d_update_kernel[grid](\n"
        + w + "...   (triton launcher frames)\n"
        + w + "RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered\n")
    assert f.root.frames and f.numbers["causal_conv1d_line"] == 1170 and f.numbers["mamba_mixer2_line"] == 977


def _tb(message: str, code: str = "    raise ValueError(") -> str:
    return (E + "Traceback (most recent call last):\n" + E + '  File "/opt/py/vllm/v1/worker/x.py", line 77, in f\n'
            + E + code + "\n" + E + message + "\n")


def test_view_error_dimensions_named_by_the_failing_statement():
    f = facts_from_text(_tb("RuntimeError: shape '[5, 3, -1]' is invalid for input of size 18432",
                            "    idx = topk_indices.view(num_decodes, seq_len, -1)"))
    assert f.numbers["num_decodes"] == 5 and f.numbers["seq_len"] == 3 and f.numbers["input_size"] == 18432


def test_identifier_is_set_to_and_multiple_of():
    n = facts_from_text(_tb("ValueError: max_num_scheduled_tokens is set to 0 based on the speculative decoding settings")).numbers
    assert n["max_num_scheduled_tokens"] == 0 and "based" not in n
    n = facts_from_text(_tb("ValueError: No valid cudagraph sizes after rounding to multiple of 6 (num_speculative_tokens + 1)")).numbers
    assert n["multiple_of"] == 6


def test_expected_got_named_by_the_number_of_phrase():
    n = facts_from_text(_tb("AssertionError: Mismatch in number of requests when updating block table. Expected 5, got 9.")).numbers
    assert n["requests_expected"] == 5 and n["requests_got"] == 9


def test_size_in_parentheses_named_by_the_noun_before_it_and_no_host_pid_pair():
    f = facts_from_text("ab12cd34ef:311:402 [2] include/alloc.h:253 NCCL WARN Error while creating shared memory segment "
                        "/dev/shm/nccl-Ab12 (size 4194304), error: No space left on device (28)\n"
                        + _tb("RuntimeError: NCCL error: unhandled system error"))
    assert f.numbers["shared_memory_segment_size"] == 4194304
    assert "ab12cd34ef" not in f.numbers


def test_driver_xid_and_the_watchdog_rank():
    f = facts_from_text(
        "[rank6]:[E0802 04:13:27.661835394 ProcessGroupNCCL.cpp:685] [Rank 6] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=77, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for 600100 "
        "milliseconds before timing out.\n"
        "[1983342.118027] NVRM: Xid (PCI:0000:9d:00): 48, pid=411822, name=VLLM::Worker_TP, An uncorrectable ECC error\n")
    assert f.numbers["nccl_timeout_rank"] == 6 and f.numbers["xid"] == 48


def test_capture_sizes_capped_to_the_mamba_cache_blocks():
    f = facts_from_text("(EngineCore pid=908) WARNING 04-13 20:11:52 [compilation.py:1323] Capping cudagraph capture sizes "
                        "from max 256 to 40 to fit Mamba cache blocks (42 blocks available). This limits the maximum "
                        "batch size that can use CUDA graphs.\n")
    s = f.startup
    assert s["max_cudagraph_capture_size_requested"] == 256 and s["max_cudagraph_capture_size_capped"] == 40
    assert s["mamba_cache_blocks_available"] == 42


def test_settings_vllm_records_state():
    p = "(EngineCore_DP0 pid=9) INFO 01-02 03:04:05 "
    f = facts_from_text(
        p + "[scheduler.py:308] Chunked prefill is enabled with max_num_batched_tokens=6144.\n"
        + p + "[model.py:2152] Using max model len 40960\n"
        + "(APIServer pid=1) WARNING 01-02 03:04:05 [kv_cache_utils.py:2478] Auto-fit max_model_len: reduced from "
        "131072 to 57344 to fit in available GPU memory\n"
        + p + "[arg_utils.py:3155] Raising max_num_batched_tokens from 1024 to 6144 to fit the drafts\n"
        + p + "[core.py:77] Initializing a V1 LLM engine (v0.12.0) with config: model='org/M', seed=1234\n"
        + E + "RuntimeError: boom\n")
    v = f.startup["logged_values"]
    assert v["max_num_batched_tokens"] == 6144 and v["max_model_len"] == 40960
    assert (v["max_model_len_from"], v["max_model_len_to"]) == (131072, 57344)
    assert (v["max_num_batched_tokens_from"], v["max_num_batched_tokens_to"]) == (1024, 6144)
    assert "seed" not in v  # the engine's config dump is read as the configuration, not as logged values


def test_sentence_final_numbers_are_read():
    f = facts_from_text(_tb("AssertionError: draft head mismatch: the target expects num_kv_heads 4."))
    assert f.numbers["num_kv_heads"] == 4
    f = facts_from_text(_tb("ValueError: Draft page size mismatch: page_size_bytes is 1114112."))
    assert f.numbers["page_size_bytes"] == 1114112


def test_startup_memory_check_and_a_token_id():
    n = facts_from_text(_tb("ValueError: Free memory on device (20.5/44.99 GiB) on startup is less than desired GPU memory "
                            "utilization (0.92, 41.39 GiB). Decrease GPU memory utilization")).numbers
    assert (n["free_memory_gib"], n["total_memory_gib"], n["gpu_memory_utilization"], n["requested_memory_gib"]) == \
        (20.5, 44.99, 0.92, 41.39)
    n = facts_from_text(_tb("RuntimeError: Check failed: (!IsTerminated()) is false: GrammarMatcher has terminated after "
                            "accepting the stop token, but is trying to accept another token 128009")).numbers
    assert n["token_id"] == 128009


def test_raw_traceback_message_continued_on_the_next_lines():
    f = facts_from_text(
        "Traceback (most recent call last):\n"
        '  File "/opt/py/vllm/v1/attention/backends/mla/some_mla.py", line 301, in __init__\n'
        "    assert ok, (\n"
        "AssertionError: This backend supports num_heads of 16 or 32.\n"
        "Provided 24 number of heads.\n"
        "Try adjusting tensor_parallel_size value.\n"
        "\n"
        "We run it with 3 nodes.\n")
    assert f.numbers["num_heads"] == 24
    assert "nodes" not in f.numbers  # the reporter's sentence after the blank line is not the message

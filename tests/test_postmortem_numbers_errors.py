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

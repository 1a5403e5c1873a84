"""Where a failure happened, as an expert quotes it: the faulting statement of an asynchronous CUDA fault (from the
same fault's traceback of a synchronous rerun, not only the sync point that reported it first), the logger position of
a vLLM warning that is the evidence, and the uniform decode query length behind vLLM's cudagraph-size rounding.
Logs written here, in vLLM's format, with numbers of their own."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from vllm_diag.postmortem import facts_from_text

W = "(Worker_TP0 pid=4101) ERROR 03-04 05:06:07 [multiproc_executor.py:811] "
E = "(EngineCore_DP0 pid=4000) ERROR 03-04 05:06:07 [core.py:944] "
SP = "/srv/env/lib/python3.12/site-packages/vllm"


def test_async_fault_placed_by_the_blocking_reruns_traceback():
    log = (
        W + "Traceback (most recent call last):\n"
        + W + f'  File "{SP}/v1/worker/gpu_model_runner.py", line 4321, in _to_list\n'
        + W + "    pinned.copy_(sampled_token_ids, non_blocking=True)\n"
        + W + "torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"
        + "then with CUDA_LAUNCH_BLOCKING=1:\n"
        + W + "Traceback (most recent call last):\n"
        + W + f'  File "{SP}/model_executor/layers/mamba/linear_attn_x.py", line 612, in _forward_core\n'
        + W + "    out = fused_update(x, state, state_indices)\n"
        + W + f'  File "{SP}/model_executor/layers/fla/ops/fused_update.py", line 88, in fused_update\n'
        + W + "    kernel[grid](x, state)\n"
        + W + "RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered\n")
    n = facts_from_text(log).numbers
    assert n["gpu_model_runner_line"] == 4321  # the sync point that reported it first
    assert n["linear_attn_x_line"] == 612 and n["fused_update_line"] == 88


def test_other_errors_do_not_lend_their_frames_to_the_root():
    log = (
        W + "Traceback (most recent call last):\n"
        + W + f'  File "{SP}/v1/worker/gpu_model_runner.py", line 4321, in _to_list\n'
        + W + "torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"
        + W + "Traceback (most recent call last):\n"
        + W + f'  File "{SP}/entrypoints/openai/serving_chat.py", line 77, in create\n'
        + W + "ValueError: bad request 5\n")
    n = facts_from_text(log).numbers
    assert n["gpu_model_runner_line"] == 4321 and "serving_chat_line" not in n


def test_warning_that_is_evidence_keeps_its_logger_position():
    log = ("(Worker_TP2 pid=611) WARNING 03-04 05:06:01 [flashinfer_mla.py:233] FlashInferMLAImpl got a query of "
           "uneven length.\n"
           "(Worker_TP2 pid=611) INFO 03-04 05:06:01 [gpu_worker.py:340] Available KV cache memory: 12.5 GiB\n")
    f = facts_from_text(log)
    assert f.startup["mla_uneven_query"] is True
    assert f.startup["flashinfer_mla_line"] == 233
    assert "gpu_worker_line" not in f.startup  # an INFO record's position is not quoted


def test_cudagraph_rounding_multiple_is_the_uniform_decode_query_len():
    log = (E + "ValueError: No valid cudagraph sizes after rounding to multiple of 6 (num_speculative_tokens + 1 or "
           "tp if sequence parallelism is enabled) please adjust num_speculative_tokens (5) or "
           "max_cudagraph_capture_size (4) or cudagraph_capture_sizes ([1, 2, 4])\n")
    n = facts_from_text(log).numbers
    assert n["uniform_decode_query_len"] == 6
    log_sp = log.replace("multiple of 6", "multiple of 8")  # tp under sequence parallelism: not the query length
    assert "uniform_decode_query_len" not in facts_from_text(log_sp).numbers


def _corpus():
    spec = importlib.util.spec_from_file_location("corpus_bench", Path(__file__).parents[1] / "benchmarks" / "corpus.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_scoring_reads_a_traceback_spelling_of_file_and_line():
    c = _corpus()
    leaves = [("linear_attn_x_line", 612), ("fused_update_line", 88)]
    assert c.recovered("kernel_call_line", 'linear_attn_x.py", line 612', leaves)
    assert not c.recovered("kernel_call_line", 'linear_attn_x.py", line 613', leaves)
    assert not c.recovered("kernel_call_line", 'other_file.py", line 612', [("fused_update_line", 612)])


def test_nccl_warn_lines_give_the_cause_of_an_nccl_error():
    log = ("node-a7:3011:3390 [1] transport/net_ib.cc:1702 NCCL WARN NET/IB : Got completion from peer 10.1.2.3<4411> "
           "with status=5 opcode=0 len=0 vendor err 244 (Recv) localGid ::ffff:10.1.2.4 hca mlx5_1\n"
           "node-a7:3011:3011 [1] transport/p2p.cc:281 NCCL WARN Cuda failure 801 'operation not supported'\n"
           + W + "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)\n")
    n = facts_from_text(log).numbers
    assert n["ib_completion_status"] == 5 and n["ib_vendor_err"] == 244
    assert n["nccl_cuda_failure"] == 801 and n["net_ib_line"] == 1702


def test_a_metric_that_changed_keeps_its_first_value():
    rec = "(APIServer pid=77) INFO 03-04 05:06:{s:02d} [metrics.py:120] SpecDecoding metrics: Mean acceptance length: {v}, " \
          "Accepted: 120 tokens, Drafted: 300 tokens\n"
    f = facts_from_text(rec.format(s=1, v="2.87") + rec.format(s=11, v="2.87") + rec.format(s=21, v="1.06"))
    m = f.startup["metrics"]
    assert m["spec_mean_acceptance_length"] == 1.06 and m["spec_mean_acceptance_length_first"] == 2.87
    assert "spec_accepted_first" not in m  # unchanged values are stated once


def test_rerun_traceback_with_the_same_message_still_places_the_fault():
    # the blocking rerun prints the same "CUDA error: an illegal memory access" with fewer frames and no header:
    # merged with the first report as one exception, its frames still name the faulting statement
    w1 = "(Worker_TP1 pid=4102) ERROR 03-04 06:16:07 [multiproc_executor.py:811] "
    log = (
        W + "Traceback (most recent call last):\n"
        + W + '  File "/usr/lib/python3.12/threading.py", line 1075, in _bootstrap_inner\n'
        + W + f'  File "{SP}/v1/executor/multiproc_executor.py", line 901, in enqueue_output\n'
        + W + f'  File "{SP}/v1/worker/gpu_model_runner.py", line 266, in get_output\n'
        + W + "torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"
        + "Rerun with CUDA_LAUNCH_BLOCKING=1:\n"
        + w1 + f'  File "{SP}/v1/attention/backends/mla/some_mla.py", line 204, in forward_mqa\n'
        + w1 + "    o = decode_kernel(q, kv_cache, meta)\n"
        + w1 + "torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n")
    n = facts_from_text(log).numbers
    assert n["gpu_model_runner_line"] == 266 and n["some_mla_line"] == 204


def test_sanitizer_host_backtrace_names_the_launching_statement():
    log = ("========= Invalid __global__ write of size 4 bytes\n"
           "=========     at chunk_scan_fwd_kernel+0x2a10\n"
           "=========     by thread (32,0,0) in block (3,1,0)\n"
           "=========     Address 0x7f10c0000000 is out of bounds\n"
           "=========     Saved host backtrace up to driver entry point at kernel launch time\n"
           "=========     Host Frame: [0x2f1a3d] in libcuda.so.1\n"
           "=========     Host Frame: chunk_scan_fwd in vllm/model_executor/layers/mamba/ops/ssd_chunk_scan.py:517\n"
           "=========     Host Frame: _forward in vllm/model_executor/layers/mamba/mamba_mixer2.py:640\n"
           "=========\n"
           + W + "torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n")
    n = facts_from_text(log).numbers
    assert n["ssd_chunk_scan_line"] == 517
    assert "mamba_mixer2_line" not in n  # the launching frame, not its callers

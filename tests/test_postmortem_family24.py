"""Post-mortem, round twenty-four. The reports are written here; vLLM's lines are in its own formats."""

from __future__ import annotations

import pytest

from vllm_diag.postmortem.analyze import analyze_text
from vllm_diag.postmortem.configuration import read_setup
from vllm_diag.postmortem.diagnosis import config_numbers
from vllm_diag.postmortem.silent_capacity import state_blocks_capacity


def _analyze(lines: list[str]):
    return analyze_text("\n".join(lines), "t.log", use_preflight=False)


def _state_reading(facts):
    """silent.py's state-block capacity reading on a log's facts (the rules' finding of the class may lead)."""
    setup = read_setup(facts, None)
    return state_blocks_capacity(facts, setup, config_numbers(facts, setup))


def _qwen3next_011_bars(concurrency: int) -> list[str]:
    """vLLM 0.11.0 at start-up, its capture seen only by the progress bars (the log was cut before 'Graph capturing
    finished'); the reporter quotes --enforce-eager as the comparison run."""
    w = "(EngineCore_DP0 pid=189) "
    return [
        "MTP acceptance is great with 1 user and terrible with several (Qwen3-Next, vllm 0.11.0)",
        "--speculative-config '{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}'",
        f"We see it with {concurrency} concurrent requests.",
        w + "INFO 10-09 14:52:58 [core.py:77] Initializing a V1 LLM engine (v0.11.0) with config: "
            "model='Qwen/Qwen3-Next-80B-A3B-Instruct', compilation_config={\"level\":3, \"cudagraph_mode\":[2,1], "
            "\"cudagraph_capture_sizes\":[512,504,496,48,40,32,24,16,8,4,2,1], \"max_capture_size\":512}",
        w + "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|##########| 67/67 [00:21<00:00,  3.1it/s]",
        w + "Capturing CUDA graphs (decode, FULL): 100%|##########| 67/67 [00:12<00:00,  5.4it/s]",
        "With --enforce-eager acceptance is the same at every concurrency.",
    ]


def test_a_run_whose_capture_bars_show_graphs_was_not_eager_whatever_the_report_compares():
    """The capture bars alone show the failing run captured its graphs: the --enforce-eager the reporter quotes is
    the comparison, so the 0.11 capture sizes not rounded to 1 + k still explain 7 requests (21 tokens, padded to 24)."""
    top = _analyze(_qwen3next_011_bars(7)).findings[0]
    assert top.category == "cudagraph_shape"
    assert top.numbers["num_scheduled_tokens"] == 21 and top.numbers["padded_num_tokens"] == 24
    # the comparison run without the bars (and without the capture's memory): eager, nothing captured to pad
    eager = [line for line in _qwen3next_011_bars(7) if "Capturing" not in line]
    assert not any(f.category == "cudagraph_shape" for f in _analyze(eager).findings)


def test_the_compute_capability_of_nvidia_smis_query_and_of_a_reporters_shorthand():
    """``nvidia-smi --query-gpu=name,compute_cap,memory.total --format=csv`` (with or without its header) and "compute
    cap 7.0" give the capability; a finding quotes it as NVIDIA writes it."""
    from vllm_diag.postmortem import facts_from_text

    head = facts_from_text("name, compute_cap, memory.total [MiB]\nTesla V100-SXM2-32GB, 7.0, 32768 MiB\n")
    assert head.startup["compute_capability"] == [7, 0]
    bare = facts_from_text("nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader\nNVIDIA L40S, 8.9\n")
    assert bare.startup["compute_capability"] == [8, 9]
    told = facts_from_text('nvidia-smi -q | grep -i "compute cap" -> 7.5 on both\n')
    assert told.startup["compute_capability"] == [7, 5]
    # a time or a ratio after a GPU's name is no capability
    assert "compute_capability" not in facts_from_text("H100 nodes, 2.5 hours of load later it slowed down\n").startup
    an = _analyze(["4x Tesla V100-SXM2-32GB, compute capability 7.0",
                   "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your "
                   "Tesla V100-SXM2-32GB GPU has compute capability 7.0. You can use float16 instead by explicitly "
                   "setting the `dtype` flag in CLI, for example: --dtype=half."])
    assert an.findings and an.findings[0].numbers.get("compute_capability") == 7.0


_FREE_MEMORY = ("(Worker_TP1 pid=20467) ERROR 11-27 09:12:36 [multiproc_executor.py:901] ValueError: Free memory on "
                "device cuda:1 (61.27/79.19 GiB) on startup is less than desired GPU memory utilization (0.92, 72.85 "
                "GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.")
_TABLE = ["| Processes:                                                                              |",
          "|    0   N/A  N/A      11870      C   python                                        2210MiB |",
          "|    1   N/A  N/A      11873      C   /opt/conda/envs/nb/bin/python                17832MiB |"]


def test_the_process_holding_the_gpu_that_failed_vllms_start_up_memory_check():
    """At the start-up check the engine has allocated nothing: the interpreter nvidia-smi lists on the GPU the check
    names (cuda:1) is another program -- its memory and pid are read, not the other GPU's."""
    from vllm_diag.postmortem import facts_from_text

    f = facts_from_text("\n".join([_FREE_MEMORY, "", "nvidia-smi:"] + _TABLE))
    assert (f.startup["other_process_mib"], f.startup["other_process_pid"]) == (17832, 11873)
    # the same table beside an out-of-memory error: a bare interpreter may be the engine itself
    oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.53 GiB. GPU 1 has a total capacity of "
           "79.19 GiB of which 301.06 MiB is free.")
    assert "other_process_mib" not in facts_from_text("\n".join([oom, ""] + _TABLE)).startup
    # ... unless rows of the engine's own name sit beside it
    named = _TABLE + ["|    1   N/A  N/A        403      C   VLLM::Worker_TP1                            60970MiB |"]
    assert facts_from_text("\n".join([oom, ""] + named)).startup["other_process_mib"] == 17832


def test_the_stats_lines_keep_where_the_load_and_the_hits_began():
    """A stats line's running / waiting / KV usage and the prefix-cache hit rate that changed over the log keep their
    first value beside the last."""
    from vllm_diag.postmortem import facts_from_text

    def stats(running: int, waiting: int, usage: float, hits: float) -> str:
        return (f"(APIServer pid=118) INFO 11-20 09:31:{running % 60:02d} [loggers.py:310] Engine 000: Avg prompt "
                f"throughput: 1632.4 tokens/s, Avg generation throughput: 226.9 tokens/s, Running: {running} reqs, "
                f"Waiting: {waiting} reqs, GPU KV cache usage: {usage}%, Prefix cache hit rate: {hits}%")

    st = facts_from_text("\n".join([stats(16, 0, 2.1, 0.4), stats(31, 4, 9.5, 1.2), stats(24, 2, 5.0, 0.9)])).startup
    assert (st["num_requests_running_first"], st["num_requests_waiting_first"]) == (16, 0)
    assert st["gpu_kv_cache_usage_percent_first"] == 2.1 and st["gpu_kv_cache_usage_percent"] == 5.0
    assert st["prefix_cache_hit_rate_first"] == 0.4 and st["prefix_cache_hit_rate"] == 0.9
    one = facts_from_text(stats(16, 0, 2.1, 0.4)).startup
    assert "num_requests_running_first" not in one and "prefix_cache_hit_rate_first" not in one


def _stats(hhmmss: str, running: int, waiting: int, usage: float, hits: float = 0.0, pid: int = 2291) -> str:
    return (f"(APIServer pid={pid}) INFO 11-06 {hhmmss} [loggers.py:310] Engine 000: Avg prompt throughput: 4102.7 "
            f"tokens/s, Avg generation throughput: 822.5 tokens/s, Running: {running} reqs, Waiting: {waiting} reqs, "
            f"GPU KV cache usage: {usage}%, Prefix cache hit rate: {hits}%")


_FALCON_H1 = [
    "(APIServer pid=2291) INFO 11-04 09:00:12 [interface.py:911] Setting attention block size to 800 tokens to ensure "
    "that attention page size is >= mamba page size.",
    "(EngineCore_DP0 pid=2410) INFO 11-04 09:00:58 [kv_cache_utils.py:1869] GPU KV cache size: 1,036,800 tokens, Maximum "
    "concurrency for 16,384 tokens per request: 63.28x",
]


def test_a_neighbour_on_the_gpu_during_a_slowdown_is_the_cause_even_while_requests_queue():
    """Latency spikes, nvidia-smi listing another team's job beside the engine on the GPU, and the stats lines show a
    queue while the running count moves with the load: a slower engine's queue, not a scheduler cap -- the co-tenant."""
    lines = ["Since Tuesday the endpoint has periodic latency spikes, p95 TPOT goes from ~22ms to 70-90ms for a few "
             "minutes.", "vllm serve tiiuae/Falcon-H1-7B-Instruct --max-num-seqs 128 --enable-prefix-caching"] \
        + _FALCON_H1 + [_stats("10:14:40", 43, 0, 9.8), _stats("10:15:50", 71, 36, 17.1), _stats("10:16:00", 80, 52, 19.4),
                        "|    0   N/A  N/A      2410      C   /opt/venv/bin/python3                       47812MiB |",
                        "|    0   N/A  N/A     91877      C   python -m batch_embed.worker --bs 512       21344MiB |"]
    top = _analyze(lines).findings[0]
    assert top.category == "other" and "batch_embed" in top.basis
    # the running count pinned at max_num_seqs while requests wait: the cap holds them, not the neighbour
    capped = [line.replace("--max-num-seqs 128", "--max-num-seqs 80") for line in lines[:-5]] \
        + [_stats("10:15:50", 80, 36, 17.1), _stats("10:16:00", 80, 52, 19.4)] + lines[-2:]
    assert "batch_embed" not in _analyze(capped).findings[0].basis


def test_a_proxy_that_buffers_the_event_stream_explains_bursty_slow_streaming():
    an = _analyze(["Our streaming UI shows the first token after 2-4 s and then the text arrives in big chunks.",
                   "vllm serve nvidia/NVIDIA-Nemotron-Nano-9B-v2 --enable-prefix-caching --mamba-cache-mode align"]
                  + _FALCON_H1[:1] + ["location /v1/ {", "    proxy_pass http://10.0.4.17:8000;",
                                      "    proxy_buffering on;", "    gzip on;",
                                      "    gzip_types application/json text/event-stream;", "}"])
    top = an.findings[0]
    assert top.category == "other" and "buffering" in top.title
    assert not any(f.category == "block_size_alignment" for f in an.findings)


def test_another_chat_formats_turn_markers_in_the_answers_are_the_template_not_the_engine():
    """An answer that runs on through Llama-3's turn markers, served from another model with a copied template: the
    markers were no special tokens of this model, so the template is another model's."""
    lines = ["falcon-h1 34b never stops talking / answers its own questions (fp8 kv, 0.30.0)",
             "vllm serve tiiuae/Falcon-H1-34B-Instruct -tp 2 --kv-cache-dtype fp8 --chat-template /models/t.jinja",
             "Sample output (raw text returned, /v1/chat/completions):",
             '  "Paris is the capital of France.<|eot_id|><|start_header_id|>user<|end_header_id|>\\n\\nAnd Germany?"',
             '  finish_reason: "length"']
    top = _analyze(lines).findings[0]
    assert top.category == "other" and "turn markers" in top.title
    # the template's source and a logged prompt hold the same markers as input, not as an answer
    source = lines[:2] + ["{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ "
                          "message['content'] | trim + '<|eot_id|>' %}",
                          "Received request chatcmpl-1: prompt: 'You are helpful.<|eot_id|><|start_header_id|>user'"]
    assert "turn markers" not in _analyze(source).findings[0].title


def test_tensor_parallel_over_pcie_without_nvlink_explains_a_tpot_that_climbs_with_load():
    an = _analyze(["Summary: new staging node (4x L40S, PCIe gen4, no nvlink, 2 sockets) serves Qwen3-Next at ~45 "
                   "tok/s/user at low load and TPOT climbs to 140ms+ at 32 users.",
                   "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct-FP8 --tensor-parallel-size 4 --enable-prefix-caching "
                   "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":1}'",
                   "GPU0     X      PIX     SYS     SYS     0-31            0",
                   "GPU1    PIX      X      SYS     SYS     0-31            0"])
    top = an.findings[0]
    assert top.category == "other" and "140ms" in top.message


def _align_mtp_capacity(k: int, running: int, usage: float) -> list[str]:
    e = "(EngineCore_DP0 pid=2290) INFO 11-22 18:40:05 "
    return [
        "Qwen3-Next + MTP: only ~140 requests running, KV cache full although requests are tiny",
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct-FP8 -tp 2 --speculative-config "
        f"'{{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":{k}}}' --enable-prefix-caching "
        "--max-model-len 262144 --max-num-seqs 256",
        "Workload: batch extraction job, each ~1,500 prompt tokens, max_tokens 128.",
        e + "[config.py:563] Mamba cache mode is set to 'align' for Qwen3NextForCausalLM by default when prefix "
            "caching is enabled",
        e + "[interface.py:905] Setting attention block size to 544 tokens to ensure that attention page size is >= "
            "mamba page size.",
        e + "[kv_cache_utils.py:2177] GPU KV cache size: 1,381,760 tokens",
        _stats("18:55:31", running, 259, usage - 0.2, 8.2, pid=2187), _stats("18:55:41", running - 1, 260, usage, 8.0,
                                                                              pid=2187),
    ]


def test_state_blocks_per_request_under_drafts_in_align_mode_cap_a_hybrids_concurrency():
    """In align mode every Mamba/GDN group holds up to 2 + k state blocks per running request: 141 requests of ~1,500
    tokens fill 99.8 % of ~2,540 blocks, 18 each -- 3 for their attention, the rest states (vLLM's MambaManager)."""
    top = _analyze(_align_mtp_capacity(3, 141, 99.8)).findings[0]
    assert top.category == "mamba_block_budget"
    assert top.numbers["state_blocks_per_group"] == 5 and top.numbers["blocks_per_running_request"] == 18.1
    # the same fill by requests whose tokens need the blocks they hold: nothing left for the states to explain
    assert _analyze(_align_mtp_capacity(3, 800, 99.8)).findings[0].category != "mamba_block_budget"


def test_acceptance_that_goes_to_trash_on_cached_prefixes_is_the_state_restored_from_the_cache():
    an = _analyze([
        "Qwen3.5-122B-A10B with MTP on our B200 box (4 GPUs, v0.20.2). Acceptance",
        "starts great and then slowly goes to trash over ~20 min.",
        "vllm serve Qwen/Qwen3.5-122B-A10B-FP8 -tp 4 --speculative-config "
        "'{\"method\":\"mtp\",\"num_speculative_tokens\":2}' --enable-prefix-caching",
        "replaying the SAME 300 conversations twice on a fresh server: first pass acceptance ~0.75, second pass "
        "(everything now cached) ~0.15. with --no-enable-prefix-caching both passes stay ~0.75.",
        _stats("08:58:00", 40, 0, 30.0, 72.9)])
    assert an.findings[0].category == "state_index"


def test_a_symptom_told_under_a_setting_before_a_colon_is_no_trial_that_fixed_it():
    """'With MTP enabled, responses become garbled in the middle: correct start, then ...' describes the failure; the
    'correct' after the colon is no outcome of a change."""
    from vllm_diag.postmortem import facts_from_text

    f = facts_from_text("With MTP enabled, a small fraction of responses become garbled in the middle: correct start, "
                        "then\nrepeated fragments.\n")
    assert "resolved_prose" not in f.startup
    tried = facts_from_text("With --tokenizer Qwen/Qwen3-Next-80B-A3B-Instruct: correct output\n")
    assert "resolved_prose" in tried.startup


def test_vllms_own_warning_that_full_graphs_were_dropped_under_drafts_explains_the_slowdown():
    """A linear-attention hybrid under n-gram drafts at 32 requests: vLLM says it set cudagraph_mode=PIECEWISE for the
    backend -- the graphs, not speculative decoding's own trade-off at a large batch."""
    an = _analyze([
        "ngram spec decoding is slower than no spec decoding at concurrency 32 on our hybrid",
        "vllm serve MiniMaxAI/MiniMax-Text-01 -tp 8 --speculative-config "
        "'{\"method\":\"ngram\",\"num_speculative_tokens\":3,\"prompt_lookup_max\":5}'",
        "(Worker_TP0 pid=388) WARNING 11-10 04:17:02 [compilation.py:1390] CUDAGraphMode.FULL_AND_PIECEWISE is not "
        "supported with spec-decode for attention backend LinearAttentionBackend (support: "
        "AttentionCGSupport.UNIFORM_SINGLE_TOKEN_DECODE); setting cudagraph_mode=PIECEWISE"])
    assert an.findings[0].category == "cudagraph_shape"


_IMA = [
    "(EngineCore_DP0 pid=212) ERROR 03-11 08:09:47 [core.py:1332] Traceback (most recent call last):",
    '(EngineCore_DP0 pid=212) ERROR 03-11 08:09:47 [core.py:1332]   File "/usr/local/lib/python3.12/dist-packages/vllm/'
    'v1/worker/gpu_model_runner.py", line 313, in get_output',
    "(EngineCore_DP0 pid=212) ERROR 03-11 08:09:47 [core.py:1332]     self.async_copy_ready_event.synchronize()",
    "(EngineCore_DP0 pid=212) ERROR 03-11 08:09:47 [core.py:1332] torch.AcceleratorError: CUDA error: an illegal "
    "memory access was encountered",
]


def test_an_xid_the_report_says_is_absent_and_a_blocking_rerun_that_never_crashed_are_not_the_runs():
    """'no Xid 79 in dmesg, only Xid 13' names one driver code (13, a kernel's fault); 'CUDA_LAUNCH_BLOCKING=1 makes
    it too slow to reproduce' is a rerun that did not fault -- the IMA is reasoned from GDN + MTP + prefix caching."""
    from vllm_diag.postmortem import facts_from_text

    head = ["after we flipped --enable-prefix-caching on the qwen3-next MTP deployment the engine dies with illegal "
            "memory access. CUDA_LAUNCH_BLOCKING=1 makes it too slow to reproduce.",
            "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct-FP8 --enable-prefix-caching --speculative-config "
            "'{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}'"]
    tail = ["nvidia-smi after restart looks clean, no Xid 79 in dmesg, only Xid 13 at 08:09:47."]
    assert facts_from_text("\n".join(tail)).startup["xids"] == [13]
    an = _analyze(head + _IMA + tail)
    assert an.findings[0].category == "state_index"


def test_an_embedding_lookup_past_the_vocabulary_of_a_tokenizers_added_token_is_a_mismatch():
    """indexSelectLargeIndex's bounds assert, with the tokenizer adding id 100358 to a model of vocab_size 100352:
    the token id, not the hybrid's state indices."""
    an = _analyze([
        "granite-4.0-h fine-tune + ngram spec decode: device-side assert on some requests (v0.20.2)",
        "vllm serve /models/granite-ft --enable-prefix-caching --speculative-config "
        "'{\"method\":\"ngram\",\"num_speculative_tokens\":5,\"prompt_lookup_max\":4}'",
        "../aten/src/ATen/native/cuda/Indexing.cu:1422: indexSelectLargeIndex: block: [211,0,0], thread: [64,0,0] "
        "Assertion `srcIndex < srcSelectDimSize` failed.",
        "torch.AcceleratorError: CUDA error: device-side assert triggered",
        'tokenizer_config added_tokens: "<|field_start|>": 100357, "<|field_end|>": 100358',
        'config.json: "vocab_size": 100352'])
    top = an.findings[0]
    assert top.category == "other" and "id 100358, past the model's vocab_size 100352" in top.basis
    assert an.facts.startup["added_token_id_max"] == 100358


def test_state_blocks_without_prefix_caching_hold_one_plus_k_per_group_and_one_runs_figures_count():
    """Without prefix caching a Mamba/GDN group holds 1 + k state blocks a request; the report pastes its MTP run
    (86 running at 99.5 %) and a run without the drafts (212 running): the blocks a request holds are read on the
    MTP run's own stats line, not from the maxima of both runs."""
    e = "(EngineCore pid=14630) INFO 07-30 09:14:48 "
    lines = [
        "Qwen3-Next + MTP k=3 never goes above ~86 running requests even though KV cache says ~1M tokens",
        "We load test with ~2k-token prompts and 1k output. Without MTP we get ~250 running on the same box.",
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct-FP8 -tp 2 --max-model-len 32768 --max-num-seqs 256 "
        "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'",
        "(APIServer pid=14402) INFO 07-30 09:12:23 [interface.py:933] Setting attention block size to 1088 tokens to "
        "ensure that attention page size is >= mamba page size.",
        e + "[kv_cache_utils.py:2394] GPU KV cache size: 983,040 tokens, Maximum concurrency for 32,768 tokens per "
            "request: 30.00x",
        _stats("09:21:40", 86, 141, 99.3, pid=14402), _stats("09:21:50", 84, 158, 99.8, pid=14402),
        "Same command without `--speculative-config`:",
        _stats("10:03:22", 212, 0, 96.8, pid=20117),
    ]
    an = _analyze(lines)
    assert an.findings[0].category == "mamba_block_budget"
    assert an.facts.startup["blocks_at_fullest"] == [10.73, 84, 99.8, 983040]
    d = _state_reading(an.facts)
    assert d.numbers["state_blocks_per_group"] == 4 and d.numbers["num_requests_running_at_full"] == 84
    assert "'none' mode" in d.basis


def test_full_graphs_dropped_for_flashinfer_on_a_dense_model_under_drafts_are_the_capture_class():
    an = _analyze([
        "EAGLE k=3 on Llama-3.1-8B gives no speed-up on H100: TPOT 5.8 ms vs 3.2 ms on FLASH_ATTN.",
        "vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config '{\"method\":\"eagle\",\"model\":"
        "\"yuhuili/EAGLE-LLaMA3.1-Instruct-8B\",\"num_speculative_tokens\":3}'",
        "(EngineCore_DP0 pid=311) WARNING 09-12 10:02:41 [gpu_model_runner.py:4322] CUDAGraphMode.FULL_AND_PIECEWISE is "
        "not supported with spec-decode for attention backend FlashInferBackend (support: "
        "AttentionCGSupport.UNIFORM_SINGLE_TOKEN_DECODE); setting cudagraph_mode=PIECEWISE"])
    assert (an.findings[0].category, an.findings[0].rule) == ("cudagraph_shape", "spec_cudagraph_downgrade")


def test_a_hot_request_beside_a_fine_comparison_explains_the_garbage_in_either_order():
    log = lambda t, p, k: (f"INFO 11-02 10:00:0{k} [logger.py:39] Received request chatcmpl-{k}: prompt: 'x', params: "
                           f"SamplingParams(n=1, presence_penalty=0.0, temperature={t}, top_p={p}, top_k=0, "
                           f"max_tokens=4096)")
    head = ["Since the new frontend went live, long answers turn into gibberish with MTP on Qwen3-Next.",
            "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --speculative-config "
            "'{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}' --enable-log-requests"]
    for first, second in ((log(1.9, 1.0, 1), log(0.7, 0.8, 2)), (log(0.7, 0.8, 1), log(1.9, 1.0, 2))):
        top = _analyze(head + [first, "and the same prompt from the old playground:", second]).findings[0]
        assert top.category == "other" and "temperature 1.9" in top.title


def test_latency_that_doubles_while_a_neighbour_trains_on_the_gpu():
    top = _analyze([
        "> latency on the granite-h-tiny endpoint doubles every afternoon for 1-2 hours then goes back.",
        "vllm serve ibm-granite/granite-4.0-h-tiny --enable-prefix-caching --gpu-memory-utilization 0.60",
        "|    0   N/A  N/A          412907      C   VLLM::EngineCore                        48630MiB |",
        "|    0   N/A  N/A          588214      C   /opt/conda/envs/dl/bin/python           28904MiB |"]).findings[0]
    assert top.category == "other" and "Another process" in top.title


def test_a_service_without_session_affinity_splits_a_conversations_turns_over_the_replicas():
    top = _analyze([
        "We run 4 replicas of nvidia/NVIDIA-Nemotron-Nano-12B-v2 behind a k8s Service. In staging (single pod) I "
        "measured ~85% prefix hit rate. In prod each pod sits around 20-25%.",
        "vllm serve nvidia/NVIDIA-Nemotron-Nano-12B-v2 --enable-prefix-caching",
        "  spec:", "    selector: {app: nemo-nano}", "    sessionAffinity: None"]).findings[0]
    assert top.category == "other" and "affinity" in top.title


def test_an_evaluation_whose_lenient_filter_holds_lost_its_score_to_the_format():
    """lm-eval's flexible-extract 0.8658 vs 0.8673 while strict-match fell from 0.8491 to 0.4117: the answers are as
    right as before, their format fails the strict pattern."""
    table = ["|gsm8k|      3|flexible-extract|     5|exact_match|\u2191  |{f}|\u00b1  |0.0094|",
             "|     |       |strict-match    |     5|exact_match|\u2191  |{s}|\u00b1  |0.0136|"]
    lines = ["GSM8K drops from ~0.87 to 0.41 when serving Nemotron-H-8B with ngram speculative decoding",
             "vllm serve nvidia/Nemotron-H-8B-Base-8K --speculative-config "
             "'{\"method\":\"ngram\",\"num_speculative_tokens\":5,\"prompt_lookup_max\":3}'", "Result tonight:"] \
        + [r.format(f="0.8658", s="0.4117") for r in table] + ["Last month:"] \
        + [r.format(f="0.8673", s="0.8491") for r in table]
    top = _analyze(lines).findings[0]
    assert top.category == "other" and "format" in top.title
    # both filters fell: the answers themselves changed
    both = lines[:3] + [r.format(f="0.4658", s="0.4117") for r in table] + lines[5:6] \
        + [r.format(f="0.8673", s="0.8491") for r in table]
    assert "format" not in _analyze(both).findings[0].title


def test_a_per_request_value_at_the_head_of_a_rendered_system_turn_or_a_system_field():
    """The gateway renders '<|im_start|>system' then '[ctx req_id=... ts=2026-05-30T14:32:06.914Z ...]'; a request
    log's top-level "system" field opens with '[session=<uuid> ts=...]': no two prompts share their first block."""
    from vllm_diag.postmortem import facts_from_text

    rendered = facts_from_text("the gateway now renders the system message as:\n\n  <|im_start|>system\n"
                               "  [ctx req_id=7f3a0c2e-91b4 ts=2026-05-30T14:32:06.914Z user_tier=pro]\n"
                               "  You are Aria, the assistant for ...\n")
    assert "2026-05-30T14:32:06" in rendered.startup["varying_prefix_prose"]
    field = facts_from_text('req 7f1c...  "system": "[session=a91f03e2-5d2b-4c1e-9c11-0b7e5e0f2d44 '
                            'ts=2026-11-24T14:36:49.118Z]\\nYou are AcmeDocs assistant."\n')
    assert "a91f03e2-5d2b-4c1e-9c11-0b7e5e0f2d44" in field.startup["varying_prefix_prose"]
    # the same turn opening on a policy text: nothing per request
    plain = facts_from_text("  <|im_start|>system\n  You are Aria, the assistant for ...\n")
    assert "varying_prefix_prose" not in plain.startup


def test_a_slow_first_token_and_an_answer_that_arrives_at_once_behind_a_buffering_proxy():
    top = _analyze(["Subject: Jamba Mini 1.7 \"slow first token\" in the chat UI -- is it the mamba prefill?",
                    "users report the chat UI thinks for 4-8 seconds before any text shows up, and then the whole "
                    "answer appears nearly at once instead of streaming.",
                    "vllm serve ai21labs/AI21-Jamba-Mini-1.7 -tp 2 --enable-prefix-caching",
                    "    location /v1/ {", "        proxy_buffering on;",
                    "        gzip_types text/plain application/json text/event-stream;", "    }"]).findings[0]
    assert top.category == "other" and "buffering" in top.title


def test_the_server_only_running_n_with_a_full_cache_is_the_engines_capacity_not_the_clients():
    """'the server only runs 32 requests' beside a full KV cache and preemptions: the engine holds requests back, so
    the client's ceiling does not explain it."""
    e = "(EngineCore_DP0 pid=881) INFO 06-02 11:10:04 "
    lines = ["Qwen3.5-35B-A3B with MTP runs only 32 requests at a time, KV cache full with short prompts",
             "With MTP (3 tokens) the server only runs 32 requests, GPU KV cache usage is ~100% and I see preemptions.",
             "vllm serve Qwen/Qwen3.5-35B-A3B --speculative-config '{\"method\":\"qwen3_5_mtp\","
             "\"num_speculative_tokens\":3}' --no-enable-prefix-caching",
             e + "[interface.py:933] Setting attention block size to 1568 tokens to ensure that attention page size "
                 "is >= mamba page size.",
             e + "[kv_cache_utils.py:1869] GPU KV cache size: 652,288 tokens",
             _stats("11:20:00", 32, 40, 100.0, pid=880)]
    top = _analyze(lines).findings[0]
    assert "client" not in top.title
    # the same words with requests running freely (no queue, the cache a third full): the client's ceiling
    free = lines[:-1] + [_stats("11:20:00", 32, 0, 30.0, pid=880)]
    assert "client" in _analyze(free).findings[0].title


def test_short_requests_holding_two_raised_blocks_each_are_no_long_context_limit():
    """Jamba at 65,536 tokens holds 3.01 requests of that length, but the report's requests are short and 111 of them
    fill the cache at ~2 raised blocks each: the block count, not the configured context."""
    e = "(EngineCore_DP0 pid=511) INFO 03-12 09:01:10 "
    top = _analyze([
        "jamba-mini 1.7 on 4xH100 -- cannot get more than ~111 running requests, max-num-seqs is 256",
        "Our traffic is short: ~550 prompt tokens, ~150 output. I'd expect hundreds of concurrent seqs.",
        "vllm serve ai21labs/AI21-Jamba-Mini-1.7 -tp 4 --max-model-len 65536 --max-num-seqs 256 --enable-prefix-caching",
        e + "[interface.py:911] Setting attention block size to 1776 tokens to ensure that attention page size is >= "
            "mamba page size.",
        e + "[kv_cache_utils.py:1194] GPU KV cache size: 394,272 tokens",
        e + "[kv_cache_utils.py:1198] Maximum concurrency for 65,536 tokens per request: 3.01x",
        _stats("09:30:00", 111, 90, 99.6, pid=510)]).findings[0]
    assert top.category in ("mamba_block_budget", "block_size_alignment") and "65,536-token" not in top.title


def test_drafts_trimmed_by_a_small_token_budget_under_load_are_not_the_prefix_caches_state():
    """MTP k=4 with --max-num-batched-tokens 1024 and max_num_seqs 256: a full batch's drafts need 1,280 tokens, so
    acceptance falls under load -- the budget's finding leads, not a state restored from cached blocks."""
    an = _analyze([
        "MTP acceptance collapses under load on Qwen3.5-122B-A10B (fine at low concurrency)",
        "vllm serve Qwen/Qwen3.5-122B-A10B-FP8 -tp 4 --speculative-config "
        "'{\"method\":\"mtp\",\"num_speculative_tokens\":4}' --max-num-seqs 256 --max-num-batched-tokens 1024 "
        "--enable-prefix-caching",
        _stats("10:40:00", 204, 0, 35.0, 40.7, pid=77)])
    assert an.findings[0].category == "token_budget"


def test_acceptance_that_falls_only_on_steps_mixing_prefills_with_drafted_decodes():
    an = _analyze([
        "Qwen3.5-35B-A3B MTP: acceptance collapses under load (only when new requests keep arriving)",
        "vllm serve Qwen/Qwen3.5-35B-A3B -tp 2 --speculative-config '{\"method\":\"qwen3_5_mtp\","
        "\"num_speculative_tokens\":3}' --max-num-batched-tokens 8192 --enable-prefix-caching",
        "I put a breakpoint-print in the GDN metadata builder, a typical mixed step:",
        "    num_prefills=5 num_decodes=0 num_spec_decodes=43 num_spec_decode_tokens=172 num_prefill_tokens=6984",
        _stats("17:00:00", 48, 0, 20.0, 30.0, pid=90)])
    assert an.findings[0].category == "mixed_batch" and "mixed steps" in an.findings[0].title


def test_the_same_greedy_request_answered_differently_the_second_time_is_wrong_output():
    from vllm_diag.postmortem import facts_from_text

    for said in ("same greedy request gives a different (wrong) answer the 2nd time",
                 "second identical request gives a different (worse) answer at temperature 0",
                 "Follow-up questions often come back subtly wrong: wrong party names",
                 "running the suite twice gives different outputs the 2nd time for ~15% of cases"):
        assert facts_from_text(said + "\n").startup.get("wrong_output_prose"), said


def test_state_blocks_of_align_mode_without_drafts_cap_short_requests():
    """Align mode without drafts: 2 state blocks per Mamba group a request. 26 requests of ~2.5-3k tokens fill 99.1 %
    of ~244 blocks of 1,056 tokens, 9.3 blocks each: 3 for their attention, the rest the three groups' states."""
    e = "(EngineCore_DP0 pid=9270) INFO 11-26 08:02:58 "
    lines = ["Qwen3-Next FP8 on one H200: stuck at ~27 running requests, queue grows",
             "Our traffic is short: prompts ~2.5-3k tokens (RAG with 4 chunks), answers ~300 tokens.",
             "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct-FP8 --max-model-len 131072 --max-num-seqs 128 "
             "--enable-prefix-caching --mamba-cache-mode align",
             "(APIServer pid=9031) INFO 11-26 08:00:42 [interface.py:933] Setting attention block size to 1056 tokens "
             "to ensure that attention page size is >= mamba page size.",
             e + "[kv_cache_utils.py:2395] GPU KV cache size: 258,048 tokens, Maximum concurrency for 131,072 tokens "
                 "per request: 1.97x",
             _stats("08:30:00", 26, 60, 99.1, pid=9031)]
    an = _analyze(lines)
    assert an.findings[0].category == "mamba_block_budget"
    assert _state_reading(an.facts).numbers["state_blocks_per_group"] == 2
    # very long prompts fill what they hold with their own tokens: no state blocks to blame
    long = [lines[0], "average prompt is around 190,000 tokens per request"] + lines[2:-1] \
        + [_stats("08:30:00", 1, 60, 99.1, pid=9031)]
    assert _state_reading(_analyze(long).facts) is None


def test_a_failure_the_pre_flight_predicts_before_serving_yields_to_a_log_that_served():
    """A CUDA-graph capture failure predicted from the configuration, in a log whose engine served for 20 minutes:
    a note after what the log shows, not the run's error."""
    from vllm_diag.model import Evidence, Finding
    from vllm_diag.postmortem import facts_from_text
    from vllm_diag.postmortem.analyze import _served_despite_prediction

    facts = facts_from_text(_stats("10:00:00", 87, 0, 40.0, 20.0) + "\n")
    predicted = Finding(rule="mamba_state_indices", category="state_index", severity="error",
                        title="Mamba state-index buffer narrower than the block-table row", message="",
                        evidence=[Evidence(text="group 0 block table", source="preflight")])
    seen = Finding(rule="prefix_cache_granularity", category="prefix_cache_degraded", severity="warning",
                   title="Hybrid prefix-cache hits only in 1088-token steps", message="",
                   evidence=[Evidence(text="Setting attention block size to 1088", line=3, source="log")])
    findings = [predicted, seen]
    _served_despite_prediction(facts, findings)
    assert findings[0] is seen and predicted.severity == "info"


def test_vllms_warning_that_the_drafts_slots_cut_the_token_budget_outranks_a_pcie_box():
    an = _analyze([
        "perf regression when enabling PARD drafting on llama-70b: TTFT for long prompts is 6-8x worse",
        "vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 4 --max-num-seqs 512 --max-num-batched-tokens 4096 "
        "--speculative-config '{\"method\":\"draft_model\",\"model\":\"amd/PARD-Llama-3.2-1B\","
        "\"num_speculative_tokens\":6,\"parallel_drafting\":true}'",
        "(APIServer pid=7710) WARNING 12-03 18:40:22 [vllm.py:1862] max_num_scheduled_tokens is set to 1024 based on "
        "the speculative decoding settings. This may lead to suboptimal performance. Consider increasing "
        "max_num_batched_tokens to accommodate the additional draft token slots, or decrease num_speculative_tokens.",
        "(Worker_TP0 pid=7977) WARNING 12-03 18:40:31 [custom_all_reduce.py:195] Custom allreduce is disabled because "
        "your platform lacks GPU P2P capability or P2P test failed. To silence this warning, specify "
        "disable_custom_all_reduce=True explicitly."])
    assert an.findings[0].category == "token_budget"


def test_ptx_from_a_newer_toolchain_than_the_driver_is_a_driver_near_miss():
    top = _analyze([
        "vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config '{\"method\":\"eagle3\",\"model\":"
        "\"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B\",\"num_speculative_tokens\":3}'",
        "(Worker_TP1 pid=8812) ERROR 12-19 22:17:05 [multiproc_executor.py:1007] torch.AcceleratorError: CUDA error: "
        "the provided PTX was compiled with an unsupported toolchain."]).findings[0]
    assert top.category == "other" and "Driver too old" in top.title


def test_a_diagnosis_that_raises_is_said_in_the_output_not_swallowed(monkeypatch):
    """A bug in a reading must not lose the rules' findings, and must not pass for a clean reading either: the output
    says the diagnosis failed (VLLM_DIAG_DEBUG=1 raises instead)."""
    import vllm_diag.postmortem.diagnose as diagnose_module

    def broken(facts):
        raise NameError("a reading's bug")

    monkeypatch.setattr(diagnose_module, "diagnose", broken)
    monkeypatch.delenv("VLLM_DIAG_DEBUG", raising=False)
    an = _analyze(["vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct", "ValueError: something else entirely"])
    assert any(f.rule == "diagnosis_failed" and "NameError" in f.message for f in an.findings)
    monkeypatch.setenv("VLLM_DIAG_DEBUG", "1")
    with pytest.raises(NameError):
        _analyze(["vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct", "ValueError: something else entirely"])


def test_capture_sizes_rounded_to_one_plus_k_put_the_cliff_where_the_largest_rounded_graph_ends():
    """From 0.12 vLLM rounds the capture sizes up to multiples of 1 + k and drops those past the largest: [.., 128,
    256] with k = 2 captures up to 129 tokens (43 requests), so 48 running requests (144 tokens) run without a full
    decode graph -- the cliff at ~40 the report measures."""
    an = _analyze([
        "TPOT is great until ~40 concurrent and then falls off a cliff (vllm 0.20.2, TP2, MTP 2 tokens)",
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 2 --max-num-seqs 256 --speculative-config "
        "'{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}' -cc '{\"cudagraph_mode\":\"FULL_AND_PIECEWISE\","
        "\"cudagraph_capture_sizes\":[1,2,4,8,16,32,64,128,256]}'",
        "(EngineCore_DP0 pid=9) INFO 02-11 09:01:02 [core.py:97] Initializing a V1 LLM engine (v0.20.2) with config: "
        "model='Qwen/Qwen3-Next-80B-A3B-Instruct'",
        _stats("14:02:00", 48, 0, 18.0)])
    assert an.findings[0].category == "cudagraph_shape"


def test_a_time_per_token_that_grows_with_the_load_is_no_prefill_chunk_stall():
    """TPOT that doubles from 128 to 160 concurrent requests with a 16,384-token step budget: no stall or spike told,
    so not the prefill chunks (the report also tried 32,768 with no change)."""
    top = _analyze([
        "GLM-4.5-Air MTP: throughput not scaling after 128 concurrency, from 128 -> 160 the output throughput DROP "
        "and TPOT almost double",
        "vllm serve /mnt/models/GLM-4.5-Air-FP8 --tensor-parallel-size 4 --max-num-seqs 256 "
        "--max-num-batched-tokens 16384 --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'"
    ]).findings[0]
    assert "prefill chunks" not in top.title
    stall = _analyze([
        "TPOT spikes to 900 ms and the streams stall whenever a long prompt arrives",
        "vllm serve /mnt/models/GLM-4.5-Air-FP8 --tensor-parallel-size 4 --max-num-batched-tokens 16384"]).findings[0]
    assert "prefill chunks" in stall.title


def test_answers_cut_in_the_middle_at_the_checkpoints_default_max_tokens():
    top = _analyze([
        "The long answers (summaries, normally 800-1500 tokens) are always cut in the middle of a sentence.",
        "vllm serve /models/granite-4.0-h-small-ft -tp 2 --enable-prefix-caching",
        "(APIServer pid=5411) INFO 11-03 14:21:53 [serving_chat.py:139] Using default chat sampling params from model: "
        "{'temperature': 0.2, 'top_p': 0.9, 'max_tokens': 512}",
        '  "choices": [{"index": 0, "finish_reason": "length", "message": {"role": "assistant", "content": "..."}}]'
    ]).findings[0]
    assert top.category == "other" and "token cap" in top.title


def test_thinking_inside_the_answer_from_a_server_without_a_reasoning_parser():
    """The response's content holds '</think>' and reasoning_content is null: the run's command sets no
    --reasoning-parser (the older command the report quotes did)."""
    lines = ["output has the thinking and </think> inside content since we enabled MTP",
             "vllm serve Qwen/Qwen3.5-27B --speculative-config '{\"method\":\"qwen3_5_mtp\",\"num_speculative_tokens\":2}'",
             "old: command: --model Qwen/Qwen3.5-27B --reasoning-parser qwen3",
             '   "content":"The user asks about returns. Let me check...\\n</think>\\n\\nThe policy is 30 days.",',
             '   "reasoning_content":null,"tool_calls":[]}']
    top = _analyze(lines).findings[0]
    assert top.category == "other" and "reasoning-parser" in top.title
    with_parser = [lines[0], lines[1].replace("vllm serve Qwen/Qwen3.5-27B", "vllm serve Qwen/Qwen3.5-27B "
                                              "--reasoning-parser qwen3")] + lines[3:]
    assert not any("reasoning-parser" in f.title for f in _analyze(with_parser).findings)


def test_tool_calls_left_in_the_text_by_a_parser_of_another_format():
    lines = ["[Bug] Qwen3-Coder-Next + MTP: tool calls come back as plain text with broken XML in `content`, "
             "`tool_calls` empty",
             "vllm serve Qwen/Qwen3-Coder-Next -tp 2 --enable-auto-tool-choice --tool-call-parser hermes "
             "--speculative-config '{\"method\": \"qwen3_next_mtp\", \"num_speculative_tokens\": 3}'"]
    top = _analyze(lines).findings[0]
    assert top.category == "other" and "--tool-call-parser hermes" in top.title
    # an answer without a call has an empty tool_calls list too: no symptom
    from vllm_diag.postmortem import facts_from_text

    assert "tool_calls_as_text" not in facts_from_text('"content":"Paris.", "tool_calls":[]},"finish_reason":"stop"\n').startup


def test_a_slow_eager_run_is_the_eager_mode_before_a_low_acceptance_on_prefix_hits():
    top = _analyze([
        "Falcon-H1 with ngram is slow, TPOT 3-4x what we expect, and the ngram acceptance 24% is low",
        "vllm serve tiiuae/Falcon-H1-7B-Instruct --enforce-eager --enable-prefix-caching --speculative-config "
        "'{\"method\":\"ngram\",\"num_speculative_tokens\":3,\"prompt_lookup_max\":4}'",
        _stats("10:00:00", 20, 0, 10.0, 55.0)]).findings[0]
    assert top.category == "other" and "eager" in top.title


def test_clients_getting_504_after_exactly_60s_behind_a_gateway_timeout():
    top = _analyze([
        "Incident: Kimi-K2.5 + EAGLE3 auf 8x B200: Clients bekommen 504 nach genau 60s",
        "vllm serve moonshotai/Kimi-K2.5 -tp 8 --speculative-config '{\"method\":\"eagle3\",\"model\":"
        "\"/models/kimi-k25-eagle3\",\"num_speculative_tokens\":3}'",
        "[2026-11-27T09:14:02.118Z] \"POST /v1/chat/completions HTTP/1.1\" 504 UT 0 24 60001 - \"-\" "
        "upstream_timeout"]).findings[0]
    assert top.category == "other" and "timeout" in top.title


def test_a_jamba_whose_eight_kv_groups_each_hold_a_block_per_request_caps_short_requests():
    """Jamba's 4 attention + 28 Mamba layers in groups of 4: each short request holds a block in every group (7 state
    blocks, mamba_cache_mode "none" as /metrics labels it) -- 19 requests fill 98.7 % of 152 blocks of 2,320 tokens."""
    e = "(EngineCore_DP0 pid=301) INFO 04-02 10:00:00 "
    lines = ["jamba mini 1.7 on vllm 0.15.1: never more than 19 running requests, queue explodes",
             "TL;DR: max-num-seqs is 128 but the engine runs at most 19 requests at a time. Prompts are short",
             "(~600 tok in, ~300 out). No errors.",
             "vllm serve ai21labs/AI21-Jamba-Mini-1.7 -tp 2 --max-model-len 262144 --max-num-seqs 128",
             e + "[interface.py:520] Setting attention block size to 2320 tokens to ensure that attention page size is "
                 ">= mamba page size.",
             e + "[kv_cache_utils.py:1163] GPU KV cache size: 352,640 tokens",
             'vllm:cache_config_info{block_size="2320",enable_prefix_caching="False",mamba_cache_mode="none",'
             'num_gpu_blocks="152"} 1.0',
             _stats("10:30:00", 19, 80, 98.7, pid=300)]
    an = _analyze(lines)
    assert an.facts.startup["request_tokens_prose"] == 600 and an.facts.startup["mamba_cache_mode"] == "none"
    assert an.findings[0].category == "mamba_block_budget"
    assert _state_reading(an.facts).numbers["state_blocks_per_group"] == 1


def test_a_benchmark_clients_own_concurrency_summary_caps_the_running_requests():
    top = _analyze([
        "[perf-eval] Qwen3-Next + MTP(3): running requests never go above 8, no matter if I send 64 or 256 prompts.",
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 2 --max-num-seqs 256 --speculative-config "
        "'{\"method\": \"mtp\", \"num_speculative_tokens\": 3}'",
        _stats("10:00:00", 8, 0, 1.2),
        "============ Serving Benchmark Result ============",
        "Maximum request concurrency:             8"]).findings[0]
    assert top.category == "other" and "client" in top.title


def test_throughput_that_gets_slower_and_slower_on_a_throttled_gpu():
    top = _analyze([
        "nemotron nano 9b v2 gets slower and slower, ngram spec, L40S",
        "right after start ~1900 tok/s gen. after 15-25 min it goes down to ~1000 and stays there.",
        "vllm serve nvidia/NVIDIA-Nemotron-Nano-9B-v2 --speculative-config "
        "'{\"method\":\"ngram\",\"num_speculative_tokens\":4,\"prompt_lookup_max\":4}'",
        "    Clocks Event Reasons",
        "        HW Slowdown                       : Active"]).findings[0]
    assert top.category == "other" and "throttled" in top.title


def test_chinese_text_read_as_latin1_is_text_encoded_twice():
    from vllm_diag.postmortem import facts_from_text

    garbled = "    \u00e6\u201a\u00a8\u00e5\u00a5\u00bd\u00ef\u00bc\u0152\u00e6\u201e\u0178\u00e8\u00b0\u00a2\u00e6\u201a\u00a8\n"
    assert facts_from_text(garbled).startup.get("mojibake_text")
    assert not facts_from_text("Caf\u00e9 \u00e9t\u00e9, r\u00e9sum\u00e9 -- \u00e4\u00f6\u00fc\n").startup.get("mojibake_text")


def test_a_client_that_tokenizes_with_another_models_tokenizer_garbles_the_answers():
    top = _analyze([
        "[Bug]: Kimi-Linear-48B-A3B produces gibberish with prefix caching on v0.32.0",
        "Our offline eval harness sends pre-tokenized prompts to /v1/completions.",
        "vllm serve moonshotai/Kimi-Linear-48B-A3B-Instruct --trust-remote-code -tp 2 --enable-prefix-caching",
        "tok = AutoTokenizer.from_pretrained(cfg.tokenizer_path)   # cfg.tokenizer_path = "
        "\"/models/shared/llama-3.1-8b-instruct\""]).findings[0]
    assert top.category == "other" and "llama-3.1-8b-instruct" in top.title


def test_a_hit_rate_the_report_calls_fine_is_no_complaint_about_the_hits():
    from vllm_diag.postmortem import facts_from_text

    assert "hit_rate_prose" not in facts_from_text("maybe cache is thrashing? hit rate looks ok-ish though\n").startup
    assert facts_from_text("the prefix cache hit rate dropped to 2% after the upgrade\n").startup["hit_rate_prose"]


def test_an_eval_answer_still_inside_its_thinking_ran_out_of_tokens():
    top = _analyze([
        "Qwen3.5 + MTP: GSM8K dropped 93 -> 71 after last night's deploy",
        "vllm serve Qwen/Qwen3.5-27B --speculative-config '{\"method\":\"qwen3_5_mtp\",\"num_speculative_tokens\":2}'",
        "  doc_id=41  target=\"18\"  resp=\"<think>\\nJanet's ducks lay 16 eggs per day. She eats 3 and bakes with 4, so "
        "16 - 3 - 4 = 9 eggs ... 9 * 2 = 18. So she makes $18\"",
        "  gen_kwargs: {'max_gen_toks': 256, 'until': ['Question:'], 'do_sample': False}"]).findings[0]
    assert top.category == "other" and "Reasoning" in top.title


def test_a_clients_connection_pool_caps_what_the_engines_run():
    top = _analyze([
        "8x DP engines but the server only ever runs ~8 requests, p50 TTFT is 4.9 s with 256 concurrent users",
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -dp 8 --speculative-config '{\"method\":\"mtp\","
        "\"num_speculative_tokens\":2}'",
        _stats("22:19:31", 1, 0, 2.0),
        "    conn = aiohttp.TCPConnector(limit_per_host=8, ttl_dns_cache=300)"]).findings[0]
    assert top.category == "other" and "client" in top.title


def test_nccl_tests_that_hang_the_same_way_and_iommu_page_faults_are_a_collective_hang():
    top = _analyze([
        "[Bug]: Jamba Mini 1.7 hangs forever at \"Capturing CUDA graphs\" with TP=4 (v0.15.1)",
        "vllm serve ai21labs/AI21-Jamba-Mini-1.7 --tensor-parallel-size 4 --enable-prefix-caching",
        "nccl-tests from the same container also never finishes:",
        "[ 2214.551203] nvidia 0000:01:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x0023 address=0x38e1c0000]"
    ]).findings[0]
    assert top.category == "other" and "collective" in top.title


def test_french_words_for_a_collapsing_throughput_on_a_throttled_gpu():
    top = _analyze([
        "[Perf] D\u00e9bit qui s'effondre apr\u00e8s ~20 min -- Nemotron-H 56B + MTP, vllm 0.20.2",
        "Au d\u00e9but ~950 tok/s. Puis \u00e7a descend vers ~540 tok/s et \u00e7a reste l\u00e0.",
        "vllm serve nvidia/Nemotron-H-56B-Base-8K -tp 2 --speculative-config "
        "'{\"method\":\"mtp\",\"num_speculative_tokens\":2}'",
        "index, temperature.gpu, clocks.sm [MHz], clocks_throttle_reasons.sw_thermal_slowdown",
        "0, 91, 1110 MHz, Active"]).findings[0]
    assert top.category == "other" and "throttled" in top.title


def test_turn_markers_in_vllms_own_request_log_of_an_answer():
    top = _analyze([
        "After the chart migration Qwen3.5 rambles: it answers, then writes the user's next question itself.",
        "vllm serve Qwen/Qwen3.5-27B --chat-template=/etc/vllm/templates/tool_chat_template_llama3.1_json.jinja",
        "(APIServer pid=1) INFO 11-28 09:31:40 [request_logger.py:98] Generated response chatcmpl-b1d27e90: output: "
        "'To reset your VPN token, open the portal and click \"Re-enroll\". <|eot_id|><|start_header_id|>user"
        "<|end_header_id|>\\n\\nThanks!'"]).findings[0]
    assert top.category == "other" and "turn markers" in top.title


def test_a_per_request_value_inline_after_a_system_turn_opener():
    from vllm_diag.postmortem import facts_from_text

    f = facts_from_text('req a1f3:  "<|im_system|>system<|im_middle|>[session 7f2c91d0-4e55-4b1a-9c3e-2d8f0a61b9e4 | '
                        '2026-03-19T10:15:29.184Z]\\nYou are Atlas, the operations assistant"\n')
    assert "7f2c91d0-4e55" in f.startup["varying_prefix_prose"]


def test_a_reporters_no_xid_in_dmesg_is_no_error_line():
    from vllm_diag.postmortem import facts_from_text

    f = facts_from_text("I tried --no-enable-prefix-caching on a second instance, still 504 on long ones.\n"
                        "GPU util ~90%, no Xid in dmesg, no OOM.\n")
    assert not f.startup.get("error_lines")

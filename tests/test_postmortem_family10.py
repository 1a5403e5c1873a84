"""Post-mortem, round ten. The logs are written here in vLLM's own formats (messages, files and lines of the
release each names)."""

from __future__ import annotations

from vllm_diag.postmortem.analyze import analyze_text

_SP = "/usr/local/lib/python3.12/site-packages"
_FAULT = "torch.AcceleratorError: CUDA error: an illegal memory access was encountered"


def _frames(prefix: str, frames: list[tuple[str, int, str, str]]) -> list[str]:
    out = [f"{prefix}Traceback (most recent call last):"]
    for path, line, func, code in frames:
        out += [f'{prefix}  File "{_SP}/{path}", line {line}, in {func}', f"{prefix}    {code}"]
    return out


def test_a_sticky_fault_raised_again_while_shutting_down_is_not_the_fuller_copy_of_the_step():
    """A CUDA fault is raised again by every later CUDA call: the copy a worker prints while shutting down (more
    frames: the process entry, shutdown, the cleanup that touched the device) is the aftermath; the copy of the
    step that met the fault is the root, and its frames give the line numbers."""
    step = "(Worker_TP0 pid=2988) ERROR 11-27 20:41:05 [multiproc_executor.py:1007] "
    log = [step + "WorkerProc hit an exception."] + _frames(step, [
        ("vllm/v1/executor/multiproc_executor.py", 999, "worker_busy_loop", "output = func(*args, **kwargs)"),
        ("vllm/v1/worker/gpu_worker.py", 1083, "sample_tokens", "return self.model_runner.sample_tokens(grammar_output)"),
        ("vllm/v1/worker/gpu_model_runner.py", 3736, "_bookkeeping_sync", "RejectionSampler.parse_output("),
        ("vllm/v1/sample/rejection_sampler.py", 273, "parse_output", "output_token_ids_np = output_token_ids.cpu().numpy()"),
    ]) + [step + _FAULT]
    down = "(Worker_TP0 pid=2988) "
    log += _frames(down, [
        ("multiprocessing/process.py", 314, "_bootstrap", "self.run()"),
        ("multiprocessing/process.py", 108, "run", "self._target(*self._args, **self._kwargs)"),
        ("vllm/v1/executor/multiproc_executor.py", 778, "worker_main", "worker.shutdown()"),
        ("vllm/v1/executor/multiproc_executor.py", 640, "shutdown", "self.worker.shutdown()"),
        ("vllm/v1/worker/worker_base.py", 220, "shutdown", "self.worker.shutdown()"),
        ("vllm/v1/worker/gpu_worker.py", 1396, "shutdown", "self.model_runner._cleanup_profiling_kv_cache()"),
        ("vllm/v1/worker/gpu_model_runner.py", 6506, "_cleanup_profiling_kv_cache", "torch.cuda.synchronize()"),
    ]) + [down + _FAULT]
    an = analyze_text("\n".join(log), "t.log", use_preflight=False)
    assert an.facts.root.frames[-1].function == "parse_output"
    assert an.facts.numbers["rejection_sampler_line"] == 273 and an.facts.numbers["gpu_model_runner_line"] == 3736
    assert "worker_base_line" not in an.facts.numbers


_QWEN_START = [
    "(APIServer pid=1) INFO 10-02 09:11:40 [utils.py:233] non-default args: {'model': 'Qwen/Qwen3-Next-80B-A3B-Instruct', "
    "'tensor_parallel_size': 4, 'speculative_config': {'method': 'qwen3_next_mtp', 'num_speculative_tokens': 2}}",
    "(APIServer pid=1) INFO 10-02 09:11:48 [model.py:547] Resolved architecture: Qwen3NextForCausalLM",
    "(APIServer pid=1) INFO 10-02 09:11:49 [config.py:376] Setting attention block size to 288 tokens to ensure that "
    "attention page size is >= mamba page size.",
]


def _top(lines: list[str]):
    return analyze_text("\n".join(lines), "t.log", use_preflight=False).findings[0]


def test_a_sanitizer_report_retold_in_prose_places_the_fault_and_a_slot_past_the_pool_is_the_state_index():
    """The reporter retells compute-sanitizer: the kernel that faulted (a conv-state kernel) and the slot it read
    past the end of the state pool. That is the state index, whatever the step's batch, with both numbers."""
    log = [
        "LFM2 + ngram drafts + prefix caching crashes on repeated prompts",
        "INFO 03-27 16:40:12 [utils.py:287] non-default args: {'enable_prefix_caching': True, 'mamba_cache_mode': "
        "'align', 'speculative_config': {'method': 'ngram', 'num_speculative_tokens': 4}, 'model': 'LiquidAI/LFM2-8B-A1B'}",
        "(EngineCore pid=20931) ERROR 03-27 16:41:54 [core.py:1313] EngineCore encountered a fatal error.",
        "(EngineCore pid=20931) ERROR 03-27 16:41:54 [core.py:1313] " + _FAULT,
        "compute-sanitizer reports the invalid __global__ read in _causal_conv1d_update_kernel, reading conv_state past "
        "the end of the state pool (index 143873, pool has 143843 blocks).",
    ]
    top = _top(log)
    assert top.category == "state_index" and "_causal_conv1d_update_kernel" in top.title
    assert top.numbers["state_index"] == 143873 and top.numbers["num_state_blocks"] == 143843
    # the same slot inside the pool says nothing of the kind: the configuration decides as before
    inside = _top([t.replace("index 143873, pool has 143843", "index 143, pool has 143843") for t in log])
    assert "state_index" not in inside.numbers


def test_an_eval_gap_with_no_temperature_and_the_models_sampling_defaults_is_sampling_noise():
    """No error; the requests set no temperature and vLLM says the model's generation_config supplies the sampling
    defaults: the 'greedy' evaluation is sampled -- outside the families, ahead of notes about the configuration."""
    log = ["gsm8k lower with MTP on than off? (0.83 vs 0.86). We send no temperature in the request body."] + _QWEN_START + [
        "(APIServer pid=1) WARNING 10-02 09:16:02 [model.py:1389] Default sampling parameters have been overridden by "
        "the model's Hugging Face generation config recommended from the model creator.",
        "(APIServer pid=1) INFO 10-02 09:16:02 [serving_chat.py:139] Using default chat sampling params from model: "
        "{'temperature': 0.7, 'top_k': 20, 'top_p': 0.8}"]
    top = _top(log)
    assert top.category == "other" and "generation_config" in top.title
    # with the temperature set in the requests the defaults do not apply: not this cause
    set_t = _top([log[0].replace("We send no temperature", "We send temperature 0")] + log[1:])
    assert "generation_config" not in set_t.title


def test_slow_serving_with_vllms_untuned_moe_warning_is_outside_the_families():
    log = ["Qwen3-Next + MTP throughput on H20 is ~3x below what others report on H100."] + _QWEN_START + [
        "(Worker_TP0 pid=702) WARNING 04-22 12:43:55 [fused_moe.py:1091] Using default MoE config. Performance might "
        "be sub-optimal! Config file not found at /usr/lib/vllm/model_executor/layers/fused_moe/configs/"
        "E=512,N=128,device_name=NVIDIA_H20-3e.json"]
    top = _top(log)
    assert top.category == "other" and top.rule == "near_miss" and "MoE" in top.title


def test_a_quality_drop_under_a_static_rope_override_is_outside_the_families():
    log = ["Quality drop on Qwen3-Next with fp8 KV cache + MTP on short chat prompts.",
           "(APIServer pid=1) INFO 08-01 10:00:12 [api_utils.py:286] non-default args: {'model': "
           "'Qwen/Qwen3-Next-80B-A3B-Instruct', 'hf_overrides': {'rope_scaling': {'rope_type': 'yarn', 'factor': 4.0, "
           "'original_max_position_embeddings': 262144}}, 'kv_cache_dtype': 'fp8', 'speculative_config': "
           "{'method': 'qwen3_next_mtp', 'num_speculative_tokens': 2}}"] + _QWEN_START[1:]
    top = _top(log)
    assert top.category == "other" and "RoPE" in top.title


def test_a_symptom_nothing_explains_is_said_to_be_unexplained_before_notes_about_the_configuration():
    """No error, a quality drop in the report and only a note that the block size was raised: the verdict says the
    symptom is not explained (not modelled) rather than leading with the note."""
    plain = [_QWEN_START[0].replace(", 'speculative_config': {'method': 'qwen3_next_mtp', 'num_speculative_tokens': 2}",
                                    "")] + _QWEN_START[1:]
    top = _top(["Since the upgrade our eval accuracy dropped a lot, no errors anywhere."] + plain)
    assert top.category == "other" and "not modelled" in top.basis


def test_a_hybrid_served_with_prefix_caching_off_explains_its_zero_hit_rate():
    """vLLM leaves prefix caching off for Mamba hybrids unless asked: the engine config says so, the metrics say 0 %,
    and the report asks why nothing hits -- the reason is that nothing is cached, ahead of any note."""
    eng = ("(EngineCore_DP0 pid=160) INFO 05-27 10:00:12 [core.py:112] Initializing a V1 LLM engine (v0.22.0) with "
           "config: model='ibm-granite/granite-4.0-h-small', speculative_config=None, enable_prefix_caching=False, "
           "chunked_prefill_enabled=True")
    rate = ("(APIServer pid=1) INFO 05-27 10:14:{s} [loggers.py:224] Avg prompt throughput: 41220.7 tokens/s, Avg "
            "generation throughput: 1288.1 tokens/s, Running: 38 reqs, Waiting: 0 reqs, GPU KV cache usage: 12.8%, "
            "Prefix cache hit rate: 0.0%")
    log = ["Prefix cache hit rate is always 0.0% with granite-4.0-h-small although every request shares a system prompt.",
           eng, "(EngineCore_DP0 pid=160) INFO 05-27 10:00:19 [interface.py:649] Setting attention block size to 800 "
                "tokens to ensure that attention page size is >= mamba page size."] + [rate.format(s=s) for s in (22, 32)]
    top = _top(log)
    assert top.category == "prefix_cache_degraded" and top.title == "Prefix caching is off on this hybrid"
    on = _top([log[0], eng.replace("enable_prefix_caching=False", "enable_prefix_caching=True")] + log[2:])
    assert on.title != "Prefix caching is off on this hybrid"


def test_a_block_pool_that_runs_dry_on_a_hybrid_with_drafts_is_the_mamba_block_budget():
    sp = "/opt/venv/lib/python3.12/site-packages/vllm/v1"
    pre = "(EngineCore_DP0 pid=88) ERROR 03-05 08:13:58 [core.py:1100] "
    log = [pre + "non-default args: {'model': 'nvidia/NVIDIA-Nemotron-Nano-9B-v2', 'enable_prefix_caching': True, "
                 "'mamba_cache_mode': 'align', 'speculative_config': {'method': 'ngram', 'num_speculative_tokens': 3}}",
           pre + "Traceback (most recent call last):",
           pre + f'  File "{sp}/core/kv_cache_coordinator.py", line 188, in allocate_new_blocks',
           pre + "    manager.allocate_new_blocks(request_id, num_tokens, num_tokens_main_model)",
           pre + f'  File "{sp}/core/block_pool.py", line 334, in get_new_blocks',
           pre + '    raise ValueError(f"Cannot get {num_blocks} free blocks from the pool")',
           pre + "ValueError: Cannot get 4 free blocks from the pool"]
    top = _top(log)
    assert top.category == "mamba_block_budget"
    dense = _top([log[0].replace("nvidia/NVIDIA-Nemotron-Nano-9B-v2", "meta-llama/Llama-3.1-8B-Instruct")
                  .replace(", 'mamba_cache_mode': 'align'", "")] + log[1:])
    assert dense.category == "other"


def test_vllms_warning_that_kv_pages_cannot_be_unified_is_a_capacity_finding_of_the_layout():
    """0.29+: an MLA target beside a drafter's sliding-window layers whose pages cannot be unified: vLLM lays the
    sliding-window layers out as full attention and says so -- the KV layout class, a warning without an error."""
    log = ["KV capacity way lower than expected with our sliding-window EAGLE3 head, no error.",
           "(EngineCore pid=5533) WARNING 07-08 03:20:05 [kv_cache_utils.py:1601] KV cache page sizes cannot be unified; "
           "treating sliding-window layers as full attention for cache allocation. Sliding-window attention compute is "
           "unchanged.",
           "(EngineCore pid=5533) INFO 07-08 03:20:06 [kv_cache_utils.py:2032] GPU KV cache size: 587,776 tokens"]
    top = _top(log)
    assert top.category == "kv_page_size" and top.severity == "warning" and "not unified" in top.title


def test_capacity_lost_when_a_drafter_with_its_own_kv_joins_a_hybrid_is_the_draft_layout():
    log = ["Adding an eagle3 head to qwen3-next halves max concurrency?? No error, acceptance is fine.",
           "(APIServer pid=1) INFO 05-21 14:31:40 [utils.py:233] non-default args: {'model': "
           "'Qwen/Qwen3-Next-80B-A3B-Instruct', 'speculative_config': {'method': 'eagle3', 'model': "
           "'/models/qwen3next-eagle3', 'num_speculative_tokens': 3}}",
           "INFO 05-21 14:31:55 [interface.py:905] Setting attention block size to 560 tokens to ensure that attention "
           "page size is >= mamba page size."]
    top = _top(log)
    assert top.category == "kv_page_size" and "drafter" in top.title
    # an n-gram drafter has no KV layers of its own: not this class
    ngram = _top([log[0].replace("an eagle3 head", "ngram drafting"),
                  log[1].replace("'method': 'eagle3', 'model': '/models/qwen3next-eagle3', ", "'method': 'ngram', ")]
                 + log[2:])
    assert ngram.category != "kv_page_size"


def test_another_users_text_in_an_answer_is_wrong_output():
    """'returns text that belongs to ANOTHER user's request' is silent corruption in the reporter's words."""
    log = ["Qwen3-Next with MTP returns text that belongs to ANOTHER user's request. No errors, no warnings."] + _QWEN_START
    top = _top(log)
    assert top.category in ("mixed_batch", "state_index") and "wrong output" in top.message


_MTP_SERVE = ("vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 2 --speculative-config "
              "'{\"method\":\"mtp\",\"num_speculative_tokens\":3}'")


def test_slow_serving_with_weights_offloaded_to_the_cpu_is_the_offload():
    log = ["Qwen3-Next + MTP on one H100 generates 4 tokens/s, generation is painfully slow and MTP made it even slower.",
           _MTP_SERVE + " --cpu-offload-gb 90"] + _QWEN_START[1:]
    top = _top(log)
    assert top.category == "other" and "CPU weight offload" in top.title


def test_low_acceptance_under_hot_sampling_is_the_sampling_and_on_prefix_hits_the_state_index():
    """Low acceptance with requests at temperature 1.25 and penalties: the sampling. The same complaint tied to
    prefix-cache hits on a hybrid under drafts, at temperature 0: the state restored from the cache."""
    hot = ["MTP acceptance is terrible in production, great in benchmarks.", _MTP_SERVE, *_QWEN_START[1:],
           '{"model": "Qwen/Qwen3-Next-80B-A3B-Instruct", "temperature": 1.25, "presence_penalty": 1.5, "max_tokens": 2048}']
    assert "sampling" in _top(hot).title
    hits = ["MTP acceptance drops from ~3.2 to ~1.3 as soon as the prefix cache warms up; --no-enable-prefix-caching "
            "keeps it at 3.2.", _MTP_SERVE + " --enable-prefix-caching", *_QWEN_START[1:],
            "(EngineCore pid=9) INFO 01-01 00:00:00 [config.py:300] Mamba cache mode is set to 'align'",
            "(APIServer pid=1) INFO 01-01 00:10:00 [loggers.py:257] Engine 000: Avg prompt throughput: 9000.0 tokens/s, "
            "Avg generation throughput: 900.0 tokens/s, Running: 30 reqs, Waiting: 0 reqs, GPU KV cache usage: 40.0%, "
            "Prefix cache hit rate: 83.7%"]
    top = _top(hits)
    assert top.category == "state_index" and "acceptance" in top.title


def test_wrong_output_on_a_prefix_hit_without_drafts_is_the_state_index():
    log = ["Nemotron 3 Nano: the second identical request returns nonsense when prefix caching is on (no spec decode).",
           "llm = LLM('nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16', enable_prefix_caching=True)",
           "INFO 01-01 00:00:00 [model.py:600] Resolved architecture: NemotronHForCausalLM",
           "INFO 01-01 00:00:01 [config.py:300] Mamba cache mode is set to 'all'"]
    top = _top(log)
    assert top.category == "state_index" and "no drafts" in top.title


def test_capture_sizes_a_user_pinned_below_the_default_concurrency_under_drafts():
    """The user pinned the capture sizes at 64 tokens with k = 3; max_num_seqs is not in the log, and vLLM's
    smallest default (256) already needs 1,024 tokens: decode steps above 16 requests run without full graphs."""
    log = ["EAGLE3 on Llama-3.3-70B: latency cliff above 16 concurrent users.",
           "vllm serve meta-llama/Llama-3.3-70B-Instruct -tp 4 --speculative-config '{\"method\":\"eagle3\",\"model\":"
           "\"yuhuili/EAGLE3-LLaMA3.3-Instruct-70B\",\"num_speculative_tokens\":3}' -cc '{\"cudagraph_capture_sizes\":"
           "[1,2,4,8,16,32,64],\"max_cudagraph_capture_size\":64}'"]
    top = _top(log)
    assert top.rule == "spec_capture_sizes" and top.numbers["decode_tokens_at_max_num_seqs"] == 1024


def test_mamba_pages_padded_to_a_forced_block_are_wasted_state_memory():
    pad = ("(APIServer pid=77) INFO 04-02 10:21:58 [interface.py:631] Padding mamba page size by {p}% to ensure that mamba "
           "page size and attention page size are exactly equal.")
    log = ["Fewer concurrent seqs after moving Nemotron-H to --block-size 2048, no error.",
           "vllm serve nvidia/NVIDIA-Nemotron-Nano-9B-v2 --block-size 2048 --max-num-seqs 256", pad.format(p="57.78")]
    top = _top(log)
    assert top.rule == "mamba_padding_waste" and top.numbers["mamba_padding_percent"] == 57.78
    # vLLM's own choice for a small state (no block size set, one start): nothing to undo
    own = analyze_text("\n".join(["LFM2 runs fine.", "vllm serve LiquidAI/LFM2-8B-A1B", pad.format(p="33.33")]), "t.log",
                       use_preflight=False)
    assert "mamba_padding_waste" not in {f.rule for f in own.findings}


def test_a_pasted_config_dict_whose_first_items_were_cut_still_gives_its_values():
    """'compilation_config={..., "cudagraph_capture_sizes": [...], "max_cudagraph_capture_size": 64, ...}': the
    reporter's leading elision does not lose the items after it."""
    log = ["INFO 03-11 08:22:40 [core.py:101] Initializing a V1 LLM engine (v0.17.0) with config: "
           "model='ibm-granite/granite-4.0-h-tiny', speculative_config=None, compilation_config={..., \"cudagraph_mode\": "
           "[2, 1], ..., \"cudagraph_capture_sizes\": [1, 2, 4, 8, 16], \"max_cudagraph_capture_size\": 16, ...}"]
    an = analyze_text("\n".join(log), "t.log", use_preflight=False)
    assert an.facts.args["max_cudagraph_capture_size"] == 16 and an.facts.args["cudagraph_capture_sizes"] == [1, 2, 4, 8, 16]


def test_a_quality_drop_with_an_uncalibrated_fp8_kv_cache_and_no_drafts_is_numerics():
    log = ["fp8 KV cache on Qwen3.5-27B: long-context accuracy drops a lot, short context fine. No errors.",
           "vllm serve Qwen/Qwen3.5-27B --max-model-len 131072 --kv-cache-dtype fp8",
           "INFO 05-19 12:40:08 [interface.py:906] Setting attention block size to 1600 tokens to ensure that attention "
           "page size is >= mamba page size.",
           "Are the GDN states also stored in fp8 now? (--mamba-ssm-cache-dtype is default)"]
    an = analyze_text("\n".join(log), "t.log", use_preflight=False)
    assert an.findings[0].category == "other" and "fp8 KV cache" in an.findings[0].title
    assert "mamba_ssm_cache_dtype" not in an.facts.args or an.facts.args["mamba_ssm_cache_dtype"] != "is"


def test_kv_capacity_spent_on_a_huge_token_budget_is_the_profilers_activation_reserve():
    log = ["NVIDIA-Nemotron-Nano-9B-v2: only ~6 GiB of KV cache on an 80GB H100? Max concurrency way lower than expected.",
           "vllm serve nvidia/NVIDIA-Nemotron-Nano-9B-v2 --max-model-len 131072 --max-num-seqs 1024 "
           "--max-num-batched-tokens 131072 --gpu-memory-utilization 0.92"]
    top = _top(log)
    assert top.category == "other" and "131,072-token" in top.title


def test_a_capture_cap_below_the_spec_decode_steps_without_a_size_list():
    log = ["TPOT doubles once concurrency goes above ~80 with EAGLE3 (num_speculative_tokens=2).",
           "python -m vllm.entrypoints.openai.api_server --model Qwen/Qwen3-32B -tp 2 --max-num-seqs 128 "
           "--max-cudagraph-capture-size 256 --speculative-config '{\"model\":\"RedHatAI/Qwen3-32B-speculator.eagle3\","
           "\"method\":\"eagle3\",\"num_speculative_tokens\":2}'"]
    top = _top(log)
    assert top.rule == "spec_capture_sizes" and top.numbers["decode_tokens_at_max_num_seqs"] == 384
    assert top.numbers["non_multiples"] == []  # (vLLM fills the sizes below the cap itself)


def test_wrong_output_on_a_hybrid_with_prefix_caching_is_the_state_index_only_when_the_report_ties_it_to_a_hit():
    base = ["INFO 01-01 00:00:00 [model.py:600] Resolved architecture: NemotronHForCausalLM",
            "INFO 01-01 00:00:01 [config.py:300] Mamba cache mode is set to 'all'",
            "llm = LLM('nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16', enable_prefix_caching=True)"]
    untied = analyze_text("\n".join(["Since the upgrade our eval accuracy dropped, no errors."] + base), "t.log",
                          use_preflight=False).findings
    assert not untied or untied[0].category != "state_index"

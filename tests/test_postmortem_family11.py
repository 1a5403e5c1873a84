"""Post-mortem, round eleven: which run had synchronous launches, a rerun's traceback that stops in a kernel
module, and a slowdown explained by eager mode. The logs are written here in vLLM's own formats (messages, files
and lines of the release each names)."""

from __future__ import annotations

from vllm_diag.postmortem.analyze import analyze_text

_SP = "/usr/local/lib/python3.12/dist-packages"
_FAULT = "torch.AcceleratorError: CUDA error: an illegal memory access was encountered"
_W = "(Worker_TP2 pid=412) ERROR 10-09 14:22:05 [multiproc_executor.py:671] "

_START = [
    "(APIServer pid=1) INFO 10-09 13:50:02 [utils.py:233] non-default args: {'model': 'Qwen/Qwen3-Next-80B-A3B-Instruct',"
    " 'tensor_parallel_size': 4, 'speculative_config': {'method': 'qwen3_next_mtp', 'num_speculative_tokens': 4}}",
    "(APIServer pid=1) INFO 10-09 13:50:09 [model.py:547] Resolved architecture: Qwen3NextForCausalLM",
]

# the first run: the fault surfaces at the rejection sampler's copy to the host, a later synchronisation
_ASYNC_RUN = [
    _W + "Traceback (most recent call last):",
    _W + f'  File "{_SP}/vllm/v1/worker/gpu_model_runner.py", line 2147, in _bookkeeping_sync',
    _W + "    valid_sampled_token_ids = self.rejection_sampler.parse_output(",
    _W + f'  File "{_SP}/vllm/v1/sample/rejection_sampler.py", line 124, in parse_output',
    _W + "    output_token_ids_np = output_token_ids.cpu().numpy()",
    _W + _FAULT,
    _W + "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
]


def _analyze(lines: list[str]):
    return analyze_text("\n".join(lines), "t.log", use_preflight=False)


def test_blocking_launches_said_only_after_the_error_do_not_make_the_failing_run_synchronous():
    """The reporter tried CUDA_LAUNCH_BLOCKING=1 once, after the pasted crash: the crash itself ran with asynchronous
    launches, so its frame is where the fault surfaced, not the kernel that faulted."""
    an = _analyze(_START + _ASYNC_RUN + ["", "I ran once with CUDA_LAUNCH_BLOCKING=1 but it never crashed in 4 hours."])
    assert an.facts.startup.get("cuda_launch_blocking") and not an.facts.blocking_launches()
    top = an.findings[0]
    assert "reported asynchronously" in top.message and "synchronous launches" not in top.message
    # the same words before the traceback: that run had synchronous launches
    before = _analyze(_START + ["We run with CUDA_LAUNCH_BLOCKING=1 to debug this:"] + _ASYNC_RUN)
    assert before.facts.blocking_launches()
    assert "synchronous launches (CUDA_LAUNCH_BLOCKING=1)" in before.findings[0].message


def test_a_rerun_with_blocking_launches_that_stops_in_a_kernel_wrapper_names_that_kernel():
    """The maintainer asks for a rerun with synchronous launches; the reporter pastes its frames, which stop (an
    elision) in the GDN kernel module's wrapper before the launch line. The rerun is the root even though its
    message repeats the first run's, and the wrapper's kernel is the one that faulted."""
    rerun = [
        "", "=== comment (maintainer) ===", "Could you rerun with CUDA_LAUNCH_BLOCKING=1?",
        "", "=== comment (reporter) ===", "With CUDA_LAUNCH_BLOCKING=1 and --enforce-eager it points into the GDN layer:",
        "",
        '  File ".../vllm/model_executor/models/qwen3_next.py", line 598, in _forward',
        "    core_attn_out_spec, last_recurrent_state = fused_recurrent_gated_delta_rule(",
        '  File ".../vllm/model_executor/layers/fla/ops/fused_recurrent.py", line 317, in fused_recurrent_gated_delta_rule',
        "  ...",
        _FAULT,
    ]
    an = _analyze(_START + _ASYNC_RUN + rerun)
    assert an.facts.root.frames[-1].function == "fused_recurrent_gated_delta_rule"
    assert an.facts.blocking_launches()
    top = an.findings[0]
    assert "fused_recurrent_gated_delta_rule" in top.title and top.confidence == "medium"
    assert top.category in ("state_index", "mixed_batch")  # a GDN state kernel under drafts: one of the two classes
    # without the rerun the first run's sync point stays the root and nothing names a kernel
    alone = _analyze(_START + _ASYNC_RUN)
    assert alone.facts.root.frames[-1].function == "parse_output" and alone.findings[0].confidence == "low"


_EAGER_START = [
    "(APIServer pid=1) INFO 01-14 09:02:11 [utils.py:263] non-default args: {'model': 'Qwen/Qwen3-Next-80B-A3B-Instruct',"
    " 'max_model_len': 65536, 'enforce_eager': True, 'tensor_parallel_size': 4, 'speculative_config': "
    "{'method': 'qwen3_next_mtp', 'num_speculative_tokens': 2}}",
    "(APIServer pid=1) INFO 01-14 09:02:18 [model.py:530] Resolved architecture: Qwen3NextForCausalLM",
    "(APIServer pid=1) INFO 01-14 09:02:19 [vllm.py:765] Cudagraph is disabled under eager mode",
    "(APIServer pid=1) INFO 01-14 09:12:30 [loggers.py:257] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg "
    "generation throughput: 38.4 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.1%, Prefix cache "
    "hit rate: 0.0%",
]


def test_a_slowdown_with_enforce_eager_is_the_eager_mode_outside_the_families():
    log = ["Qwen3-Next decode speed way below published numbers on 4x H100, MTP barely helps."] + _EAGER_START
    top = _analyze(log).findings[0]
    assert top.category == "other" and top.rule == "near_miss" and "eager" in top.title.lower()
    # the same report without --enforce-eager: not this cause
    graphs = [line.replace("'enforce_eager': True, ", "") for line in log if "eager mode" not in line]
    assert "eager" not in _analyze(graphs).findings[0].title.lower()


_DOWNGRADE = ("(EngineCore_DP0 pid=311) WARNING 09-12 10:02:41 [gpu_model_runner.py:4322] CUDAGraphMode.FULL_AND_PIECEWISE "
              "is not supported with spec-decode for attention backend FlashInferBackend (support: "
              "AttentionCGSupport.UNIFORM_SINGLE_TOKEN_DECODE); setting cudagraph_mode=PIECEWISE")


def test_full_graphs_dropped_for_a_gqa_backend_under_drafts_are_the_capture_class_on_any_model():
    """FlashInfer's GQA decode on Hopper without its TRTLLM kernels takes single-token decodes in full graphs: with
    EAGLE-3 vLLM drops them to PIECEWISE -- full graphs lost on uniform spec decodes (E), on a dense model as on a
    hybrid whose state builders replay the same decodes. (An MLA backend's is its decode kernel's limit: C.)"""
    dense = ["vllm serve meta-llama/Llama-3.3-70B-Instruct -tp 4 --speculative-config '{\"method\": \"eagle3\", "
             "\"model\": \"yuhuili/EAGLE3-LLaMA3.3-Instruct-70B\", \"num_speculative_tokens\": 3}'", _DOWNGRADE,
             "EAGLE-3 gives no speed-up on H100: 41 tok/s with and 43 tok/s without."]
    f = _analyze(dense).findings[0]
    assert (f.category, f.rule) == ("cudagraph_shape", "spec_cudagraph_downgrade")
    hybrid = [dense[0].replace("meta-llama/Llama-3.3-70B-Instruct", "Qwen/Qwen3.5-27B")] + dense[1:]
    assert _analyze(hybrid).findings[0].category == "cudagraph_shape"


def _update_block_table(args: str) -> list[str]:
    w = "(Worker_DP1 pid=733) ERROR 03-02 11:20:07 [multiproc_executor.py:839] "
    return [
        f"(APIServer pid=1) INFO 03-02 11:02:10 [utils.py:253] non-default args: {{'model': "
        f"'nvidia/NVIDIA-Nemotron-Nano-12B-v2', 'data_parallel_size': 2, {args}}}",
        "(APIServer pid=1) INFO 03-02 11:02:17 [model.py:541] Resolved architecture: NemotronHForCausalLM",
        w + "Traceback (most recent call last):",
        w + f'  File "{_SP}/vllm/v1/worker/gpu_model_runner.py", line 1795, in _build_attention_metadata',
        w + "    attn_metadata_i = builder.update_block_table(",
        w + f'  File "{_SP}/vllm/v1/attention/backends/mamba_attn.py", line 331, in update_block_table',
        w + "    assert metadata.num_prefills + metadata.num_decodes == state_indices_tensor.shape[0], (",
        w + "AssertionError: Mismatch in number of requests when updating block table. Expected 5, got 8.",
    ]


def test_a_builder_counting_padded_rows_without_prefix_caching_is_the_batch_accounting():
    """update_block_table's request count against the state indices' rows: without prefix caching (one state row
    per request) the rows handed to the group were padded or split otherwise -- the builder's accounting of the
    batch (D), drafts or not; with prefix caching the rows come through the block table (B)."""
    off = _analyze(_update_block_table("'enable_prefix_caching': False, 'max_num_seqs': 256")).findings[0]
    assert off.category == "mixed_batch" and "no prefix caching" in off.basis
    on = _analyze(_update_block_table("'enable_prefix_caching': True, 'mamba_cache_mode': 'align', "
                                      "'speculative_config': {'method': 'ngram', 'num_speculative_tokens': 3}"))
    assert on.findings[0].category == "state_index"


def test_an_fp8_kv_cache_on_a_hybrid_that_adds_no_concurrency_leads_when_the_report_says_so():
    """The report pastes the fp8 start first and the bf16 start second: the larger block is the quantized one, and
    the report's 'doesn't give more concurrency' makes the reading of it a warning, ahead of the block note."""
    block = ("INFO 04-02 {t} [interface.py:670] Setting attention block size to {n} tokens to ensure that attention "
             "page size is >= mamba page size.")
    log = ["fp8 KV cache on Nemotron-Nano-9B-v2 doesn't give more concurrency for our workload (~+10%)",
           "(APIServer pid=1) INFO 04-02 14:03:51 [utils.py:233] non-default args: {'model': "
           "'nvidia/NVIDIA-Nemotron-Nano-9B-v2', 'kv_cache_dtype': 'fp8', 'max_num_seqs': 512}",
           "(APIServer pid=1) INFO 04-02 14:03:58 [model.py:611] Resolved architecture: NemotronHForCausalLM",
           block.format(t="14:04:21", n=2608), "===== bf16 KV run (no --kv-cache-dtype) =====",
           block.format(t="13:31:09", n=1312)]
    an = _analyze(log)
    assert an.facts.startup.get("capacity_prose")
    top = an.findings[0]
    assert (top.rule, top.category, top.severity) == ("kv_quant_hybrid_capacity", "kv_page_size", "warning")
    assert top.numbers["block_size"] == 2608 and top.numbers["block_size_before"] == 1312


def test_a_reporter_saying_which_errors_are_absent_is_no_error_line():
    """'No errors anywhere', 'no "failed to load KV" messages': statements about the logs. A report whose only such
    lines are these stays a report without an error, and its symptom is read (here: wrong output under drafts on a
    hybrid without prefix caching, the builders' split of the batch)."""
    log = ["Nemotron-3-Super with MTP: accuracy drop on the decode instance only. No errors anywhere.",
           "Prefill-side logs look normal (transfers complete, no \"failed to load KV\" messages).",
           "(APIServer pid=2210) INFO 07-22 13:40:18 [api_utils.py:286] non-default args: {'model': "
           "'nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8', 'tensor_parallel_size': 8, 'speculative_config': "
           "{'method': 'mtp', 'num_speculative_tokens': 3}}",
           "(APIServer pid=2210) INFO 07-22 13:40:26 [model.py:684] Resolved architecture: NemotronHForCausalLM"]
    an = _analyze(log)
    assert not an.facts.startup.get("error_lines")
    assert an.findings and an.findings[0].category == "mixed_batch"
    # a real error line in the same words stays one
    real = _analyze(log + ["ERROR 07-22 13:41:02 [nixl_connector.py:1201] failed to load KV for request cmpl-1"])
    assert real.facts.startup.get("error_lines")


def test_the_release_the_reporter_names_in_words_is_the_logs_version_unless_it_is_another_run():
    def version(text: str) -> str | None:
        return _analyze([text]).facts.vllm_version

    assert version("Qwen3-Next + MTP crashes on vLLM 0.26.0 (4x H100)") == "0.26.0"
    assert version("Same model, same vllm (0.32.0), same flags, two clusters") == "0.32.0"
    assert version("[v0.32.0] DeepSeek-V3.2 on H200: no speed-up from k=3") == "0.32.0"
    assert version("vllm v0.20.2, docker image") == "0.20.2"
    # a release named as the one that works, or as an upgrade's target, is not the one the report runs
    assert version("This works on vLLM 0.20.2 but not on the nightly") is None
    assert version("After upgrading to vLLM 0.17.0 the server refuses to start") is None
    # vLLM's own line outranks the reporter's words
    both = _analyze(["We run vLLM 0.26.0.", "(EngineCore_DP0 pid=9) INFO 01-02 10:00:00 [core.py:93] Initializing a V1 LLM "
                     "engine (v0.29.0) with config: model='x'"])
    assert both.facts.vllm_version == "0.29.0"


def test_no_gain_from_deeper_drafts_on_an_mla_model_is_the_kernel_limit_seen_as_performance():
    log = ["DeepSeek-V3.2 on H200: raising num_speculative_tokens from 1 to 3 gives almost nothing, on B200 it gives +40%",
           "vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'"]
    an = _analyze(log)
    assert "gives almost nothing" in an.facts.startup["spec_slower_prose"]
    assert an.findings[0].category == "spec_kernel_limit"


def test_a_hang_whose_stack_waits_in_a_collective_is_outside_the_families():
    """No error, the server hangs on its first request, and py-spy shows every worker in all_reduce with no device
    fault: a collective that never completes (NCCL's transport), whatever the model."""
    log = ["Server hangs on the first request (Nemotron Nano 12B v2, TP=4) -- no error, just stuck",
           "(APIServer pid=1) INFO 03-02 11:02:17 [model.py:541] Resolved architecture: NemotronHForCausalLM",
           "(EngineCore_DP0 pid=204) INFO 03-02 11:09:01 [shm_broadcast.py:466] No available shared memory broadcast "
           "block found in 60 seconds. This typically happens when some processes are hanging or doing some "
           "time-consuming work (e.g. compilation, weight/kv cache quantization).",
           "py-spy dump of Worker_TP0 while hung:",
           "    all_reduce (torch/distributed/distributed_c10d.py:2875)",
           "    all_reduce (vllm/distributed/device_communicators/pynccl.py:...)"]
    top = _analyze(log).findings[0]
    assert top.category == "other" and top.rule == "near_miss" and "collective" in top.title.lower()
    # the same hang after a device fault (an Xid in the kernel log) is not this reading
    faulted = log + ["[Thu Aug 14 02:31:19 2025] NVRM: Xid (PCI:0000:5d:00): 31, pid=3927, name=VLLM::Worker_TP, "
                     "Ch 00000018, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_3 faulted @ 0x7f2e_1c9a0000"]
    faulted_findings = _analyze(faulted).findings
    assert faulted_findings and all("collective" not in f.title.lower() for f in faulted_findings)
    assert faulted_findings[0].severity == "error"  # the driver's MMU fault (Xid 31) is a device fault, read as one


def test_a_deepseek_r1_distill_is_a_dense_model_not_mla():
    """'DeepSeek-R1-Distill-Llama-70B' is a Llama: a slowdown with EAGLE-3 on it is no MLA kernel's limit."""
    log = ["EAGLE3 acceptance rate ~10% with DeepSeek-R1-Distill-Llama-70B, spec decode makes it 35% slower",
           "vllm serve deepseek-ai/DeepSeek-R1-Distill-Llama-70B -tp 4 --speculative-config "
           "'{\"method\": \"eagle3\", \"model\": \"yuhuili/EAGLE3-LLaMA3.3-Instruct-70B\", \"num_speculative_tokens\": 3}'"]
    assert all(f.category != "spec_kernel_limit" for f in _analyze(log).findings)
    mla = [log[0].replace("DeepSeek-R1-Distill-Llama-70B", "DeepSeek-R1"),
           log[1].replace("DeepSeek-R1-Distill-Llama-70B", "DeepSeek-R1")]
    assert _analyze(mla).findings[0].category == "spec_kernel_limit"


def test_a_kernel_table_without_a_variant_for_the_drafts_query_length_is_the_kernel_limit():
    """AITER's MLA lookup printing its parameter tuple ('no MLA decode kernel for q_seqlen=2 (..., page_size=1)'):
    the decode query length of 1 + k, not a page size."""
    from vllm_diag.catalog.categorize import categorize

    msg = "get_heuristic_kernel_mla: no MLA decode kernel for q_seqlen=2 (num_heads=16, q_dtype=bf16, page_size=1)"
    assert categorize({"file": "aiter/ops/attention.py", "function": "get_mla_metadata_v1", "condition": "",
                       "message": msg, "exc": "RuntimeError"})[0] == "spec_kernel_limit"



def test_a_prompt_template_with_a_per_request_value_explains_zero_prefix_hits():
    log = ["[Usage]: prefix caching barely works for Qwen3.5 (hybrid) -- 0.4% hit rate",
           "(APIServer pid=1) INFO 11-03 07:55:17 [model.py:733] Resolved architecture: Qwen3_5MoeForConditionalGeneration",
           "(APIServer pid=1) INFO 11-03 08:40:13 [loggers.py:335] Engine 000: Avg prompt throughput: 14420.7 tokens/s, "
           "Avg generation throughput: 388.1 tokens/s, Running: 9 reqs, Waiting: 0 reqs, GPU KV cache usage: 37.2%, "
           "Prefix cache hit rate: 0.4%",
           'system = f"""You are Atlas. Current time: {datetime.utcnow().isoformat()}Z  trace: {uuid4()}"""']
    top = _analyze(log).findings[0]
    assert top.category == "other" and "per-request value" in top.title
    # a JSON body that names a request id is no template
    json_body = log[:3] + ['{"request_id": "abc-1", "prompt": "hello"}']
    assert all("per-request value" not in f.title for f in _analyze(json_body).findings)

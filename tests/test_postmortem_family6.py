"""Post-mortem, round six: layers without a speculative-decoding path, a blocking rerun's traceback, hard-wrapped
terminal output inside longer prose, JSON values printed unquoted in a command, a request the API server refused,
and GPU hardware faults. The logs are written here in vLLM's own formats (messages, files and lines of the release
each names)."""

from __future__ import annotations

from vllm_diag.postmortem.analyze import analyze_text
from vllm_diag.postmortem.specpath import no_spec_path

from .test_postmortem_family3 import _first

W = "(Worker_TP0 pid=4471) ERROR 11-27 04:14:53 [multiproc_executor.py:1007] "
PKG = "/opt/venv/lib/python3.12/site-packages/vllm"


def _kda_log(error: str, version: str = "0.26.0") -> str:
    code = "assert non_spec_state_indices_tensor is not None" if error == "AssertionError" else \
        "decode_conv_indices = non_spec_state_indices_tensor[: attn_metadata.num_actual_tokens]"
    return "\n".join([
        f"INFO 11-27 04:12:40 [__init__.py:239] vLLM version {version}",
        "vllm serve moonshotai/Kimi-Linear-48B-A3B-Instruct -tp 2 --speculative-config "
        "'{\"method\": \"ngram\", \"num_speculative_tokens\": 3, \"prompt_lookup_max\": 4}'",
        "(EngineCore pid=4400) INFO 11-27 04:12:52 [core.py:98] Resolved architecture: KimiLinearForCausalLM",
        f"{W}Traceback (most recent call last):",
        f'{W}  File "{PKG}/model_executor/layers/mamba/gdn/kimi_gdn_linear_attn.py", line 205, in kda_attention_core',
        f"{W}    self._forward(hidden_states=hidden_states, output=output)",
        f'{W}  File "{PKG}/model_executor/layers/mamba/gdn/kimi_gdn_linear_attn.py", line 358, in _forward',
        f"{W}    {code}",
        f"{W}{error}" + ("" if error == "AssertionError" else ": 'NoneType' object is not subscriptable"),
    ])


def test_a_layer_asserting_it_has_no_spec_path_is_the_builder_vs_batch_class():
    """Kimi-Linear's KDA layers before 0.27 read only the non-spec state indices; a batch of spec decodes leaves them
    empty and the layer's forward asserts (the catalog's site reads as a state index): the builder's spec-decode rows
    reach a layer without the path -- the mixed-batch class the labelled reports give it. Without the assert (an
    older release indexes the empty indices: TypeError) it is the same class; and the layer's own file in the
    frames identifies it where the log names neither the model nor the release."""
    f = _first(_kda_log("AssertionError"))
    assert f.category == "mixed_batch" and "no speculative-decoding path before vLLM 0.27.0" in f.basis
    assert _first(_kda_log("TypeError", version="0.17.1")).category == "mixed_batch"
    bare = "\n".join(line for line in _kda_log("AssertionError").splitlines() if "vLLM version" not in line
                     and "Resolved architecture" not in line).replace("moonshotai/Kimi-Linear-48B-A3B-Instruct", "/models/m")
    assert _first(bare).category == "mixed_batch"


def test_the_spec_path_table_is_version_gated():
    assert no_spec_path(["Lfm2ForCausalLM"], "0.26.0") is not None and no_spec_path(["Lfm2ForCausalLM"], "0.29.0") is None
    assert no_spec_path(["KimiLinearForCausalLM"], "0.27.0") is None
    assert no_spec_path(["JambaForCausalLM"], "0.33.0") is not None  # Mamba1: none up to 0.33
    assert no_spec_path(["LiquidAI/LFM2-8B-A1B"], None) is not None  # a model name; an unknown release counts
    assert no_spec_path(["mistralai/Mamba-Codestral-7B-v0.1"], "0.26.0") is None  # Mamba2


def _fault_log(arch: str, model: str, fault: str, version: str = "0.26.0") -> str:
    return "\n".join([
        f"INFO 11-27 04:12:40 [__init__.py:239] vLLM version {version}",
        f"vllm serve {model} --speculative-config '{{\"method\": \"ngram\", \"num_speculative_tokens\": 3}}'",
        f"(EngineCore pid=4400) INFO 11-27 04:12:52 [core.py:98] Resolved architecture: {arch}",
        f"{W}Traceback (most recent call last):",
        f'{W}  File "{PKG}/v1/worker/gpu_model_runner.py", line 3736, in _bookkeeping_sync',
        f"{W}    valid_sampled_token_ids = self.rejection_sampler.parse_output(",
        f'{W}  File "{PKG}/v1/sample/rejection_sampler.py", line 273, in parse_output',
        f"{W}    output_token_ids_np = output_token_ids.cpu().numpy()",
        f"{W}torch.AcceleratorError: CUDA error: {fault}",
        f"{W}Search for `cudaErrorInvalidAddressSpace' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__"
        "TYPES.html for more information.",
    ])


def test_an_asynchronous_fault_of_a_layer_without_a_spec_path_is_its_spec_decode_batch():
    """Jamba's Mamba1 layers have no spec-decode path: its fault under drafts (CUDA's invalid address space error,
    reported at a later sync like an illegal access) is inferred as the spec-decode batch reaching that layer; LFM2
    from 0.29 has the path, so the same fault there is not blamed on it."""
    f = _first(_fault_log("JambaForCausalLM", "ai21labs/AI21-Jamba-Mini-1.7",
                          "operation not supported on global/shared address space"))
    assert f.category == "mixed_batch" and f.rule == "async_fault" and "Mamba1 layers" in f.basis
    later = _first(_fault_log("Lfm2ForCausalLM", "LiquidAI/LFM2-8B-A1B", "an illegal memory access was encountered",
                              version="0.29.0"))
    assert later.rule == "async_fault" and "short-convolution" not in later.basis


def test_a_blocking_rerun_of_the_same_fault_is_the_root():
    """An illegal access surfacing at a later sync, then the report's rerun with CUDA_LAUNCH_BLOCKING=1: the rerun's
    traceback ends at the launch of the kernel that faulted, so it is the root and names that kernel."""
    log = "\n".join([
        "vllm serve Qwen/Qwen3.5-397B-A17B-FP8 --enable-prefix-caching --speculative-config "
        "'{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'",
        "(Worker_DP5 pid=719) Traceback (most recent call last):",
        f'(Worker_DP5 pid=719)   File "{PKG}/v1/worker/gpu_model_runner.py", line 285, in get_output',
        "(Worker_DP5 pid=719)     self.async_copy_ready_event.synchronize()",
        "(Worker_DP5 pid=719) torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
        "",
        "### Rerun with CUDA_LAUNCH_BLOCKING=1 and --no-async-scheduling",
        f"{W}Traceback (most recent call last):",
        f'{W}  File "{PKG}/model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py", line 612, in _forward_core',
        f"{W}    core_attn_out_spec, last_recurrent_state = fused_sigmoid_gating_delta_rule_update(",
        f'{W}  File "{PKG}/model_executor/layers/fla/ops/fused_sigmoid_gating.py", line 242, in '
        "fused_sigmoid_gating_delta_rule_update",
        f"{W}    fused_sigmoid_gating_delta_rule_update_kernel[grid](",
        f'{W}  File "/opt/venv/lib/python3.12/site-packages/triton/backends/nvidia/driver.py", line 713, in __call__',
        f"{W}    self.launch(gridX, gridY, gridZ, stream, function, *args)",
        f"{W}RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered",
    ])
    an = analyze_text(log, "t.log")
    assert an.facts.root.exc_type == "RuntimeError" and an.facts.root.frames[-1].function == "__call__"
    assert "fused_sigmoid_gating_delta_rule_update_kernel" in an.findings[0].title


def test_terminal_wrapped_output_inside_longer_prose_is_unwrapped():
    """srun output hard-wrapped at the terminal's width, pasted under a prose paragraph longer than that width:
    the width is the one most lines share, so the frames split mid-path are joined again."""
    width = 100
    tb = [
        "0: (Worker_TP0 pid=2188190) ERROR 04-02 11:34:05 [multiproc_executor.py:962] Traceback (most recent call last):",
        f'0: (Worker_TP0 pid=2188190) ERROR 04-02 11:34:05 [multiproc_executor.py:962]   File "{PKG}/v1/core/kv_cache_'
        'utils.py", line 1022, in unify_kv_cache_spec_page_size',
        "0: (Worker_TP0 pid=2188190) ERROR 04-02 11:34:05 [multiproc_executor.py:962]     page_sizes = {layer.page_size"
        "_bytes for layer in kv_cache_spec.values()}",
        f'0: (Worker_TP0 pid=2188190) ERROR 04-02 11:34:05 [multiproc_executor.py:962]   File "{PKG}/v1/kv_cache_inter'
        'face.py", line 536, in page_size_bytes',
        "0: (Worker_TP0 pid=2188190) ERROR 04-02 11:34:05 [multiproc_executor.py:962]     assert self.page_size_padded "
        ">= page_size",
        "0: (Worker_TP0 pid=2188190) ERROR 04-02 11:34:05 [multiproc_executor.py:962] AssertionError",
    ]
    wrapped = [line[i:i + width] for line in tb for i in range(0, len(line), width)]
    prose = ("Hi all, trying to enable prompt-lookup (ngram) decoding for our granite-4.0-h-small endpoint on the "
             "cluster; vllm 0.20.2, two GPUs per node, --speculative-config with 4 tokens; the job dies right after "
             "the weights load, every time.")
    assert len(prose) > width and sum(len(x) == width for x in wrapped) >= 3
    an = analyze_text("\n".join([prose, "", *wrapped]), "t.log")
    assert [f.function for f in an.facts.root.frames] == ["unify_kv_cache_spec_page_size", "page_size_bytes"]
    # the padded Mamba page's own assert, not the draft-page unification assert of the same call
    assert an.findings[0].rule == "mamba_padded_smaller"


def test_a_json_value_printed_unquoted_in_a_command_is_read():
    """A CI script's echo of the command (the shell had the quotes, the log does not)."""
    an = analyze_text("[server] vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct-FP8 -tp 2 --speculative-config "
                      '{"method":"qwen3_next_mtp","num_speculative_tokens":2} --max-num-seqs 64', "t.log")
    assert an.facts.args["num_speculative_tokens"] == 2 and an.facts.args["max_num_seqs"] == 64


def test_a_request_the_api_server_refused_is_a_near_miss_with_its_numbers():
    """No engine failure, only a client's 400 body: a request over max_model_len is request validation (other),
    not the hybrid's block size the start-up lines mention."""
    log = "\n".join([
        "(EngineCore pid=118) INFO 07-02 09:12:21 [interface.py:1096] Setting attention block size to 1072 tokens to "
        "ensure that attention page size is >= mamba page size.",
        '(APIServer pid=1) INFO:     10.8.0.14:38301 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request',
        '{"error":{"message":"This model\'s maximum context length is 65536 tokens. However, your prompt contains at '
        'least 65537 input tokens, which exceeds this limit even without any output tokens.","type":"BadRequestError",'
        '"param":"input_tokens","code":400}}',
    ])
    findings = analyze_text(log, "t.log").findings
    top = findings[0]
    assert (top.category, top.rule, top.severity) == ("other", "near_miss", "error")
    assert (top.numbers["max_model_len"], top.numbers["prompt_tokens"], top.numbers["http_status"]) == (65536, 65537, 400)
    # nor is the block-size note a finding beside it: a near miss carries no hybrid/spec-decode category
    assert [f.category for f in findings] == ["other"]


def test_an_uncorrectable_ecc_error_is_the_hardware_not_the_frame_it_surfaced_in():
    log = "\n".join([
        f"{W}Traceback (most recent call last):",
        f'{W}  File "{PKG}/v1/worker/block_table.py", line 167, in commit_block_table',
        f"{W}    self.block_table.copy_to_gpu(num_reqs)",
        f"{W}torch.AcceleratorError: CUDA error: uncorrectable ECC error encountered",
        "[Sun Jun 29 23:51:08 2026] NVRM: Xid (PCI:0000:4e:00): 48, pid=2211902, name=VLLM::Worker_TP, An uncorrectable "
        "double bit error (DBE) has been detected on GPU in the framebuffer at partition 3",
    ])
    top = _first("vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --enable-prefix-caching --speculative-config "
                 "'{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'\n" + log)
    assert top.category == "other" and "hardware" in top.title


def test_a_gpu_that_fell_off_the_bus_explains_a_dead_engine_whatever_the_reporter_wonders():
    """No exception of its own: the engine died behind a wrapper, the driver says the GPU fell off the bus, and the
    reporter asks whether the drafts' illegal memory accesses are the cause -- a near miss, not an inferred fault."""
    log = "\n".join([
        "vllm serve zai-org/GLM-5-FP8 -tp 8 --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'",
        "(EngineCore pid=51) ERROR 03-04 02:11:43 [multiproc_executor.py:295] Worker proc VllmWorker-3 died "
        "unexpectedly (exit code: -6), shutting down executor.",
        "(APIServer pid=1) vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace "
        "(above) for the root cause.",
        "[Wed Mar  4 02:01:10 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=88123, name=VLLM::Worker_TP, GPU has fallen "
        "off the bus.",
        "Could this be the illegal memory access with MTP that others reported?",
    ])
    findings = analyze_text(log, "t.log").findings
    assert findings[0].category == "other" and "fallen off the bus" in findings[0].title
    assert all(f.category == "other" for f in findings)


def test_deepgemm_schedule_metadata_check_under_drafts_is_the_kernels_next_n_path():
    log = "\n".join([
        "vllm serve zai-org/GLM-5 -tp 8 --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 3}'",
        f'{W}  File "{PKG}/utils/deep_gemm.py", line 790, in fp8_fp4_paged_mqa_logits',
        f"{W}    return _fp8_fp4_paged_mqa_logits_impl(",
        f"{W}RuntimeError: Assertion error (/opt/deepgemm/csrc/apis/../jit_kernels/impls/smxx_fp8_fp4_paged_mqa_logits"
        ".hpp:219): schedule_meta.size(0) == num_sms + 1",
    ])
    assert _first(log).category == "spec_kernel_limit"


def test_a_kernel_lookup_listing_a_page_size_is_the_kernels_limit_not_the_kv_layout():
    """A kernel library that finds no kernel for a decode of 1 + k query rows lists the shapes it looked up, a page
    size among them: the query length under drafts is what it has no kernel for."""
    log = "\n".join([
        "vllm serve deepseek-ai/DeepSeek-R1-0528 -tp 8 --block-size 1 --speculative-config "
        "'{\"method\": \"mtp\", \"num_speculative_tokens\": 1}'",
        f'{W}  File "{PKG}/v1/attention/backends/mla/rocm_aiter_mla.py", line 249, in _build_decode',
        f"{W}    aiter.get_mla_metadata_v1(",
        f"{W}RuntimeError: get_heuristic_kernel_mla: no kernel found for q_dtype=bf16, kv_dtype=bf16, num_heads=16, "
        "max_seqlen_qo=2, page_size=1",
    ])
    assert _first(log).category == "spec_kernel_limit"


def test_capture_counts_and_defaults_vllm_states_while_starting_are_numbers():
    """The capture's progress bars (a worker's record and a bare terminal line), the profiling line's graph groups,
    the MLA backend's forced block size and suffix decoding's default depth."""
    log = "\n".join([
        "(Worker_TP0 pid=2211) Capturing CUDA graphs (decode, FULL):   0%|          | 0/66 [00:00<?, ?it/s]",
        "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|##########| 19/19 [00:02<00:00,  7.41it/s]",
        "(Worker_TP0 pid=320) INFO 06-18 21:33:03 [gpu_model_runner.py:6816] Profiling CUDA graph memory: PIECEWISE=49 "
        "(largest=512), FULL=33 (largest=256)",
        "(APIServer pid=1) INFO 12-29 10:05:40 [cuda.py:215] Forcing kv cache block size to 128 for CUTLASS_MLA backend.",
        "(APIServer pid=1) WARNING 04-02 01:12:11 [speculative.py:604] Defaulted num_speculative_tokens to 24 for suffix "
        "decoding.",
    ])
    f = analyze_text(log, "t.log").facts
    s = f.startup
    assert (s["decode_full_capture_sizes"], s["mixed_piecewise_capture_sizes"]) == (66, 19)
    assert (s["piecewise_cudagraph_count"], s["piecewise_cudagraph_largest"], s["full_cudagraph_count"],
            s["full_cudagraph_largest"]) == (49, 512, 33, 256)
    assert s["kv_cache_block_size_backend"] == 128 and f.numbers["num_speculative_tokens"] == 24


def test_a_release_outside_the_catalog_is_said_to_be_not_modelled():
    log = ("INFO 11-27 04:12:40 [__init__.py:239] vLLM version {v}\n"
           "(EngineCore pid=1) ERROR 11-27 04:14:53 [core.py:1] AssertionError: num_decodes: 1, num_spec_decodes: 1")
    notes = analyze_text(log.format(v="0.35.1"), "t.log").to_record().notes
    assert any(n.startswith("not modelled: vLLM 0.35.1 is newer than the releases") for n in notes)
    for v in ("0.26.0", "0.1.dev8702+gabc1234"):  # a catalogued release; a source build without its tag
        assert not any("not modelled: vLLM" in n for n in analyze_text(log.format(v=v), "t.log").to_record().notes)


def test_a_launch_failure_on_a_gpu_the_driver_reports_lost_is_the_hardware():
    """'unspecified launch failure' on an MLA + MTP engine would be inferred as a kernel limit under drafts -- but the
    kernel log has the driver's Xid 79 (the GPU fell off the bus): the device failed, not a kernel."""
    log = "\n".join([
        "vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 1}'",
        f"{W}Traceback (most recent call last):",
        f'{W}  File "{PKG}/v1/worker/gpu_model_runner.py", line 2926, in _bookkeeping_sync',
        f"{W}    valid_sampled_token_ids = self._to_list(sampled_token_ids)",
        f"{W}torch.AcceleratorError: CUDA error: unspecified launch failure",
        "[Tue Nov 24 03:12:09 2026] NVRM: Xid (PCI:0000:9d:00): 79, pid=1888, name=VLLM::Worker_TP5, GPU has fallen off "
        "the bus.",
    ])
    an = analyze_text(log, "t.log")
    top = [f for f in an.findings if f.severity == "error"][0]
    assert top.category == "other" and "Xid 79: fallen off the bus" in top.basis
    assert an.facts.startup["xids"] == [79]


def test_a_crash_dump_with_elided_drafts_still_shows_a_short_prefill_among_spec_decodes():
    """The dump's draft lists cut to "[...]": each spec decode's drafts are its scheduled tokens less one, so a
    prompt's last chunk of 3 tokens beside 1 + 3-token spec decodes is within the builders' decode threshold -- a
    row counted as a decode without drafts: a mixed batch."""
    from vllm_diag.postmortem.dump import parse_scheduler_output

    b = parse_scheduler_output(
        "SchedulerOutput(scheduled_new_reqs=[], scheduled_cached_reqs=CachedRequestData(req_ids=['c-31', 'c-33', "
        "'c-29'],resumed_req_ids=set(),num_computed_tokens=[1204, 877, 45056],num_output_tokens=[311, 95, 0]), "
        "num_scheduled_tokens={c-31: 4, c-33: 4, c-29: 3}, total_num_scheduled_tokens=11, scheduled_spec_decode_tokens="
        "{c-31: [...], c-33: [...]}, scheduled_encoder_inputs={})")
    assert b["spec_tokens_per_req"] == [3, 3, 0] and b["short_prefills"] == 1 and b["mixed"] is True


def test_a_crash_dump_with_its_whole_draft_dict_elided_counts_the_drafts_from_the_engines_k():
    """'scheduled_spec_decode_tokens={...}': a request already decoding that schedules exactly 1 + k tokens is a spec
    decode with its k drafts (k from the command or the dump's own engine line); without k, or a new request's
    prompt chunk, it stays a prefill."""
    from vllm_diag.postmortem.dump import parse_scheduler_output

    out = ("SchedulerOutput(scheduled_new_reqs=[], scheduled_cached_reqs=CachedRequestData(req_ids=['a', 'b', 'c'],"
           "resumed_req_ids=set(),new_block_ids=[None, None, None],num_computed_tokens=[1203, 988, 40],"
           "num_output_tokens=[212, 37, 0]), num_scheduled_tokens={a: 3, b: 3, c: 3}, total_num_scheduled_tokens=9, "
           "scheduled_spec_decode_tokens={...}, scheduled_encoder_inputs={})")
    b = parse_scheduler_output(out, spec_k=2)
    assert b["spec_tokens_per_req"] == [2, 2, 0] and (b["num_spec_decodes"], b["num_prefills"]) == (2, 1)
    assert parse_scheduler_output(out)["num_prefills"] == 3
    engine = ("(EngineCore_DP0 pid=7) ERROR 01-29 10:09:41 [dump_input.py:72] Dumping input data for V1 LLM engine "
              "(v0.14.0) with config: model='Qwen/Qwen3-Next-80B-A3B-Instruct', speculative_config=SpeculativeConfig("
              "method='mtp', model='Qwen/Qwen3-Next-80B-A3B-Instruct', num_spec_tokens=2), tokenizer='x'")
    dumped = analyze_text(engine + "\n(EngineCore_DP0 pid=7) ERROR 01-29 10:09:41 [dump_input.py:79] Dumping "
                          "scheduler output for model execution: " + out, "t.log")
    assert dumped.facts.startup["crash_batch"]["num_spec_decodes"] == 2


def test_wrong_output_on_a_layer_without_a_spec_path_is_the_spec_decode_batch_reaching_it():
    log = "\n".join([
        "LFM2-8B-A1B with ngram speculation on vllm 0.28.0: after a few hundred tokens the output turns into garbage.",
        "vllm serve LiquidAI/LFM2-8B-A1B --speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 4, "
        "\"prompt_lookup_max\": 3}'",
        "INFO 11-27 04:12:40 [__init__.py:239] vLLM version 0.28.0",
    ])
    top = _first(log)
    assert top.category == "mixed_batch" and "short-convolution layers have no speculative-decoding path" in top.basis


def test_ray_data_actor_prefixes_and_a_notebook_traceback_are_read():
    """Ray Data prefixes an actor's lines with its nested name ("(MapWorker(MapBatches(vLLMEngineStageUDF)) pid=4417,
    ip=...)"), and IPython prints a traceback as "<file> in <function>(...)" with an arrow at the line that ran."""
    ray = "(MapWorker(MapBatches(vLLMEngineStageUDF)) pid=4417, ip=10.0.3.17) (EngineCore pid=4630) ERROR 08-04 16:24:19 " \
          "[core.py:1346] "
    an = analyze_text("\n".join([
        f"{ray}Traceback (most recent call last):",
        f'{ray}  File "{PKG}/v1/kv_cache_interface.py", line 536, in page_size_bytes',
        f"{ray}    assert self.page_size_padded >= page_size",
        f"{ray}AssertionError",
        "ray.exceptions.ActorDiedError: The actor died because of an error raised in its creation task, "
        "ray::MapWorker(MapBatches(vLLMEngineStageUDF)).__init__() (pid=4417, ip=10.0.3.17)",
    ]), "t.log")
    assert (an.facts.root.exc_type, an.facts.root.process) == ("AssertionError", "EngineCore")
    nb = analyze_text("\n".join([
        "---------------------------------------------------------------------------",
        "AssertionError                            Traceback (most recent call last)",
        "/tmp/ipython-input-2-1842306475.py in <cell line: 0>()",
        "----> 4 llm = LLM(",
        "",
        f"{PKG}/v1/kv_cache_interface.py in page_size_bytes(self)",
        "   1126         if self.page_size_padded is not None:",
        "-> 1127             assert self.page_size_padded >= page_size",
        "   1128             return self.page_size_padded",
        "",
        "AssertionError: ",
        "```",
        "- `num_speculative_tokens: 2` works",
    ]), "t.log")
    root = nb.facts.root
    assert root.message == "" and [(f.function, f.line) for f in root.frames] == [("<cell line: 0>", 4), ("page_size_bytes", 1127)]
    assert root.frames[-1].code == "assert self.page_size_padded >= page_size"


def test_a_split_that_fails_in_the_mamba_mixer_under_mode_all_and_drafts_is_the_state_indices():
    log = "\n".join([
        "vllm serve nvidia/NVIDIA-Nemotron-Nano-12B-v2 --enable-prefix-caching --mamba-cache-mode all --speculative-config "
        "'{\"method\": \"ngram\", \"num_speculative_tokens\": 3, \"prompt_lookup_max\": 4}'",
        f'{W}  File "{PKG}/model_executor/layers/mamba/mamba_mixer2.py", line 626, in conv_ssm_forward',
        f"{W}    torch.split(",
        f"{W}RuntimeError: split_with_sizes expects split_sizes to sum exactly to 256 (input tensor's size at dimension "
        "0), but got split_sizes=[128, 0]",
    ])
    assert _first(log).category == "state_index"


def test_a_trtllm_launcher_without_a_kernel_for_the_draft_width_is_a_kernel_limit():
    log = "\n".join([
        "vllm serve moonshotai/Kimi-K2-Instruct -tp 8 --speculative-config '{\"method\": \"eagle3\", \"model\": "
        "\"lightseekorg/kimi-k2-eagle3\", \"num_speculative_tokens\": 3}'",
        f'{W}  File "{PKG}/v1/attention/backends/mla/flashinfer_mla.py", line 212, in forward_mqa',
        f"{W}    o = trtllm_batch_decode_with_kv_cache_mla(",
        f"{W}RuntimeError: Error in function 'trtllm_paged_attention_launcher' at /workspace/flashinfer/csrc/"
        "trtllm_fmha_kernel_launcher.cu:272: Missing TRTLLM-GEN kernel (decode): qkvLayout=2, maskType=1, kernelType=2, "
        "headDimQk=576, headDimV=512, tileSizeQ=32, tileSizeKv=128, numTokensPerPage=64",
    ])
    assert _first(log).category == "spec_kernel_limit"


def _served_then_stopped(error_before: bool) -> str:
    a = "(APIServer pid=7) "
    dead = [f"{a}ERROR 11-27 07:52:22 [async_llm.py:704] AsyncLLM output_handler failed.",
            f"{a}ERROR 11-27 07:52:22 [async_llm.py:704] Traceback (most recent call last):",
            f'{a}ERROR 11-27 07:52:22 [async_llm.py:704]   File "{PKG}/v1/engine/core_client.py", line 1061, in get_output_async',
            f"{a}ERROR 11-27 07:52:22 [async_llm.py:704]     raise self._format_exception(outputs) from None",
            f"{a}ERROR 11-27 07:52:22 [async_llm.py:704] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered "
            "an issue. See stack trace (above) for the root cause."]
    fault = [f"{W}Traceback (most recent call last):", f'{W}  File "{PKG}/v1/worker/gpu_model_runner.py", line 3875, in '
             "synchronize_input_prep", f"{W}    yield", f"{W}torch.AcceleratorError: CUDA error: an illegal memory access was encountered"]
    return "\n".join(["vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --speculative-config '{\"method\": \"mtp\", "
                      "\"num_speculative_tokens\": 2}'"]
                     + [f'{a}INFO:     127.0.0.1:3376{i} - "POST /v1/completions HTTP/1.1" 200 OK' for i in range(4)]
                     + (fault if error_before else [])
                     + [f"{a}INFO 11-27 07:52:22 [launcher.py:100] [shutdown] API server: shutdown triggered",
                        "(EngineCore pid=9) INFO 11-27 07:52:22 [core.py:1313] [shutdown] EngineCore: trigger received "
                        "signal=SIGTERM"] + dead)


def test_the_engine_client_finding_the_engine_gone_after_a_stop_is_the_teardown_not_a_failure():
    an = analyze_text(_served_then_stopped(error_before=False), "t.log")
    assert an.facts.root is None and not [f for f in an.findings if f.severity == "error"]
    assert an.facts.startup["errors_after_shutdown"] == 1
    # a fault before the stop: the errors after it are its aftermath, and the fault is the diagnosis
    top = analyze_text(_served_then_stopped(error_before=True), "t.log").findings[0]
    assert top.severity == "error" and top.category != "other"


def test_a_port_already_taken_is_a_near_miss_with_its_errno():
    log = "\n".join([
        "vllm serve nvidia/NVIDIA-Nemotron-Nano-9B-v2 --port 8821 --speculative-config '{\"method\": \"ngram\", "
        "\"num_speculative_tokens\": 3, \"prompt_lookup_max\": 3}'",
        "(APIServer pid=889) Traceback (most recent call last):",
        f'(APIServer pid=889)   File "{PKG}/entrypoints/openai/api_server.py", line 586, in create_server_socket',
        "(APIServer pid=889)     sock.bind(addr)",
        "(APIServer pid=889) OSError: [Errno 98] Address already in use",
    ])
    top = analyze_text(log, "t.log").findings[0]
    assert (top.category, top.rule) == ("other", "near_miss") and top.numbers["errno"] == 98


def test_a_family_diagnosis_is_not_repeated_by_a_generic_rule_on_the_same_exception():
    """vLLM's pydantic wrapper around a known failure site: one error finding (the site's class), not a second
    'VllmConfig rejected the configuration' for the same exception."""
    log = "\n".join([
        "vllm serve nvidia/NVIDIA-Nemotron-Nano-9B-v2 --max-num-batched-tokens 16 --max-num-seqs 16 --speculative-config "
        "'{\"model\": \"meta-llama/Llama-3.2-1B\", \"method\": \"draft_model\", \"num_speculative_tokens\": 3}'",
        "Traceback (most recent call last):",
        f'  File "{PKG}/engine/arg_utils.py", line 2372, in create_engine_config',
        "    config = VllmConfig(",
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for VllmConfig",
        "  Value error, max_num_scheduled_tokens is set to 0 based on the speculative decoding settings, which does not "
        "allow any tokens to be scheduled. Increase max_num_batched_tokens to accommodate the additional draft token "
        "slots, or decrease num_speculative_tokens. [type=value_error, input_value=ArgsKwargs((), {...}), input_type=ArgsKwargs]",
    ])
    errors = [f for f in analyze_text(log, "t.log").findings if f.severity == "error"]
    assert [f.category for f in errors] == ["token_budget"]


def test_a_bfloat16_model_run_in_float16_that_gives_garbage_is_a_near_miss():
    log = "\n".join([
        "vllm serve tiiuae/Falcon-H1-34B-Instruct -tp 2 --dtype float16",
        "(APIServer pid=88) WARNING 05-02 10:11:09 [model.py:2090] Casting torch.bfloat16 to torch.float16.",
        "(Worker_TP0 pid=301) INFO 05-02 10:11:52 [interface.py:649] Setting attention block size to 1312 tokens to "
        "ensure that attention page size is >= mamba page size.",
        'It gives garbage: "!!!!!!!!!!!!" for every prompt. No errors in the log.',
    ])
    findings = analyze_text(log, "t.log").findings
    assert (findings[0].category, findings[0].rule) == ("other", "near_miss") and "float16" in findings[0].title
    assert all(f.category == "other" for f in findings)

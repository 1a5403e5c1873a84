"""Post-mortem, round seven. The logs are written here in vLLM's own formats (messages, files and lines of the
release each names)."""

from __future__ import annotations

import pytest

from vllm_diag.errors import DiagError
from vllm_diag.postmortem.analyze import analyze_text

A = "(APIServer pid=1) INFO 05-21 23:18:43 "
W = "(Worker_TP3 pid=311) ERROR 05-21 23:19:30 [multiproc_executor.py:772] "
PKG = "/usr/local/lib/python3.12/dist-packages/vllm"


def _fp8_block_log() -> str:
    return "\n".join([
        f"{A}[utils.py:253] non-default args: {{'model': 'Qwen/Qwen3-Next-80B-A3B-Instruct-FP8', "
        "'tensor_parallel_size': 8, 'block_size': 16}",
        f"{A}[interface.py:606] Setting attention block size to 544 tokens to ensure that attention page size is "
        ">= mamba page size.",
        f"{A}[interface.py:630] Padding mamba page size by 1.49% to ensure that mamba page size and attention page "
        "size are exactly equal.",
        f"{W}Traceback (most recent call last):",
        f'{W}  File "{PKG}/model_executor/layers/linear.py", line 525, in __init__',
        f"{W}    self.quant_method.create_weights(",
        f'{W}  File "{PKG}/model_executor/layers/quantization/fp8.py", line 333, in create_weights',
        f"{W}    validate_fp8_block_shape(",
        f'{W}  File "{PKG}/model_executor/layers/quantization/utils/fp8_utils.py", line 1142, in '
        "validate_fp8_block_shape",
        f"{W}    raise ValueError(",
        f"{W}ValueError: Weight output_partition_size = 64 is not divisible by weight quantization block_n = 128.",
    ])


def test_a_raised_block_size_is_no_hint_beside_an_error_nothing_explains():
    """An fp8 checkpoint's weight blocks that do not split over eight ranks fail in weight loading, on a hybrid whose
    start-up raised the attention block size: the raise is a fact of the configuration, not this error's cause, so
    the unexplained error stands alone and says what was left out."""
    an = analyze_text(_fp8_block_log(), "x.log", use_preflight=False)
    assert [f.category for f in an.findings] == ["other"]
    assert any("left out" in m for m in an.findings[0].missing_evidence)
    clean = "\n".join(_fp8_block_log().splitlines()[:3])  # the same start-up without an error keeps the note
    assert "block_size_alignment" in [f.category for f in analyze_text(clean, "x.log", use_preflight=False).findings]


E = "(EngineCore_DP0 pid=812) ERROR 10-02 15:44:09 [core.py:1376] "


def _gather_fault_log(printed: str) -> str:
    assert_line = ("/pytorch/aten/src/ATen/native/cuda/ScatterGatherKernel.cu:367: operator(): block: [0,0,0], thread: "
                   "[0,0,0] Assertion `idx_dim >= 0 && idx_dim < index_size && \"index out of bounds\"` failed.")
    return "\n".join([
        "vllm serve ibm-granite/granite-4.0-h-small --enable-prefix-caching --mamba-cache-mode all "
        "--speculative-config '{\"method\": \"eagle3\", \"model\": \"/ckpt/head\", \"num_speculative_tokens\": 2}'",
        "INFO 10-02 15:40:01 [__init__.py:239] vLLM version 0.29.0",
        assert_line,
        f"{E}EngineCore encountered a fatal error.",
        f"{E}Traceback (most recent call last):",
        f'{E}  File ".../vllm/v1/worker/gpu_model_runner.py", line 355, in get_output',
        f"{E}    self.async_copy_ready_event.synchronize()",
        f"{E}torch.AcceleratorError: CUDA error: device-side assert triggered",
        "",
        "With CUDA_LAUNCH_BLOCKING=1 it moves to:",
        '  File ".../vllm/model_executor/layers/mamba/mamba_mixer2.py", line 1000, in conv_ssm_forward',
        "    state_indices_tensor_d_input = state_indices_tensor_d.gather(",
        printed,
    ])


def test_a_negative_index_the_reporter_read_off_in_words_is_a_row_without_a_state_slot():
    """A gather over the state indices faulting on a Mamba2 hybrid with drafts and prefix caching reads as the state
    indices; the reporter's "block_idx_... shows -1" (a row of the step without a state slot) makes it the batch's
    rows, as a printed negative slot does."""
    said = "printing block_idx_last_scheduled_token_prev_step_d shows -1 for the requests just admitted from prefill"
    an = analyze_text(_gather_fault_log(said), "x.log", use_preflight=False)
    assert an.facts.startup["printed_values"]["block_idx_last_scheduled_token_prev_step_d"] == -1
    assert an.findings[0].category == "mixed_batch"
    assert "block_idx_last_scheduled_token_prev_step_d = -1" in an.findings[0].basis
    plain = analyze_text(_gather_fault_log("mode align works."), "x.log", use_preflight=False)
    assert plain.findings[0].category == "state_index"


def test_records_cut_to_their_level_keep_the_traceback_indentation():
    """A reporter who cut timestamps and logger locations leaves "(Worker_TP1 pid=N) ERROR   File ..." -- the level,
    then the traceback's own indentation: the frames are still frames, so the layer's assert is matched."""
    p = "(EngineCore_DP0 pid=9141) (Worker_TP1 pid=9310) ERROR "
    log = "\n".join([
        "LLM(model='moonshotai/Kimi-Linear-48B-A3B-Instruct', tensor_parallel_size=2, "
        "speculative_config={'method': 'ngram', 'num_speculative_tokens': 4})",
        "INFO 06-03 08:01:10 [__init__.py:239] vLLM version 0.20.2",
        f"{p}Traceback (most recent call last):",
        f'{p}  File "{PKG}/model_executor/layers/kda.py", line 55, in kda_attention',
        f"{p}    self._forward(",
        f'{p}  File "{PKG}/model_executor/layers/kda.py", line 377, in _forward',
        f"{p}    assert non_spec_state_indices_tensor is not None",
        f"{p}AssertionError",
    ])
    an = analyze_text(log, "x.log", use_preflight=False)
    assert [f.function for f in an.facts.root.frames] == ["kda_attention", "_forward"]
    assert an.findings[0].category == "mixed_batch"


def test_a_hybrid_drafts_batch_split_without_its_prefill_flags_is_the_builder_class():
    """A hybrid draft model's Mamba builder asserting the step's is_prefilling flags exist (the proposer's metadata
    lacks them): the builder's split of decodes from prefills, not a type check outside the families."""
    e = "(EngineCore_DP0 pid=611) ERROR 02-19 21:55:08 [core.py:1197] "
    log = "\n".join([
        "vllm serve ibm-granite/granite-4.0-h-small --speculative-config "
        "'{\"method\":\"draft_model\",\"model\":\"ibm-granite/granite-4.0-h-micro\",\"num_speculative_tokens\":4}'",
        f"{e}Traceback (most recent call last):",
        f'{e}  File "{PKG}/v1/spec_decode/llm_base_proposer.py", line 887, in build_per_group_and_layer_attn_metadata',
        f"{e}    attn_metadata = attn_group.get_metadata_builder().build_for_drafting(",
        f'{e}  File "{PKG}/v1/attention/backends/mamba2_attn.py", line 139, in build',
        f"{e}    common = self._compute_common_metadata(",
        f'{e}  File "{PKG}/v1/attention/backends/mamba_attn.py", line 395, in _compute_common_metadata',
        f"{e}    assert is_prefilling is not None",
        f"{e}AssertionError",
    ])
    assert analyze_text(log, "x.log", use_preflight=False).findings[0].category == "mixed_batch"


def test_output_that_goes_off_the_rails_and_loops_is_wrong_output():
    """"answers go off the rails", "finally loops": the reporter's words for wrong output without an error, on a
    hybrid with drafts (the builder's rows); the same words on a dense model without drafts name no family."""
    words = ("Qwen3-Next + ngram: answers go off the rails mid-generation, then it repeats an earlier span and "
             "finally loops. No crash, no warning.")
    cmd = ("vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --speculative-config "
           "'{\"method\":\"ngram\",\"num_speculative_tokens\":4,\"prompt_lookup_max\":5}'")
    an = analyze_text(words + "\n" + cmd, "x.log", use_preflight=False)
    assert an.facts.startup["wrong_output_prose"] == "go off the rails"
    assert an.findings[0].category == "mixed_batch"
    dense = analyze_text("Llama-3.1-8B: answers go off the rails after a while.\nvllm serve meta-llama/Llama-3.1-8B",
                         "x.log", use_preflight=False)
    assert not [f for f in dense.findings if f.category not in ("other",)]


def test_a_mamba_block_that_is_no_whole_number_of_chunks_is_predicted():
    """Mamba cache mode 'all' with --mamba-block-size: vLLM sizes the block as a multiple of the given value, not of
    the Mamba2 chunk (128 for Nemotron-3-Super), so the mixer keeps the states of chunk boundaries -- predicted from
    config.json and the command; without the flag vLLM aligns the block to the chunk, and 0.32 reworked the mode."""
    from vllm_diag import api

    cmd = ("vllm serve nvidia/NVIDIA-Nemotron-3-Super-120B-A12B -tp 8 --enable-prefix-caching --mamba-cache-mode all "
           "--mamba-block-size 48")
    [f] = [f for f in api.check(cmd, version="0.26.0", gpu="H100").findings if f.rule == "mamba_chunk_alignment"]
    assert f.severity == "warning" and f.numbers["mamba_chunk_size"] == 128 and f.numbers["mamba_block_size"] % 128
    assert f.suggestions and f.suggestions[0].changes[0].key == "mamba_block_size"
    aligned = cmd.replace("--mamba-block-size 48", "")
    assert not [f for f in api.check(aligned, version="0.26.0", gpu="H100").findings if f.rule == "mamba_chunk_alignment"]
    assert [f for f in api.check(cmd, version="0.31.0", gpu="H100").findings if f.rule == "mamba_chunk_alignment"]
    with pytest.raises(DiagError, match="accepts only 'align', 'none'"):  # 0.32 has no mode 'all'
        api.check(cmd, version="0.32.0", gpu="H100")


def test_the_failing_line_the_reporter_names_in_words_is_a_number():
    """A report without the traceback that says where it failed ("the frame is gdn_attn.py line 725 ...", "(vllm/v1/
    attention/backends/flashinfer.py, line 1199, in build)") gives <file stem>_line like a printed frame; a logger's
    own "[core.py:1376]" location does not."""
    text = "\n".join([
        "vllm 0.32.0, H200. The frame is gdn_attn.py line 725 build_for_cudagraph_capture, called from "
        "(vllm/v1/worker/utils.py, line 357, in build_metadata_for_cudagraph_capture)",
        "(EngineCore pid=1) ERROR 10-02 15:44:09 [core.py:1376] AssertionError",
    ])
    nums = analyze_text(text, "x.log", use_preflight=False).facts.numbers
    assert nums["gdn_attn_line"] == 725 and nums["utils_line"] == 357 and "core_line" not in nums


def test_a_root_raised_outside_vllm_takes_the_vllm_lines_of_its_chained_traceback():
    """Transformers refusing a model type raises inside Transformers; the vLLM frames that called it are in the
    traceback printed with it ("During handling of the above exception ..."): their lines are the numbers."""
    t = "/usr/local/lib/python3.12/dist-packages"
    log = "\n".join([
        "Traceback (most recent call last):",
        f'  File "{t}/transformers/models/auto/configuration_auto.py", line 1360, in from_pretrained',
        "    config_class = CONFIG_MAPPING[config_dict[\"model_type\"]]",
        f'  File "{t}/transformers/models/auto/configuration_auto.py", line 1048, in __getitem__',
        "    raise KeyError(key)",
        "KeyError: 'qwen3_5_moe'",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        f'  File "{t}/vllm/engine/arg_utils.py", line 994, in create_model_config',
        "    return ModelConfig(",
        f'  File "{t}/transformers/models/auto/configuration_auto.py", line 1362, in from_pretrained',
        "    raise ValueError(",
        "ValueError: The checkpoint you are trying to load has model type `qwen3_5_moe` but Transformers does not "
        "recognize this architecture.",
    ])
    an = analyze_text(log, "x.log", use_preflight=False)
    assert an.facts.numbers.get("arg_utils_line") == 994


def test_a_frame_whose_line_number_the_reporter_elided_keeps_the_traceback():
    """'File ".../aiter/ops/attention.py", line ..., in get_mla_metadata_v1': a frame with its line number cut is
    still a frame, so the exception keeps the vLLM frames above it (and their line numbers)."""
    w = "(Worker_TP0 pid=5561) ERROR 03-30 08:21:03 [multiproc_executor.py:...] "
    log = "\n".join([
        f"{w}Traceback (most recent call last):",
        f'{w}  File "{PKG}/v1/attention/backends/mla/rocm_aiter_mla.py", line 249, in _build_decode',
        f"{w}    get_mla_metadata_v1(",
        f'{w}  File "/usr/local/lib/python3.12/dist-packages/aiter/ops/attention.py", line ..., in get_mla_metadata_v1',
        f"{w}    return get_mla_metadata_v1_cpp(",
        f"{w}RuntimeError: get_heuristic_kernel_mla: cannot find a suitable kernel for num_heads=16, max_seqlen_qo=4",
    ])
    f = analyze_text(log, "x.log", use_preflight=False).facts
    assert [fr.function for fr in f.root.frames] == ["_build_decode", "get_mla_metadata_v1"]
    assert f.root.frames[-1].line == 0 and f.numbers["rocm_aiter_mla_line"] == 249


def test_a_structured_loggers_json_records_carry_their_level_and_traceback():
    """vLLM's logging through a JSON formatter (VLLM_LOGGING_CONFIG_PATH): the message without vLLM's prefix, the
    level and logger location as fields, and the traceback in "exc_info" -- read as the record vLLM would print, so
    the out-of-memory error is the root (a near miss), not a note on the configuration."""
    import json

    rec = lambda level, file, msg, **kw: json.dumps({"time": "2026-03-02T07:44:52Z", "level": level, "file": file,
                                                     "proc": "EngineCore", "message": msg, **kw})
    tb = ("Traceback (most recent call last):\n"
          f'  File "{PKG}/v1/worker/gpu_model_runner.py", line 6811, in capture_model\n'
          "    self._capture_cudagraphs(\n"
          "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.53 GiB. GPU 0 has a total capacity of "
          "79.19 GiB of which 1.10 GiB is free.")
    log = "\n".join([
        rec("INFO", "interface.py:905", "Setting attention block size to 544 tokens to ensure that attention page "
            "size is >= mamba page size."),
        rec("INFO", "kv_cache_utils.py:2177", "GPU KV cache size: 17,952 tokens"),
        rec("INFO", "gpu_worker.py:560", "Available KV cache memory: 1.21 GiB"),
        rec("ERROR", "core.py:1330", "EngineCore failed to start.", exc_info=tb),
    ])
    an = analyze_text(log, "x.log", use_preflight=False)
    assert an.facts.root.exc_type == "torch.OutOfMemoryError"
    assert [f.rule for f in an.findings] == ["other_oom"]


def test_a_log_apis_pretty_printed_json_carries_the_traceback_in_its_message_fields():
    """A log API's response (Datadog, Loki, Elastic) pasted as pretty-printed JSON: each "message" field holds vLLM's
    records with escaped newlines -- decoded, the builder's assert is the root."""
    import json

    e = "(EngineCore pid=64) ERROR 05-18 08:44:10 [core.py:1138] "
    msg = "\n".join([f"{e}Traceback (most recent call last):",
                     f'{e}  File "{PKG}/v1/attention/backends/gdn_attn.py", line 352, in build',
                     f"{e}    assert not (num_decodes > 0 and num_spec_decodes > 0), (",
                     f"{e}AssertionError: num_decodes: 3, num_spec_decodes: 29"])
    doc = json.dumps({"data": [{"attributes": {"status": "error", "message": msg}}]}, indent=2)
    text = "vllm 0.20.2, MTP 2 tokens\nvllm serve Qwen/Qwen3.5-122B-A10B --speculative-config " \
           "'{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'\n" + doc
    an = analyze_text(text, "x.log", use_preflight=False)
    assert an.facts.root.message == "num_decodes: 3, num_spec_decodes: 29"
    assert an.findings[0].category == "mixed_batch"


def test_page_sizes_the_reporter_works_out_are_named_by_the_kind_of_layer_next_to_them():
    from vllm_diag.postmortem.prose import _prose_pages

    assert _prose_pages("main attention layers have page 3276800 bytes (block 400), mamba layers 3276800 (padded), "
                        "but the eagle3 draft layer has 6553600 bytes") == \
        {"attention_page_size": 3276800, "mamba_page_size": 3276800, "draft_page_size": 6553600}
    assert _prose_pages("MLA per-token = (512+64)*2 = 1152 bytes, so the MLA page is 960*1152 = 1105920.") == \
        {"mla_page_size": 1105920}
    assert _prose_pages("I get 557056 for the linear_attn layers") == {"mamba_page_size": 557056}
    assert _prose_pages("the page sizes were {32768, 24576}") == {}  # no kind of layer named: no name


def test_wrong_output_the_reporter_ties_to_the_clients_tokenizer_is_a_near_miss():
    """Gibberish from a hybrid with drafts and prefix caching, with no error -- but the reporter found the client
    tokenized with another model's tokenizer ("fixing tokenizer_path fixed it"): the engine computed what it was
    sent. Without that sentence the same report stays a hybrid/spec-decode suspicion."""
    report = ("Qwen3-Next + MTP rollouts are gibberish and MTP acceptance is ~5% -- only from our RL framework.\n"
              "server: vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --enable-prefix-caching "
              "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":2}'\n")
    fixed = report + "The trainer config pointed at a Llama tokenizer. Fixing tokenizer_path fixed it.\n"
    f = analyze_text(fixed, "x.log", use_preflight=False).findings[0]
    assert f.category == "other" and f.rule == "near_miss" and "tokenizer_path" in f.basis
    assert analyze_text(report, "x.log", use_preflight=False).findings[0].category != "other"


def test_accuracy_that_depends_on_concurrency_is_wrong_output():
    """"GSM8K accuracy depends on concurrency", "fluent but wrong", "repeat the question": wrong output without an
    error in a reporter's words, on a GDN hybrid with MTP -- the builders' rows, not a clean bill of health."""
    from vllm_diag.postmortem.symptom_words import WRONG_OUTPUT

    for said in ("GSM8K accuracy depends on concurrency", "answers are fluent but wrong", "it repeats the question"):
        assert WRONG_OUTPUT.search(said), said
    report = ("Qwen3.5-35B-A3B + MTP: GSM8K accuracy depends on concurrency, vllm 0.16.0\n"
              "vllm serve Qwen/Qwen3.5-35B-A3B --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":2}'\n")
    assert analyze_text(report, "x.log", use_preflight=False).findings[0].category == "mixed_batch"


def test_drafts_that_make_an_mla_model_slower_are_the_decode_kernels_query_length():
    """No error, but "MTP makes DeepSeek-R1 slower" on an MLA model: the decode backend takes one query token per
    request, so the verification rows run the prefill path -- a warning of the kernel-limit class. The same words
    about a dense model name no class."""
    mla = ("MTP makes DeepSeek-R1-0528-FP4 slower on B200 (FLASHINFER_MLA), v0.11.0: 3378 -> 2205 tok/s\n"
           "vllm serve nvidia/DeepSeek-R1-0528-FP4 -tp 4 --speculative-config "
           "'{\"method\":\"deepseek_mtp\",\"num_speculative_tokens\":1}'\n")
    f = analyze_text(mla, "x.log", use_preflight=False).findings[0]
    assert (f.category, f.severity) == ("spec_kernel_limit", "warning")
    dense = mla.replace("DeepSeek-R1-0528-FP4", "Llama-3.1-70B").replace("deepseek_mtp", "eagle3") \
        .replace("FLASHINFER_MLA", "FLASH_ATTN")
    assert not [x for x in analyze_text(dense, "x.log", use_preflight=False).findings if x.category == "spec_kernel_limit"]


def test_the_error_of_the_reporters_second_run_is_the_root():
    """A report with two runs: the first died of an out-of-memory error, "---- second run (0.88) ----" then served for
    hours and failed in a builder. The second run's error is what the report is about."""
    w = "(Worker_TP0 pid=7709) ERROR 11-04 11:37:05 [multiproc_executor.py:1063] "
    log = "\n".join([
        "Context: first we hit CUDA out of memory with --gpu-memory-utilization 0.95; after 0.88 it dies with the assert.",
        "---- first run ----",
        "(Worker_TP4 pid=7714) ERROR 11-04 09:12:51 [multiproc_executor.py:...] torch.OutOfMemoryError: CUDA out of "
        "memory. Tried to allocate 2.00 GiB. GPU 4 has a total capacity of 79.19 GiB of which 1.41 GiB is free.",
        "---- second run (0.88) ----",
        f"{w}Traceback (most recent call last):",
        f'{w}  File "{PKG}/v1/worker/mamba_utils.py", line 1520, in preprocess_mamba',
        f"{w}    assert accept_token_bias >= 0",
        f"{w}AssertionError",
    ])
    an = analyze_text(log, "x.log", use_preflight=False)
    assert an.facts.root.exc_type == "AssertionError" and an.findings[0].category != "other"


def test_a_sparse_mla_shape_check_whose_rows_disagree_under_drafts_is_the_kernel_limit():
    """FlashInfer sparse MLA's LSE "(16, 3, 32), expected (46, 32)": the heads agree, the rows do not (16 requests x
    1 + k against the tokens) -- under MTP the multi-token decode, not the model's shape. Without drafts it stays
    outside the families."""
    w = "(Worker_TP2 pid=411) ERROR 05-02 10:00:01 [multiproc_executor.py:880] "
    log = lambda cmd: "\n".join([
        cmd, f"{w}Traceback (most recent call last):",
        f'{w}  File "{PKG}/v1/attention/backends/mla/flashinfer_mla_sparse.py", line 787, in _normalize_lse',
        f"{w}    raise RuntimeError(",
        f"{w}RuntimeError: Unexpected FlashInfer sparse MLA LSE shape: (16, 3, 32), expected (46, 32).",
    ])
    mtp = ("vllm serve deepseek-ai/DeepSeek-V3.2 -tp 4 --speculative-config "
           "'{\"method\":\"mtp\",\"num_speculative_tokens\":2}'")
    assert analyze_text(log(mtp), "x.log", use_preflight=False).findings[0].category == "spec_kernel_limit"
    plain = "vllm serve deepseek-ai/DeepSeek-V3.2 -tp 4"
    assert analyze_text(log(plain), "x.log", use_preflight=False).findings[0].category == "other"


def test_vllms_warning_that_no_kv_group_is_the_drafts_makes_wrong_output_the_draft_layout():
    """vLLM 0.31+ warns "Speculative decoding (method=eagle3) is enabled but no KV cache group could be identified as
    the draft model's" on a Mamba/GDN hybrid; wrong output after it is the draft vs hybrid KV layout."""
    report = "\n".join([
        "Qwen3.5-35B-A3B + EAGLE3: repetitive garbage after a few hundred tokens, vllm 0.33.0",
        "vllm serve Qwen/Qwen3.5-35B-A3B --speculative-config "
        "'{\"method\":\"eagle3\",\"model\":\"/ckpt/eagle3\",\"num_speculative_tokens\":4}'",
        "(EngineCore_DP0 pid=9021) WARNING 06-02 21:41:20 [kv_cache_planning.py:1067] Speculative decoding "
        "(method=eagle3) is enabled but no KV cache group could be identified as the draft model's.",
    ])
    f = analyze_text(report, "x.log", use_preflight=False).findings[0]
    assert f.category == "kv_page_size" and "draft model's" in f.basis


def test_uvicorns_bind_error_without_a_traceback_is_the_port_near_miss():
    """"ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use" --
    uvicorn logs the OS error without a traceback; the line itself is the near miss."""
    log = "\n".join([
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --speculative-config "
        "'{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}'",
        "(APIServer pid=1) INFO 05-27 10:06:51 [api_server.py:1651] Supported tasks: ['generate']",
        "(APIServer pid=1) ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address "
        "already in use",
    ])
    f = analyze_text(log, "x.log", use_preflight=False).findings[0]
    assert (f.category, f.rule) == ("other", "near_miss") and "address already in use" in f.title.lower()


def test_an_elided_parallel_size_in_the_engine_config_is_no_internal_error():
    """"tensor_parallel_size=1 ..." (the rest of the config line elided) with a GPU named: the size reads as 1, and an
    unreadable one counts no GPUs -- never an internal error."""
    log = "\n".join([
        "1x H100 80GB",
        "(EngineCore_DP0 pid=311) INFO 06-10 09:14:55 [core.py:...] Initializing a V1 LLM engine (v0.26.0) with config: "
        "model='Qwen/Qwen3-Next-80B-A3B-Instruct', tensor_parallel_size=1 ...",
        "(EngineCore_DP0 pid=311) ERROR 06-10 09:15:55 [core.py:...] ValueError: To serve at least one request with the "
        "models's max seq len (262144), (6.00 GiB KV cache is needed, which is larger than the available KV cache "
        "memory (2.10 GiB).",
    ])
    an = analyze_text(log, "x.log", use_preflight=False)
    assert an.facts.args["tensor_parallel_size"] == 1 and an.facts.gpu_count == 1
    from vllm_diag.postmortem.identity import _count

    assert _count("1 ...") is None and _count(4) == 4

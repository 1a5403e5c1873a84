"""Generalisation gaps found by a blind check (failure reports written without looking at the development
corpus): each test states the failure class in a log the tests write themselves, in vLLM's format, with models,
numbers and paths of their own.
"""

from __future__ import annotations

from vllm_diag.postmortem.analyze import analyze_text
from vllm_diag.postmortem.lines import strip_ansi

PKG = "/srv/py/lib/python3.12/site-packages/vllm/"


def _first(log: str):
    res = analyze_text(log, "t.log")
    fs = [f for f in res.findings if f.severity == "error"]
    return fs[0] if fs else None


def _tb(prefix: str, frames: list[tuple[str, int, str, str]], exc: str) -> str:
    out = [f"{prefix}Traceback (most recent call last):"]
    for path, line, fn, code in frames:
        out += [f'{prefix}  File "{path}", line {line}, in {fn}', f"{prefix}    {code}"]
    return "\n".join(out + [f"{prefix}{exc}"]) + "\n"


# ------------------------------------------------------------------------------------------------
# colour codes that lost their ESC byte in a paste ("[1;36m(Worker_TP1 pid=9)[0;0m ERROR ...")
# ------------------------------------------------------------------------------------------------

def test_bare_colour_codes_are_stripped_but_brackets_in_code_are_kept():
    assert strip_ansi("[1;36m(Worker_TP2 pid=31)[0;0m ERROR 01-02 03:04:05 [x.py:9] boom") == \
        "(Worker_TP2 pid=31) ERROR 01-02 03:04:05 [x.py:9] boom"
    assert strip_ansi("\x1b[1;36m(EngineCore pid=3)\x1b[0;0m INFO hi") == "(EngineCore pid=3) INFO hi"
    for keep in ("x = table[0m]", "arr[12m", "    state[idx] = new[3]", "shape [4, 8]"):
        assert strip_ansi(keep) == keep


def _state_index_log(colour: bool) -> str:
    pre = "[1;36m(Worker_TP3 pid=7140)[0;0m " if colour else "(Worker_TP3 pid=7140) "
    head = pre + "ERROR 05-06 07:08:09 [multiproc_executor.py:760] "
    frames = [
        (PKG + "v1/worker/gpu_model_runner.py", 1702, "_build_attention_metadata", "attn_metadata_i = builder.build("),
        (PKG + "v1/attention/backends/mamba2_attn.py", 230, "build", "common = self._compute_common_metadata(m)"),
        (PKG + "v1/attention/backends/mamba_attn.py", 152, "_compute_prefix_caching_block_indices",
         "state_indices = m.block_table_tensor.gather(1, last_idx.unsqueeze(1))"),
    ]
    return ("Zamba2 / Mamba2 hybrid, prefix caching on, TP 4\n"
            + _tb(head, frames, "RuntimeError: index 130 is out of bounds for dimension 1 with size 130")
            + "args: --enable-prefix-caching --max-model-len 65536 -tp 4\n")


def test_bare_colour_codes_keep_the_traceback_readable():
    plain, coloured = _first(_state_index_log(False)), _first(_state_index_log(True))
    assert plain is not None and coloured is not None
    assert plain.category == "state_index"
    assert coloured.category == plain.category, coloured.basis


# ------------------------------------------------------------------------------------------------
# a Triton kernel that needs more shared memory than the GPU has: GPU generation, not block sizes
# ------------------------------------------------------------------------------------------------

def _triton_resources_log(what: str) -> str:
    return (
        "Qwen3-Next style hybrid on an RTX 2080 Ti, vllm 0.16.0, --dtype half\n"
        '  File "' + PKG + 'model_executor/layers/fla/ops/chunk_o.py", line 161, in chunk_fwd_o\n'
        "    chunk_fwd_kernel_o[grid](\n"
        '  File "/srv/py/lib/python3.12/site-packages/triton/runtime/jit.py", line 390, in <lambda>\n'
        "    return lambda *args, **kwargs: self.run(grid=grid, warmup=False, *args, **kwargs)\n"
        '  File "/srv/py/lib/python3.12/site-packages/triton/compiler/compiler.py", line 455, in _init_handles\n'
        '    raise OutOfResources(self.metadata.shared, max_shared, "shared memory")\n'
        f"triton.runtime.errors.OutOfResources: out of resource: {what}, Required: 81920, Hardware limit: 65536. "
        "Reducing block sizes or `num_stages` may help.\n")


def test_triton_out_of_resources_is_a_near_miss():
    for what in ("shared memory", "registers"):
        f = _first(_triton_resources_log(what))
        assert f is not None and f.category == "other", (what, f.category if f else None)


# ------------------------------------------------------------------------------------------------
# a kernel library's parameter tuple with the decode query length above 1 (speculative decoding)
# ------------------------------------------------------------------------------------------------

def _kernel_tuple_log(mtp: int, spec: bool) -> str:
    w = "(Worker_TP0 pid=220) ERROR 02-03 04:05:06 [multiproc_executor.py:822] "
    frames = [
        (PKG + "v1/attention/backends/mla/rocm_aiter_mla.py", 318, "_forward_decode", "rocm_aiter_ops.mla_decode_fwd("),
        ("/srv/py/lib/python3.12/site-packages/aiter/mla.py", 201, "mla_decode_fwd", "aiter.mla_decode_stage1_asm_fwd("),
    ]
    exc = (f"RuntimeError: get_heuristic_kernel: cannot get heuristic kernel! q_type:fp8 kv_type:fp8 gqa:8 "
           f"mtp:{mtp} msk:1 hp:0 block_size:1 ps:1")
    cmd = "vllm serve deepseek-ai/DeepSeek-V3-0324 -tp 8"
    if spec:
        cmd += f" --speculative-config '{{\"method\":\"mtp\",\"num_speculative_tokens\":{mtp - 1}}}'"
    return "MI300X x8\n" + _tb(w, frames, exc) + cmd + "\n"


def test_kernel_parameter_tuple_with_multi_token_queries_is_a_spec_kernel_limit():
    f = _first(_kernel_tuple_log(3, spec=True))
    assert f is not None and f.category == "spec_kernel_limit", (f.category, f.basis)


def test_kernel_parameter_tuple_with_single_token_queries_is_not_a_spec_kernel_limit():
    f = _first(_kernel_tuple_log(1, spec=False))
    assert f is None or f.category != "spec_kernel_limit", f.basis


# ------------------------------------------------------------------------------------------------
# E siblings from what a log states outside an error
# ------------------------------------------------------------------------------------------------

def _categories(log: str) -> list[str]:
    return [f.category for f in analyze_text(log, "t.log").findings]


def test_mamba_block_budget_from_the_model_name_when_no_architecture_line():
    log = ("vllm serve ibm-granite/granite-4.0-h-tiny --max-num-seqs 512 --max-model-len 4096\n"
           "INFO 07-08 09:10:11 [config.py:301] Setting attention block size to 800 tokens to ensure that attention "
           "page size is >= mamba page size.\n"
           "INFO 07-08 09:10:40 [kv_cache_utils.py:1001] GPU KV cache size: 12,800 tokens\n")
    cats = _categories(log)
    assert "mamba_block_budget" in cats, cats
    # a dense model of the same numbers has no Mamba states to budget
    dense = log.replace("ibm-granite/granite-4.0-h-tiny", "meta-llama/Llama-3.1-8B-Instruct")
    assert "mamba_block_budget" not in _categories(dense)


def test_mamba_cache_mode_from_the_prefix_caching_warning():
    from vllm_diag.postmortem.reader import facts_from_text

    line = ("(APIServer pid=9) INFO 04-05 06:07:08 [config.py:380] Warning: Prefix caching in Mamba cache 'align' mode "
            "is currently enabled. Its support for Mamba layers is experimental. Please report any issues you may observe.")
    facts = facts_from_text(line + "\n")
    assert facts.startup.get("mamba_cache_mode") == "align"
    log = ("vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --enable-prefix-caching -tp 4\n" + line + "\n"
           "(APIServer pid=9) INFO 04-05 06:07:08 [config.py:212] Setting attention block size to 2112 tokens to "
           "ensure that attention page size is >= mamba page size.\n")
    assert "prefix_cache_degraded" in _categories(log)


# ------------------------------------------------------------------------------------------------
# flags quoted in a reporter's sentence, with no `vllm serve` and no line that starts with a flag
# ------------------------------------------------------------------------------------------------

def test_inline_flags_and_short_parallel_aliases_in_prose():
    from vllm_diag.postmortem.reader import facts_from_text

    log = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB.\n"
           "launched with: -tp 2 -pp 2 --speculative-config '{\"method\":\"ngram\",\"num_speculative_tokens\":5,"
           "\"prompt_lookup_max\":3}' --max-num-seqs 24\n")
    a = facts_from_text(log).args
    assert a.get("tensor_parallel_size") == 2 and a.get("pipeline_parallel_size") == 2, a
    assert a.get("num_speculative_tokens") == 5 and a.get("max_num_seqs") == 24, a
    # a hyphenated word is not a flag ("multi-tp 3", "step-pp 4")
    b = facts_from_text("we tried multi-tp 3 and step-pp 4 setups\n").args
    assert "tensor_parallel_size" not in b and "pipeline_parallel_size" not in b, b
    # the OOM stays a near miss with the speculative configuration known
    f = _first(log)
    assert f is not None and f.category == "other"


# ------------------------------------------------------------------------------------------------
# a decode kernel's wrapper unpacking a single-token query shape, handed the multi-token spec-decode shape
# ------------------------------------------------------------------------------------------------

def _unpack_log(spec: bool, code: str = "B_q, H, D = q_nope.shape") -> str:
    w = "(Worker_TP1 pid=640) ERROR 06-07 08:09:10 [multiproc_executor.py:800] "
    frames = [
        (PKG + "v1/attention/backends/mla/common.py", 1990, "forward", "out = self._forward_decode(q, kv_cache, md, layer)"),
        (PKG + "v1/attention/backends/mla/flashattn_mla.py", 212, "_forward_decode", code),
    ]
    head = "DeepSeek-V3-0324 on 8x H100, FLASH_ATTN_MLA"
    head += ", eagle draft with num_speculative_tokens 4\n" if spec else "\n"
    return head + _tb(w, frames, "ValueError: too many values to unpack (expected 3)")


def test_shape_unpack_in_an_mla_decode_wrapper_under_spec_is_a_kernel_limit():
    f = _first(_unpack_log(spec=True))
    assert f is not None and f.category == "spec_kernel_limit", (f.category, f.basis)
    # without drafts the decode query has one token per request: not this class
    g = _first(_unpack_log(spec=False))
    assert g is None or g.category != "spec_kernel_limit"
    # unpacking something that is not a shape is not a shape error
    h = _first(_unpack_log(spec=True, code="name, value = item.split('=')"))
    assert h is None or h.category != "spec_kernel_limit"


# ------------------------------------------------------------------------------------------------
# vLLM flags written without their dashes in a sentence
# ------------------------------------------------------------------------------------------------

def test_flags_without_dashes_in_prose():
    from vllm_diag.postmortem.reader import facts_from_text

    a = facts_from_text("our engine args: max_num_seqs=48, enable_prefix_caching=True, gpu_memory_utilization=0.9\n").args
    assert a.get("max_num_seqs") == 48 and a.get("enable_prefix_caching") is True and a.get("gpu_memory_utilization") == 0.9
    b = facts_from_text("Granite 4 hybrid, max-num-seqs 80 and max-model-len 8192, vllm 0.15.0.\n").args
    assert b.get("max_num_seqs") == 80 and b.get("max_model_len") == 8192, b
    # names that are not vLLM flags, and indented code, are not read
    c = facts_from_text("Qwen3-Next-80B gpt-oss 120 batch-size 12\n    max_num_seqs = 7\n").args
    assert "max_num_seqs" not in c and not c, c
    # a dashed flag of the same name wins over the bare one
    d = facts_from_text("max-num-seqs 64 first, then --max-num-seqs 8\n").args
    assert d.get("max_num_seqs") == 8


def test_capture_padding_with_max_num_seqs_from_prose():
    pre = "(EngineCore_DP0 pid=31) ERROR 04-05 06:07:08 [core.py:1010] "
    frames = [
        (PKG + "v1/worker/gpu_model_runner.py", 4300, "_dummy_run", "outputs = self.model("),
        (PKG + "model_executor/models/qwen3_next.py", 700, "_forward_core",
         "mixed_qkv_spec = mixed_qkv.index_select(0, spec_token_indx)"),
    ]
    log = ("Qwen3-Next + MTP num_speculative_tokens=1, max-num-seqs 40, vllm 0.15.0\n"
           "(EngineCore_DP0 pid=31) INFO 04-05 06:06:00 [core.py:101] Initializing a V1 LLM engine (v0.15.0) with "
           "config: model='Qwen/Qwen3-Next-80B-A3B-Instruct', compilation_config={\"cudagraph_capture_sizes\": "
           "[1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96]}\n"
           + _tb(pre, frames, "RuntimeError: The size of tensor a (96) must match the size of tensor b (80) at "
                              "non-singleton dimension 0"))
    f = _first(log)
    assert f is not None and f.category == "cudagraph_shape", (f.category, f.basis)


# ------------------------------------------------------------------------------------------------
# numbers: sizes in a sentence-final shorthand, shapes of a failed index-put, the value a check saw
# ------------------------------------------------------------------------------------------------

def test_parallel_shorthand_at_the_end_of_a_sentence():
    from vllm_diag.postmortem.reader import facts_from_text

    assert facts_from_text("Falcon-H1 34B, vllm 0.12.0, TP4.\n").args.get("tensor_parallel_size") == 4
    assert "tensor_parallel_size" not in facts_from_text("we got TP4.5x the throughput\n").args


def test_shapes_of_an_index_put_and_the_value_a_check_saw():
    from vllm_diag.postmortem.numbers import phrase_numbers

    n = phrase_numbers("shape mismatch: value tensor of shape [5, 1024, 8] cannot be broadcast to indexing result "
                       "of shape [5, 3, 1024, 8]")
    assert n["value_tensor_shape"] == [5, 1024, 8] and n["indexing_result_shape"] == [5, 3, 1024, 8]
    m = phrase_numbers("Check failed: (qo_len <= 8) is false: decode kernel takes at most 8 query tokens, got 11")
    assert m["check_threshold"] == 8 and m["qo_len"] == 11
    # no "got": only the threshold
    assert "qo_len" not in phrase_numbers("Check failed: (qo_len <= 8) is false")


# ------------------------------------------------------------------------------------------------
# an NCCL call that failed on a CUDA error while another line names an illegal memory access
# ------------------------------------------------------------------------------------------------

def _nccl_log(fault_line: bool) -> str:
    w = "(Worker_TP2 pid=410) ERROR 05-06 07:08:09 [multiproc_executor.py:822] "
    frames = [
        (PKG + "distributed/device_communicators/pynccl.py", 150, "all_reduce", "self.nccl.ncclAllReduce("),
        (PKG + "distributed/device_communicators/pynccl_wrapper.py", 305, "NCCL_CHECK",
         'raise RuntimeError(f"NCCL error: {error_str}")'),
    ]
    head = ("Qwen3-Next-80B-A3B-Instruct, -tp 4, --enable-prefix-caching, "
            "--speculative-config '{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}'\n")
    if fault_line:
        head += ("(Worker_TP0 pid=408) [rank0]:[E506 07:08:09.1 ProcessGroupNCCL.cpp:1899] [PG ID 2 PG GUID 3 Rank 0] "
                 "Process group watchdog thread terminated with exception: CUDA error: an illegal memory access was "
                 "encountered\n")
    return head + _tb(w, frames, "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)")


def test_nccl_error_on_a_device_fault_is_reasoned_as_an_async_fault():
    f = _first(_nccl_log(fault_line=True))
    assert f is not None and f.category == "state_index" and f.confidence == "low", (f.category, f.basis)
    assert "illegal memory access" in f.basis
    # without a device fault anywhere, an NCCL failure stays a distributed near miss
    g = _first(_nccl_log(fault_line=False))
    assert g is not None and g.category == "other"


def test_mask_shapes_and_camel_case_kernel_fields():
    from vllm_diag.postmortem.numbers import message_numbers, phrase_numbers

    n = phrase_numbers("The shape of the mask [21] at index 0 does not match the shape of the indexed tensor [20] at "
                       "index 0")
    assert n["mask_shape"] == [21] and n["indexed_tensor_shape"] == [20]
    m = message_numbers("Missing kernel (decode): qLenPerReq=3, headDimQk=128, numTokensPerPage=32")
    assert m["q_len_per_req"] == 3 and m["head_dim_qk"] == 128 and m["num_tokens_per_page"] == 32


def test_inline_boolean_flag_does_not_swallow_the_next_flag():
    from vllm_diag.postmortem.reader import facts_from_text

    a = facts_from_text("options: --no-enable-prefix-caching --max-num-seqs 20 --enforce-eager -tp 2\n").args
    assert a.get("enable_prefix_caching") is False and a.get("max_num_seqs") == 20, a
    assert a.get("enforce_eager") is True and a.get("tensor_parallel_size") == 2, a


# ------------------------------------------------------------------------------------------------
# the runner's CPU block-table row too short for a request's blocks (numpy's broadcast error)
# ------------------------------------------------------------------------------------------------

def _block_row_log(model: str, prefix: bool) -> str:
    pre = "ERROR 03-04 05:06:07 [core.py:935] "
    frames = [
        (PKG + "v1/worker/gpu_model_runner.py", 1050, "_update_states",
         "self.input_batch.block_table.append_row(new_block_ids, req_index)"),
        (PKG + "v1/worker/block_table.py", 95, "append_row",
         "self.block_table.np[row_idx, start : start + num_blocks] = block_ids"),
    ]
    cmd = (f"vllm serve {model} --max-model-len 16384 "
           "--speculative-config '{\"method\":\"ngram\",\"num_speculative_tokens\":4,\"prompt_lookup_max\":3}'")
    cmd += " --enable-prefix-caching" if prefix else " --no-enable-prefix-caching"
    return _tb(pre, frames, "ValueError: could not broadcast input array from shape (4,) into shape (2,)") + cmd + "\n"


def test_block_table_row_overflow_of_a_hybrid_with_spec_and_prefix_caching_is_state_index():
    f = _first(_block_row_log("tiiuae/Falcon-H1-7B-Instruct", prefix=True))
    assert f is not None and f.category == "state_index" and f.confidence == "medium", (f.category, f.basis)
    assert "block_table.py:append_row" in f.basis
    # a dense model, or a hybrid without prefix caching: the width of the Mamba groups is not the cause
    g = _first(_block_row_log("meta-llama/Llama-3.1-8B-Instruct", prefix=True))
    assert g is None or g.category != "state_index"
    h = _first(_block_row_log("tiiuae/Falcon-H1-7B-Instruct", prefix=False))
    assert h is None or h.category != "state_index"


# ------------------------------------------------------------------------------------------------
# the dummy run's token-budget assert: from the CUDA-graph capture it is a capture size above the budget
# ------------------------------------------------------------------------------------------------

def _dummy_budget_log(caller: str) -> str:
    w = "(Worker_TP0 pid=90) ERROR 07-08 09:10:11 [multiproc_executor.py:750] "
    frames = [(PKG + "v1/worker/gpu_model_runner.py", 4000, caller, "self._dummy_run("),
              (PKG + "v1/worker/gpu_model_runner.py", 3600, "_dummy_run",
               "assert num_tokens <= self.scheduler_config.max_num_batched_tokens")]
    return ("vllm 0.13.0: vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --max-num-batched-tokens 128 --max-num-seqs 64 "
            "--speculative-config '{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}'\n"
            + _tb(w, frames, "AssertionError"))


def test_dummy_run_budget_assert_from_the_capture_is_a_cudagraph_shape():
    f = _first(_dummy_budget_log("_capture_cudagraphs"))
    assert f is not None and f.category == "cudagraph_shape", (f.category, f.basis)
    assert "192" in f.basis  # max_num_seqs x (1 + k)
    g = _first(_dummy_budget_log("profile_run"))
    assert g is None or g.category != "cudagraph_shape"


# ------------------------------------------------------------------------------------------------
# docker json-file log lines, JSON configs named in a sentence, "MTP 2"
# ------------------------------------------------------------------------------------------------

def test_docker_json_log_lines_are_unwrapped():
    import json

    from vllm_diag.postmortem.lines import clean_line

    raw = json.dumps({"log": '(Worker_TP1 pid=7) ERROR 01-02 03:04:05 [x.py:1]   File "/a/vllm/v1/b.py", line 3, in f\n',
                      "stream": "stderr", "time": "2026-01-02T03:04:05.000Z"})
    ln = clean_line(raw, 1)
    assert ln is not None and ln.process == "Worker_TP1" and ln.text == '  File "/a/vllm/v1/b.py", line 3, in f'
    assert clean_line('{"log": broken', 2).text == '{"log": broken'  # not JSON: kept as it is


def test_json_config_in_a_sentence_and_mtp_shorthand():
    from vllm_diag.postmortem.reader import facts_from_text

    a = facts_from_text('setup -- speculative_config: {"method": "mtp", "num_speculative_tokens": 3}, tp 2\n').args
    assert a.get("num_speculative_tokens") == 3 and a.get("speculative_method") == "mtp", a
    f = facts_from_text("GLM-4.5-Air with MTP 2 and prefix caching\nRuntimeError: boom\n")
    assert f.startup.get("spec_prose") == {"method": "mtp", "k": 2}, f.startup
    # "MTP 1.5x faster" is not a depth
    g = facts_from_text("MTP 1.5x faster than without\nRuntimeError: boom\n")
    assert (g.startup.get("spec_prose") or {}).get("k") is None, g.startup


# ------------------------------------------------------------------------------------------------
# a C++ CUDA check naming the source of the failed launch (vLLM's custom all-reduce): the kernel decides
# ------------------------------------------------------------------------------------------------

def _cudacheck_log(src: str) -> str:
    return ("Zamba2-7B, -tp 2 --enable-prefix-caching, vllm 0.12.0, two RTX 6000 Ada over PCIe\n"
            f"(Worker_TP1 pid=51) Failed: Cuda error /build/csrc/{src}:211 'an illegal memory access was encountered'\n"
            "(EngineCore_DP0 pid=40) ERROR 03-03 03:03:03 [core.py:708] RuntimeError: Worker failed with error "
            "'CUDA error: an illegal memory access was encountered', please check the stack trace above for the root "
            "cause\n")


def test_cuda_check_in_a_collective_kernel_is_not_a_hybrid_class():
    f = _first(_cudacheck_log("custom_all_reduce.cuh"))
    assert f is not None and f.category == "other", (f.category, f.basis)
    assert "custom_all_reduce" in f.basis
    # the same check in a Mamba kernel's source is the hybrid's business
    g = _first(_cudacheck_log("mamba/mamba_ssm/selective_scan_fwd.cu"))
    assert g is not None and g.category != "other", (g.category, g.basis)


# ------------------------------------------------------------------------------------------------
# CUDA_LAUNCH_BLOCKING=1 run by the reporter: the frame that launched the kernel is where it faulted
# ------------------------------------------------------------------------------------------------

def _blocking_log(kernel_file: str, kernel: str, blocking: bool) -> str:
    w = "(Worker_TP0 pid=12) ERROR 08-09 10:11:12 [multiproc_executor.py:671] "
    frames = [(PKG + kernel_file, 300, "launch", f"{kernel}[grid]("),
              ("/srv/py/lib/python3.12/site-packages/triton/backends/nvidia/driver.py", 529, "__call__",
               "self.launch(gridX, gridY, gridZ, stream, function, *args)")]
    head = ("Qwen3-Next-80B-A3B-Instruct, --enable-prefix-caching, "
            "--speculative-config '{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}'"
            + (", reproduced with CUDA_LAUNCH_BLOCKING=1\n" if blocking else "\n"))
    tail = w + "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    return head + _tb(w, frames, "RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered") + tail


def test_launch_blocking_places_the_fault_at_the_launching_frame():
    from vllm_diag.postmortem.diagnose import diagnose
    from vllm_diag.postmortem.reader import facts_from_text

    log = _blocking_log("model_executor/layers/fused_moe/fused_moe.py", "fused_moe_kernel", blocking=True)
    f = _first(log)
    assert f is not None and f.category == "other", (f.category, f.basis)
    d = diagnose(facts_from_text(log))
    assert d is not None and d.category == "other" and "fused_moe_kernel" in d.basis, d.basis
    # vLLM's own hint line is not the reporter running with it: the configuration decides
    g = _first(_blocking_log("model_executor/layers/fused_moe/fused_moe.py", "fused_moe_kernel", blocking=False))
    assert g is not None and g.category == "state_index"
    # a GDN kernel that faulted with synchronous launches stays with the hybrid classes
    h = _first(_blocking_log("model_executor/layers/fla/ops/fused_recurrent.py", "fused_recurrent_gated_delta_rule_fwd_kernel",
                             blocking=True))
    assert h is not None and h.category in ("state_index", "mixed_batch"), (h.category, h.basis)


def test_frame_line_wrapped_after_the_path():
    from vllm_diag.postmortem.reader import facts_from_text

    p = "(Worker_TP0 pid=5) ERROR 01-01 01:01:01 [multiproc_executor.py:822] "
    log = "\n".join([
        p + "Traceback (most recent call last):",
        p + '  File "/srv/py/lib/python3.12/site-packages/vllm/v1/attention/backends/gdn_attn.py",',
        " line 333, in build",
        p + "    assert not (num_decodes > 0 and num_spec_decodes > 0), (",
        p + "AssertionError: num_decodes: 4, num_spec_decodes: 9",
    ]) + "\n"
    root = facts_from_text(log).root
    assert root is not None and root.frames, root
    fr = root.frames[-1]
    assert fr.file.endswith("gdn_attn.py") and fr.line == 333 and fr.function == "build", fr


def test_phrase_names_drop_instruction_words_and_use_num():
    from vllm_diag.postmortem.numbers import phrase_numbers

    n = phrase_numbers("Make sure batch size (48) <= cudagraph capture sizes (32), and number of tokens (96) <= "
                       "cudagraph capture sizes (32).")
    assert n["batch_size"] == 48 and n["num_tokens"] == 96 and n["cudagraph_capture_sizes"] == 32
    assert phrase_numbers("Provided 6 number of heads.")["num_heads"] == 6

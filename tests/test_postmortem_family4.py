"""Failure families, fourth part: the step's rows split by its decode / prefill counts inside a hybrid builder
(mixed batch even where prefix caching runs the state indices through the block table), and a state-index tensor
the reporter printed in prose with its tail elided (a pad slot, -1, on the spec-decode path).

Every log here is written by the tests in vLLM's format; models, numbers and paths are the tests' own.
"""

from __future__ import annotations

from .test_postmortem_family3 import _first  # the top error finding, with its confidence and basis checked

E = "(EngineCore_DP0 pid=4021) ERROR 09-02 11:20:31 [core.py:1133] "
SITE = "/opt/venv/lib/python3.12/site-packages/vllm"


def _split_log(prefix_caching: bool) -> str:
    return "\n".join([
        "vllm serve ibm-granite/granite-4.0-h-small --max-num-seqs 24 "
        + ("--enable-prefix-caching " if prefix_caching else "")
        + "--speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 3, \"prompt_lookup_max\": 4}'",
        f"{E}EngineCore encountered a fatal error.",
        f"{E}Traceback (most recent call last):",
        f'{E}  File "{SITE}/v1/worker/gpu_model_runner.py", line 2291, in _build_attention_metadata',
        f"{E}    attn_metadata_i = builder.build(",
        f'{E}  File "{SITE}/v1/attention/backends/mamba2_attn.py", line 151, in build',
        f"{E}    common = self._compute_common_metadata(",
        f'{E}  File "{SITE}/v1/attention/backends/mamba_attn.py", line 455, in _compute_common_metadata',
        f"{E}    block_idx_d, block_idx_p = torch.split(",
        f"{E}RuntimeError: split_with_sizes expects split_sizes to sum exactly to 11 (input tensor's size at "
        "dimension 0), but got split_sizes=[9, 4]",
    ])


def test_a_decode_prefill_split_that_does_not_add_up_is_a_mixed_batch():
    for pc in (False, True):  # prefix caching does not turn a row-count split into a state-column width
        f = _first(_split_log(pc))
        assert f.category == "mixed_batch", (pc, f.category, f.basis)
        assert f.numbers.get("num_speculative_tokens") == 3


def test_a_split_outside_hybrid_code_is_not_claimed():
    log = _split_log(False).replace("v1/attention/backends/mamba2_attn.py", "model_executor/layers/linear.py") \
        .replace("v1/attention/backends/mamba_attn.py", "model_executor/layers/linear.py") \
        .replace("_compute_common_metadata", "weight_loader").replace("in build", "in forward")
    assert _first(log).category != "mixed_batch"


def _printed_log(printed: str) -> str:
    return "\n".join([
        "vllm serve Qwen/Qwen3.5-35B-A3B --no-enable-prefix-caching --speculative-config "
        "'{\"method\": \"qwen3_5_mtp\", \"num_speculative_tokens\": 2}'",
        "Under load the server dies; before the crash I printed the indices:",
        printed,
        f"{E}RuntimeError: CUDA error: an illegal memory access was encountered",
        f"{E}CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
        "might be incorrect.",
    ])


def test_a_state_index_printed_in_prose_with_a_pad_slot_shows_the_mixed_batch():
    f = _first(_printed_log("ssm_state_indices right before the kernel: tensor([ 40,  -1,  -1,  12, 13, ...], "
                            "device='cuda:0')"))
    assert f.category == "mixed_batch", f.basis
    assert "-1" in f.basis


def test_a_printed_state_index_without_a_pad_slot_is_no_mixed_batch_evidence():
    f = _first(_printed_log("ssm_state_indices right before the kernel: tensor([ 40,  41,  12, 13, ...], "
                            "device='cuda:0')"))
    assert "ssm_state_indices" not in f.basis


# ------------------------------------------------------------------------------------------------
# a size mismatch of the first dimension in a hybrid builder during a step: the batch's rows counted two
# ways (a mixed batch), even with prefix caching on; the second dimension is the state index's width
# ------------------------------------------------------------------------------------------------

def _dim_log(dim: int, capture: bool = False) -> str:
    w = "(Worker_TP0 pid=733) ERROR 11-12 08:03:51 [multiproc_executor.py:1055] "
    pkg = "/usr/local/lib/python3.12/dist-packages/vllm"
    outer = ([f'{w}  File "{pkg}/v1/worker/gpu_model_runner.py", line 4102, in capture_model',
              f"{w}    self._capture_cudagraphs(",
              f'{w}  File "{pkg}/v1/worker/gpu_model_runner.py", line 3901, in _dummy_run']
             if capture else [f'{w}  File "{pkg}/v1/worker/gpu_model_runner.py", line 4461, in execute_model'])
    return "\n".join([
        "vllm serve nvidia/NVIDIA-Nemotron-3-Super-120B-A12B -tp 4 --enable-prefix-caching --speculative-config "
        "'{\"method\": \"mtp\", \"num_speculative_tokens\": 3}'",
        f"{w}WorkerProc hit an exception.",
        f"{w}Traceback (most recent call last):",
        *outer,
        f"{w}    attn_metadata, spec_decode_common_attn_metadata = self._build_attention_metadata(",
        f'{w}  File "{pkg}/v1/attention/backends/mamba2_attn.py", line 140, in build',
        f"{w}    common = self._compute_common_metadata(",
        f'{w}  File "{pkg}/v1/attention/backends/mamba_attn.py", line 726, in _update_metadata_for_cudagraph_capture',
        f"{w}    self.decode_num_accepted_tokens[: metadata.num_decodes].copy_(",
        f"{w}RuntimeError: The size of tensor a (5) must match the size of tensor b (7) at non-singleton dimension {dim}",
    ])


def test_a_row_mismatch_in_a_hybrid_builder_during_a_step_is_a_mixed_batch():
    f = _first(_dim_log(0))
    assert f.category == "mixed_batch" and "first dimension" in f.basis


def test_a_row_mismatch_while_capturing_is_not_claimed_as_a_mixed_batch():
    assert _first(_dim_log(0, capture=True)).category != "mixed_batch"


def test_a_second_dimension_mismatch_stays_with_the_state_index_width():
    assert _first(_dim_log(1)).category != "mixed_batch"


# ------------------------------------------------------------------------------------------------
# PyTorch's boilerplate after any CUDA/HIP error ("Compile with `TORCH_USE_CUDA_DSA` to enable device-side
# assertions.") is no device-side assert; a build without this GPU's kernels is a near miss
# ------------------------------------------------------------------------------------------------

def _hip_log(error: str) -> str:
    e = "(EngineCore pid=18842) ERROR 07-06 20:41:23 [core.py:1165] "
    return "\n".join([
        "vllm serve ibm-granite/granite-4.0-h-tiny --speculative-config "
        "'{\"method\": \"ngram\", \"num_speculative_tokens\": 2, \"prompt_lookup_max\": 3}'",
        f"{e}EngineCore failed to start.",
        f"{e}Traceback (most recent call last):",
        f'{e}  File "/venv/lib/python3.12/site-packages/vllm/v1/worker/gpu_model_runner.py", line 5824, in _dummy_run',
        f"{e}    outputs = self.model(",
        f'{e}  File "/venv/lib/python3.12/site-packages/vllm/_custom_ops.py", line 320, in rms_norm',
        f"{e}    torch.ops._C.rms_norm(out, input, weight, epsilon)",
        f"{e}RuntimeError: {error}",
        f"{e}HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
        "might be incorrect.",
        f"{e}For debugging consider passing AMD_SERIALIZE_KERNEL=3",
        f"{e}Compile with `TORCH_USE_HIP_DSA` to enable device-side assertions.",
    ])


def test_a_build_without_the_gpus_kernels_is_a_near_miss_not_a_device_side_assert():
    f = _first(_hip_log("HIP error: invalid device function"))
    assert (f.category, f.rule) == ("other", "near_miss") and "GPU generation" in f.title


def test_the_dsa_boilerplate_does_not_make_an_error_asynchronous():
    from vllm_diag.postmortem.asyncfault import ASYNC

    assert not ASYNC.search("Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.")
    assert ASYNC.search("RuntimeError: CUDA error: device-side assert triggered")
    assert _first(_hip_log("HIP error: an illegal memory access was encountered")).rule == "async_fault"


# ------------------------------------------------------------------------------------------------
# vLLM 0.32+ aligns a hybrid's attention block so one page covers a Mamba/GDN state page; a backend that
# rejects the aligned size is the block-size alignment sibling (E), as "No common block size" is (labelled
# sets split 2:2 between A and E on it; E is the family the README names block-size alignment in)
# ------------------------------------------------------------------------------------------------

def test_an_aligned_hybrid_block_a_backend_rejects_is_a_block_size_alignment():
    e = "(EngineCore pid=40391) ERROR 12-01 16:20:02 [core.py:1584] "
    log = "\n".join([
        "vllm serve Qwen/Qwen3.5-27B --attention-backend B12X --max-model-len 65536",
        "(EngineCore pid=40391) INFO 12-01 16:20:02 [interface.py:1108] Setting attention block size to 1152 tokens "
        "to ensure that attention page size is >= mamba page size.",
        f"{e}EngineCore failed to start.",
        f"{e}Traceback (most recent call last):",
        f'{e}  File "/venv/lib/python3.12/site-packages/vllm/platforms/interface.py", line 794, in '
        "update_block_size_for_backend",
        f"{e}    cls._check_aligned_block_size(vllm_config, backend_classes, pre_block_size)",
        f'{e}  File "/venv/lib/python3.12/site-packages/vllm/platforms/interface.py", line 820, in '
        "_check_aligned_block_size",
        f"{e}    raise ValueError(",
        f"{e}ValueError: Aligned KV cache block size 1152 is not supported by attention backend(s): B12X.",
    ])
    f = _first(log)
    assert f.category == "block_size_alignment" and f.numbers.get("block_size") == 1152


def test_a_mamba_group_retargeted_to_another_block_table_is_a_block_table_mismatch_only_with_prefix_caching():
    # update_block_table compares the batch's requests with the state indices' rows; labelled sets split 4:3 between
    # D and B on it, and the split follows prefix caching: without it the state indices hold one row per request,
    # so the requests were counted two ways (D); with it the rows come through the block table (B)
    e = "(EngineCore_DP1 pid=5522) ERROR 07-02 16:48:55 [core.py:1348] "
    pkg = "/usr/local/lib/python3.12/dist-packages/vllm"
    log = "\n".join([
        "vllm serve nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B -dp 2 --speculative-config "
        "'{\"method\": \"ngram\", \"num_speculative_tokens\": 3, \"prompt_lookup_max\": 4}'",
        f"{e}Traceback (most recent call last):",
        f'{e}  File "{pkg}/v1/worker/gpu_model_runner.py", line 1960, in _build_attn_group_metadata',
        f"{e}    attn_metadata_i = builder.update_block_table(",
        f'{e}  File "{pkg}/v1/attention/backends/mamba_attn.py", line 412, in update_block_table',
        f"{e}    assert (",
        f"{e}AssertionError: Mismatch in number of requests when updating block table. Expected 7, got 8.",
    ])
    assert _first(log).category == "mixed_batch"
    assert _first(log.replace(" -dp 2 ", " -dp 2 --enable-prefix-caching ")).category == "state_index"


def test_a_linear_attention_builders_query_length_check_under_drafts_is_a_mixed_batch():
    # the check sits in build_for_cudagraph_capture but compares the batch's query length with 1 + k
    e = "(EngineCore_DP0 pid=77) ERROR 08-14 10:11:12 [core.py:1108] "
    log = "\n".join([
        "vllm serve inclusionAI/Ring-mini-linear-2.0 --speculative-config "
        "'{\"method\": \"eagle\", \"model\": \"x/ring-eagle\", \"num_speculative_tokens\": 2}'",
        f"{e}Traceback (most recent call last):",
        f'{e}  File "/venv/lib/python3.12/site-packages/vllm/v1/attention/backends/linear_attn.py", line 88, in '
        "build_for_cudagraph_capture",
        f"{e}    assert common_attn_metadata.max_query_len <= 1 + self.num_spec_tokens, (",
        f"{e}AssertionError: Bailing linear attention only supports speculative decoding with query length <= 1 + "
        "number of speculative tokens.",
    ])
    assert _first(log).category == "mixed_batch"


# ------------------------------------------------------------------------------------------------
# an excerpt cut after the raise statement of a kernel package's Python wrapper
# ------------------------------------------------------------------------------------------------

def _cut_at_raise(file: str, function: str, statement: str) -> str:
    """A worker's traceback pasted without its exception line: the last frame is a FlashInfer wrapper."""
    w = "(Worker_TP1 pid=733) ERROR 09-02 11:20:31 [multiproc_executor.py:703] "
    return "\n".join([
        "vllm serve deepseek-ai/DeepSeek-V3 -tp 8 --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'",
        f"{w}Traceback (most recent call last):",
        f'{w}  File "{SITE}/v1/worker/gpu_model_runner.py", line 3302, in execute_model',
        f"{w}    model_output = self._model_forward(",
        f'{w}  File "{SITE}/v1/attention/backends/mla/flashinfer_mla.py", line 188, in forward_mqa',
        f"{w}    o = trtllm_batch_decode_with_kv_cache_mla(",
        f'{w}  File "/opt/venv/lib/python3.12/site-packages/flashinfer/{file}", line 911, in {function}',
        f"{w}    {statement}",
    ])


def test_the_raise_statement_of_a_kernel_wrapper_names_its_site_without_the_exception_line():
    f = _first(_cut_at_raise("decode.py", "plan", 'raise ValueError("The size of indices should be less than or '
                                                  'equal to the allocated buffer")'))
    assert f.category == "cudagraph_shape" and "flashinfer/decode.py" in f.basis
    assert "excerpt ends before its exception line" in f.message


def test_the_raise_statements_message_tells_the_raises_of_one_function_apart():
    """One FlashInfer function raises ValueError for a block size and for a query length: the printed
    statement's template decides which."""
    block = _first(_cut_at_raise("mla/_core.py", "trtllm_batch_decode_with_kv_cache_mla",
                                 'raise ValueError(f"trtllm-gen requires block_size in (32, 64), got {block_size}")'))
    qlen = _first(_cut_at_raise("mla/_core.py", "trtllm_batch_decode_with_kv_cache_mla",
                                'raise ValueError(f"XQA MLA only supports q_len_per_request == 1, got {query.size(1)}")'))
    assert (block.category, qlen.category) == ("block_size_alignment", "spec_kernel_limit")
    assert "trtllm-gen requires block_size" in block.message and "q_len_per_request == 1" in qlen.message

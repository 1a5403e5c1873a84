"""Failure families of the hybrid / spec-decode classes, third part: what tells the mixed-batch class (D) from the
state-index class (B) in general -- a boolean mask of the step's rows, an assert on a tensor's rows, a state index
holding the builders' pad slot (PAD_SLOT_ID = -1), a prefill sharing a step with decodes in the reporter's words.

Every log here is written by the tests in vLLM's format (process prefixes, the engine's traceback, the serve
command); models, numbers and paths are the tests' own.
"""

from __future__ import annotations

import pytest

from vllm_diag.catalog.categorize import categorize
from vllm_diag.postmortem.analyze import analyze_text

E = "(EngineCore_DP0 pid=3310) ERROR 07-14 09:12:44 [core.py:1120] "
W = "(Worker_TP1 pid=3412) ERROR 07-14 09:12:44 [multiproc_executor.py:902] "
SITE = "/usr/local/lib/python3.12/dist-packages/vllm"


def _first(log: str):
    fs = [f for f in analyze_text(log, "t.log").findings if f.severity == "error"]
    assert fs, "no finding"
    assert fs[0].confidence in ("high", "medium", "low") and fs[0].basis
    return fs[0]


# ------------------------------------------------------------------------------------------------
# a boolean mask of the wrong length inside a hybrid builder: the step's rows counted two ways
# ------------------------------------------------------------------------------------------------

def _mask_log(statement: str) -> str:
    return "\n".join([
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 2 --speculative-config "
        "'{\"method\": \"qwen3_next_mtp\", \"num_speculative_tokens\": 2}'",
        f"{W}WorkerProc hit an exception.",
        f"{W}Traceback (most recent call last):",
        f'{W}  File "{SITE}/v1/worker/gpu_model_runner.py", line 1733, in _build_attention_metadata',
        f"{W}    attn_metadata_i = builder.build(",
        f'{W}  File "{SITE}/v1/attention/backends/gdn_attn.py", line 402, in build',
        f"{W}    {statement}",
        f"{W}IndexError: The shape of the mask [5] at index 0 does not match the shape of the indexed tensor [6] at "
        "index 0",
    ])


def test_a_mask_row_mismatch_in_a_hybrid_builder_is_the_mixed_batch_even_over_state_indices():
    # the masked tensor holds state indices (the block table's first column); the mask is per row of the batch
    f = _first(_mask_log("non_spec_state_indices_tensor = block_table_tensor[non_spec_sequence_masks_cpu, 0]"))
    assert f.category == "mixed_batch"
    f = _first(_mask_log("spec_query_lens_cpu = query_lens_cpu[spec_sequence_masks_cpu]"))
    assert f.category == "mixed_batch"


def test_the_mask_rule_keeps_index_errors_of_states_in_the_state_index_class():
    site = {"file": "vllm/v1/attention/backends/gdn_attn.py", "function": "GDNAttentionMetadataBuilder.build",
            "exc": "IndexError", "condition": "non_spec_state_indices_tensor = block_table_tensor[:, 0]",
            "message": "index 9 is out of bounds for dimension 0 with size 8"}
    assert categorize(site)[0] == "state_index"
    site["message"] = "The shape of the mask [7] at index 0 does not match the shape of the indexed tensor [9] at index 0"
    assert categorize(site) == ("mixed_batch", "hybrid_mask_rows")
    # the same torch message outside Mamba/GDN code is not the family's
    site["file"] = "vllm/v1/sample/sampler.py"
    site["function"] = "Sampler.forward"
    assert categorize(site)[0] != "mixed_batch"


# ------------------------------------------------------------------------------------------------
# an assert on a tensor's rows in a linear-attention decode path under drafts
# ------------------------------------------------------------------------------------------------

def _rows_assert_log(spec: bool, prefix_caching: bool = False) -> str:
    cmd = "vllm serve MiniMaxAI/MiniMax-M1-40k -tp 8 --trust-remote-code"
    if spec:
        cmd += " --speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 2, \"prompt_lookup_max\": 4}'"
    if prefix_caching:
        cmd += " --enable-prefix-caching"
    return "\n".join([
        cmd,
        "[rank3]: Traceback (most recent call last):",
        f'[rank3]:   File "{SITE}/model_executor/models/minimax_text_01.py", line 360, in _forward',
        "[rank3]:     hidden = self._decode_infer(q, k, v, kv_cache, state_indices_tensor, attn_metadata)",
        f'[rank3]:   File "{SITE}/model_executor/models/minimax_text_01.py", line 402, in _decode_infer',
        "[rank3]:     hidden = linear_decode_forward_triton(q, k, v, kv_cache, self.tp_slope, slot_id, 32)",
        f'[rank3]:   File "{SITE}/model_executor/layers/lightning_attn.py", line 590, in linear_decode_forward_triton',
        "[rank3]:     assert slot_idx.shape[0] == B",
        "[rank3]: AssertionError",
        f"{E}RuntimeError: Worker failed with error '', please check the stack trace above for the root cause",
    ])


def test_a_rows_assert_in_a_linear_attention_decode_under_drafts_is_the_mixed_batch():
    f = _first(_rows_assert_log(spec=True))
    assert f.category == "mixed_batch"
    assert "linear_decode_forward_triton" in f.title


def test_a_rows_assert_without_drafts_is_not_the_spec_decode_mixed_batch():
    f = _first(_rows_assert_log(spec=False))
    assert f.category != "mixed_batch"


# ------------------------------------------------------------------------------------------------
# an asynchronous fault with the reporter's evidence: a state index holding the pad slot, a prefill next to decodes
# ------------------------------------------------------------------------------------------------

def _async_log(*prose: str) -> str:
    return "\n".join([
        "Running Zyphra/Zamba2-7B-Instruct (Mamba2 hybrid) with an EAGLE draft, num_speculative_tokens 2, vllm 0.27.0.",
        f"{E}EngineCore encountered a fatal error.",
        f"{E}Traceback (most recent call last):",
        f'{E}  File "{SITE}/v1/worker/gpu_model_runner.py", line 3022, in sample_tokens',
        f"{E}    valid_sampled_token_ids = self._to_list(sampled_token_ids)",
        f'{E}  File "{SITE}/v1/worker/gpu_model_runner.py", line 5190, in _to_list',
        f"{E}    self.transfer_event.synchronize()",
        f"{E}torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
        *prose,
    ])


def test_an_async_fault_alone_keeps_the_state_index_prior():
    assert _first(_async_log()).category == "state_index"


def test_a_printed_state_index_holding_the_pad_slot_is_the_mixed_batch():
    # vLLM's Mamba/GDN builders pad the decode state indices past num_decodes with PAD_SLOT_ID (-1) for the CUDA-graph
    # batch and the kernels skip those rows: a -1 reaching a kernel is a row of the batch split, not a stale block
    f = _first(_async_log("Debug print in the decode branch before the crash:",
                          "    ssm_state_batch_indices = tensor([[ 93], [  7], [ -1], [ 51]], device='cuda:0', "
                          "dtype=torch.int32)"))
    assert f.category == "mixed_batch"
    assert "-1" in f.basis


@pytest.mark.parametrize("words", [
    "It only dies while a long prompt is prefilling alongside the decoding requests.",
    "Seems to happen when a prefill and decodes land together.",
    "The crash needs one request still prefilling (chunked) and two others decoding with drafts.",
    "Only crashes on mixed prefill/decode steps.",
    "It needs steps that contain both prefills and spec decodes.",
    "It crashes whenever a prefill chunk is scheduled in the same step as the decode requests.",
])
def test_a_prefill_sharing_the_step_with_decodes_is_the_mixed_batch(words):
    assert _first(_async_log(words)).category == "mixed_batch"


def test_prefill_and_decode_instances_are_not_a_mixed_batch():
    # disaggregated serving: prefill and decode instances are separate engines, never one batch
    f = _first(_async_log("Deployed as disaggregated serving, it fails when a prefill and decode instances restart."))
    assert f.category == "state_index"


# ------------------------------------------------------------------------------------------------
# a dense model's decode kernel under drafts with decodes of different query lengths (the kernels' uniform limit)
# ------------------------------------------------------------------------------------------------

def _dense_fault_log(printed: str) -> str:
    return "\n".join([
        "vllm serve mistralai/Mistral-Small-24B-Instruct-2501 --max-num-seqs 16 --speculative-config "
        "'{\"method\": \"eagle\", \"model\": \"some-org/eagle-head\", \"num_speculative_tokens\": 2}'",
        f"{E}Traceback (most recent call last):",
        f'{E}  File "{SITE}/v1/attention/backends/flashinfer.py", line 1544, in forward',
        f"{E}    trtllm_batch_decode_with_kv_cache(",
        f"{E}torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
        printed,
    ])


def test_uneven_decode_counters_under_drafts_are_the_kernel_limit():
    # vLLM's TRTLLM decode needs num_decode_tokens % num_decodes == 0 (one query length per request)
    f = _first(_dense_fault_log("print before the call: num_decode_tokens=41 num_decodes=16"))
    assert f.category == "spec_kernel_limit"
    assert "41" in f.basis


def test_even_decode_counters_say_nothing_about_the_kernel_limit():
    f = _first(_dense_fault_log("print before the call: num_decode_tokens=48 num_decodes=16"))
    assert f.category == "other"


# ------------------------------------------------------------------------------------------------
# a buffer of max_num_batched_tokens rows against max_num_seqs decodes of 1 + k tokens
# ------------------------------------------------------------------------------------------------

def _budget_log(seqs: int, budget: int, k: int, big: int) -> str:
    return "\n".join([
        f"vllm serve google/gemma-3-12b-it --max-num-seqs {seqs} --max-num-batched-tokens {budget} --speculative-config "
        f"'{{\"method\": \"ngram\", \"num_speculative_tokens\": {k}, \"prompt_lookup_max\": 3}}'",
        f"{E}Traceback (most recent call last):",
        f'{E}  File "{SITE}/v1/spec_decode/eagle.py", line 402, in propose',
        f"{E}    self.input_ids[:num_tokens].copy_(target_token_ids)",
        f"{E}RuntimeError: The expanded size of the tensor ({budget}) must match the existing size ({big}) at "
        f"non-singleton dimension 0.  Target sizes: [{budget}].  Tensor sizes: [{big}]",
    ])


def test_a_token_buffer_of_the_budget_overrun_by_the_drafts_is_the_token_budget():
    f = _first(_budget_log(300, 1024, 3, 1100))  # 300 x (1 + 3) = 1200 > 1024
    assert f.category == "token_budget"
    assert f.numbers.get("max_num_batched_tokens") == 1024


def test_sizes_the_drafts_cannot_reach_are_not_the_token_budget():
    # 300 x (1 + 3) = 1200 tokens at most: a step of 1300 is not the drafts' doing
    assert _first(_budget_log(300, 1024, 3, 1300)).category != "token_budget"
    # max_num_seqs x (1 + k) within the budget (256 x 4 = 1024): decodes never overrun it
    assert _first(_budget_log(256, 1024, 3, 1100)).category != "token_budget"


# ------------------------------------------------------------------------------------------------
# a zero prefix-cache hit rate with a block of thousands of tokens
# ------------------------------------------------------------------------------------------------

def _hits_log(block: int) -> str:
    stats = ("(APIServer pid=51) INFO 07-14 10:02:{s:02d} [loggers.py:259] Engine 000: Avg prompt throughput: 812.0 "
             "tokens/s, Avg generation throughput: 120.4 tokens/s, Running: 6 reqs, Waiting: 0 reqs, GPU KV cache "
             "usage: 9.8%, Prefix cache hit rate: 0.0%")
    return "\n".join([
        f"vllm serve ibm-granite/granite-4.0-h-small --enable-prefix-caching --block-size {block}",
        stats.format(s=10), stats.format(s=20),
    ])


def test_a_zero_hit_rate_with_a_large_block_is_the_degraded_prefix_cache():
    fs = analyze_text(_hits_log(1568), "t.log").findings
    assert any(f.category == "prefix_cache_degraded" and "1568" in f.title for f in fs)


def test_a_zero_hit_rate_over_two_lines_with_a_small_block_is_not_a_finding():
    fs = analyze_text(_hits_log(16), "t.log").findings
    assert not any(f.category == "prefix_cache_degraded" for f in fs)


def test_features_named_together_are_not_a_mixed_batch():
    # the set-up (chunked prefill on, speculative decoding on) says nothing about what one step holds
    for words in ("It crashes when chunked prefill and speculative decoding are both enabled.",
                  "Chunked prefill while spec decoding is on: crash after a few minutes."):
        assert _first(_async_log(words)).category == "state_index", words


def test_the_token_budget_overrun_in_other_torch_wordings():
    for msg in ("IndexError: index 1100 is out of bounds for dimension 0 with size 1024",
                "RuntimeError: shape mismatch: value tensor of shape [1100] cannot be broadcast to indexing result of "
                "shape [1024]"):
        log = _budget_log(300, 1024, 3, 1100).rsplit("\n", 1)[0] + f"\n{E}{msg}"
        assert _first(log).category == "token_budget", msg
    # an index past a buffer that is not the budget's
    log = _budget_log(300, 1024, 3, 1100).rsplit("\n", 1)[0] + f"\n{E}IndexError: index 1100 is out of bounds for " \
        "dimension 0 with size 1000"
    assert _first(log).category != "token_budget"


def test_uneven_decode_counters_in_a_dense_decode_frame_with_the_model_unnamed():
    log = "\n".join(_dense_fault_log("num_decode_tokens=19 num_decodes=6").splitlines()[1:])
    log = "Speculative decoding with EAGLE, k=2, crashes under load.\n" + log
    assert _first(log).category == "spec_kernel_limit"


def test_a_zero_hit_rate_with_the_block_vllm_raised_for_the_mamba_page():
    log = "\n".join([_hits_log(16).splitlines()[0].replace(" --block-size 16", ""),
                     "(EngineCore_DP0 pid=60) INFO 07-14 10:01:00 [config.py:212] Setting attention block size to 1056 "
                     "tokens to ensure that attention page size is >= mamba page size.",
                     *_hits_log(16).splitlines()[1:]])
    fs = analyze_text(log, "t.log").findings
    assert any(f.category == "prefix_cache_degraded" and "1056" in f.title for f in fs)


def test_a_pad_slot_in_a_state_index_printed_with_a_colon():
    f = _first(_async_log("conv_state_indices: tensor([ 12, -1, 40, -1], device='cuda:0', dtype=torch.int32)"))
    assert f.category == "mixed_batch"


def _drafter_log(method: str, prefix_caching: bool) -> str:
    return "\n".join([
        "vllm serve tiiuae/Falcon-H1-7B-Instruct --max-num-seqs 32"
        + (" --enable-prefix-caching" if prefix_caching else " --no-enable-prefix-caching")
        + f" --speculative-config '{{\"method\": \"{method}\", \"num_speculative_tokens\": 3}}'",
        *_async_log().splitlines()[1:],
    ])


def test_a_variable_length_drafter_on_a_hybrid_points_at_the_mixed_batch():
    # n-gram / suffix drafters propose nothing where nothing matches: the builders split every loaded step into
    # spec decodes and plain decodes (num_decode_draft_tokens >= 0)
    assert _first(_drafter_log("ngram", False)).category == "mixed_batch"
    assert _first(_drafter_log("suffix", False)).category == "mixed_batch"


def test_fixed_length_drafters_or_prefix_caching_keep_the_state_index_prior():
    assert _first(_drafter_log("mtp", False)).category == "state_index"
    assert _first(_drafter_log("ngram", True)).category == "state_index"

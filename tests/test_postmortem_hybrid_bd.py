"""Families B (Mamba/GDN state indices and block bookkeeping) and D (hybrid builders on mixed batches) as failure
classes: what a check compares, where it is, and what the configuration makes possible decide; near misses of the
same shape stay ``other``.

Every log here is written by the tests in vLLM's format (process prefixes, the engine's traceback, config lines);
models, numbers and paths differ from any report.
"""

from __future__ import annotations

import pytest

from vllm_diag.postmortem.analyze import analyze_text
from vllm_diag.postmortem.kvtransfer import kv_transfer_facts, truncates_hybrid_prompts

E = "(EngineCore_DP0 pid=4417) ERROR 11-26 09:14:02 [core.py:1021] "
PKG = "/opt/venv/lib/python3.11/site-packages/vllm/"


def _tb(frames: list[tuple[str, int, str, str]], exc: str, prefix: str = E) -> list[str]:
    out = [f"{prefix}EngineCore encountered a fatal error.", f"{prefix}Traceback (most recent call last):"]
    for path, line, fn, code in frames:
        out += [f'{prefix}  File "{path}", line {line}, in {fn}', f"{prefix}    {code}"]
    return out + [f"{prefix}{exc}"]


def _diag(log: str) -> dict:
    res = analyze_text(log, "t.log")
    fs = [f for f in res.findings if f.severity == "error"]
    assert fs, "no finding"
    f = fs[0]
    assert f.confidence in ("high", "medium", "low") and f.basis
    return {"category": f.category, "confidence": f.confidence, "basis": f.basis, "title": f.title}


# ------------------------------------------------------------------------------------------------
# B: a P/D connector truncating a hybrid prompt after the prefix-cache lookup (zero new tokens)
# ------------------------------------------------------------------------------------------------

_SCHED = [
    (PKG + "v1/engine/core.py", 402, "step", "scheduler_output = self.scheduler.schedule()"),
    (PKG + "v1/core/sched/scheduler.py", 858, "schedule", "assert num_new_tokens > 0"),
]


def _zero_new(cmd: str) -> str:
    return "\n".join([cmd, "(APIServer pid=4301) INFO 11-26 09:13:50 [api_server.py:1011] Starting vLLM API server 0 "
                      "on http://0.0.0.0:8100"] + _tb(_SCHED, "AssertionError"))


def test_kv_transfer_facts_read_every_form():
    assert kv_transfer_facts('--kv-transfer-config \'{"kv_connector": "NixlConnector", "kv_role": "kv_both"}\'') == {
        "kv_connector": "NixlConnector", "kv_role": "kv_both"}
    assert kv_transfer_facts("kv_transfer_config=KVTransferConfig(kv_connector='MooncakeConnector', engine_id='x', "
                             "kv_buffer_device='cuda', kv_role='kv_producer')") == {
        "kv_connector": "MooncakeConnector", "kv_role": "kv_producer"}
    multi = kv_transfer_facts('{"kv_connector":"MultiConnector","kv_role":"kv_both","kv_connector_extra_config":'
                              '{"connectors":[{"kv_connector":"NixlConnector","kv_role":"kv_both"},'
                              '{"kv_connector":"OffloadingConnector","kv_role":"kv_both"}]}}')
    assert multi["kv_connector"] == "MultiConnector,NixlConnector,OffloadingConnector"
    assert truncates_hybrid_prompts(multi["kv_connector"]) == "NixlConnector"
    assert truncates_hybrid_prompts("LMCacheConnectorV1") is None and truncates_hybrid_prompts(None) is None
    assert kv_transfer_facts("kv_connector: None") == {} and kv_transfer_facts("no transfer here") == {}


def test_zero_new_tokens_with_a_truncating_pd_connector_on_a_hybrid_is_state_index():
    d = _diag(_zero_new("vllm serve ibm-granite/granite-4.0-h-small --enable-prefix-caching --port 8100 "
                        "--kv-transfer-config '{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}'"))
    assert d["category"] == "state_index" and d["confidence"] == "medium"
    assert "NixlConnector" in d["basis"] and "truncat" in d["title"]


def test_zero_new_tokens_model_unknown_is_low_and_says_so():
    # an excerpt: the prefill worker's YAML and the bare assertion, no model
    log = "\n".join(["kv_transfer_config:", "  kv_connector: MooncakeConnector", "  kv_role: kv_producer", ""]
                    + _tb(_SCHED, "AssertionError", prefix="(EngineCore_DP0 pid=77) "))
    d = _diag(log)
    assert d["category"] == "state_index" and d["confidence"] == "low"
    assert "does not name the model" in d["basis"]


@pytest.mark.parametrize("cmd", [
    # a dense model: the connector's own full external hit
    "vllm serve meta-llama/Llama-3.1-8B-Instruct --enable-prefix-caching "
    "--kv-transfer-config '{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_producer\"}'",
    # a connector that loads external KV (LMCache): its accounting, not a truncation, whatever the model
    "vllm serve tiiuae/Falcon-H1-7B-Instruct --enable-prefix-caching "
    "--kv-transfer-config '{\"kv_connector\":\"LMCacheConnectorV1\",\"kv_role\":\"kv_both\"}'",
    # the decode side loads, it does not truncate
    "vllm serve tiiuae/Falcon-H1-7B-Instruct --enable-prefix-caching "
    "--kv-transfer-config '{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_consumer\"}'",
    # no connector at all
    "vllm serve tiiuae/Falcon-H1-7B-Instruct --enable-prefix-caching",
    # prefix caching off: no hit for the truncation to meet
    "vllm serve tiiuae/Falcon-H1-7B-Instruct --no-enable-prefix-caching "
    "--kv-transfer-config '{\"kv_connector\":\"MooncakeConnector\",\"kv_role\":\"kv_producer\"}'",
])
def test_zero_new_tokens_near_misses_stay_other(cmd):
    assert _diag(_zero_new(cmd))["category"] == "other"


# ------------------------------------------------------------------------------------------------
# B: a connector's block bookkeeping across the KV-cache groups of a hybrid
# ------------------------------------------------------------------------------------------------

def _connector_assert(code: str, cmd: str) -> str:
    frames = [
        (PKG + "v1/core/sched/scheduler.py", 712, "schedule", "self.connector.update_state_after_alloc("),
        (PKG + "distributed/kv_transfer/kv_connector/v1/lmcache_mp_connector.py", 388, "update_state_after_alloc",
         code),
    ]
    return "\n".join([cmd] + _tb(frames, "AssertionError"))


def test_connector_group_bookkeeping_on_a_hybrid_is_state_index():
    d = _diag(_connector_assert("assert len(group_blocks) >= num_hit_blocks",
                                "vllm serve nvidia/NVIDIA-Nemotron-Nano-12B-v2 --enable-prefix-caching "
                                "--kv-transfer-config '{\"kv_connector\":\"LMCacheMPConnector\",\"kv_role\":\"kv_both\"}'"))
    assert d["category"] == "state_index" and d["confidence"] == "medium"
    assert "KV-cache group" in d["basis"]


@pytest.mark.parametrize("code,cmd", [
    # the same check on a dense model: one group, another cause
    ("assert len(group_blocks) >= num_hit_blocks", "vllm serve Qwen/Qwen2.5-32B-Instruct --enable-prefix-caching"),
    # connector asserts about the transfer set-up, not block bookkeeping, on a hybrid
    ("assert remote_tp_size % self.tp_size == 0", "vllm serve nvidia/NVIDIA-Nemotron-Nano-12B-v2"),
    # the block-size handshake on a dense model, and on a hybrid whose block size the operator set
    ("assert self.block_size == remote_block_size", "vllm serve Qwen/Qwen2.5-32B-Instruct"),
    ("assert self.block_size == remote_block_size", "vllm serve nvidia/NVIDIA-Nemotron-Nano-12B-v2 --block-size 64"),
])
def test_connector_near_misses_stay_other(code, cmd):
    assert _diag(_connector_assert(code, cmd))["category"] == "other"


def _handshake(cmd: str, aligned: list[int]) -> str:
    frames = [
        (PKG + "distributed/kv_transfer/kv_connector/v1/nixl_connector.py", 1290, "_validate_remote_agent_handshake",
         "block_size_ratio = self.transfer_topo.block_size_ratio("),
        (PKG + "distributed/kv_transfer/kv_connector/utils.py", 502, "block_size_ratio",
         "assert self.block_size % remote_block_size == 0, ("),
    ]
    wp = "(Worker_TP0 pid=311) "
    lines = [cmd] + [f"{wp}INFO 11-26 09:12:0{i} [interface.py:649] Setting attention block size to {b} tokens to ensure "
                     "that attention page size is >= mamba page size." for i, b in enumerate(aligned)]
    return "\n".join(lines + _tb(frames, f"AssertionError: Local block size {aligned[-1]} is not divisible by remote "
                                         f"block size {aligned[0]} or vice versa.", prefix=wp + "ERROR 11-26 09:14:02 "
                                         "[worker.py:767] "))


def test_pd_instances_with_different_aligned_block_sizes_are_the_alignment_sibling():
    conn = "--kv-transfer-config '{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}'"
    d = _diag(_handshake(f"vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 {conn}", [400, 200]))
    assert d["category"] == "block_size_alignment" and d["confidence"] == "medium"
    assert "400, 200 tokens" in d["basis"]
    # the model unnamed: vLLM's alignment line says it has Mamba/GDN layers
    d = _diag(_handshake(f"vllm serve /models/ckpt -tp 4 {conn}", [200]))
    assert d["category"] == "block_size_alignment" and "chose 200 tokens" in d["basis"]


def _no_hma(cmd: str) -> str:
    return "\n".join([cmd] + _tb([
        (PKG + "distributed/kv_transfer/kv_transfer_state.py", 90, "ensure_kv_transfer_initialized",
         "_KV_CONNECTOR_AGENT = KVConnectorFactory.create_connector("),
        (PKG + "distributed/kv_transfer/kv_connector/factory.py", 57, "create_connector", "raise ValueError("),
    ], "ValueError: Connector MultiConnector does not support HMA but HMA is enabled. Please set "
       "`--disable-hybrid-kv-cache-manager`."))


def test_a_connector_without_hybrid_manager_support_on_a_hybrid_is_the_hybrid_kv_layout():
    """factory.py refuses a connector without hybrid-manager support while the manager is on; on a Mamba/GDN hybrid
    the flag it names only moves the failure to the page-size unification (family A). A dense model with sliding
    windows can take the flag: there it is the connector's capability, other."""
    conn = ("--kv-transfer-config '{\"kv_connector\":\"MultiConnector\",\"kv_role\":\"kv_both\",\"kv_connector_extra_"
            "config\":{\"connectors\":[{\"kv_connector\":\"NixlConnector\"},{\"kv_connector\":\"LMCacheConnectorV1\"}]}}'")
    d = _diag(_no_hma(f"vllm serve nvidia/NVIDIA-Nemotron-Nano-12B-v2 -tp 2 {conn}"))
    assert d["category"] == "kv_page_size" and "MultiConnector" in d["title"] and "page-size unification" in d["basis"]
    assert _diag(_no_hma(f"vllm serve openai/gpt-oss-120b -tp 2 {conn}"))["category"] == "other"


# ------------------------------------------------------------------------------------------------
# an asynchronous fault that surfaced on the speculative-decoding branch of a hybrid builder
# ------------------------------------------------------------------------------------------------

WP = "(Worker_PP1_TP0 pid=991) ERROR 11-26 10:02:17 [multiproc_executor.py:744] "


def _ima_in_builder(code: str, fn_file: str = "mamba_attn.py") -> str:
    frames = [
        (PKG + "v1/worker/gpu_model_runner.py", 2702, "_build_attention_metadata", "attn_metadata_i = builder.build("),
        (PKG + "v1/attention/backends/" + fn_file, 311, "build", code),
        (PKG + "utils/torch_utils.py", 604, "async_tensor_h2d", "t = data.pin_memory() if PIN_MEMORY else data"),
    ]
    return "\n".join([f"{WP}torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
                      f"{WP}CUDA kernel errors might be asynchronously reported at some other API call, so the "
                      "stacktrace below might be incorrect."]
                     + _tb(frames, "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
                           prefix=WP)[1:])


def test_spec_branch_of_a_builder_shows_speculative_decoding():
    from vllm_diag.postmortem.configuration import read_setup
    from vllm_diag.postmortem.reader import facts_from_text

    facts = facts_from_text(_ima_in_builder("spec_query_start_loc = async_tensor_h2d(spec_qsl_cpu, device)"))
    setup = read_setup(facts, facts.root)
    assert setup.spec_k != 0 and any("its branch ran" in w for w in setup.why)
    # statements every path runs say nothing
    for code in ("spec_sequence_masks = None", "if spec_sequence_masks is not None:", "num_spec_decodes = 0",
                 "attn_metadata, spec_decode_common_attn_metadata = self._build_attention_metadata(",
                 "self.num_accepted_tokens = self._make_buffer(self.max_num_reqs, dtype=torch.int64)"):
        facts = facts_from_text(_ima_in_builder(code))
        assert read_setup(facts, facts.root).spec_k == 0


def test_async_fault_on_the_spec_branch_of_a_hybrid_builder_is_a_family():
    d = _diag(_ima_in_builder("spec_state_indices_tensor = async_tensor_h2d(spec_idx_cpu, device)"))
    assert d["category"] == "state_index" and d["confidence"] == "low"
    assert "asynchronously" in d["basis"] and "branch ran" in d["basis"]


def test_async_fault_on_a_path_every_batch_runs_stays_other():
    assert _diag(_ima_in_builder("query_start_loc_cpu = common_attn_metadata.query_start_loc_cpu"))["category"] == "other"


# ------------------------------------------------------------------------------------------------
# D: a negative accepted-token count (a spec-decode row that sampled nothing) reaching the metrics
# ------------------------------------------------------------------------------------------------

A = "(APIServer pid=2290) ERROR 11-26 10:40:05 [async_llm.py:561] "


def _counter(cmd: str, frames: list[tuple[str, int, str, str]] | None) -> str:
    lines = [cmd]
    if frames:
        lines += [f"{A}AsyncLLM output_handler failed.", f"{A}Traceback (most recent call last):"]
        for path, line, fn, code in frames:
            lines += [f'{A}  File "{path}", line {line}, in {fn}', f"{A}    {code}"]
    lines.append(f"{A}ValueError: Counters can only be incremented by non-negative amounts.")
    return "\n".join(lines)


_SPEC_COUNTER = [
    (PKG + "v1/metrics/loggers.py", 1288, "record", "self.spec_decoding_prom.observe("),
    (PKG + "v1/spec_decode/metrics.py", 276, "observe", "self.counter_spec_decode_num_accepted_tokens[engine_idx].inc("),
    ("/opt/venv/lib/python3.11/site-packages/prometheus_client/metrics.py", 313, "inc",
     "raise ValueError('Counters can only be incremented by non-negative amounts.')"),
]
_PROMPT_COUNTER = [
    (PKG + "v1/metrics/loggers.py", 1266, "record", "self.counter_prompt_tokens_by_source[source][engine_idx].inc("),
    ("/opt/venv/lib/python3.11/site-packages/prometheus_client/metrics.py", 313, "inc",
     "raise ValueError('Counters can only be incremented by non-negative amounts.')"),
]
_NEMO = "vllm serve nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B --max-num-seqs 48"


def test_negative_accepted_count_on_a_hybrid_with_spec_is_mixed_batch():
    d = _diag(_counter(_NEMO + " --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'",
                       _SPEC_COUNTER))
    assert d["category"] == "mixed_batch" and d["confidence"] == "medium"
    assert "num_accepted" in d["basis"]


def test_negative_accepted_count_without_frames_spec_unstated_is_low():
    d = _diag(_counter("MODEL=Qwen/Qwen3-Next-80B-A3B-Thinking\n[... excerpt gap ...]", None))
    assert d["category"] == "mixed_batch" and d["confidence"] == "low"


@pytest.mark.parametrize("cmd,frames", [
    # a dense model with EAGLE: a spec-decode bookkeeping fault, not a hybrid family
    ("vllm serve meta-llama/Llama-3.3-70B-Instruct --speculative-config "
     "'{\"method\": \"eagle3\", \"model\": \"yuhuili/EAGLE3-LLaMA3.3-Instruct-70B\", \"num_speculative_tokens\": 3}'",
     _SPEC_COUNTER),
    # the prompt-token counters on a hybrid: a cache's accounting
    (_NEMO + " --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'", _PROMPT_COUNTER),
])
def test_negative_counter_near_misses_stay_other(cmd, frames):
    assert _diag(_counter(cmd, frames))["category"] == "other"


# ------------------------------------------------------------------------------------------------
# asynchronous faults: a hybrid with prefix caching, device-side asserts of Mamba/GDN kernels
# ------------------------------------------------------------------------------------------------

_IMA = f"{E}torch.AcceleratorError: CUDA error: an illegal memory access was encountered"


def test_async_fault_on_a_hybrid_with_prefix_caching_is_state_index():
    log = "\n".join(["vllm serve ibm-granite/granite-4.0-h-small --enable-prefix-caching --mamba-cache-mode all "
                     "--max-num-seqs 32", "[... excerpt gap ...]", _IMA])
    d = _diag(log)
    assert d["category"] == "state_index" and d["confidence"] == "low" and "prefix caching" in d["basis"]


def test_async_fault_on_a_hybrid_without_prefix_caching_or_drafts_stays_other():
    log = "\n".join([
        "(EngineCore_DP0 pid=31) INFO 11-26 08:59:00 [core.py:93] Initializing a V1 LLM engine (v0.27.0) with config: "
        "model='tiiuae/Falcon-H1-7B-Instruct', speculative_config=None, enable_prefix_caching=False",
        "(APIServer pid=30) INFO 11-26 08:58:58 [utils.py:253] non-default args: {'model': "
        "'tiiuae/Falcon-H1-7B-Instruct', 'enable_prefix_caching': False}", _IMA])
    assert _diag(log)["category"] == "other"


def _device_assert(cmd: str, where: str, cond: str) -> str:
    return "\n".join([cmd, f"{where}: block: [5,0,0], thread: [64,0,0] Assertion `{cond}` failed.",
                      f"{E}RuntimeError: CUDA error: device-side assert triggered"])


_SSM = PKG + "model_executor/layers/mamba/ops/mamba_ssm.py:221: _selective_scan_update_kernel"
_NEMO_MTP = _NEMO + " --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 3}'"


def test_device_assert_of_a_non_negative_state_slot_under_spec_is_mixed_batch():
    d = _diag(_device_assert(_NEMO_MTP, _SSM, "state_batch_idx >= 0"))
    assert d["category"] == "mixed_batch" and d["confidence"] == "medium" and "num_accepted - 1" in d["basis"]


def test_device_assert_upper_bound_or_outside_mamba_is_not_mixed_batch():
    # an upper bound on the state slot: the state indices themselves (B), not a row without drafts
    assert _diag(_device_assert(_NEMO_MTP, _SSM, "state_batch_idx < num_state_slots"))["category"] == "state_index"
    # a non-negativity assert in the sampler: outside the families
    sampler = "/pytorch/aten/src/ATen/native/cuda/MultinomialKernel.cu:88: sampleMultinomialOnce"
    assert _diag(_device_assert(_NEMO_MTP, sampler, "sum >= 0"))["category"] == "other"


# ------------------------------------------------------------------------------------------------
# D vs CUDA-graph padding: under speculative decoding a step carries up to max_num_seqs x (1 + k) tokens
# ------------------------------------------------------------------------------------------------

def _split(total: int, sizes: list[int], seqs: int) -> str:
    frames = [(PKG + "model_executor/layers/mamba/gdn_linear_attn.py", 577, "_forward_core",
               "q_spec, q_rest = torch.split(mixed_qkv, [n_spec_tok, n_rest_tok], dim=0)")]
    return "\n".join([f"vllm serve Qwen/Qwen3.5-35B-A3B --max-num-seqs {seqs} --speculative-config "
                      "'{\"method\": \"ngram\", \"num_speculative_tokens\": 4, \"prompt_lookup_max\": 5}'"]
                     + _tb(frames, f"RuntimeError: split_with_sizes expects split_sizes to sum exactly to {total} "
                                   f"(input tensor's size at dimension 0), but got split_sizes={sizes}"))


def test_split_within_the_spec_token_budget_is_a_mixed_batch_not_padding():
    # 24 is a capture size above max_num_seqs (6) but within 6 x (1 + 4) = 30 tokens a real step carries
    d = _diag(_split(11, [24, 0], 6))
    assert d["category"] == "mixed_batch"


def test_split_above_the_spec_token_budget_is_padding():
    # 40 is a capture size above 6 x (1 + 4) = 30: only a padded graph batch has it
    d = _diag(_split(11, [40, 0], 6))
    assert d["category"] == "cudagraph_shape" and "1 + 4" in d["basis"]


def test_async_fault_under_structured_outputs_is_ragged_drafts_unless_prefix_caching_routes_the_states():
    base = "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 3}'"
    words = "About a third of our requests use a JSON schema (xgrammar); the others are free-form."
    assert _diag("\n".join([base, words, "", _IMA]))["category"] == "mixed_batch"
    assert _diag("\n".join([base + " --enable-prefix-caching --mamba-cache-mode align", words, "", _IMA]))[
        "category"] == "state_index"


@pytest.mark.parametrize("words", ["It only crashes when some requests get no ngram match.",
                                   "The dump shows 4 drafts for some reqs and none for others."])
def test_async_fault_with_requests_that_got_no_drafts_in_other_words_is_mixed_batch(words):
    base = "vllm serve nvidia/NVIDIA-Nemotron-Nano-9B-v2 --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'"
    assert _diag("\n".join([base, words, "", _IMA]))["category"] == "mixed_batch"


@pytest.mark.parametrize("printed", ["spec_state_indices_tensor.min()=-1  rows_with_neg=2/30",
                                     "num_decode_draft_tokens_cpu[:6]=[2, 2, 0, 2, 1, 2]"])
def test_async_fault_with_a_printed_negative_slot_or_ragged_drafts_is_mixed_batch(printed):
    base = "vllm serve Qwen/Qwen3.6-35B-A3B --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'"
    assert _diag("\n".join([base, "Debug print right before the fault:", printed, "", _IMA]))["category"] == "mixed_batch"


def test_async_fault_with_the_reporters_words_about_rows_without_drafts_is_mixed_batch():
    base = ["vllm serve Qwen/Qwen3.6-35B-A3B --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'"]
    words = ["It dies within minutes under load; adding logging shows the step before the fault had a row with zero "
             "accepted tokens next to rows that accepted both drafts."]
    assert _diag("\n".join(base + words + ["", _IMA]))["category"] == "mixed_batch"
    assert _diag("\n".join(base + ["", _IMA]))["category"] == "state_index"


# ------------------------------------------------------------------------------------------------
# an excerpt that stops inside the step's metadata building (no exception line)
# ------------------------------------------------------------------------------------------------

_MIDSTACK = [
    (PKG + "v1/worker/gpu_model_runner.py", 3391, "execute_model", "self._build_attention_metadata("),
    (PKG + "v1/worker/gpu_model_runner.py", 1844, "_build_attention_metadata",
     "_build_attn_group_metadata(kv_cache_gid, attn_gid, common_attn_metadata)"),
]


def _midstack(head: list[str]) -> str:
    lines = list(head)
    for path, line, fn, code in _MIDSTACK:
        lines += [f'{WP}  File "{path}", line {line}, in {fn}', f"{WP}    {code}"]
    return "\n".join(lines)


def _findings(log: str) -> list:
    return [f for f in analyze_text(log, "t.log").findings if f.severity == "error"]


def test_midstack_metadata_excerpt_of_a_hybrid_with_drafts_unstated_is_a_low_mixed_batch():
    log = _midstack(["FAILED tests/evals/test_accuracy.py::test_accuracy[granite-4.0-h-tiny-FP8] - AssertionError: "
                     "accuracy 0.02 below 0.61", "[... excerpt gap ...]"])
    fs = _findings(log)
    assert fs and fs[0].category == "mixed_batch" and fs[0].confidence == "low"
    assert "not stated" in fs[0].basis


def test_midstack_metadata_excerpt_without_drafts_or_of_a_dense_model_is_not_mixed_batch():
    no_spec = _midstack([
        "(EngineCore_DP0 pid=31) INFO 11-26 08:59:00 [core.py:93] Initializing a V1 LLM engine (v0.27.0) with config: "
        "model='ibm-granite/granite-4.0-h-tiny', speculative_config=None, enable_prefix_caching=False",
        "(APIServer pid=30) INFO 11-26 08:58:58 [utils.py:253] non-default args: {'model': "
        "'ibm-granite/granite-4.0-h-tiny'}"])
    assert all(f.category != "mixed_batch" for f in _findings(no_spec))
    dense = _midstack(["FAILED tests/evals/test_accuracy.py::test_accuracy[Llama-3.1-8B-Instruct-FP8]",
                       "[... excerpt gap ...]"])
    assert all(f.category != "mixed_batch" for f in _findings(dense))


# ------------------------------------------------------------------------------------------------
# an index past a buffer, re-raised by the engine client (its frames place nothing)
# ------------------------------------------------------------------------------------------------

def _client_reraise(llm_call: str, msg: str = "index 7 is out of bounds for dimension 1 with size 7") -> str:
    return "\n".join([llm_call, "Traceback (most recent call last):",
                      '  File "/home/me/bench/offline.py", line 31, in <module>',
                      "    results = engine.generate(batch, sp)",
                      f'  File "{PKG}v1/engine/core_client.py", line 271, in get_output',
                      "    raise self._format_exception(outputs) from None",
                      f"RuntimeError: Worker failed with error '{msg}', please check the stack trace above for the "
                      "root cause"])


def test_out_of_bounds_index_of_a_hybrid_with_drafts_is_placed_by_the_configuration():
    pc = _client_reraise('engine = LLM(model="tiiuae/Falcon-H1-34B-Instruct", enable_prefix_caching=True, '
                         'speculative_config={"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4})')
    d = _diag(pc)
    assert d["category"] == "state_index" and d["confidence"] == "low" and "no frame places it" in d["basis"]
    no_pc = _client_reraise('engine = LLM(model="tiiuae/Falcon-H1-34B-Instruct", enable_prefix_caching=False, '
                            'speculative_config={"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4})')
    assert _diag(no_pc)["category"] == "mixed_batch"


@pytest.mark.parametrize("call", [
    'engine = LLM(model="mistralai/Mistral-Small-3.2-24B-Instruct-2506", '
    'speculative_config={"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4})',
    'engine = LLM(model="tiiuae/Falcon-H1-34B-Instruct", enable_prefix_caching=True)',
])
def test_out_of_bounds_index_without_a_hybrid_with_drafts_is_not_a_family(call):
    res = analyze_text(_client_reraise(call), "t.log")
    assert all(f.category in ("other",) for f in res.findings if f.severity == "error")

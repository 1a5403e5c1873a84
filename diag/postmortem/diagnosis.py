"""A diagnosis (category, confidence, basis, evidence) and the helpers that fill one: the root error and
facts as evidence, the configuration's numbers, the frame lines, the crash-dump batch, the titles of the categories."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..catalog import vtuple
from ..model import Comparison, Evidence, Finding, LogException, LogFacts
from ..rules.other_common import exc_evidence as rule_exc_evidence, fact_evidence as rule_fact_evidence

if TYPE_CHECKING:
    from .configuration import Setup


@dataclass
class Diagnosis:
    category: str
    confidence: str  # high | medium | low
    basis: str
    title: str
    message: str
    numbers: dict[str, Any] = field(default_factory=dict)
    evidence: list[Evidence] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    site_id: str | None = None
    rule: str = "failure_site"
    severity: str = "error"  # "warning": a degradation the log shows without anything failing
    comparisons: list[Comparison] = field(default_factory=list)
    # read from the symptom the report states (wrong output, slower, acceptance, capacity): it leads over the rules'
    # notes about the configuration, which do not speak to that symptom
    answers_symptom: bool = False

    def finding(self) -> Finding:
        return Finding(rule=self.rule, category=self.category, title=self.title, severity=self.severity,
                       message=self.message, numbers=dict(self.numbers), evidence=list(self.evidence),
                       missing_evidence=list(self.missing), confidence=self.confidence, basis=self.basis,
                       comparisons=list(self.comparisons))


def exc_evidence(exc: LogException, frames: int = 2) -> list[Evidence]:
    return rule_exc_evidence(exc, frames, limit=500)


def log_version(facts: LogFacts) -> tuple | None:
    """The release the log names, as a comparable tuple; ``None`` when it names none."""
    return vtuple(facts.vllm_version) if facts.vllm_version else None


def fact_evidence(facts: LogFacts, *names: str) -> list[Evidence]:
    return rule_fact_evidence(facts, *names, limit=500)


def crash_near_miss(facts: LogFacts, title: str, basis: str, message: str, base_numbers: dict,
                    evidence: list[Evidence], missing: Sequence[str] = ()) -> Diagnosis:
    """A crash or device fault the log itself places outside the families (the driver's report, the reporter's A/B
    tests): ``other``, ``medium``, with the error's first line as its message."""
    return Diagnosis(category="other", confidence="medium", rule="near_miss", basis=basis, title=title,
                     message=(message.strip().splitlines() or [title])[0][:300], numbers={**base_numbers, **facts.numbers},
                     evidence=evidence, missing=list(missing))


def config_numbers(facts: LogFacts, setup: Setup) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in ("num_speculative_tokens", "max_num_seqs", "max_model_len", "max_num_batched_tokens", "block_size",
              "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "decode_context_parallel_size",
              "prefill_context_parallel_size", "gpu_memory_utilization", "max_cudagraph_capture_size",
              "mamba_block_size"):
        v = facts.args.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[k] = v
    if setup.spec_k > 0:
        out.setdefault("num_speculative_tokens", setup.spec_k)
    cc = facts.startup.get("compute_capability")
    if isinstance(cc, list) and len(cc) == 2:  # (as NVIDIA and vLLM's messages write it: 7.0, 8.9)
        out["compute_capability"] = float(f"{cc[0]}.{cc[1]}")
    return out


def frame_lines(facts: LogFacts) -> dict[str, int]:
    """file:function -> line of the innermost frames printed (root, or frames without an exception line):
    the line numbers tell the release apart and point at the failing statement."""
    out: dict[str, int] = {}
    excs = ([facts.root] if facts.root is not None else []) + [e for e in facts.exceptions if e.exc_type.startswith("(")]
    for e in excs:
        for fr in e.frames[-6:]:
            if fr.line:
                out.setdefault(f"{fr.file.rsplit('/', 1)[-1]}:{fr.function}", fr.line)
    return dict(list(out.items())[-12:])


def batch_numbers(batch: dict[str, Any] | None) -> dict[str, Any]:
    if not batch:
        return {}
    keys = ("num_reqs", "num_prefills", "num_decodes", "num_spec_decodes", "tokens_per_req", "spec_tokens_per_req",
            "total_num_scheduled_tokens", "num_computed_tokens")
    return {f"crash_batch_{k}": batch[k] for k in keys if batch.get(k) not in (None, [])}


# classes narrower than their category, named by the catalog rule that decided (vllm_diag.catalog.categorize)
_RULE_TITLES = {
    "quantized_kv_on_hybrid": "Quantized KV cache cannot be laid out for the hybrid model",
    "spec_decode_token_rows": "Spec-as-decode kernel needs the same 1 + k query tokens in every decode",
    "block_size_vs_token_budget": "KV block (raised for the Mamba state) larger than the step's token budget",
}


def title_of(cat: str, rule: str | None = None) -> str:
    if rule and rule.split(":")[-1] in _RULE_TITLES:
        return _RULE_TITLES[rule.split(":")[-1]]
    return {
        "kv_page_size": "Hybrid KV-cache layout: page sizes or KV-cache groups disagree",
        "state_index": "Mamba/GDN state index or block table mismatch",
        "spec_kernel_limit": "Attention kernel limit under speculative decoding",
        "mixed_batch": "Hybrid builder on a mixed decode / spec-decode batch",
        "cudagraph_shape": "CUDA-graph shape vs the batch",
        "block_size_alignment": "Block size vs kernel / hash alignment",
        "mamba_block_budget": "Mamba cache blocks vs max_num_seqs",
        "prefix_cache_degraded": "Prefix caching unavailable or degraded",
        "token_budget": "Speculative tokens vs the token budget",
        "other": "Failure outside the hybrid / spec-decode families",
    }.get(cat, cat)


def describe_batch(batch: dict) -> str:
    from .dump import describe

    return describe(batch)


def family_warning(facts: LogFacts, base_numbers: dict, category: str, confidence: str, *, basis: str, title: str,
                   message: str, evidence: tuple[str, ...], missing: list[str], numbers: dict | None = None) -> Diagnosis:
    """A no-error report read as one of the families from numbers the log holds (a warning: nothing failed)."""
    return Diagnosis(category=category, confidence=confidence, rule="failure_class", severity="warning", basis=basis,
                     title=title, message=message, numbers={**base_numbers, **facts.numbers, **(numbers or {})},
                     evidence=fact_evidence(facts, *evidence), missing=missing)

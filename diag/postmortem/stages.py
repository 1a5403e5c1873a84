"""Where in vLLM's step an excerpt failed (state copies, metadata building, capture, KV planning) and the
family that stage implies for a configuration; whether an excerpt ends at the failing statement."""

from __future__ import annotations

import re
from typing import Any

from ..model import LogException
from .configuration import Setup

_CALL_LINE = re.compile(r"^(?:[\w.\[\], ()*]+=\s*)?(?:await\s+)?(?:return\s+)?[\w.\[\]]+\($|\)\s*=|^\w[\w.]*\(.*\)$")


def ends_at_leaf(exc: LogException) -> bool:
    """The innermost frame printed is where it failed (its line is not a call into a further frame that an
    excerpt cut away): an indexing, an assert, a raise, arithmetic."""
    last = exc.last_frame
    if last is None:
        return False
    code = (last.code or "").strip()
    if not code:
        return False
    if code.startswith(("assert ", "raise ")):
        return True
    return not _CALL_LINE.search(code)


# where in vLLM's step a failure happened, and the family that stage implies for a configuration
_STAGES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"preprocess_mamba|postprocess_mamba|collect_mamba_copy|mamba_copy|copy_spec|precopy|"
                r"state_copy|_update_states.*mamba|mamba_utils", re.I), "state"),
    (re.compile(r"_build_attention_metadata|build_attn_metadata|attn_metadata|attention_metadata|\bbuild\b|"
                r"split_decodes|_prepare_inputs|prepare_inputs|_compute_spec|num_accepted", re.I), "metadata"),
    (re.compile(r"capture_model|_capture_cudagraphs|profile_cudagraph|_dummy_run|cudagraph|capture", re.I), "capture"),
    (re.compile(r"initialize_kv_cache|get_kv_cache_config|_initialize_kv_caches|unify_|get_kv_cache_groups|"
                r"may_reinitialize_input_batch|_reshape_kv_cache|_allocate_kv_cache", re.I), "kv_init"),
]


def stage_family(frames, setup: Setup, spec_unstated: bool = False) -> tuple[str, str, Any] | None:
    """The family a failure at this stage of the engine implies for this configuration (low confidence).
    ``spec_unstated``: the log does not state the configuration whole, so speculative decoding may be on."""
    stage, at = None, None
    for fr in reversed(list(frames)):
        for rx, name in _STAGES:
            if rx.search(f"{fr.function} {fr.file.rsplit('/', 1)[-1]}"):
                stage, at = name, fr
                break
        if stage:
            break
    hybrid, spec, mla = bool(setup.hybrid), setup.spec_k != 0, bool(setup.mla)
    batch = setup.batch or {}
    if stage is None and not frames:
        stage = "step"  # a crash dump: some step of serving
    if stage is None:
        return None
    if stage == "state" and hybrid:
        return "state_index", "while copying Mamba/GDN states between blocks", at
    if stage == "metadata" and spec and not hybrid and at is not None and re.search(
            r"/spec_decode/|propos|drafter|eagle", f"{at.file} {at.function}", re.I):
        # the drafter builds metadata for its own layers (MTP / EAGLE / draft heads are attention layers) for
        # a step of 1 + k query tokens per request: what fails there is an attention backend's limit
        return ("spec_kernel_limit", "while the drafter built the attention metadata of its layers for a multi-token "
                "draft step", at)
    if stage in ("metadata", "step") and hybrid and spec:
        if batch.get("mixed") or batch.get("ragged_drafts") or stage == "metadata":
            return "mixed_batch", "while building attention metadata for the step's batch", at
        return "state_index", "inside a step", at
    if stage == "metadata" and hybrid and not spec and spec_unstated:
        # the hybrid builders' checks under speculative decoding (decode vs spec-decode rows, accepted counts) are
        # the largest group of failure sites in their build() across vLLM's releases; with the drafts unstated
        # that is a guess the basis says
        return ("mixed_batch", "while building attention metadata for the step's batch (speculative decoding is "
                "not stated in the excerpt; the hybrid builders' checks there are mostly about spec-decode rows, so "
                "it is assumed)", at)
    if stage in ("metadata", "step") and mla and spec:
        return "spec_kernel_limit", "while building the MLA / indexer metadata of a multi-token decode", at
    if stage == "capture" and spec and mla:
        return "spec_kernel_limit", "during CUDA-graph capture/profiling with multi-token decode", at
    if stage == "capture" and hybrid:
        return "cudagraph_shape", "during CUDA-graph capture", at
    if stage == "kv_init" and hybrid:
        return "kv_page_size", "while planning the KV cache", at
    return None

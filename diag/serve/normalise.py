"""vLLM's argument names -> the normalised engine settings of ``vllm_diag.model.CONFIG_KEYS``.

``normalise_args(args)`` keeps only what the arguments set (vLLM's defaults are filled in later, per
version, by the pre-flight): direct settings, the speculative method / token count / draft model out
of ``--speculative-config`` (or the pre-0.10 flags), CUDA-graph settings out of
``--compilation-config`` and the legacy ``--cuda-graph-sizes``.
"""

from __future__ import annotations

from typing import Any

_DIRECT = (
    "model", "dtype", "kv_cache_dtype", "block_size", "mamba_block_size", "mamba_cache_mode", "mamba_ssm_cache_dtype",
    "max_model_len", "max_num_seqs", "max_num_batched_tokens", "enable_prefix_caching", "enable_chunked_prefill",
    "enforce_eager", "tensor_parallel_size", "pipeline_parallel_size", "gpu_memory_utilization",
)
# Extra (non-CONFIG_KEYS) settings the predictor and rules read.
_EXTRA = (
    "quantization", "trust_remote_code", "hf_overrides", "attention_backend", "max_cudagraph_capture_size",
    "data_parallel_size", "decode_context_parallel_size", "disable_hybrid_kv_cache_manager", "language_model_only",
    "num_gpu_blocks_override", "kv_cache_dtype_skip_layers", "revision", "tokenizer", "use_replayssm", "prefix_match_unit",
    "calculate_kv_scales", "kv_cache_memory_bytes",
)


def _speculative_method(spec: dict[str, Any]) -> str | None:
    method = spec.get("method")
    if method:
        return str(method)
    model = spec.get("model")
    if not model:
        return None
    low = str(model).lower()
    for key in ("eagle3", "eagle", "mtp", "medusa", "mlp_speculator"):
        if key in low:
            return key
    if low in ("ngram", "[ngram]"):
        return "ngram"
    return "draft_model"


def normalise_args(args: dict[str, Any]) -> dict[str, Any]:
    """vLLM dest names -> ``CONFIG_KEYS`` (+ a few extras); only what the arguments set."""
    out: dict[str, Any] = {}
    for key in _DIRECT + _EXTRA:
        if key in args and args[key] is not None:
            out[key] = args[key]
    if "block_size" in out:
        out["user_specified_block_size"] = True
    if isinstance(out.get("max_model_len"), int) and out["max_model_len"] < 0:
        out.pop("max_model_len")  # 'auto'
    if isinstance(out.get("kv_cache_memory_bytes"), str):  # human-readable in vLLM ('4K', '2G', '1.5g')
        from .parse import human_int  # (parse imports this module)

        try:
            out["kv_cache_memory_bytes"] = human_int(out["kv_cache_memory_bytes"])
        except ValueError:
            out.pop("kv_cache_memory_bytes")
    spec = args.get("speculative_config")
    if isinstance(spec, dict):
        out["speculative_config"] = spec
        method = _speculative_method(spec)
        if method:
            out["speculative_method"] = method
        if spec.get("num_speculative_tokens") is not None:
            out["num_speculative_tokens"] = spec["num_speculative_tokens"]
        if spec.get("model") and method not in ("ngram", "mtp", "suffix"):
            out["draft_model"] = spec["model"]
    elif args.get("speculative_model"):  # pre-0.10 flags
        out["speculative_method"] = _speculative_method({"model": args["speculative_model"]})
        out["draft_model"] = args["speculative_model"]
        if args.get("num_speculative_tokens") is not None:
            out["num_speculative_tokens"] = args["num_speculative_tokens"]
    comp = args.get("compilation_config")
    if isinstance(comp, dict):
        out["compilation_config"] = comp
        if comp.get("cudagraph_mode") is not None:
            out["cudagraph_mode"] = str(comp["cudagraph_mode"]).upper()
        if comp.get("cudagraph_capture_sizes") is not None:
            out["cudagraph_capture_sizes"] = sorted(int(x) for x in comp["cudagraph_capture_sizes"])
        if comp.get("max_cudagraph_capture_size") is not None:
            out["max_cudagraph_capture_size"] = int(comp["max_cudagraph_capture_size"])
    elif isinstance(comp, (int, str)) and str(comp).isdigit():
        out["optimization_level"] = int(comp)
    if args.get("cudagraph_capture_sizes"):
        out["cudagraph_capture_sizes"] = sorted(int(x) for x in args["cudagraph_capture_sizes"])
    elif args.get("cuda_graph_sizes"):
        out["cudagraph_capture_sizes"] = sorted(int(x) for x in args["cuda_graph_sizes"])
    if args.get("optimization_level") is not None:
        out["optimization_level"] = args["optimization_level"]
    return out

"""Version-gated hook points.

vLLM moves the names the probes need between releases; this module says, per version, where each
one lives. Covered:

* 0.17 - 0.32: KV planning in ``vllm.v1.core.kv_cache_utils`` (``get_kv_cache_groups``,
  ``unify_kv_cache_spec_page_size``); 0.33+: ``vllm.v1.core.kv_cache_planning`` (plus the
  pluggable ``get_kv_cache_groups_from_builder``). Both are looked up through module globals
  by their callers, so patching the home module reaches every caller -- including the worker's
  minimal profiling cache (0.19+), which imports ``get_kv_cache_groups`` inside the function.
* ``get_kv_cache_configs`` is imported by value into ``vllm.v1.engine.core``: instead of patching
  it there, ``EngineCore._initialize_kv_caches`` is wrapped (config, final groups, init errors).
* Model runner V1 (``vllm.v1.worker.gpu_model_runner.GPUModelRunner`` and the CPU/XPU subclasses
  that override methods; the CPU runner's ``initialize_kv_cache`` calls ``super()``, hence the
  re-entrancy guard in the handlers). ``initialize_kv_cache`` runs twice from 0.19 (a throwaway
  profiling cache first: ``is_profiling=True`` from 0.20, detected by the caller's frame in 0.19).
* Model runner V2 (``vllm.v1.worker.gpu.model_runner.GPUModelRunner``), default for supported
  architectures in 0.33 and for allow-listed ones from 0.22; needs Triton, so not on CPU builds.
"""

from __future__ import annotations

from typing import Any

from .common import HookPoint, install_points, version_tuple

V1_RUNNER = "vllm.v1.worker.gpu_model_runner"
V2_RUNNER = "vllm.v1.worker.gpu.model_runner"


def planning_module(version: str) -> str:
    return "vllm.v1.core.kv_cache_planning" if version_tuple(version) >= (0, 33, 0) else "vllm.v1.core.kv_cache_utils"


def planning_points(version: str, probe: Any) -> list[HookPoint]:
    mod = planning_module(version)
    points = [
        HookPoint(mod, "get_kv_cache_groups", probe.wrap_get_kv_cache_groups, "KV-cache groups and layer specs"),
        HookPoint(mod, "unify_kv_cache_spec_page_size", probe.wrap_unify, "page-size unification"),
    ]
    if version_tuple(version) >= (0, 33, 0):
        points.append(
            HookPoint(mod, "get_kv_cache_groups_from_builder", probe.wrap_get_kv_cache_groups,
                      "KV-cache groups from a custom KVCacheConfigBuilder", optional=True)
        )
    return points


def engine_points(version: str, probe: Any) -> list[HookPoint]:
    return [
        HookPoint("vllm.v1.engine.core", "EngineCore._initialize_kv_caches", probe.wrap_initialize_kv_caches,
                  "engine config, scheduler KV-cache config and init errors"),
        HookPoint("vllm.v1.executor.abstract", "Executor.__init__", probe.wrap_phase("init"),
                  "errors while the executor starts its workers", optional=True),
        HookPoint("vllm.v1.executor.abstract", "Executor.get_kv_cache_specs", probe.wrap_executor_specs,
                  "per-layer KV-cache specs before memory profiling", optional=True),
        HookPoint("vllm.v1.engine.core", "EngineCoreProc._process_input_queue", probe.wrap_idle_flush,
                  "the flush when the engine goes idle", optional=True),
        HookPoint("vllm.v1.engine.core", "EngineCore.shutdown", probe.wrap_flush_after,
                  "the flush at engine shutdown", optional=True),
        # called in the except of a failed step (0.10+), where the EngineCore sees its workers' failure
        HookPoint("vllm.v1.engine.core", "dump_engine_exception", probe.wrap_step_failure,
                  "step errors in the EngineCore, diagnosed at the failure", optional=True),
    ]


def config_points(version: str, probe: Any) -> list[HookPoint]:
    """Where the API server / LLM process builds the engine configuration (vLLM's validation)."""
    return [
        HookPoint("vllm.engine.arg_utils", "EngineArgs.create_engine_config", probe.wrap_config_build,
                  "configurations vLLM rejects", optional=True),
        # vLLM gives a stopping EngineCore a few seconds after SIGTERM, then kills it; once its
        # processes are gone this process diagnoses the engine if the EngineCore could not
        HookPoint("vllm.v1.engine.utils",
                  "CoreEngineProcManager.shutdown" if version_tuple(version) >= (0, 18, 0) else "CoreEngineProcManager.close",
                  probe.wrap_engine_stopped, "the engine's diagnosis when its EngineCore was killed first", optional=True),
    ]


def runner_points(version: str, probe: Any, is_cpu: bool) -> list[HookPoint]:
    points: list[HookPoint] = []
    classes = [(V1_RUNNER, "GPUModelRunner", False)]
    if is_cpu:
        classes.append(("vllm.v1.worker.cpu_model_runner", "CPUModelRunner", True))
    else:
        classes.append(("vllm.v1.worker.xpu_model_runner", "XPUModelRunner", True))
    for mod, cls, own_only in classes:
        points += [
            HookPoint(mod, f"{cls}.get_kv_cache_spec", probe.wrap_runner_kv_spec, "per-layer KV-cache specs (worker)",
                      optional=own_only, own_only=own_only),
            HookPoint(mod, f"{cls}.initialize_kv_cache", probe.wrap_runner_initialize_kv_cache,
                      "block tables and metadata-builder buffers", optional=own_only, own_only=own_only),
            HookPoint(mod, f"{cls}.execute_model", probe.wrap_execute_model, "per-step batch composition",
                      optional=own_only, own_only=own_only),
            HookPoint(mod, f"{cls}.sample_tokens", probe.wrap_sample_tokens,
                      "errors in a step's sampling and drafting (the step split in two)", optional=True,
                      own_only=own_only),
            HookPoint(mod, f"{cls}.load_model", probe.wrap_phase("init"), "model-load errors",
                      optional=True, own_only=own_only),
            HookPoint(mod, f"{cls}.capture_model", probe.wrap_runner_phase("capture"),
                      "CUDA-graph capture errors with the runner's shapes", optional=True, own_only=own_only),
            HookPoint(mod, f"{cls}.profile_run", probe.wrap_runner_phase("profile"),
                      "memory-profiling errors with the runner's shapes", optional=True, own_only=own_only),
            HookPoint(mod, f"{cls}.profile_cudagraph_memory", probe.wrap_runner_phase("profile"),
                      "CUDA-graph memory-profiling errors (0.19+)", optional=True, own_only=own_only),
        ]
    v = version_tuple(version)
    if not is_cpu and v >= (0, 17, 0):
        optional = v < (0, 22, 0)  # opt-in before 0.22: absent or unused is normal
        points += [
            HookPoint(V2_RUNNER, "GPUModelRunner.get_kv_cache_spec", probe.wrap_runner_kv_spec,
                      "per-layer KV-cache specs (model runner V2)", optional=optional),
            HookPoint(V2_RUNNER, "GPUModelRunner.initialize_kv_cache", probe.wrap_runner_initialize_kv_cache,
                      "block tables (model runner V2)", optional=optional),
            HookPoint(V2_RUNNER, "GPUModelRunner.execute_model", probe.wrap_execute_model,
                      "per-step batch composition (model runner V2)", optional=optional),
            HookPoint(V2_RUNNER, "GPUModelRunner.sample_tokens", probe.wrap_sample_tokens,
                      "errors in a step's sampling and drafting (model runner V2)", optional=True),
            HookPoint(V2_RUNNER, "GPUModelRunner.capture_model", probe.wrap_runner_phase("capture"),
                      "CUDA-graph capture errors (model runner V2)", optional=True),
            HookPoint(V2_RUNNER, "GPUModelRunner.profile_run", probe.wrap_runner_phase("profile"),
                      "memory-profiling errors (model runner V2)", optional=True),
            # V2's warm-up drives execute_model with synthetic requests; looked up as a module global
            # by its callers (gpu_worker.py imports the name), so it is wrapped where it is called
            HookPoint("vllm.v1.worker.gpu_worker", "warmup_kernels", probe.wrap_warmup,
                      "skipping Model Runner V2's warm-up steps", optional=True),
            HookPoint("vllm.model_executor.warmup.flashinfer_sparse_mla_warmup", "run_mixed_prefill_decode_warmup",
                      probe.wrap_warmup, "skipping FlashInfer sparse-MLA warm-up steps", optional=True),
        ]
    return points


def install(version: str, probe: Any, *, engine: bool, runner: bool, is_cpu: bool, frontend: bool = False) -> dict[str, str]:
    """Install the hook points this process needs; returns the outcome of each. ``frontend``: the
    API server / LLM process (where the engine configuration is built)."""
    points: list[HookPoint] = []
    if frontend:
        points += config_points(version, probe)
    if engine:
        points += planning_points(version, probe) + engine_points(version, probe)
    elif runner:
        # workers plan a minimal KV cache for CUDA-graph profiling (0.19+): hook planning there too
        points += planning_points(version, probe)
    if runner:
        points += runner_points(version, probe, is_cpu)
    return install_points(points, version)

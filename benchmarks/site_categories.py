"""Does the post-mortem name the category of vLLM's own failure sites when they fail?

    python benchmarks/site_categories.py [--sites N] [--seed S] [--misses K] [--category CAT]

Every site of the shipped failure catalog (``vllm_diag.catalog``: each ``assert``/``raise`` of vLLM 0.11-0.33
with its file, function, condition, message template, release lines and category) is written as the root error
of a vLLM worker log, in the shapes reporters post, and analysed (``analyze_text``, no pre-flight: a log
without a model). The diagnosis (the first finding) is compared with the site's category:

* ``full``     -- the logger's traceback: the failing frame (file, the release's line, function), its code
  line and the exception line, message holes filled with distinct numbers;
* ``message``  -- the exception line alone (``ExcType: message``), as in a one-line excerpt;
* ``frames``   -- the traceback without its exception line (an excerpt cut before it), trimmed paths
  (``.../vllm/...``); the code line under the failing frame is the assert, or the raise with its template;
* ``wrapped``  -- the engine core's ``RuntimeError: Worker failed with error '...'`` around the message;
* ``lines``    -- a bare ``AssertionError`` whose frames lost their source lines: only the release's line
  numbers and the engine's version banner place it.

A hybrid/spec site (category A-E) counts when the diagnosis has its category; an ``other`` site (OOM, missing
files, argument checks...) counts when the diagnosis is ``other`` (no hybrid/spec category: a false positive
otherwise). A site whose message is a bare ``AssertionError`` has no ``message``/``wrapped`` shape; one
without holes or text is still written with its condition as the code line. The figure is about the catalog's
own reach, so compare runs; the site's category is the catalog's (``diag/catalog/categorize.py``), which is a
judgement too.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from collections import defaultdict

PREFIX = "(Worker_TP0 pid=41) ERROR 11-02 10:00:00 [multiproc_executor.py:666] "
CORE = "(EngineCore_DP0 pid=7) ERROR 11-02 10:00:01 [core.py:1062] "
_HOLE = re.compile(r"(?<!\{)\{([^{}]*)\}(?!\})")
SHAPES = ("full", "message", "frames", "wrapped", "lines")


def fill(message: str) -> str:
    pieces = _HOLE.split(message)
    for i in range(1, len(pieces), 2):
        pieces[i] = str(3 + 4 * (i // 2))  # small distinct numbers, as sizes and counts are
    return "".join(pieces).replace("{{", "{").replace("}}", "}")


def shapes(site, releases: list[str]) -> dict[str, str]:
    """The site written as a log in each shape it has (at the line of its newest release)."""
    lines = site.release_lines(releases)
    line = lines[max(lines, key=releases.index)] if lines else (site.lines[0] if site.lines else 100)
    exc = site.exc or "AssertionError"
    # the source line Python prints under the frame: the assert, or the raise with its message template
    code = (f"assert {site.condition}" if site.kind == "assert" and site.condition else
            f'raise {exc}(f"{site.message}")' if site.message else f"raise {exc}")
    text = fill(site.message) if site.message else ""
    exc_line = f"{exc}: {text}" if text else exc
    root = "/usr/local/lib/python3.12/dist-packages/"
    frame = [f'  File "{root}vllm/v1/engine/core.py", line 380, in step']
    if not site.file.startswith("vllm/"):  # a kernel package's Python wrapper is called from a vLLM backend
        frame.append(f'  File "{root}vllm/v1/attention/backends/mla/common.py", line 1400, in forward')
    frame += [f'  File "{root}{site.file}", line {line}, in {site.short_function}', f"    {code}"]
    out = {"full": "".join(PREFIX + x + "\n" for x in ["Traceback (most recent call last):", *frame, exc_line])}
    out["frames"] = "".join(PREFIX + x.replace("/usr/local/lib/python3.12/dist-packages/", ".../") + "\n"
                            for x in ["Traceback (most recent call last):", *frame])
    if site.kind == "assert" and not site.message and lines:
        # a bare assert whose frames lost their source lines (a container without vLLM's .py files):
        # only the release's line numbers and the version banner place it
        newest = max(lines, key=releases.index)
        head = f"(APIServer pid=1) INFO 11-02 09:57:00 [api_server.py:1839] vLLM API server version {newest}\n"
        out["lines"] = head + "".join(PREFIX + x + "\n" for x in ["Traceback (most recent call last):",
                                                                   *[f for f in frame if f.startswith("  File")], exc])
    if text:
        out["message"] = f"{exc_line}\n"
        out["wrapped"] = f"{CORE}RuntimeError: Worker failed with error '{text}', please check the stack trace above for the root cause\n"
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sites", type=int, default=0, help="a random sample of this many sites (default: all)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--misses", type=int, default=0, help="print this many misses per shape")
    ap.add_argument("--category", help="only the sites of this category")
    args = ap.parse_args(argv)
    from vllm_diag.catalog import load
    from vllm_diag.postmortem.analyze import analyze_text

    catalog = load()
    sites = [s for s in catalog.all_sites() if s.file and s.function and s.file.endswith(".py")]
    if args.category:
        sites = [s for s in sites if s.category == args.category]
    random.Random(args.seed).shuffle(sites)
    if args.sites:
        sites = sites[:args.sites]
    score: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    misses: dict[str, list[str]] = defaultdict(list)
    for site in sites:
        for shape, log in shapes(site, catalog.versions).items():
            try:
                findings = analyze_text(log, use_preflight=False).findings
            except Exception as exc:  # noqa: BLE001 - a crash is a miss, named below
                findings, got = [], f"raised {type(exc).__name__}"
            else:
                got = findings[0].category if findings else "no finding"
            want = site.category
            ok = got == want if want != "other" else got in ("other", "no finding")
            cell = score[(want, shape)]
            cell[0] += ok
            cell[1] += 1
            if not ok and len(misses[shape]) < args.misses:
                misses[shape].append(f"{want} -> {got}: {site.file}:{site.function} "
                                     f"{(site.message or site.condition or '')[:90]!r}")
    cats = sorted({c for c, _ in score}, key=lambda c: (c == "other", c))
    print(f"{'category':22} " + " ".join(f"{s:>15}" for s in SHAPES))
    for c in cats:
        cells = [score.get((c, s)) for s in SHAPES]
        print(f"{c:22} " + " ".join(f"{f'{a}/{n} ({a / n:.0%})' if n else '-':>15}" for a, n in
                                    (x if x else (0, 0) for x in cells)))
    for shape in SHAPES:
        for m in misses.get(shape, []):
            print(f"  miss [{shape}] {m}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

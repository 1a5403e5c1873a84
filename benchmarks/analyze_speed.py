"""How fast ``vllm-diag analyze`` reads a large log, next to ``grep -E`` for the same signatures.

Generates (streamed, never held in memory) a realistic server log of ``--size-mb`` MiB: the startup of a
real CPU engine (``tests/fixtures/logs/real/qwen3next_ngram_prefix_caching.log``), then hours of serving
(metrics lines with the prefix-cache hit rate every few lines, HTTP access lines, debug lines, an
occasional recoverable ERROR record with a traceback), and at the end the real failure of that engine.
Then, in one run and on the same (page-cached) file:

* ``grep -E -c`` with the analyzer's byte signatures (``LC_ALL=C``),
* the analyzer's reader (``read_facts``) in a fresh process: wall time, MB/s, peak RSS,
* the whole command ``python -m vllm_diag analyze --json`` (reader + rules + report),

best of ``--repeat`` runs each, for every size in ``--sizes`` (peak RSS should not grow with the size).
Prints a table and ``--json`` figures; exit status 1 when a target is missed (>= 200 MB/s, <= 3x grep,
flat memory). Not a pytest test: timings depend on the machine.

    python benchmarks/analyze_speed.py --sizes 256,1024 [--dir /tmp] [--repeat 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
REAL = REPO / "tests" / "fixtures" / "logs" / "real" / "qwen3next_ngram_prefix_caching.log"

from vllm_diag.postmortem.reader import ANCHORS, HIT_RATE  # noqa: E402

_BODY = [
    b"(APIServer pid=2401) INFO 11-26 02:%02d:%02d [loggers.py:257] Engine 000: Avg prompt throughput: 1234.5 tokens/s, "
    b"Avg generation throughput: 456.7 tokens/s, Running: 12 reqs, Waiting: 0 reqs, GPU KV cache usage: 12.3%%, "
    b"Prefix cache hit rate: %d.%d%%\n",
    b"(APIServer pid=2401) INFO:     10.0.%d.%d:51234 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n",
    b"(APIServer pid=2401) INFO:     10.0.%d.%d:51236 - \"GET /metrics HTTP/1.1\" 200 OK\n",
    b"(EngineCore pid=2518) DEBUG 11-26 02:%02d:%02d [core.py:812] EngineCore loop active, scheduled 12 requests "
    b"with 3456 tokens in this step\n",
    b"(APIServer pid=2401) INFO 11-26 02:%02d:%02d [logger.py:41] Received request chatcmpl-%d: prompt: '...', "
    b"params: SamplingParams(n=1, temperature=0.7, top_p=0.95, max_tokens=512), lora_request: None.\n",
]
_RECOVERED = (
    b"(APIServer pid=2401) ERROR 11-26 02:30:00 [serving_chat.py:1170] Error in chat completion stream generator.\n"
    b"(APIServer pid=2401) ERROR 11-26 02:30:00 [serving_chat.py:1170] Traceback (most recent call last):\n"
    b"(APIServer pid=2401) ERROR 11-26 02:30:00 [serving_chat.py:1170]   File \"/usr/lib/python3.12/asyncio/streams.py\", line 544, in write\n"
    b"(APIServer pid=2401) ERROR 11-26 02:30:00 [serving_chat.py:1170]     self._transport.write(data)\n"
    b"(APIServer pid=2401) ERROR 11-26 02:30:00 [serving_chat.py:1170] ConnectionResetError: Connection lost\n"
)


def generate(path: Path, size_mb: int) -> None:
    real = REAL.read_bytes().split(b"\n")
    cut = next(i for i, ln in enumerate(real) if b"ENGINE_READY" in ln) + 1
    startup, failure = b"\n".join(real[:cut]) + b"\n", b"\n".join(real[cut:])
    target = size_mb << 20
    i = 0
    with path.open("wb") as fh:
        fh.write(startup)
        written = len(startup)
        while written < target - len(failure):
            block = []
            for _ in range(2000):
                i += 1
                # a busy server: ~20 requests/s (access + request lines, scheduler debug), metrics every 10 s
                k = i % 200
                if k == 0:
                    block.append(_BODY[0] % (i // 60 % 60, i % 60, (i // 7) % 90, i % 10))
                elif k % 4 == 1:
                    block.append(_BODY[1] % (i % 250, (i // 250) % 250))
                elif k % 4 == 2:
                    block.append(_BODY[4] % (i // 60 % 60, i % 60, i))
                elif k % 20 == 3:
                    block.append(_BODY[2] % (i % 250, (i // 250) % 250))
                else:
                    block.append(_BODY[3] % (i // 60 % 60, i % 60))
            if i % 2_000_000 == 0:
                block.append(_RECOVERED)
            data = b"".join(block)
            fh.write(data)
            written += len(data)
        fh.write(failure)


def _timed(cmd: list[str], env: dict | None = None) -> tuple[float, int, bytes]:
    """(wall seconds, peak RSS KiB of that process, stdout)."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, env=env)
        out = p.stdout.read()
        _, status, ru = os.wait4(p.pid, 0)
        dt = time.perf_counter() - t0
        if os.waitstatus_to_exitcode(status) not in (0, 1):
            err.seek(0)
            raise RuntimeError(f"{' '.join(cmd[:2])} ... failed ({status}): {err.read().decode()[-2000:]}")
    return dt, ru.ru_maxrss, out


READER = (
    "import sys, json, time; sys.path.insert(0, {repo!r});"
    "from vllm_diag.postmortem.reader import read_facts;"
    "t = time.perf_counter(); f, info = read_facts(sys.argv[1]); dt = time.perf_counter() - t;"
    "print(json.dumps({{'seconds': dt, 'root': f.root.exc_type if f.root else None, 'lines': f.total_lines,"
    "'hit_rate_samples': f.startup.get('prefix_cache_hit_rate_samples'), 'version': f.vllm_version}}))"
)


# what `vllm-diag analyze --json --no-preflight FILE` runs (without the CLI's other subcommands, whose
# imports -- sqlite-utils for the store -- a bare benchmark machine may lack)
FULL = (
    "import sys; sys.path.insert(0, {repo!r});"
    "from vllm_diag.postmortem.analyze import analyze_path; from vllm_diag.render.json import dumps;"
    "print(dumps(analyze_path(sys.argv[1], use_preflight=False).to_record()))"
)


def bench(path: Path, repeat: int) -> dict:
    size = path.stat().st_size
    with path.open("rb") as fh:  # page cache warm for everyone
        while fh.read(16 << 20):
            pass
    pattern = "|".join(a.decode().replace("(", r"\(") for a in ANCHORS + (HIT_RATE,))
    grep = shutil.which("grep")
    genv = {**os.environ, "LC_ALL": "C"}
    best = {"grep": 1e9, "reader": 1e9, "reader_inproc": 1e9, "cli": 1e9}
    rss = 0
    facts = None
    for _ in range(repeat):
        dt, _, out = _timed([grep, "-E", "-c", pattern, str(path)], genv)
        best["grep"] = min(best["grep"], dt)
        grep_lines = int(out.strip() or 0)
        dt, peak, out = _timed([sys.executable, "-c", READER.format(repo=str(REPO)), str(path)])
        best["reader"] = min(best["reader"], dt)
        facts = json.loads(out)
        best["reader_inproc"] = min(best["reader_inproc"], facts["seconds"])
        rss = max(rss, peak)
        dt, _, out = _timed([sys.executable, "-c", FULL.format(repo=str(REPO)), str(path)])
        best["cli"] = min(best["cli"], dt)
        doc = json.loads(out)
    mb = size / 1e6
    return {
        "size_mb": round(mb, 1),
        "grep_s": round(best["grep"], 3), "grep_mb_s": round(mb / best["grep"]),
        "grep_matching_lines": grep_lines,
        "reader_s": round(best["reader"], 3), "reader_mb_s": round(mb / best["reader"]),
        "reader_inproc_mb_s": round(mb / best["reader_inproc"]),
        "cli_s": round(best["cli"], 3), "cli_mb_s": round(mb / best["cli"]),
        "ratio_reader_to_grep": round(best["reader"] / best["grep"], 2),
        "ratio_cli_to_grep": round(best["cli"] / best["grep"], 2),
        "peak_rss_mib": round(rss / 1024, 1),
        "root": facts["root"], "lines": facts["lines"], "hit_rate_samples": facts["hit_rate_samples"],
        "top_finding": (doc["findings"][0]["rule"] if doc["findings"] else None),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="256,1024", help="MiB, comma-separated (default 256,1024)")
    ap.add_argument("--dir", default=None, help="where to write the generated logs (default: a temp dir)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", dest="json_out", default=None, help="also write the figures here")
    ap.add_argument("--keep", action="store_true", help="keep the generated logs")
    args = ap.parse_args(argv)
    tmp = Path(args.dir or tempfile.mkdtemp(prefix="analyze-speed-"))
    tmp.mkdir(parents=True, exist_ok=True)
    rows = []
    try:
        for size in [int(x) for x in args.sizes.split(",")]:
            path = tmp / f"vllm-{size}mb.log"
            t0 = time.perf_counter()
            generate(path, size)
            gen = time.perf_counter() - t0
            row = bench(path, args.repeat)
            row["generate_s"] = round(gen, 1)
            rows.append(row)
            print(json.dumps(row), flush=True)
            if not args.keep:
                path.unlink()
    finally:
        if not args.keep and args.dir is None:
            shutil.rmtree(tmp, ignore_errors=True)
    big, small = rows[-1], rows[0]
    ok_speed = big["reader_mb_s"] >= 200
    ok_ratio = big["ratio_reader_to_grep"] <= 3.0
    ok_mem = big["peak_rss_mib"] <= small["peak_rss_mib"] * 1.25 + 8
    print(f"\n{'size MB':>8} {'grep MB/s':>10} {'reader MB/s':>12} {'x grep':>7} {'cli MB/s':>9} {'cli x grep':>10} {'RSS MiB':>8}")
    for r in rows:
        print(f"{r['size_mb']:>8} {r['grep_mb_s']:>10} {r['reader_mb_s']:>12} {r['ratio_reader_to_grep']:>7} "
              f"{r['cli_mb_s']:>9} {r['ratio_cli_to_grep']:>10} {r['peak_rss_mib']:>8}")
    print(f"\n>= 200 MB/s: {'yes' if ok_speed else 'NO'}; within 3x grep: {'yes' if ok_ratio else 'NO'}; "
          f"flat memory: {'yes' if ok_mem else 'NO'}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"rows": rows, "ok": [ok_speed, ok_ratio, ok_mem]}, indent=2))
    return 0 if ok_speed and ok_ratio and ok_mem else 1


if __name__ == "__main__":
    sys.exit(main())

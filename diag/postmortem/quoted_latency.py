"""The latencies a report quotes beside the log: a Prometheus query over vLLM's histograms
(``histogram_quantile(0.99, rate(vllm:time_to_first_token_seconds_bucket[5m])) = 0.94``) and the reporter's own
figures (``TTFT p50 4.8s, p99 19s``, ``TPOT p50 31ms``, ``85ms TPOT``). Named ``<metric>[_<quantile>]_<unit>`` --
``ttft_p99_s``, ``tpot_ms`` -- in the unit the report used."""

from __future__ import annotations

import re

# vLLM's latency histograms and the short names operators use for them
_HISTOGRAMS = {"time_to_first_token": "ttft", "inter_token_latency": "itl", "time_per_output_token": "tpot",
               "request_time_per_output_token": "tpot", "e2e_request_latency": "e2e_latency",
               "request_queue_time": "queue_time", "request_prefill_time": "prefill_time",
               "request_decode_time": "decode_time"}
_PROMQL = re.compile(r"histogram_quantile\(\s*(0?\.\d+|1(?:\.0+)?)\s*,.{0,80}?\bvllm:([a-z0-9_]+?)_seconds_bucket\b"
                     r"[^=\n]{0,80}=\s*(\d+(?:\.\d+)?)\b")
_METRIC = r"(TTFT|TPOT|ITL|E2E(?:L| latency)?)"
_QUANT = r"(p\d{2}(?:\.\d)?|median|mean|avg)"
_UNIT = r"(ms|s|sec|secs|seconds)\b"
_NUM = r"~?(\d+(?:\.\d+)?)"
# "TTFT p50 4.8s", "TTFT (p99) = 71 s", "TPOT 95-110 ms" (the lower end), "TPOT: ~45 ms"
_AFTER = re.compile(r"\b" + _METRIC + r"\b\s*\(?\s*(?:" + _QUANT + r"\)?\s*)?(?:[:=]|is|of|at|around|about|~)?\s*" + _NUM
                    + r"(?:\s*[-\u2013]\s*\d+(?:\.\d+)?)?\s*" + _UNIT)
# "..., p99 19s" after one of them: the same metric's other quantile
_MORE = re.compile(r"\s*[,;/]?\s*(?:and\s+)?" + _QUANT + r"\s*(?:[:=]\s*)?" + _NUM + r"\s*" + _UNIT)
# a histogram named, then its quantiles: "vllm:time_to_first_token_seconds (last 1h):  p50 0.21 s   p99 0.94 s"
_NAMED_HIST = re.compile(r"\bvllm:([a-z0-9_]+?)_seconds\b(?!_bucket)")
_QUANT_VALUE = re.compile(r"\b" + _QUANT + r"\s*[:=]?\s*" + _NUM + r"\s*" + _UNIT)
# "85ms TPOT", "p99 0.94 s TTFT"
_BEFORE = re.compile(r"(?:\b" + _QUANT + r"\s+)?(?<![\w.])" + _NUM + r"\s*" + _UNIT + r"\s+" + _METRIC + r"\b")


def _unit(u: str) -> str:
    return "ms" if u == "ms" else "s"


def _quant(q: str | None) -> str:
    if not q:
        return ""
    q = q.lower()
    return "_p50" if q == "median" else ("_mean" if q in ("mean", "avg") else "_" + q.replace(".", "_"))


def _metric(m: str) -> str:
    return "e2e_latency" if m.upper().startswith("E2E") else m.lower()


def quoted_latencies(text: str) -> dict[str, float]:
    """``{name: value}`` for the latencies one line of a report quotes (see the module doc)."""
    out: dict[str, float] = {}
    if "histogram_quantile" in text:
        for q, hist, val in _PROMQL.findall(text):
            name = _HISTOGRAMS.get(hist) or _HISTOGRAMS.get(hist.removeprefix("request_"))
            if name:
                pct = round(float(q) * 100)
                out.setdefault(f"{name}_p{pct}_s", float(val))
        return out
    if "vllm:" in text and (h := _NAMED_HIST.search(text)) and (name := _HISTOGRAMS.get(h.group(1))):
        for q, val, unit in _QUANT_VALUE.findall(text[h.end():]):
            out.setdefault(f"{name}{_quant(q)}_{_unit(unit)}", float(val))
    for m in _AFTER.finditer(text):
        metric = _metric(m.group(1))
        out.setdefault(f"{metric}{_quant(m.group(2))}_{_unit(m.group(4))}", float(m.group(3)))
        pos = m.end()
        while (more := _MORE.match(text, pos)) is not None:
            out.setdefault(f"{metric}{_quant(more.group(1))}_{_unit(more.group(3))}", float(more.group(2)))
            pos = more.end()
    for m in _BEFORE.finditer(text):
        out.setdefault(f"{_metric(m.group(4))}{_quant(m.group(1))}_{_unit(m.group(3))}", float(m.group(2)))
    return out

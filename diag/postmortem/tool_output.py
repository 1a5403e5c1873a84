"""What the system tools a report pastes print: nvidia-smi's process table, ``--query-gpu`` CSV, ``-q`` telemetry,
header and ``topo -m`` matrix, a GPU's compute capability, a cgroup's ``cpu.stat`` and the driver's Xid line. Exact
tables, read before the reporter's words for the same facts (a co-tenant, a throttled GPU, no NVLink); the part of
the collector that reads them."""

from __future__ import annotations

import re

from .lines import Line
from .quoted_latency import quoted_latencies

# nvidia-smi -q's telemetry of a GPU ("GPU Current Temp : 89 C", "Current Power Limit : 450.00 W", the Clocks section's
# "SM : 1095 MHz"): the first GPU's values, as the report pasted them
_SMI_FIELD = re.compile(r"^\s*(GPU Current Temp|GPU Slowdown Temp|GPU Shutdown Temp|Current Power Limit|Power Draw|SM|"
                        r"DRAM Correctable|DRAM Uncorrectable|SRAM Uncorrectable)\s+:\s+(\d+(?:\.\d+)?)\s*(C|W|MHz|$)")
# the -q sections whose "SM : N MHz" is not the clock the GPU ran at ("Max Clocks" is its ceiling)
_SMI_CLOCK_SECTION = re.compile(r"^\s*((?:Max |Applications |Default Applications |Max Customer Boost )?Clocks)\s*$")
# the GPU's compute capability as a report or nvidia-smi states it ("Compute Capability 7.0", "compute capability 8.9")
_COMPUTE_CAPABILITY = re.compile(r"\bcompute[ _]cap(?:ability|\.)?\b[\"':=\s]*(?:is |of |[^\n]{0,12}?(?:->|=>|\u2192)\s*)?"
                                 r"(\d{1,2}\.\d)\b", re.I)
# a row of ``nvidia-smi --query-gpu=name,compute_cap,...`` without its header: the GPU's name, then its capability
_SMI_CAP_ROW = re.compile(r"^\s*(?:NVIDIA |Tesla |Quadro )?[\w -]{1,40}?,\s*(\d{1,2}\.\d)\s*(?:,|$)")
_GPU_NAME = re.compile(r"\b(?:NVIDIA|Tesla|Quadro|GeForce|RTX|[AHLTVB]\d{1,3}\b)")
_SMI_NAMES = {"GPU Current Temp": "gpu_temp_c", "GPU Slowdown Temp": "slowdown_temp_c", "GPU Shutdown Temp": "shutdown_temp_c",
              "Current Power Limit": "power_limit_w", "Power Draw": "power_draw_w", "SM": "sm_clock_mhz",
              # the ECC error counts of -q's first (Volatile) section
              "DRAM Correctable": "dram_correctable", "DRAM Uncorrectable": "dram_uncorrectable",
              "SRAM Uncorrectable": "sram_uncorrectable"}
# nvidia-smi's throttle bitmask (clocks_event_reasons.active): HW slowdown, SW / HW thermal slowdown, HW power brake
_THROTTLE_BITS = 0x08 | 0x20 | 0x40 | 0x80
# a row of `nvidia-smi topo -m`: "GPU0  X  PIX  NODE  SYS ..." (NV# where two GPUs share NVLink)
_TOPO_ROW = re.compile(r"^\s*GPU\d+\s+((?:(?:X|PIX|PXB|PHB|NODE|SYS|NV\d+)\s+){2,}(?:X|PIX|PXB|PHB|NODE|SYS|NV\d+))\b")
# a row of nvidia-smi's process table: "|   0  3011207   C   text-embeddings-router   27968MiB |" (newer drivers add the
# GI / CI ids as "N/A  N/A")
# (rows a reader's hard-wrap joined into one line are read one by one)
_SMI_PROCESS = re.compile(r"(?:^|\|)\s*(\d+)\s+(?:N/A\s+N/A\s+)?(\d{2,})\s+(?:C|G|C\+G)\s+(\S[^|\n]{0,80}?)\s+(\d+)\s*MiB\b")
# a GPU's row of nvidia-smi's table: "| N/A   71C    P0   341W /  350W |  46012MiB /  46068MiB |   100%   Default |"
_SMI_GPU_ROW = re.compile(r"\|\s*(?:\d+%|N/A)\s+(\d+)C\s+P\d+\s+(?:\S+\s+)?(\d+)W\s*/\s*(\d+)W\s*\|\s*(\d+)MiB\s*/\s*"
                          r"(\d+)MiB\s*\|\s*(\d+)%")
# a bare interpreter's row ("python", "/opt/conda/bin/python3"): the engine's own as likely as another program's
_BARE_INTERPRETER = re.compile(r"^\S*(?:python[\d.]*|pt_main_thread)$", re.I)
# a throttle reason's column of nvidia-smi --query-gpu ("clocks_event_reasons.hw_thermal_slowdown",
# "clocks_throttle_reasons.sw_power_cap"; not the bitmask "clocks_event_reasons.active" or "...supported")
_SMI_REASON = re.compile(r"^clocks_(?:event|throttle)_reasons\.(?:hw_slowdown|hw_thermal_slowdown|sw_thermal_slowdown|"
                         r"hw_power_brake_slowdown|sw_power_cap)$")
# nvidia-smi's header: "| NVIDIA-SMI 535.183.01   Driver Version: 535.183.01   CUDA Version: 12.2 |"
_SMI_HEADER = re.compile(r"Driver Version: (\d+\.\d+(?:\.\d+)?)\s+CUDA Version: (\d+\.\d+)")
# a cgroup's cpu.stat ("nr_periods 41877", "nr_throttled 39102", "throttled_usec 812345"): a CPU quota throttling
_CPU_STAT = re.compile(r"^\s*(nr_periods|nr_throttled|throttled_usec|throttled_time|nr_bursts)\s+(\d+)\s*$")
# the driver's GPU fault report: "NVRM: Xid (PCI:0000:ab:00): 94, pid=533, ..."
_XID = re.compile(r"\bXid \([^)]{0,40}\): (\d{1,3})\b")
# a row of lm-evaluation-harness's result table: "|gsm8k|  3|flexible-extract|  5|exact_match|↑  |0.8658|±  |0.0094|"
# (a continuation row leaves the task's cells blank)
def _final_answer(response: str, gold: str) -> bool:
    """The response's last number is the gold answer (or, for an answer that is no number, the response ends with
    it): what a grader extracting the final answer would have read."""
    if re.fullmatch(r"-?\d+(?:\.\d+)?", gold):
        nums = re.findall(r"-?\d+(?:\.\d+)?", response.replace(",", "").replace("\\n", " "))
        return bool(nums) and float(nums[-1]) == float(gold)
    return response.replace("\\n", " ").rstrip(" .*\"'}").endswith(gold)


# an evaluation's sample: its gold answer and the grader's prediction ({"id": ..., "gold": "18", "pred": "3", ...}), and
# the model's response
_GRADED = re.compile(r"[\"'](?:gold|target|expected|answer_gold|ground_truth)[\"']\s*:\s*[\"']?([\w.\-]{1,40})[\"']?\s*,\s*"
                     r"[\"'](?:pred|prediction|predicted|extracted|parsed_answer|model_answer)[\"']\s*:\s*[\"']?([\w.\-]{1,40})[\"']?")
_GRADED_RESPONSE = re.compile(r"[\"'](?:response|output|completion|generation|model_output|resps?)[\"']\s*:\s*[\"'](.{1,3000}?)[\"']\s*[,}\]]")
_LM_EVAL_ROW = re.compile(r"^\s*\|[^|]*\|[^|]*\|\s*(strict-match|flexible-extract|none)\s*\|\s*\d*\s*\|\s*(\w+)\s*\|[^|]*\|\s*"
                          r"(\d?\.\d+)\s*\|")
# a proxy's access log line (nginx, ingress-nginx, Envoy-style) for a request it failed or the client dropped: its
# status, then the timings its format prints after the user agent -- named ("rt=60.001 urt=60.000 uct=0.001") or in
# ingress-nginx's default order (request length, request time, [upstream], [alternative], address, response length,
# upstream response time, upstream status)
_PROXY_ACCESS = re.compile(r'"(?:GET|POST|PUT|DELETE|PATCH|HEAD) \S+ HTTP/[\d.]+" (499|5\d\d) \d+ "[^"]*" "[^"]*"(.*)$')
_PROXY_TIMING = re.compile(r"\b(rt|request_time|urt|upstream_response_time|uct|upstream_connect_time|uht|"
                           r"upstream_header_time)=(\d+(?:\.\d+)?)\b")
_INGRESS_TAIL = re.compile(r"^\s*\d+ (\d+\.\d+) \[[^\]]*\] \[[^\]]*\] \S+ (?:\d+|-) (\d+\.\d+|-) (?:\d{3}|-)\b")
# Envoy's (Istio's) default access log: status, response flags (UT: the route's timeout; UC/URX/UF: the upstream reset,
# retried out, unreachable; DC: the client went away), details, then bytes received, bytes sent and the duration in ms
_ENVOY_ACCESS = re.compile(r'"(?:GET|POST|PUT|DELETE|PATCH|HEAD) \S+ HTTP/[\d.]+" (\d{3}|0) ((?:UT|UC|URX|UF|UO|UH|DC|LR|SI)'
                           r'(?:,[A-Z]{2,3})*) (?:[\w,.-]+ |"[^"]*" ){0,3}(\d+) (\d+) (\d+) ')
_TIMING_NAMES = {"rt": "request_time_s", "request_time": "request_time_s", "urt": "upstream_response_time_s",
                 "upstream_response_time": "upstream_response_time_s", "uct": "upstream_connect_time_s",
                 "upstream_connect_time": "upstream_connect_time_s", "uht": "upstream_header_time_s",
                 "upstream_header_time": "upstream_header_time_s"}
# the CUDA a PyTorch build was made for: pip's "torch 2.10.0+cu130", "torch==2.9.1+cu129", collect_env's "PyTorch
# version: 2.8.0+cu128" and "CUDA used to build PyTorch: 12.8"
# (collect_env.py pads its field names in newer releases: "PyTorch version              : 2.11.0+cu130")
# (or alone at a line's start: python -c "print(torch.__version__, torch.version.cuda)" -> "2.10.0+cu130 13.0")
_TORCH_BUILD = re.compile(r"(?:\b(?:torch|PyTorch version\s*:)\s*(?:==\s*)?|^\s*)\d+\.\d+(?:\.\d+)?\+cu(\d{2})(\d)\b")
# collect_env.py's driver field: "Nvidia driver version: 550.144.03" (padded or not)
_ENV_DRIVER = re.compile(r"\bNvidia driver version\s*:\s*(\d{3}\.\d+(?:\.\d+)?)\b")
_TORCH_CUDA = re.compile(r"\bCUDA used to build PyTorch\s*:\s*(\d{2}\.\d)\b")
# the size of a container's /dev/shm: df's row ("shm  64M  61M  3.0M  96% /dev/shm"), docker's --shm-size=64m,
# compose's shm_size: "64m"
_SHM_DF = re.compile(r"^\s*(?:shm|tmpfs)\s+(\d+(?:\.\d+)?)([KMG])\s+\S+\s+\S+\s+\d+%\s+/dev/shm\s*$")
_SHM_FLAG = re.compile(r"(?<![\w-])(?:--shm-size[= ]|shm_size:\s*)[\"']?(\d+(?:\.\d+)?)\s*([kmgKMG])(?:i?b|i?B)?[\"']?")
# nginx's proxy_buffer_size (a directive, or ingress-nginx's proxy-buffer-size annotation), in KiB
_PROXY_BUFFER = re.compile(r"\bproxy[-_]buffer[-_]size[\"']?\s*[:=]?\s*[\"']?(\d+)\s*([kKmM])\b")
# a usage table of one conversation's turns ("turn | prompt_tokens | completion_tokens"), and the reporter's words for
# prompts that double each turn
_TURN_KV = re.compile(r"\bturn\s*[=:]\s*(\d+)\b[^\n=]{0,20}?(?:=[^\n=]{0,40}?){0,3}\bprompt_tokens\s*[=:]\s*(\d[\d,]*)")
_TURN_TABLE_HEAD = re.compile(r"\bturn\b.{0,40}?\bprompt[_ ]tokens\b", re.I)
_PROMPT_GROWTH = re.compile(r"\bprompts?\b[^.\n]{0,30}?\b(?:doubl\w+|grows? exponentially|balloon\w*|explod\w*|blows? up)\b"
                            r"[^.\n]{0,30}?\b(?:each|every|per) (?:turn|message)\b", re.I)
# a container's CPU limit: Kubernetes' "limits: {cpu: "2", ...}" or a limits block's "cpu: 4" / "cpu: 3500m",
# docker's --cpus=4
# (a manifest's flow mapping, or the JSON kubectl prints: {"limits":{"cpu":"2",...}})
_CPU_LIMIT_INLINE = re.compile(r"\blimits[\"']?:\s*\{[^}]*?\bcpu[\"']?:\s*[\"']?(\d+(?:\.\d+)?)(m)?[\"']?\s*[,}]")
_CPU_LIMIT_FIELD = re.compile(r"^\s+cpu:\s*[\"']?(\d+(?:\.\d+)?)(m)?[\"']?\s*$")
_DOCKER_CPUS = re.compile(r"(?<![\w-])--cpus[= ][\"']?(\d+(?:\.\d+)?)\b")
# the engine's own processes in that table (a bare python process is the engine's only where no row names vLLM)
_ENGINE_PROCESS = re.compile(r"vllm|EngineCore|ray::", re.I)
_PYTHON_PROCESS = re.compile(r"python|pt_main_thread", re.I)


# a row of `vllm bench serve`'s result block (vllm/benchmarks/serve.py prints "{:<40} {:<10}": a label padded to 40
# columns, then the value): "Mean TPOT (ms):                          71.92", "Acceptance rate (%):   61.47"
_BENCH_ROW = re.compile(r"^\s{0,4}([A-Z][A-Za-z0-9 ./'-]{1,40}?)(?:\s\((ms|s|%|req/s|tok/s|RPS|inputs/s)\))?:\s{2,}"
                        r"(-?\d+(?:\.\d+)?)\s*$")
# the lines inside its block between rows: section rules ("-----Speculative Decoding-----"), the closing rule, a
# reporter's elision, the per-position header
_BENCH_INSIDE = re.compile(r"^\s*(?:[=-]{3,}[^=\n]{0,60}?[=-]*|\[\s*\.\.\.\s*\]|\.\.\.|Per-position acceptance \(%\):)\s*$")
_BENCH_UNITS = {"ms": "_ms", "s": "_s", "%": "_pct", "req/s": "_req_s", "tok/s": "_tok_s", "RPS": "_rps",
                "inputs/s": "_inputs_s"}
# the rows that say a line is the benchmark's and not some other "Name:  N" (a run starts with any of them)
_BENCH_NAMES = re.compile(r"^(?:successful_requests|failed_requests|benchmark_duration|total_\w+|request_throughput|"
                          r"output_token_throughput|peak_\w+|(?:mean|median|p\d+(?:\.\d+)?)_(?:ttft|tpot|itl|e2el)|"
                          r"acceptance_(?:rate|length)|drafts|draft_tokens|accepted_tokens|maximum_request_concurrency|"
                          r"request_rate_configured)")


# curl's own timings (``-w 'ttfb=%{time_starttransfer}s total=%{time_total}s'``) on a line of their own: the first
# byte and the whole response, one request each
_CURL_TIMING = re.compile(r"^\s*(?:ttfb|time_starttransfer|TTFB)\s*[=:]\s*(\d+(?:\.\d+)?)\s*s?"
                          r"(?:[\s,]+(?:total|time_total)\s*[=:]\s*(\d+(?:\.\d+)?)\s*s?)?\s*$")


class ToolOutputLines:
    """Mixin of :class:`~vllm_diag.postmortem.extract.FactCollector`: pasted system-tool output."""

    def _tool_output_line(self, text: str, line: Line) -> None:
        """One line of the report outside log records, read for the tools' tables and fields."""
        if "imits:" in text and text.strip() in ("limits:", "Limits:"):  # a manifest's block, kubectl describe's
            self._limits_line = line.lineno
        if "Clocks" in text and (sec := _SMI_CLOCK_SECTION.match(text)):
            self._smi_clock_section = sec.group(1)
        if " : " in text and (smi := _SMI_FIELD.match(text)):
            name = _SMI_NAMES[smi.group(1)]
            if name == "sm_clock_mhz":
                section = self._smi_clock_section
                name = {"Clocks": name, "Max Clocks": "max_sm_clock_mhz"}.get(section, "")
            if name and name not in self.facts.startup:
                self.facts.startup[name] = float(smi.group(2)) if "." in smi.group(2) else int(smi.group(2))
                self.facts.lines[name] = (line.lineno, text.strip()[:500])
        if "compute_capability" not in self.facts.startup and ("apabilit" in text or "ompute cap" in text) and (
                m := _COMPUTE_CAPABILITY.search(text)) or "compute_capability" not in self.facts.startup \
                and line.level is None and "," in text and _GPU_NAME.search(text) and (m := _SMI_CAP_ROW.match(text)):
            major, minor = m.group(1).split(".")
            self.facts.startup["compute_capability"] = [int(major), int(minor)]  # (as identity.py reads it off sm_NN)
            self.facts.lines["compute_capability"] = (line.lineno, text.strip()[:500])
        if line.level is None and "GPU" in text and (topo := _TOPO_ROW.match(text)):
            # nvidia-smi topo -m: a row with no NV# cell links that GPU to the others over PCIe or the host
            if "NV" in topo.group(1):
                self.facts.startup["gpu_link_nvlink"] = True
            elif "gpu_link_no_nvlink" not in self.facts.startup:
                self.facts.startup["gpu_link_no_nvlink"] = " ".join(text.split())[:200]
                self.facts.lines["gpu_link_no_nvlink"] = (line.lineno, text.strip()[:500])
        if ("tt" in text or "TT" in text) and line.level is None and (curl := _CURL_TIMING.match(text)):
            timings = self.facts.startup.setdefault("curl_timings", [])
            if len(timings) < 8:
                timings.append({"ttfb_s": float(curl.group(1)),
                                **({"total_s": float(curl.group(2))} if curl.group(2) else {})})
                self.facts.lines.setdefault("curl_timings", (line.lineno, text.strip()[:500]))
        if line.level is None and ":  " in text and (bench := _BENCH_ROW.match(text)):
            self._bench_row(bench, line)
        elif self._bench_run is not None and not _BENCH_INSIDE.match(text):
            self._bench_run = None  # (a header, a blank or any other line ends the block: the next rows are a rerun)
        if "MiB" in text and line.level is None:
            self._smi_process(text, line)
            row = _SMI_GPU_ROW.search(text) if "C " in text else None
            if row is not None and "gpu_util_pct" not in self.facts.startup:
                # the first GPU's row (the -q fields, read first, keep their temperature)
                self._smi_table_temp = "gpu_temp_c" not in self.facts.startup
                for name, value in zip(("gpu_temp_c", "power_draw_w", "power_limit_w", "gpu_memory_used_mib",
                                        "gpu_memory_total_mib", "gpu_util_pct"), row.groups()):
                    self.facts.startup.setdefault(name, int(value))
                self.facts.lines["gpu_util_pct"] = (line.lineno, text.strip()[:500])
            elif row is not None and self._smi_table_temp \
                    and int(row.group(1)) > self.facts.startup["gpu_temp_c"]:
                # a later GPU of the table running hotter: the one a thermal slowdown names (its power draw beside it)
                self.facts.startup["gpu_temp_c"], self.facts.startup["power_draw_w"] = int(row.group(1)), int(row.group(2))
                self.facts.lines["gpu_temp_c"] = (line.lineno, text.strip()[:500])
        if "," in text and line.level is None:
            self._smi_csv(text, line)
        if "Driver Version" in text and "driver_cuda_version" not in self.facts.startup and (m := _SMI_HEADER.search(text)):
            self.facts.startup["driver_version"] = m.group(1)
            self.facts.startup["driver_cuda_version"] = float(m.group(2))
            self.facts.lines["driver_version"] = (line.lineno, text.strip()[:500])
        if ("nr_" in text or "throttled" in text) and (m := _CPU_STAT.match(text)) and m.group(1) not in self.facts.startup:
            self.facts.startup[m.group(1)] = int(m.group(2))
        if "HTTP/" in text and "request_time_s" not in self.facts.startup and (m := _PROXY_ACCESS.search(text)):
            self._proxy_timings(m.group(2), line, text)
        if "HTTP/" in text and "envoy_response_flags" not in self.facts.startup and (m := _ENVOY_ACCESS.search(text)):
            self._envoy_request(m, line, text)
        if "+cu" in text and "torch_cuda_tag" not in self.facts.startup and (m := _TORCH_BUILD.search(text)):
            self.facts.startup["torch_cuda_tag"] = int(m.group(1) + m.group(2))  # (cu130: CUDA 13.0)
            self.facts.startup.setdefault("torch_cuda_version", float(f"{m.group(1)}.{m.group(2)}"))
            self.facts.lines["torch_cuda_tag"] = (line.lineno, text.strip()[:500])
        if "CUDA used to build" in text and (m := _TORCH_CUDA.search(text)):
            self.facts.startup["torch_cuda_version"] = float(m.group(1))
        if "driver version" in text and "driver_version" not in self.facts.startup and (m := _ENV_DRIVER.search(text)):
            self.facts.startup["driver_version"] = m.group(1)
            self.facts.lines["driver_version"] = (line.lineno, text.strip()[:500])
        if "shm" in text and "shm_size_mb" not in self.facts.startup and (
                m := _SHM_DF.match(text) or _SHM_FLAG.search(text)):
            mib = float(m.group(1)) * {"k": 1 / 1024, "m": 1, "g": 1024}[m.group(2).lower()]
            self.facts.startup["shm_size_mb"] = int(mib) if mib.is_integer() else round(mib, 1)
            self.facts.lines["shm_size_mb"] = (line.lineno, text.strip()[:500])
        if "buffer" in text and "proxy_buffer_size_k" not in self.facts.startup and (m := _PROXY_BUFFER.search(text)):
            self.facts.startup["proxy_buffer_size_k"] = int(m.group(1)) * (1024 if m.group(2) in "mM" else 1)
        if self._turn_prompt_col is not None or "prompt_growth" not in self.facts.startup and (
                "urn" in text or "oubl" in text or "xplod" in text or "alloon" in text or "blow" in text):
            self._turn_table(text, line)  # (a table of growing prompts is read to its last row)
        if "cpu" in text and "cpu_limit_cores" not in self.facts.startup:
            self._cpu_limit(text, line)
        if ("TTFT" in text or "TPOT" in text or "ITL" in text or "E2E" in text or "vllm:" in text) and len(text) < 2000:
            if said := quoted_latencies(text):
                quoted = self.facts.startup.setdefault("quoted_latencies", {})
                for name, value in said.items():
                    if len(quoted) < 20:
                        quoted.setdefault(name, value)
        if "-match" in text or "-extract" in text:
            self._lm_eval_row(text, line)
        if '"' in text and line.level is None and "eval_misgraded" not in self.facts.startup and len(text) < 4000:
            self._graded_sample(text, line)
        if "Xid" in text and "xid" not in self.facts.startup and (m := _XID.search(text)):
            self.facts.startup["xid"] = int(m.group(1))
            self.facts.lines["xid"] = (line.lineno, text.strip()[:500])

    def _turn_table(self, text: str, line: Line) -> None:
        """A client's prompts that grow far faster than its conversation: a usage table whose prompt tokens about double
        (x1.8 or more) every turn for three turns or more, or the reporter saying so -- the client resending its
        history (``prompt_growth``)."""
        # a client's log line per turn: "turn=3 prompt_tokens=9689" (rows of one width a reader's hard-wrap joined, too)
        rows = _TURN_KV.findall(text) if "=" in text else []
        for turn, prompt in rows:
            if turn == "1":
                self._turn_prompts = []
            self._turn_prompts.append(int(prompt.replace(",", "")))
            self._prompts_doubling(line, text)
        if rows:
            return
        if _TURN_TABLE_HEAD.search(text):
            cells = [c.lower() for c in _cells(text)]
            self._turn_prompt_col = next((i for i, c in enumerate(cells) if c in ("prompt_tokens", "prompt tokens")), None)
            self._turn_prompts = []
            return
        if self._turn_prompt_col is not None:
            cells = _cells(text)
            value = cells[self._turn_prompt_col].replace(",", "") if len(cells) > self._turn_prompt_col else ""
            if not (cells and cells[0].isdigit() and value.isdigit()):
                self._turn_prompt_col = None  # (the table ended)
                return
            self._turn_prompts.append(int(value))
            self._prompts_doubling(line, text)
            return
        if line.level is None and (m := _PROMPT_GROWTH.search(text)):
            self.facts.startup["prompt_growth"] = m.group(0)
            self.facts.lines["prompt_growth"] = (line.lineno, text.strip()[:500])

    def _prompts_doubling(self, line: Line, text: str) -> None:
        seen = self._turn_prompts
        if len(seen) >= 3 and all(b >= 1.8 * a for a, b in zip(seen, seen[1:])):
            self.facts.startup["prompt_growth"] = (f"{' -> '.join(f'{n:,}' for n in seen)} prompt tokens over "
                                                   f"{len(seen)} turns")
            self.facts.startup["prompt_tokens_first"], self.facts.startup["prompt_tokens_last"] = seen[0], seen[-1]
            self.facts.lines["prompt_growth"] = (line.lineno, text.strip()[:500])

    def _cpu_limit(self, text: str, line: Line) -> None:
        """The CPUs a container may use (Kubernetes' resources.limits.cpu, docker's --cpus), in cores: the API
        server's and the engine's host threads share them."""
        m = _CPU_LIMIT_INLINE.search(text) or _DOCKER_CPUS.search(text)
        if m is None and 0 < line.lineno - self._limits_line <= 4:  # a limits block's field, a few lines after it
            m = _CPU_LIMIT_FIELD.match(text)
        if m is not None:
            cores = float(m.group(1)) / (1000 if m.lastindex and m.lastindex >= 2 and m.group(2) else 1)
            self.facts.startup["cpu_limit_cores"] = int(cores) if cores.is_integer() else cores
            self.facts.lines["cpu_limit_cores"] = (line.lineno, text.strip()[:500])
            if cores <= 2 and "cpu_starved_prose" not in self.facts.startup:
                # (the API server, the engine's loop and a worker per GPU each keep a core busy: two or fewer starve
                # them whatever the load)
                self.facts.startup["cpu_starved_prose"] = f"a CPU limit of {cores:g} core(s) for the container"
                self.facts.lines["cpu_starved_prose"] = self.facts.lines["cpu_limit_cores"]

    def _proxy_timings(self, tail: str, line: Line, text: str) -> None:
        """The first failed request's timings in a proxy's access log: a request time at the proxy's timeout (60.001
        for a 60 s proxy_read_timeout) is the proxy cutting a stream the engine was still writing."""
        timings = {_TIMING_NAMES[k]: float(v) for k, v in _PROXY_TIMING.findall(tail)}
        if not timings and (m := _INGRESS_TAIL.match(tail)):
            timings = {"request_time_s": float(m.group(1))}
            if m.group(2) != "-":
                timings["upstream_response_time_s"] = float(m.group(2))
        if "request_time_s" in timings:
            for name, value in timings.items():
                self.facts.startup.setdefault(name, value)
            self.facts.lines["request_time_s"] = (line.lineno, text.strip()[:500])

    def _envoy_request(self, m: re.Match, line: Line, text: str) -> None:
        """The first request an Envoy proxy ended with a response flag: its flags, bytes and duration (a duration at the
        route's timeout with flag UT is the proxy cutting a stream the engine was still writing)."""
        self.facts.startup["envoy_response_flags"] = m.group(2)
        self.facts.startup["bytes_received"], self.facts.startup["bytes_sent"] = int(m.group(3)), int(m.group(4))
        self.facts.startup["duration_ms"] = int(m.group(5))
        self.facts.startup.setdefault("request_time_s", int(m.group(5)) / 1000)
        self.facts.lines["envoy_response_flags"] = (line.lineno, text.strip()[:500])
        self.facts.lines.setdefault("request_time_s", self.facts.lines["envoy_response_flags"])

    def _lm_eval_row(self, text: str, line: Line) -> None:
        """lm-eval's table, pasted for two runs (the failing one and one from before): where the lenient filter's score
        held (within 2 points) while the strict filter's fell by 10 or more, the answers are as right as before and
        only their format fails the strict check (``eval_format_only``)."""
        # (rows of one width a reader's hard-wrap joined into one line -- "...|0.0094||     |..." -- are read one by one)
        for row in re.split(r"(?<=\|)(?=\|)", text):
            m = _LM_EVAL_ROW.match(row)
            if m:
                self.eval_scores.setdefault((m.group(1), m.group(2)), []).append(float(m.group(3)))
                self._eval_format_only(m.group(2), line, text)

    def _graded_sample(self, text: str, line: Line) -> None:
        """An evaluation's failed sample (a JSON line, its response possibly on the next lines) whose response ends with
        the gold answer while the grader's prediction is another value: the model answered right and the grader
        extracted something else (``eval_misgraded``)."""
        if (m := _GRADED.search(text)) and m.group(1) != m.group(2):
            self._graded = (line.lineno, m.group(1), m.group(2))
        if self._graded is None or line.lineno - self._graded[0] > 2 or not (r := _GRADED_RESPONSE.search(text)):
            return
        _, gold, pred = self._graded
        self._graded = None
        if _final_answer(r.group(1), gold):
            self.facts.startup["eval_misgraded"] = f"the response ends with the gold answer {gold}, the grader read {pred}"
            self.facts.lines["eval_misgraded"] = (line.lineno, text.strip()[:500])

    def _eval_format_only(self, metric: str, line: Line, text: str) -> None:
        strict, lenient = (self.eval_scores.get(("strict-match", metric)),
                           self.eval_scores.get(("flexible-extract", metric)))
        if strict and lenient and len(strict) >= 2 and len(lenient) >= 2 and "eval_format_only" not in self.facts.startup \
                and abs(lenient[0] - lenient[1]) <= 0.02 and abs(strict[0] - strict[1]) >= 0.1:
            self.facts.startup["eval_format_only"] = (f"flexible-extract {lenient[0]:g} vs {lenient[1]:g}, strict-match "
                                                      f"{strict[0]:g} vs {strict[1]:g}")
            self.facts.lines["eval_format_only"] = (line.lineno, text.strip()[:500])

    def _smi_process(self, text: str, line: Line) -> None:
        """nvidia-smi's process table listing a process of another program beside the engine's on one GPU: a co-tenant
        whose memory vLLM's profile saw as used (read as ``cotenant_prose``)."""
        for m in _SMI_PROCESS.finditer(text):
            gpu, name, mib = m.group(1), m.group(3).strip(), int(m.group(4))
            seen = self.smi_rows.setdefault(gpu, [])
            seen.append((name, mib))
            self.smi_pids[(gpu, name, mib)] = int(m.group(2))
            rows = self.facts.startup.setdefault("gpu_processes", [])
            row = {"gpu": int(gpu), "pid": int(m.group(2)), "process": name[:80], "process_mem_mib": mib}
            if len(rows) < 16 and row not in rows:  # (every row the report pastes: the numbers an operator quotes)
                rows.append(row)
            rx = _ENGINE_PROCESS if any(_ENGINE_PROCESS.search(n) for n, _ in seen) else _PYTHON_PROCESS
            engine = [n for n, _ in seen if rx.search(n)]
            other = [(n, v) for n, v in seen if not rx.search(n) and v >= 1024]
            big = sorted(((v, n) for n, v in seen if v >= 1024), reverse=True)
            if not other and rx is _PYTHON_PROCESS and len(big) >= 2:
                # two interpreters of a GiB or more on one GPU, none named vLLM: one is the engine (the larger), the
                # other a program beside it (each vLLM worker holds one GPU; the API server's share is far smaller)
                other = [(big[1][1], big[1][0])]
            if not _ENGINE_PROCESS.search(name) and not _BARE_INTERPRETER.match(name) and mib >= 1024 \
                    and mib > (self.facts.startup.get("other_process_mib") or 0):
                # (a program of its own -- "python train_probe.py", "triton_server" -- is no engine's process)
                self.facts.startup["other_process_mib"] = mib
            if (_ENGINE_PROCESS.search(name) or _BARE_INTERPRETER.match(name)) \
                    and mib > (self.facts.startup.get("engine_process_mib") or 0):
                self.facts.startup["engine_process_mib"] = mib  # (the largest row that may be the engine's)
            if engine and other and "cotenant_prose" not in self.facts.startup:
                self.facts.startup["cotenant_prose"] = (f"nvidia-smi lists {other[0][0]} ({other[0][1]:,} MiB) beside "
                                                        f"vLLM on GPU {gpu}")
                self.facts.startup["other_process_mib"] = other[0][1]
                self.facts.lines["cotenant_prose"] = (line.lineno, text.strip()[:500])

    def _smi_csv(self, text: str, line: Line) -> None:
        """``nvidia-smi --query-gpu=... --format=csv``: its header names the columns, each row after it one GPU; a
        throttle reason the row shows ``Active`` (``clocks_event_reasons.hw_thermal_slowdown``) is read as the
        throttling nvidia-smi -q prints (``gpu_throttled_prose``), with the GPU's temperature and SM clock."""
        if "temperature.gpu" in text or "clocks_event_reasons" in text or "clocks_throttle_reasons" in text \
                or "compute_cap" in text or "clocks.sm" in text:
            self._smi_columns = [c.strip().split(" [")[0] for c in text.split(",")]
            return
        cols = self._smi_columns
        if not cols:
            return
        cells = [c.strip() for c in text.split(",")]
        if len(cells) != len(cols):
            self._smi_columns = None  # (the table ended)
            return
        row = dict(zip(cols, cells))
        cap = row.get("compute_cap", "")
        if re.fullmatch(r"\d{1,2}\.\d", cap) and "compute_capability" not in self.facts.startup:
            major, minor = cap.split(".")
            self.facts.startup["compute_capability"] = [int(major), int(minor)]
            self.facts.lines["compute_capability"] = (line.lineno, text.strip()[:500])
        if "gpu_throttled_prose" in self.facts.startup:
            return
        gpu = row.get("index", "?")
        active = [c for c, v in row.items() if _SMI_REASON.search(c) and v.lower() == "active"]
        mask = next((v for c, v in row.items() if re.fullmatch(r"clocks_(?:event|throttle)_reasons\.active", c)), "")
        temp, sm, top = (_smi_int(row.get(c)) for c in ("temperature.gpu", "clocks.sm", "clocks.max.sm"))
        if active:
            said = f"nvidia-smi: {', '.join(active)} Active on GPU {gpu}"
        elif re.fullmatch(r"0x[0-9a-fA-F]+", mask) and int(mask, 16) & _THROTTLE_BITS:
            said = f"nvidia-smi: clocks_event_reasons.active {mask} (thermal / power-brake slowdown) on GPU {gpu}"
        elif temp is not None and temp >= 85 and sm and top and sm < 0.7 * top and not any(
                _SMI_REASON.search(c) for c in row):  # (no reason column: a hot GPU well below its top clock)
            said = f"nvidia-smi: GPU {gpu} at {temp} C, SM clock {sm} of {top} MHz"
        else:
            return
        self.facts.startup["gpu_throttled_prose"] = said
        self.facts.lines["gpu_throttled_prose"] = (line.lineno, text.strip()[:500])
        for value, name in ((temp, "gpu_temp_c"), (sm, "sm_clock_mhz"), (top, "max_sm_clock_mhz"),
                            (_smi_int(row.get("power.draw")), "power_draw_w")):
            if value is not None:
                self.facts.startup[name] = value  # (the throttled GPU's row, over the -q fields of another GPU)
        if gpu.isdigit():
            self.facts.startup["throttled_gpu_index"] = int(gpu)

    def _bench_row(self, m: re.Match[str], line: Line) -> None:
        """One row of `vllm bench serve`'s result (``bench_runs``: one dict per run the report pastes; a row that
        repeats a name of the run being read starts the next run -- a rerun pasted without its header)."""
        name = re.sub(r"[^a-z0-9]+", "_", m.group(1).lower()).strip("_") + _BENCH_UNITS.get(m.group(2) or "", "")
        run = self._bench_run
        if run is None or name in run:
            if not _BENCH_NAMES.match(name):
                return  # (a "Name:  N" line that is no benchmark's; a run starts with one of its own rows)
            runs = self.facts.startup.setdefault("bench_runs", [])
            if len(runs) >= 8:
                return
            run = self._bench_run = {}
            runs.append(run)
            self.facts.lines.setdefault("bench_runs", (line.lineno, line.text.strip()[:500]))
        if len(run) < 48:
            value = m.group(3)
            run[name] = float(value) if "." in value else int(value)

    def _finish_tool_output(self) -> None:
        """nvidia-smi's process table read against the root error: where vLLM's start-up memory check failed (free
        memory below the requested share) or CUDA ran out of memory on GPU N, the largest process on that GPU that is
        not the engine's is what holds the memory (``other_process_mib`` / ``other_process_pid``). At the start-up
        check the engine has allocated nothing yet, so a bare interpreter there is another program too; after an
        out-of-memory error only a row of its own name (or beside rows named vLLM's) is."""
        msg = self.facts.root.message if self.facts.root is not None else ""
        if not self.smi_rows or not msg:
            return
        at_start = "less than desired GPU memory utilization" in msg
        if not at_start and "out of memory" not in msg.lower():
            return
        m = re.search(r"\bcuda:(\d+)|\bGPU (\d+) has a total capacity", msg)
        gpus = [m.group(1) or m.group(2)] if m else list(self.smi_rows)
        named = any(_ENGINE_PROCESS.search(n) for rows in self.smi_rows.values() for n, _ in rows)
        rows = [(mib, name, gpu) for gpu in gpus for name, mib in self.smi_rows.get(gpu, [])
                if mib >= 1024 and not _ENGINE_PROCESS.search(name)
                and (at_start or named or not _BARE_INTERPRETER.match(name))]
        if rows:
            mib, name, gpu = max(rows)
            self.facts.startup["other_process_mib"] = mib
            self.facts.startup["other_process_pid"] = self.smi_pids[(gpu, name, mib)]


def _cells(row: str) -> list[str]:
    """A table row's cells: between "|" where it has them, else between runs of spaces."""
    return [c.strip() for c in (row.split("|") if "|" in row else row.split())]


def _smi_int(cell: str | None) -> int | None:
    """A cell of nvidia-smi's CSV as a whole number ("1005 MHz", "87", "251.40 W"), None for "[N/A]" or nothing."""
    m = re.match(r"\s*(\d+)(?:\.\d+)?\b", cell or "")
    return int(m.group(1)) if m else None

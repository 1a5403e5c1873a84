"""Who ran what: the vLLM and Python versions, the model and architecture, the GPUs (names, count, compute
capability) and the tensor-parallel size stated in text; the part of the collector that reads them."""

from __future__ import annotations

import re

from ..redact import redact
from .kvtransfer import kv_transfer_facts
from .lines import Line

_VER = r"v?(\d+\.\d+(?:\.\d+)?(?:(?:rc|\.dev|\.post)\d*)?(?:\+[\w.]+)?)"
_VERSION_PATTERNS = [  # (priority, regex): lower is better
    (0, re.compile(r"vLLM (?:API )?server version " + _VER)),
    (0, re.compile(r"Initializing a V1 LLM engine \(" + _VER + r"\)")),
    (0, re.compile(r"Dumping input data for V1 LLM engine \(" + _VER + r"\)")),
    (0, re.compile(r"vLLM batch processing API version " + _VER)),
    (1, re.compile(r"^\s*vLLM Version\s*:\s*" + _VER)),  # collect-env
    (2, re.compile(r"\bvLLM[ _-]?(?:version|Version|VERSION)\s*[:=]?\s*" + _VER)),
    (2, re.compile(r"\bvllm(?:-cpu)?==" + _VER)),
    (3, re.compile(r"vllm/vllm-openai:" + _VER)),
    (3, re.compile(r"\bvllm(?:-cpu)? " + r"(\d+\.\d+\.\d+)\b")),
    # the reporter's own words: "on vLLM 0.26.0", "same vllm (0.32.0)", "vLLM v0.29.0", a title's "[v0.32.0]" (another
    # release named as the one that works or as an upgrade's target is left out: see _OTHER_RELEASE)
    (4, re.compile(r"(?i)(?<![\w./-])vllm(?:[- ]cpu)?\s*(?:version\s*)?[(:=]?\s*v?(\d+\.\d+\.\d+(?:rc\d+)?)\b(?![.\d])")),
    (4, re.compile(r"^\W{0,3}\[v(\d+\.\d+\.\d+)\]")),
]
# words before a release that make it not the one the report runs ("works on vLLM 0.20.2", "upgrading to vllm 0.17.0")
_OTHER_RELEASE = re.compile(r"(?i)(?:works?|worked|working|fine|ok|okay|before|upgrad\w*|downgrad\w*|updat\w*|from|"
                            r"prior|since|until|fixed|fix|than|vs\.?|versus|not|older|newer|switch\w*|pinn?\w*|try|tried|"
                            r"also)[^\w,;]+(?:\w+[^\w,;]+){0,3}$")  # (a comma ends the clause that names another)
_LOGO_VERSION = re.compile(r"█\s+version\s+" + _VER)
_LOGO_MODEL = re.compile(r"█\s+model\s+(\S+)")
# the host's IOMMU logging a DMA fault (Intel VT-d "DMAR: [DMA Write NO_PASID] ... fault reason", AMD-Vi's
# IO_PAGE_FAULT): a device's transfer refused by the IOMMU (peer-to-peer between passed-through GPUs, ACS)
_IOMMU_FAULT = re.compile(r"\bDMAR: \[DMA (?:Read|Write)\b|\bDMAR: DRHD: handling fault\b|AMD-Vi: Event logged \[IO_PAGE_FAULT|"
                          r"\bIO_PAGE_FAULT\b|\biommu\b[^\n]{0,40}?\bfault\b", re.I)
# NVIDIA's Xid codes an operator quotes by their meaning (the driver's catalogue of Xid errors)
_XID_NAMES = {13: "graphics_exception", 31: "mmu_fault", 43: "channel_stopped", 45: "channel_teardown",
              48: "double_bit_ecc", 63: "row_remap", 64: "row_remap_failure", 74: "nvlink", 79: "fallen_off_bus",
              92: "single_bit_ecc_rate", 94: "contained_ecc", 95: "uncontained_ecc", 119: "gsp_timeout",
              120: "gsp_error", 154: "reset_required"}
_SERVING = re.compile(r"vLLM server version \S+, serving model (\S+)")
_ARCH = re.compile(r"\b([A-Z][A-Za-z0-9_]*For(?:CausalLM|ConditionalGeneration|SequenceClassification|MaskedLM|TextEncoding|Embedding))\b")
_ARCH_LIST = re.compile(r"architectures?\s*[:=]?\s*\[\s*'(\w+)'")
_PY = re.compile(r"\bPython(?: version)?\s*:?\s*(3\.\d+(?:\.\d+)?)|/python(3\.\d+)/")
# the libraries whose releases decide what a vLLM can load or run, as `pip list` / `pip freeze` / collect_env print
# them: "transformers              4.57.3", "[pip3] transformers==4.57.3", "PyTorch version: 2.9.0+cu128"
_LIBRARY = re.compile(r"^\W{0,3}(?:\[(?:pip3?|conda)\]\s*)?(transformers|torch|triton|flashinfer(?:-python)?|deep[-_]gemm|"
                      r"xgrammar|lmcache|nixl|PyTorch)(?:\s*==\s*|\s*:\s*|\s{2,}|\s+version\s*:?\s*)"
                      r"(\d+\.\d+(?:\.\d+)?(?:(?:rc|\.dev|\.post|a|b)\d*)?(?:\+[\w.]+)?)\s*$", re.I)
_LIBRARY_NAME = {"pytorch": "torch", "flashinfer-python": "flashinfer", "deep-gemm": "deep_gemm"}

_GPU_NAME = (
    r"(?<![\w-])(?:NVIDIA\s+)?(?:GeForce\s+)?("
    r"GH200|GB200|GB300|H100|H200|H800|B200|B300|A100|A800|A10G|L40S|L40|V100|"
    r"RTX\s?PRO\s?6000(?:\s+Blackwell)?|RTX\s?A6000|RTX\s?6000\s?Ada|RTX\s?[2-5]0[6-9]0(?:\s?Ti)?|"
    r"MI300X|MI325X|MI355X|MI250X?|MI210|Gaudi\s?[23]|"
    r"(?<=NVIDIA )(?:T4|L4|A10|A30|A40|H20)|(?<=Tesla )(?:T4|V100)"
    r")\b"
)
_GPU_RE = re.compile(_GPU_NAME)
_GPU_HINT = re.compile(r"NVIDIA|Tesla|GeForce|RTX|GH200|GB[23]00|[HB][123]00|H[28]00|H20|A[18]00|A10|A30|A40|L40|V100|MI[23]\d\d|Gaudi")
_GPU_ENUM = re.compile(r"^\s*GPU (\d+): (.+?)\s*(?:\(UUID.*)?$")
_GPU_COUNT = re.compile(r"(\d+)\s*(?:×|x|X|\*)\s*" + _GPU_NAME)
_SM = re.compile(r"\b(?:sm_?|SM[ _]?)(\d{2,3})a?\b")
_TP_TEXT = re.compile(r"\b(?:TP|tp)\s*=\s*(\d+)\b")
# the reporter's shorthand for parallel sizes ("TP8, DCP4 on H200", "tp 4 / pp 2"): prose lines only, sizes >= 2
_PAR_TEXT = re.compile(r"(?<![\w/.-])(TP|PP|DP|DCP|PCP|tp|pp|dp|dcp|pcp)\s*[=:]?\s*(\d{1,3})(?![\w%]|\.\d)")  # "TP8." ends a sentence
_GPU_REQUEST = re.compile(r"nvidia\.com/gpu[\"']?\s*[:=]\s*[\"']?(\d+)|count:\s*(\d+)\s*,\s*capabilities:\s*\[\s*gpu|"
                          r"--gpus[ =][\"']?(\d+)\b|CUDA_VISIBLE_DEVICES=[\"']?(\d+(?:,\d+)*)\b")
_PAR_WORDS = re.compile(r"(?:\b(\d{1,3})[- ]way )?\b(tensor|pipeline|data|decode[- ]context|prefill[- ]context)[- ]parallel(?:ism)?"
                        r"(?:(?:[ _-]size)?(?: of| is| =|:|=)? ?(\d{1,3})\b(?![.%]\d))?", re.I)
_PAR_WORD_NAME = {"tensor": "tensor_parallel_size", "pipeline": "pipeline_parallel_size", "data": "data_parallel_size",
                  "decode context": "decode_context_parallel_size", "prefill context": "prefill_context_parallel_size"}
_PAR_NAME = {"tp": "tensor_parallel_size", "pp": "pipeline_parallel_size", "dp": "data_parallel_size",
             "dcp": "decode_context_parallel_size", "pcp": "prefill_context_parallel_size"}
# (the API server's "non-default args: {...}" line opens every `vllm serve` launch, also where a reporter elided the
# version line of a second attempt)
_LAUNCH = re.compile(r"vLLM (?:API )?server version|Initializing a V1 LLM engine|█\s+version\s|\bnon-default args: \{")
# a reporter's line that opens the output of a later run: "---- second run (0.88) ----", "2nd attempt:", "Run 2:",
# "After lowering --gpu-memory-utilization to 0.88:"
_RERUN = re.compile(r"^\W{0,8}(?:(?:second|2nd|third|3rd|next|final|latest|new) (?:run|attempt|try|launch)\b|"
                    r"(?:run|attempt|try) ?#?(?:2|3|two|three)\b|"
                    r"after (?:fixing|lowering|raising|dropping|reducing|increasing|setting|changing|removing|adding)\b"
                    r"[^.]{0,80}:\s*\W{0,8}$)", re.I)


# a negation right before a driver code the report names
_NOT_BEFORE = re.compile(r"\b(?:no|not|without|never|zero|nor)\s+(?:an?\s+|any\s+)?$", re.I)


class IdentityLines:
    """Mixin of :class:`~vllm_diag.postmortem.extract.FactCollector`: version, model, GPU."""

    def _common_line(self, line: Line) -> None:
        text = line.text
        self._cur = line
        if "kv_" in text:  # the KV connector and its role (P/D, offloading), in whatever form the line has
            for name, value in kv_transfer_facts(text).items():
                if name not in self.facts.startup:
                    self._set_startup(name, value, line)
        # version
        has_ver = "ersion" in text or "vllm" in text or "VERSION" in text or "LLM engine (" in text or "vLLM" in text \
            or "[v" in text
        for prio, rx in _VERSION_PATTERNS:
            if prio >= self._version_prio or not has_ver:
                break
            m = rx.search(text)
            if m and prio == 4 and (line.level is not None or _OTHER_RELEASE.search(text[max(0, m.start() - 40):m.start()])):
                continue  # (prose only, and the release it runs)
            if m:
                self._version_prio = prio
                self.facts.vllm_version = m.group(1)
                self._note("vllm_version", line)
                break
        if "█" in text:
            m = _LOGO_VERSION.search(text)
            if m and self._version_prio > 0:
                self._version_prio = 0
                self.facts.vllm_version = m.group(1)
                self._note("vllm_version", line)
            m = _LOGO_MODEL.search(text)
            if m:
                self.model_lines.insert(0, (line.lineno, m.group(1)))
        if ("ersion" in text or "LLM engine" in text or "non-default" in text) and _LAUNCH.search(text):
            self.launches.append(line.lineno)
        elif line.level is None and len(text) < 120 and _RERUN.match(text):
            self.launches.append(line.lineno)  # the reporter's marker of a later run: its errors are the report's
        m = _SERVING.search(text) if "serving model" in text else None
        if m:
            self.model_lines.insert(0, (line.lineno, m.group(1)))
        # architecture
        if "For" in text:
            for m in _ARCH.finditer(text):
                if len(self.arch_mentions) < 50:
                    self.arch_mentions.append(m.group(1))
                if "architecture" in text and "resolved_architecture" not in self.facts.startup:
                    self._note("architecture", line)
        # GPU
        if not _GPU_HINT.search(text):
            self._misc_line(text)
            return
        m = _GPU_ENUM.match(text)
        if m and _GPU_RE.search(m.group(2)):
            self.gpu_enum[int(m.group(1))] = m.group(2).strip()
            self._note("gpu", line)
        else:
            for m in _GPU_RE.finditer(text):
                if len(self.gpu_mentions) < 50:
                    self.gpu_mentions.append(" ".join(m.group(1).split()))
                    self.facts.lines.setdefault("gpu", (line.lineno, line.display or text.strip()))
            m = _GPU_COUNT.search(text)
            if m and self.gpu_count_text is None:
                self.gpu_count_text = int(m.group(1))
        self._misc_line(text)

    def _misc_line(self, text: str) -> None:
        line = self._cur
        if "Watchdog caught collective operation timeout" in text and "nccl_watchdog" not in self.facts.lines:
            self._note("nccl_watchdog", line)
            m = re.search(r"Timeout\(ms\)=(\d+)", text)
            if m:
                self.facts.numbers["nccl_timeout_ms"] = int(m.group(1))
            m = re.search(r"ran for (\d+) milliseconds", text)
            if m:
                self.facts.numbers["nccl_ran_ms"] = int(m.group(1))
            # the collective: WorkNCCL(SeqNum=188342, OpType=ALLREDUCE, NumelIn=14336, NumelOut=14336, ...)
            from .numbers import label_numbers

            for name, val in label_numbers(text).items():
                self.facts.numbers.setdefault(name, val)
            m = re.search(r"\[Rank (\d+)\]\s*Watchdog caught", text)
            if m:  # the rank whose collective timed out
                self.facts.numbers.setdefault("nccl_timeout_rank", int(m.group(1)))
        if "Xid" in text:
            from .numbers import _XID

            # the driver's report (NVRM: Xid (PCI:...): 79, pid=...), in or outside error lines; not a code the report
            # says is absent ("no Xid 79 in dmesg, only Xid 13")
            m = next((x for x in _XID.finditer(text) if not _NOT_BEFORE.search(text[max(0, x.start() - 16):x.start()])),
                     None)
            if m:
                xid = int(m.group(1))
                if "xid" not in self.facts.numbers:
                    self.facts.numbers["xid"] = xid
                    self._note("xid", line)
                seen = self.facts.startup.setdefault("xids", [])  # every code the driver reported, in order
                if xid not in seen and len(seen) < 8:
                    seen.append(xid)
                    if xid in _XID_NAMES:  # (each by its meaning too: "xid_row_remap": 63)
                        self.facts.startup[f"xid_{_XID_NAMES[xid]}"] = xid
        if ("DMAR" in text or "AMD-Vi" in text or "IO_PAGE_FAULT" in text or "ommu" in text) \
                and "iommu_fault" not in self.facts.startup and _IOMMU_FAULT.search(text):
            # the host's IOMMU refusing a device's DMA: a GPU's peer-to-peer or copy-engine transfer blocked
            self.facts.startup["iommu_fault"] = text.strip()[:300]
            self._note("iommu_fault", line)
        m = _SM.search(text) if self.sm is None and ("sm" in text or "SM" in text) else None
        if m and self.sm is None:
            self.sm = int(m.group(1))
        m = _TP_TEXT.search(text) if self.tp_text is None and ("TP" in text or "tp" in text) else None
        if m and self.tp_text is None:
            self.tp_text = int(m.group(1))
        if line.level is None and line.process is None and ("P" in text or "p" in text) and len(text) < 2000:
            for kind, n in _PAR_TEXT.findall(text):
                if int(n) >= 2:
                    self.par_text.setdefault(_PAR_NAME[kind.lower()], int(n))
            if "arallel" in text:  # "tensor parallel 8", "pipeline parallel size of 2", "8-way tensor parallelism"
                for n1, kind, n2 in _PAR_WORDS.findall(text):
                    n = int(n1 or n2 or 0)
                    if n >= 2:
                        self.par_text.setdefault(_PAR_WORD_NAME[kind.lower().replace("-", " ")], n)
        if ("gpu" in text or "GPU" in text or "DEVICES" in text) and "gpus_requested" not in self.facts.startup:
            m = _GPU_REQUEST.search(text)
            if m:  # the GPUs the deployment asks for (k8s limits, compose devices, docker --gpus, CUDA_VISIBLE_DEVICES)
                n = int(m.group(1) or m.group(2) or m.group(3)) if not m.group(4) else len(m.group(4).split(","))
                if 0 < n <= 1024:
                    self.facts.startup["gpus_requested"] = n
                    self._note("gpus_requested", line)
        if len(text) < 120 and (m := _LIBRARY.match(text)):
            name = m.group(1).lower()
            key = _LIBRARY_NAME.get(name, name) + "_version"
            if key not in self.facts.startup:
                self.facts.startup[key] = m.group(2)
                self._note(key, line)
        if self.facts.python_version is None and ("ython" in text):
            m = _PY.search(text)
            if m:
                self.facts.python_version = m.group(1) or m.group(2)

    def _finish_identity(self) -> None:
        f = self.facts
        a = f.args
        model = a.get("model")
        if not model and self.model_lines:
            model = self.model_lines[0][1]
            f.lines.setdefault("model", (self.model_lines[0][0], model))
        f.model = redact(str(model)) if model else None
        if f.model:
            f.args.setdefault("model", f.model)
        if self.draft_lines and a.get("speculative_method") in (None, "draft_model"):
            a["draft_model_name"] = self.draft_lines[0][1]
        mentions = [r for r in self.repo_mentions if r != f.model and r != a.get("draft_model_name")]
        if mentions:
            f.startup["repo_mentions"] = mentions[:10]
        arch = f.startup.get("resolved_architecture")
        if not arch and self.arch_mentions:
            counts: dict[str, int] = {}
            for name in self.arch_mentions:
                counts[name] = counts.get(name, 0) + 1
            arch = max(counts, key=lambda n: (counts[n], -self.arch_mentions.index(n)))
        f.architecture = arch
        if arch:
            f.args.setdefault("architecture", arch)
        if self.gpu_enum:
            f.gpu_names = [self.gpu_enum[i] for i in sorted(self.gpu_enum)]
            f.gpu_count = len(self.gpu_enum)
        elif self.gpu_mentions:
            counts = {}
            for name in self.gpu_mentions:
                counts[name] = counts.get(name, 0) + 1
            f.gpu_names = [max(counts, key=lambda n: (counts[n], len(n)))]
            f.gpu_count = self.gpu_count_text
        for name, n in self.par_text.items():  # the reporter's shorthand, where nothing states the size
            if name not in a and not (name == "tensor_parallel_size" and self.tp_text):
                a[name] = n
        tp = a.get("tensor_parallel_size") or self.tp_text
        if tp and "tensor_parallel_size" not in a:
            a["tensor_parallel_size"] = tp
        if f.gpu_count is None and tp and f.gpu_names:
            tp_n, pp_n = _count(tp), _count(a.get("pipeline_parallel_size") or 1)
            if tp_n is not None and pp_n is not None:  # (an elided value -- "1 ..." -- counts no GPUs)
                f.gpu_count = tp_n * pp_n
        if self.sm is not None:
            f.startup["compute_capability"] = [self.sm // 10, self.sm % 10]


def _count(value) -> int | None:
    """A parallel size as an int, or None where the log's value is not one (elided, a variable)."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return None

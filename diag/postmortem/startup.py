"""Startup and metrics lines of vLLM's own log records (block sizes, padding, KV-cache size, concurrency,
prefix-cache hit rate, the engine's config and non-default args): the part of the collector that reads them."""

from __future__ import annotations

import re
from typing import Any

from .lines import Line
from .numbers import _FLOAT, _INT, logged_numbers
from .pylit import LiteralError, parse_kwargs, parse_literal_prefix

# (fact name, regex, converter); first group is the value
_SPEC_DOWNGRADE = "is not supported with spec-decode for attention backend "
# the platform's words for an attention backend (vllm/platforms/cuda.py, rocm.py 0.10-0.11) -> its enum name
_BACKEND_WORDS = {"sparse mla": "FLASHMLA_SPARSE", "flashmla sparse mla": "FLASHMLA_SPARSE", "cutlass mla": "CUTLASS_MLA",
                  "flashinfer mla": "FLASHINFER_MLA", "flashmla": "FLASHMLA", "flashattention mla": "FLASH_ATTN_MLA",
                  "triton mla": "TRITON_MLA", "aiter mla": "ROCM_AITER_MLA", "flashinfer": "FLASHINFER",
                  "flexattention": "FLEX_ATTENTION", "triton": "TRITON_ATTN", "triton attention": "TRITON_ATTN",
                  "flash attention": "FLASH_ATTN", "tree attention": "TREE_ATTN", "xformers": "XFORMERS",
                  "rocm/aiter attention": "ROCM_AITER_FA"}
_STARTUP_PATTERNS_RAW: list[tuple[str, re.Pattern[str], Any]] = [
    ("attention_block_size", re.compile(r"Setting attention block size to (\d+) tokens"), int),
    ("mamba_padding_percent", re.compile(r"Padding mamba page size by " + _FLOAT + r"%"), float),
    ("max_cudagraph_capture_size_truncated", re.compile(r"Truncating max_cudagraph_capture_size to (\d+)"), int),
    ("kv_cache_block_size_backend", re.compile(r"Setting kv cache block size to (\d+) for"), int),
    # vllm/platforms/cuda.py before the backends chose their own: "Forcing kv cache block size to 128 for CUTLASS_MLA"
    ("kv_cache_block_size_backend", re.compile(r"Forcing kv cache block size to (\d+) for"), int),
    # suffix decoding's default when the config names none (vllm/config/speculative.py)
    ("num_speculative_tokens_default", re.compile(r"Defaulted num_speculative_tokens to (\d+)"), int),
    ("kv_padding_layers", re.compile(r"Add (\d+) padding layers, may waste at most"), int),
    ("kv_padding_waste_percent", re.compile(r"padding layers, may waste at most " + _FLOAT + r"%"), float),
    ("mamba_cache_mode", re.compile(r"Mamba cache mode is set to '(\w+)'"), str),
    # vLLM 0.13+: "Warning: Prefix caching in Mamba cache 'align' mode is currently enabled. ..."
    ("mamba_cache_mode", re.compile(r"Prefix caching in Mamba cache '(\w+)' mode"), str),
    ("mamba_cache_mode", re.compile(r"Mamba cache 'all' mode: falling back to '(\w+)' mode"), str),
    ("resolved_architecture", re.compile(r"Resolved architecture: (\w+)"), str),
    # the attention backend vLLM picked ("Using FLASHINFER attention backend out of potential backends: [...]",
    # "Using FLASHMLA backend"), and FlashInfer's TRTLLM-gen decode on Blackwell ("Using TRTLLM attention")
    ("attention_backend_selected", re.compile(r"\bUsing ([A-Z][A-Z0-9_]{3,}) (?:attention )?backend\b"), str),
    # the platform's older words for the same choice ("Using AITER MLA backend on V1 engine.", "Using Triton MLA backend
    # on V1 engine.", vllm/platforms/cuda.py and rocm.py before the registry): the backend's enum name
    ("attention_backend_selected", re.compile(r"Using ([A-Z][\w/]*(?: [A-Z][\w/]*){0,3}) backend on V1 engine\b"),
     lambda s: _BACKEND_WORDS.get(s.lower(), re.sub(r"\W+", "_", s).upper())),
    ("trtllm_attention", re.compile(r"\bUsing TRTLLM attention\b()"), lambda s: True),
    # transformers' Python tokenizer (no tokenizer.json): vLLM warns (transformers_utils/tokenizer.py, registry.py)
    ("slow_tokenizer", re.compile(r"Using a slow tokenizer()"), lambda s: True),
    # an MLA decode given decodes of different query lengths falls back to one query row per token (vllm/v1/attention/
    # backends/mla/flashinfer_mla.py, tokenspeed_mla.py: "FlashInferMLAImpl got a query of uneven length.")
    ("mla_uneven_query", re.compile(r"MLAImpl got a query of uneven length()"), lambda s: True),
    # a hybrid whose layers have no prefix-caching support in that release: vLLM turns --enable-prefix-caching off
    # (vllm/model_executor/models/config.py HybridAttentionMambaModelConfig, 0.11: "... detected: disabling prefix
    # caching since it is not yet supported", 0.12-0.17: "... detected without support for prefix caching: disabling")
    ("prefix_caching_disabled_hybrid", re.compile(r"Hybrid or mamba-based model detected(: disabling prefix caching|"
                                                  r" without support for prefix caching: disabling)"), lambda s: True),
    # the reporter ran with synchronous launches (not vLLM's/PyTorch's hint "consider passing CUDA_LAUNCH_BLOCKING=1")
    ("cuda_launch_blocking", re.compile(r"CUDA_LAUNCH_BLOCKING\s*=\s*['\"]?(1)(?!\d)(?<!passing CUDA_LAUNCH_BLOCKING=1)"),
     lambda s: True),
    # a backend whose full CUDA graphs take single-token decodes only: under drafts (1 + k tokens a decode) vLLM
    # drops full graphs (vllm/config/compilation.py, gpu_model_runner.py before 0.15: "CUDAGraphMode.FULL_AND_PIECEWISE
    # is not supported with spec-decode for attention backend X (support: AttentionCGSupport.Y); setting cudagraph_mode=Z")
    ("cudagraph_spec_downgrade_backend", re.compile(_SPEC_DOWNGRADE + r"(\w+)"), str),
    ("cudagraph_spec_downgrade_support", re.compile(_SPEC_DOWNGRADE + r"\w+ \(support: (?:AttentionCGSupport\.)?(\w+)"), str),
    ("cudagraph_spec_downgrade_mode", re.compile(_SPEC_DOWNGRADE + r".{0,120}?setting cudagraph_mode=(\w+)"), str),
    # a parallel drafter's pass (DFlash / DSpark, vllm/config/vllm.py _set_max_num_scheduled_tokens, 0.33+) takes
    # num_lookahead_tokens query rows a request inside max_num_batched_tokens: vLLM lowers the concurrent requests
    # ("The dflash draft pass needs 16 query tokens per request within max_num_batched_tokens=2048. Overriding
    # max_num_active_seqs from 1024 to 128.")
    ("draft_pass_method", re.compile(r"The (\w+) draft pass needs \d+ query tokens per request"), str),
    ("num_lookahead_tokens", re.compile(r"draft pass needs (\d+) query tokens per request within max_num_batched_tokens"), int),
    ("draft_pass_max_num_batched_tokens", re.compile(r"draft pass needs \d+ query tokens per request within "
                                                     r"max_num_batched_tokens=(\d+)"), int),
    # VllmConfig._set_max_num_scheduled_tokens (0.21+): the drafter's extra slots (max_num_new_slots_for_drafting x
    # max_num_seqs) come off the step's token budget, and vLLM warns below 8192
    ("max_num_scheduled_tokens_reduced", re.compile(r"max_num_scheduled_tokens is set to (-?\d+) based on the speculative "
                                                    r"decoding settings"), int),
    ("max_num_active_seqs_requested", re.compile(r"Overriding max_num_active_seqs from (\d+) to \d+"), int),
    ("max_num_active_seqs_capped", re.compile(r"Overriding max_num_active_seqs from \d+ to (\d+)"), int),
    # (negative where the weights and activations already exceed gpu_memory_utilization's share of the GPU)
    ("available_kv_cache_gib", re.compile(r"Available KV cache memory: (-?\d+(?:\.\d+)?) ?GiB"), float),
    # vllm/config/model.py: the checkpoint's dtype cast to the one asked for ("Casting torch.bfloat16 to torch.float16")
    # the model's generation_config.json supplies the default sampling parameters (temperature, top_p, top_k)
    ("generation_config_sampling", re.compile(r"Default sampling parameters have been overridden by the model's "
                                              r"Hugging Face generation config()"), lambda s: True),
    ("generation_config_sampling", re.compile(r"Using default (?:chat |completion )?sampling params from model: (\{[^}]{1,200}\})"),
     str),
    # 0.17+: "Default vLLM sampling parameters have been overridden by the model's `generation_config.json`: `{...}`"
    ("generation_config_sampling", re.compile(r"Default vLLM sampling parameters have been overridden by [^:]{1,80}: `?"
                                              r"(\{[^}]{1,200}\})"), str),
    # no tuned fused-MoE kernel config for this expert shape and GPU: the MoE GEMMs run with default tile sizes
    ("moe_default_config", re.compile(r"Using default MoE config\. Performance might be sub-optimal!.{0,40}?"
                                      r"(E=\d+,N=\d+[^\s]*?)?(?:\.json)?(?:\s|$)"), lambda s: s or True),
    ("dtype_cast_from", re.compile(r"Casting torch\.(\w+) to torch\.\w+"), str),
    ("dtype_cast_to", re.compile(r"Casting torch\.\w+ to torch\.(\w+)"), str),
    # the KV connector's hits (vLLM's stats line: "External prefix cache hit rate: 99.9%")
    ("external_prefix_cache_hit_rate", re.compile(r"External prefix cache hit rate: " + _FLOAT + r"%"), float),
    # vLLM's own word that the KV cache is quantized and that its scales are the defaults, not calibrated
    # (vllm/config/cache.py; vllm/model_executor/layers/quantization/kv_cache.py)
    ("kv_cache_dtype_logged", re.compile(r"Using (fp8\w*) data type to store kv cache"), str),
    ("kv_scale_default_dtype", re.compile(r"Using KV cache scaling factor 1\.0 for (fp8\w*)"), str),
    ("model_loading_gib", re.compile(r"Model loading took " + _FLOAT + r" ?Gi?B"), float),
    # "Model loading took 31.06 GiB memory and 286.11 seconds": how long the weights took (a slow start)
    ("model_loading_seconds", re.compile(r"Model loading took [^,\n]{0,40}? and " + _FLOAT + r" ?s(?:ec(?:ond)?s?)?\b"), float),
    ("weights_loading_seconds", re.compile(r"Loading weights took " + _FLOAT + r" ?s(?:ec(?:ond)?s?)?\b"), float),
    # the loader's progress bar, "Loading safetensors checkpoint shards: 5% Completed | 1/20 [01:31<28:59, 91.55s/it]":
    # seconds a shard (a load cut short -- a liveness probe -- never logs the total)
    ("weights_shard_seconds", re.compile(r"Loading safetensors checkpoint shards:.{0,40}?\|\s*\d+/\d+ \[[^\]]{0,30}?, "
                                         + _FLOAT + r"s/it\]"), float),
    ("weights_shards", re.compile(r"Loading safetensors checkpoint shards:.{0,40}?\|\s*\d+/(\d+) \["), int),
    # vllm/platforms/cpu.py (0.32): the CPU host runs the accelerated GDN path (AVX512-BF16), SSM state in float32
    ("cpu_accelerated_gdn", re.compile(r"Reset SSM cache type to float32 for accelerated (GDN)"), lambda s: True),
    ("cpu_accelerated_gdn", re.compile(r"SSM state storage for the CPU accelerated (GDN)"), lambda s: True),
    ("num_gpu_blocks", re.compile(r"# (?:GPU|CUDA|cuda) blocks: (\d+)"), int),
    ("dsa_use_flattening", re.compile(r"DSA indexer decode path: use_flattening=(\w+)"), lambda s: s == "True"),
    # (the same line's next_n is num_speculative_tokens + 1: sparse_attn_indexer.py sets it from the spec config)
    ("dsa_next_n", re.compile(r"DSA indexer decode path: .{0,80}?\(next_n=(\d+)"), int),
    # the start whose indexer flattens its multi-token decode (next_n above the kernel's native set on this GPU)
    ("dsa_flattened_next_n", re.compile(r"DSA indexer decode path: use_flattening=True \(next_n=(\d+)"), int),
    # ... and the start whose indexer hands its multi-token decode to the kernel as it is (its peak: a report may
    # hold a run at k = 1 after the one at k = 4)
    ("dsa_native_next_n", re.compile(r"DSA indexer decode path: use_flattening=False \(next_n=(\d+)"), int),
    # vLLM's own word that the GPUs of a TP group talk over PCIe without P2P (custom_all_reduce.py): every layer's
    # all-reduce goes through NCCL over the host's PCIe / socket link
    ("custom_allreduce_off", re.compile(r"Custom allreduce is disabled because (it's not supported on more than two "
                                        r"PCIe-only GPUs|your platform lacks GPU P2P capability)"), str),
    ("engine_init_seconds", re.compile(r"init engine \(profile, create kv cache, warmup model\) took " + _FLOAT), float),
    # "Graph capturing finished in 9 secs, took 1.24 GiB"
    ("cudagraph_memory_gib", re.compile(r"Graph capturing finished in \d+ secs?, took " + _FLOAT + r" ?GiB"), float),
    ("cudagraph_capture_secs", re.compile(r"Graph capturing finished in (\d+) secs?\b"), int),
    # vLLM 0.2x's profiling estimate before capture: "Estimated CUDA graph memory: 2.61 GiB total"
    ("cudagraph_memory_estimate_gib", re.compile(r"Estimated CUDA graph memory: " + _FLOAT + r" ?GiB"), float),
    # a rank that stopped reading the engine's broadcast queue (a hung or dead worker): shm_broadcast.py
    ("shm_broadcast_wait_seconds", re.compile(r"No available shared memory broadcast block found in (\d+) seconds"), int),
    # the engine's periodic stats line: "Running: 17 reqs, Waiting: 42 reqs, GPU KV cache usage: 87.4%" (vLLM's
    # Prometheus names: vllm:num_requests_running / num_requests_waiting / kv_cache_usage_perc); the last values
    ("num_requests_running", re.compile(r"Running: (\d+) reqs"), int),
    ("num_requests_waiting", re.compile(r"Waiting: (\d+) reqs"), int),
    ("gpu_kv_cache_usage_percent", re.compile(r"GPU KV cache usage: " + _FLOAT + r"%"), float),
    # the same line's rates, "Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 18.3 tokens/s": what a
    # throughput complaint quotes
    ("prompt_throughput_tok_s", re.compile(r"Avg prompt throughput: " + _FLOAT + r" tokens/s"), float),
    ("generation_throughput_tok_s", re.compile(r"Avg generation throughput: " + _FLOAT + r" tokens/s"), float),
]
# the profiling line's graph groups (gpu_model_runner.py 0.20+): "PIECEWISE=49 (largest=512), FULL=33 (largest=256)"
_GRAPH_GROUP = re.compile(r"\b(PIECEWISE|FULL|ENCODER)=(\d+) \(largest=(\d+)\)")
# the capture's progress bar (gpu_model_runner.py, "Capturing CUDA graphs ({kind}, {mode})", 0.11+): how many graphs
# of each kind -- "decode, FULL: 0/66", "mixed prefill-decode, PIECEWISE: 67/67"
_CAPTURE_BAR = re.compile(r"Capturing CUDA graphs \((?:(decode)|(mixed)[\w -]*), (FULL|PIECEWISE)\):.{0,80}?\|\s*\d+/(\d+)\b")
# a literal each pattern needs, checked with `in` before the regex runs (most lines match none)
_STARTUP_PATTERNS = [(rx.pattern.split("(")[0].split("\\")[0][:14], name, rx, conv) for name, rx, conv in _STARTUP_PATTERNS_RAW]
# the engine's stats line (vLLM 0.8+ loggers.py): "Running: 170 reqs, Waiting: 80 reqs, Preemptions: 127, GPU KV cache
# usage: 100.0%" -- a preemption counter appears once requests were preempted (recomputed) for want of KV blocks; a
# preemption storm shows in the highest values over the log (<name>_max), not the last
_PREEMPTIONS = re.compile(r"Preemptions: (\d+)")
_STAMP = re.compile(r"\b(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\b")
# vLLM's request log: "Received request chatcmpl-..: prompt: '...'" (older) / "Request chatcmpl-.. details: prompt: "...""
# (or with the sampling parameters first: "Received request chatcmpl-..: params: SamplingParams(...), prompt: '...'")
_LOGGED_PROMPT = re.compile(r"\bRe(?:ceived re)?quest \S+(?: details)?:?(?: params: [^\n]{0,600}?,)? prompt: ['\"](.{20,})")
# the stats line's values whose first is kept beside the last when they change (<name>_first): a report quotes the
# load where its trouble began as often as where it ended
_FIRSTED = ("prompt_throughput_tok_s", "generation_throughput_tok_s", "num_requests_running", "num_requests_waiting",
            "gpu_kv_cache_usage_percent")
_PEAKED = ("num_requests_waiting", "gpu_kv_cache_usage_percent", "num_requests_running", "dsa_native_next_n")
_KV_SIZE = re.compile(r"\b(GPU|CPU|XPU|TPU|HPU)(?: \+ host)? KV cache size: " + _INT + r" tokens")
_CONCURRENCY = re.compile(r"Maximum concurrency for " + _INT + r" tokens per request: " + _FLOAT + r"x")
_HIT_RATE = re.compile(r"(?<!External )(?<!MM )Prefix cache hit rate: (?:GPU: )?" + _FLOAT + r"%")
_PID = re.compile(r"\bpid=(\d+)")
# a record that states a setting (logged_numbers reads it); not the engine's config dump or the crash dump
_LOGGED_HINT = re.compile(r"[a-z]_[a-z]\w*\s*=\s*-?\d|Using (?:a |the )?(?:max |min )?[a-z]|\bfrom (?:max )?\d+ to \d")
_VOCAB = re.compile(r"\b(?:draft_)?vocab_size\b[\"']?\s*[:=]\s*(\d{4,7})\b|"
                    r"\btokenizer\b[^.\n]{0,40}?\b(?:has|with|of|size|length|len)\b\D{0,12}(\d{4,7})\b|"
                    r"\blen\(\s*tokenizer\s*\)\s*(?:=|==|is|:)?\s*(\d{4,7})\b", re.I)
# a tokenizer's added token and its id (tokenizer.json's added vocabulary '"<|field_start|>": 100357', the
# added_tokens_decoder's '"100357": {"content": ...'): the tokenizer produces that id
_ADDED_TOKEN = re.compile(r"[\"'](?:<[^\"'\n]{1,40}>|\[[A-Z_]{2,20}\])[\"']\s*:\s*(\d{4,7})\b|[\"'](\d{4,7})[\"']\s*:\s*\{\s*[\"']content")
# a REPL's question whose answer is the next line: "...).vocab_size" or '...["vocab_size"]' -> "131072", a
# tokenizer's length ("len(AutoTokenizer.from_pretrained(...))"), an embedding table's shape
# ("...embeddings.weight").get_shape()" -> "[131072, 4480]": its rows are the vocabulary the model can look up
_REPL_VOCAB = re.compile(r"^\s*(?:>>>|In \[\d+\]:)\s(?:.*(?:\.vocab_size|\[[\"']vocab_size[\"']\])\s*$|"
                         r".*embed\w*\.weight\b.*(?:shape|size\(\))\W*$|\s*len\(\s*(?:AutoTokenizer\b|tokenizer|tok\b).*\)\s*$)")
_REPL_ANSWER = re.compile(r"^\s*(?:Out\[\d+\]:\s*)?(?:\[\s*|torch\.Size\(\[\s*)?(\d{4,7})\b")
# token ids a request carries, in the reporter's words ("it contains ids 131072 and 131073"): the largest
_TOKEN_IDS = re.compile(r"\b(?:token )?ids? ((?:\d{4,7})(?:(?:,|, and| and| &) \d{4,7})*)\b")
_LOGGER_SRC = re.compile(r"\[([A-Za-z_][\w\-]*)\.py:(\d+)\]")
_CAPPING = re.compile(r"Capping cudagraph capture sizes from max (\d+) to (\d+)(?:[^(]{0,80}\((\d+) blocks available\))?")
# the same check when no capture size fits (vllm/config/compilation.py adjust_cudagraph_sizes_for_mamba_cache, 0.18-0.19)
_NO_CAPTURE = re.compile(r"No valid cudagraph capture sizes remain after capping to Mamba cache blocks \((\d+)\)"
                         r"(?:\.\s*The smallest capture size was (\d+))?")
_MODEL_RUNNER = re.compile(r"using the (V[12]) model runner|Model Runner (V2) (?:is|will be) used", re.I)
_HYBRID_OFF = re.compile(r"Hybrid KV cache manager is disabled")
_HYBRID_OFF_WHY = re.compile(r"Turning off hybrid kv cache manager because ([^.]{5,200})")


# startup facts that each engine start states once (a change between two of them is a second start)
_CG_CAPTURE_SIZES = re.compile(r"^\s*-?\s*Capture sizes:\s*\[([\d,\s.\[\]]{1,2000})\]\s*$")
_CG_STATS_ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(NONE|FULL|PIECEWISE)\s*\|\s*(\d+)\s*\|$")
# vLLM's own shutdown records (0.2x: "[shutdown] API server: shutdown triggered", "[shutdown] EngineCore: trigger
# received signal=SIGTERM"), uvicorn's "Shutting down", a launcher's "Received SIGTERM"
_SHUTDOWN = re.compile(r"\[shutdown\] (?:API server: shutdown triggered|EngineCore: trigger received signal=SIG\w+)|"
                       r"^Shutting down$|\b[Rr]eceived (?:signal )?SIG(?:TERM|INT)\b")
_PER_START = {"max_cudagraph_capture_size_capped", "attention_block_size", "mamba_padding_percent", "max_cudagraph_capture_size_truncated",
              "kv_cache_block_size_backend", "kv_padding_layers", "kv_padding_waste_percent", "available_kv_cache_gib",
              "num_gpu_blocks", "gpu_kv_cache_tokens", "max_concurrency"}


# startup facts that decide a finding on their own: the place vLLM logs them from is quoted with them
_DECISIVE = frozenset({"prefix_caching_disabled_hybrid"})


class StartupLines:
    """Mixin of :class:`~vllm_diag.postmortem.extract.FactCollector`: vLLM's startup / metrics records."""

    def _note(self, name: str, line: Line) -> None:
        self.facts.lines[name] = (line.lineno, line.display or line.text.strip())

    def _set_startup(self, name: str, value: Any, line: Line) -> None:
        if name == "resolved_architecture" and self.facts.startup.get(name, value) != value:
            # a second architecture in one start is the draft model's (vLLM resolves the target's first, then the
            # speculative config's draft model): the model stays the first; every one is listed
            seen = self.facts.startup.setdefault("resolved_architectures", [self.facts.startup[name]])
            if value not in seen and len(seen) < 8:
                seen.append(value)
            return
        old = self.facts.startup.get(name, value)
        if old != value and name in _PER_START:
            # a second engine start in the same log (an A/B comparison, a restart with other flags): the last
            # value is the fact, every start's value is kept in order under <name>_runs
            runs = self.facts.startup.setdefault(f"{name}_runs", [old])
            if len(runs) < 8:
                runs.append(value)
        self.facts.startup[name] = value
        if name == "cuda_launch_blocking" and "cuda_launch_blocking_first" not in self.facts.lines:
            self._note("cuda_launch_blocking_first", line)  # whether the failing run had it, or only a later rerun
        self._note(name, line)
        if (line.level == "WARNING" or name in _DECISIVE) and "[" in line.display:
            # a warning is quoted by where vLLM logs it ("[flashinfer_mla.py:N] FlashInferMLAImpl got a query of
            # uneven length."): the logger's <file stem>_line, first warning of each file; a line that decides a
            # finding on its own (vLLM turning prefix caching off for a hybrid, "[config.py:345]") is quoted by its place
            m = _LOGGER_SRC.search(line.display[:200])
            if m and len(self.facts.startup) < 200:
                key = f"{m.group(1).replace('-', '_')}_line"
                if name in _DECISIVE:
                    self.facts.startup[key] = int(m.group(2))
                else:
                    self.facts.startup.setdefault(key, int(m.group(2)))

    def _shutdown(self, line: Line) -> None:
        """The first line where the server or the engine was told to stop (a signal, vLLM's own shutdown records):
        what the engine client raises after it is the teardown, not a failure."""
        if "shutdown_requested" not in self.facts.lines and _SHUTDOWN.search(line.text):
            self._note("shutdown_requested", line)

    def _peak(self, name: str, value: float, line: Line) -> None:
        if value > self.facts.startup.get(f"{name}_max", -1):
            self._set_startup(f"{name}_max", value, line)

    def vocab_line(self, line: Line) -> None:
        """Vocabulary sizes a report states, in a record or in prose (config.json's vocab_size / draft_vocab_size,
        the tokenizer's length): two that differ are a token id past an embedding table waiting to happen."""
        for m in _ADDED_TOKEN.finditer(line.text[:4000]):
            self._peak("added_token_id", int(next(g for g in m.groups() if g)), line)
        for m in _VOCAB.finditer(line.text[:4000]):
            self._vocab_size(int(next(g for g in m.groups() if g)), line)
        if "token" in line.text and (m := _TOKEN_IDS.search(line.text[:4000])):
            self._peak("prompt_token_id", max(int(x) for x in re.findall(r"\d{4,7}", m.group(1))), line)

    def _vocab_size(self, value: int, line: Line) -> None:
        sizes = self.facts.startup.get("vocab_sizes") or []
        if value not in sizes and len(sizes) < 8:
            sizes.append(value)
            self.facts.startup["vocab_sizes"] = sizes
            self._note("vocab_sizes", line)

    def repl_vocab(self, line: Line, previous: str) -> None:
        """The answer of a REPL line that asked for a vocab_size or an embedding table's shape (see ``_REPL_VOCAB``)."""
        if _REPL_VOCAB.match(previous) and (m := _REPL_ANSWER.match(line.text)):
            self._vocab_size(int(m.group(1)), line)

    def capture_bar(self, line: Line) -> None:
        """The number of CUDA graphs of each kind the capture's progress bar counts (``decode_full_capture_sizes``,
        ``mixed_piecewise_capture_sizes``), a prefixed record or a bare terminal line alike."""
        m = _CAPTURE_BAR.search(line.text)
        if m:
            name = f"{m.group(1) or m.group(2)}_{m.group(3).lower()}_capture_sizes"
            if name not in self.facts.startup:
                self._set_startup(name, int(m.group(4)), line)

    def count_hit_rate(self, value: float) -> None:
        """One more prefix-cache hit rate read (its count, largest and first value), line by line or, in a large log,
        from a chunk's first and last metrics line."""
        self.hit_rate_count += 1
        self.hit_rate_max = max(self.hit_rate_max, value)
        if self.hit_rate_count == 1:
            self.hit_rate_first = value
        self.facts.startup["prefix_cache_hit_rate"] = value

    def fast_hit_rate(self, lineno: int, value: float, display: str) -> None:
        """One prefix-cache metrics value (``Prefix cache hit rate: X%``)."""
        self.count_hit_rate(value)
        self.hit_rate_min = value if self.hit_rate_count == 1 else min(self.hit_rate_min, value)
        # (per engine process: a log of two runs -- drafts on, then a restart without them -- has a rate of each)
        pid = _PID.search(display)
        run = self.hit_rate_runs.setdefault(f"{pid.group(1) if pid else ''}#{self.hit_rate_epoch}", [0, 0.0])
        run[0] += 1
        run[1] = max(run[1], value)
        self.hit_rates.append(value)
        if len(self.hit_rates) > 64:
            del self.hit_rates[:32]
        self.facts.lines["prefix_cache_hit_rate"] = (lineno, display[:500])

    def _cudagraph_stats(self, line: Line) -> None:
        """A row of vLLM's CUDA-graph stats (``--cudagraph-metrics``, vllm/compilation/cuda_graph.py): ``| unpadded |
        padded | paddings | runtime mode | count |`` -- the steps that ran without any graph (mode NONE), and the
        largest step a full graph served."""
        m = _CG_STATS_ROW.match(line.text.strip())
        if not m:
            return
        tokens, mode, count = int(m.group(1)), m.group(4), int(m.group(5))
        st = self.facts.startup
        if mode == "NONE":
            rows = st.setdefault("cudagraph_eager_steps", [])
            if len(rows) < 16:
                rows.append([tokens, count])
            self._note("cudagraph_eager_steps", line)
        elif mode == "FULL" and int(m.group(2)) > st.get("cudagraph_full_max_tokens", 0):
            st["cudagraph_full_max_tokens"] = int(m.group(2))

    def _cudagraph_config(self, line: Line) -> None:
        """The sizes vLLM's CUDA-graph metrics say it captured (``- Capture sizes: [4, 8, ..., 512]`` under
        ``**CUDAGraph Config Settings:**``): the largest is the biggest step a graph can serve."""
        m = _CG_CAPTURE_SIZES.match(line.text)
        if m and (sizes := [int(x) for x in re.findall(r"\d+", m.group(1))]):
            self.facts.startup["cudagraph_capture_size_max"] = max(sizes)
            self._note("cudagraph_capture_size_max", line)

    def _engines_apart(self, line: Line, running: int, waiting: int) -> None:
        """Stats lines of several engines in one 10-second round (replicas behind a router, data-parallel engines):
        one running many requests with some waiting while another runs a handful is load the router concentrated, not
        an engine's capacity."""
        when = _STAMP.search(line.display)
        if when is None:
            return
        mo, d, h, mi, se = (int(x) for x in when.groups())
        row = ((((mo * 31 + d) * 24 + h) * 60 + mi) * 60 + se, running, waiting, line.lineno)
        rows = self.stats_rows
        for other in rows:
            if abs(other[0] - row[0]) > 6:
                continue
            hi, lo = (row, other) if row[1] >= other[1] else (other, row)
            if hi[1] >= 16 and hi[2] > 0 and lo[2] == 0 and lo[1] * 8 <= hi[1]:
                self.facts.startup["replica_imbalance"] = (f"one engine runs {hi[1]} requests with {hi[2]} waiting while "
                                                           f"another runs {lo[1]} at the same time")
                self.facts.lines["replica_imbalance"] = (hi[3], f"Running: {hi[1]} reqs, Waiting: {hi[2]} reqs "
                                                                f"(line {hi[3]}) beside Running: {lo[1]} reqs (line {lo[3]})")
                return
        rows.append(row)
        del rows[:-16]

    def _blocks_per_request(self, running: int, usage: float) -> None:
        """A hybrid's raised blocks each running request holds on one stats line (its KV usage over its running count,
        in the KV cache size and block of the start before it); the fullest line's is kept (``blocks_at_fullest``:
        [blocks, running, usage %, KV tokens]) -- one run's figures, not the maxima of several runs."""
        st = self.facts.startup
        block, tokens = st.get("attention_block_size"), st.get("gpu_kv_cache_tokens")
        if not isinstance(block, int) or block <= 0 or not isinstance(tokens, int) or tokens <= 0:
            return
        kept = st.get("blocks_at_fullest")
        if kept is None or usage > kept[2]:
            st["blocks_at_fullest"] = [round(usage / 100 * tokens / running / block, 2), running, usage, tokens]

    def _record_line(self, line: Line) -> None:
        text = line.text
        if "hut" in text or "SIG" in text:
            self._shutdown(line)
        if text[:1] == "|" or text.lstrip()[:1] == "|":
            self._cudagraph_stats(line)
        elif "Capture sizes:" in text:
            self._cudagraph_config(line)
        if "SamplingParams(" in text and len(text) < 4000:  # vLLM's request log (--enable-log-requests)
            self._request_params(text)
        if "prompt: " in text and "equest" in text and len(self.logged_prompts) < 8:
            m = _LOGGED_PROMPT.search(text)
            if m:  # (the request log's prompt text: where two requests' prompts part says what they share)
                self.logged_prompts.append((line.lineno, m.group(1)[:400]))
        counts: dict[str, int] = {}  # (this line's Running / Waiting, for the engines' balance)
        for kw, name, rx, conv in _STARTUP_PATTERNS:
            if kw not in text:
                continue
            m = rx.search(text)
            if m:
                try:
                    value = conv(m.group(1))
                except ValueError:
                    continue
                if name in _FIRSTED and name in self.facts.startup and self.facts.startup[name] != value \
                        and f"{name}_first" not in self.facts.startup:
                    # (a rate that changed over the log: the report quotes where it started as well as where it ended)
                    self.facts.startup[f"{name}_first"] = self.facts.startup[name]
                self._set_startup(name, value, line)
                if name in _PEAKED:
                    self._peak(name, value, line)
                if name in ("num_requests_running", "num_requests_waiting", "gpu_kv_cache_usage_percent"):
                    counts[name] = value
        if self._logged_budget > 0 and line.level != "ERROR" and line.level != "DEBUG" and (
                "=" in text or " from " in text or "Using " in text) and len(text) < 2000 and "with config:" not in text \
                and "non-default args" not in text and "SamplingParams(" not in text:
            # settings are stated while the engine starts: a bounded number of records is read (a serving log's
            # request lines never run this search again)
            self._logged_budget -= 1
            if _LOGGED_HINT.search(text):
                for name, val in logged_numbers(text).items():
                    if len(self.logged) < 60:
                        self.logged.setdefault(name, val)
        if "Profiling CUDA graph memory" in text:
            for mode, count, largest in _GRAPH_GROUP.findall(text):
                self._set_startup(f"{mode.lower()}_cudagraph_count", int(count), line)
                self._set_startup(f"{mode.lower()}_cudagraph_largest", int(largest), line)
        m = _PREEMPTIONS.search(text) if "Preemptions: " in text else None
        if m:
            self._peak("num_preemptions", int(m.group(1)), line)
        if "num_requests_running" in counts and "replica_imbalance" not in self.facts.startup:
            self._engines_apart(line, counts["num_requests_running"], counts.get("num_requests_waiting", 0))
        if counts.get("num_requests_running") and "gpu_kv_cache_usage_percent" in counts:
            self._blocks_per_request(counts["num_requests_running"], counts["gpu_kv_cache_usage_percent"])
        m = _CAPPING.search(text) if "Capping cudagraph" in text else None
        if m:  # "Capping cudagraph capture sizes from max 512 to 48 to fit Mamba cache blocks (50 blocks available)"
            self._set_startup("max_cudagraph_capture_size_requested", int(m.group(1)), line)
            self._set_startup("max_cudagraph_capture_size_capped", int(m.group(2)), line)
            if m.group(3):
                self._set_startup("mamba_cache_blocks_available", int(m.group(3)), line)
        m = _NO_CAPTURE.search(text) if "No valid cudagraph capture sizes" in text else None
        if m:  # "... after capping to Mamba cache blocks (6). The smallest capture size was 8. Disabling cudagraph capture."
            self._set_startup("mamba_cache_blocks_available", int(m.group(1)), line)
            self._set_startup("max_cudagraph_capture_size_capped", 0, line)
            if m.group(2):
                self._set_startup("smallest_cudagraph_capture_size", int(m.group(2)), line)
        m = _KV_SIZE.search(text) if "KV cache size" in text else None
        if m:
            self._set_startup("gpu_kv_cache_tokens", int(m.group(2).replace(",", "")), line)
            self.facts.startup["kv_cache_device"] = m.group(1)
        m = _CONCURRENCY.search(text) if "concurrency" in text else None
        if m:
            self.facts.startup["max_concurrency_tokens"] = int(m.group(1).replace(",", ""))
            self._set_startup("max_concurrency", float(m.group(2)), line)
        m = _HIT_RATE.search(text) if self.count_hit_rates and "hit rate" in text else None
        if m:
            self.fast_hit_rate(line.lineno, float(m.group(1)), line.display or text)
        m = _MODEL_RUNNER.search(text) if ("odel runner" in text or "Model Runner" in text) else None
        if m:
            self._set_startup("model_runner", (m.group(1) or m.group(2)).upper(), line)
        if "Hybrid KV" in text and _HYBRID_OFF.search(text):
            self._set_startup("hybrid_kv_cache_manager_disabled", True, line)
        if "KV cache page sizes cannot be unified" in text:
            # vllm/v1/core/kv_cache_utils.py (0.29+): an MLA model with sliding-window layers (a drafter's) whose pages
            # cannot be unified gets every sliding-window layer laid out as full attention
            self._set_startup("kv_page_unify_fallback", True, line)
        if "draft model's" in text and "no KV cache group" in text:
            # vllm/v1/core/kv_cache_utils.py (0.31+) _warn_if_unannotated_eagle_mamba: EAGLE drafts on a Mamba/GDN hybrid
            # whose KV-cache groups carry no group for the draft's layers
            self._set_startup("draft_kv_group_unidentified", True, line)
        if "hybrid kv cache manager because" in text:
            # vllm/config/vllm.py (0.2x+): "Turning off hybrid kv cache manager because `--kv-transfer-config` selects
            # a KV connector that does not support it."
            m = _HYBRID_OFF_WHY.search(text)
            if m:
                if "hybrid_kv_cache_manager_off_reason" not in self.facts.startup:
                    self._set_startup("hybrid_kv_cache_manager_off_reason", m.group(1).strip().rstrip(".")[:200], line)
                # (the manager is off from here: on a hybrid, every spec must fold into one type)
                self._set_startup("hybrid_kv_cache_manager_disabled", True, line)
        if "non-default args:" in text:
            i = text.index("non-default args:") + len("non-default args:")
            try:
                value, _ = parse_literal_prefix(text, i)
                if isinstance(value, dict):
                    self.non_default = (line.lineno, value)
                    self._note("non_default_args", line)
            except LiteralError:
                pass
        if "with config:" in text and "LLM engine" in text:
            kw = parse_kwargs(text.split("with config:", 1)[1])
            if kw:
                self.engine_config = (line.lineno, kw)
                self._note("engine_config", line)
                comp = kw.get("compilation_config")
                sizes = comp.get("cudagraph_capture_sizes") if isinstance(comp, dict) else None
                if isinstance(sizes, list) and sizes and all(isinstance(x, int) for x in sizes):
                    # as the engine printed them (the arguments keep them sorted)
                    self.facts.startup["cudagraph_capture_sizes"] = sizes[:1024]

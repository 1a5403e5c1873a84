"""Post-mortem: read a vLLM log (file, folder, stdin, .gz) into :class:`vllm_diag.model.LogFacts`.

Entry points: :func:`read_facts` (path or ``-``), :func:`facts_from_text` (a string, for tests and
pasted logs), :func:`facts_from_bytes`. The analysis pipeline (rules, pre-flight, suggestions, store)
is :func:`vllm_diag.postmortem.analyze.analyze_path`; the diagnosis (failure site, failure class or
asynchronous fault, with confidence and basis) is :mod:`vllm_diag.postmortem.diagnose`.

What the extractor sets
=======================

``LogFacts.numbers`` -- values read out of the root error message (and the wrapper of the same
error), plus a few derived ones. Every name also gets ``LogFacts.lines[name] = (line, text)``.

=====================================  ==========================================================
name                                   from
=====================================  ==========================================================
tensor_a_size, tensor_b_size,          ``The size of tensor a (6) must match the size of tensor b
mismatch_dim                           (7) at non-singleton dimension 1``
num_decodes, num_spec_decodes          ``num_decodes: 1, num_spec_decodes: 1`` (GDN builder)
split_sizes (list),                    ``split_with_sizes expects split_sizes to sum exactly to 512
split_sizes_expected_sum, tensor_rows  … but got split_sizes=[256, 0]`` (the sum is the split tensor's rows)
capture_num_reqs, capture_size,        GDN ``batch size (r) <= cudagraph capture sizes (bs), and
capture_num_tokens                     number of tokens (t)``
index, index_dim, index_size           ``index 21 is out of bounds for dimension 0 with size 1``
next_n_allowed (list)                  kernel assert ``next_n == 1 or next_n == 2``
next_n                                 ``next_n=3`` in a message, else derived as
                                       num_speculative_tokens + 1 when the kernel assert is seen
kernel_assert_path, kernel_assert_file, ``Assertion error (…/smxx_fp8_fp4_paged_mqa_logits.hpp:233):
kernel_assert_line,                     next_n == 1 or next_n == 2`` (strings, except the line)
kernel_assert_condition
assert_condition (str)                 source line of a bare ``AssertionError``
                                       (``new_spec.page_size_bytes == max_page_size``)
page_size_bytes, max_page_size, ...    any ``snake_name=NUMBER`` / ``snake_name: NUMBER`` pair in
                                       the message (patched asserts, custom messages)
layer_name (str)                       ``Layer <name>: page size is not divisible …``
block_table_entries (list)             ``… same number of block table entries, got [...]``
kernel_block_size, kv_manager_block_size  ``kernel_block_size K must divide kv_manager_block_size size B``
aligned_block_size                     ``Aligned KV cache block size B is not supported``
max_model_len, kv_cache_needed_gib,    ``To serve at least one request with the models's max seq
kv_cache_available_gib,                len (L), (x GiB KV cache is needed … (y GiB)`` /
estimated_max_model_len                ``estimated maximum model length is N``
max_model_len, prompt_tokens          the API server's ``maximum context length is N tokens. However, your
                                       prompt contains at least M input tokens`` (a request refused, HTTP 400)
oom_tried_gib, gpu_total_gib,          ``CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a
gpu_free_gib                           total capacity of 79.10 GiB of which 1.2 GiB is free``
process_memory_in_use_gib,             the rest of PyTorch's OOM message: ``this process has X GiB memory
allocated_by_pytorch_gib,              in use``, ``X GiB is allocated by PyTorch``, ``X GiB allocated in
private_pool_gib,                      private pools`` (CUDA graphs), ``X MiB is reserved by PyTorch but
reserved_unallocated_gib               unallocated`` (MiB converted to GiB)
<phrase> (words)                       a value a message gives in words: ``the existing size (118)`` ->
                                       ``existing_size``; ``Target sizes: [128, 4]`` -> ``target_sizes``;
                                       ``dimension 1`` -> ``dimension`` (the last three words before the
                                       value, small words dropped)
<file stem>_line                       the innermost printed frame of each vLLM file (and each C++/CUDA
                                       kernel source file) in the root traceback
                                       and in traceback pieces without an exception line
                                       (``gpu_model_runner_line``), and of a kernel check's source file
                                       (``attention_line`` for ``attention.hpp:200``); for an asynchronous
                                       CUDA fault also the same fault's other tracebacks (a blocking rerun)
                                       and compute-sanitizer's first Python ``Host Frame`` (the launch)
num_speculative_tokens, n_predict      ``num_speculative_tokens:3 must be divisible by n_predict=2``
                                       (num_speculative_tokens is also copied from the arguments)
head_dim                               ``Unexpected head dim size, 32``
nccl_timeout_ms, nccl_ran_ms           NCCL watchdog ``Timeout(ms)=600000`` / ``ran for N milliseconds``
initial_free_memory_gib,               the memory profiler's ``Initial free memory 38.12 GiB, current free
current_free_memory_gib                memory 41.87 GiB`` (another process freed memory while vLLM profiled)
message_values (list)                  every number of the root error's message, in order
json_line, json_column, json_char      Python's JSON error ``Expecting value: line 2 column 1 (char 1)`` (a tool-call
                                       parser or a client failing on the text)
xid                                    ``Xid 13`` / ``Xid (PCI:…): 31`` in an error line
errno, port                            an OS error's ``[Errno 98]``; the socket of ``bind on address
                                       ('0.0.0.0', 8000)``
cuda_error_code                        the CUDA runtime's ``Error 803: system has unsupported display driver``
kernel_grid, kernel_block (lists),     cuda-gdb ``kernel<<<(1,73,16),(128,1,1)>>>`` and the kernel's
kernel_source_line,                    the faulting statement ``#0 kernel<<<…>>> () at …/mamba_utils.py:94``
kernel_definition_line                 (else the kernel's ``(mamba_utils.py:93)`` after ``triggered at PC``,
                                       kept as kernel_definition_line when both are printed)
(any name)                             ``name=value`` / ``name:value`` pairs of error lines outside a
                                       traceback (kernel detail lines: ``qseqlen:5 gqa:16``)
max_seqlen_q                           AITER's ``qseqlen`` under vLLM's name (kernel detail lines)
<quantity>_expected, <quantity>_got    both sides of ``… planned with 6, got 8`` / ``expected 3 block tables,
                                       got 4`` / ``must be 128 but got 96``: the quantity is the words after
                                       the first number, else the message's first snake_case name
target_rows, source_rows,              a failed copy into a buffer (PyTorch's expand error, or the
target_width, source_width, rows       ``Target sizes`` / ``Tensor sizes`` line alone): destination vs source
                                       of the mismatching dimension of a 2-D table, and the rows they share
check_operand, check_op,               a check against a constant: ``TVM_FFI_ICHECK_GT(num_tokens, 64)``
check_threshold                        (message, error line, or the innermost frame's code),
                                       ``Check failed: (next_n <= 2)``, ``assert x <= 4``
<words> (counts)                       ``declares 4 states`` -> ``states: 4`` (a count and what it counts)
<name>_mib / <name>_kib                an OOM figure the message gives in MiB / KiB, as printed (beside
                                       its ``_gib``); PyTorch < 2.1's ``(GPU 0; X GiB total capacity; Y
                                       GiB already allocated; Z MiB free; W GiB reserved in total by
                                       PyTorch)`` -> gpu_total_gib, allocated_by_pytorch_gib,
                                       gpu_free_gib, reserved_by_pytorch_gib
<label> / <pascal_field>               ``Required: 98304, Hardware limit: 65536`` -> required,
                                       hardware_limit; ``SeqNum=5, NumelIn=8`` -> seq_num, numel_in
compute_capability,                    ``… compute capability of at least 8.0. Your … GPU has compute
min_compute_capability                 capability 7.0``
<file stem>_line (C++/CUDA)            a source position in an error line or message
                                       (``Cuda error /x/custom_all_reduce.cuh:368``), not a glog prefix
expected_shape, got_shape,             both shapes of a failed shape comparison (``Expected key to have
<subject>_shape                        shape [6, 8, 64] but got [6, 8, 80]``)
<expression>                           ``x.shape=torch.Size([16, 2048])`` -> x_shape; ``query.shape[0]=37``
                                       -> query_shape_0; ``block_table.shape[1] (512)``
view_shape, input_size (+ the          PyTorch's ``shape '[7, 2, -1]' is invalid for input of size N``;
statement's argument names)            ``x.view(num_decodes, seq_len, -1)`` names the dimensions
mat1_shape, mat2_shape                 ``mat1 and mat2 shapes cannot be multiplied (4x2048 and 4096x1024)``
<tensor>_shape, <mask>_shape,          a size mismatch's operands named by the failing statement: ``x[mask]``
<index>_len, <source>_size_dim<d>,     (mask / indexed tensor), ``out.index_copy_(d, index, source)``,
<slice bound>                          ``x[:num_decodes].copy_(y)`` (tensor a's size on dimension 0)
<name>_max, <name>_min                 a bound a message states bare: ``… for q_len <= 2, but got …``
<subject>_<attr>s (list)               ``all mamba block tables must share stride(0), got {1028, 2056}``
nccl_cuda_failure, nccl_errno,         NCCL's own WARN lines behind an ``NCCL error``: ``Cuda failure 801``,
ib_completion_status, ib_vendor_err    ``Got completion from peer … with status=5 … vendor err 244``
uniform_decode_query_len               the multiple vLLM rounds cudagraph sizes to, when it is
                                       1 + num_speculative_tokens
<identifier>                           ``num_qo_heads 28``, ``max_num_scheduled_tokens is set to 0``,
                                       ``divisible by cp_kv_cache_interleave_size (128)``
<words>_expected, <words>_got          ``… a last dimension of size 576, but got 512``; ``number of
                                       requests … Expected 6, got 8`` -> requests_expected / _got
weight_layer_index                     the layer of the weights a checkpoint lacks (``Following weights were not
                                       initialized from checkpoint: {'model.layers.46.enorm.weight', ...}``)
failed_tp_rank                         the tensor-parallel rank of the worker whose error is the root
                                       (``(Worker_TP5 pid=...)``: 5)
num_reqs, state_indices_rows           mamba_attn.py's ``Mismatch in number of requests when updating block table.
                                       Expected 6, got 8``: the metadata's requests, the state-index rows
check_* + <operand>                    also ``q_len_per_req must be <= 4, but got 6``, ``Assertion failed:
                                       qSeqLen <= 16``, ``Expected n <= 8192 to be true``, ``x == 128
                                       INTERNAL ASSERT FAILED``, macros over an expression
multiple_of                            ``after rounding to multiple of 4``
<noun>_size                            ``shared memory segment /dev/shm/x (size 9637888)``
nccl_timeout_rank, seq_num, …          the NCCL watchdog's ``[Rank 5]`` and its ``WorkNCCL(...)`` fields
=====================================  ==========================================================

``LogFacts.startup`` -- INFO/WARNING/metrics lines (the failures that never raise):

=====================================  ==========================================================
attention_block_size                   ``Setting attention block size to 544 tokens …``
mamba_padding_percent                  ``Padding mamba page size by 1.23% …``
max_cudagraph_capture_size_truncated   ``Truncating max_cudagraph_capture_size to 4``
kv_cache_block_size_backend            ``Setting kv cache block size to N for X backend.``
kv_padding_layers,                     ``Add 3 padding layers, may waste at most 12.50% KV cache
kv_padding_waste_percent               memory``
mamba_cache_mode                       ``Mamba cache mode is set to 'align' …``
resolved_architecture                  ``Resolved architecture: NemotronHForCausalLM``
gpu_kv_cache_tokens, kv_cache_device   ``GPU KV cache size: 123,456 tokens`` (device GPU/CPU/…)
max_concurrency, max_concurrency_tokens ``Maximum concurrency for 2,048 tokens per request: 60.28x``
prefix_cache_hit_rate                  last ``Prefix cache hit rate: 0.0%`` (percent)
prefix_cache_hit_rate_min              the smallest value read, where it differs from the largest
prefix_cache_hit_rate_first            the first value read, where it differs from the last
prefix_cache_hit_rate_max,             largest value and number of values read: every metrics
prefix_cache_hit_rate_samples          line of a small log; the first and last metrics line of
                                       each 8 MiB chunk of a large one (enough to tell "stuck at
                                       0 %" from "hits" without a pass over every line)
prefix_cache_zero_run_samples          metrics lines of one engine run (its ``pid=``, or the lines
                                       after a header such as "MTP off:") that all read 0 % while
                                       another run of the log hit (a restart with a setting
                                       changed); small logs only
available_kv_cache_gib                 ``Available KV cache memory: 12.3 GiB``
model_loading_gib                      ``Model loading took 1.2 GiB``
num_gpu_blocks                         ``# GPU blocks: N``
model_runner                           "V1"/"V2" from the model-runner fallback lines
hybrid_kv_cache_manager_disabled       ``Hybrid KV cache manager is disabled …`` or ``Turning off
                                       hybrid kv cache manager because …``
kv_page_unify_fallback                 ``KV cache page sizes cannot be unified; treating sliding-window layers …``
dsa_use_flattening                     ``DSA indexer decode path: use_flattening=…``
dsa_flattened_next_n                   next_n of a start whose DSA indexer flattens its decode
engine_init_seconds                    ``init engine (profile, create kv cache, warmup model) took N``
kv_connector, kv_role                  the KV connector(s) (comma-separated; a MultiConnector's inner ones
                                       follow it) and ``kv_producer``/``kv_consumer``/``kv_both``, from
                                       ``--kv-transfer-config``, JSON, ``KVTransferConfig(...)`` (:mod:`.kvtransfer`)
compute_capability ([major, minor])    ``sm_90a`` / ``SM_120`` / ``SM 86`` mentioned in the text
crash_batch (dict)                     vLLM's crash dump (``Dumping scheduler output for model execution``,
                                       :mod:`.dump`): num_reqs, num_prefills / num_decodes /
                                       num_spec_decodes, tokens_per_req, spec_tokens_per_req,
                                       num_computed_tokens, total_num_scheduled_tokens, mixed,
                                       ragged_drafts, num_spec_tokens_to_schedule
error_lines ([[line, text]])           up to 40 error-like lines outside tracebacks (kernel checks,
                                       CUDA/debugger reports, excerpts without an exception line)
quoted_flags (dict)                    numeric ``--flag value`` pairs of any pasted command (bench, eval)
metrics (dict)                         Prometheus counters (``vllm:prefix_cache_queries_total 1131``) and
                                       spec-decode metrics (``spec_mean_acceptance_length`` ...): the last
                                       value, and ``<name>_first`` where the value changed
tensor_parallel_size_seen              highest ``Worker_TP<n>`` rank + 1 (when no TP size is stated)
pipeline_parallel_size_seen,           highest ``PP<n>`` / ``DP<n>`` rank of the worker prefixes + 1, when
data_parallel_size_seen                above rank 0 and the size is not stated (a lower bound)
<name>_runs (list)                     every engine start's value of a per-start fact (attention block
                                       size, Mamba padding, KV blocks ...) when a log holds two starts
command_complete (bool)                the pasted command ended normally (not cut by an excerpt gap)
cudagraph_capture_sizes (list)         the engine config's capture sizes as printed (args keep them sorted)
cudagraph_memory_gib,                  ``Graph capturing finished in 9 secs, took 1.24 GiB``
cudagraph_capture_secs
cudagraph_memory_estimate_gib          ``Estimated CUDA graph memory: 2.61 GiB total`` (before capture)
shm_broadcast_wait_seconds             ``No available shared memory broadcast block found in 60 seconds``
num_speculative_tokens_default         ``Defaulted num_speculative_tokens to 24 for suffix decoding.``
decode_full_capture_sizes, ...         the capture's progress bar ``Capturing CUDA graphs (decode, FULL): 0/66``
                                       (``<decode|mixed>_<full|piecewise>_capture_sizes``: the bar's total)
full_cudagraph_count, ..._largest      ``Profiling CUDA graph memory: PIECEWISE=49 (largest=512), FULL=33
                                       (largest=256)`` (``piecewise_`` / ``full_`` / ``encoder_``)
crash_scheduler_stats (dict)           the crash dump's ``Dumping scheduler stats: SchedulerStats(...)``:
                                       its top-level counters (num_running_reqs, kv_cache_usage ...)
num_requests_running,                  the stats line's ``Running: 17 reqs, Waiting: 42 reqs, GPU KV cache
num_requests_waiting,                  usage: 87.4%`` and ``Avg prompt throughput: 0.0 tokens/s, Avg generation
gpu_kv_cache_usage_percent,            throughput: 18.3 tokens/s`` (last values; ``<name>_first``: the first, where
prompt_throughput_tok_s,               it changed)
generation_throughput_tok_s
num_preemptions_max,                   the highest ``Preemptions: N``, ``Waiting: N reqs`` and ``GPU KV cache
num_requests_waiting_max,              usage: N%`` of the stats lines (a preemption storm's peak)
gpu_kv_cache_usage_percent_max,
num_requests_running_max               the highest ``Running: N reqs``
proxy_read_timeout_s                   a proxy's read timeout as its configuration states it (``proxy_read_timeout
                                       60s;``, ``proxy-read-timeout: "60"``), or nginx's default 60 where the report
                                       says it is not set
proxy_read_timeout_removed_s           the read timeout a diff's removed line took away (so the default applies)
route_timeout_s                        a gateway route's timeout (``route config: `timeout: 60s```): Envoy /
                                       Istio end a request, a stream included, at it
compute_capability                     the GPU's compute capability as the report states it (``Compute Capability
                                       7.0``, ``compute cap 8.9``, nvidia-smi's ``compute_cap`` column) as [major,
                                       minor]; findings quote it as 7.0
other_process_mib, other_process_pid   the memory of the largest program of its own nvidia-smi lists (not vLLM's,
                                       not a bare interpreter); where the root error is a start-up memory check or
                                       an out-of-memory on GPU N, the largest other process on that GPU (at the
                                       start-up check, a bare interpreter too: the engine holds nothing yet)
driver_version, driver_cuda_version    nvidia-smi's header ``Driver Version: 535.183.01  CUDA Version: 12.2``
                                       (the driver also from collect_env's ``Nvidia driver version: 550.144.03``)
driver_cuda_version_found              PyTorch's ``The NVIDIA driver on your system is too old (found version 12020)``
                                       (the CUDA version the driver supports, as CUDA encodes it)
nr_periods, nr_throttled, ...          a cgroup's cpu.stat lines (a CPU quota throttling the engine's host threads)
quoted_latencies (dict)                the latencies the report quotes: a Prometheus query over vLLM's histograms
                                       (``histogram_quantile(0.99, ...vllm:time_to_first_token_seconds_bucket...) =
                                       0.94`` -> ttft_p99_s) and the reporter's ``TTFT p50 4.8s, p99 19s``, ``85ms
                                       TPOT`` (see :mod:`.quoted_latency`)
gpu_processes (list)                   nvidia-smi's process table, a row each (gpu, pid, process, process_mem_mib)
curl_timings (list)                    curl's ``-w 'ttfb=... total=...'`` timings, a request each (ttfb_s, total_s)
bench_runs (list)                      `vllm bench serve`'s result blocks, a dict per run (``Mean TPOT (ms):  71.92``
                                       -> mean_tpot_ms, ``Acceptance rate (%):  61.47`` -> acceptance_rate_pct); a
                                       rerun pasted without its header starts where a name repeats
gpu_util_pct, gpu_memory_used_mib,     the first GPU row of nvidia-smi's table (``| N/A 71C P0 341W / 350W |
gpu_memory_total_mib                   46012MiB / 46068MiB | 100% Default |``), with its temperature and power
engine_process_mib                     the largest row of nvidia-smi's process table that may be the engine's (named
                                       vLLM, or an interpreter)
proxy_buffer_size_k                    nginx's ``proxy_buffer_size 64k;`` or ingress-nginx's ``proxy-buffer-size:
                                       "256k"``
prompt_growth, prompt_tokens_first,    a usage table of one conversation's turns whose prompt tokens about double
prompt_tokens_last                     every turn (``1,204 -> 3,015 -> 7,406 prompt tokens over 3 turns``), or the
                                       reporter's ``prompts double each turn``: the client resends its history
reporter_page_sizes (dict)             the page sizes the reporter's own arithmetic ends on, by role (``Draft is 2 x
                                       160 x 2 x 2 = 1280 B/token, with block 16 -> 20480 B`` -> draft_page_size);
                                       kept apart from the numbers the rules compare
cpu_limit_cores                        a container's CPU limit: Kubernetes' ``limits: {cpu: "2"}`` or a limits
                                       block's ``cpu: 3500m``, docker's ``--cpus=4``
torch_cuda_tag, torch_cuda_version     the CUDA a PyTorch build was made for: ``torch 2.10.0+cu130`` (130, 13.0),
                                       collect_env's ``CUDA used to build PyTorch: 12.9``
xid                                    the driver's GPU fault code (``NVRM: Xid (PCI:0000:ab:00): 94, ...``)
xids, xid_<meaning>                    every Xid the driver reported, in order, and each known one by its meaning
                                       (``xid_row_remap``: 63, ``xid_contained_ecc``: 94, ``xid_fallen_off_bus``: 79)
cache_config (dict)                    the numeric labels of /metrics' ``vllm:cache_config_info{...}`` (num_gpu_blocks,
                                       block_size, gpu_memory_utilization ...)
env_numbers (dict)                     environment variables the report sets to a number (``LMCACHE_CHUNK_SIZE=256``),
                                       lower-cased
mojibake_text                          a line showing UTF-8 text decoded as Latin-1 (``fÃ¼r``, ``itâ€™s``)
eval_format_only                       lm-eval's tables of two runs: the lenient filter's score held while the
                                       strict filter's fell (``flexible-extract 0.8658 vs 0.8673, strict-match ...``)
eval_misgraded                         an evaluation's failed sample whose response ends with the gold answer
                                       while the grader's prediction is another value (``"gold": "18", "pred":
                                       "3"``): the grader's answer extraction, not the model
blocks_at_fullest                      [blocks, running, usage %, KV tokens] of the fullest stats line: the raised
                                       blocks each running request holds, read on one line of one run
turn_tokens_in_output                  an answer that runs on through a chat format's turn markers as text
                                       (``France.<|eot_id|><|start_header_id|>user``): another model's format
foreign_template_tokens                a prompt vLLM logged in another model family's chat format than the served
                                       model's (Llama 3's <|start_header_id|> in a prompt for Granite)
proxy_buffering_prose                  a proxy set to buffer or compress the event stream (``proxy_buffering on;``,
                                       ``gzip_types ... text/event-stream``)
chunk_as_token_prose                   the client counting one token per streamed chunk (``n_tokens += 1  # one
                                       chunk == one token``): a chunk carries up to 1 + k tokens under drafts
completions_call, plain_transcript     the client calling /v1/completions (an access log's ``POST /v1/completions``,
                                       ``client.completions.create(``), and a prompt written as a plain-text
                                       transcript (``User: ...\nAssistant:``) or answers said to go on with turns of
                                       their own: no chat template applied
added_token_id_max, vocab_sizes        the largest id of a tokenizer's added tokens (``"<|x|>": 100357``) and the
                                       vocabulary sizes a report states (config.json's ``vocab_size``, a REPL's
                                       answer to ``.vocab_size`` or to an embedding weight's shape)
prompt_token_id_max                    the largest token id the reporter says a request carries (``it contains ids
                                       131072 and 131073``)
throughput_fell                        the stats lines' generation throughput at 60 % or less of where it started, at
                                       the same running count (a slowdown in vLLM's own numbers)
replica_imbalance                      stats lines of several engines within seconds of each other, one running
                                       many requests with some waiting while another runs few (replicas behind a
                                       router, data-parallel engines)
max_cudagraph_capture_size_requested,  ``Capping cudagraph capture sizes from max 512 to 48 to fit Mamba
max_cudagraph_capture_size_capped,     cache blocks (50 blocks available)``; when none fits (``No valid cudagraph
mamba_cache_blocks_available,          capture sizes remain after capping to Mamba cache blocks (6). The smallest
smallest_cudagraph_capture_size        capture size was 8``) the cap is 0
logged_values (dict)                   settings vLLM's INFO/WARNING records state: ``name=N``, ``Using
                                       max model len N``, ``<setting> from A to B`` (``_from`` / ``_to``)
printed_values (dict)                  values the reporter printed in prose: ``num_decodes=0 batch_size=7``,
                                       ``qo_indptr = [0, 4, 8]``, ``x = tensor([...])``, ``"head_dim": 128``,
                                       ``x.shape=torch.Size([6])`` -> x_shape, ``idx.max()=4099`` -> idx_max
<file stem>_line                       where vLLM logs a WARNING that sets a fact above
                                       (``[some_backend.py:233]`` -> some_backend_line)
cpu_starved_prose,                     the reporter's words for a cause outside the families (:mod:`.cause_words`):
gpu_throttled_prose, cotenant_prose,   the host's CPUs held back, the GPU's clocks held down, another process
mig_prose, split_routing_prose,        on the GPU, a MIG slice, requests routed without affinity, a proxy's
proxy_timeout_prose,                   timeout, a chat template applied twice, the same request straight to
double_template_prose,                 the server coming back right, the model's own tokenizer fixing the
direct_fine_prose,                     output
own_tokenizer_fixes
direct_request_s                       how long the same request took sent straight to the engine, past the proxy
                                       (``Direct curl to the pod IP: returns 200 after 97 s``)
iommu_fault                            the host's IOMMU logging a DMA fault (``DMAR: [DMA Write NO_PASID] ...
                                       fault reason``, AMD-Vi's ``IO_PAGE_FAULT``): a GPU's transfer refused
host_oom_kill                          the host's OOM killer in the report: ``Reason: OOMKilled`` (kubectl),
                                       ``Killed process N`` (the kernel)
oom_killed_pid, oom_killed_process,    the kernel's line for that kill: ``Killed process 60912 (python3)
total_vm_kb, anon_rss_kb               total-vm:96047040kB, anon-rss:91926408kB``
hits_without_spec_prose                the prefix cache hitting once the drafts are off (``without
                                       --speculative-config shows ~70% hit rate``): prefix caching is on
near_limit_prose                       the reporter's words for requests close to their length limit
                                       (``close to max_model_len``), where fewer drafts are scheduled
varying_prefix_prose                   a prompt template's per-request value, in words or where two prompts of
                                       vLLM's request log part (at a digit, in their first 200 characters)
resolved_prose                         the reporter's own fix, a change to none of the families' settings that
                                       ended the symptom (``Passing StandardCharsets.UTF_8 fixed it``,
                                       ``Removing --chat-template -> correct calls``: :mod:`.trials`)
families_ruled_out_prose               the reporter's verdict that the families are not the cause (``So spec
                                       decode / the 1184 block size are not it``)
unique_prompts_prose                   prompts said to share no prefix (``unique RAG context each time``, a
                                       benchmark's ``--dataset-name random`` without ``--random-prefix-len``)
random_bench_prose                     a benchmark of vLLM's random dataset (``--dataset-name random``): its
                                       prompts, not the production traffic's, are what its stats lines measure
random_prefix_len                      that benchmark's ``--random-prefix-len N``, read on any line of a wrapped
                                       command (0: no shared prefix)
wsl_prose                              the engine under WSL2 (vLLM's ``WSL is detected`` warning, ``under WSL2``)
aiter_dropped_prose                    a ROCm deployment without ``VLLM_ROCM_USE_AITER`` (``we dropped
                                       VLLM_ROCM_USE_AITER from the manifest``): the Triton fallback kernels
hard_to_draft_prose                    text a drafter predicts badly (``32-char hex ids``, ``base64``, ``our
                                       Japanese product``, ``the server is fine on normal text``)
reasoning_ate_budget_prose             a reasoning model's thinking spending the request's max_tokens (``thinking
                                       eats it all``, ``"content": ""`` beside ``reasoning_content``)
persists_eager_prose                   the failure staying with CUDA graphs off (``--enforce-eager -> still
                                       fails``): no capture size is its cause
gpu_temp_c, power_limit_w,             nvidia-smi -q's ``GPU Current Temp : 89 C``, ``Current Power Limit :
power_draw_w, sm_clock_mhz             450.00 W``, ``Power Draw``, the Clocks section's ``SM : 1095 MHz`` (the
                                       first GPU's; a --query-gpu CSV's row of the throttled GPU over them)
slowdown_temp_c, shutdown_temp_c,      nvidia-smi -q's ``GPU Slowdown Temp : 87 C``, ``GPU Shutdown Temp``, the
max_sm_clock_mhz                       Max Clocks section's ``SM : 1755 MHz`` (the GPU's top clock)
throttled_gpu_index                    the GPU whose --query-gpu row shows a throttle reason Active, a thermal bit
                                       of the ``clocks_event_reasons.active`` mask, or 85 C at under 70 % of its
                                       top SM clock
request_time_s,                        a proxy's access-log line for the first request it failed (499 / 5xx):
upstream_response_time_s,              its timings, named (``rt=60.001 urt=60.000 uct=0.001``) or in
upstream_connect_time_s                ingress-nginx's default order
acceptance_by_prefill                  the spec-decode metrics' mean acceptance length lower (by a quarter or
                                       more) in every interval whose stats line prefilled the most prompts (half
                                       the busiest rate or more) than in any of few or none (a fifth at most)
envoy_response_flags,                  Envoy's (Istio's) access-log line for the first request it ended with a
bytes_received, bytes_sent,            response flag (``200 UT response_timeout 186421 1187 60001``): the flags,
duration_ms                            the bytes each way and the duration in ms (also request_time_s)
gpu_link_no_nvlink                     a topology row without NV# cells, or the reporter's ``no NVLink`` /
                                       ``all GPU pairs show SYS``
degraded_over_time_prose               serving said to slow down with time under the same deployment (``got 35%
                                       slower overnight``, ``nothing redeployed``): no configuration's cost
greedy_accepts_prose                   the drafts accepted once the requests are greedy (``With temperature 0 the
                                       acceptance length is 2.6``)
batch_numerics_prose                   greedy answers tied to the batch's numerics (``VLLM_BATCH_INVARIANT=1 ->
                                       identical``, ``reduction order``)
slow_start_prose,                      the server said slow to start (``Scale-up takes 12+ minutes``), and
weights_loading_seconds                vLLM's ``Loading weights took N seconds``
weights_shard_seconds, weights_shards  the loader's progress bar ``Loading safetensors checkpoint shards: 5%
                                       Completed | 1/20 [01:31<28:59, 91.55s/it]`` (seconds a shard, shards)
request_params (dict)                  max_tokens / temperature / top_k ... of the failing request (curl
                                       body, client call, ``SamplingParams(...)``; max_tokens also in the
                                       reporter's words or as a getter's default, ``os.getenv("MAX_TOKENS", 256)``)
request_params_last (dict)             the last request's, where a later request samples otherwise (a
                                       report's before / after)
=====================================  ==========================================================

``LogFacts.args`` -- normalised engine settings (``CONFIG_KEYS`` + other flags in snake_case), merged
from (lowest to highest priority): loose ``--flag`` lines, known flags quoted in prose or as YAML / JSON keys
(nested ``speculative_config:`` / ``compilation_config:`` blocks too; shell variables of a pasted script
substituted; ``--tp 2`` read as ``-tp 2``), an
``LLM(...)`` call, the ``vllm serve`` / ``python -m vllm.entrypoints…`` command, the ``Initializing a V1
LLM engine … with config:`` line, and ``non-default args: {…}``. Secrets are redacted.
``LogFacts.lines`` keys besides the number names: ``vllm_version``, ``command``, ``args``,
``non_default_args``, ``engine_config``, ``model``, ``architecture``, ``gpu``, ``root``.

``LogFacts.other_errors`` -- the log's other distinct errors, the root left out (a report's second
attempt, a sibling rank's own error): type, message, log line, process and the numbers the message
gives, newest last; wrappers that repeat the root and library noise are left out.
"""

from __future__ import annotations

from .reader import facts_from_bytes, facts_from_text, read_facts

__all__ = ["read_facts", "facts_from_text", "facts_from_bytes"]

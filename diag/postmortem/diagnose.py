"""The diagnosis of a log: which failure class, how sure, and why.

Evidence, strongest first:

1. **a known vLLM failure site** (``vllm_diag.catalog``): the root error's message matches a site's
   template (its holes give the numbers), or its frame and ``assert`` line match a site's condition, or a
   kernel check's text matches a kernel site. The site's category is the diagnosis (``high`` when the
   numbers or the exact condition are there, ``medium`` otherwise); the basis names the site and the vLLM
   releases that carry it.
2. **the failure class from where vLLM failed**: no site matches (a fork, a newer release, a generic
   PyTorch error such as a shape mismatch or an index out of range), so the frames (innermost vLLM frame
   outward) and the message are classified by the same rules that classify the catalog's sites
   (``vllm_diag.catalog.categorize``); ``medium``.
3. **an asynchronous fault** (illegal memory access, device-side assert, launch failure): the frame that
   reports it is not the kernel that faulted, so the family comes from the configuration -- a hybrid
   (Mamba/GDN) model with speculative decoding (state indices; a mixed batch when the crash dump shows
   one), an MLA/sparse-indexer model with speculative decoding (kernel limits) -- ``low``; without such a
   configuration it stays ``other``.

Near misses (out of memory, missing weights or tokenizer, unsupported architecture, NCCL timeouts,
Triton on old GPUs, platform kernels missing) are ``other`` whatever the model is.

vLLM's crash dump (``Dumping input data … / Dumping scheduler output …``, :mod:`.dump`) adds the batch of
the failing step: a mixed decode + spec-decode batch or the draft length is shown from the dump itself.

The pieces: :mod:`.configuration` (what the log says was configured), :mod:`.sites` (vLLM's failure sites),
:mod:`.asyncfault` and :mod:`.placement` (asynchronous faults), :mod:`.shapes` (shape / index errors by place),
:mod:`.stages` (excerpts without their exception), :mod:`.connectors` (KV-connector bookkeeping on hybrids),
:mod:`.nearmiss`, :mod:`.silent` (failures that raise nothing) with :mod:`.quietmisses` (quiet reports whose cause is
a setting), :mod:`.emptyroot` (crashes whose only error is vLLM's wrapper) and :mod:`.abtests` (the reporter's A/B
tests); this module orders them.
"""

from __future__ import annotations

import re

from ..model import Evidence, LogException, LogFacts
from .accepted import negative_accepted
from .asyncfault import ASYNC, from_async, hybrid_spec_fault_class
from .configuration import AB_TEST_FACTS, Setup, ab_tests_clear_families, config_known, precondition_fails, read_setup
from .connectors import connector_class
from .emptyroot import empty_root_crash
from .extract import HOST_OOM_KILL
from .diagnosis import (Diagnosis, batch_numbers, config_numbers, crash_near_miss, exc_evidence, fact_evidence,
                        frame_lines, title_of)
from .nearmiss import CONNECTION_CUT, LOST_GPU, near_miss
from .numbers import message_numbers, named_numbers
from .placement import faulting_kernel, kernel_fault, kernel_place
from .specpath import in_layer, model_names, no_spec_path
from .shapes import NEG_INDEX, budget_signature, padding_signature, rows_assert, rows_mismatch, shape_class
from .sites import frame_category, from_site, function_hint, site_text
from .silent import fp16_overflow_quality, own_quality_gate, quiet_report, silent_corruption, unexplained_symptom
from .stages import ends_at_leaf, stage_family
from .kernelcheck import kernel_check_frame
from .verify import confirm_by_numbers
from .widths import cp_width_class

__all__ = ["ASYNC", "Diagnosis", "Setup", "diagnose", "hybrid_spec_fault_class", "kernel_place", "read_setup"]


def diagnose(facts: LogFacts) -> Diagnosis | None:
    setup = read_setup(facts, facts.root)
    d = _diagnose(facts, setup)
    site = None
    if d is not None and d.site_id:  # (a family's setting can depend on the site: see precondition_fails)
        from ..catalog import load

        site = load().get(d.site_id)
    pre = precondition_fails(d.category, setup, facts, site) if d is not None and d.category != "other" else None
    if pre:  # every path: a family needs its setting (speculative decoding, a hybrid model)
        d.basis += f"; but {pre}, so the error has another cause: not counted as {d.category}"
        d.title = f"Failure outside the hybrid / spec-decode families (not {d.category}: {pre})"
        d.category = "other"
        d.confidence = "low" if d.confidence == "low" else "medium"
    if d is not None and d.category in ("state_index", "spec_kernel_limit") and setup.spec_k and facts.root is not None:
        _no_spec_path(d, facts, setup)
    if d is not None and d.category == "mixed_batch" and d.rule == "failure_class" and setup.spec_k \
            and setup.mamba_cache_mode == "all" and facts.root is not None and _MAMBA_MIXER.search(
                next((f.file for f in reversed(facts.root.frames) if _VLLM_CODE.search(f.file)), "")):
        # Mamba cache mode 'all' keeps a state per block and hands the Mamba mixer per-request block indices; under
        # drafts (1 + k tokens a request) those buffers are sliced by tokens where requests are meant: a split of the
        # batch that fails in the mixer itself is the state indices' shape, not a batch mixing kinds of rows (a row
        # count the builder gets wrong stays the batch's class)
        d.basis += ("; but Mamba cache mode 'all' with speculative decoding routes the mixer's per-request block "
                    "indices (block_idx_last_scheduled_token, block_idx_last_computed_token), which a token-counted "
                    "slice misaligns: the state-index class, not counted as mixed_batch")
        d.title = "Mamba/GDN state index or block table mismatch (mode 'all' under speculative decoding)"
        d.category = "state_index"
    if d is not None and d.category == "mixed_batch" and site is not None and site.function.endswith(
            "build_for_cudagraph_capture") and setup.spec_k > 0:
        _capture_sizes_given(d, facts, setup)
    old = _v0_release(facts.vllm_version)
    if d is not None and d.category != "other" and old:
        # the families are failures of the V1 engine's hybrid KV cache manager, Mamba/GDN builders and spec-decode
        # backends (hybrid models run on V1 from 0.10); a V0-era release has none of them
        d.basis += (f"; but the log's vLLM {old} predates the V1 engine's hybrid and speculative-decoding "
                    f"machinery these classes describe: not modelled, not counted as {d.category}")
        d.title = f"Failure outside the hybrid / spec-decode families (not {d.category}: vLLM {old}, V0 era)"
        d.category = "other"
        d.confidence = "low"
    if d is not None and d.category == "spec_kernel_limit" and setup.spec_k > 0:
        # the decode width the kernel saw: 1 + k tokens per request (DeepGEMM's next_n, the MLA builders' decode
        # query length)
        d.numbers.setdefault("next_n", setup.spec_k + 1)
        d.numbers.setdefault("decode_query_len", setup.spec_k + 1)
    if d is not None:  # the configured value of what the failed check compares: does it break the check?
        confirm_by_numbers(d, setup, facts)
    return d


def _capture_sizes_given(d: Diagnosis, facts: LogFacts, setup: Setup) -> None:
    """A builder's decode-only capture check (the dummy batch's query length against 1 + k) failed while the command
    gave capture sizes that are not multiples of 1 + k: a captured size that cannot hold whole spec decodes makes the
    dummy batch -- the capture sizes vs the drafts, not a batch mixing kinds of rows."""
    sizes = facts.args.get("cudagraph_capture_sizes")
    q = setup.spec_k + 1
    if not (isinstance(sizes, list) and all(isinstance(x, int) for x in sizes)):
        return
    odd = sorted(x for x in sizes if x % q)
    if not odd:
        return
    d.basis += (f"; but the command's cudagraph_capture_sizes {sorted(sizes)} hold sizes that are not multiples of "
                f"1 + k = {q} ({', '.join(map(str, odd[:6]))}): a captured decode of that many tokens cannot be whole "
                f"spec decodes, so the capture's dummy batch fails the check -- the capture sizes vs the drafts, not "
                f"counted as mixed_batch")
    d.title = f"{title_of('cudagraph_shape')} (capture sizes {', '.join(map(str, odd[:6]))} not multiples of {q})"
    d.category = "cudagraph_shape"
    d.numbers.setdefault("uniform_decode_query_len", q)


def _no_spec_path(d: Diagnosis, facts: LogFacts, setup: Setup) -> None:
    """A state-index failure raised in the forward of a recurrent layer that has no spec-decode path in this
    release (specpath: Kimi-Linear's KDA before 0.27 asserts its non-spec state indices exist, or indexes them
    empty): the builder gave the layer a batch of spec decodes it has no path for -- the builder-vs-batch class."""
    files = [f.file for f in facts.root.frames[-3:]]
    nsp = no_spec_path(model_names(facts), facts.vllm_version, files)
    if nsp is None or not in_layer(nsp, files):
        return
    d.basis += (f"; raised in the forward of the model's {nsp.layers}, which have no speculative-decoding path "
                f"{nsp.since_text()}: the builder's spec-decode rows (1 + k tokens a request, no non-spec indices "
                f"for a batch of spec decodes) reach a layer that never reads them, not counted as {d.category}")
    d.title = f"Spec-decode batch on {nsp.layers}, which have no spec-decode path"
    d.category = "mixed_batch"
    d.confidence = "medium" if d.confidence == "high" else d.confidence


def _diagnose(facts: LogFacts, setup: Setup) -> Diagnosis | None:
    from ..catalog.match import match_exception
    from .bareassert import bare_config_assert

    root = facts.root
    orphans = [e for e in facts.exceptions if e.exc_type.startswith("(")]
    version = facts.vllm_version
    base_numbers = config_numbers(facts, setup)
    base_numbers.update(batch_numbers(setup.batch))
    fl = frame_lines(facts)
    if fl:
        base_numbers["frame_lines"] = fl
    batch_ev = fact_evidence(facts, "crash_batch")
    if root is None:
        return _diagnose_rootless(facts, orphans, setup, base_numbers, batch_ev)
    # vLLM's Ray worker logs "Error executing method 'x'. This might cause deadlock in distributed execution." after
    # the worker's exception (vllm/v1/executor/ray_utils.py execute_method): a note of the executor, not the error
    message = _RAY_EXEC_NOTE.sub("", root.message or "").strip()
    if (_WRAPPER.search(message.strip()) or _WRAPPER.search(root.exc_type)) and any(
            _CXX_WHAT.match(t) or ASYNC.search(t) for _, t in facts.startup.get("error_lines") or []):
        # the engine (or Ray) only reports that a worker died ("Executor failed.", ActorDiedError); the worker was
        # ended by a C++ exception ("terminate called after throwing ...", "what(): <message>": a kernel library's
        # lookup) or by a CUDA fault its NCCL watchdog reported -- read as error lines without a Python exception
        d = _diagnose_rootless(facts, orphans, setup, base_numbers, batch_ev)
        if d is not None and (d.category != "other" or d.rule == "near_miss"):  # (near_miss: the GPU itself failed)
            d.basis += "; the Python exception only wraps a worker's death (a C++ exception or a CUDA fault ended it)"
            return d
        what = next(((ln, t) for ln, t in reversed(facts.startup.get("error_lines") or [])
                     if _CXX_WHAT.match(t) and near_miss(t)), None)
        if what is not None:  # the C++ exception that ended the worker names a cause outside the families
            nm = near_miss(what[1])
            return Diagnosis(category="other", confidence="medium", rule="near_miss",
                             basis=f"the Python exception only wraps a worker's death; the C++ exception that ended "
                                   f"it is {_a(nm)} failure, outside the hybrid/spec-decode families",
                             title=f"{nm[0].upper() + nm[1:]}: a worker died on a C++ exception",
                             message=_CXX_WHAT.sub("", what[1]).strip()[:300],
                             numbers={**message_numbers(what[1]), **facts.numbers},
                             evidence=[Evidence(text=what[1][:500], line=what[0], source="log")] + exc_evidence(root, 1))
    text = f"{root.exc_type}: {message}"
    # the only error is vLLM's report that a worker failed: the class from the configuration and the A/B tests
    empty = empty_root_crash(facts, root, setup, base_numbers, batch_ev)
    if empty is not None:
        return empty

    # 0. a KV-memory error the log itself ties to the hybrid KV layout (checked before the site: the
    #    memory check is an `other` site, the disabled hybrid manager is the cause)
    if facts.startup.get("hybrid_kv_cache_manager_disabled") and re.search(
            r"KV cache is needed|No available memory for the cache blocks|KV cache memory|num_gpu_blocks", message):
        return Diagnosis(
            category="kv_page_size", confidence="medium", rule="failure_class",
            basis="the KV-cache memory check failed while the log says the hybrid KV cache manager is disabled: every "
                  "layer of the hybrid model then gets a full-length KV page per token (no per-group sizing), so the "
                  "KV cache needs far more memory than the hybrid layout would",
            title="KV cache too large because the hybrid KV cache manager is disabled",
            message=(message.strip().splitlines() or [""])[0][:300], numbers={**base_numbers, **facts.numbers},
            evidence=exc_evidence(root) + fact_evidence(facts, "hybrid_kv_cache_manager_disabled"),
            missing=["what disabled the hybrid KV cache manager (a KV connector, --disable-hybrid-kv-cache-manager, "
                     "a feature it does not support) -- the lines before the warning"])
    # 1. a known site ---------------------------------------------------------------------------
    matches = match_exception(root.exc_type, message, root.frames, version)
    best = matches[0] if matches else None
    if best is None or best.site.category == "other":  # a KV connector's bookkeeping on a hybrid model
        conn = connector_class(facts, root, setup, base_numbers, best.site.condition if best is not None else None)
        if conn is not None:
            return conn
    if best is not None and best.score >= 0.75 and best.how != "function":
        return from_site(facts, root, best, matches, setup, base_numbers, batch_ev)
    bare = bare_config_assert(facts, root, version)  # pydantic's "Assertion failed": a config's bare assert
    if bare is not None:
        return from_site(facts, root, bare, [bare], setup, base_numbers, batch_ev)
    if own_quality_gate(root, facts):
        # the error is the reporter's evaluation script failing its score check: vLLM raised nothing, the output went
        # wrong -- read as the silent failure it reports
        silent = fp16_overflow_quality(facts, base_numbers) or silent_corruption(facts, setup, base_numbers, batch_ev)
        if silent is not None:
            silent.basis = (f"the root error is the evaluation script's own quality gate ({message.strip()[:160]}), "
                            f"not a vLLM failure; " + silent.basis.replace("no error in the log; ", "", 1))
            silent.evidence = exc_evidence(root, 1) + silent.evidence
            return silent

    # 2. asynchronous fault ------------------------------------------------------------------------
    #    (also an NCCL call, or a runtime's launch, that failed on a CUDA error while the log says the device hit an
    #    illegal access: the collective or the launch is only where the fault surfaced)
    if ASYNC.search(text) or _nccl_on_cuda_fault(text, facts) or _runtime_error_after_fault(text, facts):
        hardware = _hardware_fault(facts)
        if hardware is not None:
            return _hardware_near_miss(facts, hardware, message, base_numbers, exc_evidence(root, 1))
        ruled_out = ab_tests_clear_families(facts, setup)
        if ruled_out is not None:
            return crash_near_miss(
                facts, "Asynchronous fault outside the hybrid/spec-decode classes (the report's A/B tests)",
                "the fault is reported asynchronously, so its class would come from the configuration, but the report's "
                f"own A/B tests take the hybrid/spec-decode classes out of it: {ruled_out}", message, base_numbers,
                exc_evidence(root, 1) + fact_evidence(facts, *AB_TEST_FACTS),
                missing=["rerun with CUDA_LAUNCH_BLOCKING=1 so the faulting kernel is the frame shown"])
        kernel = faulting_kernel(facts.startup.get("error_lines") or [])
        if kernel is None and facts.blocking_launches():
            kernel = _launching_frame(root)  # synchronous launches: the frame that launched is the kernel that faulted
        if kernel is None and (told := facts.startup.get("prose_fault_kernel")):
            name, lineno, said = told  # the reporter retelling a sanitizer's / debugger's report
            kernel = (name, None, None, said, lineno)
        if kernel is not None:
            return kernel_fault(facts, kernel, setup, base_numbers, batch_ev)
        return from_async(facts, root, setup, base_numbers, batch_ev)

    # a negative accepted-token count reaching vLLM's metrics (a spec-decode row that sampled nothing)
    acc = negative_accepted(facts, root, setup, base_numbers)
    if acc is not None:
        return acc

    # 3. near misses stay other
    pad = padding_signature(facts, setup.spec_k)
    if pad is not None:
        big, small, mx, what = pad
        return Diagnosis(
            category="cudagraph_shape", confidence="medium", rule="failure_class",
            basis=f"{what}: {big} is a CUDA-graph capture size above the most tokens a real step carries ("
                  + (f"max_num_seqs x (1 + {setup.spec_k}) = {mx}" if setup.spec_k > 0 else f"max_num_seqs = {mx}")
                  + f") while the tensor has {small} "
                  f"rows -- a batch padded to the capture size meets a buffer sized for the real batch",
            title=f"CUDA-graph padded batch ({big}) vs a buffer of {small} rows",
            message=(message.strip().splitlines() or [""])[0][:300],
            numbers={**base_numbers, **facts.numbers, "padded_batch": big, "rows": small},
            evidence=exc_evidence(root, 3) + fact_evidence(facts, "args", "command", "non_default_args") + batch_ev)
    over = budget_signature(facts, setup.spec_k)
    if over is not None:
        tokens, budget, most = over
        return Diagnosis(
            category="token_budget", confidence="medium", rule="failure_class",
            basis=f"a buffer of max_num_batched_tokens = {budget} rows met a step of {tokens} tokens: every speculative "
                  f"decode schedules 1 + {setup.spec_k} tokens, so max_num_seqs x (1 + k) = {most} can exceed the token "
                  f"budget the runner's and the drafter's buffers are sized by",
            title=f"Speculative tokens exceed the token budget ({tokens} > {budget})",
            message=(message.strip().splitlines() or [""])[0][:300],
            numbers={**base_numbers, **facts.numbers, "required_tokens": tokens, "max_num_batched_tokens": budget},
            evidence=exc_evidence(root, 3) + fact_evidence(facts, "args", "command", "non_default_args") + batch_ev)
    nm = near_miss(text)
    if nm:
        d = Diagnosis(category="other", confidence="medium", rule="near_miss",
                      basis=f"the root error is {_a(nm)} failure, outside the hybrid/spec-decode families",
                      title=f"{nm[0].upper() + nm[1:]}: {root.exc_type.rsplit('.', 1)[-1]}",
                      message=(message.strip().splitlines() or [""])[0][:300],
                      numbers=dict(facts.numbers), evidence=exc_evidence(root))
        return d

    # 4. where vLLM failed ---------------------------------------------------------------------------
    wc = cp_width_class(root, message, setup, facts)  # block-table widths in the ratio of the context-parallel size
    if wc is not None:
        return wc
    if NEG_INDEX.search(message) or rows_assert(root) or rows_mismatch(root, message):
        # a negative index is a row without accepted drafts before it is a bad index; an assert on a tensor's rows
        # compares the batch's rows (tokens vs requests), whatever its callers pass along (state indices too)
        sc = shape_class(root, message, setup, facts)
        if sc is not None:
            return sc
    # a pydantic schema error (a value outside a Literal, an unknown key, a wrong type) is the value itself, whatever
    # field it names: no family's check raised it
    # (so is an enum looked up by a name it lacks -- KeyError: 'FULL_DECODE' from enum.py in a config validator)
    schema = bool(_SCHEMA_ERROR.search(message)) or (
        root.exc_type.endswith("KeyError") and bool(root.frames) and root.frames[-1].file.replace("\\", "/").endswith("/enum.py"))
    fc = frame_category(root, message)
    if fc is not None and fc[0] == "cudagraph_shape" and facts.startup.get("persists_eager_prose"):
        fc = None  # (the failure stays with --enforce-eager: no CUDA graph is captured there)
    if fc is not None and fc[0] != "other" and not schema:
        cat, rid, fr = fc
        conf = "medium"
        d = Diagnosis(category=cat, confidence=conf, rule="failure_class",
                      basis=f"no catalog site matches this text; the failing frame {fr.file.rsplit('/', 1)[-1]}:"
                            f"{fr.function} and the message classify as {cat} (rule {rid})"
                            + (f"; setup: {', '.join(setup.why)}" if setup.why else ""),
                      title=f"{title_of(cat, rid)} ({root.exc_type.rsplit('.', 1)[-1]} in {fr.function})",
                      message=(message.strip().splitlines() or [""])[0][:300] or root.exc_type,
                      numbers={**base_numbers, **facts.numbers}, evidence=exc_evidence(root, 3) + batch_ev)
        d.missing.append("the exact failure site is not in the catalog (vLLM 0.11-0.33): a fork or a newer release")
        return d
    sc = shape_class(root, message, setup, facts)
    if sc is not None:
        return sc
    if not schema and not any("vllm/" in f.file or f.file.count("/") <= 2 for f in root.frames):
        # no vLLM frame printed (an excerpt of the message alone): the message's own words, the modules it
        # names (causal_conv1d, gdn, indexer ...) standing in for the file
        from ..catalog.categorize import categorize

        cat, rid = categorize({"file": message.lower()[:300], "function": "", "condition": "", "message": message,
                               "exc": root.exc_type})
        if cat != "other" and not precondition_fails(cat, setup, facts):
            return Diagnosis(category=cat, confidence="low", rule="failure_class",
                             basis=f"no frames and no catalog site for this text; its wording classifies as {cat} "
                                   f"(rule {rid})" + (f"; setup: {', '.join(setup.why)}" if setup.why else ""),
                             title=f"{title_of(cat)} (from the message)",
                             message=(message.strip().splitlines() or [""])[0][:300],
                             numbers={**base_numbers, **facts.numbers}, evidence=exc_evidence(root) + batch_ev,
                             missing=["the traceback of this error (which vLLM function raised it)"])
    if fc is not None:  # an 'other' rule decided from the frames (memory, weights, platform, a capability gap)
        return Diagnosis(category="other", confidence="medium", rule="failure_class",
                         basis=f"the failing frame and message classify as outside the families (rule {fc[1]})",
                         title=f"{root.exc_type.rsplit('.', 1)[-1]} in {fc[2].function}",
                         message=(message.strip().splitlines() or [""])[0][:300],
                         numbers=dict(facts.numbers), evidence=exc_evidence(root))
    if best is not None and 0.5 <= best.score < 0.75 and best.how in ("message", "kernel", "raise"):
        return from_site(facts, root, best, matches, setup, base_numbers, batch_ev, weak=True)
    hint = function_hint(root)
    if hint is not None:
        cat, fr = hint
        return Diagnosis(category=cat, confidence="low", rule="failure_class",
                         basis=f"the error surfaced in {fr.file.rsplit('/', 1)[-1]}:{fr.function}, a function whose "
                               f"failure sites in vLLM are {cat} checks; the message itself is not one of them",
                         title=f"{title_of(cat)} (inferred from {fr.function})",
                         message=(message.strip().splitlines() or [""])[0][:300] or root.exc_type,
                         numbers={**base_numbers, **facts.numbers}, evidence=exc_evidence(root, 3) + batch_ev)
    return None


# pydantic's schema errors: "[type=literal_error, input_value='all', ...]", "[type=extra_forbidden, ...]"
_SCHEMA_ERROR = re.compile(r"\[type=(?:literal_error|extra_forbidden|missing|enum|\w+_parsing|\w+_type|union_tag_\w+|"
                           r"greater_than\w*|less_than\w*|too_short|too_long|multiple_of)\b")
_LAUNCH = re.compile(r"\b(\w+)\[[^\]]{1,40}\]\(|torch\.ops\.\w+\.(\w+)\(|\bops\.(\w+)\(")


def _launching_frame(root: LogException):
    """With CUDA_LAUNCH_BLOCKING=1 the innermost frame that launches a kernel (a Triton ``kernel[grid](``, a
    ``torch.ops`` / ``ops.`` call) is where the fault happened: (kernel, file, line, text, log line)."""
    for fr in reversed(root.frames):
        m = _LAUNCH.search(fr.code or "")
        if m:
            return (m.group(1) or m.group(2) or m.group(3), fr.file, fr.line, f"{fr.file}:{fr.line} {fr.code}",
                    fr.log_line)
    last = root.last_frame
    if last is not None and _KERNEL_OPS.search(last.file.replace("\\", "/")):
        # the excerpt stops in a kernel module's wrapper (fla/ops fused_recurrent_gated_delta_rule, mamba/ops
        # causal_conv1d_update) before the launch line: that wrapper's kernel is the one that faulted
        return (last.function, last.file, last.line, f"{last.file}:{last.line} in {last.function}", last.log_line)
    return None


# kernel modules whose wrapper is the launch (fla/ops, mamba/ops), and the device communicators (custom / quick
# all-reduce, symmetric memory, NCCL): a frame in one of them under synchronous launches is the faulting kernel's
_KERNEL_OPS = re.compile(r"model_executor/layers/(?:fla|mamba)/ops/\w+\.py$|distributed/device_communicators/\w+\.py$")


_NCCL_CUDA = re.compile(r"NCCL error.{0,40}(?:unhandled cuda error|Cuda failure)|ncclUnhandledCudaError|"
                        r"Cuda failure '.{0,60}'|NCCL.{0,80}CUDA error", re.I)


# a GPU runtime's own launch error (Triton's "Triton Error [HIP]: ... invalid argument", "CUDA error: invalid
# argument"): after the device faulted, the next launch on the dead context fails with whatever code the runtime returns
_RUNTIME_ERROR = re.compile(r"Triton Error \[(?:CUDA|HIP)\]|\b(?:CUDA|HIP) error\b|\bhipError\w+|\bcudaError\w+")


def _runtime_error_after_fault(text: str, facts: LogFacts) -> bool:
    """A runtime error whose log also holds the device fault report (ROCm's HSA queue abort, a CUDA illegal access
    line): the fault is the failure, the launch that failed after it only where it surfaced."""
    return bool(_RUNTIME_ERROR.search(text)) and any(
        ASYNC.search(str(t)) for _, t in (facts.startup.get("error_lines") or []))


def _nccl_on_cuda_fault(text: str, facts: LogFacts) -> bool:
    """An NCCL error caused by a CUDA error, where the log (a watchdog line, NCCL's own text) names an asynchronous
    device fault -- not a distributed set-up problem."""
    if not _NCCL_CUDA.search(text):
        return False
    return any(ASYNC.search(str(t)) for _, t in (facts.startup.get("error_lines") or [])) or bool(ASYNC.search(text))


def _diagnose_rootless(facts: LogFacts, orphans: list[LogException], setup: Setup, base_numbers: dict,
                       batch_ev: list[Evidence]) -> Diagnosis | None:
    """No exception line: error-like lines (kernel text, excerpts) and frames printed without one."""
    from ..catalog.match import match_kernel, match_message

    lines = facts.startup.get("error_lines") or []
    for lineno, text in reversed(lines):
        ms = match_kernel(text) + match_message(text)
        ms = [m for m in ms if m.score >= 0.75]
        if ms:
            best = max(ms, key=lambda m: m.score)
            fake = LogException(exc_type=best.site.exc or "Error", message=text, log_line=lineno)
            d = from_site(facts, fake, best, ms, setup, base_numbers, batch_ev)
            d.confidence = "medium" if d.confidence == "high" else d.confidence
            d.basis += "; read from an error line (no Python exception in the excerpt)"
            return d
    kernel = faulting_kernel(lines)
    if kernel is not None:
        return kernel_fault(facts, kernel, setup, base_numbers, batch_ev)
    async_line = next(((ln, t) for ln, t in reversed(lines) if ASYNC.search(t)), None)
    hardware = _hardware_fault(facts)
    if hardware is not None:
        # the driver says the GPU itself failed (fell off the bus, ECC, NVLink): what the other lines report -- a
        # collective's timeout, a CUDA error, a dead worker -- is that device failing under the process
        return _hardware_near_miss(facts, hardware, async_line[1] if async_line else "", base_numbers,
                                   [Evidence(text=t[:300], line=ln) for ln, t in lines[-2:]])
    if async_line is not None:
        fake = LogException(exc_type="CUDA error", message=async_line[1], log_line=async_line[0])
        return from_async(facts, fake, setup, base_numbers, batch_ev)
    from ..catalog.match import match_frames

    for o in orphans:
        ms = [m for m in match_frames(o.frames, version=facts.vllm_version)
              if m.score >= 0.75 and m.how in ("condition", "kernel", "raise", "line")]
        if ms:  # the innermost frame is a known check (a kernel's TVM/TORCH check, an assert line)
            fake = LogException(exc_type=ms[0].site.exc or "Error", message="", frames=o.frames,
                                log_line=o.frames[-1].log_line)
            d = from_site(facts, fake, ms[0], ms, setup, base_numbers, batch_ev)
            d.confidence = "medium" if d.confidence == "high" else d.confidence
            d.basis += "; the excerpt has the frames but not the exception line"
            d.message = f"{fake.exc_type} at {site_text(ms[0].site)[:120]} (the excerpt ends before its exception line)"
            return d
    for o in orphans:  # a kernel library's check macro as the innermost frame, not in the catalog
        kc = kernel_check_frame(o)
        if kc is not None and kc[0] != "other" and not precondition_fails(kc[0], setup, facts):
            cat, rid, fr, cond = kc
            return Diagnosis(category=cat, confidence="medium" if setup.why else "low", rule="failure_class",
                             basis=f"the innermost frame is a kernel's own check, {fr.file.rsplit('/', 1)[-1]}:{fr.line} "
                                   f"({cond}), outside the catalog; what it compares and where classify as {cat} "
                                   f"(rule {rid})" + (f"; setup: {', '.join(setup.why)}" if setup.why else ""),
                             title=f"{title_of(cat)} (kernel check {cond})", message=cond,
                             numbers={**base_numbers, **facts.numbers}, evidence=exc_evidence(o, 3) + batch_ev,
                             missing=["the exception line of this check (the kernel's message)"])
    for o in orphans:
        if not ends_at_leaf(o):
            # the excerpt stops mid-stack: the frame that failed is not shown; only the stage is
            st = stage_family(o.frames, setup, spec_unstated=not config_known(facts))
            if st is not None:
                cat, why, fr = st
                return Diagnosis(category=cat, confidence="low", rule="failure_class",
                                 basis=f"the excerpt stops mid-traceback (no exception line); it failed {why} "
                                       f"({fr.file.rsplit('/', 1)[-1]}:{fr.function}) with {', '.join(setup.why)}",
                                 title=f"{title_of(cat)} (inferred from where it failed)",
                                 message="traceback without its exception line",
                                 numbers={**base_numbers, **facts.numbers}, evidence=exc_evidence(o, 3) + batch_ev,
                                 missing=["the exception line and the innermost frames of this traceback"])
            continue
        fc = frame_category(o, "")
        if fc is not None and fc[0] != "other":
            cat, rid, fr = fc
            return Diagnosis(category=cat, confidence="low", rule="failure_class",
                             basis=f"the excerpt has frames but no exception line; the innermost vLLM frame "
                                   f"{fr.file.rsplit('/', 1)[-1]}:{fr.function} classifies as {cat} (rule {rid})",
                             title=f"{title_of(cat)} (frames only, in {fr.function})",
                             message="traceback without its exception line",
                             numbers={**base_numbers, **facts.numbers}, evidence=exc_evidence(o, 3) + batch_ev,
                             missing=["the exception line (type and message) of this traceback"])
        hint = function_hint(o)
        if hint is not None:
            cat, fr = hint
            return Diagnosis(category=cat, confidence="low", rule="failure_class",
                             basis=f"frames without an exception line; {fr.function} holds {cat} failure sites",
                             title=f"{title_of(cat)} (frames only, in {fr.function})",
                             message="traceback without its exception line",
                             numbers={**base_numbers, **facts.numbers}, evidence=exc_evidence(o, 3) + batch_ev,
                             missing=["the exception line (type and message) of this traceback"])
    if setup.batch is not None or "crash_batch" in facts.lines or facts.lines.get("engine_config", (0, ""))[1].find("Dumping input") >= 0:
        # vLLM dumped the step's input: the engine died inside a step, but the excerpt lost the error
        st = stage_family([], setup)
        if st is not None:
            cat, why, _ = st
            return Diagnosis(category=cat, confidence="low", rule="failure_class",
                             basis=f"vLLM's crash dump shows the engine died inside a step; the error itself is not in "
                                   f"the excerpt; {why} with {', '.join(setup.why)}",
                             title=f"{title_of(cat)} (inferred from the crash dump and the configuration)",
                             message="engine step failed (crash dump), error text missing",
                             numbers={**base_numbers, **facts.numbers},
                             evidence=fact_evidence(facts, "engine_config") + batch_ev,
                             missing=["the exception of the failing step (the lines after the dump)"])
    probe = facts.startup.get("probe_kill")
    # (the runtime's report of that kill -- "container killed (exit 137)" -- is the same event, unless it names the OOM
    # killer)
    # (nor is the kubelet's back-off before restarting the container it killed)
    if probe and not any(_REAL_ERROR.search(t) for _, t in lines if "probe" not in t and "Killing" not in t
                         and "Back-off restarting" not in t and not (_PROBE_KILLED.search(t) and "OOM" not in t)):
        # the kubelet restarted the container because its liveness/startup probe got no answer: a start (weights,
        # compilation, CUDA-graph capture) slower than the probe allows, not an engine failure
        ln = (facts.lines.get("probe_kill") or (None,))[0]
        probe_numbers = {k: facts.startup[k] for k in ("probe_initial_delay_seconds", "probe_period_seconds",
                                                       "probe_failure_threshold", "model_loading_seconds",
                                                       "restart_count", "exit_code") if k in facts.startup}
        return Diagnosis(category="other", confidence="medium", rule="near_miss",
                         basis="no exception in the log; Kubernetes killed the container after its health probe got no "
                               "answer (the API server answers only once the engine has started): a start slower than "
                               "the probe allows, outside the hybrid/spec-decode families",
                         title="Container restarted by its Kubernetes probe before the engine finished starting",
                         message=probe[:300], numbers={**base_numbers, **facts.numbers, **probe_numbers},
                         evidence=[Evidence(text=probe, line=ln, source="log")],
                         missing=["the log's last lines before the kill (where the start was), and a startupProbe or "
                                  "initialDelaySeconds above the measured start time"])
    # (the line that states the wrong output -- a test's failed score check -- is the symptom, not another error; so is
    # the client's transport error for a stream cut short, "peer closed connection without sending complete message")
    symptom_line = (facts.lines.get("wrong_output_prose") or (None,))[0]
    quiet = all(ln == symptom_line or near_miss(t) == CONNECTION_CUT for ln, t in lines)
    quiet_reading = quiet_report(facts, setup, base_numbers, batch_ev) if quiet else None
    if quiet_reading is not None:
        return quiet_reading
    died = next(((ln, t) for ln, t in reversed(lines) if _DIED.search(t)), None)
    # the process died and printed no error of its own
    silent_death = died is not None and all(_DIED.search(t) or not _REAL_ERROR.search(t) for _, t in lines)
    if silent_death and facts.startup.get("host_oom_kill"):
        # the process died without an error of its own, and the report shows the host killing it for its memory
        # (kubectl's "Reason: OOMKilled", the kernel's "Killed process"): a container or host memory limit
        ln, said = facts.lines.get("host_oom_kill") or died
        return Diagnosis(
            category="other", confidence="medium", rule="near_miss",
            basis=f"a process died without printing an error, and the report shows the host's OOM killer ending it "
                  f"('{facts.startup['host_oom_kill']}'): the container's or the host's memory limit (pinned CPU swap, "
                  "KV offload buffers, the weights staged in RAM), outside the hybrid/spec-decode families",
            title="Out of host memory: the kernel's OOM killer ended the process", message=died[1][:300],
            numbers={**base_numbers, **facts.numbers},
            evidence=[Evidence(text=str(said)[:500], line=ln, source="log"),
                      Evidence(text=died[1][:500], line=died[0], source="log")],
            missing=["the container's memory limit and the engine's host-memory settings (swap space, CPU offload, "
                     "KV offloading size)"])
    if silent_death:  # nothing here names a class
        return Diagnosis(
            category="other", confidence="low", rule="failure_class",
            basis="a process died without printing an error (a native crash, a signal, the kernel's OOM killer or a "
                  "GPU fault reported only to the kernel log); the log names no failure class -- not modelled",
            title="Process died without an error message", message=died[1][:300],
            numbers={**base_numbers, **facts.numbers}, evidence=[Evidence(text=died[1][:500], line=died[0], source="log")],
            missing=["the lines before the death on every rank, the kernel log (dmesg: Xid / OOM killer) and a run with "
                     "CUDA_LAUNCH_BLOCKING=1"])
    rejected = _request_rejected(lines)
    if rejected is not None:
        return rejected
    refused = next(((ln, t) for ln, t in reversed(lines) if _ARGPARSE.search(t)), None)
    if refused is not None:
        # the command line refused by its parser before any engine started ("vllm serve: error: argument
        # --kv-cache-dtype: invalid choice: 'fp4'"; "unrecognized arguments: ..."): a usage error
        return Diagnosis(category="other", confidence="high", rule="near_miss",
                         basis="the command's argument parser refused it before any engine started (argparse's "
                               "'<prog>: error: ...'): a usage error, outside the hybrid/spec-decode families",
                         title="Command line refused by vLLM's argument parser", message=refused[1][:300],
                         numbers={**base_numbers, **facts.numbers},
                         evidence=[Evidence(text=refused[1][:500], line=refused[0], source="log")])
    # an error stated in prose / a kernel message outside the catalog: classify its words
    from ..catalog.categorize import categorize

    for lineno, text in reversed(lines):
        nm = near_miss(text)
        host_oom = HOST_OOM_KILL.search(text)
        if host_oom:  # the kernel's own report of the kill says the most (which process, how much memory)
            lineno, text = next(((ln, t) for ln, t in lines if re.search(r"Killed process \d+", t)), (lineno, text))
        if nm is not None and (_OS_ERROR_LINE.search(text) or host_oom or nm == CONNECTION_CUT):
            # an OS error logged without a traceback (uvicorn's "[Errno 98] ... address already in use"), the
            # kernel's OOM killer ending the process (a container's memory limit), or the client's transport error
            # with no engine error behind it: the line names a cause outside the families
            return Diagnosis(category="other", confidence="medium", rule="near_miss",
                             basis=f"no exception in the log; the error line is {_a(nm)} failure, outside the "
                                   "hybrid/spec-decode families",
                             title=("Out of host memory: the kernel's OOM killer ended the process" if host_oom else
                                    f"{nm[0].upper() + nm[1:]} (from an error line)"), message=text[:300],
                             numbers={**message_numbers(text), **facts.numbers},
                             evidence=[Evidence(text=text[:500], line=lineno, source="log")])
        if nm is not None:
            return None
        cat, rid = categorize({"file": "", "function": "", "message": text, "exc": ""})
        if cat != "other" and rid not in ("hybrid_batch_any",):
            return Diagnosis(category=cat, confidence="low", rule="failure_class",
                             basis=f"no exception in the excerpt; the error line's wording classifies as {cat} (rule {rid})",
                             title=f"{title_of(cat)} (from an error line)", message=text[:300],
                             numbers={**base_numbers, **facts.numbers},
                             evidence=[Evidence(text=text[:500], line=lineno, source="log")] + batch_ev)
    return unexplained_symptom(facts, base_numbers) if quiet else None


_OS_ERROR_LINE = re.compile(r"\[Errno \d+\]")
# argparse's own error line: "<prog>: error: <what>" ("main.py serve: error: argument --x: invalid choice: ...",
# "vllm: error: unrecognized arguments: --foo", "vllm serve: error: the following arguments are required: ...")
_ARGPARSE = re.compile(r"^(?:[\w.\-/]+)(?: [\w\-]+)?: error: (?:argument -|unrecognized arguments:|the following arguments "
                       r"are required|invalid choice|ambiguous option)")
_API_ERROR = re.compile(r'"message"\s*:\s*"((?:[^"\\]|\\.){1,600})"')
_API_TYPE = re.compile(r'"type"\s*:\s*"(\w*(?:Error|Exception))"')
_API_CODE = re.compile(r'"code"\s*:\s*"?([45]\d\d)\b')


# the container runtime ending the container the probe failed: "container killed (exit 137)"
_PROBE_KILLED = re.compile(r"\bcontainer (?:\w+ )?killed\b|\bexit(?: code| status)?[:= ]*137\b", re.I)


def _request_rejected(lines: list) -> Diagnosis | None:
    """The API server's error body a client got for a request it refused (HTTP 4xx: a prompt over max_model_len,
    a bad sampling parameter, an unknown model name): a request failing validation, not the engine -- outside the
    hybrid/spec-decode families. (A 5xx body only relays an engine failure the log may not show.)"""
    for lineno, text in reversed(lines):
        typ, msg, code = _API_TYPE.search(text), _API_ERROR.search(text), _API_CODE.search(text)
        if not (typ and msg) or (code and code.group(1).startswith("5")) or "Internal" in typ.group(1):
            continue
        status = f"HTTP {code.group(1)} " if code else ""
        return Diagnosis(category="other", confidence="medium", rule="near_miss",
                         basis=f"the API server refused a request ({status}{typ.group(1)}): request validation, outside "
                               f"the hybrid/spec-decode families; the engine itself did not fail here",
                         title=f"Request rejected by the API server: {typ.group(1)}", message=msg.group(1)[:300],
                         numbers={**named_numbers(msg.group(1)),
                                  **({"http_status": int(code.group(1))} if code else {})},
                         evidence=[Evidence(text=text[:500], line=lineno, source="log")])
    return None


_MAMBA_MIXER = re.compile(r"layers/mamba/mamba_mixer2?\.py")
_VLLM_CODE = re.compile(r"(?:^|/)vllm/(?:v1|model_executor)/")  # (not a venv named vllm: /opt/vllm/lib/.../torch)
# NVIDIA's Xid codes of the device itself failing, not of a kernel's bad access (13/31/43): double-bit ECC (48), page
# retirement / row remapping (63, 64), NVLink (74), fallen off the bus (79), ECC rates and containment (92, 94, 95),
# GSP firmware (119, 120), a reset required (154)
_HARDWARE_XIDS = {48: "double-bit ECC error", 63: "row remapping", 64: "row remapping failure", 74: "NVLink error",
                  79: "fallen off the bus", 92: "high single-bit ECC rate", 94: "contained ECC error",
                  95: "uncontained ECC error", 119: "GSP timeout", 120: "GSP error", 154: "GPU reset required"}


def _hardware_fault(facts: LogFacts) -> str | None:
    """What the driver says of the GPU itself failing, when the log has it (its Xid reports, dmesg lines)."""
    for xid in facts.startup.get("xids") or []:
        if xid in _HARDWARE_XIDS:
            return f"Xid {xid}: {_HARDWARE_XIDS[xid]}"
    hit = next((t for _, t in facts.startup.get("error_lines") or [] if LOST_GPU.search(t)), None)
    if hit:
        return LOST_GPU.search(hit).group(0)
    # (the IOMMU's refusal where the GPU itself faulted on it -- an Xid, a CUDA error; a hang alone is the collective's
    # reading, which counts the same fault)
    lines = facts.startup.get("error_lines") or []
    faulted = facts.startup.get("xids") or any(ASYNC.search(t) for _, t in lines)
    return _IOMMU if facts.startup.get("iommu_fault") and faulted else None


_IOMMU = "the host's IOMMU refused the GPU's DMA"


def _hardware_near_miss(facts: LogFacts, hardware: str, message: str, base_numbers: dict,
                        evidence: list[Evidence]) -> Diagnosis:
    if hardware == _IOMMU:
        return crash_near_miss(
            facts, "Host IOMMU refused the GPU's DMA (peer-to-peer or copy-engine transfers blocked)",
            f"the host's IOMMU logged a DMA fault for the GPU ('{facts.startup['iommu_fault'][:120]}'): the GPUs' "
            "peer-to-peer or copy-engine transfers are refused (GPUs passed through to a VM, an ACS / IOMMU setting), so "
            "a collective hangs or the device faults -- the platform, outside the hybrid/spec-decode families",
            message if message.strip() else hardware, base_numbers, evidence + fact_evidence(facts, "iommu_fault", "xid"),
            missing=["the same run with NCCL_P2P_DISABLE=1, and the host's IOMMU / ACS settings"])
    return crash_near_miss(facts, f"GPU hardware fault ({hardware})",
                            f"the driver reports a failure of the GPU itself ({hardware}); the errors the process printed "
                            f"are that device failing under it, outside the hybrid/spec-decode families",
                            message if message.strip() else hardware, base_numbers,
                            evidence + fact_evidence(facts, "xid"))


def _a(phrase: str) -> str:
    """The phrase with its indefinite article ("an out of memory", "a tokenizer")."""
    return ("an " if phrase[:1].lower() in "aeiou" else "a ") + phrase


def _v0_release(version: str | None) -> str | None:
    """The log's vLLM version when it is a V0-era release (before 0.9; a development build's ``0.1.devN`` is not)."""
    from ..catalog import vtuple

    if not version or "dev" in version:
        return None
    v = vtuple(version)
    return version if v is not None and (0, 2, 0) <= v < (0, 9, 0) else None


# the engine's / Ray's report that a worker process died, which says nothing of why
_WRAPPER = re.compile(r"^(?:Executor failed|Engine core initialization failed|EngineCore encountered an issue|"
                      # (the engine's queue to its workers, cancelled as they died: shm_broadcast.py acquire_read)
                      r"Worker proc \S+ died|The actor died unexpectedly|cancelled$)|ActorDiedError$")
_RAY_EXEC_NOTE = re.compile(r"\s*Error executing method '?\w+'?\. This might cause deadlock in distributed execution\.")
_CXX_WHAT = re.compile(r"\s*what\(\):")
_DIED = re.compile(r"died unexpectedly|[Ss]egmentation fault|core dumped|killed by signal", re.I)
_REAL_ERROR = re.compile(r"Error|error:|Assertion|Check failed|illegal|fault|Xid|failed", re.I)

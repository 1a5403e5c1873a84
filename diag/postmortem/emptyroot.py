"""Crashes whose only error is vLLM's wrapper: the engine says a worker failed ("Worker failed with error ''",
"EngineCore encountered an issue", "Engine core initialization failed ... Failed core proc(s): {}") and the
worker's own exception never reached the log (a log shipper's line limit, a message-less ``assert``, an excerpt).
As with an asynchronous fault, the class then comes from the configuration and the report's own A/B tests
(``low``), and the finding says the worker's error is missing."""

from __future__ import annotations

import re

from ..model import Evidence, LogException, LogFacts
from .asyncfault import hybrid_spec_fault_class, separate_draft
from .configuration import AB_TEST_FACTS, Setup, ab_tests_clear_families
from .diagnosis import Diagnosis, crash_near_miss, exc_evidence, fact_evidence, title_of

# the engine's and the API server's reports that something below them failed, which carry no cause of their own
# (a worker's error relayed with an empty message: ``Worker failed with error ''``)
_WRAPPER_TEXT = re.compile(
    r"Worker failed with error (?:''|\"\")|EngineCore encountered (?:an issue|a fatal error)|"
    r"Engine core initialization failed|EngineCore failed to start|output_handler failed|Executor failed|"
    r"Worker proc \S+ died unexpectedly|Failed core proc\(s\)|EngineDeadError\s*$|shutting down executor|"
    # the engine's shared-memory queue to its workers, cancelled as they died (shm_broadcast.py acquire_read)
    r"\bRuntimeError: cancelled\b(?!\s*(?:by|due|because))|"
    # the worker's own error told as message-less: a bare ``AssertionError`` ("just ends in `AssertionError` with no
    # text"), which names no site either
    r"\bAssertionError`?(?:\s*$|\s+with (?:no|an empty) (?:text|message))|\b(?:bare|empty|message-?less) `?assert", re.I)
# what an error line carries that a reporter's sentence does not: an exception's type, a log level, a runtime's name
_ERROR_MARK = re.compile(r"\b(?:ERROR|\w*(?:Error|Exception)\b|error:|Assertion|Check failed|CUDA|NCCL|Xid(?:\s*[(:]|\s+\d)|illegal|"
                         r"fault|Traceback|terminate|what\(\)|[Kk]illed|signal|SIG[A-Z]+|Segmentation|died unexpectedly|"
                         r"exit code)")
# drafters with attention layers (and KV pages) of their own beside the target's: EAGLE heads, Medusa, DFlash
_OWN_KV_DRAFTER = re.compile(r"eagle|medusa|dflash|dspark", re.I)
# a worker process that died killed, without an error of its own ("died unexpectedly (exit code: -9)")
_KILLED_WORKER = re.compile(r"died unexpectedly|exit ?code[:= ]+-9\b|SIGKILL|signal 9|Killed", re.I)
# a signal that says who ended the worker (the OOM killer's SIGKILL, a segfault): a cause of its own, not modelled here
_SIGNALLED = re.compile(r"SIGKILL|SIGSEGV|signal 9|exit ?code[:= ]+13[79]|Segmentation fault|core dumped|OOMKilled|"
                        r"out of memory", re.I)


# a span the reporter quoted in backticks
_QUOTED = re.compile(r"`[^`\n]{1,200}`")


def _bare_assert(root: LogException) -> bool:
    """A message-less ``assert``: an AssertionError that names no condition."""
    return root.exc_type.endswith("AssertionError") and not root.message.strip()


def wrapper_only(facts: LogFacts, root: LogException) -> bool:
    """The root error and every error line are vLLM's wrappers: no line holds the worker's own error."""
    text = f"{root.exc_type}: {root.message}"
    # a bare ``assert`` whose traceback the report cut above the failing module (no frame, or the innermost frame is
    # still the engine core's call): no site to match, as silent as the wrapper
    last = root.last_frame
    cut_bare = _bare_assert(root) and (
        last is None or re.search(r"v1/engine/core\.py$", last.file.replace("\\", "/")) is not None)
    if not (cut_bare or _WRAPPER_TEXT.search(text)) or _SIGNALLED.search(text):
        return False
    # an NCCL watchdog's timeout, the driver's Xid report, a kubelet's probe kill or a hang before the death name a
    # cause the wrapper does not carry
    if any(k in facts.lines for k in ("nccl_watchdog", "xid")) or facts.startup.get("probe_kill") \
            or facts.startup.get("hang_prose") or facts.startup.get("xids"):
        return False
    # (a row of the reporter's A/B table is another run's outcome, and a sentence of theirs with no error's marks --
    # "The worker that died printed nothing" -- is prose, not this run's error)
    # (nor is a sentence that quotes an error in backticks -- "`AssertionError` is all it prints" -- once the quotes
    # are out)
    lines = [str(t) for _, t in facts.startup.get("error_lines") or []
             if not str(t).lstrip().startswith("|") and _ERROR_MARK.search(_QUOTED.sub("", str(t)))]
    # (the bare assert's line may carry the raw copy's "Process EngineCore_DP0:" header joined to it)
    return all((_WRAPPER_TEXT.search(t) or cut_bare and re.fullmatch(r"\W*AssertionError\W*(?:Process [\w-]+:?\s*)?",
                                                                     t.split("]")[-1]))
               and not _SIGNALLED.search(t) for t in lines)


def empty_root_crash(facts: LogFacts, root: LogException, setup: Setup, base_numbers: dict,
                     batch_ev: list[Evidence]) -> Diagnosis | None:
    """The reading of a crash whose worker error is missing: a near miss when the report's A/B tests clear the
    families, else the class the configuration points at (None when it points at none)."""
    if facts.startup.get("host_oom_kill") and _WRAPPER_TEXT.search(f"{root.exc_type}: {root.message}") and any(
            _KILLED_WORKER.search(str(t)) for _, t in facts.startup.get("error_lines") or []):
        # a worker killed (SIGKILL, no error of its own) and the report shows the host's OOM killer ending it
        # (kubectl's "Reason: OOMKilled", the kernel's "Killed process"): the container's memory limit
        return crash_near_miss(
            facts, "Out of host memory: the kernel's OOM killer ended a worker",
            "the only error is vLLM's report that a worker died without an error of its own (killed), and the report "
            f"shows the host's OOM killer ending it ('{facts.startup['host_oom_kill']}'): the container's or the host's "
            "memory limit (weights staged in RAM while loading, pinned buffers, KV offload), outside the "
            "hybrid/spec-decode families", root.message, base_numbers,
            exc_evidence(root, 1) + fact_evidence(facts, "host_oom_kill"),
            ["the container's memory limit against the weights' size (loading stages shards in host RAM)"])
    if not wrapper_only(facts, root):
        return None
    nums = {**base_numbers, **facts.numbers}
    first = (root.message.strip().splitlines() or [root.exc_type])[0][:300]
    missing = ["the worker's own traceback: the lines above 'EngineCore encountered a fatal error' / 'EngineCore "
               "failed to start' on every rank (a log shipper may drop long lines; VLLM_LOGGING_LEVEL=DEBUG and "
               "CUDA_LAUNCH_BLOCKING=1 show more)"]
    ev = exc_evidence(root, 1) + batch_ev + fact_evidence(facts, "command", "non_default_args", "engine_config")
    bare = _bare_assert(root)
    wrapped = ("the only error is a bare AssertionError whose traceback does not reach the module that asserted" if bare
               else "the only error is vLLM's report that a worker failed; the worker's own error is not in the log")
    cleared = ab_tests_clear_families(facts, setup)
    if cleared is not None:
        return crash_near_miss(
            facts, "Worker failure outside the hybrid/spec-decode classes (the report's A/B tests)",
            f"{wrapped}; the report's own A/B tests take the hybrid/spec-decode classes out: {cleared}", first,
            base_numbers, ev + fact_evidence(facts, *AB_TEST_FACTS), missing)
    at_start = bool(re.search(r"initialization failed|failed to start", f"{root.message} " + " ".join(
        str(t) for _, t in facts.startup.get("error_lines") or []), re.I))
    tied = facts.startup.get("spec_tied_prose")
    fewer = facts.startup.get("fewer_drafts_work")
    if not tied and isinstance(fewer, int) and 0 <= fewer < setup.spec_k:
        tied = f"{fewer} draft token(s) work, {setup.spec_k} do not"
    why = ", ".join(setup.why) or "the configuration"
    if at_start and setup.mla and setup.spec_k and tied and not setup.hybrid:
        # the start's dummy run and CUDA-graph capture run the MLA / sparse-indexer decode with 1 + k query rows
        cat = "spec_kernel_limit"
        reason = (f"the engine's start runs the MLA / sparse-indexer decode kernels on dummy batches of 1 + k = "
                  f"{setup.spec_k + 1} query tokens a request, past what some of them take (DeepGEMM's paged-MQA logits "
                  f"on Hopper: next_n 1 or 2); the report: '{tied}'")
        nums.setdefault("next_n", setup.spec_k + 1)
    elif at_start and setup.hybrid and facts.startup.get("hybrid_kv_cache_manager_disabled"):
        # vLLM said it runs this hybrid with the hybrid KV cache manager off: every layer's spec must then fold into
        # one type, which Mamba/GDN state specs beside attention cannot ("Hybrid KV cache manager is disabled but
        # failed to convert the KV cache specs to one unified type")
        cat = "kv_page_size"
        reason = ("vLLM logged that the hybrid KV cache manager is disabled for this hybrid model: the KV-cache "
                  "configuration at start must then fold the Mamba/GDN state specs and the attention specs into one "
                  "type, which it cannot")
    elif at_start and setup.hybrid and isinstance(fewer_seqs := facts.startup.get("fewer_seqs_work"), int) \
            and isinstance(seqs := facts.args.get("max_num_seqs"), int) and fewer_seqs < seqs:
        # a hybrid holds one Mamba state block per running request: with CUDA graphs vLLM checks at start that
        # max_num_seqs fits in the Mamba cache blocks the KV memory left ("max_num_seqs (N) exceeds available Mamba cache
        # blocks (M)"), and a draft model's weights and KV leave fewer
        cat = "mamba_block_budget"
        reason = (f"a hybrid keeps one Mamba state block per running request, and at start (with CUDA graphs) vLLM checks "
                  f"that max_num_seqs {seqs} fits in the Mamba cache blocks the KV memory left; the report: "
                  f"--max-num-seqs {fewer_seqs} starts")
        nums.update({"max_num_seqs": seqs, "max_num_seqs_that_starts": fewer_seqs})
    elif at_start and setup.hybrid and str(facts.args.get("kv_cache_dtype") or "").lower().startswith("fp8"):
        # a quantized KV cache on a hybrid: the attention pages shrink with the dtype while the Mamba/GDN state pages
        # do not, and the KV-cache configuration at start must still unify them
        cat = "kv_page_size"
        reason = (f"--kv-cache-dtype {facts.args['kv_cache_dtype']} on a hybrid: the attention layers' pages shrink with "
                  "the 1-byte KV dtype while the Mamba/GDN state pages keep theirs, and the KV-cache configuration at start "
                  "must unify the two")
    elif at_start:
        own_kv = separate_draft(setup) or bool(_OWN_KV_DRAFTER.search(str(setup.spec_method or "")))
        if not (setup.hybrid and setup.spec_k and (own_kv or tied)):
            return None
        # a hybrid's engine start with drafts: the KV-cache configuration (after the memory profile) unifies the
        # pages of the target's Mamba/GDN and attention layers with those of the drafter's layers
        cat = "kv_page_size"
        drafter = ("a separate draft model" if separate_draft(setup) else
                   f"an {setup.spec_method} draft with attention layers of its own" if own_kv else
                   f"the {setup.spec_method or 'spec'} drafter")
        reason = (f"{drafter} on a hybrid target: the KV-cache configuration at start unifies the page sizes of the "
                  f"target's Mamba/GDN and attention layers with the drafter's layers"
                  + (f" (the report: '{tied}')" if tied else ""))
        if facts.startup.get("available_kv_cache_gib") is not None:
            reason += "; the engine died after the memory profile ('Available KV cache memory'), where that happens"
    elif setup.hybrid and setup.spec_k:
        cat, reason = hybrid_spec_fault_class(setup, facts.startup.get("structured_outputs_prose"))
    elif setup.mla and setup.spec_k:
        cat = "spec_kernel_limit"
        reason = (f"MLA / sparse-indexer attention with multi-token decode: each decode request carries "
                  f"1 + k = {setup.spec_k + 1} query tokens, past what some of those kernels take (DeepGEMM's "
                  f"paged-MQA logits on Hopper: next_n 1 or 2)")
        if setup.spec_k > 0:
            nums.setdefault("next_n", setup.spec_k + 1)
    else:
        return None
    return Diagnosis(
        category=cat, confidence="low", rule="failure_class",
        basis=f"{wrapped}; inferred from the configuration: {why} -> {reason}"
              + (f"; the report ties it to the drafts ('{tied}')" if tied and not at_start else ""),
        title=f"{title_of(cat)} (inferred: " + ("a bare assert without its site)" if bare else
                                                "the worker's error is missing from the log)"),
        message=first, numbers=nums, evidence=ev + fact_evidence(
            facts, "spec_tied_prose", "fewer_drafts_work", "fewer_seqs_work"), missing=missing)

"""A negative accepted-token count: a speculative-decoding row that came back with no sampled token.

vLLM's Prometheus counters are fed counts that cannot be negative (generation tokens, preemptions, prefix-cache
queries and hits, drafts) with two derived exceptions: the scheduler's ``num_accepted = len(generated_token_ids) - 1``
for a request that had draft tokens scheduled (``Scheduler.update_from_output``, every V1 release), fed to
``vllm:spec_decode_num_accepted_tokens`` (``v1/spec_decode/metrics.py``), and, in newer releases, the prompt tokens
by source (computed = prompt - cached, negative when a cache over-counts). ``prometheus_client`` refuses either with
``ValueError: Counters can only be incremented by non-negative amounts.`` With speculative decoding the first is the
one a step's batch produces: a spec-decode row of the step sampled nothing -- a row the runner padded (CUDA-graph
uniform-decode padding), dropped or never computed. On a hybrid (Mamba/GDN) model that is the mixed-batch class (rows
of one batch disagreeing about their draft tokens: ``num_accepted - 1`` is the state index such a row reads, -1
here); on a dense model it is outside the families. Frames that show which counter decide.
"""

from __future__ import annotations

import re

from ..model import LogException, LogFacts
from .configuration import Setup, config_known
from .diagnosis import Diagnosis, exc_evidence, fact_evidence, title_of

NEGATIVE_COUNTER = re.compile(r"Counters can only be incremented by non-negative amounts", re.I)


def negative_accepted(facts: LogFacts, root: LogException, setup: Setup, base_numbers: dict) -> Diagnosis | None:
    if not NEGATIVE_COUNTER.search(f"{root.exc_type}: {root.message}"):
        return None
    frames = " ".join(f"{f.file} {f.function} {f.code or ''}" for f in root.frames[-4:])
    if re.search(r"prompt_tokens|by_source|prefix_cache|cached", frames):
        return None  # the prompt-token / cache counters: a cache's accounting, not a spec-decode row
    on_spec_counter = bool(re.search(r"spec_decod|accepted", frames))
    if setup.spec_k == 0 and config_known(facts) and not on_spec_counter:
        return None  # no speculative decoding: another counter (a cache's accounting, a plugin's)
    nums = {**base_numbers, **facts.numbers}
    ev = exc_evidence(root, 3) + fact_evidence(facts, "crash_batch", "command", "non_default_args", "engine_config")
    why = (", ".join(setup.why) or "nothing else known")
    spec = ("the frames show the spec-decode counter" if on_spec_counter else "speculative decoding is on"
            if setup.spec_k else "speculative decoding is not stated (the other counter that can go negative, prompt "
            "tokens by source, would point at a cache's accounting instead)")
    common = ("a counter fed a negative amount: with speculative decoding, the spec-decode accepted tokens, "
              "num_accepted = len(generated_token_ids) - 1, -1 for a spec-decode row that sampled nothing")
    if setup.hybrid:
        d = Diagnosis(
            category="mixed_batch", confidence="medium" if setup.spec_k or on_spec_counter else "low",
            rule="failure_class",
            basis=(f"{common}; {spec}; on a hybrid model that row's Mamba/GDN state index is num_accepted - 1 = -1 -- "
                   f"rows of one spec-decode batch disagreeing about their drafts (padded or dropped rows) ({why})"),
            title=f"{title_of('mixed_batch')}: a spec-decode row with a negative accepted count",
            message=(root.message.strip().splitlines() or [""])[0][:300], numbers=nums, evidence=ev)
        d.missing.append("vLLM's crash dump or the probes' step record of the failing step (which rows had drafts, "
                         "how many tokens each got); whether --enforce-eager (no CUDA-graph padding) avoids it")
        return d
    d = Diagnosis(
        category="other", confidence="medium" if setup.hybrid is False else "low", rule="failure_class",
        basis=(f"{common}; {spec}; "
               + ("the model is not a hybrid, so no Mamba/GDN state reads that index: a spec-decode bookkeeping fault "
                  "outside the families" if setup.hybrid is False else
                  "the log does not name the model: on a hybrid (Mamba/GDN) model this is the mixed-batch class")),
        title="Spec-decode row with a negative accepted count",
        message=(root.message.strip().splitlines() or [""])[0][:300], numbers=nums, evidence=ev)
    return d

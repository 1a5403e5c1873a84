"""The reporter's words for causes outside the hybrid/spec-decode families -- a starved CPU, a co-tenant on the GPU, a
proxy's timeout, replicas that differ, a throttled GPU, random prompts, a cause the reporter names or rules out -- read
once each (the first words win); the part of the collector that reads them. The words themselves are in cause_words
and request_words."""

from __future__ import annotations

import re

from .cause_words import (AITER_DROPPED, BATCH_NUMERICS, BF16_FINE, CAUSE_NAMED, CHUNK_AS_TOKEN, CLIENT_CAP, COTENANT,
                          CPU_STARVED, DIRECT_DURATION, DIRECT_FINE, DOUBLE_TEMPLATE, DRAFT_WEIGHTS, FAMILIES_RULED_OUT,
                          GPU_THROTTLED, GRAMMAR_COMPILE, GUESS, HARD_TO_DRAFT, IGNORE_EOS, MIG, OWN_TOKENIZER_FIXES,
                          PROMPT_LOGPROBS, PROXY_BUFFERING, PROXY_RETRY, PROXY_TIMEOUT, REASONING_ATE_BUDGET,
                          REPLAY_HITS, REPLICAS_DIFFER, SPLIT_ROUTING, UNIQUE_PROMPTS, WSL)
from .lines import Line
from .request_words import RANDOM_DATASET, RANDOM_PREFIX, RANDOM_PREFIX_LEN, RANDOM_PROMPTS

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# the report's words for causes outside the families, each read once: (fact, words, a needle one of them holds,
# whether only the reporter's lines count -- an access log's retry count or vLLM's request log is a record)
_CAUSE_FACTS = (
    ("replay_hits_prose", REPLAY_HITS, ("hit", "Hit", "HIT"), True),
    ("bf16_fine_prose", BF16_FINE, ("bf",), True),
    ("grammar_compile_prose", GRAMMAR_COMPILE, ("ompil",), True),
    ("prompt_logprobs_prose", PROMPT_LOGPROBS, ("echo", "prompt_logprobs", "loglikelihood"), False),
    ("proxy_retry_prose", PROXY_RETRY, ("etr", "next_upstream"), False),
    ("ignore_eos_prose", IGNORE_EOS, ("ignore_eos",), False),
    ("draft_weights_prose", DRAFT_WEIGHTS, ("MTP", "mtp", "raft", "EAGLE", "agle"), True),
    ("client_cap_prose", CLIENT_CAP, ("only", "holding", "loop", "equential", "one after", "concurrency:", "limit",
                                      "max_conn", "pool_max", "keepalive", "num_concurrent", "Executor(", "Pool("), True),
    ("batch_numerics_prose", BATCH_NUMERICS, ("BATCH_INVARIANT", "atch", "eduction", "ssociativ", "tie"), True),
    ("unique_prompts_prose", UNIQUE_PROMPTS, ("unique", "fresh", "expected", "distinct", "different", "share", "common",
                                               "prefix"), True),
    ("proxy_buffering_prose", PROXY_BUFFERING, ("uffering", "event-stream", "Accel"), False),
    ("chunk_as_token_prose", CHUNK_AS_TOKEN, ("chunk", "event", "delta", "CHUNK"), True),
)
# the reporter's word that the GPUs have no NVLink between them ("4x L40S (PCIe Gen4, no NVLink)", 'all GPU pairs show
# "SYS"'): what a topology matrix row without NV# cells says
_NO_NVLINK_PROSE = re.compile(r"\b(?:no|without|lacks?|missing) NVLink\b|\bPCIe[- ]only\b|"
                              r"\bGPU pairs? (?:all )?shows? [\"'`]?(?:SYS|PHB|NODE)\b|"
                              r"\bshows? [\"'`]?(?:SYS|PHB|NODE)[\"'`]? between (?:every|each|all)\b|\bP2P\s*=\s*Disabled\b", re.I)


class CauseLines:
    """Mixin of :class:`~vllm_diag.postmortem.extract.FactCollector`: the report's words for causes outside the
    families."""

    def _finish_random_bench(self) -> None:
        """A benchmark of vLLM's random dataset whose --random-prefix-len (read on any line of its wrapped command) gives
        its prompts a shared prefix: they are no prompts without one."""
        st = self.facts.startup
        if st.get("random_prefix_len") and st.get("random_bench_prose") \
                and st.get("unique_prompts_prose") == st["random_bench_prose"]:
            del st["unique_prompts_prose"], st["random_bench_prose"]
            self.facts.lines.pop("unique_prompts_prose", None)

    def _cause_line(self, text: str, wide: str, line: Line) -> None:
        """One line of the report (``wide``: joined with the line before, for a sentence hard-wrapped over two)."""
        if "cpu_starved_prose" not in self.facts.startup and len(text) < 2000 and ("hrottl" in text or "cpu" in text
                                                                                  or "100" in text or "00000" in text):
            self._first_words("cpu_starved_prose", CPU_STARVED, text, line)
        if line.level is None and len(text) < 1000 and "cause_named_prose" not in self.facts.startup and (
                " is the" in text or " was the" in text or "it's" in text or "It's" in text):
            for sentence in _SENTENCE_END.split(text):  # (a guess in one sentence leaves the verdict of the next)
                if not GUESS.search(sentence):
                    self._first_words("cause_named_prose", CAUSE_NAMED, sentence, line)
        if line.level is None and len(text) < 1000 and "families_ruled_out_prose" not in self.facts.startup and any(
                w in text for w in ("not it", "n't it", "not the", "n't the", "ruled out", "innocent", "not involved",
                                    "not related", "to blame", ", not ", "ot a ", "othing to do")):
            # (a verdict hard-wrapped over two lines is read whole; "Not a bug, but maybe ..." is a verdict and a guess)
            for sentence in _SENTENCE_END.split(wide):  # (the reporter's verdict, not a guess or a question)
                sentence = re.split(r",\s+but\s+", sentence)[0]
                if not GUESS.search(sentence):
                    self._first_words("families_ruled_out_prose", FAMILIES_RULED_OUT, sentence, line)
        if len(text) < 2000:
            for name, rx, needles, prose_only in _CAUSE_FACTS:
                if name not in self.facts.startup and (line.level is None or not prose_only) \
                        and any(n in wide for n in needles):
                    # (a reporter's sentence hard-wrapped over two lines is read whole: prose only)
                    self._first_words(name, rx, wide if line.level is None else text, line)
        if line.level is None and "gpu_link_no_nvlink" not in self.facts.startup and len(text) < 2000 and (
                "VLink" in text or "PCIe" in text or "pair" in text or "P2P" in text) \
                and (m := _NO_NVLINK_PROSE.search(text)):
            self.facts.startup["gpu_link_no_nvlink"] = m.group(0)
            self.facts.lines["gpu_link_no_nvlink"] = (line.lineno, text.strip()[:500])
        if "reasoning_ate_budget_prose" not in self.facts.startup and line.level is None and len(text) < 4000 and (
                "hink" in text or "easoning" in text):
            self._first_words("reasoning_ate_budget_prose", REASONING_ATE_BUDGET, text, line)
        if "hard_to_draft_prose" not in self.facts.startup and line.level is None and len(text) < 2000:
            self._first_words("hard_to_draft_prose", HARD_TO_DRAFT, text, line)
        if "AITER" in text and "aiter_dropped_prose" not in self.facts.startup and line.level is None and len(text) < 2000:
            self._first_words("aiter_dropped_prose", AITER_DROPPED, text, line)
        if "WSL" in text and "wsl_prose" not in self.facts.startup and len(text) < 2000:
            self._first_words("wsl_prose", WSL, text, line)  # (vLLM's own warning or the reporter's words)
        self._tool_output_line(text, line)  # (before the reporter's words for the same facts: the table is exact)
        if "cotenant_prose" not in self.facts.startup and line.level is None and len(text) < 2000 and (
                "hare" in text or "nother" in text or "ther " in text or "tenant" in text or "nvidia-smi" in text
                or "onto" in text or "schedul" in text or "slic" in text
                or "same GPU" in text or "same card" in text or "same device" in text or "olleague" in text
                or "worker" in text or "teammate" in text or "omeone" in text or "omebody" in text or "next to" in text
                or "longside" in text or "beside" in text):
            self._first_words("cotenant_prose", COTENANT, text, line)
        if line.level is None and len(text) < 2000:
            if "proxy_timeout_prose" not in self.facts.startup and ("imeout" in text or "tim" in text or "clos" in text
                                                                     or "drop" in text or "cut" in text):
                self._first_words("proxy_timeout_prose", PROXY_TIMEOUT, text, line)
            if "replicas_differ_prose" not in self.facts.startup and ("eplica" in text or "each " in text.lower() or "inned" in text or "behind" in text
                                                                         or "inn" in text or "against" in text or "single" in text
                                                                         or "came from" in text or "answered" in text
                                                                         or "running the same" in text):
                self._first_words("replicas_differ_prose", REPLICAS_DIFFER, text, line)
            if "mig_prose" not in self.facts.startup and ("MIG" in text or "gb" in text):
                self._first_words("mig_prose", MIG, text, line)
            if "double_template_prose" not in self.facts.startup and ("emplat" in text or "content" in text
                                                                       or "BOS" in text or "prompt" in text):
                self._first_words("double_template_prose", DOUBLE_TEMPLATE, text, line)
            if "direct_fine_prose" not in self.facts.startup and ("irect" in text or "traight" in text
                                                                   or "ypass" in text or "url" in text or "ame " in text
                                                                   or "lient" in text or "vLLM" in text or "oncatenated" in text
                                                                   or "UTF" in text or "port-forward" in text or "tcpdump" in text
                                                                   or "SSE" in text):
                self._first_words("direct_fine_prose", DIRECT_FINE, text, line)
            if "direct_request_s" not in self.facts.startup and ("irect" in text or "traight" in text or "ypass" in text) \
                    and (m := DIRECT_DURATION.search(text)):
                self.facts.startup["direct_request_s"] = float(m.group(1))
                self.facts.lines["direct_request_s"] = (line.lineno, text.strip()[:500])
        if "own_tokenizer_fixes" not in self.facts.startup and line.level is None and "--tokenizer" in text \
                and len(text) < 2000:
            self._first_words("own_tokenizer_fixes", OWN_TOKENIZER_FIXES, text, line)
        if "split_routing_prose" not in self.facts.startup and line.level is None and len(text) < 2000 and (
                "robin" in text or "ROBIN" in text or "affinity" in text or "sticky" in text or "hash" in text or "aware" in text
                or "lands" in text or "land on" in text or "spread" in text or "ffinity" in text or "least_conn" in text):
            self._first_words("split_routing_prose", SPLIT_ROUTING, text, line)
        if "random_prompts_prose" not in self.facts.startup and "random" in text and len(text) < 2000:
            self._first_words("random_prompts_prose", RANDOM_PROMPTS, text, line)
            if "unique_prompts_prose" not in self.facts.startup and (m := RANDOM_DATASET.search(text)) \
                    and not RANDOM_PREFIX.search(text):
                # (vLLM's benchmark draws each random prompt's tokens afresh: no two share a prefix, unless a
                # --random-prefix-len puts one before them -- on this line, or on a continuation line: see
                # _finish_random_bench)
                self.facts.startup["unique_prompts_prose"] = self.facts.startup["random_bench_prose"] = m.group(0)
                self.facts.lines["unique_prompts_prose"] = (line.lineno, text.strip()[:500])
        if "random_prefix_len" not in self.facts.startup and "prefix" in text and (m := RANDOM_PREFIX_LEN.search(text)):
            self.facts.startup["random_prefix_len"] = int(m.group(1))
        if "gpu_throttled_prose" not in self.facts.startup and len(text) < 2000 and (
                "hrottl" in text or "Active" in text or "capped" in text):
            self._first_words("gpu_throttled_prose", GPU_THROTTLED, text, line)

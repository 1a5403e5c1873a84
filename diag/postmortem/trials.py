"""The reporter's trials, read per sentence: ``<change> -> <outcome>``, ``<switched setting>: <outcome>``, ``<change>
fixed it``, or a sentence ``Fixed.`` after the change.

- a change that ended the symptom and touches none of the families' settings (drafts, prefix caching, the Mamba/GDN
  cache, CUDA graphs, the attention backend, the batch budgets), keeps the vLLM release and is no smaller load:
  ``resolved_prose`` -- the symptom had its cause outside them;
- prefix caching off alone ending it: ``prefix_caching_needed``;
- the symptom kept with the drafts or the cache off ("ngram off: still differ"): ``faults_without_spec_prose``,
  ``persists_without_pc_prose``.

Per sentence, so that a fault's own sentence ("ngram off -> same nonsense") and the fix's ("Different AWQ upload ->
correct") stay apart; questions and hopes ("which version fixes it?") tell no trial."""

from __future__ import annotations

import re

from ..model import LogFacts
from .abtests import FAMILY_TOGGLE, KEPT, WORKLOAD_TOGGLE
from .lines import Line

_ARROW = re.compile(r"\s(?:->|=>|\u2192|\u21d2)\s")
# an outcome that is the symptom gone: "correct calls", "answers are complete", "smooth, ~150 tok/s", "fine"
# (an outcome may open with "also" or with a soak's length before its verdict: "6h soak no crash", "3 days of replay:
# fine")
_OUTCOME_LEAD = (r"(?:also |then )?(?:\d+(?:\.\d+)?\s*(?:h|hrs?|hours?|mins?|minutes?|d|days?)\s+(?:of\s+)?"
                 r"(?:soak|run|load|test|replay(?:ed)?(?: traffic)?|traffic)?\s*[,:]?\s*)?")
_GOOD = re.compile(r"^" + _OUTCOME_LEAD +
                   r"(?:(?:the |all |every )?(?:it|everything|output|outputs|answers?|text|results?|streams?|streaming|"
                   r"calls?|tool calls?|responses?|numbers?|tokens?)\s+)?(?:(?:is|are|was|were|looks?|stays?|became|"
                   r"now|comes?|came|arrive[sd]?|all|completely|perfectly|fully|totally)\s+)*(?:correct|fine|clean|"
                   r"ok(?:ay)?|works?|worked|smooth(?:ly)?|complete|normal|good|coherent|right|stable|perfect|fixed|"
                   r"resolved|solved|gone|as expected|identical|consistent|deterministic|"
                   r"\d+\s*/\s*\d+ (?:identical|correct|ok|fine|good|usable)|"
                   # "zero wrong answers in 2 days of replay", "no more garbage"
                   r"(?:zero|no more|no|0) (?:wrong|bad|garbled|broken|corrupt\w*|truncated|repeated|duplicate\w*)?\s?"
                   r"(?:answers?|outputs?|errors?|crash\w*|repeats?|issues?|problems?|mojibake|garbage|failures?|loops?))\b",
                   re.I)
# (the symptom's words an outcome denies: "zero wrong answers" keeps no wrong answer)
_DENIED = re.compile(r"^\W*" + _OUTCOME_LEAD + r"(?:zero|no more|no|0) (?:wrong|bad|garbled|broken|corrupt\w*|truncated|"
                     r"repeated|crash\w*|errors?|failures?)\b", re.I)
# an outcome that keeps the symptom (or says the change did nothing)
_BAD = re.compile(r"\b(?:same|still|again|garbage|nonsense|garbled|wrong|broken|crash\w*|fail\w*|worse|slow\w*|"
                  r"no (?:change|difference|effect|improvement)|didn'?t|did not|doesn'?t|does not|not (?:fixed|better))\b",
                  re.I)
# the symptom itself before a colon: the sentence describes the failure under a setting, it tries no change
_SYMPTOM_BEFORE = re.compile(r"\b(?:garbled|garbage|gibberish|nonsense|corrupt\w*|broken|wrong|crash\w*|fail\w*|slow\w*|"
                             r"hangs?|stuck|truncated|repeat\w*)\b", re.I)
# "<change> fixed it", "... which solved it", and not "didn't fix it" / "fixed in v0.30"
_FIXED_IT = re.compile(r"(?<!n't )(?<!not )(?<!never )\b(?:fixed|fixes|solved|solves|resolved|resolves|cured)\s+"
                       r"(?:it|this|that|everything|the (?:issue|problem|bug|symptom|bursts?|output|garbage|mojibake|"
                       r"truncation|latency|hit rate|numbers?))\b", re.I)
# a sentence that is only the verdict: "Fixed.", "Solved!"
_VERDICT_ONLY = re.compile(r"^\W*(?:(?:and |that |this )?(?:fixed|solved|resolved)(?: it)?|problem solved|works now|"
                           r"(?:removed|dropped|reverted|unset|deleted) (?:it|that|them)(?: and it works| -> fine)?)\W*$",
                           re.I)
# the verdict before what the reporter found: "Solved: n8n serialises the toggle as the STRING 'false'", "Fixed: ..."
_VERDICT_LEAD = re.compile(r"^\W*(?:solved|fixed|resolved|found it|root cause(?: found)?)\s*[:\-\u2014]\s*", re.I)
# the fix told before the change: "Fixed by using bufio.Scanner on lines", "We solved it by pinning the image"
_FIXED_BY = re.compile(r"^\W*(?:(?:we|I) )?(?:fixed|solved|resolved|worked around)\s+(?:it |this |that |the \w+ )?by\s+", re.I)
# the fix was vLLM itself (a release, a nightly, a pull request): the families' bug fixed, no cause outside them
_VLLM_CHANGE = re.compile(r"\b(?:upgrad\w*|updat\w*|bump\w*|downgrad\w*|nightly|v?0\.\d+(?:\.\d+)?|PR\s*#?\d+|#\d{4,}|"
                          r"main branch|latest|newer|older|release|versions?|patch\w*|cherry-?pick\w*|commit)\b", re.I)
# settings that size the KV cache and the Mamba state budget (the families' capacity checks), and the compilation
# config that sets the CUDA-graph capture sizes
_BUDGET = re.compile(r"gpu[-_ ]memory|max[-_ ]model|num[-_ ]gpu[-_ ]blocks|swap|compil", re.I)
# a fresh state, not a change: a restart or a new conversation clears the cached Mamba/GDN states a state fault leaves
# behind ("Restarting fixes it for a few minutes"); and a change told only by reference ("Either one alone")
_FRESH_OR_VAGUE = re.compile(r"\b(?:restart\w*|reboot\w*|re-?launch\w*|fresh|new (?:conversation|session|chat|server|pod|"
                             r"process)|(?:reset\w*|clear\w*|flush\w*) (?:the |its |our )?(?:\w+ )?(?:cache|state|server|"
                             r"engine|pod|GPU|session|conversation)s?|for a (?:few|couple)|temporar\w*|for a while)\b|"
                             r"^\W*(?:either|each|both|any|one|that|this|it|them|those|these)\b", re.I)
_SENTENCES = re.compile(r"(?<=[.!?;])\s+(?=\S)")
# a question or a hope, not a trial: "which version fixes it?", "if that fixes it", "would a newer driver fix it"
_UNTRIED = re.compile(r"\?|\b(?:if|whether|would|could|might|may|maybe|hope\w*|should|will|wonder\w*|perhaps|not sure)\b",
                      re.I)


# an outcome that keeps the symptom: "still ~70% differ", "same garbage", "also broken"
_STILL = re.compile(r"^\W*(?:(?:it|output|outputs|answers?|results?|everything)\s+)?(?:is |are |was )?"
                    r"(?:still(?! (?:works?|runs?|fine|ok|okay|correct|clean|good|normal|stable))|same|"
                    r"also(?! (?:no|fine|ok|okay|correct|clean|good|works?|stable)\b)|"
                    r"identical (?:garbage|problem)|no (?:change|difference|improvement))\b", re.I)
# the drafts switched off: "ngram off", "no spec", "without --speculative-config", "MTP disabled"
_SPEC_OFF = re.compile(r"\b(?:ngram|mtp|eagle\w*|spec(?:ulative)?(?:[ -]decod\w*)?|drafts?|suffix(?: decoding)?|medusa)\s+"
                       r"(?:off|disabled|removed)\b|\b(?:without|no|disabl\w*|remov\w*|turn\w* off|drop\w*)\s+(?:the )?"
                       r"(?:--)?(?:ngram|mtp|eagle\w*|spec\w*|drafts?|suffix decoding|speculative[-_]config)\b", re.I)


# the words before a colon that name a setting the reporter switched ("`--no-enable-prefix-caching` (same spec
# config): outputs correct"): a flag, an assignment or an on/off word
# ("on" / "off" as words of their own: not "on-call", "off-topic")
_TOGGLED = re.compile(r"--[\w-]+|=\s*\S+|\b(?:off|on)\b(?!-)|\b(?:disabled|enabled|without \S+)\b", re.I)
_COLON = re.compile(r":\s")


def _toggle_colon(sentence: str) -> re.Match[str] | None:
    """The colon after a switched setting, within the sentence's first 140 characters."""
    m = _COLON.search(sentence, 0, 140)
    return m if m and _TOGGLED.search(sentence[:m.start()]) else None


# prefix caching switched off
_PC_OFF = re.compile(r"--no-enable-prefix-caching|enable_prefix_caching\s*=\s*False|"
                     r"\b(?:without|no|disabl\w*|turn\w* off|remov\w*|drop\w*)\s+(?:the |automatic )?(?:--)?"
                     r"(?:prefix[ -]caching|APC|enable-prefix-caching)\b|"
                     r"(?:\b(?:prefix[ -]caching|APC)|--enable-prefix-caching)\s+(?:off|disabled|removed|dropped)\b", re.I)


def _outside(change: str) -> bool:
    """The change touches no family's setting, no vLLM release, no KV budget and no load."""
    changed = KEPT.sub("", change)
    return bool(changed.strip(" -*:`'\"")) and len(change) < 240 and not (
        FAMILY_TOGGLE.search(changed) or WORKLOAD_TOGGLE.search(changed) or _VLLM_CHANGE.search(changed)
        or _BUDGET.search(changed) or _FRESH_OR_VAGUE.search(changed))


# a sentence's left side that states what something is, and one that names a change or a setting
_DESCRIBED = re.compile(r"\b(?:is|are)\b", re.I)
_CHANGED = re.compile(r"--|=|\b(?:disabl\w*|enabl\w*|remov\w*|drop\w*|set|setting|switch\w*|turn\w*|add\w*|use[ds]?|using|"
                      r"chang\w*|replac\w*|lower\w*|rais\w*|increas\w*|decreas\w*|reduc\w*|upgrad\w*|downgrad\w*|pin\w*|"
                      r"revert\w*|without|with|no|off|on|tr(?:y|ied)|mov\w*|forc\w*|limit\w*|bump\w*)\b", re.I)


def _trial(sentence: str, before: str) -> tuple[str, bool] | None:
    """The change a sentence tries and whether the symptom went (``True``) or stayed (``False``); None when the
    sentence tells no trial."""
    if _VERDICT_ONLY.match(sentence):
        return before, True
    if m := _VERDICT_LEAD.match(sentence) or _FIXED_BY.match(sentence):  # "Solved: ...", "Fixed by using ..."
        return sentence[m.end():], True
    m = _FIXED_IT.search(sentence)
    if m:
        change = sentence[:m.start()].strip()
        change = re.sub(r"^(?:and|so|then|finally)\s+|\s*(?:which|that|this|it)\s*$", "", change, flags=re.I).strip(" ,")
        return (change if change and change.lower() not in ("that", "this", "it") else before), True
    arrow = _ARROW.search(sentence)
    colon = None if arrow else _toggle_colon(sentence)
    arrow = arrow or colon
    if arrow and _DESCRIBED.search(sentence[:arrow.start()]) and not _CHANGED.search(sentence[:arrow.start()]):
        return None  # "Workload is document rewriting -> perfect for ngram": a description and its verdict, no trial
    if colon and _SYMPTOM_BEFORE.search(sentence[:colon.start()]):
        return None  # "With MTP enabled, responses become garbled in the middle: correct start, then ...": the symptom told
    if arrow:
        outcome = sentence[arrow.end():]
        # (what the outcome says stayed as it was is no symptom kept: "20/20 identical answers, EAGLE still on")
        if _GOOD.match(outcome) and not _BAD.search(KEPT.sub("", _DENIED.sub("", outcome[:80]))):
            return sentence[:arrow.start()], True
        if _STILL.match(outcome):
            return sentence[:arrow.start()], False
    return None


class TrialReader:
    """Reads the reporter's trials of one log into ``facts.startup`` (the first words of each fact win)."""

    def __init__(self, facts: LogFacts) -> None:
        self.facts = facts
        self._before = ""  # the sentence before (the change a bare "Fixed." follows)

    def read(self, text: str, line: Line) -> None:
        if len(text) > 1500:
            return
        st = self.facts.startup
        for sentence in _SENTENCES.split(text.strip().lstrip("-*> ").strip()):
            before, self._before = self._before, sentence
            trial = _trial(sentence, before) if not _UNTRIED.search(sentence) else None
            if trial is None or not trial[0]:
                continue
            change, gone = trial
            told = " ".join(sentence.split())[:200]
            spec_off, pc_off = bool(_SPEC_OFF.search(change)), bool(_PC_OFF.search(change))
            if not gone:
                # the symptom kept with the drafts or the cache off (the first such words win, as the A/B reader's)
                for off, name in ((spec_off, "faults_without_spec_prose"), (pc_off, "persists_without_pc_prose")):
                    if off and name not in st:
                        st[name] = told
                        self.facts.lines[name] = (line.lineno, text.strip()[:500])
                continue
            if pc_off and not spec_off and "prefix_caching_needed" not in st:
                # the symptom gone with prefix caching off alone: the failing run needed it
                st["prefix_caching_needed"] = told
                st.setdefault("prefix_caching_prose", True)
                self.facts.lines["prefix_caching_needed"] = (line.lineno, text.strip()[:500])
            # (a change told by a pronoun -- "Disabling it for this route" -- is of what the sentence before names)
            referent = f"{before} " if re.search(r"\b(?:it|that|them)\b", change, re.I) else ""
            if "resolved_prose" not in st and _outside(referent + change):
                st["resolved_prose"] = told
                self.facts.lines["resolved_prose"] = (line.lineno, text.strip()[:500])

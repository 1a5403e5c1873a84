"""What a report says of its requests' prompts and parameters: a per-request value at the head of the prompt (a time,
a UUID, a trace id), the size of the block every request repeats (the prefix a prefix cache could share), the system
prompt's size, and a request's sampling parameters. The part of the collector that reads them (the words themselves
are :mod:`.request_words`')."""

from __future__ import annotations

import re

from .lines import Line
from .request_words import (COMPLETIONS_CALL, INVENTED_TURNS, PER_REQUEST_VALUE, PLAIN_TRANSCRIPT, PREFIX_NOUN,
                            PREFIX_TOKENS_EXACT, PREFIX_TOKENS_MEASURED, PREFIX_TOKENS_NAMED, PREPENDS, PROMPT_HEAD_SHOWN,
                            QUOTED_PROMPT_HEAD_VALUE, REQ_MAX_TOKENS_WORDS, REQ_PARAM, REQ_STOP, SHARED_PREFIX,
                            SHARED_PREFIX_BEFORE, SHARED_PREFIX_BRACKETED, SYSTEM_HEAD_VALUE, SYSTEM_PROMPT_SIZE,
                            SYSTEM_TURN, SYSTEM_TURN_HEAD_VALUE, VARYING_PREFIX, VARYING_PREFIX_TOLD)

# a block said to be the same for every request
_SAME_FOR_ALL = re.compile(r"\b(?:same|identical|shared|common|fixed|constant)\b(?: (?:for|across|to) (?:every|all|each)\w*)?", re.I)
# a count given as rounded: "~900 tokens", "about 1,200", "1k-token"
_APPROX = re.compile(r"(?:~|≈|\babout |\baround |\broughly |\bapprox\w*\.? )\s*\d|\d\s*k[- ]?tok", re.I)


def token_count(number: str, kilo: str | bool | None) -> int:
    """A token count as a reporter writes it: "1,200", or "1.5" with a k after it."""
    return int(float(number.replace(",", "")) * (1000 if kilo else 1))


def count_and_kilo(m: re.Match[str]) -> tuple[str, bool]:
    """The count a match of (count, k) group pairs -- one pair per way of saying it -- found, and whether a k follows
    it (the first pair whose count matched; a k in any pair)."""
    groups = m.groups()
    return next(g for g in groups[::2] if g), any(g for g in groups[1::2])


class PromptLines:
    """Mixin of :class:`~vllm_diag.postmortem.extract.FactCollector`: what a report says of its requests' prompts."""

    def _prompt_line(self, text: str, wide: str, line: Line) -> None:
        """One line of the report's own text (``wide``: with the line before it, for a hard-wrapped sentence)."""
        self._varying_prefix(text, wide, line)
        self._prefix_sizes(text, wide, line)

    def _transcript_line(self, text: str, line: Line) -> None:
        """Any line of the report, a record or not: the client calling /v1/completions (``completions_call``), and
        a prompt written as a plain-text transcript or the reporter's words that the answers go on with turns of
        their own (``plain_transcript``)."""
        if "completions_call" not in self.facts.startup and "ompletions" in text and (m := COMPLETIONS_CALL.search(text)):
            self.facts.startup["completions_call"] = m.group(0).strip("\"'`)")
            self.facts.lines["completions_call"] = (line.lineno, text.strip()[:500])
        if "plain_transcript" not in self.facts.startup and ":" in text and len(text) < 4000 and (
                "User" in text or "Human" in text or "Question" in text or "USER" in text or "HUMAN" in text
                or "self" in text or "turn" in text or "both" in text) and (
                (m := PLAIN_TRANSCRIPT.search(text)) or (line.level is None and (m := INVENTED_TURNS.search(text)))):
            self.facts.startup["plain_transcript"] = " ".join(m.group(0).split())[:120]
            self.facts.lines["plain_transcript"] = (line.lineno, text.strip()[:500])

    def _varying_prefix(self, text: str, wide: str, line: Line) -> None:
        """A per-request value at the head of the prompts: in a template, a captured request, a rendered prompt or the
        reporter's words."""
        if line.level is None and len(text) < 2000 and ("uuid" in text or "now()" in text or "time()" in text
                                                          or "{" in text):
            # the client's prompt template puts a per-request value into the prompt ("Current time:
            # {datetime.utcnow().isoformat()}", "trace: {uuid4()}"): no two requests share that prefix
            self._first_words("varying_prefix_prose", VARYING_PREFIX, text, line)
        if line.level is None and len(text) < 4000 and "varying_prefix_prose" not in self.facts.startup and "system" in text \
                and ("content" in text or "system\"" in text or "system'" in text) and (m := SYSTEM_HEAD_VALUE.search(text)):
            self._varying_prefix_seen(f"the system prompt opens with a per-request value: '{m.group(1)}'", text, line)
        if line.level is None and len(text) < 4000 and "varying_prefix_prose" not in self.facts.startup and "You" in text \
                and (m := QUOTED_PROMPT_HEAD_VALUE.search(text)):
            self._varying_prefix_seen(f"the prompt opens with a per-request value: '{m.group(1)}'", text, line)
        if line.level is None and len(text) < 2000 and "varying_prefix_prose" not in self.facts.startup and (
                "prepend" in wide or "start" in wide or "begin" in wide or "front" in wide or "first" in wide.lower()
                or "mov" in wide.lower() or "open" in wide or "iverg" in wide or "ime" in wide or "ate" in wide
                or "order" in wide or "ort" in wide):
            # told in words: "the gateway prepends a line like `Request-ID: ...; Received: <time>` to the start of
            # every system prompt"
            self._first_words("varying_prefix_prose", VARYING_PREFIX_TOLD, wide, line)
            if "varying_prefix_prose" not in self.facts.startup and (PREPENDS.search(text) or PROMPT_HEAD_SHOWN.search(text)):
                self._prepend_line = line.lineno  # the line it prepends may follow ("... prepends a line: \n '[id=...]'")
        if "varying_prefix_prose" not in self.facts.startup and "system" in text and len(text) < 8000 \
                and (m := SYSTEM_TURN_HEAD_VALUE.search(text)):
            self._varying_prefix_seen(f"the system prompt opens with a per-request value: '{m.group(1)}'", text, line)
        if line.level is None and "system" in text and SYSTEM_TURN.match(text):
            self._prepend_line = line.lineno  # a rendered prompt's system turn: its first line is the prompt's head
        if line.level is None and "varying_prefix_prose" not in self.facts.startup \
                and 0 < line.lineno - getattr(self, "_prepend_line", -9) <= 2 and (m := PER_REQUEST_VALUE.search(text)):
            self._varying_prefix_seen(f"the prompt is prefixed with a per-request value: '{m.group(0)}'", text, line)

    def _varying_prefix_seen(self, said: str, text: str, line: Line) -> None:
        self.facts.startup["varying_prefix_prose"] = said
        self.facts.lines["varying_prefix_prose"] = (line.lineno, text.strip()[:500])

    def _prefix_sizes(self, text: str, wide: str, line: Line) -> None:
        """The size of the block every request repeats, and the system prompt's."""
        if line.level is None and "shared_prefix_tokens" not in self.facts.startup and len(text) < 2000 and "token" in text:
            # (the sentence may be hard-wrapped: "Every request starts with the same" / "system prompt, ~1,200 tokens")
            m = SHARED_PREFIX.search(wide) or SHARED_PREFIX_BEFORE.search(wide) or SHARED_PREFIX_BRACKETED.search(wide)
            if m:
                n = token_count(*count_and_kilo(m))
                self.facts.startup["shared_prefix_tokens"] = n
                if re.search(r"system[ -]prompt", m.group(0), re.I):  # (in the reporter's own words too)
                    self.facts.startup["system_prompt_tokens"] = n
                self.facts.lines["shared_prefix_tokens"] = (line.lineno, text.strip()[:500])
        if line.level is None and len(text) < 2000 and "tok" in wide and (
                _SAME_FOR_ALL.search(wide) and ("first" in wide or PREFIX_NOUN.search(wide))
                or "shared_prefix_tokens" in self.facts.startup and PREFIX_NOUN.search(wide)):
            self._prefix_block_tokens(wide, line)
        if line.level is None and "system_prompt_tokens" not in self.facts.startup and len(text) < 2000 \
                and "ystem" in text and (m := SYSTEM_PROMPT_SIZE.search(wide)):
            number, kilo = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
            self.facts.startup["system_prompt_tokens"] = token_count(number, kilo)
            self.facts.lines["system_prompt_tokens"] = (line.lineno, text.strip()[:500])
            if "shared_prefix_tokens" not in self.facts.startup and _SAME_FOR_ALL.search(wide):
                # ("fixed system prompt (760 tokens, identical for all users)": every request's prefix)
                self.facts.startup["shared_prefix_tokens"] = self.facts.startup["system_prompt_tokens"]
                self.facts.lines["shared_prefix_tokens"] = self.facts.lines["system_prompt_tokens"]

    def _prefix_block_tokens(self, wide: str, line: Line) -> None:
        """The size of the block every request repeats, in words other than SHARED_PREFIX's; a count the reporter
        measured replaces a rounded one ("~1,200 tokens (measured with the tokenizer: 1217)")."""
        exact = PREFIX_TOKENS_MEASURED.search(wide) or PREFIX_TOKENS_EXACT.search(wide)
        m = exact or PREFIX_TOKENS_NAMED.search(wide)
        if not m:
            return
        number, kilo = count_and_kilo(m)
        n = token_count(number, kilo)
        had = self.facts.startup.get("shared_prefix_tokens")
        if had is None:
            if not _SAME_FOR_ALL.search(wide):
                return  # (a count of a block not said to be the same for every request)
        elif not isinstance(had, int) or had == n or abs(had - n) > 0.1 * n or not (
                exact or _APPROX.search(self.facts.lines["shared_prefix_tokens"][1]) and not kilo
                and not _APPROX.search(wide[max(0, m.start() - 12):m.end()])):
            return  # (refined only by an exact count of the rounded one: "~900 tokens" ... "system prompt: 912 tokens")
        self.facts.startup["shared_prefix_tokens"] = n
        self.facts.lines["shared_prefix_tokens"] = (line.lineno, line.text.strip()[:500])

    def _request_params(self, text: str) -> None:
        """A request's sampling parameters (a curl body, a client call, vLLM's request log ``SamplingParams(...)``)."""
        if "request_stop" not in self.facts.startup and "stop" in text and (m := REQ_STOP.search(text)):
            self.facts.startup["request_stop"] = "[" + m.group(1)[:200] + "]"
        params = self.facts.startup.setdefault("request_params", {})
        found = {name: float(val) if "." in val else int(val) for name, val in REQ_PARAM.findall(text)[:20]}
        if "max_tokens" not in found and "max_completion_tokens" not in found and "max_" in text \
                and (m := REQ_MAX_TOKENS_WORDS.search(text)):
            found["max_tokens"] = int((m.group(2) or m.group(1) or m.group(3)).replace(",", ""))
        for name, val in found.items():
            if len(params) < 20:
                params.setdefault(name, val)
        if not params:
            del self.facts.startup["request_params"]
        elif found and found != {k: params.get(k) for k in found}:
            # a later request samples otherwise (the report's before / after): the last one is the run it is about
            self.facts.startup["request_params_last"] = found

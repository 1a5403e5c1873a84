"""Reports without an error whose cause is on the client's side of the engine: the requests it sends (a per-request
value or salt in the prompt, a prompt cut to its tail, the token cap, a chat template applied twice, another model's
tokenizer) and what stands between it and the engine (a router without affinity, a proxy's timeout, a client that
garbles the stream). Each reading is a warning of category ``other`` with the report's words as evidence."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..model import LogFacts
from ..rules.spec_token_budget import decodes_fill_half_budget
from .diagnosis import Diagnosis
from .quietmisses import outside_families

def _hits_low(facts: LogFacts, below: float) -> bool:
    """The report is about prefix-cache hits, not wrong output: its words speak of the hits, or its stats lines show
    the hit rate at most ``below`` % (0: exactly 0 %) at their best."""
    if facts.startup.get("wrong_output_prose"):
        return False
    rate = facts.startup.get("prefix_cache_hit_rate_max")
    return bool(facts.startup.get("hit_rate_prose")) or isinstance(rate, (int, float)) and (
        rate == 0 if below == 0 else rate < below)


@dataclass(frozen=True)
class _Told:
    """A cause the report itself shows beside a symptom without an error: the symptom's facts (the first one said is
    quoted; with ``hits_below`` the symptom is the prefix-cache hit rate at most that share, :func:`_hits_low`), the
    fact that shows the cause, and what the finding says (``{said}``: the symptom's words, ``{cause}``: the cause's)."""
    symptoms: tuple[str, ...]
    cause: str
    basis: str
    title: str
    message: str
    missing: str
    hits_below: float | None = None

    def __call__(self, facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
        """The finding where the report holds both the symptom and the cause (a reading like the others)."""
        cause = facts.startup.get(self.cause)
        if self.hits_below is not None:
            said = cause if _hits_low(facts, self.hits_below) else None
        else:
            said = next((facts.startup[k] for k in self.symptoms if facts.startup.get(k)), None)
        if not said or not cause:
            return None
        evidence = (self.cause, *self.symptoms) if self.hits_below is not None else (*self.symptoms, self.cause)
        return outside_families(
            facts, base_numbers, basis=self.basis.format(said=said, cause=cause), title=self.title,
            message=self.message.format(said=said, cause=cause), evidence=evidence, missing=[self.missing])


# the prefix-cache readings' symptom facts: the stats lines' best hit rate, the report's words about the hits
_HITS = ("prefix_cache_hit_rate_max", "hit_rate_prose")
# the client sends no more requests than run (a thread pool's default size, a load generator's setting)
_CLIENT_CAP = _Told(
    ("capacity_prose", "slow_prose"), "client_cap_prose",
    basis=("no error; the report says '{said}' and finds that the client sends no more requests than run ('{cause}'): "
           "the engine schedules the requests it receives, so the client's concurrency (a thread pool's default size, "
           "a load generator's setting) is the ceiling -- outside the hybrid/spec-decode families"),
    title="Concurrency capped by the client (the engine runs every request it is sent)",
    message="capacity without an error: {said}",
    missing="the engine's 'Waiting' count under the load (0 throughout: nothing is held back)")


# a client resending its history every turn: prompts about doubling per turn of a conversation of short messages
history_resent = _Told(
    ("slow_prose", "capacity_prose", "hit_rate_prose", "spec_slower_prose"), "prompt_growth",
    basis=("no error; the report says '{said}' and its own figures show the prompts growing far faster than the "
           "conversation ({cause}): the client sends its history again (twice) every turn, so prefill time, KV blocks "
           "and the prefix cache's misses grow with it, whatever the model or drafts -- outside the hybrid/spec-decode "
           "families"),
    title="Prompts that double every turn: the client resends its conversation history",
    message="the client's prompts grow every turn: {cause}",
    missing="one conversation's request bodies (messages) for two consecutive turns")


def client_capped_concurrency(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """The client's ceiling, unless the engine's own stats lines hold requests back (some waiting, preempted, or the
    KV cache full): then "the server only runs N" is the engine's capacity, not the client's."""
    st = facts.startup
    held = (st.get("num_requests_waiting_max") or 0) > 0 or (st.get("num_preemptions_max") or 0) > 0 \
        or (st.get("gpu_kv_cache_usage_percent_max") or 0) >= 90
    if not st.get("capacity_prose") and _PER_TOKEN.search(str(st.get("slow_prose") or "")):
        return None  # (each token's time at a few requests in flight: fewer requests only make it shorter)
    if held:
        return None
    return _CLIENT_CAP(facts, base_numbers) or _engine_not_holding(facts, base_numbers)


# a complaint of a ceiling on the requests that run ("only ever runs 8", "never goes above 20", "stuck at 16"), not of
# a cliff past some load
_CEILING = re.compile(r"\bonly\b|\bnever (?:more|above|over|exceeds?|goes|gets|passes)\b|\bcap(?:s|ped)?\b|\bstuck\b|"
                      r"\bat most\b|\bno more than\b|\bmax(?:es)? out\b|\bplateau", re.I)


def _engine_not_holding(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """Fewer requests run than the reporter expects (or serving is slow with one request running at a time), and vLLM's
    own stats lines show nothing waiting, nothing preempted, the KV cache under half full and the running count below
    max_num_seqs: the engine runs every request it is sent, so the ceiling is in front of it (the client's concurrency,
    a gateway) -- whatever words the report has for it."""
    st = facts.startup
    said, running = st.get("capacity_prose"), st.get("num_requests_running_max")
    seqs, usage = facts.args.get("max_num_seqs"), st.get("gpu_kv_cache_usage_percent_max")
    # (serving said slow while no stats line ever runs more than one request: the client sends them one after another
    # -- an awaited loop, a pool of one -- and the whole rate is one stream's; not a complaint about each token's time)
    slow = st.get("slow_prose")
    slow_line = str((facts.lines.get("slow_prose") or (0, ""))[1])
    one_at_a_time = running == 1 and (not isinstance(seqs, int) or seqs > 1) and bool(slow) \
        and not st.get("spec_slower_prose") and not _PER_TOKEN.search(str(slow)) and not _ONE_STREAM.search(slow_line)
    if not said and one_at_a_time:
        said = slow
    elif said and not _CEILING.search(str(said)):
        said = None
    if not said or st.get("num_requests_waiting_max") != 0 \
            or not isinstance(running, int) or running < 1 \
            or not isinstance(usage, (int, float)) or usage >= 50 or (isinstance(seqs, int) and running >= seqs):
        return None
    k, budget = facts.args.get("num_speculative_tokens"), facts.args.get("max_num_batched_tokens")
    if isinstance(k, int) and k > 0 and isinstance(budget, int) and decodes_fill_half_budget(running, k, budget):
        return None  # (the budget's reading, spec_token_budget's)
    return outside_families(
        facts, base_numbers,
        basis=(f"no error; the report says '{said}', and vLLM's stats lines show at most {running} running with none "
               f"waiting and the KV cache {usage:g}% used at its fullest: the engine schedules every request it "
               "receives, so fewer arrive than the report expects -- the client's concurrency or what stands in front "
               "of the engine, outside the hybrid/spec-decode families"),
        title="Fewer requests arrive than expected (the engine runs all it is sent: none waiting)",
        message=f"{'slow serving' if said == slow else 'capacity'} without an error: {said}",
        evidence=("capacity_prose", "slow_prose", "num_requests_running", "num_requests_waiting_max",
                  "gpu_kv_cache_usage_percent_max"),
        missing=["the client's concurrency setting (its thread pool, connection limit or load generator)"])


# a complaint about generation or drafts, not about the first token
_GENERATION_WORDS = re.compile(r"generat|output|decod|tok(?:en)?s?/s|TPOT|accept|draft", re.I)


def short_outputs_workload(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, generation said slow or drafts said rarely accepted, and the load generates a few tokens a request: a
    benchmark's result of 16 or fewer generated tokens a request, or (without one) the stats lines' prompt throughput
    100x the generation throughput on the first line and the last. A prefill-bound workload (classification, labels)
    generates little by design, and a drafter's tokens past an answer of one to four tokens are never accepted --
    outside the hybrid/spec-decode families."""
    st = facts.startup
    said = st.get("slow_prose") or st.get("acceptance_prose") or st.get("spec_slower_prose")
    if not said:
        return None
    run = next((r for r in st.get("bench_runs") or [] if isinstance(r.get("total_generated_tokens"), int)
                and isinstance(r.get("successful_requests"), int) and r["successful_requests"] > 0), None)
    ratios = [p / g for p, g in ((st.get("prompt_throughput_tok_s_first", st.get("prompt_throughput_tok_s")),
                                  st.get("generation_throughput_tok_s_first", st.get("generation_throughput_tok_s"))),
                                 (st.get("prompt_throughput_tok_s"), st.get("generation_throughput_tok_s")))
              if isinstance(p, (int, float)) and isinstance(g, (int, float)) and g > 0]
    if run is not None:
        per_request = run["total_generated_tokens"] / run["successful_requests"]
        if per_request > 16:
            return None
        cause = (f"its benchmark generated {run['total_generated_tokens']:,} tokens over {run['successful_requests']:,} "
                 f"requests ({per_request:.1f} a request)")
    elif len(ratios) == 2 and min(ratios) >= 100 and _GENERATION_WORDS.search(str(said)):
        # (from the stats lines alone only where the report speaks of generation or acceptance: a prefill-heavy load
        # whose time to first token is the complaint is the prefix cache's or the budget's question)
        per_request = None
        cause = f"the stats lines show prompt throughput {min(ratios):.0f}x the generation throughput"
    else:
        return None
    d = outside_families(
        facts, base_numbers,
        basis=(f"no error; the report says '{said}' and {cause}: a prefill-bound workload generates a few tokens a "
               "request by design, so generation throughput is small beside the prompt throughput, and drafts past an "
               "answer of a few tokens are never accepted -- the workload, outside the hybrid/spec-decode families"),
        title="A prefill-bound workload: the requests generate a few tokens each",
        message=f"low generation throughput without an error: {said}",
        evidence=("slow_prose", "acceptance_prose", "bench_runs", "prompt_throughput_tok_s"),
        missing=["the same load with outputs of a few hundred tokens (generation throughput and acceptance)"])
    if per_request is not None:
        d.numbers["generated_tokens_per_request"] = round(per_request, 2)
    if ratios:
        d.numbers["prompt_to_generation_ratio"] = round(min(ratios), 1)
    return d


def idle_engine_hang(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """The report says it hangs, and the engine's last stats line shows nothing running and nothing waiting: the
    engine holds no request, so the requests the client waits on never reached it (a connection pool never given
    back, a proxy holding them) -- outside the families."""
    st = facts.startup
    hang = st.get("hang_prose")
    if not hang or st.get("num_requests_running") != 0 or st.get("num_requests_waiting") != 0 \
            or st.get("collective_stack") or st.get("collective_prose"):
        return None
    cap = st.get("client_cap_prose")
    return outside_families(
        facts, base_numbers,
        basis=(f"no error; the report says it hangs ('{hang}'), and the engine's last stats line shows 0 requests "
               "running and 0 waiting: the engine holds none of the requests the client waits on, so they never reached "
               "it" + (f" -- the client's own limit ('{cap}') is where they wait" if cap else "")
               + " -- outside the hybrid/spec-decode families"),
        title="Hang outside the engine: nothing running or waiting in vLLM (the client or a proxy holds the requests)",
        message=f"hang without an error: {hang}",
        evidence=("hang_prose", "num_requests_running", "client_cap_prose"),
        missing=["a stack dump of the client (py-spy dump) while it waits, and vLLM's request log for the requests it sent"])


# the rate of one stream measured as such ("single-stream decode is ~27 tok/s", "batch size 1"): not an aggregate
_ONE_STREAM = re.compile(r"\bsingle[- ](?:stream|user|request|sequence)\b|\bone (?:user|stream|request at a time)\b|"
                         r"\b(?:batch(?:[- ]size)?|bs|concurrency)\s*(?:=|of)?\s*1\b", re.I)
# a complaint about each token's time, not the load served
_PER_TOKEN = re.compile(r"\bTPOT\b|\bITL\b|\bper[- ]token\b|\binter[- ]token\b", re.I)


# a reasoning model's thinking spending the request's whole max_tokens: the answer after it comes back empty or cut
reasoning_spends_budget = _Told(
    ("truncated_prose", "wrong_output_prose"), "reasoning_ate_budget_prose",
    basis=("no error; the report says the answers come back empty or cut ('{said}') and shows the reasoning spending "
           "the request's token budget ('{cause}'): max_tokens counts the thinking tokens too, so a long reasoning "
           "ends the request before the answer starts -- the request's max_tokens, outside the hybrid/spec-decode "
           "families"),
    title="Reasoning spends the request's max_tokens (empty or cut answers)",
    message="empty or cut answers without an error: {said}",
    missing="the same request with a larger max_tokens (or a thinking budget), and its usage's reasoning tokens")
# text a drafter predicts badly (ids, hashes, base64, a language its head was not trained on): acceptance is the text's
hard_to_draft_text = _Told(
    ("acceptance_prose",), "hard_to_draft_prose",
    basis=("no error; the report says draft acceptance is low ('{said}') on text a drafter predicts badly ('{cause}'): "
           "a draft head (or n-gram match) guesses the next tokens from what it has seen, so ids, hashes and languages "
           "outside its training are rejected whatever the engine does -- outside the hybrid/spec-decode families"),
    title="Low draft acceptance on text the drafter cannot predict (the workload, not the engine)",
    message="low acceptance without an error: {said}",
    missing="the acceptance of the same server on a chat dataset (ShareGPT) beside this workload's")
# a proxy in front of the server retrying requests (Envoy's retry_on, an access log's retry count): each retry is a
# new request whose stream a client that appends what it receives shows after the first
proxy_retry_duplicates = _Told(
    ("wrong_output_prose",), "proxy_retry_prose",
    basis=("no error; the report says the output goes wrong ('{said}') and shows a proxy retrying requests ('{cause}'): "
           "a retry after the proxy's timeout is a new request to the engine, and a client that appends each stream it "
           "receives shows the answer again -- the network path, outside the hybrid/spec-decode families"),
    title="Answers repeated by a proxy's retries (each retry is a new request)",
    message="wrong output without an error: {said}",
    missing=("the engine's 'Received request' lines of one user action (one per retry), and the proxy's retry policy / "
             "per-try timeout against the longest stream"))
# the same request sent straight to the server comes back right: a proxy or the client's decoding of the stream
client_path_corruption = _Told(
    ("wrong_output_prose", "truncated_prose"), "direct_fine_prose",
    basis=("no error; the report says the output goes wrong ('{said}'), and its own test sends the same request "
           "straight to the server with a right answer ('{cause}'): the engine's output is right, the client's path (a "
           "proxy, the client's decoding of the stream) garbles it -- outside the hybrid/spec-decode families"),
    title="Output garbled on the client's path (the same request straight to the server is right)",
    message="wrong output without an error: {said}",
    missing="the raw bytes of one garbled stream as the client received them, beside the server's")
# the same stream straight from the server is smooth: a proxy in between buffers it (or compresses it) and releases it
# in bursts
proxy_slows_stream = _Told(
    ("slow_prose", "spec_slower_prose"), "direct_fine_prose",
    basis=("no error; the report says serving is slow ('{said}'), and its own test against the server directly is right "
           "('{cause}'): the engine streams at its pace, and what stands between it and the client (a proxy buffering or "
           "compressing the event stream, a gateway) slows or bunches it -- outside the hybrid/spec-decode families"),
    title="Slow or bursty only through the proxy (the server streams smoothly when called directly)",
    message="slow serving without an error: {said}",
    missing="the proxy's buffering / compression settings for text/event-stream, and a direct and a proxied stream's "
            "token timestamps side by side")
# a proxy set to buffer or compress the event stream (proxy_buffering on, gzip of text/event-stream): the engine streams
# every token, the proxy releases them when a buffer fills
proxy_buffers_stream = _Told(
    ("slow_prose", "spec_slower_prose"), "proxy_buffering_prose",
    basis=("no error; the report says serving is slow ('{said}') and its proxy is set to buffer or compress the event "
           "stream ('{cause}'): the engine sends each token as it is made, the proxy holds them until a buffer fills, "
           "so the client sees a late first token and text in bursts -- the network path, outside the "
           "hybrid/spec-decode families"),
    title="Stream held back by the proxy's buffering (the engine streams every token)",
    message="slow serving without an error: {said}",
    missing="vLLM's own time-to-first-token (/metrics) beside the client's, and the proxy with proxy_buffering off and "
            "no gzip for text/event-stream")
# turn markers of another chat format in the answers: the template applied to the prompts is not the model's own, so the
# model imitates its turns as text and never reaches its own end of turn
foreign_chat_format = _Told(
    ("wrong_output_prose", "truncated_prose", "turn_tokens_in_output"), "turn_tokens_in_output",
    basis=("no error; the report says '{said}' and its answers carry turn markers of a chat format as text "
           "('{cause}'): a model's own end-of-turn token is special -- vLLM stops at it and does not print it -- so "
           "these are another model's markers, from a chat template (--chat-template) or a prompt format that is not "
           "the model's; the model imitates the turns and runs on to max_tokens -- outside the hybrid/spec-decode "
           "families"),
    title="Answers run on through another chat format's turn markers (the chat template is not the model's)",
    message="wrong output without an error: {said}",
    missing="the same request with the model's own chat template (no --chat-template), and one response's token ids")
# the prompts vLLM logged in another model family's chat format
foreign_template_prompts = _Told(
    ("wrong_output_prose", "truncated_prose"), "foreign_template_tokens",
    basis=("no error; the report says '{said}' and the prompts vLLM logged carry another model family's chat format "
           "({cause}): a model sees those markers as plain text, never its own turn structure or end-of-turn token, "
           "so it imitates turns, runs on and drifts -- a chat template (--chat-template) or prompt format that is not "
           "the model's, outside the hybrid/spec-decode families"),
    title="Prompts in another model's chat format (the chat template is not the model's)",
    message="wrong output without an error: {said}",
    missing="the same request with the model's own chat template (no --chat-template)")
# an evaluation whose lenient filter scores as before while its strict filter falls: the answers are right, their
# format (a stop sequence, the few-shot layout) no longer matches the strict pattern
eval_format_only = _Told(
    ("wrong_output_prose",), "eval_format_only",
    basis=("no error; the report says '{said}' but its own evaluation tables show the lenient filter's score unchanged "
           "while the strict one fell ({cause}): the answers are as right as before and only their format fails the "
           "strict pattern -- the evaluation's stop sequences or prompt format, outside the hybrid/spec-decode "
           "families"),
    title="Evaluation score lost to the answers' format (the lenient filter scores as before)",
    message="score drop without an error: {said}",
    missing="one response against the strict pattern, and the evaluation's generation settings (until / stop) of both "
            "runs")
# a hand-built transcript sent to the completions endpoint: no chat template, so the model continues the transcript
_RAW_TRANSCRIPT = _Told(
    ("wrong_output_prose", "truncated_prose", "plain_transcript"), "completions_call",
    basis=("no error; the report says '{said}' and its client sends a prompt of its own to the completions endpoint "
           "('{cause}'), written as a plain-text transcript: vLLM applies no chat template there, so the model sees "
           "neither its own turn markers nor a place to end its turn and continues the transcript (turns of its own, "
           "answers that run to max_tokens) -- the client's request format, outside the hybrid/spec-decode families"),
    title="A raw transcript sent to /v1/completions: no chat template, the model continues the conversation",
    message="wrong output without an error: {said}",
    missing="the same request to /v1/chat/completions with messages (the server applies the model's chat template)")


def raw_prompt_transcript(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """The client's plain-text transcript (a prompt of 'User: ... Assistant:' turns, or answers said to go on with
    turns of their own) sent to /v1/completions."""
    return _RAW_TRANSCRIPT(facts, base_numbers) if facts.startup.get("plain_transcript") else None


# a client counting one token per streamed chunk: under speculative decoding a chunk carries up to 1 + k tokens
chunks_counted_as_tokens = _Told(
    ("spec_slower_prose", "slow_prose", "truncated_prose", "wrong_output_prose", "acceptance_prose"),
    "chunk_as_token_prose",
    basis=("no error; the report says '{said}' and its client counts one token per streamed chunk ('{cause}'): under "
           "speculative decoding a chunk carries every token a step accepted (up to 1 + k), so the client undercounts "
           "by about the mean acceptance length -- its per-token latency looks longer and its outputs shorter while "
           "the engine generates as many tokens as before; the client's measurement, outside the hybrid/spec-decode "
           "families"),
    title="The client counts stream chunks as tokens (a chunk carries up to 1 + k tokens under speculative decoding)",
    message="client-side measurement without an error: {said}",
    missing="the responses' usage.completion_tokens beside the client's own count")
# an evaluation's failed samples whose responses end with the gold answer: the grader extracted another value
eval_misgraded = _Told(
    ("wrong_output_prose",), "eval_misgraded",
    basis=("no error; the report says '{said}' but its evaluation's own failed samples hold the right answer ({cause}): "
           "the model answered correctly and the grader's answer extraction took another value -- the evaluation's "
           "settings, outside the hybrid/spec-decode families"),
    title="Evaluation grader misreads right answers (the failed samples end with the gold answer)",
    message="score drop without an error: {said}",
    missing="the evaluation's answer-extraction setting of both runs, and the score re-graded from the same responses")
# a reasoning model's thinking returned in the answer's content: the server splits it out only with a reasoning parser
_THINKING_IN_CONTENT = _Told(
    ("wrong_output_prose", "truncated_prose", "thinking_in_content"), "thinking_in_content",
    basis=("no error; the report says '{said}' and its response carries the model's thinking inside the answer "
           "('...{cause}'): vLLM moves a reasoning model's thinking into reasoning_content only when the server runs with "
           "--reasoning-parser, and this command sets none -- the server's options, outside the hybrid/spec-decode "
           "families"),
    title="Thinking returned inside the answer (no --reasoning-parser)",
    message="output without an error: {said}",
    missing="the same request to the server started with the model's --reasoning-parser")


def thinking_in_content(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """The thinking in the content, on a server started without a reasoning parser (the run's own command decides
    where the report has one: an older command it quotes may have set the parser)."""
    return None if _runs_reasoning_parser(facts) else _THINKING_IN_CONTENT(facts, base_numbers)


def _runs_reasoning_parser(facts: LogFacts) -> bool:
    """Whether the server runs a --reasoning-parser (the run's own command decides where the report has one)."""
    cmd = facts.command or ""
    return bool(("reasoning-parser" in cmd or "reasoning_parser" in cmd) if cmd else facts.args.get("reasoning_parser"))


# the answer returned as reasoning: a reasoning parser that reads text without its thinking markers as thinking (thinking
# switched off for the request, a parser of another model's format)
_ANSWER_AS_REASONING = _Told(
    ("wrong_output_prose", "truncated_prose"), "answer_as_reasoning",
    basis=("no error; the report says '{said}' and its response holds the answer in reasoning_content with the content "
           "empty ({cause}): the server's --reasoning-parser took the whole output for thinking -- with thinking "
           "switched off the model writes no thinking markers, and a parser that expects them (or another model's "
           "format) reads every token as reasoning; the tokens are right, only the field is wrong -- the server's "
           "options, outside the hybrid/spec-decode families"),
    title="The answer returned as reasoning_content: the reasoning parser took it for thinking",
    message="output without an error: {said}",
    missing="the same request with thinking on, or to a server with the model's own --reasoning-parser")


def answer_as_reasoning(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """The answer in reasoning_content, from a server that runs a reasoning parser, on requests that switch thinking
    off (or with the content empty and no budget said to be spent: the parser, not max_tokens)."""
    spent = facts.startup.get("reasoning_ate_budget_prose") and not facts.startup.get("thinking_off")
    if not _runs_reasoning_parser(facts) or spent:
        return None
    return _ANSWER_AS_REASONING(facts, base_numbers)


def tool_calls_unparsed(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error; the model's tool calls come back as text in the answer, from a server whose --tool-call-parser is
    set: vLLM moves a call into tool_calls only when that parser matches the model's tool-call format (hermes expects
    JSON in <tool_call>, Qwen3-Coder writes XML <function=...>), so a parser of another format leaves every call in
    the content -- the server's options, outside the families."""
    said, parser = facts.startup.get("tool_calls_as_text"), facts.args.get("tool_call_parser")
    if not said or not isinstance(parser, str):
        return None
    return outside_families(
        facts, base_numbers,
        basis=(f"no error; the report says the tool calls come back as text ('{said}') from a server started with "
               f"--tool-call-parser {parser}: vLLM moves a call into tool_calls only when that parser matches the "
               "format the model writes its calls in, so a parser of another model family leaves every call in the "
               "content, whatever the drafts or layers -- the server's options, outside the hybrid/spec-decode "
               "families"),
        title=f"Tool calls left in the text: --tool-call-parser {parser} does not match the model's call format",
        message=f"tool calls as text without an error: {said}", evidence=("tool_calls_as_text", "command"),
        missing=["the model card's tool-call parser, and one raw response with its call"])


# replicas behind one endpoint set up apart (each alone repeatable, on different revisions): the router alternates
replicas_differ = _Told(
    ("wrong_output_prose",), "replicas_differ_prose",
    basis=("no error; the report says the answers differ ('{said}') and shows the endpoint's replicas answering "
           "differently ('{cause}'): requests alternate between engines set up apart (another checkpoint revision, "
           "template or generation_config), each consistent with itself -- the deployment, outside the "
           "hybrid/spec-decode families"),
    title="Replicas behind one endpoint answer differently (set up apart, each consistent)",
    message="answers differ without an error: {said}",
    missing="the model revision, template and generation_config of every replica")

# requests that ask for the prompt's own logprobs (lm-eval's loglikelihood tasks send echo with logprobs): vLLM
# computes every prompt token of such a request, so it reads no cached block
prompt_logprobs_skip_cache = _Told(
    _HITS, "prompt_logprobs_prose", hits_below=5,
    basis=("no error; the prefix-cache hits are low and the requests ask for the prompt's logprobs ('{cause}'): vLLM "
           "needs the logits of every prompt token for them, so it computes the whole prompt and reads no cached "
           "block, whatever the model -- outside the hybrid/spec-decode failure classes"),
    title="Prefix cache skipped: the requests ask for prompt logprobs (every prompt token is computed)",
    message="prefix hits low with prompt logprobs: {cause}",
    missing="the hit rate of the same prompts without prompt logprobs (a generation task)")
# the report's prompt template interpolates a per-request value (a time, a UUID, a request or trace id): the prompts
# differ from their first tokens, so no block is ever shared
varying_prefix = _Told(
    _HITS, "varying_prefix_prose", hits_below=5,
    basis=("no error; the prompt template the report shows puts a per-request value into the prompt ('{cause}'): "
           "prefix caching shares whole blocks of identical leading tokens, so prompts that differ where that value "
           "stands share nothing after it, whatever the model -- outside the hybrid/spec-decode failure classes"),
    title="Prefix cache cannot hit: the prompt carries a per-request value (time, UUID, id)",
    message="prompts differ per request: {cause}",
    missing="the hit rate with the per-request value moved to the end of the prompt (or dropped)")
# requests spread over several engines without affinity (round robin, a conversation's next turn landing on another
# pod): each engine's cache only sees a share of a conversation's turns
_SPLIT_ROUTING = _Told(
    _HITS, "split_routing_prose", hits_below=20,
    basis=("no error; the report tells the requests spread over several engines ('{cause}'): each engine keeps its "
           "own prefix cache, so a conversation's next turn that lands on another engine finds none of its "
           "earlier blocks -- the router, outside the hybrid/spec-decode failure classes"),
    title="Prefix cache split across replicas: requests routed without affinity",
    message="requests spread over engines: {cause}",
    missing=("the hit rate of one replica replaying one conversation, or with session affinity / prefix-aware "
             "routing in front of the replicas"))

# several engines' stats lines of one moment, one of them loaded and queueing while another idles: the router in front
# of them (a hash on a constant header, no least-request balancing) sends them the load unevenly
load_on_one_engine = _Told(
    ("capacity_prose", "slow_prose", "spec_slower_prose"), "replica_imbalance",
    basis=("no error; the report says '{said}' and the stats lines of several engines at one moment show the load on "
           "one of them ({cause}): the busy engine queues while the others idle, so the router or load balancer in "
           "front of them spreads requests unevenly -- outside the hybrid/spec-decode families"),
    title="Load concentrated on one of several engines (the router, not an engine's capacity)",
    message="capacity without an error: {said}",
    missing="the router's balancing policy (hash key, least-request) and every engine's Running / Waiting under the load")
# UTF-8 decoded as Latin-1 on the way in or out (a dataset export, a client's decoding): the text itself is garbled
encoded_twice = _Told(
    ("wrong_output_prose", "acceptance_prose"), "mojibake_text",
    basis=("no error; the report says '{said}' and its text shows UTF-8 read as Latin-1 ('{cause}'): those characters "
           "are bytes encoded twice on the way to or from the engine (a data export, a client's decoding), which no "
           "model or drafter produces on its own -- outside the hybrid/spec-decode families"),
    title="Text encoded twice (UTF-8 read as Latin-1): the data or the client, not the engine",
    message="garbled text without an error: {said}",
    missing="the raw bytes of one prompt as sent (xxd) and of one response as received")


# random token ids as the load (`vllm bench serve --dataset-name random`): a model continues them with text as random
random_prompts_output = _Told(
    ("wrong_output_prose",), "random_prompts_prose",
    basis=("no error; the report says the output goes wrong ('{said}') on a load of random prompts ('{cause}'): random "
           "token ids carry no text to continue, so any model answers them with text as random -- the benchmark's "
           "data, outside the hybrid/spec-decode families"),
    title="Gibberish answers to random-token prompts (the benchmark's data)",
    message="wrong output without an error: {said}",
    missing="the same server's answers to real prompts (sharegpt, the production traffic)")


# requests that tell the engine to ignore the end-of-sequence token: the answer runs to max_tokens, looping once greedy
ignore_eos_loops = _Told(
    ("wrong_output_prose", "truncated_prose"), "ignore_eos_prose",
    basis=("no error; the report says '{said}' and its requests set '{cause}': vLLM then never stops an answer at the "
           "model's end-of-sequence token, so every answer runs to max_tokens and a greedy one repeats itself once it "
           "has said what it had to -- the request's parameters, outside the hybrid/spec-decode families"),
    title="Answers that never stop: the requests set ignore_eos",
    message="output without an error: {said}",
    missing="the same requests without ignore_eos (finish_reason 'stop' where the answer ends)")


# prompts that share no prefix at all (a benchmark's random prompts, unique documents): no cache hits them
_UNIQUE_PROMPTS = _Told(
    _HITS, "unique_prompts_prose", hits_below=5,
    basis=("no error; the report's prompts share no prefix ('{cause}'): prefix caching reuses the blocks of identical "
           "leading tokens, so prompts without any have nothing to hit, on any model and at any block size -- the "
           "workload, outside the hybrid/spec-decode failure classes"),
    title="Prefix cache cannot hit: the prompts share no prefix",
    message="prompts share no prefix: {cause}",
    missing="the hit rate on a workload whose prompts share a prefix longer than the block (the production traffic)")


def prompts_share_no_prefix(st: dict) -> bool:
    """The report's prompts share no prefix. A report that also states the prefix its prompts share -- "every request
    starts with the same 1,217-token system prompt, then chunks different every time" -- is about that prefix, not
    about prompts without one; but a benchmark of vLLM's random dataset (without a --random-prefix-len) measures its
    own prompts, which share nothing whatever the production traffic shares."""
    if not st.get("unique_prompts_prose"):
        return False
    return st.get("random_bench_prose") == st["unique_prompts_prose"] or not st.get("shared_prefix_tokens")


def unique_prompts_miss(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    # (only where the report is about the hits: a benchmark of random prompts shows 0 % whatever it measures)
    st = facts.startup
    return _UNIQUE_PROMPTS(facts, base_numbers) if st.get("hit_rate_prose") and prompts_share_no_prefix(st) else None


def split_routing(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    # (a report about the hits, whatever share is left: with N engines a conversation's next turn finds its blocks
    # about one time in N, so the production hit rate falls below a single engine's without reaching zero)
    if facts.startup.get("hit_rate_prose") and facts.startup.get("split_routing_prose"):
        return replace(_SPLIT_ROUTING, hits_below=100)(facts, base_numbers)
    return _SPLIT_ROUTING(facts, base_numbers)


def salted_prefixes(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, prefix-cache hits at 0 %, and the requests carry a ``cache_salt`` (``medium``): vLLM mixes the salt into
    the first block's hash, so requests with different salts never share a cached prefix -- the client's isolation
    of the cache, not a hybrid's block granularity."""
    if not facts.startup.get("cache_salt_seen") or not _hits_low(facts, 0):
        return None
    return outside_families(
        facts, base_numbers,
        basis=("no error; the requests carry a cache_salt, which vLLM mixes into the hash of their first block: requests "
               "with different salts never share a cached prefix, whatever the model -- outside the hybrid/spec-decode "
               "failure classes"),
        title="Prefix cache isolated by per-request cache_salt (no shared prefix can hit)",
        message="requests carry a cache_salt: prefix-cache hits only between requests of the same salt",
        evidence=("cache_salt_seen", "prefix_cache_hit_rate_max"),
        missing=["the hit rate of requests that share one salt (or of requests without it)"])


def replayed_prompts_hit(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, prefix-cache hits low for the live traffic, and the report's replay of the same prompts straight to the
    engine hits (vllm bench serve from a saved file, curl twice): the engine's cache works on this model and
    configuration, so what the live clients send differs between requests -- outside the families."""
    said = facts.startup.get("replay_hits_prose")
    if not said or facts.startup.get("hits_without_spec_prose") or not (
            facts.startup.get("hit_rate_prose") or facts.startup.get("prefix_cache_zero_run_samples")):
        return None
    return outside_families(
        facts, base_numbers,
        basis=(f"no error; the live traffic's prefix-cache hits are low, and the report's replay of the same prompts "
               f"hits ('{said}'): the engine caches and finds shared prefixes with this model and configuration, so the "
               "prompts the live clients send differ between requests (a per-request value, an unstable order of tools "
               "or keys, another template) -- the client's prompts, outside the hybrid/spec-decode families"),
        title="Prefix cache works on a replay: the live clients' prompts differ between requests",
        message=f"prefix hits only on the replay: {said}",
        evidence=("replay_hits_prose", "hit_rate_prose", "prefix_cache_hit_rate_max"),
        missing=["two rendered prompts of the live traffic side by side (where they first differ)"])


def left_truncated_prompts(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, answers wrong, and the requests set ``truncate_prompt_tokens``: vLLM keeps only the prompt's last N
    tokens, so a longer prompt loses its head -- the system prompt and the instructions -- before the model sees it:
    the client's setting, outside the families."""
    said = facts.startup.get("wrong_output_prose")
    keep = (facts.startup.get("request_params") or {}).get("truncate_prompt_tokens")
    if not said and isinstance(keep, int) and (facts.startup.get("printed_values") or {}).get("prompt_tokens") == keep:
        # (the usage the report shows has every long prompt at exactly that many tokens: the cut is visible)
        said = f"prompt_tokens is {keep} for the long prompts"
    if not said or not isinstance(keep, int) or keep <= 0:
        return None
    return outside_families(
        facts, {**base_numbers, "truncate_prompt_tokens": keep},
        basis=(f"no error; the report says the answers are wrong ('{said}') and its requests set truncate_prompt_tokens="
               f"{keep}: vLLM keeps only the last {keep} tokens of a longer prompt, so its head (the system prompt and "
               "the instructions) never reaches the model -- the client's setting, outside the hybrid/spec-decode "
               "families"),
        title=f"Prompts cut to their last {keep} tokens by the request (truncate_prompt_tokens)",
        message=f"wrong answers without an error: {said}",
        evidence=("wrong_output_prose", "request_params"),
        missing=["the same long prompt without truncate_prompt_tokens (or with a larger max_model_len)"])


def proxy_timeout_truncation(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error; answers said to stop early, and the report shows a proxy's or load balancer's timeout in front of the
    server: it closes a long request's connection (a first token after a long prefill, a long reasoning answer), and
    vLLM aborts a request whose client went away -- the network path, outside the families."""
    # (a request cut that way reads as cut short, or as hanging until the proxy answers 504 in its place)
    said = facts.startup.get("truncated_prose") or facts.startup.get("hang_prose") \
        or facts.startup.get("gateway_timeout_prose")
    timeout = facts.startup.get("proxy_timeout_prose")
    if not said or not timeout or facts.startup.get("finish_reason_length"):
        return None
    return outside_families(
        facts, base_numbers,
        basis=(f"no error; the report says the answers stop early ('{said}') and shows a timeout in front of the server "
               f"('{timeout}'): a proxy or load balancer closes a request's connection when no byte passes for that "
               "long (a slow first token, a long answer), and vLLM aborts a request whose client went away -- the "
               "network path, outside the hybrid/spec-decode families"),
        title="Streams cut by a proxy's or load balancer's timeout (the client's connection closed)",
        message=f"answers cut without an error: {said}",
        evidence=("truncated_prose", "proxy_timeout_prose"),
        missing=["the same long request sent straight to the server, or with the proxy's idle / read timeout raised"])


def repeats_rewarded(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, the output wrong, and the requests' sampling parameters reward repeats (a negative frequency or
    presence penalty, a repetition penalty below 1): the model loops on its own words, and drafts that copy the text
    are accepted -- the request's parameters, outside the families."""
    said = facts.startup.get("wrong_output_prose")
    params = facts.startup.get("request_params") or {}
    knob = next(((k, v) for k, v in params.items() if isinstance(v, (int, float)) and (
        k in ("frequency_penalty", "presence_penalty") and v < 0 or k == "repetition_penalty" and 0 < v < 1)), None)
    if not said or knob is None:
        return None
    name, value = knob
    return outside_families(
        facts, {**base_numbers, name: value},
        basis=(f"no error; the report says the output goes wrong ('{said}') and its requests set {name}={value:g}: "
               "a negative frequency or presence penalty (a repetition penalty below 1) raises the odds of tokens "
               "already generated, so the model loops on its own words and drafts that copy them are accepted -- the "
               "request's sampling parameters, outside the hybrid/spec-decode families"),
        title=f"Repeats rewarded by the request's sampling ({name}={value:g})",
        message=f"wrong output without an error: {said}",
        evidence=("wrong_output_prose", "request_params"),
        missing=["the same request with the penalty at its default (0, or 1 for repetition_penalty)"])


def stop_string_truncation(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error; answers said to end early, and the requests carry stop strings: generation ends at the first one the
    answer contains (a blank line, a code fence, a role word of an old completion template) -- the request's
    parameters, outside the families."""
    said, stop = facts.startup.get("truncated_prose"), facts.startup.get("request_stop")
    if not said or not stop or facts.startup.get("finish_reason_length"):
        return None
    return outside_families(
        facts, base_numbers,
        basis=(f"no error; the report says the answers end early ('{said}') and its requests carry stop strings "
               f"({stop}): vLLM ends a request at the first stop string its answer produces (finish_reason 'stop'), "
               "so a blank line or a code fence in a stop list cuts answers where they contain one -- the request's "
               "parameters, outside the hybrid/spec-decode families"),
        title=f"Answers ended by the request's stop strings ({stop[:60]})",
        message=f"truncated answers without an error: {said}",
        evidence=("truncated_prose", "request_params"),
        missing=["the same request without its stop list (or with only the model's own end-of-turn token)"])


def chat_template_twice(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, the output wrong, and the client renders the model's chat template itself and sends the result as a
    chat message (vLLM applies the template again) or to /v1/completions with its BOS (the tokenizer adds another):
    the model reads nested turns or a doubled BOS -- the client's request, outside the families."""
    said, twice = facts.startup.get("wrong_output_prose"), facts.startup.get("double_template_prose")
    if not said or not twice:
        return None
    return outside_families(
        facts, base_numbers,
        basis=(f"no error; the report says the answers are wrong ('{said}') and its requests carry a prompt the client "
               f"already formatted ('{twice[:80]}'): the server formats it again -- the chat template of a chat "
               "request, the tokenizer's BOS on /v1/completions -- so the model reads turns nested in a turn or a "
               "doubled BOS; the client's request, outside the hybrid/spec-decode families"),
        title="Prompt formatted twice (the client renders the chat template, the server adds it or BOS again)",
        message=f"wrong output without an error: {said}",
        evidence=("wrong_output_prose", "double_template_prose"),
        missing=["the same conversation sent as plain messages (or the rendered prompt to /v1/completions)"])


def token_cap_truncation(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error; the answers are said to end early and the API server says it ended them at their token cap
    (``finish_reason: length``): the request's max_tokens -- 16 by default on the OpenAI completions endpoint when the
    request sets none -- not the model's layers or drafts, outside the families."""
    said = facts.startup.get("truncated_prose")
    if not said or not facts.startup.get("finish_reason_length"):
        return None
    cap = (facts.startup.get("request_params") or {}).get("max_tokens")
    # (a checkpoint's generation_config.json that vLLM took its default max_tokens from, its warning says)
    preset = re.search(r"max_(?:new_)?tokens['\"]?\s*:\s*(\d+)", str(facts.startup.get("generation_config_sampling") or ""))
    preset = int(preset.group(1)) if preset else None
    # (no max_tokens anywhere and a short context, or the usage the report shows filling it: the prompt and the answer
    # share max_model_len)
    window = facts.args.get("max_model_len")
    window = window if isinstance(window, int) and (_fills_window(facts, window) or (
        cap is None and preset is None and window <= 8192)) else None
    if window:
        cap = preset = None
    why = (f"the request's max_tokens ({cap})" if isinstance(cap, int) else
           f"the default max_tokens ({preset}) vLLM took from the checkpoint's generation_config.json (its warning "
           "says so; --generation-config vllm drops it)" if isinstance(preset, int) else
           f"the context window: --max-model-len {window} holds the prompt and the answer together, so an answer "
           "ends where the window does, whatever max_tokens asked" if window else
           "the request's max_tokens -- the OpenAI completions endpoint defaults it to 16 when the request sets none")
    limit = cap if isinstance(cap, int) else preset
    return outside_families(
        facts, {**base_numbers, **({"max_tokens": limit} if isinstance(limit, int) else {})},
        basis=(f"no error; the report says the answers end early ('{said}') and the API server ended them at their token "
               f"cap (finish_reason 'length'): {why}, outside the hybrid/spec-decode families"),
        title=(f"Answers cut at the context window (--max-model-len {window}, finish_reason 'length')" if window else
               "Answers cut at the request's token cap (finish_reason 'length')"),
        message=f"truncated answers without an error: {said}",
        evidence=("truncated_prose", "finish_reason_length", "request_params", "generation_config_sampling"),
        missing=["the same request with max_tokens set (or max_completion_tokens on chat)"])


def _fills_window(facts: LogFacts, window: int) -> bool:
    """The usage the report shows takes the whole context: its total tokens (or prompt + completion) reach
    --max-model-len -- the answer ended where the window did, whatever max_tokens asked."""
    used = facts.startup.get("printed_values") or {}
    total = used.get("total_tokens")
    if not isinstance(total, int) and isinstance(used.get("prompt_tokens"), int) \
            and isinstance(used.get("completion_tokens"), int):
        total = used["prompt_tokens"] + used["completion_tokens"]
    return isinstance(total, int) and total >= window


def foreign_tokenizer(facts: LogFacts, base_numbers: dict) -> Diagnosis | None:
    """No error, the output wrong, and the command loads the tokenizer of another model (``--tokenizer`` naming a repo
    of another model family or generation, whatever its organisation): token ids decode into another vocabulary's
    pieces -- garbled from the first request, whatever the engine computes -- outside the families."""
    said = facts.startup.get("wrong_output_prose")
    # (or the client tokenizes the prompts itself with the tokenizer it names, and sends the ids)
    client = facts.startup.get("client_tokenizer")
    tok, model = facts.args.get("tokenizer") or client, facts.args.get("model")
    if not said or not isinstance(tok, str) or not isinstance(model, str) or tok == model:
        return None
    # (a local folder is named after its model too -- "/models/Falcon3-10B-Instruct" -- where its name holds a
    # generation or a size; "/ckpt/final" names nothing)
    names = [p.rstrip("/").rsplit("/", 1)[-1] for p in (tok, model)]
    t, m = (_MODEL_NAME.match(n) if re.search(r"\d", n) else None for n in names)
    fixed = facts.startup.get("own_tokenizer_fixes")  # (the report's trial: the model's own tokenizer is fine)
    if not fixed and (not t or not m or t.group(1).lower().replace("_", "-") == m.group(1).lower().replace("_", "-")):
        return None  # (a local path or the same family and generation says nothing)
    return outside_families(
        facts, base_numbers,
        basis=(f"no error; the report says the output is wrong ('{said}') and "
               + ("the client tokenizes the prompts itself with the tokenizer of another model "
                  if tok == client and not facts.args.get("tokenizer") else
                  "the command loads the tokenizer of another model ")
               + f"({tok} for {model}"
               + (f"; the report's trial: '{fixed}'" if fixed else "") + "): the model's token ids decode through another "
               "vocabulary, so every answer is garbled from the first request -- outside the hybrid/spec-decode families"),
        title=f"Wrong output from another model's tokenizer ({tok})",
        message=f"wrong output without an error: {said}",
        evidence=("wrong_output_prose", "non_default_args", "command", "own_tokenizer_fixes"),
        missing=["the same request without --tokenizer (the model's own tokenizer)"])


# a model's name (a Hugging Face repo id's or a folder's last part), its first word with its generation: "Zamba2", "Mistral", "Qwen3.5" -- a
# tokenizer of another generation of one family has another vocabulary
# (a version after a hyphen counts -- "granite-3.3" vs "granite-4.0" -- a size does not: "Mistral-7B")
_MODEL_NAME = re.compile(r"^([A-Za-z]+\d*(?:\.\d+)?(?:[-_]v?\d+(?:\.\d+)?(?![\d.]*[bBkKmM]\b))?)")

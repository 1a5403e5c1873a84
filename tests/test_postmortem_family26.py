"""Post-mortem, round twenty-six: numbers an operator quotes from what a report says of its requests and its proxy --
the size of the block every request repeats, the request's token cap, the proxy's read timeout where the report says
it is unset. The reports are written here; vLLM's lines are in its own formats."""

from __future__ import annotations

import pytest

from vllm_diag.postmortem import facts_from_text

_HIT = ("(APIServer pid=1) INFO 03-11 08:58:02 [loggers.py:236] Engine 000: Avg prompt throughput: 2231.0 tokens/s, "
        "Avg generation throughput: 412.5 tokens/s, Running: 41 reqs, Waiting: 0 reqs, GPU KV cache usage: 6.1%, "
        "Prefix cache hit rate: 0.4%")


def _startup(lines: list[str]) -> dict:
    return facts_from_text("\n".join(lines)).startup


@pytest.mark.parametrize("said, want", [
    # a count the reporter measured beside a rounded one: the measured one
    ("Every request starts with the same system prompt + tool schema, ~1,200 tokens (measured with the tokenizer: "
     "1217), then the user turn.", 1217),
    ("Every request = fixed system prompt (1,912 tokens, verified with the tokenizer) + short user turn (100-400 "
     "tokens).", 1912),
    ("Every request = fixed instruction header (~850 tokens, identical byte-for-byte, we checked the token ids) + a "
     "document of 200-400 tokens.", 850),
    ("Prompt shape: preamble 418 tokens (chat template + system + tool schema, byte-identical across requests).", 418),
    ("Every request = the same 1,850-token instruction block + a short ticket (100-400 tokens).", 1850),
    ("I diffed 50 rendered prompts: the first 1,904 tokens are identical every time.", 1904),
])
def test_the_size_of_the_block_every_request_repeats(said, want):
    """The prefix a hybrid's prefix cache could share, in the words reporters use for it (an instruction block, a
    preamble, the first N tokens that are identical); not a ticket's or a user turn's length beside it."""
    assert _startup([said, _HIT])["shared_prefix_tokens"] == want


def test_a_rounded_prefix_size_is_refined_by_an_exact_count_later_in_the_report():
    st = _startup(["traffic: every request = same system prompt (~900 tokens, tool descriptions) + a short user turn",
                   _HIT, "", "token counts from our replay:", "  system prompt: 912 tokens (nemotron)"])
    assert st["shared_prefix_tokens"] == 912
    # ... but not by a count of something else, nor by another rounded figure
    st = _startup(["every request = same system prompt (~900 tokens) + a short user turn", _HIT,
                   "  user turn: 250 tokens", "  system prompt: ~930 tokens with the template"])
    assert st["shared_prefix_tokens"] == 900


def test_a_block_not_said_to_be_shared_is_no_shared_prefix():
    st = _startup(["system+tools: 431 tokens, then the user's document (2-6k tokens)", _HIT])
    assert "shared_prefix_tokens" not in st


@pytest.mark.parametrize("said, want", [
    ("one sample output (request with temperature 0.3, max_tokens 2048):", 2048),
    ("Client: analytics assistant calls non-streaming (`stream=false`), max_tokens 16384, thinking on.", 16384),
    ("always the long ones (max_tokens 6000-8000) and the SpecDecoding metrics look odd", 8000),
    ('        max_tokens=int(os.getenv("LLM_MAX_TOKENS", 256)),', 256),
    ('    body = {"model": m, "messages": msgs, "max_tokens": kw.get("max_new_tokens", 512)}', 512),
])
def test_the_request_token_cap_in_words_or_as_a_getters_default(said, want):
    """The cap a truncation complaint is checked against: in the reporter's words (the top of a range), or the
    default a client's getter falls back to when nothing sets it."""
    assert _startup([said])["request_params"]["max_tokens"] == want


def test_no_token_cap_is_read_from_a_sentence_without_one():
    assert "request_params" not in _startup(["Con curl yo no pongo max_tokens y ahí sale completo."])


@pytest.mark.parametrize("said, want", [
    ("  # proxy-read-timeout not set", 60),
    ("    (no proxy-read-timeout annotation; controller default)", 60),
    ("ingress annotation nginx.ingress.kubernetes.io/proxy-read-timeout isn't set", 60),
    ('    nginx.ingress.kubernetes.io/proxy-read-timeout: "600"', 600),
    ("    proxy_read_timeout 5m;", 300),
])
def test_the_proxy_read_timeout_stated_or_left_at_nginxs_default(said, want):
    assert _startup([said])["proxy_read_timeout_s"] == want


def test_a_diff_that_removes_the_read_timeout_leaves_nginxs_default():
    st = _startup(["ingress annotations diff from yesterday's deploy:",
                   '-    nginx.ingress.kubernetes.io/proxy-read-timeout: "600"',
                   '+    nginx.ingress.kubernetes.io/proxy-body-size: "32m"'])
    assert st["proxy_read_timeout_s"] == 60 and st["proxy_read_timeout_removed_s"] == 600

"""The words of the requests a report shows and of their prompts: sampling parameters (a curl body, vLLM's request
log), a per-request value at the head of a prompt (a time, a UUID, a trace id), prompts that share a prefix or none
(a benchmark's random dataset), and the greedy run a report compares with. Read by :class:`.prose.ProseLines`."""

from __future__ import annotations

import re

# the size before the noun ("the same 350-token system prompt", "same ~900-token preamble") or the system prompt's
# size stated ("our system prompt is ~420 tokens")
SHARED_PREFIX_BEFORE = re.compile(r"\b(?:(?:same|shared|common|identical)\s+(?:~|about |around )?(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)"
                                  r"\s*(k)?[- ]tokens?\s+(?:long\s+)?(?:system[ -]prompts?|prefix(?:es)?|preambles?|headers?|"
                                  r"instructions|context)|"
                                  r"(?:our|the|a|my|shared|common)\s+(?:shared\s+|common\s+)?system[ -]prompt\s+(?:is|has|was|of)\s+"
                                  r"(?:about |around |roughly |~|≈)?\s*(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s*(k)?\s*tokens\b)", re.I)

# the block of a prompt that every request repeats, by the names reporters give it (not the prefix *cache*)
_PREFIX_NOUN = (r"(?:system[ -]?prompts?|system\s*\+\s*tools?|(?:rendered )?(?:prompt )?prefix(?:es)?(?![ -]?cach)|"
                r"instruction (?:blocks?|headers?|prefix(?:es)?)|preambles?|few-shot (?:blocks?|examples|headers?)|"
                r"policy (?:blocks?|docs))")
_COUNT = r"(?<![\d,.])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)"
# its size in tokens: an exact count the reporter measured ("~1,200 tokens (measured with the tokenizer: 1217)",
# "(1,912 tokens, verified with the tokenizer)", "first 1,904 tokens identical") before one in words ("fixed
# instruction block (~480 tokens", "preamble 418 tokens", "~1,050-token fixed instruction block", "1,730 tokens
# system+tools"); groups: (count, k)
PREFIX_TOKENS_MEASURED = re.compile(
    r"(?:\b(?:measured|tokeni[sz]e[rd])|/tokenize)\b[^.;\n()+]{0,40}?(?<![\d,.])(\d{1,3}(?:,\d{3})+|\d{2,6})()(?![\d.]|,\d)", re.I)
PREFIX_TOKENS_EXACT = re.compile(
    r"(?<![\d,.])(\d{1,3}(?:,\d{3})+|\d{2,6})()\s*tokens?\b[^.;\n)]{0,30}?\b(?:byte[- ]?identical|identical|verified|"
    r"checked|measured)\b|"
    r"\bfirst " + _COUNT + r"()\s*(?:prompt )?(?:tokens?|token ids|ids)\s*(?:are |were |is )?(?:all )?(?:identical|equal|"
    r"the same)\b", re.I)
PREFIX_TOKENS_NAMED = re.compile(
    _PREFIX_NOUN + r"\W{0,3}(?:(?!\bthen\b|\bfollowed\b|\bplus\b|\buser\b|\beach\b|\bper\b)[^.;\n]){0,40}?"
    r"(?:~|≈|about |around |roughly )?" + _COUNT + r"\s*(k)?[- ]?tok(?:en)?s?\b|"
    r"(?:~|≈|about |around )?" + _COUNT + r"\s*(k)?[- ]?tok(?:en)?s?\s+(?:of\s+)?(?:(?:fixed|shared|same|identical|"
    r"common|long)\s+)*" + _PREFIX_NOUN, re.I)
PREFIX_NOUN = re.compile(_PREFIX_NOUN, re.I)

# ... or in brackets after the prompts: "my prompts (~1.5k tokens shared)"
SHARED_PREFIX_BRACKETED = re.compile(r"\((?:~|about |around )?(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s*(k)?\s*tokens? "
                                     r"(?:shared|in common)\)", re.I)

# the reporter's words tying the failure to short prompts (a prompt, or a prompt's last prefill chunk, of a few tokens):
# "very short prompts", "4-token prompts", "prompts of up to 3 tokens", "a 4-token prefill"
SHORT_PROMPT = re.compile(r"\b(?:very |really |extremely |tiny |super )short (?:raw |input )?prompts?\b|"
                          r"\b(\d{1,2})[- ]token (?:prompts?|prefills?|prefill chunks?|inputs?)\b|"
                          r"\bprompts? (?:of|with|up to|under|below|shorter than) (?:up to |at most )?(\d{1,2}) tokens?\b",
                           re.I)

# the reporter's length of the prefix its requests share: "the same system prompt (tool definitions, ~430 tokens)",
# "Your shared prefix is 1,147 tokens", "a few-shot header (410 tokens with the chat template)"
SHARED_PREFIX = re.compile(r"\b(?:same|shared|common|identical)\s+(?:[\w-]+\s+){0,2}?(?:system[ -]prompts?|prefix(?:es)?|"
                           r"headers?|preambles?|instructions|context|few-shot examples)\b"
                           r"(?:(?!\bthen\b|\bfollowed\b|\bplus\b|\buser\b|\beach\b|\bper\b)[^.;\n]){0,60}?~?\s?"
                           r"(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s*(k)?\s*tokens\b", re.I)

# the size of the system prompt in the reporter's words, whether or not they say it is shared: "system prompt is ~620
# tokens", "a 6.5k-token system prompt", "system prompt (same for everyone, 812 tokens w/ chat template)"
SYSTEM_PROMPT_SIZE = re.compile(r"\bsystem[ -]prompts?\b(?:(?!\bthen\b|\bfollowed\b|\bplus\b|\buser\b|\beach\b|\bper\b|"
                                r"\boutputs?\b|\banswers?\b|\brequests?\b)[^.;\n]){0,40}?(?:~|≈|about |around |roughly )?"
                                r"(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s*(k)?[- ]?tok(?:en)?s?\b|"
                                r"(?:~|≈|about |around )?(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s*(k)?[- ]tok(?:en)?s?\s+(?:long\s+)?"
                                r"system[ -]prompts?\b", re.I)

# the reporter's words that it does not depend on the batch: wrong for every request, a lone one included
EVERY_REQUEST = re.compile(r"\b(?:every|each|all) (?:single )?(?:requests?|prompts?|completions?|answers?)\b[^.]{0,40}"
                           r"\b(?:even|including) (?:a |the )?(?:lone|single|first|one)\b|"
                           r"\beven (?:a |with a |for a |with one |for one )?(?:lone|single|one) (?:request|prompt|user|client)\b",
                            re.I)

# sampling / request parameters of the request that failed, in a curl JSON body, an OpenAI client call or
# SamplingParams(...): "max_tokens": 1, temperature=0.6, top_k: 20
REQ_PARAM = re.compile(r"""(?<![\w.-])["']?(max_tokens|max_completion_tokens|min_tokens|temperature|top_p|top_k|"""
                       r"""prompt_logprobs|logprobs|repetition_penalty|presence_penalty|frequency_penalty|truncate_prompt_tokens)["']?\s*[:=]\s*(-?\d+(?:\.\d+)?)(?![\w.])""")

# a request's token cap in the reporter's words or as a getter's default: "max_tokens 16384", "max_tokens of 2048",
# "(max_tokens 6000-8000)" (the top of the range), max_tokens=int(os.getenv("LLM_MAX_TOKENS", 256)),
# "max_tokens": kw.get("max_new_tokens", 256) -- the default is what the request sends when nothing sets it
REQ_MAX_TOKENS_WORDS = re.compile(r"""(?<![\w.-])["']?max_(?:completion_|new_)?tokens["']?(?:"""
                                  r"""\s+(?:of|is|was|at|set to|to|=)?\s*~?(\d{1,3}(?:,\d{3})+|\d+)(?:\s*[-–]\s*(\d+))?(?![\w%]|[.,]\d)|"""
                                  r"""\s*[:=]\s*(?:int\(\s*)?[\w.]+\(\s*["'][\w.-]{1,60}["']\s*,\s*(\d+)\s*\))""")

REQ_HINT = re.compile(r"max_tokens|temperature|top_|logprobs|min_tokens|max_completion|_penalty|truncate_prompt|\bstop\b")

# the request's stop strings (``SamplingParams(..., stop=['\n\n', 'Human:'], ...)``, a body's ``"stop": ["###"]``)
REQ_STOP = re.compile(r"""(?<![\w.])["']?stop["']?\s*[:=]\s*\[\s*(["'][^\]]{1,200}?)\]""")

# the requests leave the temperature to the server ("no temperature set in the request body", "we rely on greedy
# defaults"): with a model's generation_config the server samples them
# the drafts accepted well once the requests are greedy: "With temperature 0 the acceptance length is 2.6", "greedy:
# acceptance 71%"
GREEDY_ACCEPTS = re.compile(r"\b(?:(?:with|at) temperature\s*[=:]?\s*0(?:\.0+)?|greedy(?: decoding| requests)?)\b[^.\n]{0,20}?"
                            r"\b(?:(?:mean )?acceptance(?: length| rate)?|accept(?:ance)? len)\b[^.\n]{0,12}?\d", re.I)

NO_TEMPERATURE = re.compile(r"\b(?:no|without|never set|not set(?:ting)?|didn'?t set|omit\w*) (?:a |any |the )?temperature\b|"
                            r"\btemperature (?:is |was )?(?:not set|unset|omitted)\b|\brel(?:y|ied|ying) on (?:the )?greedy "
                            r"defaults?\b|"
                             # "our gateway doesn't send temperature/top_p, it relies on server defaults"
                            r"\b(?:doesn'?t|does not|don'?t|do not|never) (?:send|set|pass|specify|include)s? (?:a |any |the )?"
                            r"temperature\b|\brel(?:y|ies|ied|ying) on (?:the )?(?:server|vllm|model|engine)(?:'s)? "
                            r"(?:sampling )?defaults?\b", re.I)

# a per-request value interpolated into a prompt template: a time, a UUID, a request / session / trace id
# (a template's field, not a JSON object: no quotes or colons inside the braces)
VARYING_PREFIX = re.compile(r"\{[^{}\n\"':]{0,40}?(?:uuid\d?\(\)|uuid\.uuid\d\(\)|datetime\.(?:utc)?now\(\)|time\.time\(\)|"
                            r"\b(?:request|session|trace|conversation)_?id\b|\btimestamp\b|\buuid\b|\bnow\b|"
                            r"\bcurrent_?(?:date_?time|time|date)\b)[^{}\n\"':]{0,40}\}", re.I)

# a captured request whose system prompt opens with a per-request value: a UUID or an ISO time within its first 80
# characters ({"role": "system", "content": "Session: 7f3c2a9e-... | Now: 2026-04-27T09:40:11Z\n..."})
# (or a request's top-level "system" field: {"system": "[session=a91f03e2-... ts=2026-11-24T14:36:49Z]\nYou are ..."})
SYSTEM_HEAD_VALUE = re.compile(r"(?:[\"']role[\"']\s*:\s*[\"']system[\"']\s*,\s*[\"']content[\"']|[\"']system[\"'])\s*:\s*[\"']([^\"']{0,80}?"
                               r"(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|"
                               r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}))", re.I)

# a quoted prompt that opens with a per-request value before the instructions ('req A: "[trace=7f3c1e0a-44b2-...
# ts=2026-04-21T08:41:27.118Z]\nYou are Acme Support Assistant..."'): a UUID or an ISO time in its first characters
QUOTED_PROMPT_HEAD_VALUE = re.compile(r"[\"'][\[(<]?[^\"'\n]{0,60}?([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|"
                                      r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2})[^\"'\n]{0,80}?(?:\\n|\s)\s*"
                                      r"(?:You are|You're|You will|Your (?:role|task|job)|As an? \w+ assistant)\b", re.I)

# the reporter's words for a per-request value in a prompt
PER_REQUEST_WORDS = r"(?:request[-_ ]?ids?|trace[-_ ]?ids?|uuids?|timestamps?|current (?:time|date)|date and time)"

VARYING_PREFIX_TOLD = re.compile(
    r"\b(?:prepend\w*|inject\w*|insert\w*|adds?|added|adding|puts?|putting)\b[^.\n]{0,120}?\b" + PER_REQUEST_WORDS +
    r"\b[^\n]{0,120}?\b(?:to|at|in) the "
    r"\W{0,2}(?:start|beginning|front|top|head)\W{0,2} of (?:every|each|all|the) (?:system )?(?:prompts?|requests?|"
    r"messages?)\b|"
    # "our gateway template starts the system prompt with 'Current time: {{now}} (request id {{uuid}})'"
    r"\b(?:starts?|begins?|opens?|starting|beginning|opening) (?:the |every |each |all )?(?:system )?(?:prompts?|messages?) "
    r"with\b[^\n]{0,80}?\b" + PER_REQUEST_WORDS + r"|"
    # "puts 'Current time: ...' as the FIRST line of the system prompt", "moving the timestamp to the end -> 71%"
    r"\b" + PER_REQUEST_WORDS + r"\b[^\n]{0,120}?\b"
    r"(?:as|on|in|at) the (?:very )?first (?:line|tokens?|thing|part)s? of (?:the |every |each |all )?(?:system )?"
    r"(?:prompts?|requests?|messages?)\b|"
    # "... {{CURRENT_DATETIME}}" as its FIRST line"
    r"\b" + PER_REQUEST_WORDS + r"\b[^\n]{0,120}?\b(?:as|on|in|at) its (?:very )?first (?:line|tokens?|thing|part)s?\b|"
    # "Moving that variable to the end of the system prompt fixed it"
    r"\bmov(?:e|ed|es|ing) (?:the|that|this|those|these) (?:template )?(?:variables?|placeholders?|fields?)\b[^.\n]{0,40}?"
    r"\bto the (?:end|bottom) of (?:the |every |each )?(?:system )?(?:prompts?|messages?)\b|"
    r"\bmov(?:e|ed|es|ing) (?:the )?(?:request[-_ ]?id|trace[-_ ]?id|uuid|timestamp|current time|date)s?\b[^.\n]{0,40}?"
    # (... or out of the prompt: "Moved the trace id into the `user` field / a header")
    r"\b(?:to the (?:end|bottom)|into the (?:last|final) (?:user )?(?:message|turn)|(?:in)?to (?:the |a )?[`'\"]?\w*[`'\"]? ?"
    r"(?:field|header|metadata|request header))\b|"
    # the prompt quoted with its per-request time ("Current time: 2025-10-14T12:13:58.412Z"), or the requests said to
    # part within the first tokens ("every request diverges at token ~12")
    r"\b(?:current time|time|now|date|timestamp)\s*[:=]\s*\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}|"
    # "every gunicorn worker serialises the 14 tools in a different order", "Sorting the tool list"
    r"\b(?:serialis|serializ|render|build|list)\w*\b[^.\n]{0,60}?\bin a (?:different|random) order\b|"
    r"\bsort(?:ing|ed)? the (?:tool|tools|function|functions) (?:list|array)\b|"
    r"\b(?:every|each) (?:request|prompt) diverges\b|\bdiverg\w* (?:at|after) (?:token|position) ~?\d{1,3}\b", re.I)

# vllm bench's random dataset, and the shared prefix it may put before each random prompt
RANDOM_DATASET = re.compile(r"--dataset[-_]name[ =]random\b")
RANDOM_PREFIX = re.compile(r"--random[-_]prefix[-_]len[ =]\s*[1-9]")
RANDOM_PREFIX_LEN = re.compile(r"--random[-_]prefix[-_]len[ =]\s*(\d{1,7})\b")

# a benchmark of random prompts (vllm bench's random dataset, the reporter's words): a drafter has nothing to predict
RANDOM_PROMPTS = re.compile(r"--dataset[-_]name[ =]random\b|\brandom (?:prompts?|tokens?|inputs?|dataset|data)\b", re.I)

# the size of a request the reporter states: "short chat, ~600 tokens/request", "2k-token prompts", "each request ~1.5k tokens"
REQUEST_TOKENS = re.compile(r"~?(\d[\d,.]*)\s*(k)?\s*tokens?\s*(?:/|per|each|a|an)\s*(?:request|req|conversation|prompt)\b|"
                            r"\b(?:each|every|per) request (?:is |has |of )?(?:about |around |~)?(\d[\d,.]*)\s*(k)?\s*tokens\b|"
                            # "each ~1,500 prompt tokens", "1.6k per request"
                            r"\beach (?:is |has |of )?(?:about |around |~)?(\d[\d,.]*)\s*(k)?\s*(?:prompt |input )?tokens\b|"
                            r"~?(\d[\d,.]*)\s*(k)\s*(?:/|per)\s*(?:request|req)\b|"
                            # "prompts ~2.5-3k tokens", "prompts 1.2k-1.8k tokens", "prompt 250-380 tok" (a range: its first number)
                            r"\bprompts? (?:of |are |is )?(?:~|about |around )?(\d[\d,.]*)"
                            # (its k, after the first number or after the range's second: "1.2k-1.8k", "2.5-3k")
                            r"(?:(?=k?(?:\s*[-\u2013]\s*\d[\d,.]*)?\s*(k)))?k?(?:\s*[-\u2013]\s*\d[\d,.]*)?\s*k?"
                            r"\s*tok(?:en)?s?\b|"
                            # "requests are short (1.8k tokens total)"
                            r"\brequests? (?:are |is )?(?:short |small |tiny )?\(?~?(\d[\d,.]*)\s*(k)?\s*tokens? (?:in )?total\b|"
                            # "short convs, mostly 1-2k tokens total" (a range: its first number, with the range's k)
                            r"\b(?:convs?|conversations?|chats?|sessions?)\b,?[^.\n\d]{0,25}?~?(\d[\d,.]*)"
                            r"(?:\s*[-\u2013]\s*\d[\d,.]*)?\s*(k)?\s*tokens? (?:in )?total\b|"
                            # "~600 tok in, ~300 out", "2000 tokens in / 800 out"
                            r"~?(\d[\d,.]*)\s*(k)?\s*tok(?:ens)?\s+in\b(?=[^.\n]{0,20}?\bout\b)|"
                            # "~2k-token prompts", "1,500-token requests"
                            r"~?(\d[\d,.]*)\s*(k)?[- ]tokens?\s+(?:prompts?|requests?|inputs?)\b|"
                            # a gateway's or a benchmark's statistics row: "prompt_tokens  p50   : 96,410", "prompt_tokens avg
                            # 71,930", "mean input tokens: 11.8k"
                            r"\b(?:prompt|input)[_ ]tokens?\s*\(?(?:p50|median|mean|avg|average)\)?\s*[:=]?\s*(\d[\d,.]*)\s*(k)?\b|"
                            r"\b(?:median|mean|avg|average) (?:prompt|input)[_ ]tokens?\s*[:=]?\s*(\d[\d,.]*)\s*(k)?\b", re.I)

# a hook that prepends something to the prompt, the value it prepends shown on the next line
PREPENDS = re.compile(r"\bprepend\w*\b[^.\n]{0,60}?\b(?:to|at|in) (?:the |every |each )?(?:system )?(?:prompts?|messages?)\b",
                       re.I)

# ... or that shows the prompt's first lines on the next: "Gateway request dump, first lines of the system prompt:"
PROMPT_HEAD_SHOWN = re.compile(r"\bfirst (?:lines?|tokens?|words|part) of (?:the |every |each |a )?(?:rendered )?(?:system )?"
                               r"(?:prompts?|messages?)\b|\b(?:system )?prompts? (?:starts?|begins?|opens?) (?:with|like)\b",
                                re.I)

# a chat format's system turn opening on a line of its own (a rendered prompt): its first line follows
SYSTEM_TURN = re.compile(r"^\s*(?:<\|[a-z_]+\|>system(?:<\|[a-z_]+\|>)?|<start_of_turn>system|\[SYSTEM\]|<\|system\|>)\s*$")

# ... or inline, the prompt's head right after it: '"<|im_system|>system<|im_middle|>[session 7f2c91d0-4e55-... |
# 2026-03-19T10:15:29.184Z]\nYou are ...' -- a UUID or an ISO time within the first characters of the system turn
SYSTEM_TURN_HEAD_VALUE = re.compile(
    # (any template's special tokens around "system": ChatML, Llama 3, Kimi, Granite's <|start_of_role|>system<|end_of_role|>)
    r"(?:<\|[a-z_]+\|>system(?:<\|[a-z_]+\|>)?|<start_of_turn>system|\[SYSTEM\]|<\|system\|>)(?:\\n|\s)*([^\n]{0,40}?(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}|"
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}))")

PER_REQUEST_VALUE = re.compile(r"\b(?:request[-_ ]?id|trace[-_ ]?id|session[-_ ]?id)\s*[=:]\s*\S+|"
                               r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}", re.I)

# the client calling the completions endpoint with a prompt of its own (no chat template applied by the server): an
# access log's request line, a client's URL or call ("requests.post(f"{URL}/v1/completions"", client.completions.create)
# -- not the server's route table ("Route: /v1/completions, Methods: POST")
COMPLETIONS_CALL = re.compile(r"\bPOST /v1/completions\b|/v1/completions[\"'`)]|(?<!chat\.)\bcompletions\.create\(|"
                              r"\(POST /v1/completions\)")
# a hand-built transcript as the prompt (plain-text turn labels the model's chat template does not use): 'User: ...
# \nAssistant:', "Question: {q}\nAnswer:", "### User:\n ... ### Assistant:"
PLAIN_TRANSCRIPT = re.compile(r"(?:\\n|^|[\"'`]\s*)(?:#{1,3} ?)?(?:User|Human|Question|USER|HUMAN)\s*:[^\n]{0,600}?"
                              r"(?:\\n|\s)(?:#{1,3} ?)?(?:Assistant|Answer|AI|ASSISTANT)\s*:")
# the reporter's words that the answer goes on with turns of its own: 'adds "Human:" and a new question by itself',
# "invents a next question", "talking to itself"
INVENTED_TURNS = re.compile(r"\b(?:adds?|writes?|writing|invents?|generates?|continues? with|keeps? going with|starts?)\b"
                            r"[^.\n]{0,40}?[\"'\u201c]?(?:Human|User|USER|Question)\s*:|"
                            r"\binvents? (?:a |the )?(?:next|new|follow-up|another) (?:question|turn|user)|"
                            r"\b(?:fake|imaginary|invented) (?:user )?turns\b|\btalking to (?:it|him|her)self\b|"
                            r"\bconversation with itself\b|\bplays? both (?:sides|roles)\b", re.I)

# the chat formats whose turn markers a prompt shows, and the model names that use them: a prompt written in one
# format for a model of another is a chat template (--chat-template) or a prompt format that is not the model's
CHAT_FORMATS = (
    ("Llama 3", re.compile(r"<\|start_header_id\|>|<\|eot_id\|>"), re.compile(r"llama[-_ .]?3", re.I)),
    ("ChatML", re.compile(r"<\|im_start\|>|<\|im_end\|>"), re.compile(r"qwen", re.I)),
    ("Granite", re.compile(r"<\|start_of_role\|>|<\|end_of_role\|>"), re.compile(r"granite", re.I)),
    ("Gemma", re.compile(r"<start_of_turn>|<end_of_turn>"), re.compile(r"gemma", re.I)),
    ("Mistral", re.compile(r"\[/?INST\]"), re.compile(r"mistral|mixtral|magistral|devstral", re.I)),
)

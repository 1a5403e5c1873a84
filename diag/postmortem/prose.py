"""The reporter's own words around a log: model names and repo ids, the speculative method and k, mixed
batches, prefix caching on/off, startup lines pasted without their prefix, and the symptoms the reporter names
(their words are in symptom_words); the part of the collector that reads them."""

from __future__ import annotations

import re

from .abtests import DRAFTS_WORDS, WITHOUT_WORDS, WORKS_WORDS, first_words
from .cause_words import (ANSWER_AS_REASONING, ANSWER_AS_REASONING_TOLD, CLIENT_TOKENIZER, GATEWAY_TIMEOUT,
                          THINKING_IN_CONTENT, THINKING_OFF, TOOL_CALLS_AS_TEXT, TURN_TOKENS_IN_OUTPUT)
from .lines import Line
from .prompt_lines import token_count
from .request_words import EVERY_REQUEST, GREEDY_ACCEPTS, NO_TEMPERATURE, REQ_HINT, REQUEST_TOKENS, SHORT_PROMPT
from .symptom_words import (ACCEPTANCE_FELL, CAPACITY_FELL, DEGRADED_OVER_TIME, FINISH_LENGTH, HANG, REPEATED_WORD, SLOW,
                            SLOW_START, SPEC_SLOWER, TRUNCATED, WRONG_OUTPUT, WRONG_OUTPUT_HINTS)

_MODEL_LINE = re.compile(r"^\W{0,4}(?:Main(?: model)?|Model|Target(?: model)?|model)\s*[:=]\s*`?([\w.\-]+/[\w.\-/]+)`?")
_DRAFT_LINE = re.compile(r"^\W{0,4}Draft(?: model)?\s*:\s*`?([\w.\-]+/[\w.\-/]+)`?")
_REPO_ID = re.compile(r"(?<![\w/.~-])([A-Za-z][\w.-]{1,40}/[A-Za-z0-9][\w.-]{1,80})(?![\w/])")
_NOT_REPOS = ("vllm/", "v1/", "usr/", "home/", "site-packages", "dist-packages", "torch/", "csrc/", "apis/",
              "jit_kernels", "docs/", "tests/", "src/", "model_executor/", "transformers/", "http", "www.", "tmp/",
              "lib/", "bin/", "opt/", "models/", "layers/", "core/", "worker/", "attention/", "engine/")
_MODEL_WORDS = re.compile(
    r"(?<![\w/.-])(?:(?:Qwen|DeepSeek|GLM|Kimi|Nemotron|Granite|Jamba|Falcon|LFM|MiniMax|Zamba|Bamba|Mamba|Llama|"
    r"Mistral|Gemma|Phi|gpt-oss|Olmo|Hunyuan|Ling|Ring|Apriel|Plamo|Hymba|LongCat)[\w.-]*|GDN|Gated ?DeltaNet|"
    r"linear[ -]attention|MLA|DSA|sparse[ -]?MLA|(?:lightning )?indexer|DeepGEMM|hybrid)(?![\w-])", re.I)
_SPEC_HINT = re.compile(r"MTP|mtp|[Ee]agle|EAGLE|gram|peculative|[Ss]pec[ -]?decod|[Dd]raft|[Mm]edusa|DFlash|DSpark|suffix dec")
_SPEC_PROSE = re.compile(r"(?<![\w/.-])(MTP|mtp|EAGLE-?3?|[Ee]agle-?3?|ngram|n-gram|[Ss]peculative decoding|"
                         r"[Ss]pec(?:ulative)?[ -]decod(?:e|ing)|draft model|[Mm]edusa|DFlash|DSpark|suffix decoding|"
                         r"(?:[Ss]peculative|[Dd]raft|[Ss]pec) tokens)(?![\w-])")
# a negation right before a term ("no spec decode", "without MTP", "w/o EAGLE", "MTP off" is read by the flags)
_NEGATED = re.compile(r"(?:\bno|\bwithout|\bw/o|\bnot using|\bnot|\bdisabled?|\bnever used)\s+(?:any\s+)?$", re.I)
_SPEC_K = re.compile(r"(?:num_speculative_tokens|num_spec_tokens)\W{0,3}(\d+)|(?<![\w-])[kK]\s*=\s*(\d+)\b|"
                     r"(\d+)\s+(?:speculative|draft|spec|MTP) tokens|(?:MTP|mtp)\s*[=-]?\s*(\d)\b(?![\w.])|"
                     r"(?:[Ss]peculative|[Dd]raft|[Ss]pec) tokens\s*[:=]\s*(\d+)\b|"
                     # "mtp n=3", "eagle3 n=4": the depth written after the method
                     r"(?:MTP|mtp|EAGLE\w*|[Ee]agle\w*|ngram)\s+n\s*=\s*(\d)\b(?![\w.])")
_MIXED_PROSE = re.compile(r"mixed (?:traffic|batch(?:es)?|workload|decode|spec(?:-| )?decode)|"
                          # two kinds of request served together: "mixed 50/50", "when json_schema requests are in the mix"
                          r"\bmixed \d{1,2}/\d{1,2}\b|\brequests (?:are )?in the mix\b|"
                          # "mixed long prefill + short decode traffic"
                          r"\bmixed (?:\w+ )?prefills?\s*(?:\+|and|/|&)\s*(?:\w+ )?decodes?\b|"
                          r"(?:spec(?:ulative)?|draft)(?:-| )?decodes? (?:and|with|mixed with) (?:plain |non-spec )?decodes?|"
                          r"decodes? (?:and|with) spec(?:ulative)?(?:-| )?decodes?|non-spec (?:and|with) spec|"
                          r"spec and non-spec|"
                          # "the batch had a mix of plain decodes (...) and spec decodes"
                          r"\bmix(?:ture)? of (?:plain |normal |non-spec )?decodes?\b[^.]{0,80}?\band (?:\w+ )?"
                          r"spec(?:ulative)?[- ]?decodes?\b|\bmix(?:ture)? of spec(?:ulative)?[- ]?decodes?\b[^.]{0,80}?\band "
                          r"(?:plain |normal |non-spec )decodes?\b|"
                          # rows of one spec batch without drafts: zero accepted tokens, ragged / uneven draft lengths
                          r"(?:zero|no|0) (?:accepted|draft(?:ed)?) (?:draft )?tokens?|num_accepted(?:_tokens)?\s*(?:=+|of|is)\s*0\b|"
                          r"ragged drafts?|(?:uneven|variable|different) (?:draft|proposal) lengths?|"
                          # "decoding with *different* numbers of ngram drafts", "(no drafts yet) while others already
                          # have 4 drafts each"
                          r"\bdifferent\W{0,2} (?:numbers?|counts?) of (?:ngram |n-gram |draft )?(?:drafts?|draft tokens|"
                          r"proposals?|spec(?:ulative)? tokens)\b|\bno drafts? yet\b|\bothers? (?:already )?(?:have|had) \d+ drafts?\b|"
                          r"(?:requests?|rows?) (?:without|with no) (?:drafts?|draft tokens|proposals?)|"
                          r"(?:requests?|reqs|rows?) (?:that )?(?:get|gets|got|have|has|had|find|finds|found) (?:no|zero|0) (?:ngram |n-gram )?"
                          r"(?:match(?:es)?|drafts?|proposals?)\b|"
                          r"\d+ drafts? for some (?:requests?|reqs|rows?)\b|"
                          # "19 requests with ngram drafts and several without a match (0 drafts)"
                          r"\b(?:some|several|others?|many|a few|\d+)\s+(?:\w+\s+)?(?:without|with no) (?:an? )?(?:ngram |n-gram )?"
                          r"(?:match(?:es)?|drafts?|proposals?)\b|\((?:0|zero|no) drafts?\)|"
                          # a new prompt (a prefill chunk) scheduled while other requests decode with drafts
                          r"(?:prompts?|prefills?|requests?)\b[^.]{0,40}\b(?:arrives?|comes? in|starts?|lands?) while "
                          r"(?:other |the other )?(?:requests?|streams?|sequences?)\b[^.]{0,15}\b(?:decod|generat)\w*|"
                          # ... told the other way round: "a few requests are generating, then a new request comes in"
                          r"(?:requests?|streams?|sequences?) (?:are|were|is|was) (?:generating|decoding)\b[^.]{0,30}?\b"
                          r"(?:then|when|and) (?:a |another )?new (?:request|prompt)s?\b|"
                          # the reporter's own control: "--max-num-seqs 1: fine (obviously no mixing)"
                          r"\b(?:obviously |so |hence |i\.e\. )?no mixing\b|"
                          # a prefill chunk of at most 1 + k tokens that the builders' split counts as a decode
                          r"(?:prefill|prompt)\w*(?: chunk)?\b[^.]{0,40}\b(?:counted|classified|classed|treated|run) as "
                          r"(?:an? )?(?:spec(?:ulative)?[- ]?)?decodes?\b|"
                          # a prefill (a chunk of a long prompt) in the same step as decodes, in the reporter's words
                          r"prefill\w*\b[^.]{0,60}\b(?:together with|alongside|next to|while)\b[^.]{0,30}\b(?<!speculative )(?<!spec )decod\w*|"
                          r"prefill\w*\b[^.]{0,60}\band\b[^.]{0,30}\bdecod\w*[^.]{0,40}\b(?:same|one) (?:step|batch|forward)|"
                          # (decode rows, not a feature: "chunked prefill and speculative decoding are enabled" is set-up)
                          r"\b(?:when|whenever|where|if|once|both) (?:a |an |one |the )?(?:\w+ )?prefill\w*\s+(?:and|plus|alongside)\s+"
                          r"(?!(?:speculative|spec) decoding\b)(?:\w+ )?decod\w*\b(?! (?:instances?|nodes?|servers?|workers?|pods?|roles?|"
                          r"disagg|engines?|clusters?|phases?|stages?))|"
                          r"mixed (?:chunked )?prefill\w*\s*(?:/|-|\+|and)\s*decod\w*|"
                          r"prefill\w*\b[^.]{0,40}\bin the same (?:step|batch|forward)\b[^.]{0,15}\bas\b[^.]{0,30}\bdecod\w*|"
                          r"(?:still|partial(?:ly)?|chunked) prefill\w*\b[^.]{0,40}\band\b[^.]{0,30}\b(?<!speculative )(?<!spec )decod\w*|"
                          r"decod\w*\b[^.]{0,40}\b(?:together with|alongside|in the same (?:step|batch) as)\b[^.]{0,30}\bprefill|"
                          # "one request in MTP-decode and another one in prefill in the same batch", "the chunked
                          # prefill of the new prompt still overlaps the decode of the first one", "send a second request
                          # while the first is still decoding", "a 2nd request comes in mid-generation"
                          r"decod\w*\b[^.]{0,40}\band\b[^.]{0,40}\bprefill\w*\b[^.]{0,20}\b(?:the )?same (?:step|batch|forward)\b|"
                          r"prefill\w*\b[^.]{0,40}\boverlap\w*\b[^.]{0,30}\bdecod\w*|"
                          # (a request that hits the prefix cache while others draft is the cached state's story)
                          r"(?:request|prompt)s?\b(?:(?!\bhits?\b|\bcache)[^.]){0,40}\bwhile (?:the |an? )?(?:first|others?|"
                          r"previous|earlier|existing|"
                          r"running)\b[^.]{0,25}\b(?:is |are )?(?:still )?(?:in (?:the )?(?:MTP |spec\w* |draft )?)?(?:decod|generat|"
                          r"stream|verif|speculat|draft)\w*|"
                          # "2 requests finishing prefill chunks while the rest were MTP spec decodes" (rows: "decodes")
                          r"prefill\w*(?: chunks?)?\b[^.]{0,20}\bwhile (?:the )?(?:rest|others?|other requests)\b[^.]{0,20}?"
                          r"\b(?:were|are|was|is)\b[^.]{0,15}?\b(?:spec(?:ulative)?[- ]?)?decodes\b|"
                          # "the scheduler is constantly mixing prefill chunks with spec decodes"
                          r"\bmix(?:es|ed|ing)? (?:\w+ )?prefill\w*(?: chunks?)? (?:with|and) (?:\w+ )?(?:spec(?:ulative)?[- ]?)?"
                          r"decod\w*|"
                          r"(?:request|prompt)s? (?:comes?|came|arrives?|arrived|lands?)(?: in)? (?:mid[- ]?(?:generation|"
                          r"decode|stream)|during (?:the )?(?:decod|generat)\w*)|"
                          # requests decoding or finishing while others are still in their prompt: "when some requests
                          # finish while others are mid-prefill (chunked)", "while another prompt is prefilling"
                          r"\bwhile (?:the )?(?:others?|other (?:requests?|prompts?|sequences?)|another (?:request|prompt)|"
                          r"(?:some|a few|new) (?:requests?|prompts?))\b[^.]{0,15}?\b(?:mid[- ]?prefill|prefilling|"
                          r"in (?:the middle of )?(?:a |their )?(?:chunked )?prefill)|"
                          # the hybrid builders' own counters (vllm/v1/attention/backends/gdn_attn.py, mamba_attn.py)
                          # printed for one step: spec decodes together with prefills or plain decodes
                          r"num_prefills\s*[=:]\s*[1-9]\d*\W+(?:num_decodes\s*[=:]\s*\d+\W+)?num_spec_decodes\s*[=:]\s*[1-9]\d*|"
                          r"num_decodes\s*[=:]\s*[1-9]\d*\W+num_spec_decodes\s*[=:]\s*[1-9]\d*|"
                          r"num_spec_decodes\s*[=:]\s*[1-9]\d*\W+num_(?:prefills|decodes)\s*[=:]\s*[1-9]\d*|"
                          # draft lengths that differ inside one batch, in the reporter's words
                          r"(?:requests?|rows?) with (?:\d+|k) draft(?:s| tokens?)?\b[^.]{0,40}\b(?:and|while|next to)\b"
                          r"[^.]{0,25}\bwith (?:none|no drafts?|no draft tokens|0|\d+)\b|"
                          r"some (?:requests? )?with \d+ drafts?\b[^.]{0,40}\bsome (?:\w+ )?with \d+|"
                          r"(?:different|varying|mixed) (?:numbers? of )?drafts? (?:lengths? )?(?:in|within) (?:the same|one) "
                          r"(?:batch|step)|draft (?:lengths?|counts?) (?:differ|vary)|"
                          # the same in Spanish / Portuguese: "peticiones con borradores de distinto largo"
                          r"\b(?:borradores|rascunhos) (?:de|com) (?:distint[oa]s?|diferentes?) (?:largos?|longitud(?:es)?|"
                          r"tamaños?|tamanhos?|comprimentos?)\b", re.I)
# the same in the report languages: a new prompt (its prefill) and the decoding requests in one batch -- "prefill이
# 디코딩 중인 요청들과 같은 배치에 섞일 때", "prefill 和 decode 混合在同一个 batch", "プリフィルとデコードが同じバッチに混在",
# "Prefill und Decode gemischt im selben Batch", "mezcla prefill y decode en el mismo batch"
_ROWS_I18N = (r"(?:prefill|decod|\ub514\ucf54\ub529|\ud504\ub9ac\ud544|\u89e3\u7801|\u9884\u586b\u5145|\u30c7\u30b3\u30fc\u30c9|"
              r"\u30d7\u30ea\u30d5\u30a3\u30eb)")
_MIX_I18N = (r"(?:\uc11e|\u6df7\u5408|\u6df7\u5728|\u6df7\u3056|\bgemischt\w*|\bmezcl\w*|\bmistur\w*|\bm\u00e9lang\w*|"
             r"\bmescol\w*|\bmist[oa]\b|\b\u0441\u043c\u0435\u0448\w*|\bmieszan\w*|\bgemengd\w*)")
_MIXED_PROSE_I18N = re.compile(_ROWS_I18N + r"[^.\n\u3002]{0,60}?" + _MIX_I18N + "|"
                               + _MIX_I18N + r"[^.\n\u3002]{0,60}?" + _ROWS_I18N, re.I)
# requests close to their length limit, where the scheduler drafts fewer tokens for them than for the rest ("the
# sequences that run close to max_model_len", "within 3 tokens of max_model_len", "near the context limit")
_NEAR_LIMIT = re.compile(r"\b(?:close to|near(?:ing)?|approach(?:es|ing)?|within (?:a few|\d+|k|num_speculative_tokens) "
                         r"tokens? of|about to hit|right at) (?:the |their |its )?(?:max_model_len|max[- ]model[- ]len|"
                         r"context (?:limit|length)|length limit|max_tokens)\b", re.I)
# what the reporter has read or fears, not what the run did
_HEARSAY = re.compile(r"\b(?:read|heard|seen)\s+(?:about|of|that|reports?|people|others|somewhere)\b|\bworried\b|"
                      r"\breports? of\b|\bknown issues? (?:with|of|about)\b|\bpeople (?:say|report|mention)", re.I)
# the reporter's words that the drafts are the trigger: fine once speculative decoding is off
_SPEC_TIED = re.compile(r"\b(?:without|removing|removed|remove|disabl\w+|turn\w* off|dropping|dropped|no)\s+(?:the\s+)?`?"
                        r"(?:--)?(?:speculative[-_ ]config|spec(?:ulative)?[- ]decod\w*|mtp|ngram|n-gram|suffix decoding|"
                        r"drafts?|the draft(?:er| model))`?(?:\s+removed)?[^.]{0,100}?\b(?:fine|correct(?:ly)?|ok|okay|works?|clean|"
                        r"good|normal|sane|coherent|(?:it |the server |the engine |vllm )?(?:starts?|boots?|comes? up)(?! (?:but|and) "
                        r"(?:crash|fail|die)))\b", re.I)
# the reporter saying fewer drafts work ("With 1 token it boots fine", "num_speculative_tokens 1 -> starts, works",
# "k=1 is fine", '"num_speculative_tokens": 1`: survived 2h'): the failure grows with k
_FEWER_DRAFTS_WORK = re.compile(
    r"(?:\bk|\bn_?spec|\bnum_spec(?:ulative)?_tokens|\bspec(?:ulative)? tokens)[\"'`]?\s*[=:]?\s*(\d)\b(?![.\d])[^.\n]{0,25}?"
    r"\b(?:is |was |it )?(?:fine|works?|worked|ok|okay|starts?|started|boots?|booted|serves?|survived|(?:runs?|ran) (?:fine|ok|clean|stable)|stable)\b|"
    r"\bwith (\d) (?:speculative |spec |draft |MTP )?tokens?,? (?:it |everything )?(?:boots|starts|works|runs|serves|is fine)\b",
    re.I)
# the reporter saying fewer sequences start ("--max-num-seqs 256: starts", "max_num_seqs=128 works"): the number tried
_FEWER_SEQS_WORK = re.compile(
    r"(?:--max-num-seqs|\bmax_num_seqs|\bmax-num-seqs)[\"'`]?\s*[=: ]?\s*(\d{1,5})\b(?![.\d])[`'\"]?(?:(?!--)[^.\n]){0,20}?"
    r"(?:->|=>|\u2192|:)?\s*(?:it |then it |everything )?(?:is |was )?(?:fine|works?|worked|ok|okay|starts?|started|boots?|"
    r"booted|serves?|comes up|came up|(?:runs?|ran) (?:fine|ok|clean))\b", re.I)
# the same tie in the languages reports come in: the drafts off and it works -- "去掉 --speculative-config 就能正常起来",
# "MTPを外すと正常", "ohne MTP läuft es", "sin MTP funciona", "sans MTP ça marche", "MTP를 끄면 정상"
_SPEC_TIED_I18N = re.compile(
    r"(?:\u53bb\u6389|\u5173\u6389|\u5173\u95ed|\u7981\u7528|\u4e0d\u5f00)\s*[`'\"]?(?:" + DRAFTS_WORDS
    + r")[`'\"]?[^\u3002\n]{0,12}?(?:\u5c31|\u4fbf)?(?:\u80fd)?(?:\u6b63\u5e38|\u597d\u4e86|\u6ca1\u95ee\u9898|\u8d77\u6765)|"
    r"(?:" + DRAFTS_WORDS + r")\s*(?:\u3092)?(?:\u5916\u3059|\u7121\u52b9\u306b\u3059\u308b|\u30aa\u30d5\u306b\u3059\u308b)"
    r"[^\u3002\n]{0,8}?(?:\u6b63\u5e38|\u8d77\u52d5\u3059\u308b|\u52d5\u304f)|"
    r"\b(?:ohne|sin|sem|sans) (?:" + DRAFTS_WORDS + r")\b[^.\n]{0,25}?\b(?:l\u00e4uft|startet|funktioniert|funciona|arranca|"
    r"marche|d\u00e9marre|fonctionne|normal)\b|"
    r"(?:" + DRAFTS_WORDS + r")\s*(?:\uc744|\ub97c)?\s*(?:\ub044\uba74|\ube7c\uba74)[^.\n]{0,10}?\uc815\uc0c1|"
    # "senza MTP funziona", "zonder MTP werkt het", "bez MTP działa", "tanpa MTP jalan normal", "без MTP работает",
    # "tắt MTP thì chạy bình thường", "MTP olmadan sorunsuz çalışıyor"
    r"(?:" + WITHOUT_WORDS + r")\s*[`'\"]?(?:" + DRAFTS_WORDS + r")\b[^.\n]{0,25}?(?:" + WORKS_WORDS + r")|"
    r"(?:" + DRAFTS_WORDS + r")\S*\s+(?:olmadan|kapat\w*|kapal\u0131\w*)[^.\n]{0,25}?(?:" + WORKS_WORDS + r")", re.I)
# the reporter's words for the last prefill chunk of a chunked prompt: "prompt_len % 2048 == 1", "(4096*n + 1)",
# "the final chunk ... was exactly one token", "a 1-token last chunk"
_LAST_CHUNK = re.compile(r"%\s*(?:max_num_batched_tokens|\d{3,6})\s*==\s*(\d{1,2})\b|"
                         r"\b\d{3,6}\s*[*x\u00d7]\s*[nkNK]\s*\+\s*(\d{1,2})\b|\b[nkNK]\s*[*x\u00d7]\s*\d{3,6}\s*\+\s*(\d{1,2})\b|"
                         # prompt lengths "all 1 mod 8192" (the token budget): a last chunk of that many tokens
                         r"\b(\d{1,2}) (?:mod|modulo) (?:max_num_batched_tokens|\d{3,6})\b|"
                         r"\b(?:final|last) (?:prefill )?chunk\b[^.]{0,60}?\b(?:exactly |only )?(\d{1,2}|one|a single) tokens?\b|"
                         r"\b(\d{1,2}|one|single)[- ]token (?:final|last) (?:prefill )?chunk|"
                         r"\b(?:final|last) (\d{1,2}|one|single)[- ]token (?:prefill )?chunk", re.I)
_WORD_NUM = {"one": 1, "a single": 1, "single": 1}
# structured outputs in use (vLLM's guided decoding: xgrammar / guidance / outlines, a JSON schema or regex in the
# request): the grammar rejects draft tokens, so the drafts a request keeps vary from step to step
_STRUCTURED = re.compile(r"\bxgrammar\b|\bguided[_ ](?:decoding|json|regex|choice|grammar)\b|\bstructured[_ ]outputs?\b|"
                         r"\bresponse_format\b|\bjson[_ ]schema\b|\blm-format-enforcer\b|\bguided (?:and|vs\.?) "
                         r"(?:free-form|unconstrained)", re.I)
# "block size ended up at 1056", "the block size is 2112", "block size became 544"
_BLOCK_SIZE_PROSE = re.compile(r"\b[Bb]lock size (?:ended up (?:at|as|being)|is now|is|was|became|of|turned into|"
                               r"(?:logged|reported|shown|printed|set) (?:as|to|at))\s+"
                               r"(\d{2,5})\b(?!\s*(?:bytes|B\b|KiB|MiB))")


# the reporter's words that the loss grows with the context: the signature of quantized K/V numerics (the error of each
# cached token adds up over the attention span), not of a state-index or batch fault
_LENGTH_DEPENDENT = re.compile(
    r"\b(?:grows?|gets? worse|worsens?|increases?|scales?) with (?:the )?(?:context|sequence|prompt|input) length\b|"
    r"\b(?:worse|degrad\w*|drops?|regress\w*) (?:\w+ ){0,2}(?:with|at|on|for|as) (?:the )?(?:longer|long|growing) "
    r"(?:contexts?|prompts?|inputs?|sequences?|documents?)\b|"
    r"\bshort (?:tasks?|prompts?|contexts?|inputs?|evals?) (?:barely|hardly|don'?t|do not|are|look|stay) "
    r"(?:move|change|fine|ok|unaffected|unchanged)\b|"
    r"\bonly (?:on|at|for|with) long(?:er)?[- ](?:context|prompt|input|document)s?\b", re.I)
# the reporter's words that the failure depends on the batch: fine alone, wrong only with other requests in flight
_BATCH_DEPENDENT = re.compile(
    r"\bonly (?:\w+ ){0,4}(?:when|with|under|at) (?:\w+ ){0,3}(?:concurren\w*|parallel requests|(?:high )?load|"
    r"multiple requests|several requests|many requests|batch(?:es|ing)?)\b|"
    r"\b(?:a single|one|1) (?:concurrent )?(?:request|user|client|prompt)s? (?:\w+ ){0,3}(?:is|are|works?|runs?|stays?|"
    r"looks?|gives?|returns?) (?:\w+ )?(?:fine|ok|correct|good)\b|"
    r"\b(?:with|at) (?:1|one|a single) concurren\w*(?: \w+)?,? (?:it'?s|is|works|runs|stays) (?:\w+ )?(?:fine|ok|correct)\b",
    re.I)
# startup / stats records pasted without their prefix (one search instead of a keyword loop per prose line)
_PASTED_RECORD = re.compile("|".join(re.escape(k) for k in (
    "Setting attention block", "Padding mamba", "Truncating max_cudagraph", "KV cache size", "Prefix cache hit rate",
    "Mamba cache mode", "non-default args", "with config:", "padding layers", "Resolved architecture", "Mamba cache '",
    "CUDA_LAUNCH_BLOCKING", "Maximum concurrency", "GPU blocks:", "Available KV cache memory", "Model loading took",
    "Graph capturing", "Running: ", "Capping cudagraph", "No valid cudagraph capture sizes",
    "Loading safetensors checkpoint shards", "Loading weights took")))
# ... but not a running count quoted inside a sentence, often another run's ("Without --speculative-config, same
# flags: `Running: 1024 reqs, Waiting: 0 reqs`"), which would read as this run's peak
_QUOTED_OTHER_RUN = re.compile(r"`[^`\n]{0,300}?Running: [^`\n]{0,300}?`")
# values a reporter printed (a debug print, a config.json excerpt): "num_prefills=1 num_decodes=0 batch_size=7",
# '"num_key_value_heads": 8', "qo_indptr = [0, 4, 8]", "idx[:, 0] = tensor([41, 17, -1], device='cuda:0')"
_PRINTED_PAIR = re.compile(r"""(?<![\w.\-/$])["']?([a-z][a-z0-9]*(?:_[a-z0-9]+)+)["']?\s*[=:]\s*(-?\d+(?:\.\d+)?)(?!\w|\.\d)""")
_PRINTED_LIST = re.compile(r"""(?<![\w.\-/$])([a-z][a-z0-9]*(?:_[a-z0-9]+)*)(?:\[[^\]]{0,20}\])?\s*(?:=\s*(?:tensor\(\s*)?|:\s*tensor\(\s*)"""
                           r"""\[\s*(-?\d+(?:\s*,\s*-?\d+){0,255}|\[\s*-?\d+\s*\](?:\s*,\s*\[\s*-?\d+\s*\]){0,255})\s*\]""")
# a tensor expression printed with its value: "accepted_counts.shape=torch.Size([6])", "slot_ids.max()=4099"
_PRINTED_EXPR = re.compile(r"(?<![\w.])([a-z][a-z0-9]*(?:_[a-z0-9]+)*)\.(shape|size\(\)|max\(\)|min\(\)|numel\(\)|sum\(\))"
                           r"(?:\.item\(\))?\s*[=:]\s*(?:torch\.Size\(\s*)?(?:\[\s*(-?\d+(?:\s*,\s*-?\d+){0,7})\s*\]|\(\s*(-?\d+"
                           r"(?:\s*,\s*-?\d+){0,7})\s*,?\s*\)|(-?\d+))(?![\d.\w])")
# a tensor the reporter printed in prose, its name a few words before it and its tail elided: "I dumped
# conv_state_indices for the step before: tensor([  17,   -1,   22, ...], device='cuda:1')"
_PRINTED_TENSOR = re.compile(r"(?<![\w.])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b[^\n=\[\]]{0,40}?\btensor\(\s*\[\s*"
                             r"(-?\d+(?:\s*,\s*-?\d+){0,255})(?:\s*,\s*(?:\.\.\.|…))?\s*\]")
# a list printed in prose with words between its name and the value, its tail elided: "state_batch_indices for the
# decode part = [412, 97, 98, -1, 1031, ...]"
_PRINTED_NAMED_LIST = re.compile(r"(?<![\w.])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b[^\n=\[\]:]{1,40}?[=:]\s*\[\s*"
                                 r"(-?\d+(?:\s*,\s*-?\d+){0,255})(?:\s*,\s*(?:\.\.\.|\u2026))?\s*\]")
# the reporter naming where it failed: "(raised from kv_cache_utils.py line 1120, ...)", "the frame is gdn_attn.py line
# 725", "(vllm/v1/attention/backends/flashinfer.py, line 1199, in build)", "at indexer.py:214" (not a logger's
# "[core.py:1376]", not a traceback's 'File "x.py", line N')
_PROSE_POS = re.compile(r"(?<![\w./\[\"-])(?:[\w.-]+/)*([A-Za-z_]\w*)\.py(?:\s*,\s*|\s+)(?:at\s+)?line\s+(\d+)\b|"
                        r"(?<![\w./\[\"-])(?:[\w.-]+/)*([A-Za-z_]\w*)\.py:(\d+)\b(?![\]\d])")
# page sizes the reporter worked out or printed, by the kind of layer named next to them: "attention layers (fp8)
# 548864 bytes/block", "the MLA page is 960*1152 = 1105920", "557056 for the linear_attn layers", "the draft layer
# page (24576)" -- per-token bytes ("2048 B/token") are not pages
_PAGE_LINE = re.compile(r"\bpages?\b|B/block|bytes?/block|page_size", re.I)
_PAGE_NUM = re.compile(r"(?<![\w.*/+(-])(?<![*/+(x] )(\d{3,9})(?!\w|\.\d|\s*(?:B|bytes?)\s*/\s*(?:token|tok)\b|"
                       r"\s*(?:[*+/)x]|tokens?\b))")
_PAGE_KINDS = (("draft", re.compile(r"\b(?:draft(?:er)?|eagle-?3?|mtp|dflash)\b", re.I)),
               ("sliding", re.compile(r"\b(?:sliding(?:[- ]window)?|swa)\b", re.I)),
               ("mla", re.compile(r"\bmla\b", re.I)),
               ("mamba", re.compile(r"\b(?:mamba\w*|ssm|gdn|linear[_ -]?attn|linear[- ]attention|conv)\b", re.I)),
               ("attention", re.compile(r"\b(?:full[- ]?attn|full[- ]attention|attention|attn|self_attn)\b", re.I)))


def _prose_pages(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for m in _PAGE_NUM.finditer(text):
        n = int(m.group(1))
        if n < 512:
            continue
        before, after = text[max(0, m.start() - 50):m.start()], text[m.end():m.end() + 30]
        if re.search(r"per[- ]token|/\s*token", before[-30:], re.I):
            continue  # bytes a token, not a page
        best = None
        for name, rx in _PAGE_KINDS:
            hits = [len(before) - h.end() for h in rx.finditer(before)]
            if not hits and re.match(r"\s*(?:B|bytes)?\s*(?:for|in|of) (?:the )?", after, re.I):
                hits = [h.start() + 10 for h in rx.finditer(after)]  # "557056 for the linear_attn layers"
            if hits and (best is None or min(hits) < best[1]):
                best = (name, min(hits))
        if best is not None:
            out.setdefault(f"{best[0]}_page_size", n)
    return out


# the reporter tying wrong output to what the client sent, not to the engine: "fixing tokenizer_path fixed it", "a
# wrong chat template", "tokenizer mismatch" -- the prompt the model saw was already wrong
_CLIENT_CAUSE = re.compile(
    r"\b(?:fix(?:ing|ed)?|correct(?:ing|ed)?|chang(?:ing|ed)|switch(?:ing|ed)|point(?:ing|ed)|sett?ing)\s+(?:the |our |my )?"
    r"(?:[\w-]+[ _])?(?:tokenizer(?:_path|_name)?|chat[ _]template|prompt (?:format|template))\b[^.\n]{0,60}?\b"
    r"(?:fixed|fixes|solved|solves|resolved|resolves)\b|"
    r"\b(?:wrong|mismatched|another model's|the old|a stale|the trainer's) (?:tokenizer|chat template)\b|"
    r"\btokenizer (?:mismatch|was wrong|of (?:another|the wrong) model)\b|"
    # a raw completions prompt the chat template never wrapped: "the raw /v1/completions prompt without the chat template"
    r"\b(?:without|no|missing|skipp?(?:ed|ing)) (?:the |a |any )?chat[ _]template\b", re.I)


# a stack dump's frame (py-spy, faulthandler) inside a collective: "all_reduce (torch/distributed/distributed_c10d.py:2875)"
_COLLECTIVE_FRAME = re.compile(r"\b(?:all_reduce|all_gather\w*|reduce_scatter\w*|broadcast|ncclAllReduce|ncclAllGather|"
                               r"ncclBroadcast)\s*\((?:[\w/.-]*(?:distributed|nccl|communicator)[\w/.-]*\.(?:py|cc|cpp)\b)", re.I)
# the reporter's words for the same wait without a stack: "the first all_reduce never completes", or the transport
# switch that makes it start ("NCCL_P2P_DISABLE=1 + --disable-custom-all-reduce -> starts in 4 min and serves fine")
_COLLECTIVE_TOLD = re.compile(r"\b(?:all[_-]?reduce|all[_-]?gather|collective|ncclCommInitRank|nccl init\w*)\b[^.\n]{0,40}?\b"
                              r"(?:never (?:completes?|returns?|finish\w*|ends?)|hangs?|hung|(?:is |gets? )?stuck|blocks? forever)\b|"
                              r"\bNCCL_P2P_DISABLE=1\b[^.\n]{0,80}?\b(?:works?|worked|fix\w*|starts?|started|serves?|runs?|"
                              r"fine|solves?|solved|completes?|completed|finish(?:es|ed)|pass(?:es|ed))\b|"
                              # NCCL's own test hanging the same way: "nccl-tests from the same container also never
                              # finishes"; the IOMMU faulting the GPUs' peer transfers (dmesg: "AMD-Vi: ... IO_PAGE_FAULT")
                              r"\bnccl-tests\b[^.\n]{0,60}?\b(?:never (?:finishes|completes|returns|ends)|hangs?|hung|stuck)\b|"
                              r"\bAMD-Vi\b[^\n]{0,60}?\bIO_PAGE_FAULT\b|\bDMAR: \[DMA (?:Read|Write)\] Request\b|"
                              # a stack dump told in words: "py-spy shows it inside ncclAllReduce"
                              r"\b(?:inside|stuck in|waiting in|blocked in|sits in|hangs? in|hung in) (?:the )?(?:\w+\.)?"
                              r"(?:ncclAllReduce|ncclAllGather|ncclBroadcast|ncclCommInitRank|all_reduce|all_gather)\b", re.I)
# a term negated after it: "MTP is not even configured here", "spec decode is off"
_NEGATED_AFTER = re.compile(r"\W{0,3}(?:is |was |are )?(?:not (?:even )?(?:configured|enabled|used|on|in use|set)\b|"
                            r"(?:off|disabled)\b)", re.I)
# a line that is a chat template's source or a request's prompt: turn markers there are the input, not an answer
_TEMPLATE_OR_PROMPT = re.compile(r"\{[%{]|\bprompt|\bmessages\b|\btemplate\b|\brole\b[\"']?\s*:\s*[\"']?(?:user|system)", re.I)
# a request's system / user message quoted from a gateway's or client's log: 'messages[0].content = "You are ..."',
# '{"role": "system", "content": "You are ..."}'
_SENT_PROMPT = re.compile(r"\bmessages\[\d+\]\.content\s*[=:]\s*\"((?:[^\"\\\n]|\\.){20,400})|"
                          r"[\"']role[\"']\s*:\s*[\"'](?:system|user)[\"']\s*,\s*[\"']content[\"']\s*:\s*\"((?:[^\"\\\n]|\\.){20,400})")
# a proxy's read timeout as its configuration states it (nginx's "proxy_read_timeout 60s;", the ingress annotation
# 'proxy-read-timeout: "60"'): the longest a response may stay silent before the proxy cuts it
_PROXY_READ_TIMEOUT = re.compile(r"\bproxy[-_]read[-_]timeout[\"']?\s*[:=]?\s*[\"']?(\d+)\s*(s|m|ms)?\b")

# a gateway route's timeout as its configuration states it: "route config: `timeout: 60s`", a VirtualService's
# "+    timeout: 60s" under its route
_ROUTE_TIMEOUT = re.compile(r"\broutes?\b[^\n]{0,40}?\btimeout[\"'`]?\s*[:=]\s*[\"'`]?(\d+)\s*(s|m|ms)?\b", re.I)

# ... or left unset ("# proxy-read-timeout not set", "(no proxy-read-timeout annotation)", a diff's removed line
# "-    nginx.ingress.kubernetes.io/proxy-read-timeout: ..."): then it is nginx's (and ingress-nginx's) default, 60 s
_PROXY_READ_TIMEOUT_UNSET = re.compile(r"\bproxy[-_]read[-_]timeout\b[^\n\d]{0,40}?(?:\bnot (?:set|configured|specified)\b|"
                                       r"\bisn'?t set\b|\bunset\b|\bmissing\b|\bleft (?:at|to) (?:the |its )?default\b)|"
                                       r"\b(?:no|without)\s+(?:[\w.]+/)?proxy[-_]read[-_]timeout\b|"
                                       r"^-\s{2,}(?:[\w.]+/)?proxy[-_]read[-_]timeout\b|"
                                       # "annotations: none for proxy timeouts (defaults)", "the default proxy timeout"
                                       r"\bnone for (?:the )?proxy[- ](?:read[- ])?timeouts?\b|"
                                       r"\bproxy[- ](?:read[- ])?timeouts?\W{0,3}\(?(?:at |left at )?(?:the )?defaults?\b|"
                                       r"\b(?:nginx'?s?|ingress'?s?|the) default proxy[- ](?:read[- ])?timeouts?\b", re.I)
# a sentence of the reporter's (a heading's or a quote's marks aside): it starts with a letter and holds none of the
# characters of code, tables or key=value settings
_OPERATOR_SENTENCE = re.compile(r"^[#>*\s]*[^\W\d_][^|{}=<>\\]*$")
# a person's voice (a library's unprefixed message -- "Triton is installed, but doesn't include CPU backend." -- has
# none): first person, a greeting, a question, an issue's title or heading
_REPORT_VOICE = re.compile(r"\b(?:I|I'm|I've|I'd|we|we're|we've|our|my|us|anyone|hi|hey|hello|thanks)\b|\?\s*$|"
                           r"^\s*(?:#+\s|\*\*|Title:|Subject:|\[(?:Bug|Question|Issue)\])", re.I)
# a chat export's speaker in front of a message ("[10:02] priya.k: ", "10:42 dmitri: ")
_CHAT_PREFIX = re.compile(r"^\s*\[?\d{1,2}:\d\d(?::\d\d)?\]?\s+[\w.\- ]{1,30}:\s+")
# ... and not a command, a flag list, an exception's line or a frame
_NOT_A_SENTENCE = re.compile(r"\s--\w|^\s*(?:vllm|python\d?|docker|podman|sudo|export|pip|uv|kubectl|curl|torchrun|srun|"
                             r"nvidia-smi|CUDA_\w*|VLLM_\w*|HF_\w*)\b|^\s*[\w.]*(?:Error|Exception|Warning|Interrupt)\b|"
                             r"\bFile \"|^\s*Traceback\b")
_WORD = re.compile(r"[^\W\d_]{2,}")
# the report saying acceptance is fine ("acceptance is healthy (2.88 mean len)"): a number after it is no complaint
_ACCEPTANCE_FINE = re.compile(r"\bacceptance(?: rate| length)? (?:is |looks |seems |stays |was )?(?:still )?(?:healthy|fine|good|"
                              r"normal|ok|okay|high|great|as expected)\b", re.I)
# ... or that the drafts are not what is wrong ("so it's not the drafts being bad", "acceptance isn't the problem")
_ACCEPTANCE_NOT_BAD = re.compile(r"\b(?:not|isn'?t|aren'?t|wasn'?t)\s+(?:the\s+)?(?:drafts?|drafter|acceptance)?\s*"
                                 r"(?:being\s+|that'?s\s+|is\s+|are\s+)?(?:bad|low|poor|the (?:problem|issue|cause))\b", re.I)
# an acceptance length the reporter quotes ("there the server log showed Mean acceptance length 2.6x - 2.8x")
_ACCEPTANCE_LENGTH_TOLD = re.compile(r"\bacceptance length\b\D{0,12}?(\d\.\d+)", re.I)
# ... and not what someone else claims it should be ("Blog/recipes say acceptance length ~2.5+")
_CLAIMED = re.compile(r"\b(?:blog|recipes?|model card|docs?|paper|README|should|expected|expect)\b", re.I)
# a sentence's clauses: "acceptance looks okay but throughput is terrible" says nothing bad of acceptance
_CLAUSE = re.compile(r"[.;!?]\s|,\s*(?:but|while|whereas|though)\b|\s(?:but|while|whereas|though)\s")
# ... unless the same words say it is bad somewhere ("great with 1 user and terrible with several")
_ACCEPTANCE_BAD = re.compile(r"\b(?:terrible|low|poor|bad|awful|drops?|dropped|collaps\w*|falls?|fell|tank\w*|plummet\w*|"
                             r"worse)\b", re.I)
_CJK = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7af]")
# a debugger's or sanitizer's report retold in prose, naming the kernel that faulted: "compute-sanitizer reports the
# invalid __global__ read in _causal_conv1d_update_kernel", "the faulting kernel is fused_recurrent_..._kernel"
_PROSE_FAULT_KERNEL = re.compile(
    r"[Ii]nvalid __(?:global|shared|local)__ (?:read|write)\b[^.\n]{0,60}?\b(?:in|at)\s+(?:the )?(?:kernel\s+)?`?"
    r"([A-Za-z_]\w{3,})`?|"
    r"\b(?:faulting|faulted|offending|crashing) kernel (?:is |was |reported as )?(?:the )?`?([A-Za-z_]\w{3,})`?|"
    r"\billegal (?:memory )?(?:access|address)\w*\s+(?:in|inside|from)\s+(?:the )?(?:kernel )?`?"
    r"([A-Za-z_]\w*(?:kernel|Kernel)\w*)`?")
# a slot read past the end of the state pool, in the report's words: "(index 143873, pool has 143843 blocks)",
# "block id 70 but the state cache holds only 64 slots"
_PAST_POOL = re.compile(
    r"\b(?:index|idx|block[ _]id|slot)\s*[=:]?\s*(\d+)\b[^.\n]{0,60}?\b(?:pool|cache|buffer|tensor)\w*\s+"
    r"(?:has|holds|of|with|size(?: is)?)\s+(?:only\s+)?(\d+)\s+(?:blocks|slots|entries|rows|states)\b", re.I)
# a value the reporter read off a variable, in words: "printing block_idx_last_scheduled_token_prev_step_d shows -1",
# "spec_state_indices_tensor contains -1" (a negative one only: a slot or index that cannot be negative)
_PRINTED_VERB = re.compile(r"(?<![\w.])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b(?:\s+(?:tensor|values?|column|row|entry|now))?\s+"
                           r"(?:shows?|showed|is|was|are|were|contains?|contained|has|had|gives?|gave|returns?|returned|"
                           r"holds?|held|prints?|printed|comes? out as|came out as)\s+(?:(?:a|an|the|some|all)\s+)?"
                           r"(-\d+)(?![\d.\w])")
_EXPR_SUFFIX = {"shape": "shape", "size()": "shape", "max()": "max", "min()": "min", "numel()": "numel", "sum()": "sum"}
_PC_PROSE = re.compile(r"\b(without|no|disabled?|disabling|off)?\W{0,3}(?:automatic )?prefix[ -]caching"
                       r"(?:\s+(?:is\s+|was\s+)?(off|disabled|not enabled|on|enabled|turned on)\b)?", re.I)
# the reporter saying the failure needs prefix caching: "without prefix caching no crash either", "disabling prefix
# caching makes it go away", "--no-enable-prefix-caching fixes it", "only happens with prefix caching"
_PC_NEEDED = re.compile(
    r"\b(?:without|disabling|disable|disabled|turning off|turn(?:ed)? off|no)\s+(?:the\s+|automatic\s+)?(?:apc|"
    r"(?:--enable-)?prefix[ -]caching)\b[^.;:\n]{0,40}?(?:\bno (?:crash|error|issue|problem|fault)s?\b|\bworks?\b|"
    r"\bworked\b|\bfine\b|\bok\b|\bsurviv(?:es|ed)\b|\bruns? (?:fine|stable|for)\b|"
    r"\bokay\b|\bgo(?:es)? away\b|\bwent away\b|\bstable\b|\b(?:does|did)(?: not|n't) (?:crash|happen|reproduce|fail)|"
    r"\bnever (?:crash|happen|fail)(?:s|ed)?\b|\bfixe[sd]\b|\bavoids?\b)|"
    # an A/B bullet: "- no prefix caching + MTP: correct, acceptance ~80%"
    r"\b(?:without|disabled|no|w/o)\s+(?:the\s+|automatic\s+)?(?:apc|(?:--enable-)?prefix[ -]caching)\b[^.;:\n]{0,40}?:\s*"
    r"(?:the )?(?:outputs? |answers? )?(?:is |are )?(?:correct|fine|ok|okay|clean|coherent|normal|good|works?)\b|"
    r"(?:--no-enable-prefix-caching|enable_prefix_caching\s*=\s*False)\b[^.;:\n]{0,30}?\b(?:fixes|fixed|avoids|works|"
    r"helps|no crash|stable)\b|"
    # "Same prompts with `--no-enable-prefix-caching`: outputs correct"
    r"(?:--no-enable-prefix-caching|enable_prefix_caching\s*=\s*False)\b[`'\"]?\s*(?:->|\u2192|=>|:)\s*(?:the )?"
    r"(?:outputs?|answers?|text|results?)?\s*(?:is |are )?(?:always |all |100\s?% )?(?:correct|fine|clean|ok|coherent|"
    r"normal|good)\b|"
    # "with --no-enable-prefix-caching both passes stay ~0.75": the measure holds where it fell with prefix caching
    r"(?:--no-enable-prefix-caching|enable_prefix_caching\s*=\s*False)\b[^.;\n]{0,40}?\b(?:stays?|stayed|remains?|"
    r"remained|holds?|held|keeps?) (?:at )?(?:~|about |around )?\d|"
    r"\bonly (?:happens |crashes |fails |occurs |reproduces )?(?:with|when|on)\s+(?:--enable-prefix-caching|(?:automatic "
    r")?prefix[ -]cach(?:ing|e hits?)|apc|cache hits?)\b", re.I)


# the reporter's header for a run with a setting switched: the drafts or prefix caching named beside on/off words
# ("MTP 끄면:", "MTP off ->", "without --speculative-config:", "ohne MTP:", "关掉 MTP 后")
_RUN_HEADER = re.compile(r"(?:" + DRAFTS_WORDS + r"|prefix[ -]caching|--[a-z][\w-]+)\b[^\n]{0,40}?(?:\b(?:off|on|disabled|"
                         r"enabled|removed)\b|\ub044|\ucf1c|\u5173|\u5f00|\u5916\u3059|\u5916\u3057|\u7121\u52b9|"
                         # 消す / 抜く / なし (ja), 去掉 / 删 (zh), 빼 / 제거 / 없이 (ko) after the setting
                         r"\u6d88\u3059|\u6d88\u3057|\u629c\u304f|\u629c\u3044|\u53bb\u6389|\u5220|\ube7c|\uc81c\uac70|\uc5c6\uc774|\u306a\u3057)|"
                         r"(?:\b(?:without|with|no|ohne|mit|sin|con|sans|avec)\b|" + WITHOUT_WORDS + r"|\u5173\u6389|\u53bb\u6389|"
                         r"\u4e0d\u5f00|\u5f00\u542f)\s*[`'\"]?(?:" + DRAFTS_WORDS + r"|prefix[ -]caching|--[a-z][\w-]+)", re.I)


# a response (an evaluation's resp=, an API answer's content) that opens with <think> and has no </think>
_RESPONSE_IN_THINKING = re.compile(r"\b(?:resp(?:onse)?|content|output|text|completion)[\"']?\s*[:=]\s*[\"']\s*<think>")
# the report saying the hits are fine ("hit rate looks ok-ish though", "cache hit rate is healthy at 62%")
_HITS_FINE = re.compile(r"\bhit[- ]rate (?:looks|is|seems|stays|was) (?:still )?(?:ok(?:-ish|ay)?|fine|good|healthy|normal|"
                        r"high|as expected)\b", re.I)
# "hit rate" in Japanese, Chinese and Korean (ヒット率, 命中率, 히트율 / 적중률)
_HIT_RATE_I18N = ("\u30d2\u30c3\u30c8\u7387", "\u547d\u4e2d\u7387", "\ud788\ud2b8\uc728", "\uc801\uc911\ub960")


_FAILS = re.compile(r"^\W{0,3}(?:it |that |this |still |also |then |always )?(?:crash|die|dies|died|fail|break|hang|"
                    r"error|throw|raise|abort|segfault|does not work|doesn't work|is broken)", re.I)


_CONCURRENCY = re.compile(r"(?<![\w.])(\d{1,5})\+?\s+concurrent(?:ly)?\b|\bconcurrency\s*(?:of|=|:|>=|>|at|level)?\s*~?(\d{1,5})\b(?!\.\d)|"
                          # the load a slowdown starts at: "terrible at batch > 4", "at batch size 32"
                          r"\bat batch(?: size)?\s*(>=?|of|=)?\s*(\d{1,5})\b(?!\.\d)", re.I)
_COUNT_NOUN = re.compile(r"(?<![\w.\-])(\d{1,4})\s+(KV heads|kv heads|query heads|attention heads|heads|hidden layers|layers|experts)\b")
_IDENT_VALUE = re.compile(r"(?<![\w.\-/$])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\s+(\d{1,7})\b(?!\.\d|\s*[%x×*/])")
_SHAPE_WORDS = re.compile(r"\d\s+(?:KV |kv |query |attention )?(?:heads|layers|experts)\b|_(?:dim|size)\w*\s+\d")


def _quoted_other_run(text: str) -> bool:
    """A running count in backticks after words of the reporter's (see ``_QUOTED_OTHER_RUN``)."""
    m = _QUOTED_OTHER_RUN.search(text) if "`" in text else None
    return m is not None and len(_WORD.findall(text[:m.start()])) >= 2


def _timeout_secs(m: re.Match[str]) -> float:
    return int(m.group(1)) * {"m": 60, "ms": 0.001}.get(m.group(2) or "s", 1)


def _printed(printed: dict, name: str, value) -> None:
    """A printed value under its name; the same name printed again with another value (per layer, per step) keeps
    each distinct value as ``<name>_2``, ``<name>_3``."""
    if len(printed) >= 60:
        return
    if name not in printed:
        printed[name] = value
        return
    for i in range(2, 5):
        key = f"{name}_{i}"
        if printed[name] == value or printed.get(key) == value:
            return
        if key not in printed:
            printed[key] = value
            return


_FAILS_BEFORE = re.compile(r"(?:crash\w*|dies|died|fails?|failed|breaks?|hangs?|errors?)\b[^.,;]{0,15}$", re.I)


_MAX_SPEC_K = 64  # deeper than any drafter vLLM runs


def _failing_k(text: str) -> int | None:
    """The speculative depth a sentence gives; of several ("k=2 works, k=3 dies"), the one said to fail."""
    # (a depth, not a count: benchmark_serving's "Draft tokens: 137002" is the tokens drafted in the run)
    ks = [m for m in _SPEC_K.finditer(text) if int(next(g for g in m.groups() if g)) <= _MAX_SPEC_K]
    if not ks:
        return None
    for m in ks:
        if _FAILS.search(text[m.end():m.end() + 30]):
            return int(next(g for g in m.groups() if g))
    return int(next(g for g in ks[0].groups() if g))


class ProseLines:
    """Mixin of :class:`~vllm_diag.postmortem.extract.FactCollector`: text outside log records."""


    def _first_words(self, name: str, rx: re.Pattern[str], text: str, line: Line) -> None:
        first_words(self.facts, name, rx, text, line)

    def _turn_markers(self, text: str, line: Line) -> None:
        """An answer that runs on through a chat format's turn markers (a pasted response, or vLLM's own request log:
        "Generated response chatcmpl-..: output: '...<|eot_id|>...'")."""
        if "turn_tokens_in_output" not in self.facts.startup and len(text) < 4000 and (
                "<|" in text or "INST]" in text or "_of_turn>" in text) and (m := TURN_TOKENS_IN_OUTPUT.search(text)) \
                and not _TEMPLATE_OR_PROMPT.search(text):
            self.facts.startup["turn_tokens_in_output"] = text[max(0, m.start() - 40):m.end() + 40].strip()
            self.facts.lines["turn_tokens_in_output"] = (line.lineno, text.strip()[:500])

    def _prose_line(self, line: Line) -> None:
        text = line.text
        said = _CHAT_PREFIX.sub("", text, count=1) if "report_prose" not in self.facts.lines else ""
        if said and _OPERATOR_SENTENCE.match(said) and not _NOT_A_SENTENCE.search(said) \
                and (len(_WORD.findall(said)) >= 6 and (said != text or _REPORT_VOICE.search(said))
                     or len(_CJK.findall(said)) >= 8):
            self.facts.lines["report_prose"] = (line.lineno, text.strip()[:500])  # (someone's words, not a log's)
        if "timeout" in text and "route_timeout_s" not in self.facts.startup and (m := _ROUTE_TIMEOUT.search(text)):
            # a gateway route's timeout (Envoy / Istio: the whole request, a stream included, must finish within it)
            self.facts.startup["route_timeout_s"] = _timeout_secs(m)
            self.facts.lines["route_timeout_s"] = (line.lineno, text.strip()[:500])
        if "timeout" in text and "proxy_read_timeout_s" not in self.facts.startup and (
                (unset := _PROXY_READ_TIMEOUT_UNSET.search(text)) or (m := _PROXY_READ_TIMEOUT.search(text))):
            if unset and text.startswith("-") and (was := _PROXY_READ_TIMEOUT.search(text)):
                self.facts.startup["proxy_read_timeout_removed_s"] = _timeout_secs(was)
            secs = 60 if unset else _timeout_secs(m)
            self.facts.startup["proxy_read_timeout_s"] = secs
            self.facts.lines["proxy_read_timeout_s"] = (line.lineno, text.strip()[:500])
        if self.hit_rate_count and len(text) < 160 and _RUN_HEADER.search(text):
            # a header between pasted metrics naming the setting changed ("MTP 끄면:", "without --enable-prefix-caching:"):
            # the lines after it are another run, even from a process id the restart reused (a container's pid 1)
            self.hit_rate_epoch += 1
        # a reporter's sentence hard-wrapped over two lines ("... of responses are complete" / "junk from the first
        # token"): the symptom phrases are also looked for across the break
        prev = getattr(self, "_prev_prose", None)
        wide = f"{prev[1][-200:].rstrip()} {text.strip()}" if prev and prev[0] == line.lineno - 1 and text.strip() else text
        self._prev_prose = (line.lineno, text) if text.strip() and len(text) < 2000 else None
        # a `model:` key inside a nested speculative_config block names the draft, not the served model
        m = _MODEL_LINE.match(text) if getattr(self, "_block", None) is None else None
        if m:
            self.model_lines.append((line.lineno, m.group(1).rstrip(".,;)")))
        m = _DRAFT_LINE.match(text)
        if m:
            self.draft_lines.append((line.lineno, m.group(1).rstrip(".,;)")))
        if "/" in text and len(self.repo_mentions) < 20:
            for m in _REPO_ID.finditer(text):
                rid = m.group(1).rstrip(".,;:)")
                if rid not in self.repo_mentions and not rid.lower().startswith(_NOT_REPOS):
                    self.repo_mentions.append(rid)
        # model families and layer kinds the reporter names ("Qwen3.5-27B", "the GDN layers", "DeepSeek-V3.2")
        if len(text) < 2000 and len(self.prose_terms) < 12:
            for m in _MODEL_WORDS.finditer(text):
                term = m.group(0)
                if term not in self.prose_terms and len(self.prose_terms) < 12:
                    self.prose_terms.append(term)
        # the reporter's words about the set-up ("with MTP", "k=3", "prefix caching on")
        prose = self.facts.startup.get("spec_prose")
        if len(text) < 2000 and (_SPEC_HINT.search(text) or isinstance(prose, dict) and prose.get("k") is None
                                 and ("k=" in text or "k =" in text or " tokens" in text or "TP" in text
                                      or "tp" in text or "num_spec" in text)):
            m = _SPEC_PROSE.search(text)
            if m and (_NEGATED.search(text[max(0, m.start() - 24):m.start()]) or _NEGATED_AFTER.match(text, m.end())):
                m = None  # "no spec decode", "without MTP", "MTP is not even configured": the set-up has none
            if m and prose is None:
                method = m.group(1)
                if method.lower().endswith(" tokens"):  # "3 draft tokens": speculative decoding, method not named
                    method = "speculative_decoding"
                k = _failing_k(text)
                self.facts.startup["spec_prose"] = {"method": method.lower().replace(" ", "_"), "k": k}
                self.facts.lines["spec_prose"] = (line.lineno, text.strip()[:500])
            elif isinstance(prose, dict) and prose.get("k") is None:
                k = _failing_k(text)  # the depth in a later sentence ("... with MTP." then "k=3 crashes")
                if k:
                    prose["k"] = k
        # (vLLM's capture progress bar names its graphs "mixed prefill-decode": no batch of the failure)
        if "mixed_prose" not in self.facts.startup and len(text) < 2000 and "Capturing CUDA graphs" not in text and any(
                k in text for k in ("ixed", "the mix", "decod", "non-spec", "ccepted", "raft", "agged", "roposal", " as a", "match",
                                    "generating", "mixing", "overlap", "mid-gen", "mid gen", "while the", "during",
                                    "prefill", "while oth", "borrador", "rascunho", "\uc11e", "\u6df7", "emisch", "ezcl")):
            # (a sentence hard-wrapped over two lines: the joined pair, searched only when there is one)
            m = _MIXED_PROSE.search(text) or (_MIXED_PROSE.search(wide) if wide != text else None) \
                or _MIXED_PROSE_I18N.search(text)
            if m:
                self.facts.startup["mixed_prose"] = m.group(0)
                self.facts.lines["mixed_prose"] = (line.lineno, text.strip()[:500])
        if "near_limit_prose" not in self.facts.startup and len(text) < 2000 and ("max_model_len" in wide or "limit" in wide
                                                                                 or "max_tokens" in wide):
            self._first_words("near_limit_prose", _NEAR_LIMIT, wide, line)
        # (a side attempt's outcome -- "tried --mamba-ssm-cache-dtype bfloat16 and accuracy dropped" -- is not the
        # report's symptom)
        if "wrong_output_prose" not in self.facts.startup and len(text) < 2000 \
                and line.lineno not in self.side_attempt_lines:
            m = WRONG_OUTPUT.search(wide) if any(k in wide.lower() for k in WRONG_OUTPUT_HINTS) else None
            m = m or REPEATED_WORD.search(wide)
            if m and _HEARSAY.search(wide[max(0, m.start() - 80):m.start()]):
                m = None  # "I've read about MTP + hybrids giving garbage": another report's symptom, not this one's
            if m:  # (without the sign of chat shorthand's verdict: "apc = garbage")
                self.facts.startup["wrong_output_prose"] = m.group(0).lstrip("=->\u2192 ")
                self.facts.lines["wrong_output_prose"] = (line.lineno, text.strip()[:500])
        if "spec_tied_prose" not in self.facts.startup and len(text) < 2000 and any(
                w in text.lower() for w in ("specul", "mtp", "ngram", "n-gram", "draft", "suffix", "eagle")):
            m = _SPEC_TIED.search(text) or _SPEC_TIED_I18N.search(text)
            if m:
                self.facts.startup["spec_tied_prose"] = m.group(0)
                self.facts.lines["spec_tied_prose"] = (line.lineno, text.strip()[:500])
        if "fewer_drafts_work" not in self.facts.startup and len(text) < 2000 and any(
                w in text.lower() for w in ("k=", "k =", "spec", "token")):
            m = _FEWER_DRAFTS_WORK.search(text)
            if m:
                self.facts.startup["fewer_drafts_work"] = int(m.group(1) or m.group(2))
                self.facts.lines["fewer_drafts_work"] = (line.lineno, text.strip()[:500])
        if "fewer_seqs_work" not in self.facts.startup and len(text) < 2000 and "num" in text.lower() \
                and (m := _FEWER_SEQS_WORK.search(text)):
            self.facts.startup["fewer_seqs_work"] = int(m.group(1))
            self.facts.lines["fewer_seqs_work"] = (line.lineno, text.strip()[:500])
        if "last_chunk_tokens" not in self.facts.startup and len(text) < 2000 and (
                "%" in text or "chunk" in text or "+" in text or "mod" in text):
            m = _LAST_CHUNK.search(text)
            if m:
                raw = next(g for g in m.groups() if g is not None).lower()
                self.facts.startup["last_chunk_tokens"] = _WORD_NUM.get(raw) or int(raw)
                self.facts.lines["last_chunk_tokens"] = (line.lineno, text.strip()[:500])
        if "structured_outputs_prose" not in self.facts.startup and len(text) < 4000 and any(
                w in text.lower() for w in ("grammar", "guided", "structured", "response_format", "schema", "enforcer")):
            m = _STRUCTURED.search(text)
            if m:
                self.facts.startup["structured_outputs_prose"] = m.group(0)
                self.facts.lines["structured_outputs_prose"] = (line.lineno, text.strip()[:500])
        if line.level is None and "hit_rate_prose" not in self.facts.startup and len(text) < 2000 and (
                "hit rate" in text.lower() or "cache hit" in text.lower() or "hit-rate" in text.lower()
                or "never hit" in text.lower() and "cach" in text.lower()
                or any(w in text for w in _HIT_RATE_I18N)) and "Engine 000" not in text and not _HITS_FINE.search(text):
            # the reporter speaks of the prefix cache's hits (not vLLM's stats line): the complaint is about them
            # (unless the words say the hits are fine: "hit rate looks ok-ish though")
            self.facts.startup["hit_rate_prose"] = True
            self.facts.lines["hit_rate_prose"] = (line.lineno, text.strip()[:500])
        self._prompt_line(text, wide, line)
        if "block_size_prose" not in self.facts.startup and len(text) < 2000 and "lock size" in text and line.level is None:
            m = _BLOCK_SIZE_PROSE.search(text)  # the reporter quoting the block size vLLM chose
            if m:
                self.facts.startup["block_size_prose"] = int(m.group(1))
                self.facts.lines["block_size_prose"] = (line.lineno, text.strip()[:500])
        if "every_request_prose" not in self.facts.startup and len(text) < 2000 and ("ven" in text or "ncluding" in text):
            m = EVERY_REQUEST.search(text)
            if m:
                self.facts.startup["every_request_prose"] = m.group(0)
                self.facts.lines["every_request_prose"] = (line.lineno, text.strip()[:500])
        if "short_prompt_prose" not in self.facts.startup and len(text) < 2000 and ("short" in text or "token" in text):
            m = SHORT_PROMPT.search(text)
            if m:
                self.facts.startup["short_prompt_prose"] = m.group(0)
                n = m.group(1) or m.group(2)
                if n:
                    self.facts.startup["short_prompt_tokens"] = int(n)
                self.facts.lines["short_prompt_prose"] = (line.lineno, text.strip()[:500])
        if line.level is None and len(text) < 2000 and ("ength" in text or "long" in text or "short" in text):
            self._first_words("length_dependent_prose", _LENGTH_DEPENDENT, text, line)
        if "batch_dependent_prose" not in self.facts.startup and len(text) < 2000 and (
                "oncurren" in text or "ingle" in text or " load" in text or "equests" in text):
            m = _BATCH_DEPENDENT.search(text)
            if m:
                self.facts.startup["batch_dependent_prose"] = m.group(0)
                self.facts.lines["batch_dependent_prose"] = (line.lineno, text.strip()[:500])
        if "prefix_caching_needed" not in self.facts.startup and line.level is None and len(text) < 2000 and (
                "refix" in text or "apc" in text.lower() or "ache hit" in text):
            m = _PC_NEEDED.search(text)
            if m:
                # the failure goes away without prefix caching: the failing run had it on
                self.facts.startup["prefix_caching_needed"] = m.group(0)
                self.facts.lines["prefix_caching_needed"] = (line.lineno, text.strip()[:500])
                self.facts.startup.setdefault("prefix_caching_prose", True)
        if "prefix cach" in text.lower() and "prefix_caching_prose" not in self.facts.startup and len(text) < 2000:
            m = _PC_PROSE.search(text)
            if m:
                # "without prefix caching", "prefix caching is OFF": a negation before or after
                self.facts.startup["prefix_caching_prose"] = not (m.group(1) or (m.group(2) or "").lower() in (
                    "off", "disabled", "not enabled"))
                self.facts.lines["prefix_caching_prose"] = (line.lineno, text.strip()[:500])
        if line.level is None and len(text) < 2000:
            if "lower" in wide or "LOWER" in wide or "hroughput" in wide or "othing" in wide or "help" in wide \
                    or "worse than" in wide or "below" in wide or "peed" in wide or " than " in wide:
                # ("is SLOWER than no speculation", "gives almost nothing", "barely helps", "worse than no spec")
                self._first_words("spec_slower_prose", SPEC_SLOWER, wide, line)
            if "okenizer" in text or "emplate" in text:
                self._first_words("client_cause_prose", _CLIENT_CAUSE, text, line)
            if "cceptance length" in wide and not _CLAIMED.search(wide) and (told := _ACCEPTANCE_LENGTH_TOLD.findall(wide)):
                # (the acceptance length the reporter saw on some run, in words: the largest)
                top = max(float(x) for x in told)
                if top > self.facts.startup.get("acceptance_length_told_max", 0):
                    self.facts.startup["acceptance_length_told_max"] = top
            said = " | ".join(c for c in _CLAUSE.split(wide) if "cceptance" in c)  # (what it says of acceptance)
            if said and not ((_ACCEPTANCE_FINE.search(said) or _ACCEPTANCE_NOT_BAD.search(said))
                             and not _ACCEPTANCE_BAD.search(_ACCEPTANCE_NOT_BAD.sub("", said))):
                self._first_words("acceptance_prose", ACCEPTANCE_FELL, wide, line)
            if "oncurren" in wide or "KV" in wide or "kv" in wide or "reempt" in wide or "emory" in wide or " fit" in wide \
                    or "never" in wide or "ueue" in wide or "cap" in wide or "apacit" in wide or " wait" in wide or "unning" in wide \
                    or "Wait" in wide or "only" in wide:
                self._first_words("capacity_prose", CAPACITY_FELL, wide, line)
            self.ab_tests.read(wide, text, line)
            self.trials.read(text, line)
            if "emperature" in wide or "greedy" in wide:
                self._first_words("no_temperature_prose", NO_TEMPERATURE, wide, line)
                self._first_words("greedy_accepts_prose", GREEDY_ACCEPTS, wide, line)
            # (in lower case: "MAIS LENTO", "SLOWER")
            low = wide.lower()
            if any(w in low for w in ("slow", "below", "lower", "burst", "frozen", "chunks", "worse", "hroughput", "tpot", "cliff", "egression", "tail",
                                       "p99", "p95", "p90", "ttft", "itl", "atency", "nly ", "first token", "/s", "crawl", "half",
                                       "faster", "stall", "freez", "stutter", "degrad", " down", "drop", "fell", "fall",
                                       "terrib", "awful", "expect",
                                       "\ub290", "\u6162", "\u9045", "langsam", "lent", "\u043c\u0435\u0434\u043b", "trager", "langzam",
                                       "wolniej", "pomal", "yava\u015f", "ch\u1eadm", "lambat", "l\u00e5ngsam",
                                       "\u043f\u043e\u0432\u0456\u043b\u044c\u043d", "\u0927\u0940\u092e\u093e", "\u0623\u0628\u0637\u0623",
                                       "\u0e0a\u0e49\u0e32", "\u60aa", "\u5dee", "\u4e0b\u964d", "\ub098\ube60", "\ub098\uc058",
                                       "\uc545\ud654", "\ub5a8\uc5b4", "\u843d\u3061", "\u4f4e\u4e0b", "\u541e\u5410", "despenc", "desab", "desplom",
                                       "\uc808\ubc18", "\ub0ae", "\u4e00\u534a", "\u534a\u5206", "\u964d\u4f4e",
                                       "pior", "peor", "schlechter", "pire", "bricht", "effondr", "descend",
                                       "\u043f\u0430\u0434\u0430", "\u043d\u0438\u0436\u0435", "\u0443\u043f\u0430\u043b")):
                self._first_words("slow_prose", SLOW, wide, line)
                if "slower" in low or "deploy" in low or "overnight" in low or "since " in low or "change" in low \
                        or "unchanged" in low:
                    self._first_words("degraded_over_time_prose", DEGRADED_OVER_TIME, wide, line)
            if ("tak" in text or "ang" in text or "tuck" in text or "sits" in text) and ("min" in text or "hour" in text):
                self._first_words("slow_start_prose", SLOW_START, text, line)
            if "ang" in text or "tuck" in text or "never return" in text or "reez" in text:
                self._first_words("hang_prose", HANG, text, line)
            if ("reduce" in text or "gather" in text or "nccl" in text or "broadcast" in text) and "(" in text:
                self._first_words("collective_stack", _COLLECTIVE_FRAME, text, line)
            if "educe" in text or "ather" in text or "ollective" in text or "P2P" in text or "nccl" in text.lower() \
                    or "AMD-Vi" in text or "DMAR" in text:
                self._first_words("collective_prose", _COLLECTIVE_TOLD, text, line)
            if ("__" in text or "ernel" in text) and "prose_fault_kernel" not in self.facts.startup \
                    and (m := _PROSE_FAULT_KERNEL.search(text)):
                name = next(g for g in m.groups() if g)
                self.facts.startup["prose_fault_kernel"] = (name, line.lineno, text.strip()[:500])
            low = text.lower()  # (the pool's words, in any case, before the regex that needs one of them)
            if ("pool" in low or "cache" in low or "buffer" in low or "tensor" in low) \
                    and "state_index_past_pool" not in self.facts.startup and (m := _PAST_POOL.search(text)) \
                    and int(m.group(1)) >= int(m.group(2)):
                self.facts.startup["state_index_past_pool"] = (int(m.group(1)), int(m.group(2)))
                self.facts.lines["state_index_past_pool"] = (line.lineno, text.strip()[:500])
        # (compute-sanitizer's "=========     Host Frame: ... x.py:N" lists callers: the numbers read its first only)
        if ".py" in text and line.level is None and len(text) < 2000 and not text.lstrip().startswith(("File ", "=")):
            for m in _PROSE_POS.finditer(text):
                stem, num = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
                pos = self.facts.startup.setdefault("prose_source_lines", {})
                if len(pos) < 8:
                    pos.setdefault(f"{stem}_line", int(num))
        if line.level is None and len(text) < 2000 and _PAGE_LINE.search(text) and (found := _prose_pages(text)):
            pages = self.facts.startup.setdefault("prose_page_sizes", {})
            for name, val in found.items():
                pages.setdefault(name, val)
        if " -" in text and "_" in text and len(text) < 2000 and (said := _PRINTED_VERB.findall(text)):
            printed = self.facts.startup.setdefault("printed_values", {})
            for name, val in said:
                _printed(printed, name, int(val))
        if ("=" in text or '":' in text or "':" in text or "tensor([" in text or ": " in text) and "_" in text \
                and len(text) < 4000 \
                and "with config:" not in text and "non-default args" not in text and "SchedulerOutput" not in text:
            printed = self.facts.startup.setdefault("printed_values", {})
            for rx in (_PRINTED_LIST, _PRINTED_TENSOR, _PRINTED_NAMED_LIST) if "tensor([" in text else (
                    _PRINTED_LIST, _PRINTED_NAMED_LIST):
                for name, vals in rx.findall(text):
                    if len(printed) < 60:
                        printed.setdefault(name, [int(x) for x in re.findall(r"-?\d+", vals)])
            for name, val in _PRINTED_PAIR.findall(text):
                _printed(printed, name, float(val) if "." in val else int(val))
            if "." in text and ("shape" in text or ")=" in text or ") =" in text):
                for name, what, dims, tup, scalar in _PRINTED_EXPR.findall(text):
                    key = f"{name}_{_EXPR_SUFFIX[what]}"
                    if what in ("shape", "size()"):
                        _printed(printed, key, [int(x) for x in re.findall(r"-?\d+", dims or tup or scalar)])
                    elif scalar:
                        _printed(printed, key, int(scalar))
            if not printed:
                del self.facts.startup["printed_values"]
        if len(text) < 2000 and ("head" in text or "layer" in text or "expert" in text or "_dim" in text or "_size" in text) \
                and _SHAPE_WORDS.search(text):
            # the model's shape in the reporter's words: "8 KV heads, head_dim 128", "48 layers"
            printed = self.facts.startup.setdefault("printed_values", {})
            for n, noun in _COUNT_NOUN.findall(text):
                _printed(printed, "num_" + "_".join(noun.lower().replace("attention ", "").split()), int(n))
            for name, val in _IDENT_VALUE.findall(text):
                _printed(printed, name, int(val))
            if not printed:
                del self.facts.startup["printed_values"]
        if ("oncurren" in text or "at batch" in text) and len(text) < 2000:  # the load it fails under: "~40 concurrent requests", "concurrency 32"
            ms = list(_CONCURRENCY.finditer(text))
            # of several ("fine at concurrency 8, dies at 32"), the load said to fail
            before = [m for m in ms if _FAILS_BEFORE.search(text[max(0, m.start() - 25):m.start()])]
            after = [m for m in ms if _FAILS.search(text[m.end():m.end() + 30])]
            m = (before or after or ms or [None])[0]
            if m:
                n = int(m.group(1) or m.group(2) or m.group(4))
                # ">1 concurrent requests", "more than 8 concurrent", "at batch > 4": the load is above the number said
                above = m.group(1) and re.search(r"(?:>|\bmore than |\bover )$", text[max(0, m.start() - 10):m.start()]) \
                    or m.group(3) == ">"
                self.facts.startup.setdefault("concurrent_requests", n + 1 if above else n)
        if len(text) < 4000 and REQ_HINT.search(text):
            self._request_params(text)
        if "504" in text or "ateway" in text or "closed connection" in text or "chunked read" in text:
            if "gateway_timeout_prose" not in self.facts.startup and len(text) < 4000:
                self._first_words("gateway_timeout_prose", GATEWAY_TIMEOUT, text, line)
        if "okenizer" in text and "client_tokenizer" not in self.facts.startup and len(text) < 4000 \
                and (m := CLIENT_TOKENIZER.search(text)):
            self.facts.startup["client_tokenizer"] = m.group(1) or m.group(2)
            self.facts.lines["client_tokenizer"] = (line.lineno, text.strip()[:500])
        if "tool" in text and "tool_calls_as_text" not in self.facts.startup and len(text) < 4000:
            self._first_words("tool_calls_as_text", TOOL_CALLS_AS_TEXT, text, line)
        if "<think>" in text and "</think>" not in text and "reasoning_ate_budget_prose" not in self.facts.startup \
                and len(text) < 8000 and (m := _RESPONSE_IN_THINKING.search(text)):
            # a response that ends while still thinking: the token cap came before the answer
            self.facts.startup["reasoning_ate_budget_prose"] = m.group(0)[:120]
            self.facts.lines["reasoning_ate_budget_prose"] = (line.lineno, text.strip()[:500])
        if "reasoning" in text and "answer_as_reasoning" not in self.facts.startup and len(text) < 8000 \
                and (m := ANSWER_AS_REASONING.search(text)):
            self.facts.startup["answer_as_reasoning"] = f"content empty, reasoning_content '{m.group(1)[:80]}'"
            self.facts.lines["answer_as_reasoning"] = (line.lineno, text.strip()[:500])
        elif "reasoning" in text and "answer_as_reasoning" not in self.facts.startup and len(text) < 4000 \
                and (m := ANSWER_AS_REASONING_TOLD.search(text)):
            self.facts.startup["answer_as_reasoning"] = m.group(0)
            self.facts.lines["answer_as_reasoning"] = (line.lineno, text.strip()[:500])
        if "content" in text and len(self.logged_prompts) < 8 and len(text) < 8000 and (m := _SENT_PROMPT.search(text)):
            # a request's system or user message as a gateway's or client's debug log shows it: where two requests'
            # prompts part says what they share, as in vLLM's own request log
            self.logged_prompts.append((line.lineno, (m.group(1) or m.group(2))[:400]))
        if "thinking_off" not in self.facts.startup and ("hink" in text) and len(text) < 4000 \
                and (m := THINKING_OFF.search(text)):
            self.facts.startup["thinking_off"] = m.group(0)
        if "</think>" in text and "thinking_in_content" not in self.facts.startup and len(text) < 8000 \
                and (m := THINKING_IN_CONTENT.search(text)):
            self.facts.startup["thinking_in_content"] = m.group(0)[-120:]
            self.facts.lines["thinking_in_content"] = (line.lineno, text.strip()[:500])
        self._turn_markers(text, line)
        if "finish_reason" in text and "finish_reason_length" not in self.facts.startup and FINISH_LENGTH.search(text):
            self.facts.startup["finish_reason_length"] = True  # an answer the API server ended at its token cap
            self.facts.lines["finish_reason_length"] = (line.lineno, text.strip()[:500])
        # (not vLLM's "Maximum concurrency for 32,768 tokens per request", pasted in a sentence: the configured length)
        # (a sentence hard-wrapped over two lines -- "Prompts are short" / "(~600 tok in, ~300 out)" -- is read whole)
        if "request_tokens_prose" not in self.facts.startup and len(text) < 2000 and "tok" in text \
                and ("request" in wide or "rompt" in wide or "conv" in wide or "chat" in wide or "session" in wide) \
                and "oncurrency for" not in wide \
                and (m := REQUEST_TOKENS.search(text) or REQUEST_TOKENS.search(wide)):
            groups = m.groups()  # (number, k) pairs, one per way of saying it
            raw, kilo = next((groups[i], groups[i + 1]) for i in range(0, len(groups), 2) if groups[i])
            try:
                n = token_count(raw, kilo)
            except ValueError:
                n = 0
            if n >= 1:
                self.facts.startup["request_tokens_prose"] = n
                self.facts.lines["request_tokens_prose"] = (line.lineno, text.strip()[:500])
        self._cause_line(text, wide, line)  # (the report's words for causes outside the families)
        if "truncated_prose" not in self.facts.startup and len(text) < 2000 and any(
                w in text for w in ("cut ", "cuts ", "exactly", "null", "cut-", "runcat", "stop", "mid", "incomplete", "SSE", "stream", "empty", "troncat", "tagliat", "afge",
                                    " end ", "ends ", "only ", "early", "abrupt", "content", "half",
                                    "ci\u0119t", "useknut", "\u0159ezan", "kesil", "yar\u0131m", "c\u1eaft", "terpotong",
                                    "avklipp", "\u043e\u0431\u0440\u0438\u0432", "\u043e\u0431\u0440\u0456\u0437", "\u5207\u308c", "\u622a\u65ad", "\u4e00\u534a",
                                    "\uc798", "schnitten", "corta", "coup", "\u043e\u0431\u0440\u044b\u0432")):
            self._first_words("truncated_prose", TRUNCATED, text, line)
        # the same facts also come from pasted INFO lines that lost their prefix
        if _PASTED_RECORD.search(text) and not _quoted_other_run(text):
            self._record_line(line)
        elif text.lstrip()[:1] == "|":  # (the rows of vLLM's CUDA-graph stats table print without a record prefix)
            self._cudagraph_stats(line)
        elif "Capture sizes:" in text:  # (... as do its config settings above the table)
            self._cudagraph_config(line)

    # -------------------------------------------------------------- commands

"""The reporter's A/B tests of a failure, read from the prose around a log: that it persists without the drafts (in
the languages reports come in), without prefix caching, that it stays on one host, and a switch outside the
hybrid/spec-decode classes that made it go away -- as sentences, bullets, chat lines or an A/B table with a header.
What they clear is decided in :func:`.configuration.ab_tests_clear_families`."""

from __future__ import annotations

import re

from ..model import LogFacts
from .lines import Line

# the outcome of a toggle that changed nothing: "turning off ngram: same behaviour", "--no-enable-prefix-caching: no
# difference"
_SAME_OUTCOME = (r"same (?:behaviou?r|result|problem|issue|thing|output|garbage|gibberish|nonsense|junk|loops?|crash|error|"
                 r"hang)\b|no (?:change|difference)\b|"
                 # the same figure as before: "disabling prefix caching (same ~12%)"
                 r"same\s*(?:~|about |around )?\d+(?:\.\d+)?\s*%")
# (what follows "still" in an outcome that stayed bad: not "still works")
_FINE_WORD = r"(?:works?|worked|fine|ok|okay|good|clean|correct|runs|starts|stable|normal)\b"
_NOT_FINE = r"(?!" + _FINE_WORD + r")"
# ... for prefix caching: the symptom does not need the cached states
# the failure stays without CUDA graphs ("`--enforce-eager` -> still fails, a bit later", "even with enforce_eager=True
# it still crashes"): no capture size or graph shape is its cause
_PERSISTS_EAGER = re.compile(
    r"--enforce[-_]eager\b[^.\n]{0,40}?(?:->|=>|\u2192|:)\s*(?:it )?(?:still|same|also) (?:fails?|crash\w*|errors?|asserts?|"
    r"breaks?|dies|the same)\b|"
    r"\b(?:even |also |and )?with (?:--)?enforce[-_]eager(?:=True)?\b[`'\"]?[^.\n]{0,30}?\b(?:still|also) (?:fails?|crash\w*|errors?|"
    r"asserts?|breaks?|dies)\b|\beager mode\b[^.\n]{0,20}?\b(?:still|also) (?:fails?|crash\w*|errors?)\b", re.I)
# the symptom staying ("still repeats", "also crashes", "same garbage"), not an outcome that is fine ("also fine")
_STAYS = (r"(?:\b(?:still|also)\s+(?!(?:fine|ok|okay|works?|worked|good|clean|correct|stable|normal|healthy|passes|runs|"
          r"starts|serves)\b)\w+|\bsame\s+(?:garbage|failure|crash|problem|issue|error|loops?|repetition|output|result)s?\b)")
# both switched off at once and the symptom stays: "disabling prefix caching AND MTP still repeats", "without MTP and
# without prefix caching: same garbage"
_OFF = r"\b(?:disabling|disabled|turning off|turned off|without|no)\s+(?:both\s+)?"
_AND = r"\s+(?:and|&|\+)\s+(?:without\s+|no\s+)?"
_PC_WORD = r"(?:(?:automatic\s+)?prefix[- _]?caching|apc)"
_DRAFTS_WORD = r"(?:MTP|spec(?:ulative)?(?:[- ]decod\w*)?|drafts?|EAGLE\w*|ngram"
_BOTH_OFF_PERSISTS = re.compile(
    # (either switch named first; after the cache, the drafts may also be "the drafts")
    _OFF + _PC_WORD + _AND + _DRAFTS_WORD + r"|the drafts?)\b[^.\n]{0,30}?" + _STAYS + "|"
    + _OFF + _DRAFTS_WORD + ")" + _AND + _PC_WORD + r"\b[^.\n]{0,30}?" + _STAYS, re.I)
_PERSISTS_WITHOUT_PC = re.compile(
    # "prefix caching off: still differs"
    r"\b(?:automatic\s+)?(?:prefix[- _]?caching|apc)\s+(?:off|disabled)\s*(?:->|=>|\u2192|:)\s*(?:still|also|same)\s+"
    + _NOT_FINE + r"\w+|"
    r"(?:--no-enable-prefix-caching|\b(?:turning off|disabling|disabled|without|no)\s+[`'\"]?(?:--enable-)?"
    r"(?:prefix[- _]?caching|apc))\b[`'\"]?[^.\n:]{0,60}?\s*(?:->|=>|\u2192|[:,(-])\s*[*_]{0,2}(?:" + _SAME_OUTCOME +
    r"|(?:still|also)\s+(?:\w+\s+)?(?:\w+\s+)?(?:bad|wrong|garbage|broken|crash\w*|hang\w*|fail\w*|loops|looping|repeats|answers|"
    r"outputs))|"
    # "Without --enable-prefix-caching the same.", "turning both off doesn't fix it" (the drafts and the cache)
    r"\bwithout\s+[`'\"]?(?:--enable-)?(?:prefix[- _]?caching|apc)\b[`'\"]?,?\s+(?:the\s+)?same(?=\s*[.,;:!)]|\s*$)|"
    r"\bturning (?:both|them|all|those) off (?:doesn'?t|does not|didn'?t|did not) (?:fix|help|change)\b|"
    # "with --no-enable-prefix-caching still 0.339": the same score without the cache
    r"(?:--no-enable-prefix-caching|\b(?:prefix[- _]?caching|apc)\s+(?:off|disabled))[`'\"]?,?\s+(?:still|also)\s+"
    + _NOT_FINE + r"~?\d*\.?\d+\b", re.I)
# the reporter's A/B tests that take speculative decoding out of a fault: "Turning off MTP did not help", "without MTP
# + custom AR: crashed after 3h", "num_spec_tokens 0 (no spec): same crash", "So MTP is not the trigger"
_SPEC = r"(?:[`'\"]?(?:--)?speculative[-_ ]config[`'\"]?|suffix[ -]decod\w*|suffix(?=\s+(?:off|on|disabled|removed)\b)|medusa|MTP|EAGLE-?3?|[Ee]agle-?3?|num_spec(?:ulative)?_tokens|spec(?:ulative)?(?:[ -]decod\w*)?|drafts?|drafting|ngram|" \
        r"speculation)"
# the toggle named before its state: "tried --speculative-config removed -> output still weird", "MTP off: answers are
# still wrong"
_SPEC_OFF_STILL = re.compile(
    _SPEC + r"[`'\"]?\s+(?:removed|off|disabled|dropped|turned off|switched off)\b[^.\n]{0,12}?(?:->|=>|\u2192|[:,])\s*"
    r"(?:the\s+)?(?:(?:output|outputs|answers?|text|responses?|it)\s+)?(?:is\s+|are\s+|was\s+|were\s+)?(?:still|also)\s+"
    + _NOT_FINE + r"[a-z]+", re.I)
# the report saying the run has no drafts at all: "MTP is not even configured here", "no speculative decoding at all"
_NO_SPEC_RUN = re.compile(r"\b(?:MTP|spec(?:ulative)?[ -]decod\w*|drafts?|EAGLE\w*|ngram)\b (?:is |was |are )?not (?:even )?"
                          r"(?:configured|enabled|used|on|in use)\b|\bno (?:spec(?:ulative)?[ -]decod\w*|MTP|drafts?) "
                          r"(?:at all|configured|in (?:this|the) (?:run|setup|config))\b", re.I)
_FAULTS_WITHOUT_SPEC = re.compile(
    r"\b(?:turning off|disabling|disabled|removing|dropping|without|no)\s+(?:the\s+)?" + _SPEC + r"\b[^.\n]{0,30}?\b"
    r"(?:did(?: not|n't)|does(?: not|n't)) (?:help|fix it|fix anything|change anything)\b|"
    r"\bwithout\s+(?:the\s+)?" + _SPEC + r"\b(?:(?!\bwith\b|\bno (?:crash|error|fault|IMA)\w*)[^.\n]){0,40}?(?:\bit\s+|:\s*)"
    r"(?:still\s+|also\s+)?(?:crash(?:ed|es)|fail(?:ed|s)|"
    r"died|dies|faulted|hangs?|hung)\b|"
    # "Disabling MTP: still crashes", "no speculative config at all: **still crashes**", "no spec decode: IMA (2/3)"
    r"\b(?:turning off|turn off|disabling|disabled?|removing|removed?|dropping|dropped|drop|without|no)\s+(?:the\s+)?"
    r"[`'\"]?(?:--)?" + _SPEC
    # (nothing between the toggle and its outcome that turns it round: "without MTP, no crash - with MTP: crashes")
    + r"\b(?:(?!\bno (?:crash|error|issue|problem|fault|IMA|hang|garbage|loops?)\b|\b(?:not|with|fine|works?|ok)\b)"
    r"[^.\n:]){0,50}?\s*(?:->|=>|\u2192|[:,-])"
    r"\s*[*_]{0,2}(?:it\s+)?(?:(?:(?:still|also)\s+)?(?:crash|fail|fault|die|hang|IMA)\w*|" + _SAME_OUTCOME +
    # "removed `--speculative-config`: still 0.0%" (the hit rate of a report about hits)
    r"|(?:still|also)\s+[*_]{0,2}0(?:\.0+)?\s*%" +
    r"|(?:still|also)\s+(?:garbage|garbled|gibberish|wrong|broken|corrupt\w*|bad|loops|looping|repeats|repeating)\b"
    # "...: still two answers", "Disabling MTP: loops still happen"
    r"|(?:still|also)\s+(?:two|three|several|multiple|\d+)\s+(?:distinct\s+|different\s+)?(?:answers|outputs|results)\b"
    r"|(?:the\s+)?(?:loops?|garbage|repetition|errors?|crash\w*|problem|issue)\s+still\s+(?:happens?|occurs?|there|present|"
    r"reproduces?|shows? up)\b)|"
    # "Turning ngram off still repeats (just slower)", "Turned suffix decoding off: same thing"
    r"\b(?:turning|turned|turn|switching|switched|switch|setting)\s+(?:the\s+)?" + _SPEC + r"\s+off\b\s*(?:->|=>|[,:])?\s*(?:it\s+)?"
    r"(?:(?:still|also)\s+" + _NOT_FINE + r"\w+|" + _SAME_OUTCOME + r")|"
    # "Same with spec decode off (58.7)", "same garbage with MTP disabled"
    r"\bsame (?:\w+ )?with (?:the )?" + _SPEC + r"\s+(?:off|disabled|removed|turned off)\b|"
    # "Without --speculative-config the output is still garbled (just slower)"
    r"\bwithout\s+(?:the\s+)?[`'\"]?(?:--)?" + _SPEC + r"\b[`'\"]?[^.\n]{0,40}?\b(?:is|are|was|were)\s+still\s+(?:\w+\s+)?"
    r"(?:garbled|garbage|gibberish|wrong|broken|corrupt\w*|bad|looping)\b|"
    # "with MTP off it is just as bad"
    r"\bwith\s+(?:the\s+)?" + _SPEC + r"\s+(?:off|disabled|removed)\s+it(?:'s|\s+is|\s+was)?\s+(?:just\s+|equally\s+|still\s+)?"
    r"(?:as\s+)?(?:bad|slow|broken)\b|"
    # "with MTP off it still happens (less often)"
    r"\bwith\s+(?:the\s+)?" + _SPEC + r"\s+(?:off|disabled|removed)\s+it\s+still\s+(?:happens|occurs|reproduces|shows up)\b|"
    # "spec decode off: still 3 distinct answers out of 20"
    r"\b" + _SPEC + r"\s+(?:off|disabled|removed)\s*(?:->|=>|\u2192|:)\s*(?:still|also)\s+" + _NOT_FINE + r"\w+|"
    # "--speculative-config removed: same weird words through the gateway"
    r"(?<![\w-])[`'\"]?--speculative[-_]config[`'\"]?\s+(?:removed|dropped|off|disabled)\s*(?:->|=>|\u2192|:)\s*"
    r"(?:" + _SAME_OUTCOME + r"|same (?:\w+ ){0,2}(?:words|answers|text)\b|(?:still|also)\s+\w+)|"
    # "With MTP off, still {"answer": 12}": the drafts off and the same outcome
    r"\b(?:with\s+)?" + _SPEC + r"\s+(?:off|disabled|turned off|removed)\s*[,:]\s*still\b(?!\s+" + _FINE_WORD + r")|"
    # "MTP off, EPLB on: crash, same timing"
    r"\b" + _SPEC + r"\s+(?:off|disabled)\b[^.\n:]{0,30}?(?:->|=>|\u2192|:)\s*[*_]{0,2}(?:(?:(?:still|also)\s+)?"
    r"(?:crash|fail|fault|die|hang|IMA)\w*|" + _SAME_OUTCOME + r")|"
    # "Nothing to do with MTP."
    r"\bnothing to do with (?:the\s+)?" + _SPEC + r"\b|"
    # "tried spec off this morning, same IMA in top_k_mask_logits"
    r"\b" + _SPEC + r"\s+(?:off|disabled)\b[^.\n]{0,40}?\b(?:same|still)\s+(?:\w+\s+)?(?:IMA|crash|error|fault|failure)\w*|"
    # "P/D with `num_speculative_tokens` removed ALSO IMAs"
    r"\bwith\s+[`'\"]?" + _SPEC + r"\w*[`'\"]?\s+(?:removed|disabled|off|turned off)\b[^.\n]{0,20}?\b(?:still|also)\s+"
    r"(?:crash|fail|fault|die|hang|IMA)\w*|"
    r"\b(?:still|same|also)\s+(?:crash\w*|fail\w*|fault\w*|assert\w*|error)\b[^.\n]{0,30}?\b(?:without|with no)\s+"
    + _SPEC + r"\b|"
    # "Same behaviour without --speculative-config"
    # (not "Same thing without EAGLE3 is smooth (no cliff)": the same workload, fine without the drafts)
    r"\bsame (?:\w+ )?(?:behaviou?r|result|problem|issue|output|garbage|gibberish|thing|loops?)s?\s+(?:without|with no|w/o)\s+"
    r"(?:the\s+)?" + _SPEC + r"(?!\w*[`'\"]?\s+(?:is|was|are|were|runs?|looks?)\s+(?:\w+\s+)?(?:smooth|fast|" + _FINE_WORD + r"))|"
    r"\bnum_spec(?:ulative)?_tokens\s*[=:]?\s*0\b[^.\n]{0,40}?\b(?:same|still)\s+(?:\w+\s+)?(?:crash|error|fault|assert)|"
    # ("drafting is not the problem" says the drafts' quality is fine, not that speculative decoding is out)
    r"\b(?:MTP|EAGLE-?3?|[Ee]agle-?3?|spec(?:ulative)?[ -]decod\w*|ngram|speculation)\s+(?:is|are|was|were)(?: clearly)? not "
    r"the (?:trigger|cause|culprit|problem)\b|"
    # "Without MTP the same.", "turning both off doesn't fix it"
    r"\bwithout\s+(?:the\s+)?" + _SPEC + r"\b[`'\"]?,?\s+(?:the\s+)?same(?=\s*[.,;:!)]|\s*$)|"
    r"\bturning (?:both|them|all|those) off (?:doesn'?t|does not|didn'?t|did not) (?:fix|help|change)\b|"
    # "So MTP isn't it.", "fp8 kv / MTP don't matter"
    r"\b(?:MTP|EAGLE\w*|[Ee]agle\w*|spec\w*(?: decod\w*)?|drafts?|ngram|suffix decoding)\s+(?:isn'?t|is not|wasn'?t|was not) "
    r"(?:it|the (?:problem|cause|culprit|issue))\b|"
    r"\b(?:MTP|EAGLE\w*|[Ee]agle\w*|spec\w*(?: decod\w*)?|drafts?|ngram)\s+(?:don'?t|doesn'?t|do not|does not|didn'?t|did not) "
    r"(?:matter|change anything|make a difference)\b|"
    # "So it's our rollout, not MTP"
    r"\bit'?s (?:our|the|a|their|my) [\w -]{2,30}, not (?:the )?(?:MTP|EAGLE\w*|[Ee]agle\w*|spec\w*(?: decod\w*)?|drafts?|"
    r"ngram|suffix decoding|speculation)\b", re.I)
# the prefix cache hitting once the drafts are off: "same server without --speculative-config shows ~70% hit rate",
# "with MTP disabled the hit rate is 65%" -- prefix caching is on, and the drafts are what stops the hits
_HITS_WITHOUT_SPEC = re.compile(
    r"\b(?:without|no|w/o|disabl\w*|turn\w* off|remov\w*|dropp\w*)\s+(?:the\s+)?[`'\"]?(?:--)?" + _SPEC +
    r"\b(?:\s+(?:disabled|off|removed))?[^.\n]{0,60}?~?[1-9]\d?(?:\.\d+)?\s*%\s*(?:prefix[- ]cache\s+)?hit(?:[- ]rate)?\b|"
    r"\b" + _SPEC + r"\s+(?:off|disabled|removed)\b[^.\n]{0,40}?\bhit[- ]rate\b[^.\n]{0,20}?~?[1-9]\d?(?:\.\d+)?\s*%|"
    # "before (no spec) the hit rate was ~71%"
    r"\(\s*(?:no|without|w/o)\s+" + _SPEC + r"\s*\)[^.\n]{0,40}?\bhit[- ]rate\b[^.\n]{0,20}?~?[1-9]\d?(?:\.\d+)?\s*%", re.I)
# the same A/B test in the languages reports come in: the drafts off, the fault (or the garbled output) still there --
# "去掉 --speculative-config：还是乱码", "MTPを無効にしても文字化け", "ohne MTP immer noch Müll", "sin MTP sigue igual",
# "sans MTP toujours pareil", "MTP를 꺼도 여전히 깨짐"
# the drafts' names a reporter toggles (the flag, the methods), and the same in the report languages' words
DRAFTS_WORDS = r"(?:--)?speculative[-_]config|MTP|mtp|EAGLE\w*|[Ee]agle\w*|ngram|spec\w*|drafts?"
_DRAFTS_I18N = (DRAFTS_WORDS + r"|\u6295\u673a\w*|"
                r"\u63a8\u6d4b\u89e3\u7801|\u6295\u6a5f\u7684\w*|\uc2a4\ud399\w*|\ucd94\uce21\s*\ub514\ucf54\ub529|"
                r"spekulativ\w*(?: Dekodierung)?|decodifica\w* especulativa|d[\u00e9e]codage sp[\u00e9e]culatif")
# "without" and "still (the same)" in more report languages (Italian, Dutch, Polish, Czech, Indonesian, Swedish,
# Russian / Ukrainian, Vietnamese, Turkish)
WITHOUT_WORDS = (r"\b(?:senza|zonder|bez|tanpa|utan|\u0431\u0435\u0437|t\u1eaft|kh\u00f4ng (?:c\u00f3|d\u00f9ng|b\u1eadt))")
STILL_WORDS = (r"\b(?:ancora|comunque|nog steeds|nog altijd|hetzelfde|nadal|wci\u0105\u017c|to samo|po\u0159\u00e1d|"
               r"st\u00e1le|stejn\w*|masih|tetap|sama saja|fortfarande|samma|v\u1eabn|h\u00e2l\u00e2|hala|yine|ayn\u0131)\b|"
               r"\u0432\u0441[\u0451\u0435] \u0440\u0430\u0432\u043d\u043e|\u043f\u043e-\u043f\u0440\u0435\u0436\u043d\u0435\u043c\u0443|"
               r"\u0442\u043e\u0436\u0435|\u0432\u0441\u0435 \u043e\u0434\u043d\u043e|\u0434\u043e\u0441\u0456")
# ... and "it works / starts / runs normally" in them
WORKS_WORDS = (r"\b(?:funziona|parte|werkt|draait|dzia\u0142a|funguje|b\u011b\u017e\u00ed|jalan|berjalan|lancar|fungerar|"
               r"startar|ch\u1ea1y|b\u00ecnh th\u01b0\u1eddng|\u1ed5n|sorunsuz|\u00e7al\u0131\u015f\u0131yor|normal\w*)\b|"
               r"\u0440\u0430\u0431\u043e\u0442\u0430\u0435\u0442|\u0437\u0430\u043f\u0443\u0441\u043a\u0430\u0435\u0442\u0441\u044f|"
               r"\u043f\u0440\u0430\u0446\u044e\u0454")
_FAULTS_WITHOUT_SPEC_I18N = re.compile(
    r"(?:\u53bb\u6389|\u5173\u6389|\u5173\u95ed|\u7981\u7528|\u4e0d\u5f00|\u4e0d\u7528|\u4e0d\u52a0|\u53bb\u9664)\s*[`'\"]?(?:" + _DRAFTS_I18N
    + r")[`'\"]?[^\u3002\n]{0,20}?(?:\u8fd8\u662f|\u4f9d\u7136|\u4ecd\u7136|\u7167\u6837|\u4e5f)(?:\u4f1a)?"
    r"(?:\u4e71\u7801|\u5d29\u6e83?|\u62a5\u9519|\u51fa\u9519|\u6302|\u4e00\u6837)|"
    r"(?:" + _DRAFTS_I18N + r")\s*(?:\u3092)?(?:\u7121\u52b9|\u30aa\u30d5|\u5916)[^\u3002\n]{0,20}?(?:\u3067\u3082|\u3066\u3082)"
    r"[^\u3002\n]{0,15}?(?:\u6587\u5b57\u5316\u3051|\u30af\u30e9\u30c3\u30b7\u30e5|\u30a8\u30e9\u30fc|\u843d\u3061|\u540c\u3058)|"
    r"\b(?:ohne|sin|sem|sans) (?:" + _DRAFTS_I18N + r")\b[^.\n]{0,40}?\b(?:immer noch|weiterhin|genauso|sigue|siguen|"
    r"todav[\u00edi]a|continua|continuam|ainda|toujours|encore|pareil|igual)\b|"
    r"(?:" + _DRAFTS_I18N + r")\s*(?:\uc744|\ub97c)?\s*(?:\ub044|\ube7c|\ub048|\ube80|\uc81c\uac70|\ube44\ud65c\uc131)[^.\n]{0,20}?"
    r"(?:\uc5ec\uc804\ud788|\ub611\uac19|\ub9c8\ucc2c\uac00\uc9c0)|"
    # Italian, Dutch, Polish, Czech, Indonesian, Swedish, Russian / Ukrainian, Vietnamese, Turkish: "senza MTP ancora
    # crasha", "zonder MTP nog steeds", "bez MTP nadal", "tanpa MTP masih", "utan MTP fortfarande", "без MTP всё равно",
    # "tắt MTP vẫn lỗi", "MTP olmadan da aynı hata"
    # (not "still works": "zonder MTP werkt het nog steeds", "tanpa MTP tetap lancar")
    r"(?:" + WITHOUT_WORDS + r")\s*[`'\"]?(?:" + _DRAFTS_I18N + r")\b(?:(?!" + WORKS_WORDS + r")[^.\n]){0,40}?(?:"
    + STILL_WORDS + r")(?!\s*(?:" + WORKS_WORDS + r"))|"
    r"(?:" + _DRAFTS_I18N + r")\S*\s+(?:olmadan|kapat\w*|kapal\u0131\w*)(?:(?!" + WORKS_WORDS + r")[^.\n]){0,30}?(?:"
    + STILL_WORDS + r")(?!\s*(?:" + WORKS_WORDS + r"))", re.I)
# the symptom the same either way of a toggle: "(spec on or off, prefix caching on or off)", "with or without MTP",
# "regardless of prefix caching" -- the toggle is not its trigger (not asked: "does it matter with or without MTP?",
# "try with and without MTP")
_PC = r"(?:[`'\"]?(?:--(?:no-)?enable-)?(?:automatic\s+)?(?:prefix[- _]?caching|apc)[`'\"]?)"


def _either_way(toggle: str) -> re.Pattern[str]:
    return re.compile(r"\b" + toggle + r"\s+(?:on\s+or\s+off|off\s+or\s+on|enabled\s+or\s+(?:disabled|not))\b|"
                      r"\b(?:both\s+)?with\s+(?:and|or)\s+without\s+(?:the\s+)?" + toggle + r"|"
                      r"\b(?:regardless\s+of|independent\s+of|irrespective\s+of)\s+(?:whether\s+)?(?:the\s+)?" + toggle +
                      r"|\bwhether\s+(?:the\s+)?" + toggle + r"\s+(?:is|was)\s+(?:on|enabled)\s+or\s+(?:off|not|disabled)\b",
                      re.I)


_SPEC_EITHER_WAY = _either_way(_SPEC)
_PC_EITHER_WAY = _either_way(_PC)
# a sentence that asks for the test instead of telling it
_ASKED = re.compile(r"\?|\b(?:try|test|check|compare|please|could you|can you|would)\b", re.I)


# a switch outside the families that made it right, told in Chinese: "换成官方 FP8 版 + 同样的 MTP 配置：完全正常"
_FIXED_BY_SWITCH_ZH = re.compile(r"(?:\u6362\u6210|\u6362\u7528|\u6539\u7528|\u5207\u6362\u5230|\u6362\u4e86)"
                                 r"([^\u3002\n\uff1a:]{1,100}?)[\uff1a:\uff0c,]\s*(?:\u5b8c\u5168\u6b63\u5e38|"
                                 r"\u4e00\u5207\u6b63\u5e38|\u6b63\u5e38\u4e86|\u5c31\u597d\u4e86|\u6ca1\u95ee\u9898)")
# what the Chinese switch kept as it was: "同样的 MTP 配置" (the same MTP config), a parenthesis
_KEPT_ZH = re.compile(r"\u540c\u6837\u7684\s*\S+\s*\u914d\u7f6e|\uff08[^\uff09]*\uff09|\([^)]*\)")
# words of which every match of _FAULTS_WITHOUT_SPEC / _ONE_HOST / _FAULT_GONE or _FINE_WITHOUT holds one (lower case)
_SPEC_HINTS = ("mtp", "eagle", "spec", "draft", "ngram", "suffix", "medusa", "\u6295\u673a", "\u63a8\u6d4b", "\u6295\u6a5f", "\uc2a4\ud399",
               "\ucd94\uce21", "spekul", "especul", "sp\u00e9cul")
_ONE_HOST_HINTS = ("only ", "never on", "always", "same container", "same image")
_FIXED_HINTS = ("no ", "run", "clean", "stable", "fine", "fixed", "gone", "ok", "normal", "good", "correct", "hit", "show", "work")
# the reporter tying a fault to one host or GPU: "only on this host", "never on the other three nodes", "Always GPU 5"
_ONE_HOST = re.compile(r"\bonly (?:on|with) (?:this|one|that|a single|the one) (?:host|node|machine|box|server|GPU|card)\b|"
                       r"\bnever on the other (?:\w+ )?(?:nodes?|hosts?|machines?|boxes|servers?|GPUs?|cards?)\b|"
                       r"\balways (?:on )?(?:the same )?GPU ?#?\d+\b|\bsame (?:container|image)(?: and flags)? on (?:our |the )?"
                       r"other\b", re.I)
# what made the fault go away, told by the reporter ("--disable-custom-all-reduce -> no more crashes (ran 20h)",
# "without `--enable-eplb`: runs for days", "After updating the driver and reseating, 5 days clean")
_FAULT_GONE = re.compile(r"(?:->|=>|\u2192|:)\s*(?:no more (?:crash\w*|errors?|faults?|IMAs?|hangs?)|no (?:crash|fault|IMA|hang)\w*|"
                         r"runs? (?:fine|for (?:hours|days)|clean|stable)|(?:ran )?\d+\s?(?:h|hours?|days?) (?:clean|stable|fine)|"
                         r"(?:problem |crash |it's )?(?:fixed|gone)|stable|(?:correct|normal|clean) (?:output|answers?|"
                         r"results?|text))\b|"
                         # "| MTP on + --disable-custom-all-reduce | clean 3/3 (2h) |"
                         r"(?:->|=>|\u2192|:)\s*\**clean \d+\s*/\s*\d+\b|"
                         # "-O0 -> ok" (an arrow: "maintainer: OK" in a chat is no outcome)
                         r"(?:->|=>|\u2192)\s*(?:ok|okay)\b(?!\s*\?)|"
                         r",\s*(?:ran )?\d+\s?(?:h|hours?|days?) (?:clean|stable)\b|"
                         # "Moved it to the end of the user turn -> hit rate 68%"
                         r"(?:->|=>|\u2192)\s*(?:the )?(?:prefix[- ]cache )?hit[- ]rate (?:is |of |goes to |jumps to |back to |up to )?"
                         r"~?[1-9]\d(?:\.\d+)?\s*%|"
                         # "Removing min_tokens -> the model stops normally at EOS (...), no repetition"
                         r"(?:->|=>|\u2192)[^.\n]{0,80}?\b(?:no (?:more )?(?:repetition|repeats|garbage|gibberish|loops?|looping|"
                         r"mojibake)|(?:stops?|ends?|answers?|behaves?) normally)\b", re.I)
# ... or told the other way round: "the decode node alone (no connector, same MTP config) is fine for hours"
_FINE_WITHOUT = re.compile(r"\b(?:no|without)\s+([\w`'\- ]{2,40}?)[,)][^.\n]{0,40}?\b(?:is|was|runs?|ran|stays?|stayed)\s+"
                           r"(?:fine|stable|clean|ok)\b", re.I)
# ... or told as a run that went right: "With the model's bundled template everything is normal"
# "Without --reasoning-parser every answer shows up"
_FINE_WITH = re.compile(r"\b(with|without) (?:the |our |its |a )?([\w'`.\- ]{2,40}?),? (?:everything|it|all|the output|outputs|"
                        r"the answers?|answers|every answer)"
                        r" (?:(?:is|are|was|were|works?|worked|looks?) (?:\w+ )?(?:normal|fine|correct|ok|okay|good|clean)|"
                        r"works?|worked|shows? up|showed up|comes? through|appears?)\b", re.I)
# a markdown table row of an A/B test: "| `--disable-custom-all-reduce` | no crash (3/3) |" reads as "toggle: outcome"
_TABLE_ROW = re.compile(r"^\s*\|([^|]{2,80})\|([^|]{2,80})\|")
# what the reporter kept as it was beside a toggle: "(keep MTP)", "+ mtp on", "with MTP still enabled"
KEPT = re.compile(r"\([^)]*\)|[+&,]?\s*(?:with |and )?(?:mtp|spec\w*|drafts?|ngram|eagle\w*|prefix caching|apc)\s+"
                   r"(?:still )?(?:on|enabled|kept)\b|\bkeep(?:ing)? (?:the )?\w+|"
                   # a row of an A/B list that opens with the set-up every row shares ("ngram, -O0 -> ok")
                   r"^\s*(?:mtp|ngram|eagle\w*|spec\w*|drafts?)(?:\s+\d+(?:\s+tokens?)?)?\s*,", re.I)
# a fault word in an A/B table's outcome cell, and a clean outcome
_FAULT_CELL = re.compile(r"\b(?:IMA|crash\w*|fail\w*|fault\w*|error|assert\w*|dies|died|hangs?|hung|Xid|garbage|garbled|"
                         r"gibberish|corrupt\w*)\b", re.I)
_CLEAN_CELL = re.compile(r"\b(?:clean|fine|stable|ok|no (?:crash|fault|IMA|error)\w*|works?)\b", re.I)
# a count of runs in an outcome cell: "21/40", "0 / 200"
_RUN_COUNT = re.compile(r"(\d+)\s*/\s*\d+(?:\s*\w+)?")
# the outcome after an A/B list row's last separator, and "0/200" (none of the runs went wrong)
_LIST_OUTCOME = re.compile(r"(?:\s:\s|->|=>|\u2192)\s*([^:>\u2192]{1,40}?)\s*$")
_NONE_OF = re.compile(r"^\**0\s*/\s*\d+\b")


def clean_row(text: str) -> bool:
    """A row of an A/B table (``| off (--no-enable-prefix-caching) | 3 | fine |``) whose outcome cell is clean: the
    settings in it are a trial that went well, not the failing set-up."""
    if not text.lstrip().startswith("|"):
        # ... or a row of an A/B list: "MTP on + --no-enable-prefix-caching : 0/200", "--enforce-eager -> fine"
        tail = _LIST_OUTCOME.search(text)
        return bool(tail) and (bool(_CLEAN_CELL.search(tail.group(1))) or bool(_NONE_OF.match(tail.group(1)))) \
            and not _FAULT_CELL.search(tail.group(1).replace("no ", "no_"))
    cells = [c.strip(" `*") for c in text.strip().strip("|").split("|")]
    return len(cells) >= 2 and bool(_CLEAN_CELL.search(cells[-1])) and not _FAULT_CELL.search(
        cells[-1].replace("no ", "no_"))


_OFF_CELL = re.compile(r"^(?:off|no|none|0|false|disabled|-|n/?a)$", re.I)
# an A/B table's columns for the drafts (their depth beside them: "MTP (k=2)") and for prefix caching, with what a
# faulting run with that column off tells
_OFF_COLUMNS = ((re.compile(_SPEC + r"(?:\s*\([^)]{0,20}\))?", re.I), "faults_without_spec_prose"),
                (re.compile(r"(?:automatic )?prefix[ -]caching|apc", re.I), "persists_without_pc_prose"))
# a toggle that belongs to the hybrid / spec-decode classes: what it fixes says nothing against them
# (a switch to an attention-only model -- "same command with Llama-3.1-8B" -- takes the hybrid layers out too)
# (a cache of whole responses in front of the engine -- a gateway's semantic cache -- is none of vLLM's)
FAMILY_TOGGLE = re.compile(r"prefix|\bapc\b|(?<!response )(?<!semantic )(?<!http )(?<!redis )(?<!gateway )cach|mtp|spec|draft|eagle|ngram|medusa|suffix|cuda ?graph|cudagraph|eager|mamba|"
                            r"block|max[-_ ]num|chunked|async|gdn|flashinfer(?!_?sampler)|flashmla|attention|backend|kv|"
                            r"llama|mistral|gemma|dense|linear", re.I)
# a change of the load, not of a setting: "single user: fine", "only decode traffic: fine", "k=1: fine" -- fewer
# requests, one kind of rows or fewer drafts is what the mixed-batch and kernel-limit classes predict, no cause elsewhere
WORKLOAD_TOGGLE = re.compile(r"\b(?:single|one|1) (?:user|client|request|stream|conversation)s?\b|\bonly\b|\btraffic\b|"
                              r"\bload\b|\bk\s*=|\bconcurren\w*|\bbatch\b|\bctx\b|\bcontext\b|\bprompts?\b|"
                              r"\bwithout (?:\w+ )?requests\b|\bsmaller model\b|\b(?:attempt|comment|run)\s*#?\d|"
                              # a numbered request of a repro ("Request 1 -> normal answer", "turn 2: garbage")
                              r"\b(?:request|req|turn|try|case|sample|query|question)\s*#?\d+\b|"
                              r"\b(?:first|second|third|1st|2nd|3rd|next|later) (?:request|turn|call|query)\b", re.I)
# an A/B table's run-number column, whose value changes every row
_RUN_COLUMN = re.compile(r"^(?:#|no\.?|n|nr|run|id|test|case|attempt|try)$", re.I)

# the failure reproduced without vLLM ("our AWQ in transformers (without vLLM): 7 of 20 with the same '!!!!'", "same
# garbage in plain HF transformers", "sglang does the same"): no vLLM code path is the cause
_OTHER_ENGINE = re.compile(r"\b(?:transformers|sglang|llama\.cpp|TGI|TensorRT-LLM|trt-llm)\b|"
                           r"(?:without|w/o|outside|no|\u0431\u0435\u0437) vLLM\b", re.I)
_SAME_THERE = re.compile(r"\bsame (?:\w+ )?(?:garbage|output|error|crash|problem|issue|results?|behaviou?r|thing|failure|fault|"
                         r"nonsense|gibberish|junk|IMA|symptoms?|mojibake|text|symbols|loops?)\b|\balso (?:\w+ )?(?:garbage|broken|wrong|crash\w*|fail\w*|bad)\b|"
                         r"\b(?:garbage|broken|wrong|crashes) (?:too|as well)\b|\breproduces?\b|\bidentical (?:garbage|output)\b|"
                         # the same outcome in the report languages: "тот же мусор", "同样乱码", "也一样", "同じ症状",
                         # "derselbe Fehler", "lixo igual", "mismo error", "même problème"
                         r"\u0442\u043e\u0442 \u0436\u0435|\u0442\u043e \u0436\u0435|\u0442\u0430\u043a\u043e\u0439 \u0436\u0435|"
                         r"\u540c\u6837(?:\u4e71\u7801|\u7684\u95ee\u9898|\u62a5\u9519)|\u4e5f(?:\u4e71\u7801|\u4e00\u6837)|"
                         r"\u540c\u3058(?:\u75c7\u72b6|\u554f\u984c|\u30a8\u30e9\u30fc|\u7d50\u679c)|"
                         r"\b(?:dasselbe|derselbe|dieselbe|gleiche[nr]?)\b|\bigual\b|\bmism[oa]s? (?:error|problema|resultado|basura)\b|"
                         r"\bm\u00eame (?:probl\u00e8me|erreur|r\u00e9sultat|charabia)\b|\bmesm[oa] (?:erro|problema|resultado|lixo)\b",
                         re.I)
_NOT_THERE = re.compile(r"\b(?:fine|correct(?:ly)?|works?|clean|ok|okay|normal|no (?:garbage|issue|problem))\b|"
                        r"(?<![\d.])0\s*/\s*\d+", re.I)  # ("0 / 200": none of the runs broke)


def _clause_after(text: str, start: int) -> str:
    """The rest of the clause after ``start`` (to the sentence's end, 100 characters at most)."""
    return re.split(r"[.!?\u3002](?:\s|$)", text[start:start + 100], maxsplit=1)[0]


class ABTestReader:
    """Reads one log's A/B tests into ``facts.startup`` (``faults_without_spec_prose``, ``persists_without_pc_prose``,
    ``one_host_prose``, ``other_fix_prose``) with their lines in ``facts.lines``; the first words of each win."""

    def __init__(self, facts: LogFacts) -> None:
        self.facts = facts
        self._table: dict | None = None  # the A/B table being read (header, first run, last line)

    def _table_row(self, text: str, line: Line) -> bool:
        """A row of an A/B table with a header (``| MTP | prefix caching | EP | result |``): a run with the drafts' column
        off that still faults, and a run that is clean where a column outside the classes changed from the first run.
        True when the row belongs to such a table (read here, not as a two-cell row)."""
        cells = [c.strip(" `*") for c in text.strip().strip("|").split("|")]
        if len(cells) < 3 or all(set(c) <= set("-: ") for c in cells):
            return len(cells) >= 3
        table = self._table
        if table is None or line.lineno != table["last"] + 1 and line.lineno != table["last"] + 2:
            self._table = {"header": cells, "first": None, "last": line.lineno}
            return True
        table["last"] = line.lineno
        header, outcome = table["header"], cells[-1]
        if len(cells) != len(header):
            return True
        if table["first"] is None:
            table["first"] = cells
        st = self.facts.startup
        # (an outcome column named for the fault counts the runs that showed it: "| garbage |" over "21/40", "0/40")
        count = _RUN_COUNT.fullmatch(outcome) if _FAULT_CELL.search(header[-1]) else None
        faulty = bool(_FAULT_CELL.search(outcome)) or bool(count and int(count.group(1)) > 0)
        clean = bool(count and int(count.group(1)) == 0) or bool(
            _CLEAN_CELL.search(outcome) and not _FAULT_CELL.search(outcome.replace("no ", "no_")))
        if count:
            outcome = f"{header[-1]} {outcome}"
        for name, value, base in zip(header[:-1], cells[:-1], table["first"][:-1]):
            if _OFF_CELL.match(value) and faulty:
                for column, fact in _OFF_COLUMNS:
                    if column.fullmatch(name) and fact not in st:
                        st[fact] = f"{name} {value}: {outcome}"
                        self.facts.lines[fact] = (line.lineno, text.strip()[:500])
            # (a clean outcome: "no crash" is no fault word once joined to its "no")
            if value != base and clean \
                    and not FAMILY_TOGGLE.search(name) and not _RUN_COLUMN.match(name) and "other_fix_prose" not in st:
                st["other_fix_prose"] = f"{name} {value}: {outcome}"
                self.facts.lines["other_fix_prose"] = (line.lineno, text.strip()[:500])
        return True

    def read(self, wide: str, text: str, line: Line) -> None:
        """The reporter's A/B tests of a fault: that it persists without the drafts, that it stays on one host, and a
        toggle outside the hybrid/spec-decode classes that made it go away (read on the line itself: the toggle is
        what precedes its outcome there)."""
        if text.lstrip().startswith("|") and self._table_row(text, line):
            return
        row = _TABLE_ROW.match(text) if "|" in text else None
        if row:
            text = wide = f"{row.group(1).strip()}: {row.group(2).strip()}"
        # (each regex only after a word every one of its matches holds: these run on every prose line)
        low = wide.lower()
        if any(w in low for w in _SPEC_HINTS):
            if "hit" in low:
                self._first_words("hits_without_spec_prose", _HITS_WITHOUT_SPEC, wide, line)
            self._first_words("faults_without_spec_prose", _FAULTS_WITHOUT_SPEC, wide, line)
            self._first_words("faults_without_spec_prose", _FAULTS_WITHOUT_SPEC_I18N, wide, line)
            self._first_words("faults_without_spec_prose", _SPEC_OFF_STILL, wide, line)
            self._first_words("no_spec_prose", _NO_SPEC_RUN, wide, line)
        if any(w in low for w in _ONE_HOST_HINTS):
            self._first_words("one_host_prose", _ONE_HOST, wide, line)
        if "refix" in low or "apc" in low:
            self._first_words("persists_without_pc_prose", _PERSISTS_WITHOUT_PC, wide, line)
        if "eager" in low:
            self._first_words("persists_eager_prose", _PERSISTS_EAGER, wide, line)
        if (" and " in low or "&" in low or "+" in low) and (m := _BOTH_OFF_PERSISTS.search(wide)):
            for key in ("faults_without_spec_prose", "persists_without_pc_prose"):
                if key not in self.facts.startup:
                    self.facts.startup[key] = m.group(0).strip()
                    self.facts.lines[key] = (line.lineno, line.text.strip()[:500])
        if " or " in low or "regardless" in low or "independent" in low or "irrespective" in low:
            self._either_way(wide, line)
        if "other_engine_prose" not in self.facts.startup and len(wide) < 600 and (m := _OTHER_ENGINE.search(wide)) \
                and (same := _clause_after(wide, m.end())) and _SAME_THERE.search(same) and not _NOT_THERE.search(same):
            self.facts.startup["other_engine_prose"] = wide[max(0, m.start() - 40):m.end() + 80].strip()
            self.facts.lines["other_engine_prose"] = (line.lineno, line.text.strip()[:500])
        low = text.lower()
        if "other_fix_prose" not in self.facts.startup and (zh := _FIXED_BY_SWITCH_ZH.search(text)):
            switched = _KEPT_ZH.sub("", zh.group(1)).strip(" +")
            if switched and not FAMILY_TOGGLE.search(switched):
                self.facts.startup["other_fix_prose"] = zh.group(0).strip()
                self.facts.lines["other_fix_prose"] = (line.lineno, line.text.strip()[:500])
        if "other_fix_prose" in self.facts.startup or not any(w in low for w in _FIXED_HINTS):
            return
        m = _FAULT_GONE.search(text)
        toggle = text[:m.start()].rsplit(". ", 1)[-1].strip(" -*") if m else None
        if m is None and (m := _FINE_WITHOUT.search(text)):
            toggle = "no " + m.group(1).strip()
        elif m is None and (m := _FINE_WITH.search(text)):
            toggle = f"{m.group(1).lower()} {m.group(2).strip()}"
        # (what the reporter kept as it was is no toggle: "Disabling EPLB (keep MTP)")
        changed = KEPT.sub("", toggle) if m and toggle else ""
        if m and toggle and len(toggle) < 120 and not FAMILY_TOGGLE.search(changed) \
                and not WORKLOAD_TOGGLE.search(changed):
            self.facts.startup["other_fix_prose"] = f"{toggle} {m.group(0).strip()}" if toggle.lower() not in m.group(0).lower() \
                else m.group(0).strip()
            self.facts.lines["other_fix_prose"] = (line.lineno, line.text.strip()[:500])

    def _either_way(self, wide: str, line: Line) -> None:
        """The symptom the same with the toggle on and off (read per sentence: a question elsewhere on the line
        does not hide it)."""
        for sentence in re.split(r"(?<=[.!;])\s+", wide):
            if not _ASKED.search(sentence):
                self._first_words("faults_without_spec_prose", _SPEC_EITHER_WAY, sentence, line)
                self._first_words("persists_without_pc_prose", _PC_EITHER_WAY, sentence, line)

    def _first_words(self, name: str, rx: re.Pattern[str], text: str, line: Line) -> None:
        first_words(self.facts, name, rx, text, line)


def first_words(facts: LogFacts, name: str, rx: re.Pattern[str], text: str, line: Line) -> None:
    """The first match of the reporter's words for ``name``, with its line as evidence (later lines keep it)."""
    if name not in facts.startup and (m := rx.search(text)):
        facts.startup[name] = " ".join(m.group(0).split())  # (a column's padding is no part of the words)
        facts.lines[name] = (line.lineno, text.strip()[:500])

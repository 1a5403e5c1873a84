"""The words reporters use for a symptom that raised no error -- wrong output, answers cut short, slowness, lost KV
capacity, falling draft acceptance, a hang -- in English and in the languages reports come in. Data only: the
prose reader decides which line each one is searched on."""

from __future__ import annotations

import re

# the reporter's verdict on the output where a word boundary cannot open it (a sign, a quote, a script without
# spaces): chat shorthand, a quoted output that repeats one word, the same verdict in the languages reports come in
WRONG_OUTPUT_ANYWHERE = (
    # chat shorthand: "qwen3next + mtp2 + apc = garbage", "just garbage", "turns into soup", a quoted output of one
    # word over and over ("the the the")
    r"(?:=|->|\u2192)\s*(?:garbage|gibberish|nonsense|junk|soup)\b|\bjust (?:garbage|gibberish|junk|nonsense)\b|"
    r"\b(?:turns?|turning|turned) into (?:word )?soup\b|\b(?:unicode|token|word) soup\b|[\"'\u201c](\w+)(?: \1){2,}\b|"
    # the same verdict in the languages reports come in: garbled / nonsense / corrupted output
    r"\u4e71\u7801|\u80e1\u8a00\u4e71\u8bed|\u4e71\u4e03\u516b\u7cdf|\u6587\u5b57\u5316\u3051|\u610f\u5473\u4e0d\u660e|"
    r"\u652f\u96e2\u6ec5\u88c2|\u5fdc\u7b54\w{0,6}\u5d29\u308c|\u51fa\u529b\w{0,6}(?:\u5d29\u308c|\u58ca\u308c)|"
    r"\u540c\u3058(?:\u5358\u8a9e|\u8a00\u8449|\u6587)\u306e\u7e70\u308a\u8fd4\u3057|\u8f93\u51fa\u91cd\u590d|\u91cd\u590d\u8f93\u51fa|"
    r"\uac19\uc740 (?:\ub2e8\uc5b4|\ub9d0)(?:\uac00|\uc774|\ub97c|\uc744)? \ubc18\ubcf5|\ud6a1\uc124\uc218\uc124|\uae68\uc9c4 (?:\ucd9c\ub825|\uc751\ub2f5)|"
    r"\bvir(?:a|ou) lixo\b|\b(?:sa[ií]|saem|sale|salen|respostas?|respuestas?|sa[ií]da) (?:\w+ )?"
    r"corromp\w*|\b(?:sa[ií]|saem|sale|salen|respostas?|respuestas?|sa[ií]da) (?:\w+ )?corrupt[oa]s?\b|\btexto repetido\b|\bmezclad[oa]s? (?:\w+ )?de otras? (?:petici[oó]n|peticiones|solicitud\w*)\b|\bsin sentido\b|\bsem sentido\b|\b(?:es|son) basura\b|"
    r"\u043c\u0443\u0441\u043e\u0440|\u0431\u0440\u0435\u0434\w*|\bKauderwelsch\b|\bM\u00fcll\b|\bUnsinn\b|\bfalsche (?:Ausgaben?|Antworten?)\b|"
    r"\b(?:Ausgaben?|Antworten?) (?:ist|sind|wird|werden|war|waren) (?:\w+ ){0,2}(?:kaputt|falsch|unbrauchbar)\b|"

    # French, Italian, Dutch, Polish, Turkish, Vietnamese, Indonesian, Ukrainian, Hindi, Arabic
    r"\bcharabia\b|\bsorties? (?:\w+ )?corrompue?s?\b|\br\u00e9ponses? (?:\w+ )?incoh\u00e9rentes?\b|"
    r"\bn'importe quoi\b|\bsenza senso\b|\boutput (?:\w+ )?corrott[oi]\b|\bspazzatura\b|\bonzin\b|"
    r"\bmojibake\b|\b\u00e9rtelmetlen\w*|\bbe\u0142kot\w*|\b\u015bmieci\b|\banlams\u0131z\b|\bbozuk \u00e7\u0131kt\u0131|\bv\u00f4 ngh\u0129a\b|"
    # Korean: "출력이 깨짐" (the output breaks), "답변이 반복" (the answer repeats)
    r"(?:\ucd9c\ub825|\uc751\ub2f5|\ub2f5\ubcc0)(?:\uc774|\uac00|\uc740|\ub294)?\s*(?:\uae68|\ubc18\ubcf5)|"
    # Vietnamese: "bị rác" (garbage), "lặp từ" (repeated words), "câu trả lời hỏng" (broken answers)
    r"\bb\u1ecb r\u00e1c\b|\bl\u1eb7p t\u1eeb\b|\btr\u1ea3 l\u1eddi (?:b\u1ecb )?h\u1ecfng\b|"
    r"\b(?:output|jawaban) (?:\w+ )?(?:rusak|ngawur|kacau)\b|\u0441\u043c\u0456\u0442\u0442\u044f|"
    r"\u043c\u0430\u044f\u0447\u043d\w*|\u092c\u0915\u0935\u093e\u0938|\u0647\u0631\u0627\u0621")

# the reporter's words about wrong output with no error (a silent corruption): garbled / repeated text
WRONG_OUTPUT = re.compile(r"\b(?:garbled|gibberish|corrupt(?:ed|ion)?(?: ?(?:/|or|and) ?\w+)? (?:output|text|tokens|generations?|answers?)|"
                          # a title's verdict without its verb: "outputs corrupted only when ..."
                          r"\b(?:outputs?|completions?|answers?|responses?|generations?) (?:\w+ )?corrupted\b|"
                          # 'Outputs are "!!!!!!!!" or empty' (fp16 overflow's all-NaN logits sample token 0 again and again)
                          r"\b(?:outputs?|answers?|responses?|completions?|text) (?:are|is|become|becomes|turn into|come back as|"
                          r"show) [\"'\u201c`]?(?:!{4,}|\?{4,})|"
                          # greedy answers that change between runs: "the same eval prompt gives different answers between
                          # runs", "34/500 differ between runs"
                          r"\b(?:gives?|returns?|produces?|yields?|gets?) different (?:answers|outputs|results|completions|"
                          r"text|responses) (?:(?:between|across|from) (?:runs?|run to run|calls?)|(?:on )?(?:each|every) (?:run|call|time))\b|"
                          # "responses never stop, keep writing", "pages of repetition", "thousands of newlines"
                          r"\b(?:responses?|answers?|outputs?|generations?|replies) never (?:stop|end|finish)\b|"
                          r"\bpages of (?:repetition|repeated \w+|the same \w+)\b|"
                          r"\b(?:thousands|hundreds) of (?:newlines|blank lines|spaces|repeated \w+)\b|"
                          r"\b\d+\s*/\s*\d+ (?:\w+ )?differ (?:between|across) runs\b|"
                          # "Answers are short, odd, often start with 'assistant'", "repeat the user's question"
                          r"\b(?:answers?|outputs?|responses?|replies|completions?) (?:are|were|look|looks|seem) "
                          r"(?:\w+, ){0,3}(?:odd|weird|strange|bizarre)\b|\brepeat\w* (?:back )?the user'?s (?:question|prompt|message)\b|"
                          # "answers contain repeated phrases or switch language mid sentence"
                          r"repeated (?:phrases|words|sentences|paragraphs)\b|\bswitch(?:es|ing|ed)? languages?\b|"
                          # "ends with the same paragraph repeated 10-20 times", "low-quality, often off-topic answers"
                          r"\bsame (?:paragraph|sentence|phrase|line|word|answer|block)s? (?:is |gets |got )?repeated\b|"
                          r"\brepeats? the (?:same|first|last|previous|opening) (?:paragraph|sentence|block|answer|line|part)s?\b|"
                          # "answers turn to garbage on follow-up turns", "switches to mixed Chinese/English nonsense",
                          # "starts repeating fragments of an older turn"
                          # "the model starts producing repeated tokens / garbage like ..."
                          r"\b(?:produc\w+|generat\w+|emit\w*|spit\w* out|outputs?|returns?) (?:repeated tokens|garbage|"
                          r"gibberish|nonsense|junk)\b|"
                          # 'answers loop ("Sure! Sure! Sure! ...") after ~200 tokens'
                          r"\b(?:answers?|outputs?|responses?|replies|completions?|generations?) (?:start to |begin to )?"
                          r"loop(?:s|ing)?\b(?! (?:over|through|of|back to the client))|"
                          r"\b(?:answers?|outputs?|responses?|replies|text|generations?) (?:turns?|turned|turning|go|goes|went) "
                          r"(?:in)?to (?:garbage|gibberish|nonsense|junk)\b|"
                          r"\bswitch(?:es|ing|ed)? (?:in)?to (?:mixed |random )?[\w/ -]{0,30}?(?:nonsense|gibberish|garbage)\b|"
                          # the model's reasoning leaking into the answer: "a stray </think>"
                          r"\bstray [`'\"]?</think>|</think>[`'\"]? (?:in|shows up in|appears in|inside) (?:the )?(?:content|answer|output)\b|"
                          r"\brepeating (?:fragments|parts|pieces|bits) of (?:an? )?(?:older|earlier|previous|other)\b|"
                          # "Output loops ('The answer is the answer is ...')"
                          r"\b(?:output|outputs|answers?|generations?|the model|it) (?:loops|keeps looping|is looping|starts looping|"
                          r"gets stuck in a loop)\b|"
                          # "the 2nd turn sometimes starts with garbage like ...", "repeats the previous answer's tail"
                          r"\b(?:starts?|started|begins?|began|ends?|ended|comes? out) with (?:\w+ )?(?:garbage|gibberish|"
                          r"nonsense|junk)\b|\brepeats? (?:the )?(?:previous|last|earlier) (?:answer|turn|response|reply)\b|"
                          # "two distinct answers", "different answers for identical temperature=0 requests"
                          r"\b(?:two|three|four|several|multiple) (?:distinct|different) (?:answers|outputs|responses|completions)\b|"
                          r"\bdifferent (?:answers|outputs|responses|completions) (?:for|to|from) (?:the same|identical)\b|"
                          r"\blow[- ]quality(?:,? (?:\w+ )?[\w-]+)? (?:answers|outputs?|responses|completions|generations|replies)\b|"
                          r"\boff[- ]topic (?:answers|outputs?|responses|completions|replies)\b|"
                          r"\b(?:answers?|outputs?|responses?|completions?) (?:are|is|were|was) (?:\w+ )?low[- ]quality\b|"
                          # "answers in garbage (repeated tokens, mixed languages)": the verb before the verdict
                          r"\b(?:answers?|answered|answering|responds?|responded|responding|repl(?:y|ies|ied|ying)|"
                          r"comes? back|came back) in (?:\w+ )?(?:garbage|gibberish|nonsense|junk|word salad)\b|"
                          r"\bmix(?:es|ed|ing)? (?:up )?languages\b|\bmixed[- ]language (?:output|text|answers?|replies)\b|"
                          # "switch topic mid-answer", "copy numbers from another question": another request's state
                          r"\bswitch(?:es|ing|ed)? (?:the )?topics? (?:mid|in the middle)\b|"
                          r"\bcop(?:y|ies|ied|ying) (?:\w+ ){0,2}from (?:another|a different|other) (?:user'?s? )?"
                          r"(?:question|prompt|request|conversation)s?\b|"
                          # "it's only wrong when many requests are in flight"
                          r"\b(?:it'?s|it is|they'?re|they are|(?:answers?|outputs?) (?:is|are)) only wrong\b|"
                          # "sometimes answer nonsense", "the reply is unrelated to the conversation", "answers a
                          # different question": the answer belongs to another request's state
                          r"\b(?:answers?|answering|repl(?:y|ies)|responds?|says?) (?:\w+ )?nonsense\b|"
                          r"\bunrelated to the (?:conversation|prompt|question|input|request|context)\b|"
                          r"\banswers? (?:a |to a )?(?:different|another|wrong) (?:question|prompt|request)\b|"
                          # another request's text in an answer: "returns text that belongs to ANOTHER user's request",
                          # "fragments that answer a different, concurrent prompt", "cross-request contamination"
                          r"\b(?:belongs?|belonging|belonged) to (?:another|a different|other) (?:user'?s? )?(?:request|prompt|"
                          r"conversation|user)\b|\banswer(?:s|ing)? (?:a |to a )?different, (?:concurrent )?(?:prompt|request|"
                          r"question)\b|\bcross[- ]request (?:bleed\w*|leak\w*|contamination)\b|"
                          # structured output broken ("JSON output becomes invalid", "outputs fail json.loads") and
                          # generations falling into loops
                          r"\b(?:json|tool[- ]call|structured|outputs?)\b[^.;\n]{0,30}?\b(?:becomes?|became|is|are|turns?) "
                          r"(?:\w+ )?(?:invalid|malformed|broken|unparsable)\b|\bfail(?:s|ed)? json\.loads\b|"
                          r"\binvalid json\b|\b(?:fall|falls|fell|falling|get|gets|got|go|goes|went) into (?:\w+ )?loops?\b|"
                          r"repeated fragments|(?:output|text|answers?|generations?|completions?|responses?) (?:degrades?|degenerates?|"
                          r"become(?:s)? (?:garbage|gibberish|nonsense))|nonsense (?:output|text)|garbage (?:output|text)|"
                          r"(?:returns?|returning|turns? into|produces?|producing|outputs?|generates?|gives?|giving|spits? out) (?:\w+ )?"
                          r"(?:garbage|gibberish|nonsense|word salad)\b|word salad|broken (?:outputs?|text|answers?)|"
                          r"(?:comes?|came|coming) (?:back|out) as (?:garbage|gibberish|nonsense|junk)|"
                          # "answers are irrelevant on long documents"
                          r"\b(?:answers?|outputs?|responses?|replies) (?:are|is|were|was) (?:completely |totally |often )?"
                          r"(?:irrelevant|off-topic)\b|"
                          # "Some streamed answers contain the whole answer twice"
                          r"\b(?:answers?|outputs?|responses?|streams?|completions?) contains? (?:the whole|the same|the "
                          r"entire) (?:answer|text|response|output) twice\b|\b(?:duplicated|doubled) (?:answers?|outputs?|"
                          r"streams?|responses?)\b|"
                          # "answers differ run to run (~30% of items change)"
                          r"\b(?:answers?|outputs?|results?|completions?|responses?|generations?) (?:\w+ )?(?:differ|vary|"
                          r"change)s? (?:from )?(?:run to run|between runs|across runs|on every run)\b|"
                          # "gives a different answer every time even though we don't sample"
                          r"\b(?:gives?|returns?|produces?|gets?|got) (?:a )?different (?:answers?|outputs?|results?|completions?|"
                          r"responses?|text) (?:every time|each time|on every run|on each run|between runs|per run)\b|"
                          r"(?:repeated|random) junk|junk (?:output|text|tokens)|"
                          r"wrong (?:outputs?|tokens|answers|subwords|characters)|incorrect outputs?|"
                          # "keeps writing as the *user*", "very repetitive"
                          r"\b(?:keeps?|starts?) (?:writing|talking|speaking|answering) as (?:the )?\W?user\b|"
                          r"\b(?:very|extremely|highly|so|too) repetitive\b|"
                          # "pure garbage", "nondeterministic junk", "completions are garbage": greedy decoding that
                          # does not repeat itself is the same symptom
                          # an evaluation's quality gate: "the spec-decode accuracy gate fails", "gsm8k 0.7104 < baseline"
                          r"\b(?:accuracy|quality|eval\w*|regression)[- ](?:gate|check|threshold):? (?:fails?|failed|failing)\b|"
                          # "scores still ~2 points down", "determinism check ... FAIL"
                          r"\bscores? (?:are |is |still |stay )*~?\d+(?:\.\d+)? (?:points?|pts) (?:down|lower|worse)\b|"
                          r"\bdeterminism check\b[^\n]{0,80}?\bFAIL|"
                          # an eval diff's verdict on a row: "acc 0.962 0.713 -0.249 <-- FAIL (threshold -0.02)"
                          r"(?:<-+|=>)\s*FAIL(?:ED)?\b(?: \(threshold[^)\n]{0,20}\))?|"
                          # "FAIL (threshold -0.02)", "VERDICT: FAIL (gsm8k threshold -2.0)"
                          r"\bFAIL(?:ED)? \((?:[\w.%-]+ ){0,3}threshold[^)\n]{0,20}\)|"
                          # "vLLM answers are noticeably worse and change between runs", "different/worse answers"
                          r"\b(?:answers?|outputs?|responses?|completions?) (?:are|is|were|was|looks?) (?:\w+ )?worse\b|"
                          r"\b(?:different|worse)/(?:different|worse) (?:answers|outputs?|results)\b|"
                          r"\b(?:answers?|outputs?) (?:\w+ ){0,3}change between runs\b|"
                          # "accuracy drops only under concurrency", "the scores drop"
                          r"\b(?:accuracy|(?:eval )?scores) (?:drops?|dropped|falls?|fell|degrades?|degraded|regress\w*)\b|"
                          # "accuracy on the long-document eval dropped from 71% to 58%"
                          r"\b(?:accuracy|scores?|quality|pass@\d|exact[_ ]match|gsm8k|mmlu|evals?)\b[^.;\n]{0,60}?\b(?:dropped|drops|"
                          r"fell|falls|regressed|went down|decreased) (?:from )?~?\d+(?:\.\d+)?%? (?:to|->|\u2192) ~?\d+(?:\.\d+)?%?|"
                          r"\b(?:gsm8k|mmlu|humaneval|accuracy|acc|score|exact_match)\b[^\n;]{0,60}? (?:<|below) (?:the )?"
                          r"(?:baseline|threshold)\b|"
                          # greedy outputs that stop matching the run without drafts
                          r"\b(?:outputs?|text|generations?|completions?)\b[^.;\n]{0,30}?\b(?:diverges?|diverged|"
                          r"differ|differs|start(?:s|ed)? to (?:differ|diverge))\b (?:from|after|at)\b|"
                          r"\bdegrade[sd]? into (?:repetition|garbage|gibberish|nonsense|broken)\b|"
                          # "spec decoding changes greedy outputs", "emits the same 3-4 tokens until max_tokens",
                          # "values that parse but are obviously wrong"
                          r"\bchang(?:es|ed|ing) (?:the )?greedy (?:outputs?|results?|generations?|text)\b|"
                          r"\b(?:emits?|emitting|outputs?|generates?|keeps? (?:emitting|generating)) the same "
                          r"(?:[\d-]+ )?(?:tokens?|words?|phrases?)\b|\b(?:obviously|clearly|completely|plainly) wrong\b|"
                          # "logprobs / outputs go bad", "other sequences in the batch get corrupted"
                          r"\b(?:outputs?|answers?|logprobs|text|generations?|completions?|responses?) (?:go|goes|went|"
                          r"going|gone) bad\b|\b(?:sequences?|outputs?|requests?|answers?|generations?|completions?|"
                          r"responses?)\b[^.;\n]{0,40}? (?:get|gets|got|are|were|become|becomes) corrupted\b|"
                          # "identical for the first 50 tokens and then diverge", "different (worse) answers than
                          # without speculation", "long answers become repetitive / lose the thread"
                          r"\b(?:identical|the same|match(?:es|ing)?)\b[^.;\n]{0,60}?\b(?:and )?then (?:diverge|differ)\b|"
                          r"\b(?:different|worse)(?: \(\w+\))? (?:answers|outputs?|results|completions|text) (?:than|from|vs\.?) "
                          r"(?:without|with no|no) (?:spec|speculat|drafts?|ngram|mtp|eagle)\w*|"
                          r"\b(?:become|becomes|became|get|gets|got|turns?) repetitive\b|\blos(?:e|es|ing) the thread\b|"
                          # "returns different / degraded text", "flips to Chinese mid-sentence", "repeats a phrase",
                          # "the answer is sometimes subtly wrong"
                          r"\bdegraded (?:text|outputs?|answers?|responses?|generations?)\b|"
                          r"\b(?:answers?|outputs?|responses?|completions?) (?:get|gets|got|getting|become|becomes) (?:\w+ )?worse\b|"
                          r"\b(?:flips?|flipping|flipped|jumps?|jumped) (?:in)?to (?:chinese|english|another language|"
                          r"random (?:languages?|tokens))\b|\brepeats? (?:a|one|the same) (?:phrase|word|sentence|line)\b|"
                          # "the model starts repeating tokens / drifting into chinese"
                          r"\b(?:starts?|started|keeps?|kept|begins?|began) repeating (?:the same )?(?:tokens?|words?|"
                          r"phrases?|itself)\b|\b(?:drift(?:s|ed|ing)?|slid(?:es|ing)?) (?:in)?to (?:chinese|english|"
                          r"another language|random (?:languages?|tokens))\b|"
                          r"\b(?:answers?|outputs?|text|responses?|completions?) (?:is|are|was|were|gets?|becomes?) (?:\w+ ){0,2}"
                          r"wrong\b|"
                          r"(?:pure|complete|total|utter|nondeterministic|non-deterministic|random) "
                          r"(?:garbage|junk|gibberish|nonsense)|"
                          # "the model 'forgets' the earlier turns or answers an older question"
                          r"\banswers? (?:an? )?(?:older|earlier|previous|stale) (?:question|prompt|turn|message)\b|"
                          r"\bforgets[\"']? (?:the )?(?:earlier|previous|prior|first) (?:turns?|messages?|context)\b|"
                          # "gives weird answers through our gateway"
                          r"\b(?:weird|strange|odd|bizarre) (?:answers|words|outputs?|text|responses|characters)\b|"
                          # "prompts from our gateway get nonsense back"
                          r"\b(?:get|gets|got|getting|returns?|returned|gives?|gave) (?:\w+ )?(?:nonsense|garbage|gibberish|junk)"
                          r"(?: back)?\b|"
                          # "the same prompt 20 times with temperature=0 gets 3-4 different answers"
                          r"\b(?:gets?|got|returns?|gives?)? ?\d+(?:\s*-\s*\d+)? (?:distinct|different) (?:answers|outputs|"
                          r"responses|completions)\b|"
                          # "ngram spec decode is not deterministic", "~60% of answers different between runs"
                          r"\b(?:is|are|isn'?t|aren'?t|not|non-?)\s*(?:not )?deterministic\b|"
                          r"\b(?:answers?|outputs?|responses?) (?:are |were )?different (?:between|across|from) runs\b|"
                          # "answers come out with duplicated / missing words"
                          r"\b(?:duplicated|missing|dropped|skipped)(?: ?/ ?(?:duplicated|missing|dropped|skipped))? "
                          r"(?:words|tokens|sentences|characters)\b|"
                          # "gives noticeably worse answers than the hosted API"
                          r"\b(?:noticeably |much |significantly |clearly |far )?worse (?:answers|outputs|output quality|"
                          r"responses|completions)\b|"
                          # "broken Chinese characters", "replacement characters", a quoted U+FFFD ("在��天内")
                          r"\bbroken (?:chinese|japanese|korean|cjk|unicode|utf-?8|multi-?byte) (?:characters|chars|text)\b|"
                          r"\breplacement (?:characters|chars)\b|\bU\+FFFD\b|\ufffd|"
                          # 'output turns into "!!!!!!!!" after ~200 tokens', "answers are all <unk><unk>"
                          r"(?:turns? into|turned into|becomes?|became|degenerates? into|degrades? into|is just|are just|is all|are all|"
                          r"only|outputs?|emits?|prints?|returns?|gives?|produces?|return|->) [\"'\u201c`]?(?:!{4,}|\?{4,}|"
                          r"(?:<unk>\s*){2,}|(?:<pad>\s*){2,})|"
                          # "answer quality noticeably worse than the hosted API"
                          r"\b(?:answer |output |response )?quality (?:is |got |gets |was )?(?:noticeably |much |clearly |"
                          r"significantly |a lot |way )?worse\b|"
                          # "ignores our system instructions, answers in Chinese, forgets the JSON format"
                          r"\b(?:ignores?|ignored|ignoring) (?:our |my |the )?(?:system )?(?:instructions|prompt)\b|"
                          r"\b(?:answers?|answered|answering|responds?|responded|replies|replied) in (?:chinese|english|"
                          r"another language|the wrong language)\b|"
                          r"\bforgets[\"']? (?:the |our |my )?(?:json|output|response|answer) (?:format|schema)\b|"
                          r"(?:completions?|outputs?|responses?|generations?|requests) (?:are|is|were|was|turns?|goes?|"
                          r"becomes?|became) "
                          r"(?:\w+ ){0,2}(?:garbage|junk|gibberish|nonsense)\b|"
                          # "answers for requests that hit the prefix cache are garbage": the subject and its verdict
                          # a clause apart
                          r"\b(?:answers?|replies|responses?|completions?|outputs?|generations?)\b[^.;:\n]{0,60}? "
                          r"(?:are|is|were|was|become|becomes|turns? into) (?:\w+ ){0,2}(?:garbage|junk|gibberish|"
                          r"nonsense)\b|"
                          # a model switching language mid-answer is the same symptom
                          r"\bswitch(?:es|ing|ed)? (?:in)?to (?:chinese|another language|random languages?)\b|"
                          r"(?:greedy|temperature 0|temp 0)[^.]{0,60}\b(?:(?:is|are)n'?t|not) deterministic|"
                          # degenerate generation and quality that drops without an error
                          r"(?:gets?|got|is|are) stuck (?:in (?:a )?loops?|repeating)|repetitive (?:garbage|output|text|loops?)|"
                          r"\b(?:go|goes|went|going|gone) off the rails\b|"
                          r"\b(?:fluent|plausible|coherent|confident)(?:ly)? but wrong\b|\brepeats? the (?:question|prompt)\b|"
                          r"\b(?:accuracy|quality|scores?) (?:depends?|varies|vary|changes?) (?:on|with) (?:the )?"
                          r"(?:concurrency|batch size|load|number of concurrent)|"
                          r"\b(?:starts?|started|begins?|began|ends? up|ended up) (?:to )?loop(?:ing)?\b|"
                          r"\b(?:and|then|finally) loops\b|\bloops (?:forever|endlessly)\b|"
                          r"repeats? (?:itself|the same (?:tokens?|words?|phrases?|lines?))|slightly[- ]off (?:text|output|answers?)|"
                          r"\b(?:accuracy|exact[_ ]match|eval scores?|benchmark scores?|gsm8k|mmlu|humaneval|math500|aime\d*) "
                          r"(?:\w+ ){0,2}(?:drops?|dropped|collapses?|"
                          r"collapsed|falls?|fell|degrades?|degraded|regress\w*|tanks?|tanked)\b|"
                          # an evaluation harness failing its quality gate
                          r"\b(?:accuracy|quality|eval|score) regression\b|\bquality (?:drops?|dropped|regress\w*|degrad\w*)\b|"
                          # "quality falls apart as soon as k > 1", "tool calls have wrong argument names"
                          r"\b(?:quality|accuracy|outputs?|answers?) (?:\w+ )?(?:falls?|fell|falling|comes?|came) apart\b|"
                          r"\btool[- ]calls? (?:have|has|get|gets|with) (?:\w+ )?wrong (?:argument|parameter|function)s?\b|"
                          # an evaluation's score lower with a feature than without ("gsm8k lower with MTP on than off")
                          r"\b(?:gsm8k|mmlu|humaneval|math500|aime\d*|accuracy|eval scores?|win rate)\b (?:is |was |gets? )?"
                          r"(?:lower|worse) (?:with|when)\b|\bregression (?:vs\.?|versus|against|from) "
                          r"(?:the )?baseline\b)|" + WRONG_OUTPUT_ANYWHERE, re.I)

# an answer quoted in the report that repeats one word three times ("und und und", "dem dem dem"): degenerate output
# in any language (letters only: "1 1 1" is a table's row)
REPEATED_WORD = re.compile(r"\b([^\W\d_]{2,})(?: \1){2,}\b|"
                           # ... or two words doubled in one quoted answer ("k\u00f6teles k\u00f6teles a b\u00e9rl\u0151 b\u00e9rl\u0151")
                           r"\b([^\W\d_]{3,}) \2\b[^\n]{0,40}?\b([^\W\d_]{3,}) \3\b")

# words of which every match of WRONG_OUTPUT holds one (lower case): a cheap test before the regex on each prose line
WRONG_OUTPUT_HINTS = ("twice", "never stop", "never end", "never finish", "thousands of", "hundreds of", "duplicat", "doubled", "irrelevant", "off-topic", "odd", "weird", "strange", "bizarre", "user's", "garbl", "greedy", " bad", "determinism", "gibberish", "corrupt", "fragments", "degrad", "degenerat", "nonsense", "garbage", "wrong",
                      "incorrect", "salad", "broken", "junk", "deterministic", "stuck", "repetiti", "repeat", "off",
                      "accuracy", "exact", "score", "regression", "switch", "baseline", "threshold", "diverge", "differ",
                      "gsm8k", "mmlu", "humaneval", "math500", "aime", "unrelated", "different", "another", "invalid",
                      "malformed", "json.loads", "loop", "quality", "eval", "identical", "same", "match", "worse",
                      "thread", "flip", "jump", "drift", "win rate", "belong", "cross", "topic", "copy", "copies", "languages",
                      "soup", "forget", "older", "stale", "ignor", "chinese", "!!!!", "????", "</think", "<unk>", "<pad>", "broken ",
                      "replacement", "fffd", "\ufffd", "duplicated", "missing words", "weird", "strange", "bizarre", "distinct", "\u4e71", "\u80e1", "\u6587\u5b57\u5316\u3051", "\u610f\u5473\u4e0d\u660e", "\u652f\u96e2", "\u5d29\u308c", "\u58ca\u308c", "\u7e70\u308a\u8fd4\u3057", "\u91cd\u590d",
                      "\ubc18\ubcf5",
                      "\ud6a1\uc124", "\uae68\uc9c4", "\uae68", "lixo", "corromp", "sentido", "basura", "\u043c\u0443\u0441\u043e\u0440", "\u0431\u0440\u0435\u0434",
                      "kauderwelsch", "m\u00fcll", "unsinn", "falsch", "kaputt", "charabia", "mojibake", "\u00e9rtelmetlen", "corrompu", "incoh\u00e9rent", "n'importe", "senza senso",
                      "corrott", "spazzatura", "onzin", "be\u0142kot", "\u015bmieci", "anlams\u0131z", "bozuk", "ngh\u0129a", "r\u00e1c", "l\u1eb7p", "h\u1ecfng",
                      "rusak", "ngawur", "kacau", "\u0441\u043c\u0456\u0442\u0442\u044f", "\u043c\u0430\u044f\u0447", "\u092c\u0915\u0935\u093e\u0938",
                      "\u0647\u0631\u0627\u0621")

# an answer ended by its token cap (the OpenAI API's body, vLLM's request log): "finish_reason":"length"
FINISH_LENGTH = re.compile(r"""finish_reason["'`]?\s*(?:[:=]|is|was|of)?\s*["'`]?length\b|"""
                           # a printed result: "print(resp.choices[0].finish_reason, ...)   ->   length 16"
                           r"""finish_reason\b[^\n]{0,60}?(?:->|\u2192|=>)\s*["'`]?length\b""")

# the reporter saying the answers end early: "answers are cut off after a couple of words", "responses get truncated"
TRUNCATED = re.compile(r"\bcut[- ]off (?:answers|replies|responses|outputs)\b|"
                       # "returns truncated answers, usually cut right before a code block"
                       r"\btruncated (?:answers|replies|responses|outputs|completions|generations)\b|"
                       r"\bcut (?:right |just )?before (?:a |the )?\w+|"
                       # "requests stop streaming halfway", "the SSE just ends", "streams end early"
                       r"\bstop(?:s|ped)? streaming (?:halfway|mid\w*|early|abruptly|after)\b|"
                       r"\b(?:SSE|streams?|event stream)s? (?:just |simply |then )?(?:ends?|ended|stops?|stopped|dies|died|closes?|"
                       r"closed)(?: early| halfway| abruptly| prematurely| mid\w*)?\b(?! with \[DONE\])|"
                       # "Outputs always stop at exactly 512 tokens", "every report is cut mid-sentence"
                       # "Answers often end after the first paragraph with finish_reason "stop""
                       r"\b(?:answers?|outputs?|responses?|completions?|replies) (?:[\w-]+ ){0,4}?(?:often |always |sometimes |usually )?"
                       r"(?:end|stop|ends|stops|ended|stopped) (?:after the first (?:paragraph|sentence|line|section|heading)|"
                       r"(?:right |just )?before the first \w+|abruptly|early|prematurely)\b|"
                       # "only returns 16 tokens from /v1/completions"
                       r"\bonly (?:returns?|gives?|generates?|produces?) (?:~|about )?\d+ tokens\b|"
                       # ... "stops at exactly ~1k tokens"
                       r"\bstops? (?:at |around |about |near )(?:exactly |precisely )?~?\d+(?:\.\d+)?k? tokens\b|\bcut mid[- ]sentence\b|"
                       # "cuts answers after a few words", "every answer is exactly 16 tokens"
                       r"\bcuts? (?:the |my |our |all |every |its )?(?:answers?|responses?|outputs?|replies|text|completions?)"
                       r"(?: off| short| after| at| mid\w*)\b|"
                       r"\b(?:every|each|all) (?:answers?|responses?|outputs?|completions?|repl(?:y|ies)) (?:is|are) (?:exactly |always )"
                       r"\d+ tokens\b|"
                       # "Open WebUI shows empty answers for about half the questions"
                       r"\b(?:shows?|returns?|gets?|gives?|comes? back with) (?:\w+ )?empty (?:answers|responses|replies|content|"
                       r"messages|outputs?)\b|"
                       # "`content` comes back empty / cut off"
                       r"\bcontent`?[\"']? (?:comes back|is|was|returns?) (?:empty|null|none)\b|"
                       # "we get `content: null` for about a third of prompts"
                       r"\bcontent`?\s*[:=]\s*`?(?:null|None)\b|"
                       r"\b(?:answers?|responses?|outputs?|completions?|repl(?:y|ies)|generations?|text|reports?|content|"
                       r"summar(?:y|ies)|articles?)\b[^.\n]{0,30}?\b"
                       r"(?:(?:are|is|get|gets|got|were|was) )?(?:cut off|cut short|cut (?:after|at|mid)|(?<!\()truncated|stops? (?:mid|early|after)|"
                       r"incomplete)\b|\b(?:cut off|truncated) (?:mid|after|at)\b|"
                       r"\b(?:ends?|ended|stops?|stopped|breaks? off) mid[- ](?:sentence|word|answer|thought|paragraph)\b|"
                       # the same in the report languages: "途中で切れ" (ja), "被截断" / "说到一半" (zh), "잘려" (ko),
                       # "abgeschnitten" (de), "se corta" / "cortad" (es, pt), "coupé" (fr), "обрыва" (ru)
                       r"\u9014\u4e2d\u3067\u5207\u308c|\u88ab\u622a\u65ad|\u8bf4\u5230\u4e00\u534a|\uc798\ub824|"
                       r"\uc798\ub9bd|\babgeschnitten\b|\bse corta\b|\bcortad[oa]s?\b|\bcoup\u00e9e?s?\b|"
                       r"\u043e\u0431\u0440\u044b\u0432\u0430|"
                       # Italian, Dutch, Polish, Czech, Turkish, Vietnamese, Indonesian, Swedish, Ukrainian
                       r"\btroncat[oaie]\b|\btagliat[oaie]\b|\bafgekapt\b|\bafgebroken\b|\b(?:u|ob)ci\u0119t\w*|"
                       r"\buseknut\w*|\bo\u0159ezan\w*|\bkesiliyor\b|\byar\u0131m kal\w*|\bb\u1ecb c\u1eaft\b|\bterpotong\b|"
                       r"\bavklipp\w*|\u043e\u0431\u0440\u0438\u0432\u0430\w*|\u043e\u0431\u0440\u0456\u0437\u0430\u043d\w*", re.I)

# the reporter saying the server takes long to start: "Scale-up takes 12+ minutes", "startup takes ~9 min", "takes 15
# minutes to become ready"
SLOW_START = re.compile(
    r"\b(?:start(?:-?up|s|ing)?|scale[- ]?ups?|cold[- ]starts?|boots?|booting|(?:model )?load(?:ing)?|restarts?)\b[^.\n]{0,40}?"
    r"\btak(?:e|es|ing|en) (?:~|about |over |more than |almost |nearly )?\d+\+?\s*(?:min|mins|minutes|h|hours?)\b|"
    r"\btak(?:e|es) (?:~|about |over |more than )?\d+\+?\s*(?:min|mins|minutes)\b[^.\n]{0,30}?\bto (?:start|load|come up|"
    r"be ready|become ready|scale up|serve)\b", re.I)

# the time to the first token, in the report's words: the prefill's and the queue's, not the drafts' (which verify
# during decode)
FIRST_TOKEN = re.compile(r"\bTTFT\b|first[- ]token|time to first", re.I)

# serving that became slower with time under the same deployment: "got 35% slower overnight, nothing redeployed",
# "has been getting slower since Monday", "slower after a few hours" -- a configuration's cost is there from the start
DEGRADED_OVER_TIME = re.compile(
    r"\b(?:got|gets|getting|became|becomes|went|has been|have been|is|was)\s+(?:~?\d+(?:\.\d+)?\s*(?:%|x)\s+|much |a lot |"
    r"way |gradually |steadily |progressively )?slower\s+(?:overnight|over (?:time|the (?:day|week|weekend|last \w+ (?:hours|days)))|"
    r"since (?:yesterday|last (?:night|week)|this morning|(?:mon|tues|wednes|thurs|fri|satur|sun)day)|after (?:a few|several|\d+) "
    r"(?:hours|days))\b|"
    r"\b(?:gradually|steadily|progressively) (?:gets?|got|getting|becomes?|became) slower\b|"
    r"\bnothing (?:was |has been |got )?(?:re)?deployed\b|\bno (?:re)?deploy(?:ment)?s?\b(?: (?:since|in between|in the meantime))?|"
    # "throughput dropped ~45% overnight, no config change", "Command (unchanged for 3 weeks)"
    r"\b(?:dropped|fell|went down|degraded|regressed|halved|doubled|jumped|spiked)\b[^.\n]{0,20}?\b(?:overnight|since "
    r"(?:yesterday|last (?:night|week)|this morning))\b|\bno (?:config(?:uration)?|code|settings?) changes?\b|"
    r"\bunchanged (?:for|since) (?:\d+|a few|several|two|three|four) (?:days|weeks|months)\b",
    re.I)

# the reporter saying speculative decoding made serving slower (no error): "MTP makes DeepSeek-R1 slower",
# "adding MTP drops decode throughput", "slower with EAGLE than without"
SPEC_SLOWER = re.compile(
    r"\b(?:MTP|EAGLE-?3?|[Ee]agle-?3?|spec(?:ulative)?[ -]decod\w*|drafts?|drafting|ngram|suffix(?: decoding)?|speculation|"
    # (a model's name may hold a dot: "ngram on Qwen3.5-35B-A3B gives almost no speedup")
    r"num_spec(?:ulative)?_tokens)\b(?:[^.\n]|\.(?=\d)){0,80}?\b"
    # no gain at all: "raising num_speculative_tokens from 1 to 3 gives almost nothing", "MTP barely helps"
    r"(?:(?:gives?|brings?|buys?) (?:us )?(?:almost |virtually |basically |next to )?(?:nothing|no (?:speed-?up|gain|benefit))|"
    r"barely helps?|(?:doesn'?t|does not|didn'?t|did not) (?:help|speed (?:it |anything )?up)|"
    r"(?:is|runs?|gets?|got|becomes?|became|makes? (?:it|\w+(?:-\w+)*|everything|decode))\s+(?:\w+ )?"
    r"(?:~?\d+(?:\.\d+)?\s*(?:%|x)\s+)?[*_]{0,2}slower|"
    # "Suffix decoding makes Granite 4.0 H Tiny slower"
    r"(?:makes?|made) (?:[\w.-]+ ){1,5}[*_]{0,2}slower|"
    r"drops? (?:the )?(?:decode |generation |"
    r"output )?throughput|(?:lowers?|reduces?|hurts?|halves?) (?:the )?(?:decode |generation |output )?throughput)\b|"
    r"\bslower (?:with|when (?:using|enabling|adding)) (?:MTP|EAGLE|[Ee]agle|spec|drafts?|speculative|ngram)|"
    # "MTP makes throughput WORSE at high concurrency"
    r"\b(?:MTP|EAGLE-?3?|[Ee]agle-?3?|spec(?:ulative)?[ -]decod\w*|drafts?|ngram|suffix(?: decoding)?)\b[^.\n]{0,30}?\b(?:makes?|made)"
    r" (?:the )?(?:throughput|latency|TPOT|ITL|decode|performance) (?:\w+ )?worse\b|"
    # "from k=2 on the throughput collapses to below no-spec"
    r"\b(?:collapses?|collapsed|drops?|dropped|falls?|fell) (?:to )?below (?:the )?(?:no|non)[- ]?spec\w*\b|"
    # "it's slower than no MTP at all", "slower than running without speculation"
    r"\bslower than (?:(?:running|serving|decoding|using|with) )?(?:no|without|plain|vanilla|baseline) (?:any )?(?:MTP|EAGLE|"
    r"[Ee]agle|spec\w*|drafts?|drafting|speculat\w*|ngram)\b|"
    # a latency figure "worse than no spec": "TPOT only drops 16.9 -> 15.2 ms, and at 48 concurrent it's worse than no spec"
    r"\b(?:TPOT|ITL|TTFT|latency|throughput|tok(?:en)?s?/s)\b(?:[^.\n]|\.\d){0,80}?\bworse than (?:(?:running|serving|using|with) )?"
    r"(?:no|without|plain|vanilla|baseline) (?:any )?(?:MTP|EAGLE|[Ee]agle|spec\w*|drafts?|drafting|speculat\w*|ngram|suffix)\b|"
    # "with 3 spec tokens it's slower", "2 draft tokens are slower than 1"
    r"\b\d+ (?:spec(?:ulative)?|draft|MTP) tokens?\b[^.\n]{0,30}?\bslower\b|"
    # a deeper draft slower than a shallower one ("num_speculative_tokens=3 is ~2.5x SLOWER than ...=1", "k=3 runs slower")
    r"\b(?:num_spec(?:ulative)?_tokens|k)\s*[=:]\s*\d+\b[^.\n]{0,20}?\b(?:(?:is|runs?|was|gets?)\s+)?(?:~?\s*[\d.]+\s*x\s+|"
    r"(?:much|far|way|a lot|significantly|noticeably)\s+)?slower\b", re.I)

# the reporter saying the KV capacity fell: "adding an eagle3 head halves max concurrency", "the KV cache drops to less
# than half", "~3x fewer KV tokens than with the MTP module"
CAPACITY_FELL = re.compile(
    # '"Maximum concurrency" is ~3x lower than on my workstation'
    r"\bconcurrency\W{0,3} (?:is|was) (?:~|about |around )?\d+(?:\.\d+)?\s*x lower\b|"
    # "Max concurrency went from ~40 to ~6 overnight", "KV cache dropped from 31 GiB to 4"
    r"\b(?:concurrency|capacity|KV cache(?: memory| size)?)\b (?:\w+ )?(?:went|dropped|fell|shrank|went down|drops?|falls?) "
    r"from (?:~|about )?\d[\d,.]*\s*\w{0,3} to (?:~|about )?\d|"
    # "only gets ~3 concurrent 32k requests", "I expected way more KV", "just very low concurrency"
    r"\bonly (?:gets?|fits?|runs?|allows?) (?:~|about |around )?\d+ concurrent\b|\bexpected (?:way|much|far|a lot) more KV\b|"
    # "throughput caps at ~600 tok/s no matter how many clients we add"
    r"\b(?:throughput|tok(?:en)?s?/s|concurrency)\b[^.\n]{0,20}?\b(?:caps?|capped|plateaus?|plateaued|tops? out|topped out|"
    r"saturates?|flatlines?) (?:out )?at\b|\bno matter how many (?:clients|requests|users|concurrent)\b|"
    # "Only ~18k tokens of KV cache and requests queue under any load"
    r"\bonly (?:~|about |around )?\d[\d,.]*\s*k? tokens (?:of|in the) KV(?: cache)?\b|"
    r"\brequests? (?:queue|pile up|wait)\w* (?:up )?(?:under|at) (?:any|every|even (?:a )?(?:light|low|small)) load\b|"
    # "capacity much lower than expected on H100: only ~3 concurrent 64k requests"
    r"\b(?:capacity|concurrency|KV(?: cache)?(?: size| capacity)?)\b (?:is |was |seems |looks )?(?:much |way |far |a lot |"
    r"significantly )?(?:lower|smaller|less) than (?:expected|I expected|we expected|hoped)\b|"
    r"(?:(?<=[:(])|(?<=[:(] ))only (?:~|about |around )?\d+ concurrent\b|"
    r"\b(?:very |really |extremely )low concurrency\b|"
    # "only ~30 GB KV cache and 'Maximum concurrency 2.9x', expected way more"
    r"\bonly (?:~|about |around )?\d+(?:\.\d+)?\s*Gi?B (?:of )?KV(?: cache)?\b|"
    r"\bconcurrency\b[^.\n]{0,30}?\bexpected (?:way |much |far |a lot )?(?:more|higher|bigger)\b|"
    # "I expected ~35 GiB of KV, not 6.8", "Expected huge concurrency"
    r"\bexpected (?:~|about |around )?\d+(?:\.\d+)?\s*Gi?B of KV(?: cache)?,? (?:not|but got|got|only)\b|"
    r"\bexpected (?:a )?(?:huge|much (?:higher|more)|more|higher|far more|far higher|bigger) (?:KV )?(?:concurrency|capacity)\b|"
    # "serves only ~10 requests at once, rest stuck waiting", "'Waiting' grows all the time"
    # "why can we only run 4 requests at once and 37 wait?"
    r"\bonly (?:run|serve|fit|handle|process|get) (?:~|about |around )?\d+ (?:concurrent )?(?:requests?|reqs|sequences|users)"
    r"(?: at (?:once|a time)| concurrently| in parallel)\b|"
    r"\b(?:serves?|runs?|handles?|processes|takes?) only (?:~|about |around )?\d+ (?:concurrent )?(?:requests?|reqs|sequences|"
    r"users|sessions)(?: at (?:once|a time)| concurrently| in parallel)?\b|"
    r"\b(?:the )?(?:rest|others) (?:are |get |gets |sit )?stuck (?:in )?(?:waiting|the queue)\b|"
    # 'half of them sit in "Waiting"'
    r"\b(?:half|most|many|some|\d+) of them (?:sit|are|wait|stay|get stuck) (?:in )?[\"'`]?(?:Waiting|the queue|queued)\b|"
    r"[\"'`]?Waiting[\"'`]?(?: count| queue| number)? (?:grows|keeps growing|climbs|keeps climbing|increases|piles up)\b|"
    # "requests queue forever at ~25 concurrent users"
    r"\brequests? (?:queue|pile up|wait)\w*(?: up)? (?:forever|indefinitely|endlessly)\b|"
    # "requests sit in Waiting for minutes", "requests stay in the queue"
    r"\b(?:requests?|reqs|jobs|prompts) (?:sit|stay|remain|are stuck|get stuck|hang|wait)(?: for (?:minutes|hours|ages))? in "
    r"(?:the )?[\"'`]?(?:Waiting|(?:waiting )?queue)\b|"
    # "Queue builds up", "the queue keeps growing"
    r"\bqueue (?:builds? up|keeps growing|grows|piles up|explodes)\b|"
    # "requests queue ('Waiting') with only ~20 running", "requests queue at ~8 users", "Running stays at 3-5"
    r"\bonly (?:~|about |around )?\d+ (?:requests? |reqs? |seqs? )?(?:are )?running\b|"
    r"\brequests? (?:queue|pile up|wait|start queu\w*)(?: up)? (?:at|with|after|beyond|above) (?:~|about |only )?\d+\b|"
    r"\bRunning (?:stays|stuck|sits|is stuck|never goes above|caps|plateaus) (?:at )?(?:~|about )?\d+|"
    # "vLLM says max concurrency 2.1x for 32k, I calculated ~7x"
    r"\bmax(?:imum)? concurrency[\"'`]? (?:of |is )?~?\d+(?:\.\d+)?\s*x\b[^.\n]{0,40}?\b(?:I|we) (?:calculated|expected|estimated|"
    r"computed|counted)\b|"
    # "only gives 'Maximum concurrency ... 1.93x'"
    r"\bonly (?:gives?|gets?|shows?|reports?) [\"'`]?Maximum concurrency\b|"
    # '"Maximum concurrency" is tiny and requests queue'
    r"\bmax(?:imum)? concurrency[\"'`]? (?:is |looks |seems )?(?:tiny|very low|so low|really low|very small)\b|"
    # "only gets ~2x concurrency at 64k"
    r"\bonly (?:gets?|gives?|reaches?|shows?|has|achieves?) (?:~|about |around )?\d+(?:\.\d+)?\s*x (?:max(?:imum)? )?concurrency\b|"
    # (what drops must be the capacity: "at concurrency 128 the scores drop" is the output's quality)
    r"\b(?:max(?:imum)? concurrency|kv[ -]cache(?: size| capacity| tokens)?|kv capacity|kv tokens|concurrency)\b"
    r"(?:(?!scores?\b|accuracy|acceptance|quality|evals?\b)[^.\n]){0,60}?"
    r"\b(?:halve[sd]?|drops?|dropped|falls?|fell|shrinks?|shrank|less than half|cut in half|way lower|much lower|far lower|"
    r"(?:went )?down)\b|"
    # "we get way less KV cache than a comparable dense model", '"Maximum concurrency" only 1.9x'
    r"\b(?:way |much |far )?less kv[ -]cache\b|\bmax(?:imum)? concurrency[\"']? (?:is )?only\b|"
    r"\b(?:halves|halved|halving|cuts?|reduces?|reduced) (?:the |our |my )?(?:max(?:imum)? )?(?:concurrency|kv[ -]cache|kv capacity)\b|"
    r"\b~?\d+(?:\.\d+)?\s*x fewer (?:kv )?(?:cache )?tokens\b|\bkv capacity (?:is )?(?:way |much |far )?lower\b|"
    # a change that should have added capacity and did not: "fp8 KV cache doesn't give more concurrency"
    r"\b(?:doesn'?t|does not|didn'?t|did not|won'?t) (?:give|bring|add|yield|increase|improve|raise) (?:us )?(?:any )?"
    r"(?:more |higher )?(?:max(?:imum)? )?(?:concurrency|kv capacity|kv[ -]cache capacity|running requests)\b|"
    # fewer requests fit than before: "starts preempting at a concurrency it handled fine", "where the memory went"
    r"\b(?:starts?|started|begins?|began) preempting\b|\bpreemptions (?:appear|start|show up|began|begin)\b|"
    # "Why is KV cache so small", "concurrency barely moved"
    r"\bkv[ -]cache(?: capacity| size)? (?:is |so |this |that |too |very ){1,2}(?:small|tiny|low)\b|"
    # "preemptions at only ~10 concurrent requests"
    r"\bpreemptions? (?:at|with|from) (?:only |just )?~?\d+ (?:concurrent|parallel|simultaneous)\b|"
    r"\b(?:max(?:imum)? )?concurrency (?:barely|hardly|only slightly|did not|didn'?t) (?:move|moved|change|changed|grew|grow|"
    r"increase|increased|improve|improved)\b|"
    r"\bfewer requests fit\b|\bwhere (?:the|my|our) memory (?:went|goes)\b|\bwhere (?:did|does) the memory go\b|"
    # "fit ~8x fewer requests", "caps out way lower", "memory is being wasted"
    r"\bfits? (?:~|about )?\d+(?:\.\d+)?\s*x fewer (?:requests|sequences|users)\b|\bcaps? out (?:\w+ )?lower\b|"
    r"\bmemory (?:is |was )?(?:being )?wasted\b|"
    # the batch stops growing: "never more than 16 running requests", "the rest queue up"
    r"\bnever (?:runs? |has |gets? |schedules? )?(?:more than|above|over) \d+ (?:running |concurrent )?(?:requests|reqs|sequences)\b|"
    # "it never runs more than 3 at a time", "can only serve ~4 users", "serves far fewer concurrent requests than our
    # sizing sheet", "max_num_seqs 256 can never be reached"
    r"\bnever (?:runs?|schedules?|serves?|handles?|processes|batches) (?:more than|above|over) ~?\d+ (?:at (?:once|a time)|"
    r"concurrently|in parallel)\b|\bcan only (?:serve|run|handle|fit|take|hold) (?:~|about |around )?\d+ (?:concurrent )?"
    r"(?:requests?|reqs|sequences|users|clients|sessions)\b|\b(?:far |way |much |many )?fewer (?:concurrent|parallel|simultaneous) "
    r"(?:requests|sequences|users|sessions)\b|\bmax[_-]num[_-]seqs\W{0,2} ?(?:of )?\d*\W{0,2} ?(?:can |could )?(?:never|not) "
    r"(?:be )?(?:reached|hit|filled)\b|"
    r"\brunning(?: count| requests?| reqs)?\b[^.\n]{0,20}?\bnever (?:gets? |goes? |climbs? |rises? )?(?:more than|above|over|"
    r"past|beyond) ~?\d+|"
    r"\b(?:rest|everything else|the others) (?:queues?|queued|waits?|sits?)(?: up| in the queue)?\b|"
    # "KV cache reported way smaller than I expected", "I would expect hundreds of sequences to fit"
    r"\bkv[ -]cache\b[^.\n]{0,40}?\b(?:way |much |far )?(?:smaller|lower|less) than (?:I |we )?(?:had )?expect\w*|"
    r"\bexpect(?:ed)? (?:hundreds|thousands|far more|many more|way more|much more) (?:of )?(?:concurrent )?"
    r"(?:sequences|requests|users|seqs)\b", re.I)

# the reporter saying draft acceptance fell: "MTP acceptance ... drops from ~3.2 to ~1.3", "terrible in production",
# "acceptance collapses once the cache warms up", "low acceptance"
ACCEPTANCE_FELL = re.compile(
    r"\bacceptance\b(?:[^.\n]|\.(?=\d)){0,80}?\b(?:terrible|low|poor|bad|drops?|dropped|collapses?|collapsed|falls?|fell|tanks?|"
    r"tanked|plummets?|plummeted)\b|\b(?:low|poor|terrible|bad) (?:draft |mtp |spec(?:ulative)? )?acceptance\b|"
    # "Low EAGLE3 acceptance", "acceptance only ~18%", "acceptance way below the model card", "mean acceptance ~1.3 on
    # our traffic vs 2.8 in staging", "acceptance length 3.4 -> 1.5", "acceptance ~8% ... useless"
    r"\b(?:low|poor|terrible|bad|awful|abysmal)\s+(?:[\w.-]+\s+){1,2}acceptance\b|"
    r"\bacceptance\b(?:[^.\n]|\.(?=\d)){0,40}?\b(?:only|just|barely)\s+(?:~|about |around )?\d|"
    r"\bacceptance\b(?:[^.\n]|\.(?=\d)){0,60}?\b(?:way|much|far|significantly|a lot)\s+(?:below|lower|worse|less)\b|"
    r"\bacceptance\b(?:[^.\n]|\.(?=\d)){0,40}?~?\d+(?:\.\d+)?\s*%?\s*(?:->|\u2192|=>)\s*~?\d|"
    r"\bacceptance\b(?:[^.\n]|\.(?=\d)){0,15}?~?\d+(?:\.\d+)?\s*%?\b[^.\n\d]{0,40}?\bvs\.?\s+~?\d|"
    r"\bacceptance\b[^.\n]{0,40}?\b(?:useless|disappointing|nowhere near|far from)\b|"
    r"\b(?:useless|pointless|worthless)\b\W{0,3}\s*(?:\w+\s+)?acceptance\b", re.I)

# a stream delivered in bunches ("comes in big bursts", '"bursty"', "feels frozen"): how the tokens reach the client,
# not how fast the engine decodes them
BUNCHED_STREAM = re.compile(r"\bbursts?\b|\bbursty\b|\bin (?:big |large |huge )?chunks\b|\bfrozen\b", re.I)

# the reporter saying serving is slow, without naming speculative decoding as the cause: "throughput on H20 is ~3x
# below what others report", "TPOT far worse than expected", "it is very slow"
SLOW = re.compile(
    r"\b(?:throughput|tok(?:ens)?/s|TPOT|TTFT|ITL|latency|speed)\b[^.\n]{0,60}?(?:~?\d+(?:\.\d+)?\s*(?:x|%)\s+(?:below|lower|slower|"
    r"worse|less)|\b(?:far|way|much|significantly) (?:below|lower|worse)|\btoo (?:low|slow))\b|"
    r"(?:\b~?\d+(?:\.\d+)?\s*(?:x|%)|\bmuch|\bway|\bfar|\bsignificantly) slower\b|\bslow(?:er)? than (?:expected|others|what others)\b|"
    r"\b(?:is|are|runs?|feels?) (?:\w+ly |very |so |too |way too |super )?slow\b|\beven slower\b|"
    # "ITL ~45 ms per token single user, expected < 15 ms"
    r"\b(?:ITL|TPOT|TTFT|latency)\b[^.\n]{0,40}?~?\d+(?:\.\d+)?\s*ms\b[^.\n]{0,40}?\bexpect(?:ed|ing)\b"
    r"(?:\s*(?:<|<=|~|about|around)?\s*~?\d+(?:\.\d+)?\s*ms\b)?|"
    # "TPOT up ~18% at c=32", "expecting more tok/s, got LESS"
    r"\b(?:TPOT|ITL|TTFT|latency|p\d\d) (?:is |went |goes )?(?:up|increased|rose|grew) (?:by )?~?\d+(?:\.\d+)?\s*%|"
    r"\bexpect\w* (?:more|higher|better|faster) (?:tok(?:ens)?/s|throughput|speed|decode)\W{0,3}\s*(?:but )?got (?:less|lower|"
    r"worse|slower)\b|"
    # a stream that arrives in bursts: 'Streaming ... comes in big bursts every ~2s', 'is "bursty"', 'feels frozen'
    r"\b(?:stream\w*|tokens?|text|output)\b[^.\n]{0,40}?\b(?:comes?|arrives?|shows? up) in (?:big |large |huge )?(?:bursts|chunks)\b|"
    r"\b(?:stream\w*|tokens?|text|output)\b[^.\n]{0,60}?\b(?:is|are|looks|feels|gets|got|became) [\"'`]?bursty\b|"
    r"\bfeels? frozen\b|"
    # more GPUs, less speed: "TP=4 gives lower output throughput than TP=2", "tensor-parallel 4 is SLOWER than
    # tensor-parallel 2"
    r"\b(?:TP|tensor[- ]parallel(?:ism)?)\s*[=:]?\s*\d+\b[^.\n]{0,20}?\b(?:is|runs?|gets?|got|was) (?:\w+ )?slower than\b|"
    # the same set-up fast elsewhere: "Same image on my workstation ... does ~1450 tok/s gen"
    r"\b(?:same|identical) (?:image|container|model|flags|setup|set-up|config\w*|command|deployment)\b[^.\n]{0,80}?"
    r"\b(?:does|gets|gives|reaches|runs at|hits|did|got|gave|reached) (?:~|about |around )?\d[\d,.]*\s*k?\s*(?:gen(?:eration)? )?"
    r"(?:tok(?:en)?s?/s|t/s)\b|"
    r"\blower (?:output |generation |decode |total )?(?:throughput|tok(?:ens)?/s) than (?:with |on |at )?(?:TP|tp|PP|pp)\b|"
    # "output tok/s drops from ~5900 to ~4100"
    # ("decode throughput at 64 concurrent users fell from ~2.1k to ~700 tok/s"; "a perf regression")
    r"\b(?:perf(?:ormance)?|throughput|latency|speed|decode) regression\b|"
    # "throughput starts at ~1900 tok/s, after 15 min falls to ~1100 tok/s"
    # (not "drops to 0": a stall, the hang's words)
    r"\b(?:throughput|tok(?:ens)?/s)\b[^.\n]{0,60}?\b(?:falls?|fell|drops?|dropped|degrades?|decays?|sinks?|sank) to "
    r"(?:~|about )?(?!0\b)\d|"
    # "streaming stalls of 1.5-3 s mid-answer", "chat users see the stream freeze for seconds", "p99 ITL 2.9 s (was
    # ~60 ms)"
    r"\bstream\w* (?:stalls?|stalling|freezes?|freezing|freeze|stutters?|stuttering)\b|"
    r"\b(?:ITL|TPOT|TTFT|latency)\b[^.\n]{0,20}?~?\d+(?:\.\d+)?\s*m?s\s*\(was ~?\d|"
    # "throughput worse than expected at batch > 4", "TPOT jumps from 11ms to 38ms"
    r"\b(?:throughput|speed|performance|latency|TPOT|ITL|decode)\b[^.\n]{0,10}?\b(?:much |far |way )?worse than expected\b|"
    r"\b(?:TPOT|ITL|TTFT|latency|p\d\d)\b (?:\w+ ){0,2}(?:jumps?|jumped|goes up|went up|rises?|rose|climbs?|climbed|"
    r"spikes?|spiked|balloons?|ballooned) from ~?\d|"
    # a rate set beside a better one: "Decode throughput is ~11 tok/s per request, same model on 1x H100 gives 45"
    r"\b(?:throughput|decode|generation|speed)\b[^.\n]{0,30}?\b(?:is|of|at) ~?\d[\d.]*\s*tok(?:ens)?/s\b[^.\n]{0,60}?"
    r"\b(?:gives|gets|does|did|reaches|hits|vs\.?|versus|compared to|while)\b[^.\n]{0,20}?~?\d[\d.]*|"
    # one box slower than the other by more than expected: "40% faster on our B200 node than on H200 per GPU"
    r"\b~?\d+(?:\.\d+)?\s*(?:%|x) faster on (?:our |the |a )?[\w-]+(?: \w+)?\s+than on\b|"
    r"\b(?:throughput|tok(?:ens)?/s|TPOT|TTFT|ITL)\b (?:\w+ ){0,5}(?:drops?|dropped|falls?|fell|goes down|went down) from "
    r"~?\d[\d,.]*\s*k?\s*(?:tok(?:ens)?/s)? to ~?\d[\d,]*(?:\.\d+)?\s*k?(?:\s*tok(?:en)?s?/s)?|"
    # "delivers ~35% lower throughput and higher TPOT than the others"
    r"~?\d+(?:\.\d+)?\s*(?:%|x) (?:lower|less|worse|smaller) (?:decode |generation |output )?(?:throughput|tok(?:ens)?/s)\b|"
    r"\b(?:higher|worse|longer) (?:TPOT|ITL|TTFT|latency) than\b|"
    # "Low throughput Qwen3-Next TP4 on 4x L40S"
    r"\b(?:low|poor|bad|terrible|disappointing) (?:decode |generation |output )?(?:throughput|tok(?:ens)?/s)\b|"
    # a title's verdict without its verb: "nemotron-h 47b + ngram spec decode super slow, ~9 tok/s"
    r"\b(?:super|very|really|extremely|painfully|insanely|incredibly) slow(?:ly)?\b(?! (?:start\w*|load\w*|boot\w*|download\w*|"
    r"compil\w*))|"
    # "long prompts have huge TTFT", "throughput plateaus at ~3.5k tok/s"
    r"\b(?:huge|high|terrible|awful|massive|very long) (?:TTFT|TPOT|ITL|latency)\b|\bthroughput plateaus\b|"
    # "TTFT for 60k-token documents is 9-12 s", "first token ~3 s": a first token that takes seconds
    r"\b(?:TTFT|(?:time to )?first token)\b[^.\n]{0,40}?\b(?:is|of|=|at|hits?|reaches?|around|~|goes to|went to|climbs to|"
    r"rises to|jumps to|grows to)\s*~?\d+(?:\.\d+)?"
    r"(?:\s*[-\u2013]\s*\d+(?:\.\d+)?)?\s*(?:s|sec|secs|seconds)\b|"
    # "Latency is terrible at low load"
    r"\b(?:latency|TTFT|TPOT|ITL|throughput)\b[^.\n]{0,50}? (?:is|are|was|were|looks|got) (?:just |really |so |pretty )?(?:terrible|awful|"
    r"horrible|abysmal|atrocious)\b|"
    # "runs at 2-3 tokens/s even with a single short request ... I was expecting 60+"
    r"\b\d+(?:\.\d+)?(?:\s*[-\u2013]\s*\d+(?:\.\d+)?)?\s*(?:tok(?:en)?s?/s|t/s|tps)\b[^\n]{0,80}?(?:\b(?:was |were |I'?m |am |I )"
    r"expect(?:ing|ed)|[.;]\s+[Ee]xpected)\b|"
    # slower / lower throughput in the languages reports come in: "느려집니다", "变慢", "更慢", "遅くなる", "langsamer",
    # "más lento", "plus lent", "mais lento", "медленнее"
    r"\ub290\ub824|\ub290\ub9bd|\u53d8\u6162|\u66f4\u6162|\u6162\u4e86|\u8fd8\u6162|\u6bd4[^\u3002\n]{0,15}?\u6162|\u9045\u304f|\u9045\u3044|\blangsamer\b|"
    r"\bm\u00e1s lent[oa]s?\b|\bplus lente?s?\b|\bmais lent[oa]s?\b|\u043c\u0435\u0434\u043b\u0435\u043d\u043d\u0435\u0435|"
    # "~38 tok/s single stream, half of what others report"
    r"\b(?:half|a third|a quarter|a fraction) of what (?:others|other people|everyone|the (?:blog|docs|model card)|"
    r"(?:the )?benchmarks?) (?:report|get|see|show|claim)\w*\b|"
    # "TP=4 gives ~half the tokens/s I get with TP=2"
    r"\b(?:~|about |roughly |around )?half (?:the|of the|of my|of our) (?:tokens?/s|tok/s|throughput|speed|performance)\b|"
    # "TP=4 on 4x L4 throughput lower than TP=2??"
    r"\b(?:throughput|tok(?:en)?s?/s|performance|speed)\b (?:is |was |gets |got )?(?:much |way |far |even )?lower than\b|"
    # a rate against the same card elsewhere: "gets like 18 tok/s, friend on native Ubuntu same card gets ~70"
    r"\b\d+(?:\.\d+)?\s*(?:tok(?:en)?s?/s|t/s|tps)\b[^.\n]{0,20}?\b(?:friend|colleague|someone|others?|native|bare[- ]metal)"
    r"\b[^.\n]{0,40}?\b(?:gets?|got|sees?|saw|does|did|reaches?|reached|has)\s+(?:like |about |around )?~?\d+|"
    # throughput that collapses or gets worse than without the drafts, in Portuguese, Spanish, German, French: "o
    # throughput por usuário despenca, fica pior do que sem speculative decoding"
    r"\b(?:throughput|desempenho|rendimiento|velocidad|velocidade|durchsatz|d\u00e9bit)\b[^.\n]{0,40}?\b(?:despenca\w*|"
    r"desaba\w*|se desploma\w*|cae en picado|bricht ein|s'effondre)\b|"
    r"\b(?:pior do que sem|peor que sin|schlechter als ohne|pire que sans)\b|"
    # ... in Russian: "пропускная способность падает НИЖЕ, чем вообще без спекулятивного декодирования"
    r"\u043f\u0440\u043e\u043f\u0443\u0441\u043a\u043d\u0430\u044f \u0441\u043f\u043e\u0441\u043e\u0431\u043d\u043e\u0441\u0442\u044c[^.\n]{0,30}?(?:\u043f\u0430\u0434\u0430\u0435\u0442|\u0443\u043f\u0430\u043b\u0430|\u0441\u043d\u0438\u0436\u0430\u0435\u0442\u0441\u044f|\u043f\u0440\u043e\u0441\u0435\u0434\u0430\u0435\u0442)|\u043d\u0438\u0436\u0435,? \u0447\u0435\u043c (?:\u0432\u043e\u043e\u0431\u0449\u0435 )?\u0431\u0435\u0437\b|"
    # throughput that falls, in Japanese and Chinese: "スループットが逆に 30% 落ちます", "吞吐量下降了 30%"
    r"\u30b9\u30eb\u30fc\u30d7\u30c3\u30c8[^\u3002\n]{0,15}?(?:\u843d\u3061|\u4e0b\u304c|\u4f4e\u4e0b)|"
    r"\u541e\u5410[^\u3002\n]{0,15}?(?:\u4e0b\u964d|\u964d\u4f4e|\u6389)|"
    # "throughput dropped 40% after moving", "scales terribly: TP=4 gives only ~1.3x over TP=2", "TPOT ~95 ms on H100
    # while the blog says ~30 ms"
    r"\b(?:throughput|tok(?:en)?s?/s|performance|speed)\b (?:[\w.-]+ ){0,2}?(?:dropped|drops|fell|falls|went down|decreased|"
    r"regressed) "
    r"(?:by |about |around |roughly |nearly |almost )?~?\d+(?:\.\d+)?\s*%|"
    # "TPOT got worse at long context"
    r"\b(?:TPOT|ITL|TTFT|latency)\b (?:got|gets|became|becomes|is|was|went|goes) (?:\w+ )?worse\b|\bscal(?:es|ed|ing) (?:terribly|badly|poorly|horribly)\b|"
    r"\bonly ~?\d+(?:\.\d+)?\s*x (?:over|faster than|speed-?up (?:over|vs\.?)|the throughput of)\b|"
    r"\b(?:TPOT|ITL|TTFT|latency|throughput)\b[^.\n]{0,20}?~?\d+(?:\.\d+)?\s*(?:ms|s|tok/s)\b[^.\n]{0,40}?\b(?:while|but|"
    r"whereas|vs\.?|compared to)\b[^.\n]{0,30}?\b(?:blog|docs?|model card|others|benchmarks?|paper|advertised|claimed|"
    r"reported|published)\b|"
    # "TPOT ~85 ms per token on H100, colleague's deployment gets ~14 ms", "node B gives ~55% of the throughput of node A"
    r"\b(?:TPOT|ITL|TTFT|latency)\b[^.\n]{0,40}?~?\d+(?:\.\d+)?\s*(?:ms|s)\b[^\n]{0,80}?\b(?:colleague|coworker|teammate|"
    r"other team|others?|another (?:deployment|node|cluster|box|server|team)|their|the reference|node [A-Z0-9])(?:'?s)?\b"
    r"[^.\n]{0,40}?\b(?:gets?|got|does|did|sees?|saw|has|had|measures?|measured|reports?|reported)\s*(?:only )?"
    r"(?:~|about |around )?\d|"
    r"\b(?:gives?|gets?|reaches?|delivers?|does|achieves?|has) (?:only |about |around |roughly |just )?~?\d+(?:\.\d+)?\s*% "
    r"of (?:the )?(?:throughput|speed|performance|tok(?:en)?s?/s)\b|"
    # "TPOT ~95ms on 2x L40S, expected ~30ms", "the first requests have 20-40 s TTFT"
    r"\b(?:TPOT|ITL|TTFT|latency)\b[^.\n]{0,40}?~?\d+(?:\.\d+)?\s*(?:ms|s)\b(?:[^.\n]|\.(?=\d)){0,50}?,?\s*expected\s*~?\d[\d.]*"
    r"\s*(?:ms|s)?|"
    r"\b\d+(?:\.\d+)?(?:\s*[-\u2013]\s*\d+(?:\.\d+)?)?\s*(?:s|sec|seconds) (?:of )?TTFT\b|"
    # "TTFT 40+ s for 100k-token prompts"; a decode of a few tokens a second ("4 tok/s and Triton warnings"; not a
    # progress bar's "est. speed input: 1.36 toks/s, output: ...]")
    r"\bTTFT\s*~?\d+(?:\.\d+)?\+?\s*(?:s|sec|secs|seconds)\b|(?<![\d.,])(?<!input: )(?<!output: )[1-9](?:\.\d+)?\s*(?:tok(?:en)?s?/s|t/s|tps)\b(?![^\n]{0,40}\])|"
    # a latency or throughput figure gone bad in Japanese, Chinese and Korean: "TPOT が悪い", "吞吐下降", "TPOT이 나빠"
    r"(?:TPOT|ITL|TTFT|\u30b9\u30eb\u30fc\u30d7\u30c3\u30c8|\u30ec\u30a4\u30c6\u30f3\u30b7|\u541e\u5410\w?|\u5ef6\u8fdf|"
    r"\ucc98\ub9ac\ub7c9|\uc9c0\uc5f0)\s*(?:\u304c|\u306f|\u3082|\uc774|\uac00|\uc740|\ub294)?\s*(?:\u60aa\u3044|\u60aa\u304f|"
    r"\u60aa\u5316|\u4f4e\u4e0b|\u53d8\u5dee|\u66f4\u5dee|\u4e0b\u964d|\u6076\u5316|\ub098\ube60|\ub098\uc058|\uc545\ud654|"
    r"\ub5a8\uc5b4)|"
    # Italian, Dutch, Polish, Czech, Turkish, Vietnamese, Indonesian, Swedish, Ukrainian, Hindi, Arabic, Thai
    r"\bpi\u00f9 lent[oaie]\b|\blentissim\w*|\blangzamer\b|\btrager\b|\bwolniej\b|\bpomalej\w*|\bpomal\u00e9\b|"
    r"\byava\u015f\w*|\bch\u1eadm h\u01a1n\b|\br\u1ea5t ch\u1eadm\b|\b(?:lebih|sangat|jadi) lambat\b|\bl\u00e5ngsammare\b|"
    r"\u043f\u043e\u0432\u0456\u043b\u044c\u043d\w*|\u0927\u0940\u092e\u093e|\u0623\u0628\u0637\u0623|\u0e0a\u0e49\u0e32\u0e25\u0e07|"
    # "Throughput drops to a crawl", "throughput half of what we get bare metal", "TTFT spikes to 4s",
    # "p99 latency is 40s+"
    r"\b(?:drops?|dropped|slows?|slowed|grinds?|ground) (?:down )?to a crawl\b|\bcrawls?\b(?= along| at)|"
    r"\bthroughput (?:is )?(?:about |roughly |only |just )?(?:half|a third|a quarter) (?:of )?(?:what|the)\b|"
    r"\bwhy (?:is|are) [^.\n?]{0,50}?\b(?:so |this |that |very )slow\b|"
    r"\blatency spikes\b|\b(?:p9\d(?:\.9)? )?latency (?:explodes|blows up|skyrockets|goes through the roof)\b|"
    r"\b(?:TTFT|TPOT|ITL|latency)\b (?:\w+ )?spikes? (?:up )?to \d|"
    r"\bp9[059](?:\.9)?(?: latency| TTFT| TPOT| ITL)? (?:is|are|was|hits?|reaches?|of) ~?\d+(?:\.\d+)?\s*(?:s|sec|seconds)\b|"
    # "Throughput flat-lines at ~9 req/s no matter how many clients"
    r"\b(?:throughput|tok(?:en)?s?/s|req(?:uest)?s?/s)\b[^.\n]{0,20}?\b(?:flat-?lines?|flatlines|stays? flat|"
    r"(?:does(?:n'?t| not)|won'?t) scale)\b|"
    # "Throughput collapses once more than one customer is active"
    r"\b(?:throughput|tok(?:en)?s?/s|performance)\b (?:\w+ )?(?:collapses|collapsed|tanks|tanked|craters|cratered)\b|"
    # "Only ~35 tok/s single stream, H100 box does 150+"
    r"\bonly (?:~|about |around |roughly )?\d[\d,.]*\s*k?\s*(?:output )?(?:tok(?:ens)?/s|t/s|tps)\b|"
    # "loses ~40% throughput", "TPOT doubles", "a 2x regression", "falls off a cliff above ~100 requests"
    r"\blos(?:es|ing|t|e) (?:~|about |around )?\d+(?:\.\d+)?\s*% (?:of )?(?:its |the )?(?:\w+ )?throughput\b|"
    r"\b(?:TPOT|TTFT|ITL|latency)\b (?:\w+ )?(?:doubles|doubled|triples|tripled)\b|"
    r"\b\d+(?:\.\d+)?\s*x (?:throughput |perf(?:ormance)? |speed )?regression\b|"
    r"\b(?:falls?|fell|falling|drops?|dropped) off a cliff\b|\b(?:throughput|latency|performance) cliff\b|"
    # the tail only: "p50 looks like a win, the tail is terrible", "p99 TPOT got much worse"
    r"\b(?:the )?(?:tail|p9[05]|p99(?:\.9)?)(?: latency| TPOT| TTFT| ITL)? (?:is|are|looks?|got|gets|went) (?:\w+ )?"
    r"(?:terrible|awful|bad|horrible|worse|much worse|way worse)\b", re.I)

# the reporter saying the engine stops answering without an error: "Server hangs on the first request", "just stuck",
# "the call never returns", "freezes after a few minutes"
HANG = re.compile(r"\b(?:hangs?|hung|hanging|(?:gets? |is |are |just |was )stuck|never returns?|freez(?:es|ing)|froze)\b", re.I)

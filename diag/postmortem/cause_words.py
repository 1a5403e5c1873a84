"""The words reporters use for a cause outside the hybrid/spec-decode families that a quiet report shows: the
host's CPUs or the GPU's clocks held down, another process on the GPU, a MIG slice, a proxy's timeout, requests routed
without affinity, a chat template applied twice, the same request sent straight to the server coming back right, the
model's own tokenizer fixing the output. Data only: the prose reader decides which line each one is searched on."""

from __future__ import annotations

import re

from .nearmiss import STREAM_CUT

# the container's CPUs cut by its limit: "cpu.stat nr_throttled 18922", "limits: {cpu: "2", ...}", "CPU throttling"
# ... or one of its processes pegged ("the APIServer process sits at 100% of one core")
CPU_STARVED = re.compile(r"\bnr_throttled\s*[:=]?\s*[1-9]\d*|\bcpu[- ]?throttl\w*|\bthrottled (?:by|on) (?:the )?cpu\b|"
                         r"\bAPI ?Server\b[^.\n]{0,40}?\b(?:at|pegged at|pinned at|using|hits?|maxed at) ~?100\s*% "
                         r"(?:of )?(?:one|a single|1) (?:core|CPU|vCPU)\b|"
                         r"\blimits:\s*\{?\s*cpu:\s*[\"']?(?:[1-4]|[1-9]\d{0,2}m)[\"']?(?=[,}\s])|"
                         # 'Pod limit was cpu: "4"', "nr_throttled climbing", cgroup v2's "cpu.max 400000 100000"
                         r"\blimit (?:was|is|of|at) cpu:\s*[\"']?[1-8][\"']?(?![\d.])|"
                         r"\bnr_throttled\W{0,3}(?:climbing|increasing|growing|rising|keeps)\b|"
                         r"\bcpu\.max\b[^\n]{0,20}?\b[1-8]00000 100000\b|"
    # "resources.limits.cpu: "4"", "container_cpu_cfs_throttled_periods_total climbs constantly"
    r"\blimits\.cpu:\s*[\"']?[1-8][\"']?(?![\d.])|cfs_throttled\w*[^.\n]{0,30}?\b(?:climb|increas|grow|ris|keep)\w*|"
    # the share of periods throttled: "container_cpu_cfs_throttled_periods_total / container_cpu_cfs_periods_total
    # over the last 15min: 0.93"
    r"cfs_throttled_periods\w*\s*/\s*\w*cfs_periods\w*[^\n]{0,40}?[:=]\s*(?:0?\.[3-9]\d*|[3-9]\d(?:\.\d+)?\s*%)",
    re.I)
# the GPUs' clocks held down (nvidia-smi -q's clock event reasons, the reporter's words): "SW Power Cap : Active",
# "HW Thermal Slowdown : Active", "power-capped", "thermal throttling"
GPU_THROTTLED = re.compile(
    r"\b(?:SW Power Cap|HW Slowdown|HW Thermal Slowdown|HW Power Brake Slowdown|SW Thermal Slowdown|"
    # (clocks held by an application clock setting: `nvidia-smi -ac` / a locked-clocks profile)
    r"Applications Clocks Setting)\s*:\s*Active\b|"
    # the query names of the same reasons: "clocks_event_reasons.hw_power_brake_slowdown: Active", "SM clock 1980 -> 1125 MHz"
    r"\bclocks?_(?:event|throttle)_reasons\.\w+\s*[:=]\s*Active\b|"
    r"\bSM clocks? (?:\w+ )?~?\d{3,4}\s*(?:->|\u2192|to)\s*~?\d{3,4}\s*MHz\b|"
    r"\bpower[- ]capped\b|\b(?:thermal(?:ly)?|power|clock) throttl\w*|\bGPUs? (?:is |are |was |were )?throttl\w*", re.I)
# another process holding memory on the engine's GPUs: "GPU0 on that box is shared with our team's embedding service",
# "another process on the same GPU", "nvidia-smi shows a python pid holding 16 GiB", "co-tenant"
COTENANT = re.compile(
    r"\b(?:share|shares|sharing) (?:the|that|this|our|a|one|each) (?:same )?(?:GPU|card|device)s? with\b|"
    # "the platform team's scheduler started packing a small NCCL-heavy fine-tuning job (2 GPUs of ours, MPS) onto the
    # node"
    r"\b(?:pack\w*|schedul\w*|plac\w*|land\w*|co-?locat\w*|put|putting)\b[^.\n]{0,80}?\b(?:job|workload|process|"
    r"container|pod|service)\b[^.\n]{0,60}?\b(?:onto|on|to) (?:the same|the|our|this) (?:node|GPUs?|cards?|box|host)\b|"
    # the device plugin sharing one GPU between pods: "The device plugin has time-slicing enabled (replicas: 2)"
    r"\btime-?slic(?:ing|ed)\b[^.\n]{0,40}?\b(?:enabled|on|replicas)\b|"
    # "The embedding TEI container ... was scheduled onto the same GPU"
    r"\b(?:was|were|got|is|are|gets) scheduled (?:on|onto|to) the same (?:GPU|card|device)\b|"
    r"\b(?:GPUs?|cards?|devices?|box|node|[ABHL]\d{2,3}S?)\s*\d?\b[^.\n]{0,30}?\b(?:is |are |was |were )?shared with\b"
    r"[^.\n]{0,40}?\b(?:service|server|process|job|model|tenant|container|pod|workload|team|app|instance)\b|"
    r"\b(?:another|other|a second|a different|someone else'?s?) (?:\w+ ){0,2}?"
    r"(?:process|service|job|tenant|container|pod|workload|app|team)\b[^.\n]{0,30}?"
    r"\b(?:on|holding|using|sharing|occup\w+) (?:the same |that |our )?(?:GPUs?|cards?|devices?)\b|\bco-?tenants?\b|"
    # "a colleague's Jupyter kernel that got scheduled on the same GPU", "PID 2210711 is a colleague's Jupyter kernel"
    r"\b(?:colleague|coworker|co-worker|teammate|another user|another team)'?s? (?:idle |old |stale |forgotten )?"
    r"(?:[\w-]+ )?(?:kernel|notebook|process|job|script|session|container)\b|"
    # "That's a jupyter kernel from a colleague"
    r"\b(?:kernel|notebook|process|job|script|session|container) (?:from|of|belonging to) (?:a |my |our )?(?:colleague|coworker|"
    r"co-worker|teammate|another user|another team)\b|"
    r"\b(?:scheduled|placed|running|landed|pinned|started) on the same (?:GPUs?|cards?|devices?)\b|"
    # "we run this next to a bge-m3 embedding server on the same H100"
    r"\b(?:next to|alongside|beside) (?:a|an|the|our|their) (?:[\w.-]+ ){0,3}?(?:server|service|model|container|job|process|"
    r"pod)\b[^.\n]{0,30}?\bon the same (?:GPU|card|device|node|[ABHL]\d{2,3}S?)\b|"
    # "Someone on the data team started a reward-model job pinned to CUDA_VISIBLE_DEVICES=3 on our node"
    r"\b(?:someone|somebody|another team|other team)\b[^.\n]{0,40}?\b(?:started|launched|ran|running|kicked off|left)\b"
    r"[^.\n]{0,60}?\b(?:job|process|training|script|container|pod|notebook)\b[^.\n]{0,60}?\b(?:on|to) (?:our|the same|this|"
    r"that) (?:node|GPUs?|cards?|box|host|server)\b|"
    r"\bnvidia-smi\b[^.\n]{0,40}?\b(?:another|other|a|second|foreign) (?:\w+ )?(?:pid|process)\b[^.\n]{0,30}?"
    r"(?:\b(?:holding|using|with|at)\s+)?~?\d+(?:\.\d+)?\s*(?:GiB|GB|MiB)\b", re.I)
# requests spread over several engines so a conversation's next turn meets another cache: "plain kube-proxy (round
# robin over 4 pods)", "lands on a different pod", "use session affinity / prefix-aware routing"
# (an affinity counts where it is missing or the fix: "same router with session affinity" rules the router out)
SPLIT_ROUTING = re.compile(
    r"\bround[-_ ]?robin\b|"
    # nginx's least-connections balancing of an upstream ("least_conn;"), a turn landing "on a random-ish replica"
    r"^\s*least_conn\s*;|\blands? on a random(?:-ish)? (?:pod|replica|instance|engine|node|server|backend)\b|"
    r"\b(?:no|without|lacks?|lacking|adds?|added|adding|use|using|enabled?|enabling|turn(?:ed)? on|switch(?:ed)? to|"
    r"put|putting)\b[^.\n]{0,30}?(?:\bsession[- ]?affinity\b|\bsticky sessions?\b|\bconsistent[- ]hash\w*|"
    r"\b(?:prefix|cache|kv)[- ](?:cache[- ])?aware (?:rout\w+|load[- ]balanc\w+))|"
    r"\blands? on (?:a )?(?:different|another|other) (?:pod|replica|instance|engine|node|server)s?\b|"
    # a Kubernetes Service's "sessionAffinity: None", an ingress's "session-affinity=off"
    r"\bsession[-_ ]?affinity\b[\"']?\s*[:=]\s*[\"']?(?:none|off|false|disabled)\b|"
    # "kube-proxy spreads the turns of one conversation across the 4 pods"
    r"\bspread\w* (?:the )?(?:turns|requests|calls|conversations?|sessions?)\b[^.\n]{0,40}?\bacross (?:the |all )?(?:\d+ )?"
    r"(?:pods|replicas|instances|engines|nodes|servers|backends)\b", re.I)
# the reporter's trial that the model's own tokenizer fixes the output: "Dropping --tokenizer (use the one shipped with
# the checkpoint) -> perfect output", "without --tokenizer it is fine"
OWN_TOKENIZER_FIXES = re.compile(
    r"\b(?:dropp\w*|remov\w*|without|unset\w*|delet\w*|no)\s+(?:the\s+)?[`'\"]?--tokenizer\b"
    r"[^\n]{0,100}?(?:->|\u2192|=>|:|\bgives?\b|\bis\b|\bit'?s\b)\s*(?:all |the output is )?"
    r"(?:perfect|fine|correct|coherent|clean|good|normal|works?|fixed|ok)\b|"
    # "Pointing --tokenizer at the model dir itself fixed it"
    r"\bpoint\w* (?:the\s+)?[`'\"]?--tokenizer\b[`'\"]?\s+(?:back\s+)?(?:at|to) the (?:model(?:'s)?|original|official|upstream) "
    r"(?:own )?(?:model )?(?:dir|directory|folder|path|repo|repository|checkpoint)\b[^.\n]{0,20}?\bfix(?:es|ed)\b|"
    # "Dropping --tokenizer fixes the text"
    r"\b(?:dropp\w*|remov\w*|without|unset\w*)\s+(?:the\s+)?[`'\"]?--tokenizer\b[`'\"]?\s+(?:\([^)]{0,80}\)\s+)?"
    r"fix(?:es|ed)\b", re.I)
# a proxy's or load balancer's timeout in front of the server: "ALB idle_timeout 60 s", "proxy-read-timeout \"60\"",
# "the LB closes the connection"
PROXY_TIMEOUT = re.compile(
    r"\b(?:idle[-_ ]?timeout|proxy[-_ ]read[-_ ]timeout|proxy[-_ ]send[-_ ]timeout|read[-_ ]timeout|"
    r"keep-?alive[-_ ]timeout|upstream[-_ ]timeout|"
    # Envoy's (Istio's) route timeout, as its access log's response-code details and its config name it
    r"response_timeout|upstream request timeout|route[-_ ]timeout)\b|\broutes?\b[^.\n]{0,30}?\btimeout[\"'`]?\s*[:=]\s*\d+\s*(?:ms|s|m)?\b|"
    r"\b(?:ALB|ELB|NLB|load balancer|LB|ingress|nginx|envoy|proxy|gateway|Cloudflare)\b[^.\n]{0,60}?"
    r"\b(?:tim(?:es|ed) out|closes? the (?:client )?connection|closed the (?:client )?connection|"
    r"drops? the connection|cuts? the (?:connection|stream))\b", re.I)
# the engine on a slice of a GPU (NVIDIA MIG): "MIG 3g.40gb Device 0", "a MIG 1g.10gb slice"
# the drafter's own weights found broken: "MTP head is basically noise", "the uploader quantized the MTP block too",
# "modules_to_not_convert does not list mtp.*"
DRAFT_WEIGHTS = re.compile(
    r"\b(?:MTP|draft(?:er)?|EAGLE\w*|spec(?:ulative)?)[ -](?:head|layers?|block|weights|module)s?\b[^.\n]{0,60}?\b(?:quanti[sz]ed|"
    r"(?:basically |just |pure )?noise|randomly initiali[sz]ed|uncalibrated|never calibrated|missing from)\b|"
    r"\bmodules_to_not_convert\b[^.\n]{0,60}?\bmtp\b|\bmtp\b[^.\n]{0,30}?\bmodules_to_not_convert\b|"
    r"\bmtp\.\*?[`'\"]?\s[^.\n]{0,40}?\bquanti[sz]ed\b|\b(?:ran|applied|quanti[sz]ed)\b[^.\n]{0,40}?\bover the (?:MTP|draft) "
    r"(?:block|head|layers?)\b", re.I)
# requests that forbid the end of the answer: "ignore_eos=True", '"ignore_eos": true' (a throughput benchmark's setting
# copied into a client), so every answer runs to max_tokens and a greedy one loops
IGNORE_EOS = re.compile(r"\bignore_eos[\"']?\s*[=:]\s*(?:True|true|1)\b")
# the engine under Windows' WSL2: vLLM's own "Using 'pin_memory=False' as WSL is detected" warning, the reporter's
# "under WSL2"
WSL = re.compile(r"\bWSL is detected\b|\bWSL ?2\b|\b(?:under|on|in|inside|via|through) WSL\b")
# a reasoning model's thinking spending the request's max_tokens: "thinking eats it all", "the reasoning used up the
# whole max_tokens", a response body whose content is empty beside its reasoning_content
REASONING_ATE_BUDGET = re.compile(
    r"\b(?:thinking|reasoning)\b[^.\n]{0,30}?\b(?:eats?|ate|consumes?|consumed|uses? up|used up|burns?|burned|exhausts?|"
    r"exhausted|takes?|took|spends?|spent)\b[^.\n]{0,10}?\b(?:it all|all (?:of )?(?:it|them|the tokens)|the (?:whole |entire )?"
    r"(?:budget|max_tokens|token budget|tokens))\b|"
    r"[\"']content[\"']\s*:\s*(?:\"\"|''|null)\s*,\s*[\"']reasoning_content[\"']\s*:\s*[\"'][^\"']{20}", re.I)
# a short answer returned as reasoning: the message's content empty beside a reasoning_content that holds the answer
# (Python's repr "content=None, ... reasoning_content='Canberra'" or JSON), with thinking switched off for the request
ANSWER_AS_REASONING = re.compile(
    r"\bcontent[\"']?\s*[=:]\s*(?:None|null|\"\"|'')\s*,[^\n]{0,300}?\breasoning(?:_content)?[\"']?\s*[=:]\s*"
    r"[\"']([^\"'\n]{1,200})[\"']")
# ... told in words: 'the response JSON has "content": null and the whole answer text is inside "reasoning_content"'
ANSWER_AS_REASONING_TOLD = re.compile(
    r"\bcontent[\"'`]?\s*(?:[:=]\s*|is\s+|(?:comes?|came)\s+back\s+(?:as\s+)?)?(?:null|None|empty)\b[^.\n]{0,80}?"
    r"\b(?:answer|text|output|response|reply)\b[^.\n]{0,40}?\b(?:in|inside|into|under)\s+(?:the\s+)?[\"'`]?"
    r"reasoning(?:_content)?\b", re.I)
THINKING_OFF = re.compile(r"[\"']?enable_thinking[\"']?\s*[=:]\s*(?:False|false|0)\b|\b(?:disable|turn off|switch off)\w* "
                          r"(?:the )?thinking\b|\bthinking (?:disabled|off)\b|/no_think\b", re.I)
# text a drafter cannot predict, or predicts only in the language it was trained on: "32-char hex ids and hashes copied
# from the prompt", "base64", "since we launched our Japanese product", "the same server is fine on normal text"
HARD_TO_DRAFT = re.compile(
    r"\bhex(?:adecimal)? (?:ids?|strings?|digests?|hashes)\b|\b(?:sha\d*|md5) (?:hashes|digests|sums)\b|\bhashes\b|"
    r"\bu?uids\b|\bguids\b|\bbase64\b|\brandom (?:strings|ids|tokens|characters)\b|\bhigh[- ]entropy\b|"
    r"\b(?:Japanese|Korean|Chinese|German|French|Spanish|Finnish|Arabic|Russian|Thai|Vietnamese|Hindi|Turkish|Polish|"
    r"Portuguese|Italian|Indonesian|non-English|multilingual|JP|KR|CN)\b[^.\n]{0,30}?\b(?:prompts?|traffic|requests|text|"
    r"users|conversations|queries|product|customers)\b|"
    r"\bserver is fine on (?:normal|other|english|regular|plain) (?:text|prompts|traffic)\b", re.I)
# ROCm without AITER: vLLM uses AMD's AITER kernels only when VLLM_ROCM_USE_AITER=1, so a deployment that lost the
# variable runs the Triton fallbacks ("we dropped VLLM_ROCM_USE_AITER when we cleaned up the manifest")
AITER_DROPPED = re.compile(
    r"\b(?:dropped|removed|unset|forgot|lost|deleted|left out|omitted|without|missing|no longer (?:set|sets|has))\b"
    r"[^.\n]{0,40}?\bVLLM_ROCM_USE_AITER\b(?!_)|\bVLLM_ROCM_USE_AITER\b(?!_)[^.\n]{0,30}?\b(?:is |was )?(?:unset|not set|"
    r"missing|removed|dropped|left out)\b")
MIG = re.compile(r"\bMIG[- ](?:\d+g\.\d+gb|slice|profile|instance|partition)\b|\b\d+g\.\d+gb\b", re.I)
# the chat template applied twice: the client renders the model's template and posts the result as a chat message
# ("vLLM applies the chat template a second time", "double chat template", a message whose content holds role markers)
DOUBLE_TEMPLATE = re.compile(
    # (the same with the tokenizer's BOS: 'prompt_token_ids: [1, 1, ...]', "the tokenizer adds BOS again")
    r"prompt_token_ids\b[^\[\n]{0,30}?\[(\d+),\s*\1\s*,|\b(?:BOS|<s>|<\|bos\|>)(?: token)?\b[^.\n]{0,40}?\b(?:again|twice|"
    r"doubled|duplicated)\b|\bdouble[ds]?[- ]BOS\b|"
    r"\bchat[- ]template\b[^.\n]{0,60}?\b(?:twice|a second time|double[sd]?)\b|"
    # "so the template is applied twice"; a logged prompt that holds the BOS twice
    r"\btemplate\b[^.\n]{0,20}?\b(?:is |was |gets |got )?(?:applied|rendered|added) (?:twice|two times|a second time)\b|"
    r"\bprompt:?\s*['\"][^\n]{0,300}?(?P<bos><\|begin_of_text\|>|<s>|<bos>|<\|startoftext\|>)[^\n]{0,300}?(?P=bos)|"
    r"\b(?:double[sd]?|twice[- ]applied|nested) (?:chat[- ])?templat\w*|"
    r"[\"']content[\"']\s*:\s*[\"'][^\"']{0,200}?(?:<\|im_start\|>|<\|start_header_id\|>|"
    r"<beginning_of_sentence>|<start_of_turn>|<\|user\|>|\[INST\])", re.I)
# the same request sent straight to the engine is fine, only the client's path garbles it: "curl -N straight to :8000
# with the same request -> text is perfect", "bypassing nginx the output is clean"
# the client's own count of one token per streamed chunk ("n_tokens += 1  # one chunk == one token", "expected 1 token per
# chunk"): under speculative decoding a chunk carries every token a step accepted
CHUNK_AS_TOKEN = re.compile(r"\b(?:one|1) (?:SSE )?(?:chunk|event|delta) ?(?:==|=|is|as|per) ?(?:one|1) token\b|"
                            r"\b(?:one|1) tokens? per (?:SSE |stream(?:ed)? )?(?:chunk|event|delta)\b|"
                            r"\bcount(?:s|ed|ing)? (?:the )?(?:stream(?:ed|ing)? |SSE )?(?:chunks|events|deltas) as tokens\b",
                            re.I)
# how long the same request took sent straight to the engine, past the proxy ("Direct curl to the pod IP ...: returns
# 200 after 97 s", "curl directly to :8000 ... (3412 tokens, took 79 s)"): beside a proxy's timeout, the answer's length
DIRECT_DURATION = re.compile(r"\b(?:straight|directly|direct|bypass\w*)\b[^\n]{0,120}?\b(?:after|took|takes|in|within)\s+"
                             r"(?:~|about\s+|around\s+)?(\d{1,4}(?:\.\d+)?)\s*(?:s|secs?|seconds)\b", re.I)
DIRECT_FINE = re.compile(
    r"\b(?:straight|directly|direct) (?:to|against|at) (?:the )?(?:vLLM|server|engine|pod|:\d{2,5}|port \d+|localhost)\b"
    r"[^\n]{0,80}?(?:(?:->|\u2192|=>|:|\bgives?|\breturns?|\bis|\bare|\bshows?)\s*(?:the |a )?(?:text|output|answers?)?\s*"
    r"(?:is |are )?(?:perfect|fine|correct|clean|coherent|ok|(?:byte-)?identical)\b|\bstreams? (?:smoothly|fine|normally|evenly)\b|"
    r"\bnever (?:duplicated|garbled|broken|corrupt\w*|wrong|repeat\w*|loop\w*)\b)|"
    # "curl -N against the pod IP directly: every delta is valid UTF-8, no garbage"
    r"\b(?:curl|directly|direct)\b[^\n]{0,80}?(?:->|\u2192|=>|:)[^\n]{0,60}?\b(?:no (?:garbage|garbled \w+|mojibake|"
    r"replacement char\w*|broken \w+)|valid UTF-?8)\b|"
    # "`curl -N` against /v1/chat/completions with stream=true gives perfectly fine text"
    r"\bcurl\b[^.\n]{0,80}?\b(?:gives|returns|shows|is|looks) (?:perfectly |completely |totally )?(?:fine|clean|correct|"
    r"perfect|coherent)\b|"
    # the verdict on the raw stream the line before showed: "Perfect UTF-8."
    r"^\W*(?:perfect|valid|clean|correct)(?:ly valid)? UTF-?8\b|"
    # "Same request with curl -N and stream=true: text is clean"
    r"\bcurl\b[^\n]{0,80}?(?:->|\u2192|=>|:)\s*(?:the )?(?:text|output|answers?)?\s*(?:is |are )?"
    r"(?:perfect|fine|correct|clean|coherent|ok)\b|"
    # "ran the same prompt with plain curl -N and reads the raw SSE: the text there is complete and correct"
    r"\bcurl\b[^\n]{0,120}?\b(?:text|output|stream|answer)\b[^.\n]{0,20}?\b(?:is|was|looks)\s+(?:complete|intact|"
    r"correct|fine|clean)\b|"
    # "Curl is fine", "curl -N gives clean text"
    r"\bcurl(?: -N)?(?: \w+){0,3}? (?:is|are|was|were|works|gives|returns) (?:perfectly |completely )?(?:clean |correct )?"
    r"(?:fine|clean|correct|perfect|ok|text)\b|"
    # "Same request from Python requests -> ... a good answer"
    r"\bsame (?:request|prompt|call) (?:from|with|via|through|using) [^\n]{0,40}?(?:->|\u2192|=>)[^\n]{0,80}?"
    r"\b(?:good|correct|fine|clean|perfect|coherent) (?:answer|output|text|response)s?\b|"
    # "If I curl vLLM directly with stream=true the concatenated text is clean"
    r"\b(?:vLLM|server|engine|pod|backend) directly\b[^.\n]{0,60}?\b(?:is|are|comes back|looks|stays) (?:\w+ )?"
    r"(?:perfect|fine|correct|clean|coherent|ok|identical)\b|"
    # "curl -N straight to the pod (port 8000), 500 streamed answers: 0 garbled"
    r"\b(?:straight|directly|direct) (?:to|against|at) (?:the )?(?:vLLM|server|engine|pod|:\d{2,5}|port \d+|localhost)\b"
    r"[^\n]{0,80}?(?:->|\u2192|=>|:)\s*(?:0|zero|none|no)\s+(?:garbled|broken|corrupt\w*|wrong|bad|mangled)\b|"
    # "the same request with stream=false, or `curl -N` and reading the raw SSE, never has the replacement chars"
    r"\bsame (?:request|prompt|call)s? (?:with|via|through|from|using)\b[^\n]{0,80}?\bnever (?:has|have|shows?|contains?|gets?|"
    r"returns?) (?:the |any )?(?:replacement char\w*|mojibake|garbl\w*|U\+FFFD|broken \w+|garbage)|"
    # "kubectl port-forward svc/dsv3 8000 -> tokens stream smoothly": the pod reached past the ingress
    r"\bport-forward\b[^\n]{0,60}?(?:->|\u2192|=>|:)[^\n]{0,30}?\b(?:stream\w* (?:smoothly|fine|normally|evenly)|smooth|"
    r"fine|clean|correct)\b|"
    # "vLLM's SSE events are complete UTF-8 (checked with tcpdump)": the server's bytes are right on the wire
    r"\b(?:SSE|events?|chunks?|bytes|deltas?|stream)\b[^.\n]{0,30}?\b(?:are|is|were|was) (?:all )?(?:complete|valid|"
    r"well-formed|correct|intact) UTF-?8\b|"
    # "Switched the client to an InputStreamReader (stateful decoder) -> no more \ufffd"
    r"\b(?:switched|changed|moved|fixed|patched) (?:the |our )?(?:\w+ )?client\b[^\n]{0,80}?(?:->|\u2192|=>|:)\s*"
    r"(?:no more|fixed|gone|clean|fine)\b|"
    # "Python client, same messages: fine": another client of the same server is right
    r"\b(?:python|curl|go|node|java|another|other|a different|our other) client\b[^.\n]{0,40}?(?:->|=>|:)\s*(?:fine|correct|"
    r"clean|ok|normal|good)\b|"
    # the server's stream, concatenated, is right: "curl ... against the server directly: (deltas) Concatenated, that's fine"
    r"\bconcatenated,? (?:that'?s|it'?s|it is|the text is|they are|they're) (?:fine|correct|clean|right|perfect)\b|"
    # "vLLM output is fine": the report's own verdict on the engine's side
    r"\bvLLM(?:'s)? (?:own )?(?:output|answers?|text|stream) (?:is|are|was|were) (?:fine|correct|clean|ok|perfect)\b|"
    r"\bbypass\w* (?:the )?(?:proxy|gateway|nginx|load balancer|ingress|LB|router)\b[^.\n]{0,60}?"
    r"\b(?:perfect|fine|correct|clean|coherent|ok)\b", re.I)
# replicas behind one endpoint that answer differently (another checkpoint revision, another template): "Each replica
# alone is perfectly repeatable", "pinning both replicas to the same revision made answers identical"
REPLICAS_DIFFER = re.compile(
    r"\beach (?:replica|pod|instance|node|server|backend) (?:alone|on its own|by itself|individually)\b[^.\n]{0,30}?"
    r"\b(?:repeatable|deterministic|consistent|fine|correct|identical|stable)\b|"
    r"\breplicas? (?:run|runs|on|with) (?:different|mixed) (?:revisions?|snapshots?|versions?|checkpoints?|images?)\b|"
    # "the two replicas aren't serving the same checkpoint"
    r"\breplicas (?:aren'?t|are not|were not|weren'?t) (?:serving|running|using|on) the same (?:checkpoint|model|weights|"
    r"revision|version|image|quanti[sz]ation)\b|"
    r"\bpinn\w* (?:both|all|the) (?:replicas|pods|instances) to the same (?:revision|snapshot|version|checkpoint|image)\b|"
    # "Pinned to granite-a-0: 20/20 identical answers", "two different deployments behind one service name"
    r"\bpinned to [\w.-]+:?\s*(?:\d+\s*/\s*\d+\s+)?(?:identical|deterministic|consistent|the same)\b|"
    r"\btwo (?:different |separate )?(?:deployments|replicas|models|checkpoints|services) behind (?:one|the same|a single)\b|"
    # "The Service round-robins across both, so "non-determinism" = which pod answered"
    r"\b(?:which|what) (?:pod|replica|instance|backend|node|server) (?:answered|served|responded|handled)\b|"
    r"\bthe (?:two|2|three|3) (?:pods|replicas|instances) (?:are|were)(?:n'?t| not) running the same\b|"
    # "Same request 20 times with port-forward to a single pod -> identical every time"
    r"\b(?:to|against|on) (?:a single|one) (?:pod|replica|instance|node|server|backend)\b[^.\n]{0,30}?(?:->|=>|:)?\s*"
    r"(?:identical|deterministic|consistent|the same)\b|"
    # "Directly against pod 0, 50/50 identical", "every A came from vllm-0, every B from vllm-1"
    r"\bagainst (?:pod|replica|instance|node|server|backend) [\w.-]+,? (?:\d+\s*/\s*\d+ )?(?:identical|deterministic|"
    r"consistent|the same|repeatable)\b|\bevery \w+ came from [\w.-]+,? (?:and )?every \w+ (?:came )?from\b|"
    # "Pinning the client to one pod -> the answer is the same every time"
    r"\bpinn\w* (?:the )?(?:client|requests?|traffic|benchmark) to (?:one|a single) (?:pod|replica|instance|node|server|"
    r"backend)\b[^.\n]{0,50}?\b(?:same|identical|deterministic|consistent|repeatable)\b",
    re.I)
# the same prompts replayed straight to the engine hit its prefix cache: "Same prompts replayed with `vllm bench serve`
# from a saved JSONL: Prefix cache hit rate 71.4%", "sending the same request twice with curl -> hit rate 91.4%"
REPLAY_HITS = re.compile(
    r"\b(?:replay\w*|re-?sen[dt]\w*|sen(?:d|ding|t) the same|same (?:prompts?|requests?|conversations?))\b"
    # (with a setting changed it is an A/B test, not a replay: "Same prompts with MTP removed: hit rate ~85%", "the
    # dense model's A/B (same prompts, block size default 16): ... hit rate: 55.3%")
    r"(?:(?!\b(?:without|removed|off|disabled|MTP|spec\w*|drafts?|eagle\w*|ngram|block[-_ ]?size)\b)[^.\n]){0,100}?"
    r"\bhit[- ]rate:?\s*(?:of |is |was )?~?[1-9]\d(?:\.\d+)?\s*%", re.I)
# the reporter's finding that the client sends no more requests than the engine runs: "the server only ever SEES 14
# requests", "vLLM is not holding anything back", "the client only sends 8 at a time"
CLIENT_CAP = re.compile(
    # vllm bench serve's own summary of the load it kept in flight
    r"\bMaximum request concurrency:\s*\d+\b|"
    # the client's HTTP connection pool: aiohttp's TCPConnector(limit_per_host=8), httpx's max_connections=8, requests'
    # pool_maxsize=8 -- no more requests in flight than connections
    r"\b(?:limit_per_host|max_connections|pool_maxsize|max_keepalive_connections)\s*=\s*\d+\b|\bTCPConnector\(limit=\d+|"
    # lm-evaluation-harness's local-completions / local-chat-completions model_args: "num_concurrent=16"
    r"\bnum_concurrent\s*=\s*\d+\b|"
    # a thread pool left at its default size (Python's min(32, cores + 4) workers; a pool of N, max_workers=N)
    r"\bThreadPoolExecutor\(\s*\)|\bThreadPoolExecutor\(\s*(?:max_workers\s*=\s*)?\d+\s*\)|\bPool\(\s*(?:processes\s*=\s*)?\d+\s*\)|"
    r"\b(?:server|engine|vLLM) only (?:ever )?(?:sees|gets|receives|shows|runs)\W{0,2} ~?\d+ (?:requests?|reqs|running)\b|"
    r"\bvLLM (?:is|was) not holding (?:anything|any requests?|requests) back\b|"
    r"\b(?:client|load generator|benchmark|script) (?:only )?(?:sends|submits|keeps) (?:at most |only )?~?\d+ "
    r"(?:requests? )?(?:at a time|in flight|concurrently)\b|"
    # one request at a time: "you only ever send one request at a time", "the openai client in a for-loop over 40k docs"
    r"\bonly (?:ever )?sen(?:d|ds|t|ding) (?:one|1|a single) request at a time\b|"
    r"\b(?:client|SDK|script|requests?)\b[^.\n]{0,40}?\b(?:in a (?:plain |simple |python )?for[- ]?loop|sequentially|"
    r"one after (?:the )?another)\b", re.I)
# the reporter's words that the prompts share no prefix, so the cache has nothing to hit: "unique RAG context each
# time", "every prompt is a fresh document", "The hit rate 0.0% is expected here"
UNIQUE_PROMPTS = re.compile(
    r"\b(?:unique|fresh|distinct|different) (?:\w+ ){0,2}(?:each|every) (?:time|request|call|prompt)\b|"
    r"\b(?:every|each) (?:prompt|request|document|input) is (?:a )?(?:fresh|new|unique|different|distinct)\b|"
    r"\bhit rate (?:of )?(?:~?0(?:\.0)?\s*%? )?is expected\b|\bno (?:shared|common) (?:system )?(?:prefix(?:es)?|prompts?)\b|"
    r"\b(?:prompts?|requests?|documents?) (?:share|have) no (?:common )?prefix\b|"
    # "So the cache is fine, our prompts just never share more than the system prompt"
    r"\b(?:prompts?|requests?|turns?) (?:just |simply |only )?(?:never|don'?t|do not) share (?:more than|anything beyond|"
    r"anything past)\b", re.I)
# the reporter's verdict that the families' settings are not the cause, after their tests: "So spec decode / the 1184
# block size are not it", "prefix caching isn't the problem", "MTP is ruled out"
_FAMILY_SETTING = (r"(?:spec(?:ulative)?[ -]decod\w*|MTP|ngram|EAGLE\w*|drafts?|suffix decoding|prefix[ -]caching|APC|"
                   r"(?:the )?(?:\d+[ -])?(?:token )?block[ -]size|mamba\w*(?: \w+)?|cuda ?graphs?|align mode)")
FAMILIES_RULED_OUT = re.compile(
    r"\b" + _FAMILY_SETTING + r"(?:\s*(?:/|,|and|or)\s*" + _FAMILY_SETTING + r")*\s+(?:is|are|was|were)(?:n't| not)\s+"
    r"(?:it|the (?:cause|problem|culprit|issue)|involved|related|to blame)\b|"
    r"\b" + _FAMILY_SETTING + r"\s+(?:is|are|was|were) (?:ruled out|innocent|not involved)\b|"
    # "Looks like batch-size-dependent reduction order in bf16 matmuls, not spec decode."
    r"\b(?:looks like|seems (?:like|to be)|it'?s|it is|must be)\b[^.\n]{3,120}?,\s*not\s+(?:the\s+|a\s+)?"
    + _FAMILY_SETTING + r"\b|"
    # the reporter's verdict on the whole engine: "Not a vLLM bug, closing.", "nothing to do with vLLM"
    r"\b(?:(?:it'?s|it is|it was|this is|this was|so)\s+)?not\s+(?:a|an)\s+vLLM\s+(?:bug|issue|problem)\b|"
    r"\b(?:it'?s|it is|it was|this is|this was)(?:n't| not)\s+(?:a|an)\s+vLLM\s+(?:bug|issue|problem)\b|"
    r"\bnothing to do with vLLM\b|^\W*not a bug\b", re.I)
# greedy outputs that change with the batch they ran in, and the reporter's words for floating-point numerics (not a
# fault): "concurrency 64, VLLM_BATCH_INVARIANT=1 -> identical across 3 runs", "batch-size-dependent reduction order in
# bf16 matmuls", "divergence always starts at a near-tie token"
BATCH_NUMERICS = re.compile(
    r"\bVLLM_BATCH_INVARIANT\s*=\s*1\b[^\n]{0,60}?\b(?:identical|same|deterministic|stable|reproducible)\b|"
    r"\bbatch[- ](?:size[- ])?(?:dependent|variant)\b[^.\n]{0,40}?\b(?:numerics|reduction|matmuls?|kernels?|GEMMs?)\b|"
    r"\breduction order\b|\bnon-?associativ\w*|\bnear[- ]ties?\b", re.I)
# the reporter's own verdict naming a cause outside vLLM's model paths: "The quant itself is the problem", "So it's the
# checkpoint", "It's our Node frontend", "the gateway was the culprit" (a guess -- "I thought", "maybe", a question --
# is no verdict: the caller skips those lines)
_OUTSIDE = (r"(?:quant(?:ization|ized model)?|checkpoint|weights|client|gateway|proxy|load balancer|frontend|front-end|UI|"
            r"tokenizer|chat template|template|prompts?|pipeline|retriever|hardware|GPU|node|card|network|driver|firmware|"
            r"rollout|deployment|helm values|container|image|router|request|app|plugin|middleware|SDK)")
CAUSE_NAMED = re.compile(
    r"\bthe (?:[\w-]+ ){0,2}" + _OUTSIDE + r"(?: itself)? (?:is|was) (?:the )?(?:problem|culprit|(?:root )?cause|issue|bug)\b|"
    r"\b(?:so |turns? out )?it(?:'s| is) (?:the|our|my|their|a) (?:[\w-]+ ){0,2}" + _OUTSIDE
    + r"\b(?=[,.;!)]| not\b| of (?:this|the|our|that) \w+|$)", re.I)
# (guesses and questions: no verdict)
GUESS = re.compile(r"\b(?:thought|think|suspect\w*|assum\w*|guess\w*|maybe|might|wonder\w*|perhaps|not sure|could be|said|"
                   r"says|suggest\w*|claim\w*|according|someone|if)\b|\?",
                   re.I)
# a proxy in front of the server that retries a request (its timeout shorter than a long stream): Envoy's "retry_on",
# its access log's "upstream_rq_retry=2", "the gateway retries the request"
PROXY_RETRY = re.compile(r"\bretry_on\b|\bupstream_rq_retry=[1-9]|\bproxy_next_upstream\b|"
                         r"\b(?:envoy|nginx|proxy|gateway|LB|load balancer|ingress|router)\b[^.\n]{0,40}?\bretr(?:y|ies|ied)\b"
                         r"(?! (?:is|was) (?:off|disabled))", re.I)
# the same model right in bfloat16: "--dtype bfloat16 (A10G supports bf16) -> fine"
BF16_FINE = re.compile(r"(?:--dtype[ =]|dtype\W{0,3})(?:bfloat16|bf16)\b[^\n]{0,60}?(?:->|=>|:)\s*(?:fine|correct|clean|ok|good|"
                       r"normal|works?)\b|"
                       # "With --dtype bfloat16 everything is fine on the same GPU"
                       r"\bwith (?:--dtype[ =])?(?:bfloat16|bf16)\b,? (?:everything|it|all|the output|outputs|answers) "
                       r"(?:is|are|works?|looks?|was|were) (?:\w+ )?(?:fine|correct|clean|ok|good|normal)\b", re.I)
# structured output's grammar compiled again and again (a schema per request): a stack dump in xgrammar's compiler,
# "each compile takes 0.5-3 s"
GRAMMAR_COMPILE = re.compile(r"\bGrammarCompiler\b|\bcompile_(?:json_schema|grammar|regex)\b|\bgrammar (?:compilation|compiles?|"
                             r"compiling)\b|\b(?:xgrammar|outlines|guidance) compil\w*", re.I)
# requests that ask for the prompt's own logprobs (lm-eval's loglikelihood tasks: "echo": true with logprobs): vLLM
# computes every prompt token for them, so they skip the prefix cache
PROMPT_LOGPROBS = re.compile(r"\bprompt_logprobs\b|[\"']echo[\"']\s*:\s*true\b|\bloglikelihood tasks?\b", re.I)

# a proxy set to buffer or compress the event stream (nginx's "proxy_buffering on;", "gzip_types ... text/event-stream",
# an ingress's 'proxy-buffering: "on"', a response's "X-Accel-Buffering: yes"): tokens wait until a buffer fills
PROXY_BUFFERING = re.compile(r"\bproxy[-_]buffering[\"']?\s*[:=]?\s*[\"']?on\b|\bgzip_types\b[^;\n]{0,80}?text/event-stream|"
                             r"\bX-Accel-Buffering:\s*yes\b", re.I)
# turn markers of a chat format printed in an answer: a model's own end-of-turn token is special -- vLLM stops at it and
# does not print it -- so markers shown as text right after the answer's words are another model's format the model
# imitates ("Paris is the capital of France.<|eot_id|><|start_header_id|>user"); not a template's source or a prompt
TURN_TOKENS_IN_OUTPUT = re.compile(
    r"(?<=[\w.!?)])\s?(?:<\|eot_id\|>|<\|start_header_id\|>|<\|end_header_id\|>|<\|im_start\|>|<\|im_end\|>|\[/?INST\]|"
    r"<end_of_turn>|<start_of_turn>|<\|end\|>|<\|user\|>|<\|assistant\|>|<\|endoftext\|>)")
# a reasoning model's thinking returned inside the answer: the response's content holding "</think>" (the server split
# no reasoning out of it: no --reasoning-parser), or reasoning_content null beside it
THINKING_IN_CONTENT = re.compile(r"[\"']content[\"']\s*:\s*(?:\"(?:[^\"\n\\]|\\.){0,3000}?|'(?:[^'\n\\]|\\.){0,3000}?)</think>|"
                                 r"</think>[^\n]{0,3000}?"
                                 r"[\"']reasoning_content[\"']\s*:\s*null")
# tool calls the server left in the answer's text: "tool calls come back as plain text", "tool_calls empty", a call
# written into the content (an empty tool_calls list alone is any answer without a call)
TOOL_CALLS_AS_TEXT = re.compile(
    r"\btool[_ -]?calls?\b[^.\n]{0,60}?\b(?:come|comes|came|coming) back as (?:plain |raw )?(?:text|content)\b|"
    r"\btool[_ -]?calls?\b[^.\n]{0,60}?\b(?:returned|show(?:s|n)? up|appear(?:s|ed)?|end(?:s|ed)? up|land(?:s|ed)?) "
    r"(?:as (?:plain |raw )?text|in (?:the )?[`'\"]?content)\b|\btool_calls[`'\"]? (?:is |are |was |stays? )?(?:always )?empty\b|"
    # a call written into the answer's content ('"content": "<tool_call>{...}' , '"content": "<function=...')
    r"[\"']content[\"']\s*:\s*[\"'][^\"'\n]{0,2000}?(?:<tool_call>|<function=)",
    re.I)
# a client's request answered by a proxy's timeout in the engine's place: "504 Gateway Timeout", "504 after exactly 60s",
# or cut mid-stream ("peer closed connection without sending complete message body")
GATEWAY_TIMEOUT = re.compile(r"\b504\b(?:\s+Gateway\s+Time-?out\b|[^.\n]{0,20}?\b(?:after|nach|at|tras|despu\u00e9s de) (?:exactly |genau |exactamente )?\d+\s*s)|"
                             r"\bGateway\s+Time-?out\b|"
                             # the client's side of a stream a proxy cut (httpx / h11 / aiohttp)
                             r"\b(?:" + STREAM_CUT + r")\b",
                             re.I)
# the client tokenizing the prompts itself, with the tokenizer it names: 'AutoTokenizer.from_pretrained("meta-llama/...")',
# 'tokenizer_path = "/models/shared/llama-3.1-8b-instruct"' (token ids sent to /v1/completions decode in the server's
# vocabulary)
CLIENT_TOKENIZER = re.compile(r"\bAutoTokenizer\.from_pretrained\(\s*[\"']([\w./-]{3,200})[\"']|"
                              r"\btokenizer(?:_path|_name|_dir)?\s*[=:]\s*[\"']([\w./-]{3,200})[\"']")

"""Model and architecture names that say what kind of layers a model has (not a rule: discovery skips '_' names).

One place for the name lists that the rules and the post-mortem both read: a log often names the model
(`--model nvidia/NVIDIA-Nemotron-Nano-9B-v2`) or its architecture but carries no config.json.
"""

from __future__ import annotations

import re

# architectures with recurrent (Mamba / GDN / linear-attention) layers beside attention
HYBRID_ARCH = re.compile(r"Qwen3Next|Qwen3_5|Qwen3p5|NemotronH|GraniteMoeHybrid|FalconH1|Jamba|Zamba|Bamba|Plamo2|"
                         r"Mamba|Lfm2|KimiLinear|MiniMaxText01|MiniMaxM1|OlmoHybrid|Hymba|Kimi(?:K3)|GptOssHybrid|"
                         # Ling / Ring 2.5 linear and Bailing V3 (IsHybrid: linear-attention layers beside attention)
                         r"BailingMoeV2_5|BailingMoeV25|BailingMoeV3|BailingMoeLinear", re.I)
HYBRID_MODEL = re.compile(r"qwen3[-_.]?next|qwen3\.[5-9]|qwen3[-_]coder[-_]next|qwen3\.?[5-9][-_]|nemotron[-_]?h\b|"
                          r"nemotron[-_ ]?(?:3|nano[-_]?9b|nano[-_]?12b|super|ultra)|granite[-_]4|falcon[-_]?h1|jamba|zamba|"
                          r"bamba|mamba|lfm2|kimi[-_]linear|kimi[-_]k3|minimax[-_]?(?:m1|text)|plamo|hymba|apriel[-_]?h|"
                          r"(?:ling|ring)[-_](?:mini|flash|plus)?[-_]?(?:2\.\d[-_])?linear|(?:ling|ring)[-_]2\.5", re.I)
MLA_ARCH = re.compile(r"DeepseekV[23]|DeepseekV32|DeepseekV4|Deepseek|KimiK2|Glm.*Dsa|GlmMoeDsa|MiniMaxM3|Kimi", re.I)
# (a DeepSeek-R1 distill is a Llama / Qwen model: dense attention)
MLA_MODEL = re.compile(r"deepseek(?![\w./-]*distill)|kimi[-_]k2|glm[-_]?5|dsv[34]|minimax[-_]m3|longcat", re.I)
# attention-only families, for a model named only in the reporter's prose ("GLM-4.6 FP8, P/D with NIXL ...")
DENSE_MODEL = re.compile(r"\bglm[-_]?4(?:\.[5-7])?(?![\w.]*dsa)|\bllama[-_ ]?[234]|\bmistral|\bmixtral|\bqwen[-_]?2(?:\.5)?\b|"
                         r"\bqwen3(?![-_.]?(?:next|\.?[5-9]|coder[-_]next))|\bgpt[-_]oss|\bgemma[-_]?[23]|\bphi[-_]?[34]", re.I)

# model names -> layer family, for logs without a 'Resolved architecture' line or a reachable config.json
NAME_FAMILIES = (
    ("gdn", r"qwen3[-_.]?next|qwen3\.[5-9]|qwen3[-_]coder[-_]next"),
    ("mamba2", r"nemotron[-_]?h\b|nemotron[-_ ]?(?:3|nano[-_]?(?:9|12)b)|granite[-_]4\.\d[-_]h|granite[-_]4[-_]h|"
               r"falcon[-_]?h1|zamba2|bamba|plamo[-_]?2|mamba[-_]?2|codestral[-_]mamba|mamba[-_]codestral"),
    ("mamba1", r"jamba|falcon[-_]mamba|(?<![\w-])mamba[-_](?:130m|370m|790m|1\.4b|2\.8b)"),
)

# name parts that make a model's attention-only layout doubtful, beyond the hybrids named above
MAYBE_RECURRENT = re.compile(r"linear|hybrid|minimax|falcon[-_]?h|granite[-_]?4|rwkv|recurrentgemma", re.I)

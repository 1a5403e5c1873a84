"""Post-mortem, round fifteen: the platform's older words for the attention backend it chose, and wrong output with
drafts on an MLA decode backend. The reports are written here; vLLM's lines are in its own formats."""

from __future__ import annotations

from vllm_diag.postmortem.analyze import analyze_text


def _analyze(lines: list[str]):
    return analyze_text("\n".join(lines), "t.log", use_preflight=False)


def _backend_line(words: str) -> str:
    """vllm/platforms (cuda.py, rocm.py 0.10-0.11): the backend chosen, in the platform's words."""
    return f"(Worker_TP0 pid=412) INFO 10-21 09:12:40 [rocm.py:226] Using {words} backend on V1 engine."


_MLA_EAGLE = [
    "vllm serve deepseek-ai/DeepSeek-R1-0528 -tp 8 --max-model-len 32768 \\",
    "    --speculative-config '{\"method\": \"deepseek_mtp\", \"num_speculative_tokens\": 3}'",
]


def test_the_platforms_words_for_a_backend_read_as_its_enum_name():
    for words, name in (("AITER MLA", "ROCM_AITER_MLA"), ("Triton MLA", "TRITON_MLA"), ("FlashMLA", "FLASHMLA"),
                        ("Sparse MLA", "FLASHMLA_SPARSE"), ("Flash Attention", "FLASH_ATTN")):
        an = _analyze(_MLA_EAGLE + [_backend_line(words)])
        assert an.facts.startup.get("attention_backend_selected") == name, words


def test_wrong_output_with_drafts_on_an_mla_decode_backend_reads_as_the_kernel_limit():
    an = _analyze(["Since MTP went live the quality falls apart: tool calls have wrong argument names."]
                  + _MLA_EAGLE + [_backend_line("AITER MLA")])
    lead = an.findings[0]
    assert lead.category == "spec_kernel_limit" and lead.severity == "warning" and lead.confidence == "low"
    assert "ROCM_AITER_MLA" in lead.title and lead.numbers["decode_query_len"] == 4


def test_tool_calls_with_wrong_arguments_are_the_wrong_output_symptom():
    an = _analyze(["After the upgrade, tool calls have wrong argument names."] + _MLA_EAGLE)
    assert an.facts.startup.get("wrong_output_prose")


def test_the_same_words_on_a_dense_model_make_no_kernel_limit_finding():
    dense = ["vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 4 \\",
             "    --speculative-config '{\"method\": \"eagle3\", \"model\": \"/ckpt/eagle3\", \"num_speculative_tokens\": 3}'",
             _backend_line("Flash Attention")]
    an = _analyze(["Since the drafts went live the quality falls apart."] + dense)
    assert not [f for f in an.findings if f.category == "spec_kernel_limit"]


def test_an_mla_model_without_drafts_gets_no_kernel_limit_finding():
    an = _analyze(["The quality falls apart on long prompts.", "vllm serve deepseek-ai/DeepSeek-R1-0528 -tp 8",
                   _backend_line("AITER MLA")])
    assert not [f for f in an.findings if f.category == "spec_kernel_limit"]

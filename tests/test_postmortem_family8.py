"""Post-mortem, round eight. The logs are written here in vLLM's own formats (messages, files and lines of the
release each names)."""

from __future__ import annotations

from vllm_diag.postmortem.analyze import analyze_text

PKG = "~/miniconda3/envs/v/lib/python3.12/site-packages/vllm"


def test_an_ipython_8_traceback_gives_frames_with_their_lines_and_code():
    """IPython 8 and later print a frame as "File <path>:<line>, in <Class.method>(<args>)" followed by numbered
    source lines and an arrow at the line that ran."""
    an = analyze_text("\n".join([
        "---------------------------------------------------------------------------",
        "AssertionError                            Traceback (most recent call last)",
        "Cell In[4], line 3",
        "      1 from vllm import LLM",
        '----> 3 llm = LLM(model="Qwen/Qwen3-Next-80B-A3B-Instruct", enable_prefix_caching=True)',
        "",
        f"File {PKG}/entrypoints/llm.py:297, in LLM.__init__(self, model, runner, **kwargs)",
        "    295 # Create the Engine",
        "--> 297 self.llm_engine = LLMEngine.from_engine_args(",
        "    298     engine_args=engine_args, usage_context=UsageContext.LLM_CLASS)",
        "",
        f"File {PKG}/v1/core/kv_cache_utils.py:812, in unify_kv_cache_spec_page_size(kv_cache_spec)",
        "    810 for layer_name, layer_spec in kv_cache_spec.items():",
        "    811     if layer_spec.page_size_bytes != max_page_size:",
        "--> 812         assert max_page_size % layer_spec.page_size_bytes == 0, (",
        '    813             "The page size of the layer is not divisible by the maximum page size."',
        "",
        "AssertionError: The page size of the layer is not divisible by the maximum page size. Cannot unify by "
        "adjusting block_size.",
    ]), "t.log")
    root = an.facts.root
    assert [(f.function, f.line) for f in root.frames] == [("__init__", 297), ("unify_kv_cache_spec_page_size", 812)]
    assert root.frames[-1].code == "assert max_page_size % layer_spec.page_size_bytes == 0, ("
    assert an.facts.numbers["kv_cache_utils_line"] == 812
    assert an.findings[0].category == "kv_page_size"

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


def test_the_ds_conv_layout_refusing_drafts_in_align_mode_is_a_capability_gap_not_a_family():
    """mamba_utils.get_conv_copy_spec refuses to copy a dim-first (DS) conv state at an offset of num_accepted_tokens
    - 1 in Mamba cache mode 'align': the DS layout is an opt-in (an environment variable) with no copy for drafts --
    a feature gap whose fix is to drop the opt-in, outside the families, however much the message speaks of drafts."""
    w = "(Worker_TP0 pid=311) ERROR 05-21 08:31:58 [multiproc_executor.py:1007] "
    pkg = "/usr/local/lib/python3.12/dist-packages/vllm"
    log = "\n".join([
        f"{w}Traceback (most recent call last):",
        f'{w}  File "{pkg}/v1/worker/mamba_utils.py", line 124, in collect_mamba_copy_meta',
        f"{w}    copy_spec = state_copy_func(",
        f'{w}  File "{pkg}/model_executor/layers/mamba/mamba_utils.py", line 317, in get_conv_copy_spec',
        f"{w}    raise NotImplementedError(",
        f"{w}NotImplementedError: DS conv state layout does not yet support speculative decoding with "
        "mamba_cache_mode='align' (num_accepted_tokens > 1).",
    ])
    top = analyze_text(log, "t.log", use_preflight=False).findings[0]
    assert top.category == "other" and top.numbers["mamba_utils_line"] == 317


def test_frame_lines_a_terminal_wrapped_after_line_or_inside_the_path_are_joined():
    """A terminal's fixed-width wrap cuts a frame line anywhere; the rest starts the next line without a prefix:
    after "line" ('..., line ' + '1120, in f') or inside the path ('.../v1/at' + 'tention/...py", line 310, in build')."""
    e = "(EngineCore pid=4120) "
    pkg = "/home/ray/anaconda3/lib/python3.12/site-packages/vllm"
    log = "\n".join([
        f"{e}Traceback (most recent call last):",
        f'{e}  File "{pkg}/v1/core/kv_cache_utils.py", line ',
        "1120, in unify_kv_cache_spec_page_size",
        f"{e}    raise NotImplementedError(",
        f'{e}  File "{pkg}/v1/at',
        'tention/backends/gdn_attn.py", line 310, in build',
        f"{e}    assert not (num_decodes > 0 and num_spec_decodes > 0),",
        f"{e}AssertionError: num_decodes: 1, num_spec_decodes: 3",
    ])
    root = analyze_text(log, "t.log", use_preflight=False).facts.root
    assert [(f.file.rsplit("/", 1)[-1], f.function, f.line) for f in root.frames] == [
        ("kv_cache_utils.py", "unify_kv_cache_spec_page_size", 1120), ("gdn_attn.py", "build", 310)]
    assert root.frames[-1].file == f"{pkg}/v1/attention/backends/gdn_attn.py"


def test_engine_args_built_in_python_and_a_quality_drop_in_the_reporters_words_are_read():
    """An engine built from ``AsyncEngineArgs(...)`` (an eval harness, not `vllm serve`) gives its arguments as
    ``LLM(...)`` does; "corrupted / repetitive answers", "GSM8K drops to 71.2", "switch language" are wrong output."""
    log = "\n".join([
        "[Bug]: Qwen3-Next + MTP gives corrupted / repetitive answers only when many requests run concurrently",
        "engine_args = AsyncEngineArgs(model=\"Qwen/Qwen3-Next-80B-A3B-Instruct\", tensor_parallel_size=2,",
        "    max_model_len=16384, max_num_seqs=128,",
        "    speculative_config={\"method\": \"qwen3_next_mtp\", \"num_speculative_tokens\": 2})",
    ])
    an = analyze_text(log, "t.log", use_preflight=False)
    assert an.facts.args["num_speculative_tokens"] == 2 and an.facts.args["max_num_seqs"] == 128
    assert an.facts.startup["wrong_output_prose"] == "corrupted / repetitive answers"
    assert an.findings[0].category == "mixed_batch" and an.findings[0].severity == "error"
    for words in ("at concurrency 128 GSM8K drops to 71.2", "many answers switch language mid sentence",
                  "multi-turn chats sometimes answer nonsense", "the assistant turn is unrelated to the conversation",
                  "it answers a different question"):
        assert analyze_text(words, "t.log", use_preflight=False).facts.startup.get("wrong_output_prose"), words


def test_the_start_up_memory_check_naming_its_device_gives_its_numbers():
    """vLLM's start-up memory check names the device in later releases ("Free memory on device cuda:0 (...)")."""
    an = analyze_text("ValueError: Free memory on device cuda:0 (4.61/79.18 GiB) on startup is less than desired GPU "
                      "memory utilization (0.9, 71.26 GiB). Decrease GPU memory utilization or reduce GPU memory used by "
                      "other processes.", "t.log", use_preflight=False)
    n = an.facts.numbers
    assert (n["gpu_free_gib"], n["gpu_total_gib"], n["gpu_memory_utilization"], n["requested_memory_gib"]) == (
        4.61, 79.18, 0.9, 71.26)
    assert an.findings[0].category == "other"


def test_a_shared_prefix_shorter_than_the_raised_block_is_quoted_against_it():
    """The reporter's shared prefix ("the same system prompt (tool definitions, ~430 tokens ...)") against the block
    vLLM raised for the Mamba state page: shorter than one block, it is never a cached block."""
    log = "\n".join([
        "Qwen3-Next with --enable-prefix-caching: the prefix cache hit rate stays at 0 all day.",
        "Every request starts with the same system prompt (tool definitions, ~430 tokens with the chat template), "
        "followed by a short user turn (50-300 tokens).",
        "(EngineCore_DP0 pid=7) INFO 05-19 08:01:12 [interface.py:606] Setting attention block size to 560 tokens to "
        "ensure that attention page size is >= mamba page size.",
    ])
    an = analyze_text(log, "t.log", use_preflight=False)
    assert an.facts.startup["shared_prefix_tokens"] == 430
    f = next(f for f in an.findings if f.rule == "block_size_inflated")
    assert f.numbers["shared_prefix_tokens"] == 430 and "never hits" in f.message
    for words, want in (("a shared system prompt of 2.5k tokens", 2500), ("Your shared prefix is 1,147 tokens", 1147),
                        ("same system prompt, then 300 tokens of user input", None)):
        assert analyze_text(words, "t.log", use_preflight=False).facts.startup.get("shared_prefix_tokens") == want, words

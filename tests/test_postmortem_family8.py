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
    assert (n["free_memory_gib"], n["total_memory_gib"], n["gpu_memory_utilization"], n["requested_memory_gib"]) == (
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


def test_drafts_never_accepted_from_the_first_metrics_line_are_the_drafters_weights_not_a_family():
    """No error; vLLM's spec-decode metrics show a mean acceptance length of 1.00 from the first line on (an MTP head
    left out of a quantized checkpoint runs randomly initialised): outside the families, ahead of the block-size note.
    An acceptance that falls from a healthy start is not this."""
    head = [
        "Acceptance rate is basically 0 with MTP on an AWQ quant of Qwen3-Next. No crash, just slower.",
        "vllm serve cyankiwi/Qwen3-Next-80B-A3B-Instruct-AWQ-4bit -tp 2 --speculative-config "
        "'{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":3}'",
        "(APIServer pid=9) INFO 02-11 09:30:14 [interface.py:607] Setting attention block size to 272 tokens to ensure "
        "that attention page size is >= mamba page size.",
    ]
    metrics = "(APIServer pid=9) INFO 02-11 09:36:{s} [metrics.py:101] SpecDecoding metrics: Mean acceptance length: {m}, " \
              "Accepted: {a} tokens, Drafted: 27153 tokens, Avg Draft acceptance rate: {r}%"
    flat = head + [metrics.format(s=10, m="1.00", a=1, r="0.0"), metrics.format(s=40, m="1.00", a=2, r="0.0")]
    findings = analyze_text("\n".join(flat), "t.log", use_preflight=False).findings
    top = findings[0]
    assert top.category == "other" and top.title.startswith("Drafts never accepted")
    # (the raised block size is a fact of the configuration that explains none of it: left out, with a note)
    assert [f.category for f in findings] == ["other"] and any("left out" in m for m in top.missing_evidence)
    fell = head + [metrics.format(s=10, m="2.61", a=20352, r="81.2"), metrics.format(s=40, m="1.00", a=2, r="0.0")]
    assert not analyze_text("\n".join(fell), "t.log", use_preflight=False).findings[0].title.startswith("Drafts never")


def test_silent_wrong_output_on_more_hybrids_and_in_more_words():
    """Ling / Ring 2.5 (BailingMoeV2_5, linear attention beside attention) is a hybrid; broken JSON and generations
    that fall into loops under drafts are wrong output."""
    ring = "\n".join([
        "Ring 2.5 (linear attn) + MTP: output is garbage for some prompt lengths only (no crash, no error)",
        "  vllm serve inclusionAI/Ring-2.5-flash --tensor-parallel-size 8 --speculative-config "
        "'{\"method\":\"mtp\",\"num_speculative_tokens\":3}'",
        "(APIServer pid=5) INFO 05-19 11:02:41 [model.py:623] Resolved architecture: BailingMoeV2_5ForCausalLM",
    ])
    assert _top(ring).category == "mixed_batch"
    for words in ("JSON/tool-call output becomes invalid when speculative decoding is enabled",
                  "~18% of outputs fail json.loads with spec on", "long generations fall into loops"):
        assert analyze_text(words, "t.log", use_preflight=False).facts.startup.get("wrong_output_prose"), words


def test_a_crash_dump_whose_token_counts_were_elided_counts_the_hidden_spec_decodes():
    """'num_scheduled_tokens={... 210 x 3, a: 1, b: 1 ...}, total_num_scheduled_tokens=632' with k = 2: the 630 tokens
    beyond the listed rows are 210 spec decodes of 1 + k, beside two plain decodes -- a mixed batch."""
    from vllm_diag.postmortem.dump import parse_scheduler_output

    out = ("SchedulerOutput(scheduled_new_reqs=[], scheduled_cached_reqs=CachedRequestData(req_ids=[... 212 reqs ...], "
           "resumed_req_ids={'a', 'b'}, ...), num_scheduled_tokens={... 210 x 3, a: 1, b: 1 ...}, "
           "total_num_scheduled_tokens=632, scheduled_spec_decode_tokens={... 210 entries ...})")
    b = parse_scheduler_output(out, spec_k=2)
    assert (b["num_spec_decodes"], b["num_decodes"], b["mixed"]) == (210, 2, True)
    whole = out.replace("{... 210 x 3, a: 1, b: 1 ...}", "{a: 1, b: 1}")  # nothing elided: no rows to infer
    assert parse_scheduler_output(whole, spec_k=2)["num_spec_decodes"] == 0


def _top(log: str):
    return analyze_text(log, "t.log", use_preflight=False).findings[0]


def test_wrong_output_tied_to_structured_output_traffic_is_the_ragged_drafts_not_the_prefix_cache():
    """Prefix caching is on, but the report ties the looping to json_schema requests in the traffic (their grammar
    rejects drafts per request): ragged draft and accepted counts in one step's spec-decode rows."""
    log = "\n".join([
        "Qwen3.5-397B MTP: acceptance collapses and outputs degrade when json_schema requests are mixed in (0.20.2)",
        "vllm serve Qwen/Qwen3.5-397B-A17B-FP8 -tp 8 --speculative-config "
        "'{\"method\":\"mtp\",\"num_speculative_tokens\":3}' --enable-prefix-caching",
        "As soon as ~10% of the traffic is response_format=json_schema some plain-chat outputs start looping.",
    ])
    top = _top(log)
    assert top.category == "mixed_batch" and "structured outputs" in top.basis


def test_a_slowdown_in_capitals_is_read():
    log = "\n".join(["DeepSeek-V3.2-Exp: MTP with num_speculative_tokens=3 is SLOWER than no speculation, k=1 is fine",
                     "vllm serve deepseek-ai/DeepSeek-V3.2-Exp -tp 8 --speculative-config "
                     "'{\"method\":\"mtp\",\"num_speculative_tokens\":3}'"])
    assert _top(log).category == "spec_kernel_limit"


def test_a_command_line_its_parser_refused_is_a_usage_error():
    """argparse's '<prog>: error: ...' (seen on a GPU: 'main.py serve: error: argument --kv-cache-dtype: invalid
    choice: 'fp4'') ends the run before any engine: a finding outside the families, not silence."""
    for log in ("usage: vllm serve [model_tag] [options]\nmain.py serve: error: argument --kv-cache-dtype: invalid "
                "choice: 'fp4' (choose from 'auto', 'fp8', 'nvfp4')",
                "vllm: error: unrecognized arguments: --enable-mamba-prefix-caching"):
        top = _top(log)
        assert top.category == "other" and top.severity == "error" and "argument parser" in top.title

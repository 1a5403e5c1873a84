"""A log as a copy left it (hard-wrapped by a terminal, double-spaced by a web view, typographic
quotes and odd spaces from a chat tool) reads like the log vLLM printed."""

from __future__ import annotations

import json

from vllm_diag.postmortem.analyze import analyze_text
from vllm_diag.postmortem.lines import normalise_chars
from vllm_diag.postmortem.paste import logical_lines, shipped_records, wrap_width

P = "(EngineCore_DP0 pid=812) ERROR 10-02 11:02:09 [core.py:1136] "
LOG = "\n".join([
    "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct -tp 4 --enable-prefix-caching --speculative-config "
    "'{\"method\": \"qwen3_next_mtp\", \"num_speculative_tokens\": 2}'",
    f"{P}EngineCore failed to start.",
    f"{P}Traceback (most recent call last):",
    f'{P}  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/core/kv_cache_utils.py", line 1003, in '
    "unify_kv_cache_spec_page_size",
    f"{P}    raise NotImplementedError(",
    f"{P}NotImplementedError: The page size of the layer is not divisible by the maximum page size. Cannot "
    "unify by adjusting block_size.",
])


def _wrap(text: str, width: int) -> str:
    return "\n".join("\n".join(line[i:i + width] for i in range(0, max(len(line), 1), width))
                     for line in text.splitlines())


def _top(text: str) -> tuple[str, dict]:
    f = [f for f in analyze_text(text, "t.log").findings if f.severity == "error"][0]
    return f.category, f.numbers


def test_a_terminal_wrapped_log_is_unwrapped():
    lines = _wrap(LOG, 80).split("\n")
    assert wrap_width(lines) == 80
    assert [t for _, t in logical_lines(lines)] == LOG.split("\n")
    assert _top(_wrap(LOG, 80))[0] == _top(LOG)[0] == "kv_page_size"


def test_joined_lines_keep_their_first_physical_line_number():
    lines = _wrap(LOG, 80).split("\n")
    starts = [i for i, _ in logical_lines(lines)]
    command = len(LOG.split("\n")[0])
    assert starts[:2] == [0, -(-command // 80)]  # the command took that many physical lines


def test_a_log_that_was_not_wrapped_is_left_alone():
    lines = LOG.split("\n")
    assert wrap_width(lines) is None
    assert logical_lines(lines) == list(enumerate(lines))


def test_a_new_log_line_is_never_joined_to_a_piece_of_the_wrap_width():
    # the first line ends exactly at the width, the next one is a record of its own
    record = "(EngineCore_DP0 pid=1) AssertionError"
    lines = ["x" * 70, "y" * 70, "z" * 70, record]
    assert [t for _, t in logical_lines(lines)] == ["x" * 70 + "y" * 70 + "z" * 70, record]


def test_a_double_spaced_log_is_read_single_spaced():
    doubled = LOG.replace("\n", "\n\n")
    assert [t for _, t in logical_lines(doubled.split("\n"))] == LOG.split("\n")
    assert _top(doubled)[0] == "kv_page_size"


def test_prose_paragraphs_are_not_double_spacing():
    post = "We run Qwen3-Next.\n\nIt fails at start.\n\n" + LOG
    assert [t for _, t in logical_lines(post.split("\n"))] == post.split("\n")


def test_typographic_quotes_and_odd_spaces_are_ascii_again():
    assert normalise_chars("\u201cmethod\u201d:\u00a0\u2018mtp\u2019\u200b") == "\"method\": 'mtp'"
    chat = LOG.replace('"', "\u201c").replace("'", "\u2019").replace("  ", "\u00a0\u00a0")
    category, numbers = _top(chat)
    assert category == "kv_page_size" and numbers.get("num_speculative_tokens") == 2


def test_a_pydantic_error_pasted_without_its_indentation_keeps_its_body():
    log = "\n".join([
        "vllm serve meta-llama/Llama-4-Scout-17B-16E-Instruct -tp 8 --no-disable-hybrid-kv-cache-manager",
        "Traceback (most recent call last):",
        'File "/venv/lib/python3.12/site-packages/vllm/engine/arg_utils.py", line 2224, in create_engine_config',
        "config = VllmConfig(",
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for VllmConfig",
        "Value error, Hybrid KV cache manager was explicitly enabled but is not supported in this configuration. "
        "Consider omitting the --no-disable-hybrid-kv-cache-manager flag to let vLLM decide automatically. "
        "[type=value_error, input_value=ArgsKwargs((), {}), input_type=ArgsKwargs]",
        "For further information visit https://errors.pydantic.dev/2.12/v/value_error",
    ])
    an = analyze_text(log, "t.log")
    assert "explicitly enabled" in an.facts.root.message
    assert an.findings[0].category == "kv_page_size"


def test_a_traceback_without_its_indentation_keeps_its_code_lines_and_message():
    # markdown outside a code block: GitHub drops each line's leading spaces
    log = "\n".join([
        "Traceback (most recent call last):",
        'File "/opt/vllm/vllm/v1/attention/backends/gdn_attn.py", line 368, in build',
        "self.spec_state_indices_tensor[:num_spec_decodes].copy_(",
        'File ".../vllm/distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py", line 734, in f',
        "num_locally_computed_tokens",
        "ValueError: To serve at least one request with the models's max seq len (128000),",
        "(38.87 GiB KV cache is needed, which is larger than the available KV cache memory (30.1 GiB).",
    ])
    root = analyze_text(log, "t.log").facts.root
    assert root.exc_type == "ValueError" and "38.87 GiB" in root.message
    assert [f.code for f in root.frames] == ["self.spec_state_indices_tensor[:num_spec_decodes].copy_(",
                                             "num_locally_computed_tokens"]


def test_a_file_of_same_width_lines_joins_into_one_line_cut_at_the_reader_limit():
    # 5,000 lines of exactly 80 characters: a "wrap" that never ends stays linear and bounded
    from vllm_diag.postmortem.lines import MAX_LINE_CHARS

    lines = [f"{i:05d}" + "x" * 75 for i in range(5000)]
    out = logical_lines(lines)
    assert len(out) == 1 and MAX_LINE_CHARS <= len(out[0][1]) < MAX_LINE_CHARS + 80


def test_the_paste_benchmark_reads_a_labelled_folder(tmp_path, capsys):
    import importlib.util
    import json
    import sys
    from pathlib import Path

    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    sys.path.insert(0, str(bench))  # the benchmark imports corpus.py beside it
    try:
        spec = importlib.util.spec_from_file_location("paste_invariance_bench", bench / "paste_invariance.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(bench))
    (tmp_path / "a.log").write_text(LOG)
    (tmp_path / "a.json").write_text(json.dumps({"family": "A", "key_numbers": {"num_speculative_tokens": 2}}))
    assert mod.main([str(tmp_path), "--only", "compose,wrap-80,markdown-quote"]) == 0
    out = capsys.readouterr().out
    assert "right family 1/1, numbers 1/1" in out
    for name in ("compose", "wrap-80", "markdown-quote"):
        assert any(line.split()[:4] == [name, "0", "1/1", "1/1"] for line in out.splitlines()), out
    assert mod.main([str(tmp_path), "--only", "nonsense"]) == 2


def test_a_flag_named_as_the_workaround_is_not_the_failing_set_up():
    from vllm_diag.postmortem import facts_from_text

    log = "\n".join([
        "We run Qwen3.5 with MTP and prefix caching on (the default).",
        "We turned off prefix caching yesterday (--no-enable-prefix-caching) and it has not crashed since.",
        "Works fine with --enforce-eager too.",
        "It crashes with --max-num-seqs 64 after an hour.",
        "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
    ])
    args = facts_from_text(log).args
    assert "enable_prefix_caching" not in args and "enforce_eager" not in args
    assert args.get("max_num_seqs") == 64


def test_a_launchers_tag_on_every_line_is_taken_off():
    from vllm_diag.postmortem.paste import launcher_tag

    for tag in ("(pid=4012) ", "[default0]:", "0: ", "[vllm] ", "[prefill-0] "):
        relayed = "\n".join(tag + line for line in LOG.split("\n"))
        assert [t for _, t in logical_lines(relayed.split("\n"))] == LOG.split("\n"), tag
        assert _top(relayed)[0] == "kv_page_size"
    # vLLM's own process prefixes and PyTorch's rank prefix are the log's, not a launcher's
    assert launcher_tag([f"(EngineCore_DP0 pid=7) line {i}" for i in range(5)]) is None
    assert launcher_tag([f"[rank0]: line {i}" for i in range(5)]) is None
    # a tag on a minority of lines is the text's own
    assert launcher_tag(["(a) one", "plain", "plain too", "more", "(b) two"]) is None


def test_a_word_wrapped_log_is_joined_at_the_spaces_it_was_broken_at():
    from vllm_diag.postmortem.paste import word_wrapped

    def word_wrap(text: str, width: int) -> list[str]:
        out = []
        for line in text.split("\n"):
            while len(line) > width and " " in line[1:width]:
                cut = line.rindex(" ", 1, width) + 1
                out.append(line[:cut])
                line = line[cut:]
            out.append(line)
        return out

    lines = word_wrap(LOG, 70)
    assert word_wrapped(lines) and wrap_width(lines) is None
    assert [t for _, t in logical_lines(lines)] == LOG.split("\n")
    assert _top("\n".join(lines))[0] == "kv_page_size"
    # a log whose lines merely end with a space now and then is no word wrap
    assert not word_wrapped(["INFO a ", "(EngineCore pid=1) INFO b", "c", "d ", "(APIServer pid=2) INFO e"])


def test_a_message_wrapped_after_its_colon_or_mid_clause_reads_whole():
    w = "(Worker_TP0 pid=5120) ERROR 07-09 11:05:27 [multiproc_executor.py:1047] "
    log = "\n".join([
        f"{w}Traceback (most recent call last):",
        f'{w}  File "/venv/lib/python3.12/site-packages/vllm/v1/attention/backends/linear_attn.py", line 91, in build',
        f"{w}    d, p = torch.split(state_indices, [num_decodes, num_prefills])",
        f"{w}RuntimeError: ",
        "split_with_sizes expects split_sizes to sum exactly to 10 (input tensor's size at dimension 0), but ",
        "got split_sizes=[7, 2]",
    ])
    root = analyze_text(log, "t.log").facts.root
    assert root.message.replace("\n", " ").startswith("split_with_sizes expects split_sizes to sum exactly to 10")
    assert "got split_sizes=[7, 2]" in root.message


def _export(records: list[tuple[str, str]]) -> str:
    """A Datadog-style JSON export: newest first, a record's message may hold a whole traceback."""
    return "\n".join(json.dumps({"date": when, "service": "vllm", "message": text}) for when, text in reversed(records))


def test_a_shippers_newest_first_export_with_tracebacks_in_one_record_reads_in_time_order():
    """Datadog / Loki exports list the newest record first, and a traceback the shipper caught in one event is one
    record with embedded newlines: the records go back in time order and their lines apart."""
    head, traceback = LOG.split("\n")[:2], LOG.split("\n")[2:]
    records = [(f"2026-07-22T08:13:0{i}.000Z", line) for i, line in enumerate(head)]
    records.append(("2026-07-22T08:13:05.000Z", "\n".join(traceback)))
    exported = "Export from Datadog, newest first:\n\n" + _export(records)
    expanded = [t for _, t in logical_lines(exported.split("\n"))]
    assert expanded[2:] == LOG.split("\n")
    assert _top(exported)[0] == _top(LOG)[0] == "kv_page_size"
    # chronological one-line records are left to the line cleaner, as before
    plain = [json.dumps({"time": f"2026-07-22T08:13:0{i}Z", "log": line}) for i, line in enumerate(LOG.split("\n"))]
    assert shipped_records(plain) is None
    assert _top("\n".join(plain))[0] == "kv_page_size"


def test_json_records_behind_a_relays_tag_or_in_colour_are_read_as_records():
    """`kubectl logs --prefix` in front of docker's json-file records, or a terminal's colour around them: the records
    are still unwrapped, in time order."""
    records = [json.dumps({"log": line + "\n", "stream": "stderr", "time": f"2026-07-22T08:13:0{i}.0Z"})
               for i, line in enumerate(LOG.split("\n"))]
    tagged = [f"[pod/vllm-0/vllm] {r}" for r in records]
    assert [t for _, t in logical_lines(tagged)] == LOG.split("\n")
    coloured = [f"\x1b[31m{r}\x1b[0m" for r in records]
    assert _top("\n".join(coloured))[0] == _top("\n".join(tagged))[0] == "kv_page_size"


def test_a_log_explorers_csv_export_reads_as_the_lines_it_quotes():
    """Kibana / Splunk / a Grafana table export one row a record: the time and the line quoted, the line's own
    quotes doubled. The line comes back as vLLM printed it."""
    rows = ['"time","line"'] + ['"2026-07-22 08:13:%02d","%s"' % (i, line.replace('"', '""'))
                                for i, line in enumerate(LOG.split("\n"))]
    assert _top("\n".join(rows))[0] == _top(LOG)[0] == "kv_page_size"
    facts = analyze_text("\n".join(rows), "t.log").facts
    assert facts.root.last_frame.function == "unify_kv_cache_spec_page_size"  # File ""..."" read as File "..."
    assert facts.args["num_speculative_tokens"] == 2  # the JSON of the command, its quotes undoubled
    # a sentence that merely opens with a quotation is left as it is
    assert _top('"Works on 0.20," he said, "not on 0.21"\n' + LOG)[0] == "kv_page_size"


def test_a_wrap_piece_that_opens_with_a_parenthesis_is_not_a_new_record():
    """A terminal's cut can land before the "(" of a path: "(/opt/deps/...hpp:196): ..." continues the line; only
    "(<process> pid=N)" opens a record."""
    width = 100
    err = ("(Worker_TP0 pid=413) ERROR 03-24 11:38:07 [multiproc_executor.py:962] RuntimeError: Assertion error "
           "(/opt/deps/deepgemm/csrc/apis/attention.hpp:196): context_lens.is_contiguous()")
    cut = err.index("(/opt")
    assert cut == width  # the terminal's cut falls right before the path's parenthesis
    pieces = [err[:cut], err[cut:]]
    frame = ('(Worker_TP0 pid=413) ERROR 03-24 11:38:07 [multiproc_executor.py:962]   File "/usr/local/lib/python3.12/'
             'dist-packages/vllm/v1/attention/backends/mla/indexer.py", line 402, in build')
    hard = [frame[i:i + width] for i in range(0, len(frame), width)] * 3  # mid-word cuts: a terminal's wrap
    joined = [t for _, t in logical_lines(hard + pieces)]
    assert joined[-1] == err


def test_an_exception_line_word_wrapped_in_an_unwrapped_log_reads_whole():
    """A relayed log (compose's prefix on each record) copied from a narrow window: only the long exception line
    was broken at spaces, and its pieces carry no prefix."""
    log = "\n".join([
        "vllm-1  | (EngineCore pid=97) INFO 07-20 08:33:02 [core.py:98] Initializing a V1 LLM engine (v0.22.1)",
        "vllm-1  | (EngineCore pid=97) ERROR 07-20 08:33:12 [core.py:1231] Traceback (most recent call last):",
        'vllm-1  | (EngineCore pid=97) ERROR 07-20 08:33:12 [core.py:1231]   File "/usr/lib/vllm/config/vllm.py", '
        "line 1410, in __post_init__",
        "vllm-1  | (EngineCore pid=97) ERROR 07-20 08:33:12 [core.py:1231]     raise ValueError(",
        "vllm-1  | (EngineCore pid=97) ERROR 07-20 08:33:12 [core.py:1231] ValueError: max_num_seqs (384) ",
        "exceeds available Mamba cache blocks (201). Each decode sequence requires one Mamba cache block, so ",
        "CUDA graph capture cannot proceed.",
        "vllm-1  | (APIServer pid=1) ERROR 07-20 08:33:13 [api_server.py:91] engine failed",
    ])
    root = analyze_text(log, "t.log").facts.root
    assert root.message.startswith("max_num_seqs (384) exceeds available Mamba cache blocks (201).")
    assert root.message.rstrip().endswith("cannot proceed.")


def test_a_logger_prefix_with_its_line_number_elided_is_still_a_record():
    w = "(Worker_TP0 pid=102209) ERROR 04-11 08:06:04 [multiproc_executor.py:..] "
    log = "\n".join([
        "vllm serve nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8 -tp 4 --enable-prefix-caching --speculative-config "
        "'{\"method\": \"mtp\", \"num_speculative_tokens\": 1}'",
        f"{w}RuntimeError: The size of tensor a (29) must match the size of tensor b (30) at non-singleton dimension 1",
        "(EngineCore pid=101990) ERROR 04-11 08:06:05 [core.py:..] RuntimeError: Worker failed with error 'The size of "
        "tensor a (29) must match the size of tensor b (30) at non-singleton dimension 1', please check the stack trace",
        "(APIServer pid=101877) RuntimeError: Engine core initialization failed. See root cause above.",
    ])
    root = analyze_text(log, "t.log").facts.root
    assert root.message.startswith("The size of tensor a (29)")


def test_a_record_whose_timestamp_and_logger_location_were_trimmed_is_still_read():
    p = "(EngineCore_DP0 pid=87) ERROR "
    log = "\n".join([
        "vllm serve tiiuae/Falcon-H1-7B-Instruct --kv-events-config '{\"enable_kv_cache_events\": true}'",
        f"{p}Traceback (most recent call last):",
        f'{p}File "/usr/local/lib/python3.12/dist-packages/vllm/v1/core/kv_cache_utils.py", line 1216, in '
        "unify_hybrid_kv_cache_specs",
        "    raise ValueError(",
        f"{p}ValueError: Hybrid KV cache manager is disabled but failed to convert the KV cache specs to one unified type.",
        "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above.",
    ])
    root = analyze_text(log, "t.log").facts.root
    assert root.exc_type == "ValueError" and root.message.startswith("Hybrid KV cache manager is disabled")

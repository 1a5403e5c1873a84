"""The corpus benchmark's number matching (benchmarks/corpus.py): an expert's name for a number maps to the analyzer's
through the documented alias table and naming rules -- never by value alone."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _corpus():
    spec = importlib.util.spec_from_file_location("corpus_bench_numbers", ROOT / "benchmarks" / "corpus.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["corpus_bench_numbers"] = mod
    spec.loader.exec_module(mod)
    return mod


def _ok(doc: dict):
    c = _corpus()
    leaves: list = []
    c.named_leaves(doc, leaves)
    return lambda k, v: c.recovered(k, v, leaves)


def test_expert_names_of_the_same_number():
    ok = _ok({"numbers": {"gpu_total_gib": 79.25, "index_size": 65, "check_threshold": 4, "seq_num": 188342},
              "startup": {"gpu_kv_cache_tokens": 5472, "printed_values": {"prompt_lens": [812]}},
              "gpu": {"name": "H100", "count": 8},
              "root_error": {"frames": [{"file": ".../vllm/config/vllm.py", "line": 1567, "function": "_set_x"}]}})
    assert ok("total_capacity_gib", 79.25)  # PyTorch's "total capacity" (alias)
    assert ok("dimension_size", 65) and ok("limit", 4) and ok("kv_cache_tokens", 5472)  # aliases
    assert ok("seqnum", 188342)  # the same name without underscores
    assert ok("vllm_config_raise_line", 1567)  # config/vllm.py: the same words in another order, "raise" aside
    assert ok("gpu_count", 8)  # a nested leaf under <parent>_<key>
    assert ok("prompt_len", 812)  # a number and a one-element list
    assert ok("seq_num", "188,342")  # a number labelled as text


def test_no_match_by_value_alone():
    ok = _ok({"numbers": {"gpu_total_gib": 79.25, "seq_num": 5, "index_size": 65}, "gpu": {"count": 8},
              "startup": {"printed_values": {"qo_indptr": [0, 4]}}})
    assert not ok("total_capacity_gib", 80.0)  # right name, wrong value
    assert not ok("num_decodes", 65) and not ok("tensor_parallel_size", 8)  # the value under another name
    assert not ok("num_heads", 5) and not ok("max_num_seqs", 65)  # no specific word in common


def test_startup_memory_names():
    ok = _ok({"startup": {"model_loading_gib": 61.4, "available_kv_cache_gib": 3.25}})
    assert ok("model_weights_gib", 61.4) and ok("kv_cache_gib", 3.25)
    assert not ok("model_weights_gib", 3.25) and not ok("kv_cache_gib", 61.4)


def test_a_percentage_labelled_as_text_is_the_number_vllm_printed():
    ok = _ok({"startup": {"prefix_cache_hit_rate": 63.8}})
    assert ok("prefix_cache_hit_rate", "63.8%") and ok("prefix_cache_hit_rate", 63.8)
    assert not ok("prefix_cache_hit_rate", "6.38%") and not ok("kv_cache_usage_pct", "63.8%")


def test_a_major_minor_pair_is_the_version_number_an_expert_writes():
    ok = _ok({"gpu": {"compute_capability": [7, 5]}, "startup": {"printed_values": {"qo_indptr": [7, 5]}}})
    assert ok("compute_capability", 7.5) and ok("compute_capability", "7.5")
    assert not ok("compute_capability", 8.6) and not ok("compute_capability", 5.7)
    assert not ok("num_decodes", 7.5)  # the pair under another name


def test_a_three_part_version_is_the_number_a_label_writes_for_it():
    """JSON holds no 535.183.01: a label writes the driver as 535.183 or its branch 535."""
    ok = _ok({"startup": {"driver_version": "535.183.01", "nccl_version": "2.21.5"}})
    assert ok("driver_version", 535.183) and ok("driver_version", 535) and ok("driver_version", "535.183.01")
    assert not ok("driver_version", 535.18) and not ok("driver_version", 550) and not ok("driver_version", 183.01)
    assert not ok("num_speculative_tokens", 535)  # the version under another name
    assert _ok({"startup": {"driver_version": "550.90.07"}})("driver_version", 550.9)


def test_the_same_words_abbreviated_or_counted_are_the_same_name():
    ok = _ok({"numbers": {"requests_expected": 37, "requests_got": 40, "num_requests_running": 36}})
    assert ok("expected_reqs", 37) and ok("expected_num_reqs", 37) and ok("got_reqs", 40)
    assert not ok("expected_reqs", 40) and not ok("expected_reqs", 36)

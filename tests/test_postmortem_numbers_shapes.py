"""Shapes and compared values of error messages, by the phrasing PyTorch, vLLM and kernel libraries use: both shapes
of a failed shape comparison, ``x.shape=...`` / ``t.shape[1] (512)`` expressions, PyTorch's view and matmul errors,
``name N`` pairs in prose, ``<quantity> must be <= N, but got M``, and the crash dump's per-request token counts.
Messages written here with numbers of their own."""

from __future__ import annotations

from vllm_diag.postmortem import facts_from_text

P = "(Worker_TP0 pid=5) ERROR 11-02 10:00:00 [multiproc_executor.py:702] "


def _numbers(message: str) -> dict:
    log = (P + "Traceback (most recent call last):\n"
           + P + '  File "/opt/py/vllm/v1/worker/gpu_model_runner.py", line 2200, in execute_model\n'
           + P + "    out = self.model(**inputs)\n" + P + message + "\n")
    return facts_from_text(log).numbers


def test_expected_shape_but_got_shape():
    n = _numbers("RuntimeError: Expected key to have shape [6, 8, 64] but got [6, 8, 80]")
    assert n["expected_shape"] == [6, 8, 64] and n["got_shape"] == [6, 8, 80]
    assert n["key_shape"] == [6, 8, 80]
    n = _numbers("RuntimeError: Expected size for first two dimensions of batch2 tensor to be: [16, 40] but got: [16, 48].")
    assert n["expected_shape"] == [16, 40] and n["got_shape"] == [16, 48]


def test_expression_values():
    n = _numbers("ValueError: expected hidden.shape=torch.Size([12, 3072]) to equal (12, 2048)")
    assert n["hidden_shape"] == [12, 3072]
    n = _numbers("AssertionError: block_table.shape[1] (320) != max_num_blocks_per_req (321)")
    assert n["block_table_shape_1"] == 320 and n["max_num_blocks_per_req"] == 321
    n = _numbers("AssertionError: query.shape[0]=53 must equal num_actual_tokens=52")
    assert n["query_shape_0"] == 53 and n["num_actual_tokens"] == 52


def test_view_and_matmul_errors():
    n = _numbers("RuntimeError: shape '[4, -1, 96]' is invalid for input of size 7000")
    assert n["view_shape"] == [4, -1, 96] and n["input_size"] == 7000
    n = _numbers("RuntimeError: mat1 and mat2 shapes cannot be multiplied (9x1536 and 2048x512)")
    assert n["mat1_shape"] == [9, 1536] and n["mat2_shape"] == [2048, 512]


def test_identifier_number_pairs_in_prose():
    n = _numbers("RuntimeError: Check failed: (num_qo_heads % num_kv_heads == 0) is false: num_qo_heads 44 must be "
                 "divisible by num_kv_heads 6")
    assert n["num_qo_heads"] == 44 and n["num_kv_heads"] == 6


def test_must_be_compared_but_got():
    n = _numbers("RuntimeError: q_len_per_req must be <= 2, but got 7")
    assert (n["check_operand"], n["check_op"], n["check_threshold"], n["q_len_per_req"]) == ("q_len_per_req", "<=", 2, 7)
    n = _numbers("AssertionError: max_num_seqs should be less than or equal to 256, but is 300")
    assert n["check_threshold"] == 256 and n["max_num_seqs"] == 300
    assert not [k for k in n if k.startswith("less")]  # the comparison's words are no quantity


def test_words_before_an_expected_value_but_got():
    n = _numbers("RuntimeError: Tensor must have a last dimension of size 320, but got 256")
    assert n["last_dimension_size_expected"] == 320 and n["last_dimension_size_got"] == 256


def test_crash_dump_tokens_per_request_under_the_dumps_name():
    f = facts_from_text(
        "(EngineCore_DP0 pid=7) ERROR 11-02 10:00:00 [dump_input.py:76] Dumping scheduler output for model execution: "
        "SchedulerOutput(scheduled_new_reqs=[], scheduled_cached_reqs=CachedRequestData(req_ids=['r1', 'r2'], "
        "num_computed_tokens=[40, 71]), num_scheduled_tokens={r1: 1, r2: 4}, total_num_scheduled_tokens=5, "
        "scheduled_spec_decode_tokens={r2: [-1, -1, -1]})\n")
    b = f.startup["crash_batch"]
    assert b["num_scheduled_tokens"] == [1, 4] and b["total_num_scheduled_tokens"] == 5
    assert b["num_decodes"] == 1 and b["num_spec_decodes"] == 1


def test_kernel_check_phrasings():
    n = _numbers("RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: qSeqLen <= 8 (/src/cpp/kernels/xqa_dispatch.cu:301)")
    assert (n["check_operand"], n["check_op"], n["check_threshold"]) == ("qSeqLen", "<=", 8)
    assert n["xqa_dispatch_line"] == 301 and "xqa_dispatch_cu" not in n
    n = _numbers("RuntimeError: TVM_FFI_ICHECK_EQ(num_heads % 64, 0) failed: num_heads=20")
    assert (n["check_operand"], n["check_threshold"], n["num_heads"]) == ("num_heads % 64", 0, 20)
    n = _numbers("RuntimeError: Expected num_tokens <= 4096 to be true, but got false.  (Could this error message be improved?")
    assert (n["check_operand"], n["check_op"], n["check_threshold"]) == ("num_tokens", "<=", 4096)
    n = _numbers('RuntimeError: q.size(2) == 576 INTERNAL ASSERT FAILED at "/src/csrc/mla_decode.cu":131, please report a bug')
    assert (n["check_operand"], n["check_threshold"], n["mla_decode_line"]) == ("q.size(2)", 576, 131)
    assert "q_size" not in n  # the method call's argument is no value


def test_message_value_notations():
    n = _numbers("ValueError: When PCP is enabled, DCP must be disabled. Got TP=8, PCP=2, DCP=4; valid DCP sizes are 1")
    assert (n["tp"], n["pcp"], n["dcp"]) == (8, 2, 4)
    n = _numbers("ValueError: No kernel plan for page size 64, batch size 19.")
    assert n["page_size"] == 64 and n["batch_size"] == 19
    n = _numbers("ValueError: Multi-module MTP with prefix caching requires scheduler_block_size (=16) >= "
                 "num_speculative_tokens (=24).")
    assert n["scheduler_block_size"] == 16 and n["num_speculative_tokens"] == 24
    n = _numbers("RuntimeError: conflicting values: existing=3, new=5")
    assert n["existing"] == 3 and n["new"] == 5
    n = _numbers("ValueError: conv_kernel_size must be positive, got 0")
    assert n["conv_kernel_size"] == 0
    n = _numbers("ValueError: Too many total bad word tokens: 1200. The max is 1024.")
    assert n["bad_word_tokens"] == 1200


def test_a_dict_of_values_named_by_the_words_before_it():
    n = _numbers("NotImplementedError: The page size of the layer is not divisible by the maximum page size. layer page "
                 "sizes: {'model.layers.0.mixer': 1064960, 'model.layers.3.self_attn.attn': 786432}")
    assert n["layer_page_sizes"] == [1064960, 786432]


def test_long_pathological_messages_stay_linear():
    # operands of check macros and comparisons are bounded: a long run of identifier characters cannot make the
    # search backtrack without end (this input took minutes with an unbounded operand)
    from vllm_diag.postmortem.numbers import check_numbers, phrase_numbers

    for text in ("CHECK_EQ(" + "a-" * 3000, "a.b(" * 3000 + " <= 1 INTERNAL ASSERT", "Expected " + "a" * 5000 + " <= 1"):
        check_numbers(text)
        phrase_numbers(text)

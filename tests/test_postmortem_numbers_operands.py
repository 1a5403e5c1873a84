"""Numbers named by the code that holds them: the operands of a PyTorch size mismatch under the names the failing
statement gives them (a boolean mask index, index_copy_), and tensor expressions a reporter printed with their value
(``x.shape=torch.Size([8])``, ``idx.max()=2051``). Logs written here, in vLLM's format, with numbers of their own."""

from __future__ import annotations

import pytest

from vllm_diag.postmortem import facts_from_text

W = "(Worker_TP0 pid=5101) ERROR 02-03 04:05:06 [multiproc_executor.py:733] "
SP = "/srv/env/lib/python3.12/site-packages/vllm"


def _tb(file: str, line: int, fn: str, code: str, error: str) -> str:
    return (W + "Traceback (most recent call last):\n"
            + W + f'  File "{SP}/{file}", line {line}, in {fn}\n'
            + W + f"    {code}\n"
            + W + error + "\n")


def test_mask_index_operands_named_by_the_statement():
    n = facts_from_text(_tb("v1/attention/backends/linear_x_attn.py", 281, "build",
                            "accepted = self.accepted_counts[decode_masks_cpu]",
                            "IndexError: The shape of the mask [9] at index 0 does not match the shape of the indexed "
                            "tensor [5] at index 0")).numbers
    assert n["accepted_counts_shape"] == [5] and n["decode_masks_cpu_shape"] == [9]
    assert n["mask_shape"] == [9] and n["indexed_tensor_shape"] == [5]  # the message's own names stay


def test_index_copy_operands_named_by_the_statement():
    n = facts_from_text(_tb("model_executor/layers/mamba/linear_x.py", 940, "_forward_core",
                            "out_buf.index_copy_(0, draft_token_idx, draft_out)",
                            "RuntimeError: index_copy_(): Number of indices (13) should be equal to source.size(dim) "
                            "(16)")).numbers
    assert n["draft_token_idx_len"] == 13 and n["draft_out_size_dim0"] == 16


@pytest.mark.parametrize("dim,named", [(0, True), (1, False)])
def test_a_copy_into_a_prefix_slice_names_the_destination_rows(dim, named):
    # PyTorch's tensor a is the copy's destination: on dimension 0 its size is the slice bound
    n = facts_from_text(_tb("v1/attention/backends/linear_x_attn.py", 377, "build",
                            "self.accepted_buf[: meta.num_plain_rows].copy_(",
                            "RuntimeError: The size of tensor a (11) must match the size of tensor b (14) at "
                            f"non-singleton dimension {dim}")).numbers
    assert n.get("num_plain_rows") == (11 if named else None) and n["tensor_b_size"] == 14


def test_statement_without_those_operands_names_nothing():
    n = facts_from_text(_tb("model_executor/layers/mamba/linear_x.py", 940, "_forward_core",
                            "out_buf = torch.cat([a[i], b[j]])",
                            "IndexError: The shape of the mask [9] at index 0 does not match the shape of the indexed "
                            "tensor [5] at index 0")).numbers
    assert not any(k.endswith("_shape") and k not in ("mask_shape", "indexed_tensor_shape") for k in n)


def test_printed_tensor_expressions_in_prose():
    log = (_tb("v1/worker/gpu_model_runner.py", 2200, "execute_model", "self._update_states(scheduler_output)",
               "AssertionError")
           + "My debug print before the call: accepted_counts.shape=torch.Size([6]), "
             "state_rows.shape=torch.Size([10, 4]), slot_ids.max()=4099 num_slots=4096\n")
    p = facts_from_text(log).startup["printed_values"]
    assert p["accepted_counts_shape"] == [6] and p["state_rows_shape"] == [10, 4]
    assert p["slot_ids_max"] == 4099 and p["num_slots"] == 4096


def test_bare_bound_in_a_kernel_message():
    n = facts_from_text(W + "RuntimeError: paged_decode_fwd: only support bf16 decoding for q_len_per_req <= 2, but got "
                            "max_seqlen_q=3\n").numbers
    assert n["q_len_per_req_max"] == 2 and n["max_seqlen_q"] == 3


def test_values_that_should_be_shared_printed_as_a_set():
    n = facts_from_text(_tb("v1/worker/mamba_utils.py", 412, "collect_tables", "assert len(strides) == 1, msg",
                            "AssertionError: all conv state tables must share stride(0), got {1028, 2056}")).numbers
    assert n["conv_state_table_strides"] == [1028, 2056]

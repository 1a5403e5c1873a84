"""State-index view: per KV-cache group, the block table (rows x columns, and how the width was
derived) against each metadata builder's state-index buffers; the column one has and the other
lacks is marked (the 6-vs-7 and 11-vs-12 failures of vllm#39809 show as one extra column).

``state_index(record) -> StateIndexVM``. Where the numbers come from, in this order, is said in
``StateIndexVM.source``:

1. the session's own block tables and builder buffers (recorded by the probes, or predicted);
2. the pre-flight's prediction next to a log;
3. the numbers the probes attached to the failing exception (``errors.numbers``: the block tables
   and the two tensor sizes of the failing copy) when the tables themselves were not written;
4. the numbers in the log's error message (``The size of tensor a (6) must match ... b (7)``).

A width without a recorded derivation is explained by arithmetic when it matches
``cdiv(max_model_len, block_size)`` [+ 1] [+ num_speculative_blocks]; the view says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import BlockTable, BuilderBuffer, EngineState, SessionRecord
from .primitives import Anchor, Missing, cdiv, column_anchor, group_anchor, known, spec_tokens

CELL_LIMIT = 64  # columns drawn per group (the last ones: a mismatch is at the end of the row)
SLOT_LIMIT = 8  # request slots (block-table rows) drawn per group; the others are alike


@dataclass(frozen=True)
class IndexBuffer:
    builder: str | Missing
    name: str
    shape: tuple[int, ...] | Missing
    rows: int | Missing
    columns: int | Missing  # 1 for a one-state-per-request buffer
    derivation: str | Missing
    compared: bool  # a per-block buffer compared with the block-table width
    matches: bool | Missing
    source: str


@dataclass(frozen=True)
class ColumnCell:
    index: int  # 1-based block-table column
    in_table: bool
    in_buffer: bool
    marked: bool


@dataclass(frozen=True)
class StateIndexGroup:
    group_index: int | Missing
    spec_type: str | Missing
    rows: int | Missing
    columns: int | Missing
    block_size: int | None
    derivation: str | Missing
    derivation_source: str  # "recorded" | "predicted" | "arithmetic match (not recorded)" | ...
    buffers: tuple[IndexBuffer, ...]
    mismatch: tuple[int, int] | None  # (block-table columns, buffer columns)
    marked_columns: tuple[int, ...]
    cells: tuple[ColumnCell, ...]
    cells_from: int  # first column drawn (1 unless the row is wider than CELL_LIMIT)
    source: str
    anchor: Anchor
    marked_anchors: tuple[Anchor, ...]

    @property
    def slots_shown(self) -> int:
        """Request slots (rows) to draw; ``slots_more`` more are alike."""
        return min(self.rows, SLOT_LIMIT) if isinstance(self.rows, int) else 1

    @property
    def slots_more(self) -> int:
        return max(0, self.rows - SLOT_LIMIT) if isinstance(self.rows, int) else 0

    @property
    def is_state_group(self) -> bool:
        return bool(self.buffers)


@dataclass(frozen=True)
class StateIndexVM:
    groups: tuple[StateIndexGroup, ...]
    source: str
    missing: Missing | None

    @property
    def mismatches(self) -> tuple[StateIndexGroup, ...]:
        return tuple(g for g in self.groups if g.mismatch is not None)


def explain_width(width: int, max_model_len, block_size, k) -> str | None:
    """A width as ``cdiv(max_model_len, block_size)`` [+ 1] [+ k]; None when nothing matches."""
    if not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in (width, max_model_len, block_size)):
        return None
    base = cdiv(max_model_len, block_size)
    head = f"cdiv(max_model_len {max_model_len}, block_size {block_size}) = {base}"
    k = k if isinstance(k, int) and k > 0 else 0
    for value, tail in ((base, ""), (base + k, f" + num_speculative_blocks {k}"), (base + 1, " + 1"),
                        (base + 1 + k, f" + 1 + num_speculative_blocks {k}")):
        if value == width and (tail == "" or value != base):
            return head + tail + (f" = {width}" if tail else "")
    return None


def _first_pid(rows: list) -> list:
    if not rows:
        return []
    pid = rows[0].pid
    return [r for r in rows if r.pid == pid]


def _current(st: EngineState, table: str) -> list:
    """Rows of the latest KV cache when the probes recorded several (CUDA-graph profiling's
    throwaway cache, then the serving cache)."""
    fn = getattr(st, "current_" + table, None)
    return fn() if callable(fn) else getattr(st, table)


def _cfg(record: SessionRecord, key: str):
    for st in (record.state, record.predicted):
        if st is not None and st.config.get(key) is not None:
            return st.config[key]
    if record.log is not None:
        return record.log.args.get(key)
    return None


def _is_index_buffer(b: BuilderBuffer) -> bool:
    return "state_indices" in b.name or b.name.endswith("state_idx")


def _cells(table_cols: int | Missing, buffer_cols: int | None) -> tuple[tuple[ColumnCell, ...], int, tuple[int, ...]]:
    t = table_cols if known(table_cols) else 0
    b = buffer_cols or 0
    hi = max(t, b)
    if hi == 0:
        return (), 1, ()
    lo = max(1, hi - CELL_LIMIT + 1)
    marked = tuple(i for i in range(1, hi + 1) if b and ((i <= t) != (i <= b)))
    cells = tuple(ColumnCell(i, i <= t, bool(b) and i <= b, i in marked) for i in range(lo, hi + 1))
    return cells, lo, marked


def _group(gi, spec_type, table: BlockTable | None, buffers: list[IndexBuffer], source: str, record: SessionRecord,
           rows=None, columns=None, derivation_source: str | None = None, block=None, derivation=None) -> StateIndexGroup:
    mml, k = _cfg(record, "max_model_len"), _cfg(record, "num_speculative_tokens")
    if table is not None:
        rows, columns, block = table.rows, table.columns, table.block_size
        derivation = table.derivation
    else:
        block = block or _cfg(record, "mamba_block_size") or _cfg(record, "block_size")
    if derivation:
        dsrc = derivation_source or source
    else:
        derivation = explain_width(columns, mml, block, k) if known(columns) else None
        dsrc = "arithmetic match (not recorded)" if derivation else "unknown"
        derivation = derivation or Missing("the width's derivation was not recorded"
                                           + ("" if mml and block else " and max_model_len/block size are unknown"))
    cols = columns if columns is not None else Missing("block-table width not recorded")
    rows = rows if rows is not None else Missing("not recorded")
    mismatch = None
    bad_cols = None
    for b in buffers:
        if b.compared and b.matches is False and known(b.columns) and known(cols):
            mismatch = (cols, b.columns)
            bad_cols = b.columns
            break
    compared = bad_cols if bad_cols is not None else next((b.columns for b in buffers if b.compared and known(b.columns)),
                                                           None)
    # cells only where a per-block buffer is compared with the table (an attention group has none)
    cells, lo, marked = _cells(cols, compared) if compared is not None else ((), 1, ())
    anchor = group_anchor(gi) if isinstance(gi, int) else Anchor("group", "?")
    marked_anchors = tuple(column_anchor(gi if isinstance(gi, int) else -1, c) for c in marked)
    return StateIndexGroup(group_index=gi, spec_type=spec_type, rows=rows, columns=cols, block_size=block,
                           derivation=derivation, derivation_source=dsrc, buffers=tuple(buffers), mismatch=mismatch,
                           marked_columns=marked, cells=cells, cells_from=lo, source=source, anchor=anchor,
                           marked_anchors=marked_anchors)


def _buffer(b: BuilderBuffer, table_cols, record: SessionRecord, source: str) -> IndexBuffer:
    shape = tuple(b.shape or ())
    two_d = len(shape) == 2
    cols = shape[1] if two_d else 1
    mml, k = _cfg(record, "max_model_len"), _cfg(record, "num_speculative_tokens")
    block = _cfg(record, "mamba_block_size") or _cfg(record, "block_size")
    recorded = getattr(b, "derivation", None)
    if recorded:
        deriv = str(recorded)
    elif two_d:
        spec = spec_tokens(record)
        if spec is not None and cols == 1 + spec and not _copies_whole_row(b.name, record):
            found = f"1 + num_speculative_tokens {spec} = {cols}"  # the builder's decode slice
        else:
            found = explain_width(cols, mml, block, k)
        deriv = f"{found} (arithmetic match, not recorded)" if found else None
    else:
        deriv = "one state slot per request"
    matches: bool | Missing = True  # a one-state-per-request buffer is not compared
    if two_d:
        copied = _copied_width(b.name, table_cols, record)
        matches = cols == copied if known(copied) else copied
    return IndexBuffer(builder=b.builder, name=b.name, shape=shape, rows=shape[0] if shape else Missing("no shape"),
                       columns=cols, derivation=deriv or Missing("not recorded; no arithmetic match"),
                       compared=two_d, matches=matches, source=source)


def _copies_whole_row(name: str, record: SessionRecord) -> bool:
    """A Mamba decode buffer in cache mode 'all' takes the whole block-table row; every other decode buffer
    takes ``block_table[:, :1 + k]``."""
    return name == "state_indices_tensor_d" and _cfg(record, "mamba_cache_mode") == "all"


def _copied_width(name: str, table_cols, record: SessionRecord):
    """How many block-table columns the builder copies into this buffer: the whole row for a Mamba
    decode buffer in cache mode 'all', else ``block_table[:, :1 + k]`` (vLLM's GDN and Mamba
    builders slice the row), so a 1 + k wide buffer beside a longer row is no mismatch."""
    if not known(table_cols):
        return Missing("block-table width unknown")
    if _copies_whole_row(name, record):
        return table_cols
    k = spec_tokens(record)
    if k is None:
        return Missing("num_speculative_tokens unknown")
    return min(table_cols, 1 + k)


def _from_state(record: SessionRecord, st: EngineState, label: str) -> list[StateIndexGroup]:
    tables = _first_pid(_current(st, "block_tables"))
    bufs = _first_pid(_current(st, "builder_buffers"))
    groups = {g.group_index: g for g in _first_pid(st.kv_cache_groups)}
    out = []
    for t in sorted(tables, key=lambda t: t.group_index):
        g = groups.get(t.group_index)
        spec = g.spec_type if g is not None else Missing("group not recorded")
        ib = [_buffer(b, t.columns, record, label) for b in bufs if b.group_index == t.group_index and _is_index_buffer(b)]
        out.append(_group(t.group_index, spec, t, ib, label, record, derivation_source=label))
    return out


def _error_numbers(record: SessionRecord):
    for e in record.state.errors:
        n = e.numbers or {}
        if "tensor_a_size" in n and "tensor_b_size" in n:
            return e, n
    return None, None


def _tensor_buffer(a: int, b: int, table_cols: int, text: str, record: SessionRecord, source: str) -> IndexBuffer:
    other = a if table_cols == b else b
    mml, k = _cfg(record, "max_model_len"), _cfg(record, "num_speculative_tokens")
    block = _cfg(record, "mamba_block_size") or _cfg(record, "block_size")
    deriv = explain_width(other, mml, block, k)
    deriv = f"{deriv} (arithmetic match, not recorded)" if deriv else None
    return IndexBuffer(builder=Missing("the builder's buffers were not recorded"), name=text, shape=Missing("not recorded"),
                       rows=Missing("not recorded"), columns=other,
                       derivation=deriv or Missing("not recorded; no arithmetic match"), compared=True,
                       matches=other == table_cols, source=source)


def state_index(record: SessionRecord) -> StateIndexVM:
    st = record.state
    err, nums = _error_numbers(record)
    if st.block_tables:
        label = {"recorded": "recorded (block_tables, builder_buffers)", "predicted": "predicted by the pre-flight"}.get(
            st.source, st.source)
        groups = _from_state(record, st, label)
        # a mismatch a mixed-batch finding explains is not drawn as a state-index column mismatch
        explained = (any(f.category == "mixed_batch" and f.severity == "error" for f in record.findings)
                     and not any(f.category == "state_index" for f in record.findings))
        if err is not None and not any(g.mismatch for g in groups) and not explained:
            groups = _attach_error(record, groups, err, nums)
        return StateIndexVM(tuple(groups), label, None)
    if err is not None and isinstance(nums.get("block_tables"), list) and nums["block_tables"]:
        label = (f"the numbers the probes attached to {err.exc_type} ({err.phase}); the block_tables/builder_buffers "
                 "tables hold no rows for this session")
        groups = []
        for t in nums["block_tables"]:
            if not isinstance(t, dict) or "columns" not in t:
                continue
            bt = BlockTable(group_index=t.get("group_index"), rows=t.get("rows"), columns=t.get("columns"),
                            block_size=t.get("block_size"), kernel_block_size=t.get("kernel_block_size"),
                            derivation=t.get("derivation"), slot_mapping_mode=t.get("slot_mapping_mode"))
            kv = next((g for g in record.state.kv_cache_groups if g.group_index == bt.group_index), None)
            spec = kv.spec_type if kv is not None else Missing("group type not recorded")
            groups.append(_group(bt.group_index, spec, bt, [], label, record, derivation_source="recorded (error numbers)"))
        groups = _attach_error(record, groups, err, nums)
        return StateIndexVM(tuple(groups), label, None)
    if record.predicted is not None and record.predicted.block_tables:
        label = "predicted by the pre-flight (the log has no block tables)"
        groups = _from_state(record, record.predicted, label)
        return StateIndexVM(tuple(groups), label, None)
    log_nums = record.log.numbers if record.log is not None else {}
    if "tensor_a_size" in log_nums and "tensor_b_size" in log_nums and any(
            f.category == "state_index" for f in record.findings):
        a, b = log_nums["tensor_a_size"], log_nums["tensor_b_size"]
        label = f"the log's error message (tensor a ({a}) vs tensor b ({b})); no block tables in a log"
        table = max(a, b)
        buf = _tensor_buffer(a, b, table, f"tensor {'a' if table == b else 'b'} of the failing copy (state indices)",
                             record, label)
        g = _group(Missing("the log does not say which group"), "MambaSpec", None, [buf], label, record, rows=None,
                   columns=table)
        return StateIndexVM((g,), label, None)
    kind = record.session.kind
    reason = {"log": "the log shows no block tables and no state-index mismatch",
              "check": "the pre-flight predicted no block tables (the engine fails before allocating them)",
              }.get(kind, "no block tables recorded (the engine did not reach initialize_kv_cache)")
    if st.errors and kind != "log":
        reason += f"; the engine stopped at {st.errors[0].exc_type}"
    return StateIndexVM((), "none", Missing(reason))


def _attach_error(record: SessionRecord, groups: list[StateIndexGroup], err, nums) -> list[StateIndexGroup]:
    """Add the failing copy's other tensor to the group whose block table has the named width."""
    a, b, dim = nums.get("tensor_a_size"), nums.get("tensor_b_size"), nums.get("dimension")
    if not (isinstance(a, int) and isinstance(b, int)) or dim not in (None, 1):
        return groups
    out = []
    done = False
    for g in groups:
        if not done and known(g.columns) and g.columns in (a, b) and (g.spec_type == "MambaSpec" or not known(g.spec_type)):
            buf = _tensor_buffer(a, b, g.columns, f"tensor {'a' if g.columns == b else 'b'} of the failing copy "
                                 f"(\"The size of tensor a ({a}) must match the size of tensor b ({b})\")", record,
                                 f"{err.exc_type} message, {err.phase}")
            keep = not isinstance(g.derivation, Missing) and g.derivation_source != "arithmetic match (not recorded)"
            out.append(_group(g.group_index, g.spec_type, None, list(g.buffers) + [buf], g.source, record, rows=g.rows,
                              columns=g.columns, block=g.block_size, derivation=g.derivation if keep else None,
                              derivation_source=g.derivation_source if keep else None))
            done = True
        else:
            out.append(g)
    return out

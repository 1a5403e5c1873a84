"""The step rollup (``step_rollup``, ``step_marks``) kept per written batch by ``Store.add_step_rows``
equals the rollup computed from scratch by migration m004's backfill, however the rows are split into
batches: a step's runner row and builder rows in different flushes (either first), several processes,
steps out of order, NULL counts. Files of the older schemas (per-row triggers, or no rollup at all)
migrate to the same contents and go on with the batch rollup."""

from __future__ import annotations

import itertools
import random
import sqlite3
from pathlib import Path

import pytest
import sqlite_utils
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from vllm_diag import schema
from vllm_diag.errors import DiagError
from vllm_diag.model import BatchStep
from vllm_diag.probes.recorder import Recorder
from vllm_diag.store import STEP_COLUMNS, Store

GDN = "GDNAttentionMetadataBuilder"
MAMBA = "Mamba2AttentionMetadataBuilder"
ROLLUP_COLS = ("session_id, pid, source, group_index, bucket, first_step, last_step, rows, max_reqs, max_decodes, "
               "max_spec_decodes, max_prefills, max_tokens, sum_tokens, mixed, disagree")
MARK_COLS = ("session_id, pid, step_index, kind, source, group_index, num_reqs, num_decodes, num_spec_decodes, "
             "num_prefills, num_tokens, runner_decodes, runner_spec_decodes, runner_prefills")


def _random_rows(rng: random.Random, n_steps: int) -> list[tuple]:
    """Rows of two sessions and several processes (pid NULL and 0 included): per step zero to two runner
    rows and up to three builder rows, splits that often differ, mixed steps, NULL counts; steps
    spread over several 64-step buckets and shuffled locally (out of order)."""
    rows = []
    for sid in ("s1", "s2"):
        for pid in (None, 0, 11, 12) if sid == "s1" else (21,):
            for step in rng.sample(range(400), n_steps):
                def counts():
                    d = rng.choice([None, 0, 1, 3, 4])
                    sd = rng.choice([None, 0, 0, 2])
                    p = rng.choice([0, 0, 1, None])
                    return d, sd, p
                runner = counts()
                for _ in range(rng.choice([0, 1, 1, 1, 2])):
                    rows.append(_row(sid, pid, step, None, None, runner))
                for builder, group in rng.sample([(GDN, 0), (GDN, 1), (MAMBA, None)], rng.randint(0, 3)):
                    split = runner if rng.random() < 0.5 else counts()
                    rows.append(_row(sid, pid, step, builder, group, split))
    # out of order, but mostly forward: shuffle within windows
    for i in range(0, len(rows), 17):
        chunk = rows[i:i + 17]
        rng.shuffle(chunk)
        rows[i:i + 17] = chunk
    return rows


def _row(sid, pid, step, builder, group, split) -> tuple:
    d, sd, p = split
    tokens = None if d is None else (d or 0) + 4 * (sd or 0) + 64 * (p or 0)
    values = {"session_id": sid, "pid": pid, "step_index": step, "at": 1.0 + step, "builder": builder,
              "group_index": group, "num_reqs": None if d is None else (d or 0) + (sd or 0) + (p or 0),
              "num_decodes": d, "num_spec_decodes": sd, "num_prefills": p, "num_decode_tokens": d,
              "num_spec_decode_tokens": None if sd is None else 4 * sd, "num_prefill_tokens": None if p is None else 64 * p,
              "num_tokens": tokens, "spec_tokens_per_req": None}
    return tuple(values[c] for c in STEP_COLUMNS)


def _splits(rng: random.Random, n: int) -> list[tuple[int, int]]:
    cuts = sorted(rng.sample(range(1, n), min(n - 1, rng.randint(0, 12)))) if n > 1 else []
    bounds = [0, *cuts, n]
    return list(itertools.pairwise(bounds))


def _contents(conn) -> tuple[list, list]:
    rollup = conn.execute(f"select {ROLLUP_COLS} from step_rollup order by 1, 2, 3, 4, 5").fetchall()
    marks = conn.execute(f"select {MARK_COLS} from step_marks").fetchall()
    return rollup, sorted(marks, key=repr)


def _ordered_marks(conn) -> list:
    """Marks of each (session, process, kind) in the order the readers cut them at MARK_LIMIT."""
    return conn.execute(f"select {MARK_COLS} from step_marks order by session_id, pid, kind, step_index, rowid").fetchall()


def _from_scratch(conn) -> tuple[list, list]:
    """m004's backfill over a copy of ``conn``'s batch_steps (same rowids)."""
    db = sqlite_utils.Database(memory=True)
    schema.migrations.apply(db, stop_before="m004_diagnosis_record_and_step_rollup")
    cols = ", ".join(STEP_COLUMNS)
    db.conn.executemany(f"insert into batch_steps (rowid, {cols}) values ({', '.join('?' * (len(STEP_COLUMNS) + 1))})",
                        conn.execute(f"select rowid, {cols} from batch_steps order by rowid").fetchall())
    schema.migrations.apply(db, stop_before="m005_step_rollup_one_trigger")
    return _contents(db.conn)


def _with_triggers(rows: list[tuple]) -> sqlite3.Connection:
    """The rows written one by one under the m006 triggers."""
    db = sqlite_utils.Database(memory=True)
    schema.migrations.apply(db, stop_before="m007_step_rollup_per_flush")
    db.conn.executemany(f"insert into batch_steps ({', '.join(STEP_COLUMNS)}) values ({', '.join('?' * len(STEP_COLUMNS))})",
                        rows)
    return db.conn


def _write_in_batches(path: Path, rows: list[tuple], rng: random.Random) -> None:
    """Each batch through a writer's own connection (a process of the engine), as the probes flush."""
    Store.open(path, create=True).close()
    for lo, hi in _splits(rng, len(rows)):
        with Store.open_append(path) as st:
            st.add_step_rows(rows[lo:hi])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), n_steps=st.integers(1, 60))
def test_batch_rollup_equals_the_backfill_whatever_the_batches(tmp_path_factory, seed, n_steps):
    rng = random.Random(seed)
    rows = _random_rows(rng, n_steps)
    path = tmp_path_factory.mktemp("rollup") / "r.db"
    _write_in_batches(path, rows, rng)
    conn = sqlite3.connect(path)
    assert _contents(conn) == _from_scratch(conn)
    # and the marks' order within a step (where MARK_LIMIT cuts) is the order the triggers wrote
    assert _ordered_marks(conn) == _ordered_marks(_with_triggers(rows))
    conn.close()


def test_runner_and_builder_rows_of_a_step_in_different_flushes(tmp_path):
    """Builder rows first (a flush), the runner row later (another flush), and the other way round:
    each disagreeing pair marked once, counted in the builder's bucket, whichever came last."""
    path = tmp_path / "s.db"
    Store.open(path, create=True).close()
    runner = _row("s", 7, 100, None, None, (4, 0, 0))
    late = [_row("s", 7, 100, GDN, 0, (3, 1, 0)), _row("s", 7, 100, MAMBA, None, (4, 0, 0))]
    early_runner = _row("s", 7, 200, None, None, (2, 2, 0))
    builder_after = _row("s", 7, 200, GDN, 0, (2, 1, 0))
    with Store.open_append(path) as st:
        st.add_step_rows(late + [early_runner])
    with Store.open_append(path) as st:
        st.add_step_rows([runner])
    with Store.open_append(path) as st:
        st.add_step_rows([builder_after])
    conn = sqlite3.connect(path)
    marks = conn.execute("select step_index, source, num_decodes, runner_decodes from step_marks where kind = 'disagree' "
                         "order by rowid").fetchall()
    assert marks == [(100, GDN, 3, 4), (200, GDN, 2, 2)]
    counts = dict(conn.execute("select source || ':' || bucket, disagree from step_rollup").fetchall())
    assert counts == {"runner:1": 0, f"{GDN}:1": 1, f"{MAMBA}:1": 0, "runner:3": 0, f"{GDN}:3": 1}
    assert conn.execute("select count(*) from step_marks where kind = 'mixed'").fetchone()[0] == 3  # decodes + spec decodes
    assert _contents(conn) == _from_scratch(conn)


def test_every_writer_goes_through_the_batch_rollup(tmp_path):
    """Store.add_rows, Store.add_state, Store.save and the probes' Recorder._write_steps all roll up."""
    from vllm_diag.model import EngineState, SessionInfo, SessionRecord

    assert Recorder._STEP_COLUMNS == STEP_COLUMNS
    path = tmp_path / "w.db"
    steps = [BatchStep(step_index=i, num_decodes=2, num_spec_decodes=i % 2, num_tokens=5) for i in range(130)]
    steps += [BatchStep(step_index=i, num_decodes=3, builder=GDN, group_index=0) for i in range(0, 130, 5)]
    with Store.open(path, create=True) as st:
        a = st.new_session("engine")
        st.add_rows("batch_steps", a, 5, steps)
        b = st.new_session("engine")
        st.add_state(b, EngineState(steps=steps), pid=6)
        rec = SessionRecord(session=SessionInfo(id="c", kind="engine"), state=EngineState(steps=steps))
        st.save(rec)

        class _W:
            pid = 8
        with st.transaction():
            Recorder._write_steps(_W(), st, "d", steps)
        with pytest.raises(DiagError, match="no column 'bogus'"):
            st._insert_rows("batch_steps", "e", 1, [{"step_index": 1, "bogus": 2}])
    conn = sqlite3.connect(path)
    per_session = conn.execute("select session_id, sum(rows), sum(mixed), sum(disagree) from step_rollup "
                               "group by 1 order by 1").fetchall()
    assert [r[1:] for r in per_session] == [(156, 65, 26)] * 4
    assert _contents(conn) == _from_scratch(conn)


@pytest.mark.parametrize("old", ["m007_step_rollup_per_flush", "m004_diagnosis_record_and_step_rollup"])
def test_a_file_of_an_older_schema_migrates_to_the_same_rollup(tmp_path, old):
    """A file written under the per-row triggers (schema 6), or before the rollup existed (schema 3),
    opens for writing, loses the triggers, and its rollup -- old rows and new batches -- equals the
    backfill's; summaries read the same as from a file written by the batch path only."""
    rng = random.Random(7)
    rows = _random_rows(rng, 50)
    half = len(rows) // 2
    path = tmp_path / "old.db"
    db = sqlite_utils.Database(path)
    schema.migrations.apply(db, stop_before=old)
    db.conn.executemany(f"insert into batch_steps ({', '.join(STEP_COLUMNS)}) values ({', '.join('?' * len(STEP_COLUMNS))})",
                        rows[:half])
    db.conn.commit()
    db.conn.close()
    with Store.open(path, create=True) as st:
        assert st.db.execute("select count(*) from sqlite_master where type = 'trigger'").fetchone()[0] == 0
        assert st.db.execute("select count(*) from _sqlite_migrations").fetchone()[0] == schema.SCHEMA_VERSION
        for lo, hi in _splits(rng, len(rows) - half):
            st.add_step_rows(rows[half + lo:half + hi])
    conn = sqlite3.connect(path)
    assert _contents(conn) == _from_scratch(conn)
    fresh = tmp_path / "fresh.db"
    _write_in_batches(fresh, rows, rng)
    with Store.open(path) as a, Store.open(fresh) as b:
        for sid in ("s1", "s2"):
            for points in (2000, 3):
                assert a.step_summary(sid, [], max_points=points) == b.step_summary(sid, [], max_points=points)


def test_triggers_recreated_by_a_tool_are_dropped_by_the_next_writer(tmp_path):
    """A tool that re-runs m004 on a migrated file (benchmarks bulk-load rows that way) leaves its
    per-row triggers behind; a writer opening the file drops them, so no row is counted twice."""
    path = tmp_path / "t.db"
    rows = _random_rows(random.Random(3), 20)
    Store.open(path, create=True).close()
    conn = sqlite3.connect(path, isolation_level=None)
    for trigger in schema.STEP_TRIGGERS:
        conn.execute(trigger)
    conn.close()
    with Store.open(path, create=True) as st:
        assert st.db.execute("select count(*) from sqlite_master where type = 'trigger'").fetchone()[0] == 0
        st.add_step_rows(rows)
    conn = sqlite3.connect(path)
    assert _contents(conn) == _from_scratch(conn)


def test_token_sums_past_the_integer_range_saturate_instead_of_failing(tmp_path):
    """A corrupt or hostile row (num_tokens near 2**62) must not make a write or a read raise: SQLite's sum()
    fails with "integer overflow" past 2**63, so the rollup and the window readers saturate at the maximum."""
    path = tmp_path / "big.db"
    big = 1 << 62
    steps = [BatchStep(step_index=i, num_decodes=1, num_tokens=big) for i in range(4)]
    with Store.open(path, create=True) as st:
        sid = st.new_session("engine")
        st.add_rows("batch_steps", sid, 3, steps[:2])
        st.add_rows("batch_steps", sid, 3, steps[2:])  # a second flush adds to the saturated bucket
        rec = st.load(sid, steps="summary")
    conn = sqlite3.connect(path)
    assert conn.execute("select sum_tokens, typeof(sum_tokens) from step_rollup").fetchall() == [(2 ** 63 - 1, "integer")]
    assert rec.session.id == sid

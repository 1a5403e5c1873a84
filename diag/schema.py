"""The store's schema, as sqlite-utils migrations (table ``_sqlite_migrations``, set ``vllm_diag``).

Append new migrations at the end; never edit one that shipped. ``SCHEMA_VERSION`` is the count.
Table and column names are meant to read well in ``sqlite3`` and datasette.
"""

from __future__ import annotations

from sqlite_utils.migrations import Migrations

MIGRATION_SET = "vllm_diag"
migrations = Migrations(MIGRATION_SET)

# Columns every per-process fact carries: which session, and which process (pid) wrote it.
_OWNER = {"session_id": str, "pid": int}


@migrations()
def m001_initial(db) -> None:
    db["sessions"].create(
        {
            "id": str,
            "kind": str,  # engine | log | check
            "label": str,
            "status": str,  # running | ok | failed
            "started_at": float,
            "ended_at": float,
            "vllm_version": str,
            "model": str,
            "architecture": str,
            "source": str,
            "host": str,
        },
        pk="id",
    )
    db["processes"].create(
        {
            "session_id": str,
            "pid": int,
            "role": str,  # api_server | engine_core | worker | main | other
            "rank": int,
            "ppid": int,
            "name": str,
            "host": str,
            "started_at": float,
        },
        pk=("session_id", "pid"),
        foreign_keys=[("session_id", "sessions", "id")],
    )
    db["environment"].create(
        {**_OWNER, "key": str, "value": str},
        pk=("session_id", "pid", "key"),
    )
    db["engine_config"].create(
        {**_OWNER, "key": str, "value": str},  # value is JSON
        pk=("session_id", "pid", "key"),
    )
    db["layer_specs"].create(
        {
            **_OWNER,
            "stage": str,  # layer | unified
            "layer_name": str,
            "spec_type": str,
            "block_size": int,
            "page_size_bytes": int,
            "page_size_padded": int,
            "num_kv_heads": int,
            "head_size": int,
            "head_size_v": int,
            "dtype": str,
            "sliding_window": int,
            "mamba_type": str,
            "mamba_shapes": str,
            "mamba_dtypes": str,
            "mamba_cache_mode": str,
            "num_speculative_blocks": int,
            "is_draft": int,
            "extra": str,
        }
    )
    db["kv_cache_groups"].create(
        {
            **_OWNER,
            "group_index": int,
            "spec_type": str,
            "block_size": int,
            "page_size_bytes": int,
            "page_size_padded": int,
            "num_speculative_blocks": int,
            "is_draft": int,
            "layer_names": str,
            "extra": str,
        }
    )
    db["block_tables"].create(
        {
            **_OWNER,
            "group_index": int,
            "rows": int,
            "columns": int,
            "block_size": int,
            "kernel_block_size": int,
            "derivation": str,
            "slot_mapping_mode": str,
        }
    )
    db["builder_buffers"].create(
        {**_OWNER, "group_index": int, "builder": str, "name": str, "shape": str, "dtype": str}
    )
    db["batch_steps"].create(
        {
            **_OWNER,
            "step_index": int,
            "at": float,
            "builder": str,
            "group_index": int,
            "num_reqs": int,
            "num_decodes": int,
            "num_spec_decodes": int,
            "num_prefills": int,
            "num_decode_tokens": int,
            "num_spec_decode_tokens": int,
            "num_prefill_tokens": int,
            "num_tokens": int,
            "spec_tokens_per_req": str,
        }
    )
    db["errors"].create(
        {
            **_OWNER,
            "at": float,
            "phase": str,
            "exc_type": str,
            "message": str,
            "location": str,
            "traceback": str,
            "notes": str,
            "numbers": str,
        }
    )
    db["findings"].create(
        {
            "id": int,
            "session_id": str,
            "rule": str,
            "category": str,
            "severity": str,
            "title": str,
            "message": str,
            "numbers": str,
            "comparisons": str,
            "evidence": str,
            "versions": str,
            "fixed_in": str,
            "missing_evidence": str,
        },
        pk="id",
        foreign_keys=[("session_id", "sessions", "id")],
    )
    db["suggestions"].create(
        {
            "id": int,
            "finding_id": int,
            "session_id": str,
            "rank": int,
            "title": str,
            "tradeoff": str,
            "changes": str,
            "command": str,
            "diff": str,
            "yaml": str,
            "llm_kwargs": str,
            "verified": int,
            "verification": str,
        },
        pk="id",
        foreign_keys=[("finding_id", "findings", "id"), ("session_id", "sessions", "id")],
    )
    for table in (
        "environment",
        "engine_config",
        "layer_specs",
        "kv_cache_groups",
        "block_tables",
        "builder_buffers",
        "batch_steps",
        "errors",
    ):
        db[table].create_index(["session_id"], find_unique_name=True)
    db["findings"].create_index(["session_id"], find_unique_name=True)
    db["suggestions"].create_index(["finding_id"], find_unique_name=True)


@migrations()
def m002_kv_cache_phase_and_buffer_derivation(db) -> None:
    # ``phase``: which KV cache the runner had built when the row was recorded -- ``profile`` (the
    # throwaway minimal cache of CUDA-graph memory profiling, vLLM 0.19+) or ``init`` (the serving
    # cache). ``derivation`` on builder buffers: how vLLM sized each dimension.
    db["block_tables"].add_column("phase", str)
    db["builder_buffers"].add_column("phase", str)
    db["builder_buffers"].add_column("derivation", str)


@migrations()
def m003_finding_confidence_and_basis(db) -> None:
    # How sure a finding is ("high" | "medium" | "low") and why (a matched vLLM failure site, or a
    # family inferred from the configuration and frames): Finding.confidence / Finding.basis.
    db["findings"].add_column("confidence", str)
    db["findings"].add_column("basis", str)


# Step rollup, maintained by SQLite triggers on every batch_steps insert in m004-m006 (the writers roll up
# each batch since m007, see roll_up_steps below):
# one row per (session, process, source, KV group, 64-step bucket) with max/sum/counts, and one row
# per marked step (decodes mixed with spec decodes; a builder row whose split differs from the
# runner's row of the same step). The timeline of a 1,000,000-step session reads ~30,000 rollup rows
# instead of 2,000,000 step rows (benchmarks/views_scale.py). ``source`` is the builder's class name
# or "runner"; ``group_index`` -1 and ``pid`` 0 stand for NULL (NULLs never collide in a primary key).
ROLLUP_SHIFT = 6  # 64 steps per rollup bucket

_ROLLUP_VALUES = """new.session_id, coalesce(new.pid, 0), coalesce(new.builder, 'runner'), coalesce(new.group_index, -1),
       new.step_index >> {shift}, new.step_index, new.step_index, 1, coalesce(new.num_reqs, 0), coalesce(new.num_decodes, 0),
       coalesce(new.num_spec_decodes, 0), coalesce(new.num_prefills, 0), coalesce(new.num_tokens, 0), coalesce(new.num_tokens, 0),
       coalesce(new.num_decodes, 0) > 0 and coalesce(new.num_spec_decodes, 0) > 0""".format(shift=ROLLUP_SHIFT)

_DIFFERS = """(coalesce({a}.num_decodes, 0) != coalesce({b}.num_decodes, 0)
                or coalesce({a}.num_spec_decodes, 0) != coalesce({b}.num_spec_decodes, 0)
                or coalesce({a}.num_prefills, 0) != coalesce({b}.num_prefills, 0))"""

_RUNNER_OF_NEW = """from batch_steps r where r.session_id = new.session_id and r.pid is new.pid and r.step_index = new.step_index
       and r.builder is null and """ + _DIFFERS.format(a="r", b="new")
_BUILDERS_OF_NEW = """from batch_steps b where b.session_id = new.session_id and b.pid is new.pid and b.step_index = new.step_index
       and b.builder is not null and """ + _DIFFERS.format(a="b", b="new")

_ROLLUP_UPSERT = f"""insert into step_rollup values ({_ROLLUP_VALUES}, 0)
  on conflict do update set first_step = min(first_step, excluded.first_step), last_step = max(last_step, excluded.last_step),
     rows = rows + 1, max_reqs = max(max_reqs, excluded.max_reqs), max_decodes = max(max_decodes, excluded.max_decodes),
     max_spec_decodes = max(max_spec_decodes, excluded.max_spec_decodes), max_prefills = max(max_prefills, excluded.max_prefills),
     max_tokens = max(max_tokens, excluded.max_tokens), sum_tokens = sum_tokens + excluded.sum_tokens,
     mixed = mixed + excluded.mixed;
  insert into step_marks select new.session_id, coalesce(new.pid, 0), new.step_index, 'mixed', coalesce(new.builder, 'runner'),
     coalesce(new.group_index, -1), new.num_reqs, new.num_decodes, new.num_spec_decodes, new.num_prefills, new.num_tokens,
     null, null, null
     where coalesce(new.num_decodes, 0) > 0 and coalesce(new.num_spec_decodes, 0) > 0;"""

# One trigger per kind of row (exactly one fires per insert), each with its statements in order: SQLite
# gives no order between triggers of one event, and the disagreement counts update the rollup row the
# first statement creates.
STEP_TRIGGERS = (
    # the runner's row; builder rows of the same step written before it that differ are disagreements
    f"""create trigger if not exists batch_steps_rollup_runner after insert on batch_steps when new.builder is null begin
  {_ROLLUP_UPSERT}
  insert into step_marks select b.session_id, coalesce(b.pid, 0), b.step_index, 'disagree', b.builder,
     coalesce(b.group_index, -1), b.num_reqs, b.num_decodes, b.num_spec_decodes, b.num_prefills, b.num_tokens,
     new.num_decodes, new.num_spec_decodes, new.num_prefills {_BUILDERS_OF_NEW};
  update step_rollup set disagree = disagree + (select count(*) {_BUILDERS_OF_NEW}
       and b.builder = step_rollup.source and coalesce(b.group_index, -1) = step_rollup.group_index)
     where changes() > 0 and session_id = new.session_id and pid = coalesce(new.pid, 0)
       and bucket = new.step_index >> {ROLLUP_SHIFT} and source != 'runner';
end""",
    # a builder's row; the runner's row of the same step written before it, if it differs
    f"""create trigger if not exists batch_steps_rollup_builder after insert on batch_steps when new.builder is not null begin
  {_ROLLUP_UPSERT}
  insert into step_marks select new.session_id, coalesce(new.pid, 0), new.step_index, 'disagree', new.builder,
     coalesce(new.group_index, -1), new.num_reqs, new.num_decodes, new.num_spec_decodes, new.num_prefills, new.num_tokens,
     r.num_decodes, r.num_spec_decodes, r.num_prefills {_RUNNER_OF_NEW};
  update step_rollup set disagree = disagree + changes()
     where changes() > 0 and session_id = new.session_id and pid = coalesce(new.pid, 0) and source = new.builder
       and group_index = coalesce(new.group_index, -1) and bucket = new.step_index >> {ROLLUP_SHIFT};
end""",
)


def saturating_sum(expr: str) -> str:
    """SQL summing ``expr`` that saturates at the integer maximum instead of failing: SQLite's sum() raises
    "integer overflow" past 2**63, which a corrupt or hostile row can reach; total() adds in floating point
    and the cast clamps to the integer range (token sums of the step rollup and its readers)."""
    return f"cast(total({expr}) as integer)"


@migrations()
def m004_diagnosis_record_and_step_rollup(db) -> None:
    # Everything `check`/`analyze` print beyond the engine state, so `show` prints the same: the target
    # (versions/GPU/config and where each came from), notes, the log summary (root error with frames,
    # numbers, startup facts), the pre-flight's predicted plan next to a recorded/logged state, and the
    # rules that failed. JSON columns (vllm_diag.model: Target, LogSummary, EngineState, RuleFailure).
    db["diagnoses"].create(
        {"session_id": str, "target": str, "notes": str, "log": str, "predicted": str, "rule_failures": str},
        pk="session_id", foreign_keys=[("session_id", "sessions", "id")],
    )
    db.execute("""create table step_rollup (
        session_id text, pid integer, source text, group_index integer, bucket integer, first_step integer,
        last_step integer, rows integer, max_reqs integer, max_decodes integer, max_spec_decodes integer,
        max_prefills integer, max_tokens integer, sum_tokens integer, mixed integer, disagree integer,
        primary key (session_id, pid, source, group_index, bucket)) without rowid""")
    db.execute("""create table step_marks (
        session_id text, pid integer, step_index integer, kind text, source text, group_index integer,
        num_reqs integer, num_decodes integer, num_spec_decodes integer, num_prefills integer, num_tokens integer,
        runner_decodes integer, runner_spec_decodes integer, runner_prefills integer)""")
    db.execute("create index step_marks_by_step on step_marks (session_id, pid, kind, step_index)")
    # the trigger's runner/builder lookups, the tail of a timeline, steps_after(rowid) for live follow
    db.execute("create index batch_steps_by_step on batch_steps (session_id, pid, step_index)")
    # rows recorded before this migration: the same aggregation, once
    db.execute(f"""insert into step_rollup
        select session_id, coalesce(pid, 0), coalesce(builder, 'runner'), coalesce(group_index, -1),
               step_index >> {ROLLUP_SHIFT}, min(step_index), max(step_index), count(*), max(coalesce(num_reqs, 0)),
               max(coalesce(num_decodes, 0)), max(coalesce(num_spec_decodes, 0)), max(coalesce(num_prefills, 0)),
               max(coalesce(num_tokens, 0)), {saturating_sum('coalesce(num_tokens, 0)')},
               sum(coalesce(num_decodes, 0) > 0 and coalesce(num_spec_decodes, 0) > 0), 0
        from batch_steps group by 1, 2, 3, 4, 5""")
    db.execute("""insert into step_marks
        select session_id, coalesce(pid, 0), step_index, 'mixed', coalesce(builder, 'runner'), coalesce(group_index, -1),
               num_reqs, num_decodes, num_spec_decodes, num_prefills, num_tokens, null, null, null
        from batch_steps where coalesce(num_decodes, 0) > 0 and coalesce(num_spec_decodes, 0) > 0""")
    db.execute(f"""insert into step_marks
        select b.session_id, coalesce(b.pid, 0), b.step_index, 'disagree', b.builder, coalesce(b.group_index, -1),
               b.num_reqs, b.num_decodes, b.num_spec_decodes, b.num_prefills, b.num_tokens,
               r.num_decodes, r.num_spec_decodes, r.num_prefills
        from batch_steps b join batch_steps r on r.session_id = b.session_id and r.pid is b.pid
             and r.step_index = b.step_index and r.builder is null
        where b.builder is not null and {_DIFFERS.format(a="r", b="b")}""")
    db.execute("""update step_rollup set disagree = (
        select count(*) from step_marks m where m.kind = 'disagree' and m.session_id = step_rollup.session_id
        and m.pid = step_rollup.pid and m.source = step_rollup.source and m.group_index = step_rollup.group_index
        and (m.step_index >> 6) = step_rollup.bucket) where source != 'runner'""")
    for trigger in STEP_TRIGGERS:
        db.execute(trigger)



@migrations()
def m005_step_rollup_one_trigger(db) -> None:
    # m004 shipped the disagreement counting as separate triggers, which SQLite may fire before the one
    # that creates the rollup row: a builder row opening a 64-step bucket lost its count. One trigger per
    # kind of row, with the statements in order, replaces them; the counts are recomputed from step_marks.
    for name in ("batch_steps_rollup", "batch_steps_builder_disagrees", "batch_steps_runner_disagrees",
                 "batch_steps_rollup_runner", "batch_steps_rollup_builder"):
        db.execute(f"drop trigger if exists {name}")
    db.execute(f"""update step_rollup set disagree = (
        select count(*) from step_marks m where m.kind = 'disagree' and m.session_id = step_rollup.session_id
        and m.pid = step_rollup.pid and m.source = step_rollup.source and m.group_index = step_rollup.group_index
        and (m.step_index >> {ROLLUP_SHIFT}) = step_rollup.bucket) where source != 'runner'""")
    for trigger in STEP_TRIGGERS:
        db.execute(trigger)


@migrations()
def m006_step_rollup_bucket_index(db) -> None:
    # A runner row updates the rollup rows of its step's bucket for every builder source: without this
    # index that update scanned all the process's rollup rows, so writing slowed down as a session grew
    # (641 rows/s at 1,000,000 steps, benchmarks/views_scale.py). Triggers recreated at their latest form.
    db.execute("create index if not exists step_rollup_by_bucket on step_rollup (session_id, pid, bucket)")
    for name in ("batch_steps_rollup", "batch_steps_builder_disagrees", "batch_steps_runner_disagrees",
                 "batch_steps_rollup_runner", "batch_steps_rollup_builder"):
        db.execute(f"drop trigger if exists {name}")
    for trigger in STEP_TRIGGERS:
        db.execute(trigger)


@migrations()
def m007_step_rollup_per_flush(db) -> None:
    # The rollup triggers cost ~2.4x the write time of a step row (~18 us a row on a loaded 2-core host),
    # which the probes' background writer pays for every step. The writers now roll up each batch of rows
    # once, in the transaction that inserts it (``roll_up_steps``, called by ``Store.add_step_rows``):
    # same rollup rows and marks, a few set-based statements per flush. Rows written until now are
    # rolled up already (by the triggers, or by m004's backfill).
    drop_step_triggers(db)


LEGACY_STEP_TRIGGERS = ("batch_steps_rollup", "batch_steps_builder_disagrees", "batch_steps_runner_disagrees",
                        "batch_steps_rollup_runner", "batch_steps_rollup_builder")


def legacy_step_triggers(db) -> list[str]:
    """The per-row rollup triggers of m004-m006 a file has (a file migrated past m007 has them only when a
    tool re-ran m004)."""
    conn = getattr(db, "conn", db)
    names = [r[0] for r in conn.execute(
        "select name from sqlite_master where type = 'trigger' and tbl_name = 'batch_steps'").fetchall()]
    return [n for n in names if n in LEGACY_STEP_TRIGGERS]


def drop_step_triggers(db) -> bool:
    """Drop the per-row rollup triggers of m004-m006 where a file has them (True when it had)."""
    conn = getattr(db, "conn", db)
    found = legacy_step_triggers(conn)
    for name in found:
        conn.execute(f"drop trigger if exists {name}")
    return bool(found)


# The rollup of a batch of new batch_steps rows (rowid > :lo), run in the transaction that inserted them.
# It produces what the m004-m006 triggers produced row by row: the bucket upsert, a 'mixed' mark per
# mixed row, and a 'disagree' mark per (builder row, runner row) pair of one step whose splits differ,
# made when the later of the two rows arrives -- so a step's runner row and builder rows may come in
# different batches (or from different writers) and each pair is marked exactly once. Marks go in in
# the order the triggers wrote them (by the later row's rowid, then the earlier row's).
_ROLLUP_BATCH = [
    f"""insert into step_rollup
  select session_id, coalesce(pid, 0), coalesce(builder, 'runner'), coalesce(group_index, -1), step_index >> {ROLLUP_SHIFT},
         min(step_index), max(step_index), count(*), max(coalesce(num_reqs, 0)), max(coalesce(num_decodes, 0)),
         max(coalesce(num_spec_decodes, 0)), max(coalesce(num_prefills, 0)), max(coalesce(num_tokens, 0)),
         {saturating_sum('coalesce(num_tokens, 0)')}, sum(coalesce(num_decodes, 0) > 0 and coalesce(num_spec_decodes, 0) > 0), 0
  from batch_steps where rowid > :lo group by 1, 2, 3, 4, 5
  on conflict do update set first_step = min(first_step, excluded.first_step), last_step = max(last_step, excluded.last_step),
     rows = rows + excluded.rows, max_reqs = max(max_reqs, excluded.max_reqs), max_decodes = max(max_decodes, excluded.max_decodes),
     max_spec_decodes = max(max_spec_decodes, excluded.max_spec_decodes), max_prefills = max(max_prefills, excluded.max_prefills),
     max_tokens = max(max_tokens, excluded.max_tokens), sum_tokens = min(sum_tokens + excluded.sum_tokens, 9223372036854775807),
     mixed = mixed + excluded.mixed""",
    """insert into step_marks
  select session_id, coalesce(pid, 0), step_index, 'mixed', coalesce(builder, 'runner'), coalesce(group_index, -1),
         num_reqs, num_decodes, num_spec_decodes, num_prefills, num_tokens, null, null, null
  from batch_steps where rowid > :lo and coalesce(num_decodes, 0) > 0 and coalesce(num_spec_decodes, 0) > 0
  order by rowid""",
    # n: a new row; o: an earlier row of the same step from the other side (runner vs builder)
    "insert into step_marks select session_id, pid, step_index, kind, source, group_index, num_reqs, num_decodes, "
    "num_spec_decodes, num_prefills, num_tokens, runner_decodes, runner_spec_decodes, runner_prefills from ("
    + " union all ".join("""
    select n.rowid as later, o.rowid as earlier, n.session_id, coalesce(n.pid, 0) as pid, n.step_index, 'disagree' as kind,
           {b}.builder as source, coalesce({b}.group_index, -1) as group_index, {b}.num_reqs, {b}.num_decodes,
           {b}.num_spec_decodes, {b}.num_prefills, {b}.num_tokens, {r}.num_decodes as runner_decodes,
           {r}.num_spec_decodes as runner_spec_decodes, {r}.num_prefills as runner_prefills
    from batch_steps n join batch_steps o on o.session_id = n.session_id and o.pid is n.pid
         and o.step_index = n.step_index and o.rowid < n.rowid and o.builder is {o_null}
    where n.rowid > :lo and n.builder is {n_null} and """.format(b=b, r=r, n_null=n_null, o_null=o_null)
                         + _DIFFERS.format(a="o", b="n")
                         # new builder rows against earlier runner rows; new runner rows against earlier builder rows
                         for b, r, n_null, o_null in (("n", "o", "not null", "null"), ("o", "n", "null", "not null")))
    + ") order by later, earlier",
]


def step_rowids(conn) -> tuple[int, int]:
    """The last rowids of ``batch_steps`` and ``step_marks``: read before a batch is inserted, in its
    transaction, and handed to :func:`roll_up_steps` after."""
    return (conn.execute("select coalesce(max(rowid), 0) from batch_steps").fetchone()[0],
            conn.execute("select coalesce(max(rowid), 0) from step_marks").fetchone()[0])


# the new disagreement marks, counted in their builder rows' buckets (which the upsert above has made)
_NEW_DISAGREEMENTS = f"""select count(*), session_id, pid, source, group_index, step_index >> {ROLLUP_SHIFT} from step_marks
  where rowid > ? and kind = 'disagree' group by 2, 3, 4, 5, 6"""
_COUNT_DISAGREEMENTS = """update step_rollup set disagree = disagree + ?
  where session_id = ? and pid = ? and source = ? and group_index = ? and bucket = ?"""


def roll_up_steps(conn, before: tuple[int, int]) -> None:
    """Fold the batch_steps rows inserted since ``before`` (``step_rowids`` of the same transaction)
    into ``step_rollup`` and ``step_marks``."""
    lo, marks_lo = before
    upsert, mixed, disagree = _ROLLUP_BATCH
    conn.execute(upsert, {"lo": lo})
    conn.execute(mixed, {"lo": lo})
    if conn.execute(disagree, {"lo": lo}).rowcount > 0:
        conn.executemany(_COUNT_DISAGREEMENTS, conn.execute(_NEW_DISAGREEMENTS, [marks_lo]).fetchall())


SCHEMA_VERSION = len(migrations._migrations)

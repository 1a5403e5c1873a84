"""diag/store.py: round trips of every model type, schema/migrations, read-only opens, wrong files,
and concurrent writers in real processes."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from vllm_diag import schema
from vllm_diag import store as store_mod
from vllm_diag.errors import DiagError, NotADiagDatabase, SessionNotFound
from vllm_diag.model import (
    BatchStep,
    BlockTable,
    BuilderBuffer,
    Change,
    Comparison,
    EngineState,
    ErrorRecord,
    Evidence,
    Finding,
    KVCacheGroup,
    LayerSpec,
    ProcessInfo,
    SessionInfo,
    Suggestion,
    to_jsonable,
)
from vllm_diag.store import Store, new_session_id

REPO_ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------ sample data


def sample_state() -> EngineState:
    return EngineState(
        source="recorded",
        vllm_version="0.32.0",
        config={
            "model": "/models/qwen3_next",
            "block_size": 640,
            "enable_prefix_caching": False,
            "cudagraph_capture_sizes": [1, 2, 4, 8],
            "speculative_method": None,
            "gpu_memory_utilization": 0.9,
            "nested": {"a": [1, {"b": "c"}]},
        },
        environment={"VLLM_CPU_KVCACHE_SPACE": "1", "torch": "2.13.0+cpu", "count": 3},
        layer_specs=[
            LayerSpec(layer_name="model.layers.0.linear_attn", spec_type="MambaSpec", block_size=512,
                      page_size_bytes=163840, page_size_padded=163840, dtype="torch.bfloat16",
                      mamba_type="GDN_ATTN", mamba_shapes=[[6, 512], [2, 128, 128]],
                      mamba_dtypes=["torch.bfloat16", "torch.float32"], mamba_cache_mode="none",
                      num_speculative_blocks=3, extra={"shapes_note": "conv, temporal", "n": 2}),
            LayerSpec(layer_name="model.layers.3.self_attn.attn", spec_type="FullAttentionSpec", block_size=640,
                      page_size_bytes=163840, num_kv_heads=2, head_size=32, head_size_v=32,
                      dtype="torch.bfloat16"),
            LayerSpec(layer_name="draft_model.model.layers.0.self_attn.attn", spec_type="SlidingWindowSpec",
                      block_size=2560, page_size_bytes=655360, num_kv_heads=4, head_size=64,
                      sliding_window=4096, is_draft=True, stage="unified"),
        ],
        kv_cache_groups=[
            KVCacheGroup(group_index=0, spec_type="MambaSpec",
                         layer_names=["model.layers.0.linear_attn", "model.layers.2.linear_attn"],
                         block_size=512, page_size_bytes=163840, page_size_padded=163840, num_speculative_blocks=3),
            KVCacheGroup(group_index=1, spec_type="FullAttentionSpec",
                         layer_names=["model.layers.3.self_attn.attn", "draft_model.model.layers.0.self_attn.attn"],
                         block_size=640, page_size_bytes=163840, is_draft=True, extra={"role": "default"}),
        ],
        block_tables=[
            BlockTable(group_index=0, rows=4, columns=4, block_size=512, kernel_block_size=512,
                       derivation="cdiv(512, 512) + 3", slot_mapping_mode="NONE"),
            BlockTable(group_index=1, rows=4, columns=1, block_size=640, slot_mapping_mode="TOKEN_TO_KV_SLOT"),
        ],
        builder_buffers=[
            BuilderBuffer(group_index=0, builder="GDNAttentionMetadataBuilder", name="spec_state_indices",
                          shape=[4, 4], dtype="torch.int32"),
            BuilderBuffer(group_index=None, builder="CPUAttentionMetadataBuilder", name="seq_lens", shape=[4]),
        ],
        steps=[
            BatchStep(step_index=0, num_reqs=2, num_prefills=2, num_prefill_tokens=12, num_tokens=12,
                      builder="GDNAttentionMetadataBuilder", group_index=0, at=100.5),
            BatchStep(step_index=1, num_reqs=2, num_decodes=1, num_spec_decodes=1, num_decode_tokens=1,
                      num_spec_decode_tokens=4, num_tokens=5, spec_tokens_per_req=[0, 3], at=100.75),
        ],
        errors=[
            ErrorRecord(exc_type="AssertionError", message="", phase="init",
                        traceback="Traceback (most recent call last):\n  ...\nAssertionError\n",
                        notes=["page sizes differ"], numbers={"max_page_size": 655360, "page": 163840},
                        location="vllm/v1/core/kv_cache_utils.py:1042 in unify_kv_cache_spec_page_size",
                        at=101.0),
        ],
    )


def sample_findings() -> list[Finding]:
    return [
        Finding(
            rule="kv_page_size_unify",
            category="kv_page_size",
            title="Mamba page not padded to the draft's page",
            severity="error",
            message="unify_kv_cache_spec_page_size asserts",
            numbers={"max_page_size": 655360, "mamba_page": 163840},
            comparisons=[Comparison(name="mamba page", expected=655360, actual=163840, unit="bytes"),
                         Comparison(name="groups", expected=[1, 2], actual={"n": 3})],
            evidence=[Evidence(text="AssertionError", line=42, source="crash.log"),
                      Evidence(text="layer_specs row", source="layer_specs")],
            suggestions=[
                Suggestion(title="Use a draft with the main model's KV page", tradeoff="a different draft",
                           changes=[Change(key="draft_model", value="/m/llama_draft", flag="--speculative-config.model",
                                           old="/m/llama_draft_big")],
                           command="vllm serve /m/q --speculative-config '{...}'",
                           diff=["- --speculative-config.model /m/llama_draft_big",
                                 "+ --speculative-config.model /m/llama_draft"],
                           yaml="speculative-config:\n  model: /m/llama_draft\n",
                           llm_kwargs={"speculative_config": {"model": "/m/llama_draft", "num_speculative_tokens": 3}},
                           verified=True, verification="re-check: no findings", rank=1),
                Suggestion(title="Upgrade vLLM", tradeoff="an upgrade",
                           changes=[Change(key="vllm_version", value=None)], rank=2),
            ],
            versions=">=0.17,<0.28",
            fixed_in="0.28.0 (PR #45207)",
            missing_evidence=["the draft's page size"],
        ),
        Finding(rule="other_oom", category="other", title="Out of memory", severity="warning"),
    ]


def _write_session(st: Store, sid: str = "20261126-000000-aaaaaa", **info) -> SessionInfo:
    session = SessionInfo(id=sid, kind="engine", label="lbl", status="failed", started_at=1000.0, ended_at=1010.0,
                          vllm_version="0.32.0", model="/models/qwen3_next", architecture="Qwen3NextForCausalLM",
                          source="python run.py", host="box", **info)
    st.ensure_session(session)
    st.add_process(sid, ProcessInfo(pid=11, role="main", host="box", started_at=1000.0))
    st.add_process(sid, ProcessInfo(pid=12, role="engine_core", ppid=11, name="VLLM::EngineCore", started_at=1001.0))
    st.add_process(sid, ProcessInfo(pid=13, role="worker", rank=0, ppid=12, name="VLLM::Worker", started_at=1002.0))
    st.add_state(sid, sample_state(), pid=12)
    st.add_findings(sid, sample_findings())
    return session


@pytest.fixture
def db(tmp_path) -> Path:
    return tmp_path / "diag.db"


def _digest(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


# ------------------------------------------------------------------------------ round trips


def _recorded_by(state: EngineState, pid: int) -> EngineState:
    """``state`` as the store returns it after ``add_state(..., pid=pid)``: every row names its writer."""
    for rows in (state.layer_specs, state.kv_cache_groups, state.block_tables, state.builder_buffers,
                 state.steps, state.errors):
        for row in rows:
            row.pid = pid if row.pid is None else row.pid
    return state


def test_rows_keep_the_pid_of_the_process_that_recorded_them(db):
    """show --json must say which process wrote each row (issue: every row says which process and rank)."""
    with Store.open(db, create=True) as st:
        sid = st.new_session("engine")
        st.add_rows("batch_steps", sid, 12, [BatchStep(step_index=0), BatchStep(step_index=1, pid=13)])
    with Store.open(db) as st:
        steps = st.load(sid).to_json()["state"]["steps"]
    assert [s["pid"] for s in steps] == [12, 13]


def test_round_trip_every_model_type(db):
    with Store.open(db, create=True) as st:
        session = _write_session(st)
    with Store.open(db) as st:
        record = st.load(session.id)
    got = record.to_json()

    assert got["session"] == to_jsonable(session)
    assert got["processes"] == [
        to_jsonable(ProcessInfo(pid=11, role="main", host="box", started_at=1000.0)),
        to_jsonable(ProcessInfo(pid=12, role="engine_core", ppid=11, name="VLLM::EngineCore", started_at=1001.0)),
        to_jsonable(ProcessInfo(pid=13, role="worker", rank=0, ppid=12, name="VLLM::Worker", started_at=1002.0)),
    ]
    assert got["state"] == to_jsonable(_recorded_by(sample_state(), 12))
    assert got["findings"] == to_jsonable(sample_findings())
    # model objects come back as model objects, not dicts
    f = record.findings[0]
    assert isinstance(f.comparisons[0], Comparison) and isinstance(f.evidence[0], Evidence)
    assert isinstance(f.suggestions[0].changes[0], Change) and f.suggestions[0].verified is True
    assert record.state.layer_specs[2].is_draft is True and record.state.layer_specs[0].is_mamba
    assert record.state.specs("unified") == [_recorded_by(sample_state(), 12).layer_specs[2]]
    assert json.loads(json.dumps(got)) == got  # the --json document is plain JSON


def test_source_follows_session_kind(db):
    with Store.open(db, create=True) as st:
        for kind, sid in (("engine", "s-engine"), ("check", "s-check"), ("log", "s-log")):
            st.new_session(kind, id=sid, started_at=1.0)
        assert [st.load(s).state.source for s in ("s-engine", "s-check", "s-log")] == ["recorded", "predicted", "log"]


def test_add_rows_appends_each_table(db):
    state = sample_state()
    with Store.open(db, create=True) as st:
        sid = st.new_session("engine")
        st.add_rows("layer_specs", sid, 7, state.layer_specs)
        st.add_rows("kv_cache_groups", sid, 7, state.kv_cache_groups)
        st.add_rows("block_tables", sid, 7, state.block_tables)
        st.add_rows("builder_buffers", sid, 7, state.builder_buffers)
        st.add_rows("batch_steps", sid, 7, list(reversed(state.steps)))  # loaded in step order
        st.add_rows("errors", sid, 7, state.errors)
        st.add_rows("errors", sid, 7, [])  # nothing to add is not an error
        st.set_items("engine_config", sid, state.config, pid=7)
        st.set_items("environment", sid, {"A": 1}, pid=0)
        st.set_items("environment", sid, {"A": 2, "B": None}, pid=7)  # pid 0 wins for a shared key
        got = st.load(sid).state
    state = _recorded_by(state, 7)
    assert got.layer_specs == state.layer_specs
    assert got.kv_cache_groups == state.kv_cache_groups
    assert got.block_tables == state.block_tables
    assert got.builder_buffers == state.builder_buffers
    assert got.steps == state.steps
    assert got.errors == state.errors
    assert got.config == state.config
    assert got.environment == {"A": 1, "B": None}


def test_findings_replace_append_and_default_rank(db):
    with Store.open(db, create=True) as st:
        sid = st.new_session("check")
        f = Finding(rule="r", category="token_budget", title="t",
                    suggestions=[Suggestion(title="a", tradeoff="x"), Suggestion(title="b", tradeoff="y")])
        st.add_findings(sid, [f, f])
        st.add_findings(sid, [f])  # replace (default)
        assert len(st.load(sid).findings) == 1
        st.add_findings(sid, [Finding(rule="r2", category="other", title="t2")], replace=False)
        loaded = st.load(sid).findings
        assert [x.rule for x in loaded] == ["r", "r2"]
        assert [(s.title, s.rank) for s in loaded[0].suggestions] == [("a", 1), ("b", 2)]
        assert st.session_counts(sid)["findings"] == 2
        assert st.db.execute("select count(*) from suggestions").fetchone()[0] == 2


def test_sessions_resolve_and_update(db):
    with Store.open(db, create=True) as st:
        st.new_session("engine", id="20261126-010000-aaaaaa", started_at=10.0)
        st.new_session("log", id="20261126-020000-bbbbbb", started_at=20.0)
        st.new_session("check", id="20261126-020000-bbbccc", started_at=30.0)
        assert [s.id for s in st.sessions()] == ["20261126-010000-aaaaaa", "20261126-020000-bbbbbb",
                                                 "20261126-020000-bbbccc"]
        assert st.resolve_session(None) == st.resolve_session("latest") == "20261126-020000-bbbccc"
        assert st.resolve_session("20261126-01") == "20261126-010000-aaaaaa"
        with pytest.raises(SessionNotFound, match="ambiguous"):
            st.resolve_session("20261126-020000-bbb")
        with pytest.raises(SessionNotFound, match="no session 'nope'"):
            st.resolve_session("nope")
        st.update_session("20261126-010000-aaaaaa", status="ok", ended_at=11.0, label=None)
        s = st.load("20261126-010000-aaaaaa").session
        assert (s.status, s.ended_at, s.kind) == ("ok", 11.0, "engine")
        # ensure_session never overwrites what a sibling process already wrote
        st.ensure_session(SessionInfo(id="20261126-010000-aaaaaa", kind="log", status="running"))
        assert st.load("20261126-010000-aaaaaa").session.status == "ok"
        counts = st.session_counts("20261126-010000-aaaaaa")
        assert counts == {k: 0 for k in ("layer_specs", "kv_cache_groups", "block_tables", "batch_steps", "errors",
                                         "findings")}


def test_empty_database_has_no_latest(db):
    Store.open(db, create=True).close()
    with Store.open(db) as st:
        assert st.sessions() == []
        with pytest.raises(SessionNotFound, match="holds no sessions"):
            st.load()


def test_new_session_ids_are_unique_and_sortable():
    ids = [new_session_id() for _ in range(200)]
    assert len(set(ids)) == 200
    assert all(len(i) == len("20261126-021530-3f9a2c") and i[8] == "-" and i[15] == "-" for i in ids)


# ------------------------------------------------------------------------------ schema and migrations


def test_schema_version_and_tables(db):
    with Store.open(db, create=True) as st:
        assert st.schema_version == schema.SCHEMA_VERSION >= 1
        names = [r[0] for r in st.db.execute(
            "select name from _sqlite_migrations where migration_set = ? order by id", [schema.MIGRATION_SET])]
        assert names == [m.name for m in schema.migrations._migrations]
        assert st.db.execute("pragma journal_mode").fetchone()[0] == "wal"
        tables = set(st.db.table_names())
    assert {"sessions", "processes", "environment", "engine_config", "layer_specs", "kv_cache_groups",
            "block_tables", "builder_buffers", "batch_steps", "errors", "findings", "suggestions"} <= tables
    for _ in range(2):  # reopening for writing applies nothing twice
        Store.open(db, create=True).close()
    with Store.open(db) as st:
        assert st.db.execute("select count(*) from _sqlite_migrations").fetchone()[0] == schema.SCHEMA_VERSION


def test_newer_schema_is_refused(db):
    with Store.open(db, create=True) as st:
        st.db.execute("insert into _sqlite_migrations (migration_set, name, applied_at) values (?, ?, ?)",
                      [schema.MIGRATION_SET, "m999_from_the_future", "2030"])
    for create in (False, True):
        with pytest.raises(DiagError, match="newer vllm-diag") as info:
            Store.open(db, create=create)
        assert "\n" not in str(info.value)


@pytest.fixture
def extra_migration(monkeypatch):
    """Pretend this vllm-diag has one more migration than the one that wrote the file."""

    def m999_add_note(db):
        db["sessions"].add_column("note_h1", str)

    count = len(schema.migrations._migrations)
    yield lambda: (schema.migrations()(m999_add_note),
                   monkeypatch.setattr(store_mod, "SCHEMA_VERSION", schema.SCHEMA_VERSION + 1))
    del schema.migrations._migrations[count:]


def test_older_schema_migrates_on_write_open(db, extra_migration):
    with Store.open(db, create=True) as st:
        _write_session(st)
    extra_migration()
    before = _digest(db)
    with Store.open(db) as st:  # an older schema opened read-only is read as it is, unchanged
        assert st.applied_schema == schema.SCHEMA_VERSION and st.load().findings[0].rule == "kv_page_size_unify"
    assert _digest(db) == before
    with Store.open(db, create=True) as st:
        assert st.schema_version == schema.SCHEMA_VERSION + 1
        assert "note_h1" in st.db["sessions"].columns_dict
    with Store.open(db) as st:  # old data intact, now readable
        assert st.load().findings[0].rule == "kv_page_size_unify"


# ------------------------------------------------------------------------------ read-only


def test_read_only_open_never_modifies_the_file(db):
    with Store.open(db, create=True) as st:
        _write_session(st)
    before = _digest(db)
    time.sleep(0.01)
    with Store.open(db) as st:
        assert st.readonly
        st.sessions()
        st.load()
        st.session_counts(st.resolve_session(None))
        for write in (lambda: st.new_session("engine"), lambda: st.add_findings("x", []),
                      lambda: st.add_rows("errors", "x", 0, [ErrorRecord("E", "m")]),
                      lambda: st.update_session("x", status="ok")):
            with pytest.raises(DiagError, match="opened read-only"):
                write()
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            st.db.execute("insert into sessions (id, kind) values ('y', 'log')")
    assert _digest(db) == before


def test_reader_sees_committed_rows_while_a_writer_is_open(db):
    writer = Store.open(db, create=True)
    try:
        writer.new_session("engine", id="s1", started_at=1.0)
        with Store.open(db) as reader:
            assert [s.id for s in reader.sessions()] == ["s1"]
        writer.add_rows("errors", "s1", 0, [ErrorRecord("RuntimeError", "boom")])
        with Store.open(db) as reader:
            assert reader.load("s1").state.errors[0].message == "boom"
    finally:
        writer.close()


# ------------------------------------------------------------------------------ wrong files


def _other_app_db(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("create table users (id integer primary key, name text)")
    conn.execute("insert into users (name) values ('alice')")
    conn.commit()
    conn.close()
    return path


WRONG_FILES = {
    "other_app_sqlite": (_other_app_db, NotADiagDatabase, "not a vllm-diag database"),
    "text_file": (lambda p: p.write_text("session,id\n1,2\n") and p, NotADiagDatabase, "not an SQLite file"),
    "binary_file": (lambda p: p.write_bytes(bytes(range(256)) * 64) and p, NotADiagDatabase, "not an SQLite file"),
    "png_file": (lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 100) and p, NotADiagDatabase, "not an SQLite"),
    "directory": (lambda p: p.mkdir() or p, DiagError, "is a directory"),
    "missing_file": (lambda p: p, DiagError, "no such file"),
    "empty_file": (lambda p: p.write_bytes(b"") == 0 and p, NotADiagDatabase, "not an SQLite file"),
    "sqlite_magic_then_garbage": (lambda p: p.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200) and p,
                                  NotADiagDatabase, "not a vllm-diag database"),
}


@pytest.mark.parametrize("kind", sorted(WRONG_FILES))
def test_wrong_file_read_only(tmp_path, kind):
    make, exc_type, text = WRONG_FILES[kind]
    path = make(tmp_path / "x.db")
    before = sorted(os.listdir(tmp_path)), (_digest(path) if path.is_file() else None)
    with pytest.raises(exc_type, match=text) as info:
        Store.open(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    assert (sorted(os.listdir(tmp_path)), _digest(path) if path.is_file() else None) == before


@pytest.mark.parametrize("kind", sorted(set(WRONG_FILES) - {"missing_file", "empty_file"}))
def test_wrong_file_is_not_taken_over_for_writing(tmp_path, kind):
    make, exc_type, _ = WRONG_FILES[kind]
    path = make(tmp_path / "x.db")
    before = _digest(path) if path.is_file() else None
    with pytest.raises(exc_type) as info:
        Store.open(path, create=True)
    assert "\n" not in str(info.value)
    assert (_digest(path) if path.is_file() else None) == before
    if kind == "other_app_sqlite":
        conn = sqlite3.connect(path)
        assert [r[0] for r in conn.execute("select name from sqlite_master where type='table'")] == ["users"]
        assert conn.execute("pragma journal_mode").fetchone()[0] == "delete"


def test_create_initialises_missing_and_empty_files(tmp_path):
    for path in (tmp_path / "new.db", tmp_path / "empty.db"):
        if path.name == "empty.db":
            path.write_bytes(b"")  # e.g. made by mkstemp before the engine started
        with Store.open(path, create=True) as st:
            st.new_session("engine", id="s")
        with Store.open(path) as st:
            assert [s.id for s in st.sessions()] == ["s"]


def test_unopenable_path_is_one_line_error(tmp_path):
    with pytest.raises(DiagError, match="cannot open for writing") as info:
        Store.open(tmp_path / "no" / "such" / "dir" / "x.db", create=True)
    assert "\n" not in str(info.value)


# ------------------------------------------------------------------------------ concurrency


WRITER = textwrap.dedent(
    """
    import os, sys, time
    from vllm_diag.model import BatchStep, EngineState, ErrorRecord, LayerSpec, ProcessInfo, SessionInfo
    from vllm_diag.store import Store

    path, idx, n, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    while not os.path.exists(go):
        time.sleep(0.001)
    st = Store.open(path, create=True)
    st.ensure_session(SessionInfo(id="shared", kind="engine", started_at=1.0))
    st.add_process("shared", ProcessInfo(pid=os.getpid(), role="worker", rank=idx))
    for i in range(n):
        if i % 3 == 0:
            st.add_rows("batch_steps", "shared", os.getpid(), [BatchStep(step_index=i, num_reqs=idx)])
        elif i % 3 == 1:
            st.add_state("shared", EngineState(config={f"k{idx}.{i}": i},
                         layer_specs=[LayerSpec(layer_name=f"w{idx}.{i}", spec_type="MambaSpec")]), pid=os.getpid())
        else:
            own = st.new_session("engine", id=f"own-{idx}-{i}", started_at=float(i))
            st.add_rows("errors", own, os.getpid(), [ErrorRecord("E", f"w{idx}.{i}")])
    st.close()
    print("done", idx)
    """
)


@pytest.mark.timeout(180)
def test_concurrent_writers_in_real_processes(tmp_path):
    procs, per_proc = 6, 200
    db = tmp_path / "shared.db"  # fresh: the migrations race too
    go = tmp_path / "go"
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    children = [
        subprocess.Popen([sys.executable, str(script), str(db), str(i), str(per_proc), str(go)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        for i in range(procs)
    ]
    time.sleep(1.5)  # let every interpreter start and wait on the go file
    go.write_text("go")
    outputs = [c.communicate(timeout=170)[0] for c in children]
    assert [c.returncode for c in children] == [0] * procs, "\n".join(outputs)

    with Store.open(db) as st:
        assert st.schema_version == schema.SCHEMA_VERSION
        assert st.db.execute("select count(*) from _sqlite_migrations").fetchone()[0] == schema.SCHEMA_VERSION
        rec = st.load("shared")
        assert sorted(p.rank for p in rec.processes) == list(range(procs))
        expect_steps = sorted((i, idx) for idx in range(procs) for i in range(per_proc) if i % 3 == 0)
        assert sorted((s.step_index, s.num_reqs) for s in rec.state.steps) == expect_steps
        expect_specs = {f"w{idx}.{i}" for idx in range(procs) for i in range(per_proc) if i % 3 == 1}
        assert {s.layer_name for s in rec.state.layer_specs} == expect_specs
        assert len(rec.state.layer_specs) == len(expect_specs)
        assert rec.state.config == {f"k{idx}.{i}": i for idx in range(procs) for i in range(per_proc) if i % 3 == 1}
        own = {s.id for s in st.sessions()} - {"shared"}
        assert own == {f"own-{idx}-{i}" for idx in range(procs) for i in range(per_proc) if i % 3 == 2}
        messages = [r[0] for r in st.db.execute("select message from errors")]
        assert sorted(messages) == sorted(f"w{idx}.{i}" for idx in range(procs) for i in range(per_proc) if i % 3 == 2)


def test_read_only_open_of_paths_with_uri_characters(tmp_path):
    folder = tmp_path / "runs #3?x=1 %41"
    folder.mkdir()
    db = folder / "diag.db"
    with Store.open(db, create=True) as st:
        st.new_session("engine", id="s")
    before = sorted(p.name for p in tmp_path.iterdir())
    with Store.open(db) as st:
        assert [s.id for s in st.sessions()] == ["s"]
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no stray "runs " file next to it


@pytest.fixture
def read_only_mount(tmp_path):
    """A tmpfs we can fill and then remount read-only (needs root and mount; else skipped)."""
    mnt = tmp_path / "ro"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)],
                                           capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_read_only_media(read_only_mount):
    """A WAL database on read-only media (a mounted backup, a read-only volume) is still readable."""
    db = read_only_mount / "diag.db"
    with Store.open(db, create=True) as st:
        _write_session(st)
    assert subprocess.run(["mount", "-o", "remount,ro", str(read_only_mount)]).returncode == 0
    with Store.open(db) as st:
        assert st.load().findings[0].rule == "kv_page_size_unify"
    with pytest.raises(DiagError, match="cannot open for writing|readonly|read-only") as info:
        Store.open(db, create=True)
    assert "\n" not in str(info.value)


READER = textwrap.dedent(
    """
    import os, sys, time
    from vllm_diag.store import Store
    from vllm_diag.errors import DiagError

    path, stop = sys.argv[1], sys.argv[2]
    while True:  # wait until the first writer has created and migrated the file
        try:
            Store.open(path).close()
            break
        except DiagError:
            time.sleep(0.005)
    last, reads = -1, 0
    while not os.path.exists(stop):
        with Store.open(path) as st:
            sids = [s.id for s in st.sessions()]
            n = st.db.execute("select count(*) from layer_specs").fetchone()[0]
            if "shared" in sids:
                st.load("shared")
        assert n >= last, (n, last)
        last, reads = n, reads + 1
    print("reads", reads, "last", last)
    """
)


@pytest.mark.timeout(180)
def test_readers_never_fail_while_writers_write(tmp_path):
    db, go, stop = tmp_path / "live.db", tmp_path / "go", tmp_path / "stop"
    (tmp_path / "writer.py").write_text(WRITER)
    (tmp_path / "reader.py").write_text(READER)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    writers = [subprocess.Popen([sys.executable, str(tmp_path / "writer.py"), str(db), str(i), "120", str(go)],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
               for i in range(3)]
    readers = [subprocess.Popen([sys.executable, str(tmp_path / "reader.py"), str(db), str(stop)],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
               for _ in range(2)]
    time.sleep(1.5)
    go.write_text("go")
    w_out = [w.communicate(timeout=170)[0] for w in writers]
    stop.write_text("stop")
    r_out = [r.communicate(timeout=60)[0] for r in readers]
    assert [w.returncode for w in writers] == [0, 0, 0], "\n".join(w_out)
    assert [r.returncode for r in readers] == [0, 0], "\n".join(r_out)
    for out in r_out:
        reads = int(out.split("reads", 1)[1].split()[0])
        assert reads >= 1, out
    with Store.open(db) as st:
        assert st.db.execute("select count(*) from layer_specs").fetchone()[0] == 3 * 40


# ------------------------------------------------------------------------------ property-based round trip

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as hs  # noqa: E402

_int = hs.integers(min_value=-(2**63), max_value=2**63 - 1)
_opt_int = hs.none() | _int
_text = hs.text(max_size=40)
_opt_text = hs.none() | _text
_json = hs.recursive(hs.none() | hs.booleans() | _int | hs.floats(allow_nan=False) | _text,
                     lambda inner: hs.lists(inner, max_size=4) | hs.dictionaries(_text, inner, max_size=4),
                     max_leaves=12)

_layer_specs = hs.builds(
    LayerSpec, layer_name=_text, spec_type=_text, block_size=_opt_int, page_size_bytes=_opt_int,
    page_size_padded=_opt_int, num_kv_heads=_opt_int, head_size=_opt_int, head_size_v=_opt_int, dtype=_opt_text,
    sliding_window=_opt_int, mamba_type=_opt_text, mamba_shapes=hs.none() | hs.lists(hs.lists(_int, max_size=3), max_size=3),
    mamba_dtypes=hs.none() | hs.lists(_text, max_size=3), mamba_cache_mode=_opt_text,
    num_speculative_blocks=_opt_int, is_draft=hs.booleans(), stage=hs.sampled_from(["layer", "unified"]),
    extra=hs.dictionaries(_text, _json, max_size=3))
_steps = hs.builds(
    BatchStep, step_index=_int, num_reqs=_int, num_decodes=_int, num_spec_decodes=_int, num_prefills=_int,
    num_decode_tokens=_int, num_spec_decode_tokens=_int, num_prefill_tokens=_int, num_tokens=_int,
    spec_tokens_per_req=hs.none() | hs.lists(_int, max_size=5), builder=_opt_text, group_index=_opt_int,
    at=hs.none() | hs.floats(allow_nan=False, allow_infinity=False))
_errors = hs.builds(ErrorRecord, exc_type=_text, message=_text, phase=_text, traceback=_opt_text,
                    notes=hs.lists(_text, max_size=3), numbers=hs.dictionaries(_text, _json, max_size=3),
                    location=_opt_text, at=hs.just(None))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs=hs.lists(_layer_specs, max_size=4), steps=hs.lists(_steps, max_size=4),
       errors=hs.lists(_errors, max_size=3), config=hs.dictionaries(_text, _json, max_size=4))
def test_round_trip_property(tmp_path, specs, steps, errors, config):
    path = tmp_path / f"p{len(list(tmp_path.iterdir()))}.db"
    with Store.open(path, create=True) as st:
        sid = st.new_session("engine")
        st.add_state(sid, EngineState(config=config, layer_specs=specs, steps=steps, errors=errors), pid=3)
    with Store.open(path) as st:
        got = st.load(sid).state
    specs, steps, errors = (_recorded_by(EngineState(layer_specs=specs, steps=steps, errors=errors), 3).__dict__[k]
                            for k in ("layer_specs", "steps", "errors"))
    assert got.layer_specs == specs
    assert sorted(to_jsonable(got.steps), key=json.dumps) == sorted(to_jsonable(steps), key=json.dumps)
    assert got.errors == errors
    assert got.config == config

"""The installed ``vllm-diag`` console script: --help, --version, ``sessions``, ``show``, and
one-line errors (exit code != 0, exactly one stderr line, no traceback) for bad input."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import vllm_diag
from vllm_diag.store import Store
from tests.test_store import _write_session

BIN = Path(sys.executable).parent / "vllm-diag"
SID = "20261126-000000-aaaaaa"


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    assert BIN.is_file(), f"console script not installed at {BIN} (pip install -e .)"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=60, cwd=cwd, env=env)


def assert_one_line_error(r: subprocess.CompletedProcess, *fragments: str) -> str:
    assert r.returncode != 0, r
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1, f"expected exactly one stderr line, got {len(lines)}:\n{r.stderr}"
    assert lines[0].startswith("vllm-diag: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert r.stdout == ""
    return lines[0]


@pytest.fixture(scope="module")
def populated_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "diag.db"
    with Store.open(path, create=True) as st:
        _write_session(st, SID)
        st.new_session("check", id="20261126-000100-bbbbbb", started_at=2000.0, model="/models/llama",
                       vllm_version="0.20.2")
    return path


@pytest.fixture(scope="module")
def empty_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "empty.db"
    Store.open(path, create=True).close()
    return path


# ------------------------------------------------------------------------------ happy paths


def test_help_lists_the_commands():
    r = cli("--help")
    assert r.returncode == 0 and r.stderr == ""
    assert r.stdout.startswith("usage: vllm-diag")
    for command in ("sessions", "show"):
        assert command in r.stdout
    assert cli().stdout == r.stdout  # no command: the same help, exit 0
    sub = cli("show", "--help")
    assert sub.returncode == 0 and "SESSION" in sub.stdout and "--json" in sub.stdout


def test_version():
    r = cli("--version")
    assert (r.returncode, r.stdout.strip(), r.stderr) == (0, f"vllm-diag {vllm_diag.__version__}", "")
    m = subprocess.run([sys.executable, "-m", "vllm_diag", "--version"], capture_output=True, text=True, timeout=60)
    assert m.stdout == r.stdout


def test_sessions_text(populated_db):
    r = cli("sessions", populated_db)
    assert r.returncode == 0 and r.stderr == ""
    lines = r.stdout.splitlines()
    assert len(lines) == 2
    first, second = lines
    assert first.startswith(SID) and " engine " in first and " failed " in first and "vllm 0.32.0" in first
    assert "findings=2 errors=1 steps=2" in first
    assert second.startswith("20261126-000100-bbbbbb") and " check " in second and "findings=0" in second


def test_sessions_json(populated_db):
    r = cli("sessions", populated_db, "--json")
    assert r.returncode == 0
    data = json.loads(r.stdout)
    assert [s["id"] for s in data] == [SID, "20261126-000100-bbbbbb"]
    assert data[0]["counts"] == {"layer_specs": 3, "kv_cache_groups": 2, "block_tables": 2, "batch_steps": 2,
                                 "errors": 1, "findings": 2}
    assert data[0]["architecture"] == "Qwen3NextForCausalLM" and data[1]["kind"] == "check"


def test_sessions_on_empty_db(empty_db):
    r = cli("sessions", empty_db)
    assert (r.returncode, r.stdout.strip(), r.stderr) == (0, f"{empty_db}: no sessions", "")
    assert json.loads(cli("sessions", empty_db, "--json").stdout) == []


def test_show_json_is_the_session_record(populated_db):
    r = cli("show", populated_db, SID, "--json")
    assert r.returncode == 0 and r.stderr == ""
    doc = json.loads(r.stdout)
    with Store.open(populated_db) as st:
        record = st.load(SID)
    from vllm_diag.render.json import encode

    assert doc == json.loads(json.dumps(encode(record), default=str))
    assert {k: doc[k] for k in ("session", "processes", "state")} == json.loads(json.dumps(
        {k: v for k, v in record.to_json().items() if k in ("session", "processes", "state")}))
    # the documented shape (README: "JSON shape of `vllm-diag show --json`")
    assert doc["schema"] == 2
    assert {"session", "processes", "state", "findings", "target", "notes", "log", "predicted", "rule_failures",
            "views"} <= set(doc)
    assert [f["number"] for f in doc["findings"]] == [1, 2] and doc["findings"][0]["suggestions"][0]["number"] == 1
    assert list(doc["state"]) == ["source", "vllm_version", "config", "environment", "layer_specs",
                                  "kv_cache_groups", "block_tables", "builder_buffers", "steps", "errors"]
    assert doc["session"]["id"] == SID and doc["state"]["source"] == "recorded"
    assert [p["role"] for p in doc["processes"]] == ["main", "engine_core", "worker"]
    assert doc["findings"][0]["suggestions"][0]["llm_kwargs"]["speculative_config"]["num_speculative_tokens"] == 3
    assert doc["findings"][0]["comparisons"][0] == {"name": "mamba page", "expected": 655360, "actual": 163840,
                                                    "unit": "bytes"}


def test_show_default_is_newest_and_prefix_works(populated_db):
    newest = json.loads(cli("show", populated_db, "--json").stdout)
    assert newest["session"]["id"] == "20261126-000100-bbbbbb" and newest["state"]["source"] == "predicted"
    by_prefix = json.loads(cli("show", populated_db, "20261126-0000", "--json").stdout)
    assert by_prefix["session"]["id"] == SID


def test_show_text(populated_db):
    r = cli("show", populated_db, SID)
    assert r.returncode == 0 and r.stderr == ""
    out = r.stdout
    assert out.startswith(f"Session {SID}  (engine, failed)")
    for text in ("model     /models/qwen3_next (Qwen3NextForCausalLM)", "VLLM::EngineCore", "Page-size map (recorded",
                 "model.layers.0.linear_attn", "State index (from recorded", "block table 4 x 4",
                 "cdiv(512, 512) + 3", "spec_state_indices", "Batch timeline (2 rows",
                 "Error (init", "AssertionError", "kv_cache_utils.py:1042", "[ERROR] Mamba page not padded",
                 "suggestion 1 (verified)", "+ --speculative-config.model /m/llama_draft", "[WARNING] Out of memory"):
        assert text in out, text


def test_show_survives_a_closed_pipe(tmp_path):
    """`vllm-diag show DB | head -1` on output far larger than a pipe buffer: no traceback."""
    from vllm_diag.model import LayerSpec

    path = tmp_path / "big.db"
    with Store.open(path, create=True) as st:
        sid = st.new_session("engine")
        st.add_rows("layer_specs", sid, 0, [LayerSpec(layer_name=f"model.layers.{i}.self_attn.attn",
                                                      spec_type="FullAttentionSpec", block_size=16) for i in range(3000)])
    for json_flag in ([], ["--json"]):
        proc = subprocess.Popen([str(BIN), "show", str(path), *json_flag], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        assert proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read()
        assert proc.wait(timeout=60) in (0, 1, -13, 141), err
        assert "Traceback" not in err and "BrokenPipeError" not in err, err


# ------------------------------------------------------------------------------ one-line errors


def _text_file(tmp: Path) -> Path:
    p = tmp / "notes.txt"
    p.write_text("this is not a database\n" * 50)
    return p


def _binary_file(tmp: Path) -> Path:
    p = tmp / "blob.bin"
    p.write_bytes(os.urandom(4096))
    return p


def _other_sqlite(tmp: Path) -> Path:
    p = tmp / "other.sqlite"
    conn = sqlite3.connect(p)
    conn.execute("create table users (id integer primary key, name text)")
    conn.commit()
    conn.close()
    return p


def _empty_file(tmp: Path) -> Path:
    p = tmp / "empty.db"
    p.write_bytes(b"")
    return p


BAD_FILES = {
    "missing": (lambda tmp: tmp / "nope.db", "no such file"),
    "directory": (lambda tmp: tmp, "is a directory"),
    "text": (_text_file, "not a vllm-diag database"),
    "binary": (_binary_file, "not a vllm-diag database"),
    "other_sqlite": (_other_sqlite, "not a vllm-diag database"),
    "empty": (_empty_file, "not a vllm-diag database"),
}


@pytest.mark.parametrize("command", ["sessions", "show"])
@pytest.mark.parametrize("kind", sorted(BAD_FILES))
@pytest.mark.parametrize("json_flag", [False, True])
def test_bad_database_file(tmp_path, command, kind, json_flag):
    make, fragment = BAD_FILES[kind]
    path = make(tmp_path)
    before = path.read_bytes() if path.is_file() else None
    r = cli(command, path, *(["--json"] if json_flag else []))
    assert_one_line_error(r, fragment, str(path))
    assert r.returncode == 2
    assert (path.read_bytes() if path.is_file() else None) == before


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["sessions"], "the following arguments are required: DB"),
        (["show"], "the following arguments are required: DB"),
        (["sessions", "a.db", "--colour"], "unrecognized arguments: --colour"),
        (["show", "a.db", "s1", "s2"], "unrecognized arguments: s2"),
    ],
)
def test_bad_arguments(args, fragment):
    assert_one_line_error(cli(*args), fragment)


def test_unknown_and_ambiguous_session(populated_db, empty_db):
    assert_one_line_error(cli("show", populated_db, "zzz"), "no session 'zzz'")
    assert_one_line_error(cli("show", populated_db, "2026112", "--json"), "ambiguous")
    assert_one_line_error(cli("show", empty_db), "holds no sessions")


@pytest.mark.parametrize(
    "update, fragment",
    [
        ("update findings set category = 'from_a_newer_version'", "unknown finding category 'from_a_newer_version'"),
        ("update findings set severity = 'fatal'", "unknown severity 'fatal'"),
        ("update findings set numbers = '{not json'", "cannot read"),
        ("update layer_specs set mamba_shapes = '[[6, 512'", "cannot read"),
    ],
)
def test_unreadable_rows_are_one_line_errors(tmp_path, update, fragment):
    """A row this version cannot read (newer vocabulary, damaged JSON): one line, not a traceback."""
    path = tmp_path / "odd.db"
    with Store.open(path, create=True) as st:
        _write_session(st, SID)
    conn = sqlite3.connect(path)
    conn.execute(update)
    conn.commit()
    conn.close()
    for json_flag in ([], ["--json"]):
        assert_one_line_error(cli("show", path, *json_flag), fragment, SID)
    assert cli("sessions", path).returncode == 0  # the listing still works


def test_type_damaged_row_is_a_one_line_internal_error(tmp_path):
    """A value of the wrong type (text in a time column) reaches code that does arithmetic on it:
    the CLI still prints one line (exit 3, 'internal error'), and VLLM_DIAG_DEBUG=1 shows the traceback."""
    path = tmp_path / "typed.db"
    with Store.open(path, create=True) as st:
        _write_session(st, SID)
    conn = sqlite3.connect(path)
    conn.execute("update sessions set started_at = 'yesterday'")
    conn.commit()
    conn.close()
    r = cli("sessions", path)
    assert r.returncode == 3
    assert_one_line_error(r, "internal error", "VLLM_DIAG_DEBUG=1")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    debug = subprocess.run([str(BIN), "sessions", str(path)], capture_output=True, text=True, timeout=60,
                           env={**env, "VLLM_DIAG_DEBUG": "1"})
    assert "Traceback" in debug.stderr

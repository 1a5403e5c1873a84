"""`vllm-diag analyze` as users run it: text, --json (schema), --markdown, --db, stdin/.gz/folders,
bad input (one clear line, non-zero exit, never a traceback), fuzzing, flat memory, a fresh engine log."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vllm_diag.cli import main
from vllm_diag.model import CATEGORIES
from vllm_diag.postmortem.analyze import analyze_facts
from vllm_diag.postmortem.pylit import LiteralError, parse_literal
from vllm_diag.postmortem.reader import InputError, facts_from_bytes, read_facts
from vllm_diag.store import Store

LOGS = Path(__file__).parent / "fixtures" / "logs"
SEED4 = LOGS / "seeds" / "004_56fd74f28e856ca0.log"
REPO = Path(__file__).resolve().parents[1]


def run_cli(capsys, *argv):
    rc = main(["analyze", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_text_output(capsys):
    rc, out, err = run_cli(capsys, str(SEED4))
    assert rc == 0 and not err
    assert "vLLM 0.19.0" in out and "TP=4" in out
    assert "The size of tensor a (6) must match the size of tensor b (7)" in out
    assert "(state_index, rule mamba_state_indices)" in out
    assert "expected 7, actual 6" in out


def test_json_schema(capsys):
    rc, out, _ = run_cli(capsys, "--json", str(SEED4))
    doc = json.loads(out)
    for key in ("vllm_version", "command", "model", "gpu", "findings", "root_error", "args", "numbers", "startup"):
        assert key in doc
    assert doc["vllm_version"] == "0.19.0" and doc["model"] == "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"
    assert doc["gpu"]["names"] == ["B200"] and doc["gpu"]["count"] == 4
    assert doc["root_error"]["type"] == "RuntimeError"
    f0 = doc["findings"][0]
    for key in ("category", "rule", "title", "severity", "numbers", "evidence", "suggestions"):
        assert key in f0
    assert f0["category"] in CATEGORIES
    assert all(isinstance(e["line"], int) and e["text"] for e in f0["evidence"] if e["source"] != "preflight")
    assert f0["suggestions"] and {"title", "tradeoff", "diff", "verified"} <= set(f0["suggestions"][0])


def test_markdown(capsys):
    rc, out, _ = run_cli(capsys, "--markdown", str(SEED4))
    assert rc == 0
    for section in ("### Your current environment", "### Command", "### 🐛 Describe the bug", "### Diagnosis (vllm-diag)"):
        assert section in out
    assert "| vLLM version | 0.19.0 |" in out
    assert "| value | expected | actual |" in out
    assert "```bash\nvllm serve nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4" in out


def test_db_session(tmp_path, capsys):
    db = tmp_path / "diag.db"
    rc, out, _ = run_cli(capsys, "--db", str(db), str(SEED4))
    assert rc == 0 and "stored as session" in out
    with Store.open(db) as st:
        rec = st.load()
    assert rec.session.kind == "log" and rec.session.status == "failed"
    assert rec.session.vllm_version == "0.19.0"
    assert rec.state.source == "log"
    assert rec.state.config["tensor_parallel_size"] == 4
    assert rec.state.errors[0].exc_type == "RuntimeError" and rec.state.errors[0].numbers["tensor_b_size"] == 7
    assert rec.findings[0].category == "state_index" and rec.findings[0].suggestions


def test_stdin_gzip(tmp_path):
    data = gzip.compress(SEED4.read_bytes())
    r = subprocess.run([sys.executable, "-m", "vllm_diag", "analyze", "--json", "-"], input=data, capture_output=True,
                       cwd=REPO, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["numbers"]["tensor_a_size"] == 6


def test_folder_of_logs(tmp_path):
    (tmp_path / "a.log").write_text("(APIServer pid=1) INFO 01-01 00:00:00 [a.py:1] vLLM API server version 0.19.0\n")
    (tmp_path / "b.log.gz").write_bytes(gzip.compress(SEED4.read_bytes()))
    (tmp_path / "core.bin").write_bytes(b"\x7fELF\x00\x00\x00" * 100)
    facts, info = read_facts(str(tmp_path))
    assert [f["name"] for f in info["files"]] == ["a.log", "b.log.gz"] and info["skipped"] == ["core.bin"]
    an = analyze_facts(facts, files=info["files"], use_preflight=False)
    root_ev = [e for e in an.findings[0].evidence if e.text.startswith("RuntimeError")][0]
    assert root_ev.source == "b.log.gz" and root_ev.line == facts.root.log_line - 1


# ---------------------------------------------------------------- bad input
def _cli_subprocess(path):
    return subprocess.run([sys.executable, "-m", "vllm_diag", "analyze", str(path)], capture_output=True, text=True,
                          cwd=REPO, timeout=120)


@pytest.mark.parametrize("name,content,code", [
    ("binary.bin", b"\x00\x01\x02\xff" * 5000, 2),
    ("elf", b"\x7fELF\x02\x01\x01" + b"\x00" * 4000, 2),
    ("empty.log", b"", 2),
    ("bad.gz", b"\x1f\x8b\x08\x00garbage-not-gzip", 2),
    # random bytes (a core dump's or a compressed file's body): few NULs, invalid UTF-8 and control bytes
    ("random.bin", __import__("random").Random(7).randbytes(50_000), 2),
], ids=lambda v: v if isinstance(v, str) else "")
def test_bad_input_one_line(tmp_path, name, content, code):
    p = tmp_path / name
    p.write_bytes(content)
    r = _cli_subprocess(p)
    assert r.returncode == code
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("vllm-diag: ")


def test_missing_path_one_line(tmp_path):
    r = _cli_subprocess(tmp_path / "nope.log")
    assert r.returncode == 2 and "no such file" in r.stderr and "Traceback" not in r.stderr


def test_invalid_utf8_and_huge_line_give_a_result(tmp_path):
    p = tmp_path / "odd.log"
    with p.open("wb") as fh:
        fh.write(b"caf\xe9 \xff\xfe broken utf-8\n")
        fh.write(b"x" * (10 << 20) + b"\n")  # a 10 MB line
        fh.write(b"RuntimeError: The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1\n")
        fh.write(b"Traceback (most recent call last):\n  File \"a.py\", line 1, in f\n")  # truncated at the end
    r = _cli_subprocess(p)
    assert r.returncode == 0, r.stderr
    assert "tensor_a_size=3" in r.stdout


def test_truncated_gzip_keeps_what_came_out(tmp_path):
    blob = gzip.compress(SEED4.read_bytes() * 3)
    p = tmp_path / "cut.log.gz"
    p.write_bytes(blob[: len(blob) * 2 // 3])
    facts, _ = read_facts(str(p))
    assert facts.root is not None


# ---------------------------------------------------------------- fuzzing
_PIECES = [
    b"Traceback (most recent call last):\n", b'  File "/v/x.py", line 12, in f\n', b"    assert a == b\n",
    b"AssertionError\n", b"RuntimeError: Worker failed with error 'boom\n", b"(EngineCore pid=1) ERROR 01-01 00:00:00 [c.py:1] ",
    b"non-default args: {'a': [1, {'b': (2,", b"vllm serve m --speculative-config '{\"x\": ", b"\x1b[0;36m", b"^[[0m",
    b"2026-01-01T00:00:00Z ", b"\t2026-01-01 00:00:00\n", b"LLM(model='x', ", b"Prefix cache hit rate: 12.5%\n",
    b"The size of tensor a (1) must match the size of tensor b (", b"\xff\xfe\x00", b"\r\n", b"\n",
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.sampled_from(_PIECES), st.binary(max_size=40)), max_size=60))
def test_fuzz_never_crashes(parts):
    data = b"".join(parts)
    try:
        facts = facts_from_bytes(data)
    except InputError:
        return
    an = analyze_facts(facts, use_preflight=False)
    for f in an.findings:
        assert f.category in CATEGORIES


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="{}[]()'\",:<> =-_.abcTrueFalsNn0123456789\\", max_size=80))
def test_fuzz_literal_reader(text):
    try:
        parse_literal(text)
    except LiteralError:
        pass


# ---------------------------------------------------------------- memory stays flat
def _write_big(path: Path, mb: int) -> None:
    line = (b"(APIServer pid=1) INFO 11-26 02:01:22 [loggers.py:257] Engine 000: Avg prompt throughput: 1.5 tokens/s, "
            b"Running: 3 reqs, GPU KV cache usage: 1.2%, Prefix cache hit rate: 45.6%\n"
            b"(APIServer pid=1) INFO:     127.0.0.1:51234 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n" * 20)
    tail = SEED4.read_bytes()
    with path.open("wb") as fh:
        n = 0
        while n < mb << 20:
            fh.write(line)
            n += len(line)
        fh.write(tail)


def _peak(path: Path) -> int:
    tracemalloc.start()
    try:
        facts, _ = read_facts(str(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert facts.root is not None and facts.numbers["tensor_b_size"] == 7
    return peak


def test_memory_flat(tmp_path):
    small, big = tmp_path / "s.log", tmp_path / "b.log"
    _write_big(small, 40)
    _write_big(big, 160)
    p_small, p_big = _peak(small), _peak(big)
    assert p_big < 32 << 20, p_big  # a few chunks, whatever the size
    assert p_big < p_small * 1.5 + (2 << 20), (p_small, p_big)


# ---------------------------------------------------------------- a fresh log from a real engine
@pytest.mark.engine
@pytest.mark.timeout(300)
def test_fresh_engine_log(tmp_path, testbed_models):
    from tests.fixtures.logs.capture import capture

    log = capture("unknown_architecture", tmp_path)
    text = log.read_text()
    assert "FooBarForCausalLM" in text  # what the engine printed, not a fixture
    r = subprocess.run([sys.executable, "-m", "vllm_diag", "analyze", "--json", str(log)], capture_output=True, text=True,
                       cwd=REPO, timeout=120, env={**os.environ})
    doc = json.loads(r.stdout)
    assert doc["findings"][0]["rule"] == "other_unsupported_arch" and doc["findings"][0]["category"] == "other"
    assert doc["root_error"]["type"].endswith("ValidationError")


def test_large_file_edge_cases(tmp_path):
    """Chunked mode (> 2 MiB): a 12 MiB line without newline, a wall of ERROR lines, then a crash."""
    p = tmp_path / "edge.log"
    err = b"(APIServer pid=1) ERROR 01-01 00:00:00 [serving.py:1] Error in request: bad input\n"
    with p.open("wb") as fh:
        fh.write(b"(APIServer pid=1) INFO 01-01 00:00:00 [api_server.py:1] vLLM API server version 0.20.2\n")
        fh.write(b"y" * (12 << 20))  # no newline for 12 MiB
        fh.write(b"\n")
        fh.write(err * 100_000)  # ~8 MB of error records: dense anchor hits
        fh.write(SEED4.read_bytes())
    facts, _ = read_facts(str(p))
    assert facts.vllm_version == "0.20.2"
    assert facts.root is not None and facts.numbers["tensor_b_size"] == 7
    assert facts.total_lines == p.read_bytes().count(b"\n") + (0 if p.read_bytes().endswith(b"\n") else 1)


# ---------------------------------------------------------------- the chunked scanner agrees with a full parse
@pytest.fixture
def tiny_chunks(monkeypatch):
    import vllm_diag.postmortem.reader as r

    monkeypatch.setattr(r, "FULL_PARSE_BYTES", 2048)
    monkeypatch.setattr(r, "CHUNK", 1536)
    monkeypatch.setattr(r, "BACK_BYTES", 4096)
    monkeypatch.setattr(r, "HEAD_LINES", 3)
    return r


CHUNK_LOGS = sorted(LOGS.glob("real/*.log")) + sorted(LOGS.glob("negative/*.log")) + sorted(LOGS.glob("gpu/*.log"))
# logs whose exceptions are vLLM ERROR records (multi-process engines): found anywhere in a large log
MID_LOGS = [LOGS / "real" / "qwen3next_ngram_prefix_caching.log", LOGS / "negative" / "cuda_oom_at_load.log",
            LOGS / "gpu" / "gpu_nemotronh_prefix_caching_ngram.log",
            LOGS / "negative" / "nccl_watchdog_timeout.log"]
PAD = b"(APIServer pid=1) INFO 01-01 00:00:00 [x.py:1] padding line\n"


def _root_view(facts):
    r = facts.root
    return (r.exc_type, r.message, r.log_line, r.process, [(f.function, f.line, f.log_line) for f in r.frames]) if r else None


def _both(r, data):
    chunked = r.facts_from_bytes(data)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(r, "FULL_PARSE_BYTES", 1 << 30)
        full = r.facts_from_bytes(data)
    return chunked, full


@pytest.mark.parametrize("path", MID_LOGS, ids=lambda p: p.name)
def test_chunked_scan_finds_errors_mid_log(path, tiny_chunks):
    tiny_chunks.BACK_BYTES = 4096
    chunked, full = _both(tiny_chunks, PAD * 300 + path.read_bytes() + PAD * 300)
    assert chunked.root is not None
    assert _root_view(chunked) == _root_view(full)
    # numbers of the error itself; the arguments (startup) of a mid-log engine start are not read by design
    derived = {"num_speculative_tokens", "next_n"}
    assert {k: v for k, v in chunked.numbers.items() if k not in derived} == \
        {k: v for k, v in full.numbers.items() if k not in derived}
    assert chunked.total_lines == full.total_lines


@pytest.mark.parametrize("path", CHUNK_LOGS, ids=lambda p: p.name)
def test_chunked_scan_reads_the_end_in_full(path, tiny_chunks):
    """Any crash at the end of a large log (raw tracebacks of single-process engines included)."""
    tiny_chunks.BACK_BYTES = 64 << 10  # the always-parsed end (512 KiB in production) holds the crash
    chunked, full = _both(tiny_chunks, PAD * 2000 + path.read_bytes())
    assert _root_view(chunked) == _root_view(full)
    assert chunked.numbers == full.numbers and chunked.total_lines == full.total_lines


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(st.sampled_from(_PIECES), st.binary(max_size=300)), min_size=20, max_size=120))
def test_fuzz_chunked_never_crashes(tiny_chunks, parts):
    try:
        facts = tiny_chunks.facts_from_bytes(b"".join(parts) * 3)
    except InputError:
        return
    analyze_facts(facts, use_preflight=False)


def test_internal_error_is_one_line(monkeypatch, capsys):
    import vllm_diag.postmortem.analyze as pa

    def boom(*a, **k):
        raise ZeroDivisionError("simulated bug")

    monkeypatch.setattr(pa, "analyze_path", boom)
    monkeypatch.delenv("VLLM_DIAG_DEBUG", raising=False)
    rc = main(["analyze", str(SEED4)])
    err = capsys.readouterr().err
    assert rc == 3 and err.count("\n") == 1 and "internal error" in err and "ZeroDivisionError" in err


def test_log_cut_off_inside_a_traceback_says_so_and_exits_non_zero(tmp_path):
    # frames, then the paste ends: the failure itself is not in the log, so nothing is diagnosed -- say it,
    # keep the report (and the stored session), and exit non-zero with one line on stderr
    p = tmp_path / "cut.log"
    p.write_text("(EngineCore_DP0 pid=7) INFO 01-01 00:00:00 [core.py:1] starting\n"
                 "Traceback (most recent call last):\n"
                 '  File "/v/vllm/v1/worker/gpu_model_runner.py", line 3120, in execute_model\n'
                 "    output = self.model(\n"
                 '  File "/v/vllm/model_executor/models/qwen3_next.py", line 925, in _forward_core\n')
    db = tmp_path / "s.db"
    r = subprocess.run([sys.executable, "-m", "vllm_diag", "analyze", str(p), "--db", str(db)], capture_output=True,
                       text=True, cwd=REPO, timeout=120)
    assert r.returncode == 2, r.stderr
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in r.stderr and "qwen3_next.py:925" in err[0]
    assert "NOT MODELLED" in r.stdout and "ends inside a traceback" in r.stdout
    from vllm_diag import api

    assert any(n.startswith("not modelled: ") for n in api.load(db).notes)

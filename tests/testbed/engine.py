"""Run a snippet of Python that starts a real vLLM engine, in a fresh subprocess.

API
---
``run_engine(script, env=None, timeout=DEFAULT_TIMEOUT, cwd=None, python=None) -> subprocess.CompletedProcess``
    Writes ``script`` to a temporary file and runs it with this interpreter (``sys.executable``),
    wrapped as::

        def __vllm_diag_main__():
            <script, indented>

        if __name__ == "__main__":
            __vllm_diag_main__()

    so the caller does not need the ``if __name__ == "__main__":`` guard that vLLM's CPU platform
    (which forces the ``spawn`` start method) requires. The snippet's top-level names therefore
    live in a function; a snippet that must define module-level names (say, a function that a
    spawned process imports by name) should bring its own guard: a snippet that already contains
    ``if __name__ == "__main__":`` is run unchanged.

    Environment: the current environment, plus the defaults in ``ENGINE_ENV``
    (``VLLM_CPU_KVCACHE_SPACE=1``, ``HF_HUB_OFFLINE=1``, ``TRANSFORMERS_OFFLINE=1``,
    ``VLLM_NO_USAGE_STATS=1``, ``PYTHONUNBUFFERED=1``), then ``env`` on top (a value of ``None``
    in ``env`` removes that variable). The repository root is put first on ``PYTHONPATH`` so the
    snippet can import ``diag``, ``probes`` and ``tests.testbed``.

    Output: ``stdout`` and ``stderr`` are captured together (stderr merged into stdout, in the
    order the processes wrote them, which is what a real vLLM log looks like); ``result.stdout``
    holds the text, ``result.stderr`` is ``""``. ``result.returncode`` is the exit status.

    Timeout: on expiry the whole process group (main process, ``VLLM::EngineCore``,
    ``VLLM::Worker``) is killed and ``EngineTimeout`` (a ``subprocess.TimeoutExpired``) is raised
    with the output so far in ``.output``.

``ENGINE_KWARGS``
    The ``LLM(...)`` keyword arguments every test-bed engine uses unless it needs otherwise:
    ``enforce_eager=True, max_model_len=512, max_num_seqs=4, dtype="bfloat16"`` (eager mode makes
    init 17 s instead of 53 s and reaches KV planning even when a forward fails).

``NO_MP``
    ``{"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}``: pass as ``env`` to run engine core and worker in
    the calling process (init about 2.5 s instead of about 17 s). Use it unless the multi-process
    path is what the test is about.

``generate_script(model, prompts=PROMPTS, max_tokens=8, metrics=False, **llm_kwargs) -> str``
    A ready snippet for ``run_engine``: builds ``LLM(model, **ENGINE_KWARGS, seed=0, **llm_kwargs)``,
    generates greedily (``temperature=0, ignore_eos=True``) and prints one line
    ``RESULT {"tokens": [[int]], "text": [str], "pid": int, "metrics": {...}}`` (``metrics``: the
    ``vllm:spec_decode_num*`` counters, only with ``metrics=True``, which also sets
    ``disable_log_stats=False``).
``parse_result(completed) -> dict``
    The ``RESULT`` object of such a run; raises ``AssertionError`` with the log's tail when the
    script failed or printed no (or several) ``RESULT`` lines.

Example::

    from tests.testbed.engine import run_engine, NO_MP
    r = run_engine(f'''
        from vllm import LLM, SamplingParams
        llm = LLM(model={str(path)!r}, enforce_eager=True, max_model_len=512, max_num_seqs=4, dtype="bfloat16")
        out = llm.generate(["the cat"], SamplingParams(max_tokens=8, ignore_eos=True, temperature=0))
        print("TOKENS", list(out[0].outputs[0].token_ids))
    ''', env=NO_MP)
    assert r.returncode == 0, r.stdout[-4000:]
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TIMEOUT = 240.0

ENGINE_ENV = {
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "PYTHONUNBUFFERED": "1",
}
ENGINE_KWARGS = {"enforce_eager": True, "max_model_len": 512, "max_num_seqs": 4, "dtype": "bfloat16"}
NO_MP = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
PROMPTS = ["the cat sat on the mat", "hello world , how are you"]
RESULT_PREFIX = "RESULT "


class EngineTimeout(subprocess.TimeoutExpired):
    """The engine script ran past its timeout; ``.output`` holds what it printed."""

    def __str__(self) -> str:
        tail = (self.output or "")[-2000:]
        return f"engine script timed out after {self.timeout:.0f} s; last output:\n{tail}"


def wrap_script(script: str) -> str:
    """The snippet as a runnable file, inside a ``__main__`` guard (see the module docstring)."""
    body = textwrap.dedent(script).strip("\n")
    if 'if __name__ == "__main__"' in body or "if __name__ == '__main__'" in body:
        return body + "\n"
    return (
        "def __vllm_diag_main__():\n"
        + textwrap.indent(body or "pass", "    ")
        + "\n\n\nif __name__ == \"__main__\":\n    __vllm_diag_main__()\n"
    )


def generate_script(model, prompts=None, max_tokens: int = 8, metrics: bool = False, **llm_kwargs) -> str:
    """A snippet that starts an engine on ``model``, generates, and prints one ``RESULT`` line."""
    kwargs = {**ENGINE_KWARGS, "seed": 0, **llm_kwargs}
    if metrics:
        kwargs["disable_log_stats"] = False
    prompts = list(PROMPTS if prompts is None else prompts)
    return f"""
import json, os
from vllm import LLM, SamplingParams
llm = LLM(model={str(model)!r}, **{kwargs!r})
sp = SamplingParams(max_tokens={int(max_tokens)}, ignore_eos=True, temperature=0)
outs = llm.generate({prompts!r}, sp)
result = {{"tokens": [list(o.outputs[0].token_ids) for o in outs],
           "text": [o.outputs[0].text for o in outs], "pid": os.getpid()}}
if {bool(metrics)!r}:
    result["metrics"] = {{m.name: getattr(m, "value", None) for m in llm.get_metrics()
                          if m.name.startswith("vllm:spec_decode_num")}}
print({RESULT_PREFIX!r} + json.dumps(result), flush=True)
"""


def parse_result(completed: subprocess.CompletedProcess) -> dict:
    """The ``RESULT`` object printed by a ``generate_script`` run (AssertionError with the log otherwise)."""
    import json

    assert completed.returncode == 0, f"engine script failed (exit {completed.returncode}):\n{completed.stdout[-6000:]}"
    lines = [line for line in completed.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    assert len(lines) == 1, f"expected one RESULT line, got {len(lines)}:\n{completed.stdout[-4000:]}"
    return json.loads(lines[0][len(RESULT_PREFIX):])


def engine_env(env: dict | None = None) -> dict[str, str]:
    """The environment ``run_engine`` gives the subprocess."""
    full = dict(os.environ)
    full.update(ENGINE_ENV)
    for key, value in (env or {}).items():
        if value is None:
            full.pop(key, None)
        else:
            full[key] = str(value)
    path = full.get("PYTHONPATH", "")
    full["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + path if path else "")
    return full


def run_engine(
    script: str,
    env: dict | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    cwd: str | os.PathLike | None = None,
    python: str | None = None,
) -> subprocess.CompletedProcess:
    """Run ``script`` in a fresh Python process; see the module docstring."""
    with tempfile.TemporaryDirectory(prefix="vllm-diag-engine-") as tmp:
        path = Path(tmp) / "engine_script.py"
        path.write_text(wrap_script(script))
        args = [python or sys.executable, str(path)]
        proc = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=engine_env(env),
            cwd=str(cwd) if cwd else tmp,
            text=True,
            errors="replace",
            start_new_session=True,  # own process group: a timeout kills EngineCore/Worker too
        )
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            out, _ = proc.communicate()
            raise EngineTimeout(args, timeout, output=out) from None
        except BaseException:
            _kill_group(proc)
            proc.communicate()
            raise
        finally:
            # The engine's children normally exit with it; make sure none outlives the test.
            _kill_group(proc, only_leftovers=True)
        return subprocess.CompletedProcess(args, proc.returncode, out, "")


def _kill_group(proc: subprocess.Popen, only_leftovers: bool = False) -> None:
    """SIGKILL the subprocess's process group (its pgid is its pid: ``start_new_session``).
    ``only_leftovers``: called after the main process exited, to reap children it left behind."""
    if only_leftovers and proc.poll() is None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass

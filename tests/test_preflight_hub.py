"""`check` fetches config.json of a Hub model id through the real huggingface_hub client.

A loopback HTTP server answers like the Hub does for ``/{repo}/resolve/{revision}/{file}``
(``X-Repo-Commit`` / ``ETag`` headers, ``X-Error-Code`` on 401/404); the CLI runs in a fresh process
with ``HF_ENDPOINT`` pointed at it and ``HF_HOME`` in a temporary folder.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import socket
import subprocess
import sys
import threading

import pytest

from tests.testbed.engine import REPO_ROOT

TOKEN = "hf_loopbacktoken123"
COMMIT = "0123456789abcdef0123456789abcdef01234567"

LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 128, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "max_position_embeddings": 4096,
         "vocab_size": 512, "torch_dtype": "bfloat16"}
NEMOTRON = {"architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "hidden_size": 128,
            "layers_block_type": ["mamba", "mlp", "attention", "mlp"], "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 32, "mamba_num_heads": 8, "mamba_head_dim": 32, "ssm_state_size": 16,
            "n_groups": 1, "conv_kernel": 4, "chunk_size": 128, "max_position_embeddings": 4096, "vocab_size": 512,
            "torch_dtype": "bfloat16"}

REPOS = {"org/tiny-llama": {"config.json": LLAMA}, "org/tiny-draft": {"config.json": LLAMA},
         "org/gated-nemotron": {"config.json": NEMOTRON}, "org/weights-only": {"model.safetensors": {}}}
GATED = {"org/gated-nemotron"}


class HubHandler(http.server.BaseHTTPRequestHandler):
    requests: list[tuple[str, str, str | None]] = []

    def log_message(self, *args):  # quiet
        pass

    def _answer(self, body: bool) -> None:
        HubHandler.requests.append((self.command, self.path, self.headers.get("authorization")))
        parts = self.path.split("?")[0].strip("/").split("/")
        if len(parts) < 5 or parts[2] != "resolve":
            return self._error(404, "RepoNotFound", "Repository not found")
        repo, rev, filename = "/".join(parts[:2]), parts[3], "/".join(parts[4:])
        if repo not in REPOS:
            return self._error(401, "RepoNotFound", "Repository not found")  # the Hub answers 401 for unknown repos
        if repo in GATED and self.headers.get("authorization") != f"Bearer {TOKEN}":
            return self._error(401, "GatedRepo", "Access to model is restricted")
        if rev not in ("main", COMMIT):
            return self._error(404, "RevisionNotFound", "Invalid rev id")
        if filename not in REPOS[repo]:
            return self._error(404, "EntryNotFound", "Entry not found")
        data = json.dumps(REPOS[repo][filename]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("ETag", '"%s"' % hashlib.sha1(data).hexdigest())
        self.send_header("X-Repo-Commit", COMMIT)
        self.end_headers()
        if body:
            self.wfile.write(data)

    def _error(self, code: int, error_code: str, message: str) -> None:
        data = json.dumps({"error": message}).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Error-Code", error_code)
        self.send_header("X-Error-Message", message)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def do_HEAD(self):  # noqa: N802
        self._answer(body=False)

    def do_GET(self):  # noqa: N802
        self._answer(body=True)


@pytest.fixture(scope="module")
def hub():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), HubHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def env(tmp_path, hub):
    HubHandler.requests.clear()
    e = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING_FACE", "VLLM_DIAG_MODEL_PATH"))}
    e.update(HF_HOME=str(tmp_path / "hf"), HF_ENDPOINT=hub, PYTHONPATH=str(REPO_ROOT), HF_HUB_DISABLE_TELEMETRY="1")
    return e


def check(env, *argv, version="0.32.0"):
    cmd = [sys.executable, "-m", "vllm_diag", "check", "--vllm-version", version, "--gpu", "H100", "--json", "--",
           "vllm", "serve", *argv]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    return r


def test_check_fetches_config_and_draft_from_the_hub(env):
    r = check(env, "org/tiny-llama", "--speculative-config",
              '{"model": "org/tiny-draft", "num_speculative_tokens": 2}')
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["architecture"] == "LlamaForCausalLM"
    assert "models--org--tiny-llama" in doc["config_source"] and COMMIT in doc["config_source"]
    layers = {ls["layer_name"] for ls in doc["state"]["layer_specs"]}
    assert any(n.startswith("draft_model.") for n in layers), layers  # the draft's config was fetched too
    fetched = {p for m, p, _ in HubHandler.requests if m == "GET"}
    assert fetched == {"/org/tiny-llama/resolve/main/config.json", "/org/tiny-draft/resolve/main/config.json"}
    # the second run reads the Hugging Face cache: no request at all, also offline
    HubHandler.requests.clear()
    r2 = check({**env, "HF_HUB_OFFLINE": "1"}, "org/tiny-llama")
    assert r2.returncode == 0, r2.stderr
    assert HubHandler.requests == []


def test_gated_model_needs_hf_token(env):
    r = check(env, "org/gated-nemotron")
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "Traceback" not in r.stderr
    assert "gated" in r.stderr and "HF_TOKEN" in r.stderr
    r = check({**env, "HF_TOKEN": TOKEN}, "org/gated-nemotron")
    assert r.returncode in (0, 1), r.stderr
    assert json.loads(r.stdout)["architecture"] == "NemotronHForCausalLM"
    assert any(auth == f"Bearer {TOKEN}" for _, _, auth in HubHandler.requests)


@pytest.mark.parametrize("argv, expect", [
    (["org/no-such-model"], "no such model on the Hub"),
    (["org/weights-only"], "has no config.json"),
    (["org/tiny-llama", "--revision", "v9"], "revision 'v9' not found"),
])
def test_hub_failures_are_one_line(env, argv, expect):
    r = check(env, *argv)
    assert r.returncode == 2, r.stdout
    assert expect in r.stderr and r.stderr.strip().count("\n") == 0 and "Traceback" not in r.stderr


def test_offline_mode_sends_no_request(env):
    r = check({**env, "HF_HUB_OFFLINE": "1"}, "org/tiny-llama")
    assert r.returncode == 2
    assert "HF_HUB_OFFLINE is set" in r.stderr
    assert HubHandler.requests == []


def test_unreachable_endpoint_fails_fast_with_one_line(env):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = check({**env, "HF_ENDPOINT": f"http://127.0.0.1:{port}", "VLLM_DIAG_HUB_TIMEOUT": "2"}, "org/tiny-llama")
    assert r.returncode == 2
    assert f"127.0.0.1:{port}" in r.stderr and "failed" in r.stderr and r.stderr.strip().count("\n") == 0


def test_a_failed_fetch_is_answered_from_memory(env, monkeypatch):
    """One analysis re-checks every suggestion through the pre-flight: a model the Hub does not have
    is asked for once, not once per re-check (each ask may wait out timeouts and retries)."""
    from vllm_diag.preflight import hfconfig

    for k in [k for k in os.environ if k.startswith("HF_")]:
        monkeypatch.delenv(k)
    for k, v in env.items():
        if k.startswith("HF_"):
            monkeypatch.setenv(k, v)
    monkeypatch.setattr(hfconfig, "_FAILED_FETCHES", {})
    asked = lambda: [r for r in HubHandler.requests if "org/no-such-model" in r[1]]  # noqa: E731
    with pytest.raises(hfconfig.ModelConfigError, match="no such model on the Hub"):
        hfconfig.fetch_config("org/no-such-model")
    first = len(asked())
    assert first >= 1
    for _ in range(3):
        with pytest.raises(hfconfig.ModelConfigError, match="no such model on the Hub"):
            hfconfig.fetch_config("org/no-such-model")
    assert len(asked()) == first
    monkeypatch.setattr(hfconfig, "FAILED_FETCH_TTL_S", 0.0)  # once the memory expires, the Hub is asked again
    with pytest.raises(hfconfig.ModelConfigError):
        hfconfig.fetch_config("org/no-such-model")
    assert len(asked()) > first

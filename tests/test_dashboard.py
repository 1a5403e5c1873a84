"""The dashboard's callbacks as plain functions, on real sessions (no browser, no server): fleet
rows, filters, refresh by new rows only, session pages drawn from the view models, a finding's
highlight, suggestion downloads equal to ``suggest --apply``, compare, bad DBs as messages, and
the token / Host checks."""

from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("dash")

from tests.dashboard_sessions import fleet_dir  # noqa: E402
from vllm_diag import views  # noqa: E402
from vllm_diag.fleet import Fleet, db_key_for  # noqa: E402
from vllm_diag.model import BatchStep  # noqa: E402
from vllm_diag.store import Store  # noqa: E402
from vllm_diag.suggest import apply_suggestion  # noqa: E402
from vllm_diag.ui.web import callbacks as cb  # noqa: E402
from vllm_diag.ui.web import security  # noqa: E402
from vllm_diag.ui.web.app import create_app, page  # noqa: E402
from vllm_diag.ui.web.data import Sources  # noqa: E402


@pytest.fixture(scope="module")
def fleet_root(tmp_path_factory):
    return fleet_dir(tmp_path_factory.mktemp("fleet") / "hosts")


@pytest.fixture
def sources(fleet_root, tmp_path):
    root = tmp_path / "hosts"
    shutil.copytree(fleet_root, root)
    fleet = Fleet([root])
    src = Sources(fleet, refresh_s=0)
    src.root = root
    yield src
    fleet.close()


def _texts(component) -> list[str]:
    """Every string in a Dash component tree (what the browser shows as text)."""
    out = []
    if isinstance(component, str):
        return [component]
    if isinstance(component, (list, tuple)):
        for c in component:
            out += _texts(c)
        return out
    children = getattr(component, "children", None)
    if children is not None:
        out += _texts(children)
    return out


def _find(component, cid):
    if getattr(component, "id", None) == cid:
        return component
    children = getattr(component, "children", None)
    for c in children if isinstance(children, (list, tuple)) else [children] if children is not None else []:
        hit = _find(c, cid)
        if hit is not None:
            return hit
    return None


def _values(seq) -> list:
    """A trace's values: a list, or Plotly's base64 typed array ({"dtype", "bdata"})."""
    if isinstance(seq, dict) and "bdata" in seq:
        import base64

        import numpy as np

        return np.frombuffer(base64.b64decode(seq["bdata"]), dtype=np.dtype(seq["dtype"])).tolist()
    return list(seq)


def _row(src, kind=None, status=None, rule=None):
    for r in src.snapshot(force=True).rows:
        if (kind is None or r.kind == kind) and (status is None or r.status == status):
            if rule is None:
                return r
            with src.fleet.open_store(r.db_key) as st:
                if any(f.rule == rule for f in st.load(r.session, steps=False).findings):
                    return r
    raise AssertionError(f"no session kind={kind} status={status} rule={rule}")


def test_fleet_rows_failing_first_search_and_filters(sources):
    snap = sources.snapshot(force=True)
    rows = cb.fleet_rows(snap)
    assert len(rows) == len(snap.rows) >= 10
    failing = [r for r in rows if r["errors_f"] or r["status"] == "failed"]
    assert rows[:len(failing)] == failing  # the failures are at the top, visible at a glance
    seed = next(r for r in rows if r["kind"] == "check")
    assert seed["errors_f"] == 1 and seed["worst"] == "error" and seed["gpu"] == "RTX PRO 6000"
    assert seed["vllm_version"] == "0.20.2" and seed["session"].startswith("[")
    assert {r["session_id"] for r in cb.fleet_rows(snap, search="H200 0.26.0")} == {
        r.session for r in snap.rows if "H200" in r.gpu and r.vllm_version == "0.26.0"}
    assert all(r["kind"] == "engine" for r in cb.fleet_rows(snap, kinds=["engine"]))
    assert {r["status"] for r in cb.fleet_rows(snap, statuses=["ok"])} == {"ok"}
    tp2 = next(r for r in rows if r["gpu"] == "2x H200")
    assert tp2["last_step"] == 67


def test_fleet_refresh_reads_only_new_rows_and_new_dbs(sources):
    recs, problems, summary, gen, flt = cb.fleet_update(sources)
    assert recs and problems is None and "sessions in" in summary
    # nothing changed: the browser keeps its table
    assert cb.fleet_update(sources, known_generation=gen, known_filter=flt)[0] is None
    # an engine writes 500 steps into one DB: the refresh reads those rows, not the million before
    live = Store.open(sources.root / "qwen3next-serve-ngram3.db", create=True)
    sid = live.resolve_session(None)
    live.add_rows("batch_steps", sid, 7, [BatchStep(step_index=1000 + i, num_decodes=1) for i in range(500)])
    live.close()
    snap = sources.snapshot(force=True)
    assert snap.rows_read == 500
    assert snap.row(db_key_for(sources.root / "qwen3next-serve-ngram3.db"), sid).last_step == 1499
    recs2, _p, _s, gen2, _f = cb.fleet_update(sources, known_generation=gen, known_filter=flt)
    assert gen2 == gen + 1 and recs2 is not None
    # a host's DB appears later; a foreign file is a problem line, not an error
    shutil.copyfile(sources.root / "preflight-host.db", sources.root / "late-host.db")
    (sources.root / "notes.db").write_text("<b>not</b> a database")
    recs3, problems, _s, _g, _f = cb.fleet_update(sources, known_generation=gen2, known_filter=flt)
    assert len(recs3) == len(recs2) + 1
    assert "notes.db: notes.db: not a vllm-diag database (not an SQLite file)" in _texts(problems)
    assert sources.snapshot().rows_read == 0  # the copy's rows are read once, by index, not rescanned


def test_session_page_from_the_view_models_and_a_click_on_a_finding(sources):
    row = _row(sources, kind="engine", rule="mamba_state_indices")  # the diagnosed 11-vs-12 GPU capture
    layout = cb.session_page(sources, row.db_key, row.session)
    with sources.fleet.open_store(row.db_key) as st:
        rep = views.build(st.load(row.session, steps="summary"))
    texts = " ".join(_texts(layout))
    for f in rep.findings.items:
        assert f"#{f.number}" in texts and f.title in texts
    for s in rep.findings.suggestions:
        assert f"{s.number}. {s.title}" in texts
    state = _find(layout, "fig-state").figure
    assert state["layout"]["meta"]["mismatches"] == [[12, 11]] and state["layout"]["meta"]["highlight"] == []
    # click finding #1: its anchors (group 0, block-table column 12) turn gold in the state-index view
    f1 = next(f for f in rep.findings.items if f.rule == "mamba_state_indices")
    ids = [{"type": "finding", "n": f.number} for f in rep.findings.items]
    pages, state, timeline, note, styles = cb.select_finding(sources, {"db": row.db_key, "session": row.session},
                                                             f1.number, ids)
    assert "column:0:12" in f1.anchor_keys and state["layout"]["meta"]["highlight"] == sorted(f1.anchor_keys)
    gold = [t for t in state["data"] if t["name"] == "the finding's column"]
    assert gold and 12 in _values(gold[0]["x"])
    assert note == f"finding #{f1.number}: " + ", ".join(f1.anchor_keys)
    assert [st["background"] for st in styles] == ["#fffde7" if i["n"] == f1.number else "#fff" for i in ids]


def test_seed_check_page_map_marks_the_layer_and_highlights_it(sources):
    row = _row(sources, kind="check")
    loaded = sources.load(row.db_key, row.session)
    f1 = loaded.report.findings.items[0]
    assert f1.rule == "kv_unify_mamba_assert" and f1.anchors
    pages, *_ = cb.select_finding(sources, {"db": row.db_key, "session": row.session}, 1,
                                  [{"type": "finding", "n": 1}])
    assert set(pages["layout"]["meta"]["marked"]) == set(loaded.report.page_map.marked_layers)
    assert set(pages["layout"]["meta"]["highlight"]) == set(f1.anchor_keys)
    need = pages["data"][0]
    gold = [y for y, c in zip(need["y"], need["marker"]["line"]["color"]) if c == "#f9a825"]
    assert set(gold) == {a.ref for a in f1.anchors if a.kind == "layer"}


def test_download_equals_suggest_apply(sources, tmp_path):
    row = _row(sources, kind="check")
    ref = {"db": row.db_key, "session": row.session}
    loaded = sources.load(row.db_key, row.session)
    for n, _f, sug in loaded.suggestions:
        written = apply_suggestion(sug, tmp_path, stem=f"vllm-diag-{row.session}-s{n}")
        for what, path in (("sh", written[0]), ("yaml", written[1])):
            d = cb.download(sources, ref, n, what)
            assert d["filename"] == path.name and d["content"] == path.read_text()
    assert "num_speculative_tokens" in cb.download(sources, ref, 1, "yaml")["content"]


def test_compare_config_diff_kv_groups_page_sizes(sources):
    a = _row(sources, kind="engine", rule="mamba_state_indices")
    b = next(r for r in sources.snapshot().rows if r.gpu == "2x H200")
    body = cb.compare_body(sources, a.key, b.key)
    texts = _texts(body)
    diff = cb.config_diff(sources.load(a.db_key, a.session).report.header.config,
                          sources.load(b.db_key, b.session).report.header.config)
    differing = [k for k, _x, _y, d in diff if d]
    assert differing and differing[0] in texts
    assert any(t.startswith("Config diff (") for t in texts)
    assert "MambaSpec" in texts and "FullAttentionSpec" in texts  # both sides' KV groups
    assert cb.compare_href([a.key, b.key]) == "/compare?" + __import__("urllib.parse").parse.urlencode({"a": a.key, "b": b.key})
    assert cb.compare_href([a.key]) is None


def test_bad_urls_and_vanished_dbs_are_messages(sources):
    for path in ("/session/000000000000/nope", "/session/../../etc/passwd", "/nothing/here",
                 "/session/" + db_key_for(sources.root / "notes.db") + "/x"):
        texts = _texts(page(sources, path, ""))
        assert any(t in ("Session not available", "Not found") for t in texts), path
    row = _row(sources, kind="check")
    (sources.root / row.db_name).unlink()
    texts = _texts(cb.session_page(sources, row.db_key, row.session))
    assert "no such session among the dashboard's databases" in texts


def test_script_in_a_log_stays_text(sources, tmp_path):
    """Text from a log reaches the page as a string (React escapes it), never as markup."""
    from tests.dashboard_sessions import REAL_LOGS, analyzed_db

    log = tmp_path / "evil.log"
    text = (REAL_LOGS / "missing_tokenizer.log").read_text()
    evil = "<script>window.__pwned=1</script><img src=x onerror=alert(1)>"
    lines = text.splitlines()
    idx = max(i for i, line in enumerate(lines) if "Error" in line and ":" in line)
    lines[idx] = lines[idx] + " " + evil
    log.write_text("\n".join(lines) + "\n")
    analyzed_db(sources.root / "evil.db", log)
    row = next(r for r in sources.snapshot(force=True).rows if r.db_name == "evil.db")
    layout = cb.session_page(sources, row.db_key, row.session)
    serialized = json.dumps(layout.to_plotly_json(), default=lambda o: o.to_plotly_json())
    assert evil in " ".join(_texts(layout))  # as a plain string child
    assert '"type": "Script"' not in serialized and "dangerously" not in serialized


# ----------------------------------------------------------------------------- token and Host


def test_bind_rules():
    assert security.bind_error("127.0.0.1", None) is None
    assert security.bind_error("::1", None) is None
    assert "token" in security.bind_error("0.0.0.0", None)
    assert security.bind_error("0.0.0.0", "short") == "the dashboard token must be at least 16 characters"
    assert security.bind_error("0.0.0.0", "x" * 24) is None


def test_every_route_needs_the_token(sources):
    token = "t0ken-" + "x" * 20
    app = create_app(sources, token=token, loopback_only=False)
    client = app.server.test_client()
    routes = ["/", "/session/abc/def", "/_dash-layout", "/_dash-dependencies", "/_favicon.ico"]
    for r in routes:
        resp = client.get(r)
        assert resp.status_code == 401, r
        assert b"token required" in resp.data
    body = {"output": "page.children", "outputs": {"id": "page", "property": "children"},
            "inputs": [{"id": "url", "property": "pathname", "value": "/"},
                       {"id": "url", "property": "search", "value": ""}], "changedPropIds": ["url.pathname"]}
    assert client.post("/_dash-update-component", json=body).status_code == 401
    assert client.post("/_dash-update-component", json=body,
                       headers={"Authorization": "Bearer wrong-token-xxxxxxxxxxxx"}).status_code == 401
    ok = client.post("/_dash-update-component", json=body, headers={"Authorization": f"Bearer {token}"})
    assert ok.status_code == 200 and b"Fleet" in ok.data
    # a browser's first visit: ?token= sets the HttpOnly cookie and redirects without it
    first = client.get(f"/compare?token={token}&a=1")
    assert first.status_code == 303 and first.headers["Location"].endswith("/compare?a=1")
    cookie = first.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and token in cookie
    again = client.get("/_dash-layout")  # the test client keeps the cookie
    assert again.status_code == 200
    assert again.headers["X-Frame-Options"] == "DENY" and again.headers["X-Content-Type-Options"] == "nosniff"


def test_loopback_dashboard_refuses_foreign_host_headers(sources):
    app = create_app(sources, token=None, loopback_only=True)
    client = app.server.test_client()
    assert client.get("/", headers={"Host": "127.0.0.1:8470"}).status_code == 200
    assert client.get("/", headers={"Host": "localhost"}).status_code == 200
    assert client.get("/", headers={"Host": "[::1]:8470"}).status_code == 200
    assert client.get("/", headers={"Host": "attacker.example:8470"}).status_code == 403


def test_serves_nothing_but_the_app(sources):
    app = create_app(sources, token=None, loopback_only=True)
    client = app.server.test_client()
    for path in ("/assets/../pyproject.toml", "/assets/app.py", "/../diag/store.py", "/_dash-component-suites/../x"):
        resp = client.get(path)
        assert resp.status_code in (200, 404)
        assert b"[build-system]" not in resp.data and b"class Store" not in resp.data
        if resp.status_code == 200:  # the SPA shell for an unknown path: Dash's index page, no file
            assert b"_dash-config" in resp.data


def test_figures_show_db_text_as_text(tmp_path):
    """Plotly reads <br>, <b>, <a href> in labels and hover text: a layer named with markup is escaped."""
    from vllm_diag.model import KVCacheGroup, LayerSpec
    from vllm_diag.ui import figures

    evil = 'model.layers.0.<a href="https://example.invalid">attn</a>'
    st = Store.open(tmp_path / "x.db", create=True)
    sid = st.new_session("engine", model="m")
    from vllm_diag.model import EngineState

    st.add_state(sid, EngineState(layer_specs=[LayerSpec(evil, "FullAttentionSpec", block_size=16, page_size_bytes=4096),
                                               LayerSpec("model.layers.1.mixer", "MambaSpec", block_size=16,
                                                         page_size_bytes=2048, mamba_shapes=[[1, 2]])],
                                  kv_cache_groups=[KVCacheGroup(0, "FullAttentionSpec", [evil], 16, 4096)]))
    rec = st.load(sid, steps="summary")
    st.close()
    fig = figures.page_map_figure(views.page_map(rec))
    text = json.dumps(fig.to_plotly_json(), default=str)
    assert "<a href" not in text and "&lt;a href=\\\"https://example.invalid\\\"&gt;attn&lt;/a&gt;" in text


def test_session_page_follows_an_engine_that_keeps_writing(sources):
    row = next(r for r in sources.snapshot(force=True).rows if r.db_name == "qwen3next-serve-ngram3.db")
    layout = cb.session_page(sources, row.db_key, row.session)
    version = _find(layout, "session-version").data
    ref = {"db": row.db_key, "session": row.session}
    assert cb.session_tick(sources, ref, None, version) is None  # nothing new: nothing redrawn
    live = Store.open(sources.root / row.db_name, create=True)
    pid = live.db.execute("select pid from batch_steps where session_id = ? limit 1", [row.session]).fetchone()[0]
    live.add_rows("batch_steps", row.session, pid,  # the EngineCore keeps writing
                  [BatchStep(step_index=200 + i, num_decodes=2, num_spec_decodes=1 if i == 5 else 0) for i in range(30)])
    live.close()
    sources.snapshot(force=True)
    timeline, _state, version2 = cb.session_tick(sources, ref, None, version)
    assert version2 != version and "|229|" in version2
    assert timeline["layout"]["meta"]["marked_steps"] == [205]  # the new mixed decode + spec-decode step is marked
    assert max(x for t in timeline["data"] if "x" in t for x in _values(t["x"])) >= 200


@pytest.mark.parametrize("args, message", [
    (["dashboard"], "vllm-diag: give DB files or folders (or set VLLM_DIAG_DB)"),
    (["dashboard", "nowhere.db"], "vllm-diag: nowhere.db: no such file or folder"),
    (["dashboard", "x.db", "--host", "0.0.0.0"],
     "vllm-diag: --host 0.0.0.0 is reachable from other machines: set a token with --token or VLLM_DIAG_DASHBOARD_TOKEN "
     "(every request must then carry it)"),
    (["dashboard", "x.db", "--host", "0.0.0.0", "--token", "short"], "vllm-diag: the dashboard token must be at least 16 characters"),
    (["dashboard", "x.db", "--port", "-1"], "vllm-diag: --port -1: not a port number"),
])
def test_dashboard_command_bad_input_is_one_line(tmp_path, args, message):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("VLLM_DIAG_DB", security.TOKEN_ENV)}
    r = subprocess.run([sys.executable, "-m", "vllm_diag", *args], capture_output=True, text=True, cwd=tmp_path,
                       env=env, timeout=60)
    assert (r.returncode, r.stderr.strip(), r.stdout) == (2, message, "")


def test_dashboard_without_the_extra_one_line():
    import subprocess
    import sys

    code = ("import sys; sys.modules['dash'] = None\n"
            "from vllm_diag.cli import main; sys.exit(main(['dashboard', 'x.db']))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stderr.strip()) == (2, "vllm-diag: the dashboard needs dash and plotly: pip install 'vllm-diag[web]'")


def test_recorded_engine_without_stored_findings_is_diagnosed_on_open(tmp_path):
    """The GPU 11-vs-12 recording as it was made (no findings stored): the fleet, the session page and
    the exporter's metrics all show the findings of vllm_diag.api.diagnose, the same ones."""
    from tests.dashboard_sessions import gpu_db
    from vllm_diag import api, metrics

    db = gpu_db(tmp_path / "hosts", "nemotronh-pc-ngram3-capture-11v12")
    with Store.open(db) as st:
        rec = st.load(steps=False)
    assert rec.findings == []
    expected = api.diagnose(rec).findings
    assert any(f.rule == "mamba_state_indices" for f in expected)
    with Fleet([tmp_path / "hosts"]) as fleet:
        src = Sources(fleet, refresh_s=0)
        row = src.snapshot(force=True).rows[0]
        assert row.findings_source == "computed on open"
        assert row.findings[0] == sum(f.severity == "error" for f in expected)
        assert cb.fleet_rows(src.snapshot())[0]["found_by"] == "computed on open"
        loaded = src.load(row.db_key, row.session)
        assert [f.rule for f in loaded.report.findings.items] == [f.rule for f in expected]
        fams = fleet.metric_families()
    n = metrics.sample_map(fams)
    got = {(dict(lab)["category"], dict(lab)["severity"]): v for (name, lab), v in n.items()
           if name == "vllm_diag_findings" and v}
    want: dict = {}
    for f in expected:
        want[(f.category, f.severity)] = want.get((f.category, f.severity), 0) + 1
    assert got == want


def test_long_session_paints_first_and_fetches_its_timeline_second(sources, monkeypatch):
    from vllm_diag.ui.web import data

    monkeypatch.setattr(data, "QUICK_STEPS", 100)  # the GPU recording's 122 steps count as long here
    row = next(r for r in sources.snapshot(force=True).rows if r.db_name == "qwen3next-serve-ngram3.db")
    layout = cb.session_page(sources, row.db_key, row.session)
    assert _find(layout, "timeline-pending").data is True
    placeholder = _find(layout, "fig-timeline").figure
    assert "aggregating 122 steps" in json.dumps(placeholder)
    assert _find(layout, "fig-pages").figure["data"]  # page map and state index are there at once
    ref = {"db": row.db_key, "session": row.session}
    timeline = cb.timeline_ready(sources, ref, None, True)
    assert timeline["layout"]["meta"]["highlight"] == [] and "122 steps" in json.dumps(timeline)
    assert cb.timeline_ready(sources, ref, None, False) is None
    # once the full record is cached, the page paints in one go
    assert _find(cb.session_page(sources, row.db_key, row.session), "timeline-pending").data is False


def test_pages_load_plotly_js_basic_bundle_of_the_plotly_version_the_figures_are_made_for(sources):
    """Where ``dcc.Graph`` fetches plotly.js, the dashboard serves plotly.js's basic bundle: the same plotly.js version as the Python package, and every trace type the figures draw
    is in it."""
    from plotly.offline import get_plotlyjs_version

    from vllm_diag.ui.web.app import PLOTLY_JS_ROUTE

    client = create_app(sources, token=None, loopback_only=True).server.test_client()
    assert client.get("/").status_code == 200
    resp = client.get(PLOTLY_JS_ROUTE)
    assert resp.status_code == 200 and resp.mimetype == "text/javascript"
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    head = resp.data[:200].decode()
    assert f"plotly.js (basic - minified) v{get_plotlyjs_version()}\n" in head
    assert b"window.Plotly = Plotly;" in resp.data[-200:]
    basic = {"scatter", "bar", "pie"}  # plotly.js's basic bundle
    for row in sources.snapshot(force=True).rows:
        loaded = sources.load(row.db_key, row.session)
        for number in [None] + [f.number for f in loaded.report.findings.items]:
            for fig in cb.session_figures(loaded, number):
                assert {t.type or "scatter" for t in fig.data} <= basic, row.session

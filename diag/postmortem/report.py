"""Text, JSON and Markdown of an :class:`~vllm_diag.postmortem.analyze.Analysis`: the renderers of
its session record (``vllm_diag.render``), so `analyze` prints exactly what `show` prints of the
session it stores. Kept for library callers (benchmarks, scripts)."""

from __future__ import annotations

import json
from typing import Any

from ..render.json import SCHEMA as JSON_SCHEMA_VERSION
from ..render.json import encode
from ..render.markdown import render_markdown as _markdown
from ..render.text import render_text as _text
from ..views import build
from .analyze import Analysis

__all__ = ["JSON_SCHEMA_VERSION", "render_json", "render_markdown", "render_text", "to_json"]


def to_json(an: Analysis) -> dict[str, Any]:
    return encode(an.to_record(session_id=an.session_id))


def render_json(an: Analysis) -> str:
    return json.dumps(to_json(an), indent=2, default=str)


def render_text(an: Analysis) -> str:
    return _text(build(an.to_record(session_id=an.session_id)))


def render_markdown(an: Analysis) -> str:
    return _markdown(build(an.to_record(session_id=an.session_id)))

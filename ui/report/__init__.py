"""The static HTML report (plotly, no dash): ``render_html(report_vm) -> str``, one self-contained
file with plotly.js inlined; nothing is fetched when it is opened."""

from .html import render_html

__all__ = ["render_html"]

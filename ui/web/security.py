"""Who may talk to the dashboard: the bind rule, the token check and the Host check.

* The dashboard binds 127.0.0.1 unless ``--host`` says otherwise; a non-loopback bind needs a token
  (``--token`` or ``VLLM_DIAG_DASHBOARD_TOKEN``), :func:`bind_error` says so in one line.
* With a token, every request -- pages, Dash's ``/_dash-layout``, ``/_dash-dependencies``,
  ``/_dash-update-component`` callback route, component scripts -- must carry it: an
  ``Authorization: Bearer`` header, the ``vllm_diag_token`` cookie, or ``?token=`` (a browser's
  first visit: the answer sets the HttpOnly, SameSite=Strict cookie and redirects to the same URL
  without the token, so it does not stay in the address bar or the history).
* Bound to the loopback, the ``Host`` header must name the loopback too (a web page elsewhere
  cannot reach the dashboard through DNS rebinding).

Pure functions of the request's parts, unit-tested; :func:`install` hooks them into Flask.
"""

from __future__ import annotations

import hmac
import ipaddress
import urllib.parse
from dataclasses import dataclass

TOKEN_ENV = "VLLM_DIAG_DASHBOARD_TOKEN"
COOKIE = "vllm_diag_token"
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def is_loopback(host: str) -> bool:
    h = host.strip("[]")
    if h == "localhost":
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def bind_error(host: str, token: str | None) -> str | None:
    """One line when the bind is refused, else None."""
    if not is_loopback(host) and not token:
        return (f"--host {host} is reachable from other machines: set a token with --token or {TOKEN_ENV} "
                "(every request must then carry it)")
    if token is not None and len(token) < 16:
        return "the dashboard token must be at least 16 characters"
    return None


def _host_name(host_header: str) -> str:
    h = host_header.strip()
    if h.startswith("["):
        return h[1:h.find("]")] if "]" in h else h
    return h.rsplit(":", 1)[0] if h.count(":") == 1 else h


@dataclass(frozen=True)
class Verdict:
    allow: bool
    status: int = 200
    message: str = ""
    set_cookie: bool = False  # token came in the query: set the cookie and redirect without it
    redirect_to: str | None = None


def check(*, token: str | None, loopback_only: bool, host_header: str, path: str, query: str,
          authorization: str | None, cookie: str | None) -> Verdict:
    """The decision for one request (the parts Flask hands :func:`install`'s hook)."""
    if loopback_only and not is_loopback(_host_name(host_header or "")):
        return Verdict(False, 403, "forbidden: the dashboard answers to localhost / 127.0.0.1 only")
    if not token:
        return Verdict(True)
    presented = []
    if authorization and authorization.lower().startswith("bearer "):
        presented.append(authorization[7:].strip())
    if cookie:
        presented.append(cookie)
    params = urllib.parse.parse_qsl(query or "", keep_blank_values=True)
    from_query = [v for k, v in params if k == "token"]
    presented += from_query
    if not any(hmac.compare_digest(p.encode(), token.encode()) for p in presented):
        return Verdict(False, 401, "token required (open the URL with ?token=..., or send Authorization: Bearer)")
    if from_query:
        rest = urllib.parse.urlencode([(k, v) for k, v in params if k != "token"])
        return Verdict(True, 303, set_cookie=True, redirect_to=path + (f"?{rest}" if rest else ""))
    return Verdict(True)


def install(server, *, token: str | None, loopback_only: bool) -> None:
    """Check every request of the Flask ``server`` (Dash's ``app.server``) and add safe headers."""
    from flask import make_response, redirect, request

    @server.before_request
    def _guard():
        v = check(token=token, loopback_only=loopback_only, host_header=request.headers.get("Host", ""),
                  path=request.path, query=request.query_string.decode("latin-1"),
                  authorization=request.headers.get("Authorization"), cookie=request.cookies.get(COOKIE))
        if not v.allow:
            resp = make_response(v.message + "\n", v.status)
            resp.mimetype = "text/plain"
            return resp
        if v.set_cookie:
            resp = redirect(v.redirect_to or "/", code=303)
            resp.set_cookie(COOKIE, token, httponly=True, samesite="Strict", path="/")
            return resp
        return None

    @server.after_request
    def _headers(resp):
        for k, val in SECURITY_HEADERS.items():
            if k == "Cache-Control" and request.path.startswith("/_dash-component-suites/"):
                continue  # Dash's own versioned bundles may be cached; pages and data never
            resp.headers.setdefault(k, val)
        return resp

"""other: requests that failed while the engine kept serving -- the API server's 4xx / 5xx answers.

uvicorn's access log counts them (``"POST /v1/completions HTTP/1.1" 500 Internal Server Error``); vLLM's
AsyncLLM says why a request failed inside the server (``Request cmpl-9 failed due to ModuleNotFoundError:
No module named 'lmformatenforcer'.``, with ``--enable-log-requests``). A 4xx is the request's own
validation (a prompt longer than max_model_len, a bad sampling parameter); a 5xx with a reason is a
server-side failure of those requests (a missing package of a feature, a grammar backend); neither is a
hybrid/spec-decode failure of the engine. Only read where the log has no root error (an engine that died
answers 5xx to everything after).
"""

from __future__ import annotations

import re

from ..model import Finding
from .base import Rule, RuleContext
from .other_common import fact_evidence

ID = "other_request_errors"
# the API server's error body a client got ({"error": {"message": ..., "type": "BadRequestError"}})
_ERROR_BODY = re.compile(r'"type"\s*:\s*"\w*(?:Error|Exception)"')


def check(ctx: RuleContext) -> list[Finding]:
    log = ctx.log
    if log is None or log.root is not None:
        return []
    codes = {str(k): int(v) for k, v in (log.startup.get("http_errors") or {}).items()}
    server = sum(n for c, n in codes.items() if c.startswith("5"))
    client = sum(n for c, n in codes.items() if c.startswith("4"))
    reason = log.startup.get("request_failure")
    if not server and not client and not reason:
        return []
    if not reason and any(_ERROR_BODY.search(str(t)) for _, t in log.startup.get("error_lines") or []):
        return []  # a client's error body in the log: the near miss the diagnosis reads from it
    counts = ", ".join(f"{n} x HTTP {c}" for c, n in sorted(codes.items()))
    numbers: dict = {f"http_{c}_responses": n for c, n in codes.items()}
    evidence = fact_evidence(log, "request_failure", *(f"http_{c}" for c in sorted(codes)))
    if reason:
        failed = log.startup.get("request_failures") or server
        numbers["requests_failed"] = failed
        return [Finding(rule=ID, category="other", severity="error",
                        title=f"{failed} request(s) failed while the engine kept serving: {reason[:120]}",
                        message=(f"The engine kept serving while requests failed ({counts or 'no access log'}): "
                                 f"{reason}. A feature those requests use (structured outputs, a tool parser, a "
                                 "multimodal processor) fails on its own -- outside the hybrid/spec-decode families."),
                        numbers=numbers, evidence=evidence)]
    if server:
        return [Finding(rule=ID, category="other", severity="warning",
                        title=f"{server} request(s) answered HTTP 5xx while the engine kept serving",
                        message=(f"The API server answered {counts}; the engine logged no error, so the requests failed "
                                 "in the server. Run with --enable-log-requests to log why each request failed."),
                        numbers=numbers, evidence=evidence)]
    return [Finding(rule=ID, category="other", severity="warning",
                    title=f"{client} request(s) rejected by the server (HTTP 4xx)",
                    message=(f"The API server answered {counts}: the requests' own validation (a prompt longer than "
                             "max_model_len, a bad sampling parameter, an unknown model name), not an engine failure."),
                    numbers=numbers, evidence=evidence)]


RULE = Rule(id=ID, title="Requests failed while the engine kept serving (HTTP 4xx / 5xx)", category="other",
            check=check, reads=("log",), doc=__doc__ or "")

"""User-facing errors: one clear line on stderr and a non-zero exit, never a traceback."""


class DiagError(Exception):
    """An error the CLI prints as one line (``vllm-diag: <message>``) with exit code 2."""

    exit_code = 2


class NotADiagDatabase(DiagError):
    """The file exists but is not a vllm-diag database (or is not SQLite at all)."""


class SessionNotFound(DiagError):
    """The database holds no session with the requested id."""

"""The ``vllm serve`` command: read it like vLLM does, normalise it, patch it -- without importing vLLM.

One job per module:

* ``tokens``     -- shell-like tokenizer keeping each token's span; POSIX quoting;
* ``flags``      -- vLLM's serve flag table (``vllm_diag/data/vllm_flags.json``) plus legacy flags;
* ``parse``      -- ``parse_command(text_or_argv) -> ServeCommand`` (``--config`` YAML, dotted forms);
* ``normalise``  -- vLLM dests -> ``vllm_diag.model.CONFIG_KEYS``;
* ``patch``      -- ``patch_command(cmd, changes) -> Patch`` (diff, YAML, ``LLM(...)`` kwargs);
* ``vllm_check`` -- opt-in cross-check with vLLM's own parser (imports vLLM).
"""

from __future__ import annotations

from .flags import flag_table, flag_table_version, long_flag
from .normalise import normalise_args
from .parse import ArgItem, ServeCommand, human_int, load_config_file, parse_command
from .patch import Patch, patch_command
from .tokens import CommandError, Token, shell_quote, tokenize

__all__ = [
    "ArgItem", "CommandError", "Patch", "ServeCommand", "Token", "flag_table", "flag_table_version", "human_int",
    "load_config_file", "long_flag", "normalise_args", "parse_command", "patch_command", "shell_quote", "tokenize",
]

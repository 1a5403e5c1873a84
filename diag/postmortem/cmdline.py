"""Commands pasted around a log (``vllm serve`` lines with continuations, ``LLM(...)`` calls, argv lists of
compose / Kubernetes manifests, YAML sequences, loose ``--flag value`` lines) and the engine arguments
merged from them, the engine's config dump and its non-default args; the part of the collector that
reads them."""

from __future__ import annotations

import json
import re
from typing import Any

from ..redact import redact, redact_args
from .abtests import clean_row
from .command import ENGINE_CALL
from .lines import Line

_CMD_START = re.compile(
    r"(?:^|[\s$`>#])((?:[A-Z_][A-Z0-9_]*=\S+\s+)*(?:vllm\s+serve\b|python[\d.]*\s+(?:-\w+\s+)*-m\s+vllm\.entrypoints\.\S+))"
)
_FLAG_LINE = re.compile(r"^\s*(?:-\s+)?([\"']?)(--[a-z][a-z0-9-]*(?:[= ].*)?)\1\s*,?\s*$")  # also YAML `- --x=1`
_ARGV_LIST = re.compile(r"\[\s*[\"']vllm[\"']\s*,\s*[\"']serve[\"'][^\]]*\]")  # compose/k8s: ["vllm", "serve", ...]
# an argv written as a list (compose `command: [...]`, Kubernetes `args: [...]`, possibly over several lines):
# the list opens with a quoted flag, "vllm" or "python"
# (the image's entrypoint is `vllm serve`: a compose `command:` list may open with the model, then flags)
_ARGV_OPEN = re.compile(r"""(?:^|[:=\s])\[\s*(?:["'](?:--[a-z]|vllm\b|python|-m\b)|["'][\w.\-/:]+["']\s*,\s*["']--?[a-z]|$)""")
_ARGV_ITEM = re.compile(r'"((?:[^"\\]|\\.)*)"|\'([^\']*)\'')

# a YAML block sequence item: "  - --tensor-parallel-size" / '  - "4"'
_YAML_ITEM = re.compile(r"^\s*-\s+(.*?)\s*$")
# a bullet of prose, not an argv item: an arrow to an outcome, or words that do not open with a flag, a JSON value or
# the command itself ("keep prefix caching, remove --speculative-config -> problem gone")
_OUTCOME_ARROW = re.compile(r"\s(?:->|=>|\u2192)\s")
# a trial told with its outcome: "--no-enable-prefix-caching -> output correct", "--enforce-eager -> still corrupt" (one
# with a crash for outcome -- "--speculative-config '{...}' -> crash after 4 min" -- is the failing set-up itself)
_TRIAL_ARROW_AFTER = re.compile(r"^[^.;!?\n]{0,40}?" + _OUTCOME_ARROW.pattern + r"\W{0,3}(?:(?:the )?output |it )?"
                                r"(?:always |all |now )?"
                                r"(?:still|same|also|no (?:crash|error|issue|problem|fault|more)|never|fine|ok|okay|works?|"
                                r"worked|correct|clean|stable|starts?|started|boots?|solved|fixed|gone|normal|good|"
                                r"better|pass(?:es|ed)?|survive[sd]?)\b"
                                # "--max-num-seqs 256: starts": a setting and the start it gave, right after it
                                r"|^\s*:?\s*(?:it\s+|then\s+it\s+)?(?:starts?|started|boots?|booted|comes up|came up)\b", re.I)
_PROSE_ITEM = re.compile(_OUTCOME_ARROW.pattern + r"|^(?![-{\[\"']|vllm\s|python)\S+\s+\S+\s+\S+")
_INLINE_FLAG = re.compile(
    r"(?<![\w-])(--[a-z][a-z0-9_-]+(?:\.[a-z_]+)?)(?:[ =](?!-{1,2}[a-z]|[-=]>)('[^']*'|\"[^\"]*\"|\{[^}]*\}|[^\s,;)`]+))?"
    # vLLM's short parallel-size aliases with a number ("-tp 4", "-pp 2", "-dcp 8"; "--tp 2" as reporters write it)
    r"|(?<![\w-])(--?(?:tp|pp|dp|dcp|pcp|ep))[ =](\d+)\b"
)
# a flag written without its dashes in a sentence ("max-num-seqs 64", "engine args: max_num_seqs=32,
# enable_prefix_caching=True"): a name of two or more words with a number (or a boolean after '='); kept only
# where the name is one of vLLM's flags
# where the name is one of vLLM's flags. A JSON / YAML key (`"max_num_seqs": 32,`, `  tensor-parallel-size: "8"`) is
# the same setting written in a config file, a compose / Helm values file or a request body.
# a flag the reporter names as what avoids the failure ("works with --enforce-eager", "we turned off prefix caching
# (--no-enable-prefix-caching) and it has not crashed since"): not the set-up that failed
_WORKAROUND_BEFORE = re.compile(r"(?:\bturn(?:ed|ing)? (?:it |this |that )?off|\bdisabl(?:e|ed|ing)\b|\bremov(?:e|ed|ing)\b|"
                                r"\bwithout\b|\bworkaround\b|\bworks?(?: fine| ok| well)? (?:with|when|if|after)\b|"
                                r"\bworked(?: fine| ok| well)? (?:with|when|if|after)\b|\bno (?:crash|issue|problem)s? "
                                r"(?:with|when|if)\b|\bfine (?:with|when)\b|"
                                r"\bavoid(?:s|ed)? (?:it|this|the crash)? ?(?:with|by)\b)"
                                r"[^.;!?]{0,60}$", re.I)
_WORKAROUND_AFTER = re.compile(r"^[^.;!?]{0,30}?\b(?:(?:it |this |that |everything |the crash |the error )?(?:works|worked|"
                               r"fixes|fixed|helps|helped|avoids|goes away|went away|disappears|is stable|was stable|"
                               r"is fine|runs fine|starts? (?:up )?(?:fine|ok|clean)|started (?:up )?(?:fine|ok|clean))|has not crashed|hasn't crashed|no longer|does not crash|"
                               r"doesn't crash|never (?:happened|crashed|failed|reproduced|happens|crashes)|"
                               r"(?:it )?(?:ran|runs) (?:\w+ ){0,2}(?:clean|fine|stable))\b",
                               re.I)

# (a setting written without dashes is read in more sentences; only "works with" / "fine with" before it marks it as
# the way out -- "disabling chunked prefill isn't an option (max-num-batched-tokens 8192)" states the set-up)
_WORKS_WITH_BEFORE = re.compile(r"\b(?:works?|worked|fine|stable|no (?:crash|issue|problem)s?)(?: fine| ok| well)? "
                                r"(?:with|when|if|after) $", re.I)


# a switch the reporter says is off ("`--enable-prefix-caching` is OFF", "--enforce-eager: disabled"): the run had
# it off, whatever the flag's own meaning
_SAID_OFF = re.compile(r"^[`'\"*]*\s*(?:is |was |=\s*|:\s*)?(?:off|disabled|false|not (?:set|enabled|used|on))\b", re.I)
# words that follow a flag named in a sentence, never its value
_PROSE_WORDS = frozenset({"is", "was", "are", "were", "be", "and", "or", "but", "to", "the", "a", "an", "in", "on", "with",
                          "which", "that", "it", "does", "did", "didn't", "doesn't", "also", "still", "as", "for", "by",
                          "has", "had", "helps", "helped", "makes", "made", "set", "too", "alone", "only"})


def workaround_flag(text: str, start: int, end: int) -> bool:
    """The flag at ``text[start:end]`` is named as what avoids the failure, not as the failing set-up."""
    return bool(_WORKAROUND_BEFORE.search(text[max(0, start - 90):start])) or _tried_after(text[end:end + 80])


def _tried_after(after: str) -> bool:
    """What follows a setting says it was the way out or a trial with its outcome ("works with it", "1.
    --no-enable-prefix-caching -> output correct", "4. --enforce-eager -> still corrupt"), not the failing set-up."""
    return bool(_WORKAROUND_AFTER.match(after) or _TRIAL_ARROW_AFTER.match(after))


# a heading that introduces the settings of a set-up the run replaced ("Old chart args:", "Before the migration we
# ran:", "previous flags:") -- and one that introduces the run's own ("New chart args (Tuesday):", "Now:")
_SUPERSEDED_HEAD = re.compile(r"^\s*(?:#+\s*)?(?:old|previous|former|original|before)\b[^:\n]{0,50}"
                              r"\b(?:args|arguments|flags|command|cmd|config|settings|values|chart|deployment)\b[^:\n]{0,30}:\s*$",
                              re.I)
_CURRENT_HEAD = re.compile(r"^\s*(?:#+\s*)?(?:new|current|now|after)\b[^:\n]{0,60}:\s*$", re.I)
# a markdown table's row naming an engine setting and its value ("| max_num_seqs | 256 |")
_TABLE_SETTING = re.compile(r"^\s*\|\s*`?([a-z][a-z0-9]*(?:_[a-z0-9]+)+)`?\s*\|\s*([^|]{1,400}?)\s*\|")
_TABLE_VALUE = re.compile(r"\d+(?:\.\d+)?|True|False|true|false|\{[^{}]{1,400}\}")
_BARE_FLAG = re.compile(r"(?<![\w.\-/$])[\"']?([a-z][a-z0-9]*(?:[-_][a-z0-9]+)+)[\"']?(?:\s*([=:])\s*[\"']?(\d+(?:\.\d+)?|True|"
                        r"False|true|false|\{[^{}]{1,400}\})[\"']?"
                        r"|[ \t]+(\d+(?:\.\d+)?))(?!\w|\.\d)")
# an RL framework's Hydra / OmegaConf override (verl `actor_rollout_ref.rollout.gpu_memory_utilization=0.35`, SkyRL
# `generator.max_num_seqs=1024`, OpenRLHF-style `+trainer.x.max_model_len=32768`): the last key of the dotted path is
# the engine argument the framework hands to vLLM; no spaces around '=' (code's `self.a.b = 1` has them)
_DOTTED_OVERRIDE = re.compile(r"(?:^|(?<=\s))\+{0,2}(?:[a-z_][a-z0-9_]*\.)+([a-z][a-z0-9]*(?:_[a-z0-9]+)+)="
                              r"[\"']?(\d+(?:\.\d+)?|True|False|true|false)[\"']?(?=\s|$)")
# the frameworks' names for vLLM's own settings
_FRAMEWORK_KEYS = {"tensor_model_parallel_size": "tensor_parallel_size"}
# a Helm values key in camelCase (`tensorParallelSize: 4`, `maxModelLen: 32768`): kept where its snake_case form is a flag
_CAMEL_KEY = re.compile(r"""(?<![\w.\-/$])["']?([a-z][a-z0-9]*(?:[A-Z][a-z0-9]+)+)["']?\s*:\s*["']?(\d+(?:\.\d+)?|true|false)["']?(?!\w|\.\d)""")
_LOWER_UPPER = re.compile(r"[a-z][A-Z]")
# a nested block holding one JSON-valued setting (YAML `speculative_config:` + indented keys, or a JSON object spread
# over lines `"speculative_config": {` ... `}`): its keys become the flag's JSON value
_BLOCK_OPEN = re.compile(r"""^(\s*)(?:-\s+)?["']?(speculative[-_]config|compilation[-_]config)["']?\s*:\s*(\{?)\s*(?:#.*)?$""")
_BLOCK_KEY = re.compile(r"""^\s*["']?([A-Za-z_][\w-]*)["']?\s*:\s*(.*?)\s*,?\s*(?:#.*)?$""")
# a shell variable set in a pasted script (`TP=4`, `export MAX_LEN="32768"`), used later as `-tp $TP`
_SHELL_SET = re.compile(r"""^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(?:"([^"]*)"|'([^']*)'|([^\s'"`$;|&]+))\s*(?:#.*)?$""")
# "$VAR" (one word whatever it holds), $VAR, ${VAR}, ${VAR:-default}
_SHELL_USE = re.compile(r"\"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?\"|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_GAP = re.compile(r"^(?:\[\s*)?(?:\.\.\.|…)(?:\s*\]|\s|$|.{0,60}\]\s*$)")


def _unescape(item: str) -> str:
    """A double-quoted argv item as YAML/JSON read it: ``"{\\"method\\": \\"mtp\\"}"`` is ``{"method": "mtp"}``
    (a JSON flag value in a manifest keeps its escapes otherwise, and the configuration in it is lost)."""
    if "\\" not in item:
        return item
    try:
        return json.loads(f'"{item}"')
    except ValueError:
        return item


def _block_value(raw: str) -> Any:
    """A YAML / JSON scalar or flow list of a nested block (``3``, ``"mtp"``, ``[1, 2, 4]``, ``true``)."""
    v = raw.strip().rstrip(",").strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
        return v[1:-1]
    if v.startswith("["):
        try:
            return json.loads(v.replace("'", '"'))
        except ValueError:
            return v
    low = v.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("null", "none", "~"):
        return None
    try:
        return int(v)
    except ValueError:
        try:
            return float(v)
        except ValueError:
            return v


def _balance(text: str) -> int:
    return text.count("(") + text.count("[") + text.count("{") - text.count(")") - text.count("]") - text.count("}")


def _paren_delta(text: str) -> int:
    depth = 0
    quote = None
    for c in text:
        if quote:
            if c == quote:
                quote = None
            continue
        if c in "'\"":
            quote = c
        elif c == "#":
            break
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
    return depth




def _open_quote(text: str) -> bool:
    return text.count("'") % 2 == 1 or text.count('"') % 2 == 1 or _balance(text) > 0


def wrap_join(cmd: str, prev: str, line: str) -> str | None:
    """How a line continues a command that a fixed-width wrap cut (no backslash): ``""`` when the cut fell inside
    a token (an open quote or bracket; a flag split, ``--enable-p`` + ``refix-caching``), ``" "`` when it fell
    between a flag that takes a value and the value; None when the line is not such a continuation (prose, a
    new command, an indented continuation the caller reads itself)."""
    if not line.strip() or line[:1].isspace():
        return None
    if _open_quote(cmd):
        return ""
    last = prev.split()[-1] if prev.split() else ""
    first = line.split()[0]
    if not last.startswith("--"):
        return None
    try:
        from ..serve import flag_table

        flags, options = flag_table()
    except Exception:  # noqa: BLE001 - no flag table: no guess
        return None
    if (last + first).split("=", 1)[0] in options and last not in options:
        return ""
    dest = options.get(last)
    if dest and flags.get(dest, {}).get("kind") == "value" and re.match(r"[\d'\"{\[]|[a-z0-9][\w.\-/]*$", first):
        return " "
    return None


class CommandLines:
    """Mixin of :class:`~vllm_diag.postmortem.extract.FactCollector`: commands and engine arguments."""

    def _argv_lists(self, line: Line) -> None:
        """argv written as a list: a flow list (``args: ["--model", "x", "--tensor-parallel-size", "4"]``, one or
        several lines) or a YAML block sequence (``- --max-num-seqs`` / ``- "128"``); read as a command."""
        text = line.text
        if line.level is not None or line.process is not None:
            self._end_argv()
            self._end_yaml()
            return
        if self._argv is not None:
            start, parts = self._argv
            parts.append(text)
            if _balance(" ".join(parts)) <= 0 or len(parts) > 40:
                self._end_argv()
        elif "[" in text and _ARGV_OPEN.search(text):
            i = _ARGV_OPEN.search(text).start()
            self._argv = (line.lineno, [text[text.index("[", i):]])
            if _balance(self._argv[1][0]) <= 0:
                self._end_argv()
        m = _YAML_ITEM.match(text) if text.lstrip().startswith("-") else None
        if m:
            item = m.group(1)
            if len(item) >= 2 and item[0] == item[-1] and item[0] in "'\"":
                item = item[1:-1]
            if self._yaml is None:
                self._yaml = (line.lineno, [])
            if len(self._yaml[1]) < 200:
                self._yaml[1].append(item)
        elif self._yaml is not None:
            self._end_yaml()

    def _argv_command(self, lineno: int, argv: list[str]) -> None:
        if not any(a.startswith("--") for a in argv) or len(self.commands) >= 20:
            return
        from ..serve import shell_quote

        if argv[0].startswith("--") or argv[0] == "serve":
            argv = (["vllm"] if argv[0] == "serve" else ["vllm", "serve"]) + argv
        elif re.fullmatch(r"[\w.\-]+/[\w.\-]+|/[\w.\-/]+", argv[0]) and len(argv) > 1 and argv[1].startswith("-"):
            argv = ["vllm", "serve"] + argv  # the model first: arguments of the image's `vllm serve` entrypoint
        # a list that names the model is a whole command line; a list of a few flags (a bullet list in prose)
        # proves nothing by what it lacks
        self.cmd_complete[lineno] = any(a == "--model" or a.startswith("--model=") for a in argv) or (
            argv[:2] == ["vllm", "serve"] and len(argv) > 2 and not argv[2].startswith("-"))
        self.commands.append((lineno, " ".join(shell_quote(a) for a in argv)))

    def _end_argv(self) -> None:
        if self._argv is not None:
            lineno, parts = self._argv
            items = [_unescape(a) if a else b for a, b in _ARGV_ITEM.findall(" ".join(parts))]
            self._argv = None
            if items and items != ["vllm", "serve"]:
                self._argv_command(lineno, items)

    def _end_yaml(self) -> None:
        if self._yaml is not None:
            lineno, items = self._yaml
            self._yaml = None
            if any(_PROSE_ITEM.search(item) for item in items):
                return  # a bullet list of the reporter's trials ("- --no-enable-prefix-caching -> problem gone")
            argv: list[str] = []
            for item in items:
                # one item holding several flags ("- --enable-prefix-caching --max-num-seqs 8"): split it where
                # nothing quoted or bracketed could hold a space of its own
                if item.startswith("--") and re.search(r"\s--?[a-z]", item) and not re.search(r"[{}\[\]'\"]", item):
                    argv.extend(item.split())
                else:
                    argv.append(item)
            if len(argv) >= 2:
                self._argv_command(lineno, argv)

    def _config_block(self, line: Line) -> None:
        """A JSON-valued setting written as a nested YAML / JSON block (``speculative_config:`` then indented
        ``method: mtp`` / ``num_speculative_tokens: 3``): its keys, read into one ``--speculative-config`` value."""
        text = line.text
        blk = self._block
        if blk is not None:
            indent, _, items, _ = blk
            s = text.strip()
            ind = len(text) - len(text.lstrip())
            if line.level is not None or not s or ind <= indent or s.startswith("}") or len(items) > 40:
                self._end_block(line.lineno)
                if s.startswith("}") and ind >= indent:
                    return
            else:
                m = _BLOCK_KEY.match(text)
                if m:
                    items[m.group(1)] = _block_value(m.group(2))
                return
        if line.level is None and "config" in text and ":" in text:
            m = _BLOCK_OPEN.match(text)
            if m:
                self._block = (len(m.group(1)), "--" + m.group(2).replace("_", "-"), {}, line.lineno)

    def _end_block(self, lineno: int) -> None:
        blk, self._block = self._block, None
        if blk and blk[2] and len(self.inline_flags) < 100:
            self.inline_flags.append((blk[3], blk[1], "'" + json.dumps(blk[2]) + "'"))

    def _shell_line(self, line: Line) -> Line:
        """Shell variables of a pasted script: ``TP=4`` remembered, ``-tp $TP`` read as ``-tp 4``."""
        text = line.text
        if line.level is not None:
            return line
        if "=" in text and len(self.shell_vars) < 200:
            m = _SHELL_SET.match(text)
            if m:
                self.shell_vars[m.group(1)] = next(g for g in m.group(2, 3, 4) if g is not None)
                return line
        if "$" in text:
            new = _SHELL_USE.sub(self._shell_value, text)
            if new != text:
                return Line(line.lineno, new, line.process, line.level, line.display)
        return line

    def _shell_value(self, m: re.Match) -> str:
        name = m.group(1) or m.group(2) or m.group(4)
        val = self.shell_vars.get(name, m.group(3) if m.group(2) else None)
        if val is None:
            return m.group(0)
        if m.group(1) or re.search(r"[\s{}\[\]\"]", val):  # one shell word: quoted so the command still splits right
            return "'" + val.replace("'", "") + "'"
        return val

    def _commands(self, line: Line) -> None:
        if line.level is None and line.process is None and ":" in line.text:
            if _SUPERSEDED_HEAD.match(line.text):
                self._superseded = True  # ("Old chart args:": the settings of a set-up the run replaced)
                return
            if _CURRENT_HEAD.match(line.text):
                self._superseded = False
        if self._superseded:
            return
        line = self._shell_line(line)
        self._config_block(line)
        text = line.text
        self._argv_lists(line)
        if (self._cmd_lines is not None or self._llm_lines is not None) and (line.level is not None or line.process is not None):
            return  # another process's record written into a pasted command: skip it, keep collecting
        if self._cmd_lines is not None:
            s = text.strip()
            prev = self._cmd_lines[-1].rstrip()
            if _GAP.match(s):  # an excerpt gap inside the command: what follows is not its continuation
                self._end_cmd()
                return
            sep = wrap_join(" ".join(self._cmd_lines), prev, text) if not prev.endswith("\\") else None
            if sep is not None:  # the reporter's editor wrapped one long command line at a fixed width
                self._cmd_lines[-1] = prev + sep + s
                return
            if prev.endswith("\\") or (s.startswith("-") and line.level is None) or (
                    s.startswith(("'", '"', "}")) and line.level is None):
                self._cmd_lines.append(text)
                if len(self._cmd_lines) > 80:
                    self._end_cmd()
                return
            self._end_cmd()
        if self._llm_lines is not None:
            self._llm_lines.append(text)
            self._llm_depth += _paren_delta(text)
            if self._llm_depth <= 0 or len(self._llm_lines) > 60:
                self._end_llm()
            return
        m = _CMD_START.search(text) if ("vllm" in text and line.level is None) else None
        if m and line.level is None:
            self._cmd_lines = [text[m.start(1):]]
            self._cmd_line_no = line.lineno
            if not text.rstrip().endswith("\\"):
                pass
            return
        m = ENGINE_CALL.search(text) if ("LLM(" in text or "EngineArgs(" in text) else None
        if m and "=" in text[m.end():] + "=":
            self._llm_lines = [text[m.start():]]
            self._llm_line_no = line.lineno
            self._llm_depth = _paren_delta(text[m.start():])
            if self._llm_depth <= 0:
                self._end_llm()
            return
        if line.level is None and "--" in text:
            m = _FLAG_LINE.match(text)
            if m and not _OUTCOME_ARROW.search(text):  # "- --no-enable-prefix-caching -> problem gone": a trial, told
                self.flag_lines.append((line.lineno, m.group(2).strip()))
                return
        m = _ARGV_LIST.search(text) if line.level is None and "serve" in text else None
        if m:
            try:
                argv = json.loads(m.group(0).replace("'", '"'))
            except ValueError:
                argv = None
            if isinstance(argv, list) and all(isinstance(a, str) for a in argv) and len(self.commands) < 20:
                from ..serve import shell_quote

                self.commands.append((line.lineno, " ".join(shell_quote(a) for a in argv)))
                return
            return
        if line.level is not None:
            return  # a log record: the flags below are read from pasted text only
        if text.lstrip().startswith("#"):
            return  # a commented-out line of a script (`# --enforce-eager`): not part of the set-up
        if text.lstrip()[:1] == "|" and "_" in text and (row := _TABLE_SETTING.match(text)):
            # a settings table's row ("| max_num_batched_tokens | 512 (kept from Q2) |"): the key and the value's
            # first word, or the cell's JSON object
            cell = row.group(2).strip()
            val = cell if cell.startswith("{") else cell.split()[0] if cell else ""
            if _TABLE_VALUE.fullmatch(val) and len(self.inline_flags) < 100:
                if val.startswith("{"):
                    val = "'" + val.replace("'", '"') + "'"
                self.inline_flags.append((line.lineno, "--" + row.group(1).replace("_", "-"), val))
        indented = text[:1] in (" ", "\t")
        if ("_" in text or "-" in text) and (
                not indented or ":" in text and 'File "' not in text):  # indented: a YAML / JSON key, not a frame
            for m in _BARE_FLAG.finditer(text):
                # an indented line is a key of a YAML / JSON file (`key: value`); indented `name = value` is code
                if indented and m.group(2) != ":":
                    continue
                # "with num_speculative_tokens=1 it never happened", "works with num_speculative_tokens 1"
                if _tried_after(text[m.end():m.end() + 80]) or _WORKS_WITH_BEFORE.search(
                        text[max(0, m.start() - 60):m.start()]):
                    continue
                if len(self.inline_flags) < 100 and not text[max(0, m.start() - 2):m.start()].endswith("-"):
                    val = m.group(3) or m.group(4)
                    if val.startswith("{"):  # a JSON config (speculative_config: {...}) -> one quoted argv item
                        val = "'" + val.replace("'", '"') + "'"
                    self.inline_flags.append((line.lineno, "--" + m.group(1).replace("_", "-"), val))
        if "." in text and "=" in text and 'File "' not in text:
            for m in _DOTTED_OVERRIDE.finditer(text):
                if len(self.inline_flags) < 100:
                    name = _FRAMEWORK_KEYS.get(m.group(1), m.group(1))
                    self.inline_flags.append((line.lineno, "--" + name.replace("_", "-"), m.group(2)))
        if ":" in text and 'File "' not in text and _LOWER_UPPER.search(text):
            for m in _CAMEL_KEY.finditer(text):
                if len(self.inline_flags) < 100:
                    flag = "--" + re.sub(r"([A-Z])", lambda c: "-" + c.group(1).lower(), m.group(1))
                    self.inline_flags.append((line.lineno, flag, m.group(2)))
        if ("--" in text or "-tp" in text or "-pp" in text or "-dp" in text) and not clean_row(text):
            # (the flags of an A/B table's row that came out clean are a trial, not the failing set-up)
            for m in _INLINE_FLAG.finditer(text):
                if workaround_flag(text, m.start(), m.end()):
                    continue
                if m.group(3):  # a short alias with its number
                    if len(self.inline_flags) < 100:
                        self.inline_flags.append((line.lineno, "-" + m.group(3).lstrip("-"), m.group(4)))
                    continue
                if len(self.inline_flags) < 100:
                    val = m.group(2)
                    if val and val[:1] not in "'\"{":
                        val = val.rstrip(":.,;")
                    if val and val.lower() in _PROSE_WORDS:  # "(--mamba-ssm-cache-dtype is default)": no value
                        val = None
                    flag = m.group(1)
                    if flag in ("--tp", "--pp", "--dp", "--dcp", "--pcp"):  # "--tp 8": vLLM's -tp as reporters write it
                        flag = flag[1:]
                    if (val is None or val.lower() in ("off", "disabled", "false")) \
                            and _SAID_OFF.match(text[m.end(1):m.end(1) + 30]):
                        if not flag.startswith(("--enable-", "--no-enable-")):
                            continue  # another switch said to be off: not part of the run
                        flag, val = ("--no-" + flag[2:] if flag.startswith("--enable-") else "--" + flag[5:]), None
                    self.inline_flags.append((line.lineno, flag, val))

    def _end_cmd(self) -> None:
        if self._cmd_lines:
            # a command whose last line still ends in a backslash was cut (an excerpt gap follows)
            self.cmd_complete[self._cmd_line_no] = not self._cmd_lines[-1].rstrip().endswith("\\")
            cmd = "\n".join(self._cmd_lines).rstrip().rstrip("\\").rstrip()
            if len(self.commands) < 20:
                self.commands.append((self._cmd_line_no, cmd))
        self._cmd_lines = None

    def _end_llm(self) -> None:
        if self._llm_lines:
            if len(self.llm_calls) < 20:
                self.llm_calls.append((self._llm_line_no, "\n".join(self._llm_lines)))
        self._llm_lines = None
        self._llm_depth = 0

    def _finish_args(self) -> None:
        from .command import args_from_engine_config, args_from_flags, args_from_llm_call, parse_serve_command

        f = self.facts
        layers: list[tuple[str, dict[str, Any]]] = []
        # lowest priority first
        flags_text = " ".join(t for _, t in self.flag_lines)
        inline = [(flag, val) for _, flag, val in self.inline_flags]
        loose = args_from_flags(flags_text, inline, [t for _, t in self.flag_lines])
        if loose:
            layers.append(("flags", loose))
            line = (self.flag_lines or [(self.inline_flags[0][0], "")])[0][0] if (self.flag_lines or self.inline_flags) else None
            if line:
                f.lines.setdefault("args", (line, (self.flag_lines[0][1] if self.flag_lines else "inline flags")[:500]))
        for ln, call in self.llm_calls:
            a = args_from_llm_call(call)
            if a:
                layers.append(("llm", a))
                f.lines.setdefault("command", (ln, call.splitlines()[0][:500]))
                if f.command is None:
                    f.command = redact(call)
                break
        best = None
        for ln, cmd in self.commands:
            parsed = parse_serve_command(cmd)
            if parsed is not None and (best is None or len(parsed[1]) > len(best[2])):
                best = (ln, parsed[0], parsed[1])
        if best is not None:
            ln, text, args = best
            f.startup["command_complete"] = self.cmd_complete.get(ln, True)
            f.command = redact(text)
            f.lines["command"] = (ln, redact(text.splitlines()[0])[:500])
            layers.append(("command", args))
        if self.engine_config is not None:
            layers.append(("engine", args_from_engine_config(self.engine_config[1])))
        if self.non_default is not None:
            from .command import args_from_dest_dict

            layers.append(("non_default", args_from_dest_dict(self.non_default[1])))
        merged: dict[str, Any] = {}
        for _, a in layers:
            for k, v in a.items():
                if v is not None:
                    merged[k] = v
        stated = f.startup.get("mamba_cache_mode")
        if isinstance(stated, str) and merged.get("mamba_cache_mode") not in (None, stated):
            # the mode vLLM says it runs wins over the one asked for: a model without 'all' support falls back to
            # 'align' ("... without support for prefix caching with Mamba cache 'all' mode: falling back to 'align'")
            f.startup["requested_mamba_cache_mode"] = merged["mamba_cache_mode"]
            merged["mamba_cache_mode"] = stated
        f.args = redact_args(merged)
        # numbers derived from the arguments
        k = f.args.get("num_speculative_tokens")
        if isinstance(k, int):
            f.numbers.setdefault("num_speculative_tokens", k)

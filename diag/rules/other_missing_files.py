"""other: the model's files are missing or unreachable -- tokenizer files, config.json, weights, a repo id
that does not resolve, an offline Hugging Face hub."""

from __future__ import annotations

import re

from ..model import Finding
from .other_common import exc_evidence, find_exc
from .base import Rule, RuleContext

ID = "other_missing_files"
_TOKENIZER = re.compile(
    r"Couldn't instantiate the backend tokenizer|Can't load tokenizer|tokenizer\.json|tokenizer_config\.json|"
    r"Failed to load the tokenizer|sentencepiece|tokenizer class \w+ does not exist|Tokenizer class .* not found"
)
_MISSING = re.compile(
    r"does not appear to have (?:a )?files? named|Repository Not Found|is not a local folder and is not a valid model identifier|"
    r"No such file or directory|FileNotFoundError|We couldn't connect to 'https://huggingface\.co'|LocalEntryNotFoundError|"
    r"Cannot find any model weights|Cannot find (?:the )?config file|GatedRepoError|401 Client Error|"
    # vLLM's own check of a model or draft path (transformers_utils/config.py): no config file it recognises there
    r"Invalid repository ID or local directory specified"
)


def check(ctx: RuleContext) -> list[Finding]:
    exc = find_exc(ctx, _TOKENIZER, root_only=True)
    what = "tokenizer"
    if exc is None:
        exc = find_exc(ctx, _MISSING, root_only=True)
        what = "model files"
    if exc is None:
        return []
    in_tokenizer = what == "tokenizer" or any("tokeniz" in fr.file or "tokeniz" in fr.function for fr in exc.frames)
    model = (ctx.log.model if ctx.log else None) or "the model"
    title = ("The tokenizer files cannot be loaded" if in_tokenizer else "Model files are missing or unreachable")
    msg = (f"{model}: vLLM could not build a tokenizer (tokenizer.json / tokenizer_config.json missing, or the slow "
           "tokenizer needs sentencepiece/tiktoken)." if in_tokenizer else
           f"{model}: a file vLLM needs is not there (path typo, incomplete download, offline hub or gated repo).")
    f = Finding(rule=ID, category="other", severity="error", title=title, message=msg, evidence=exc_evidence(exc, 2))
    return [f]


RULE = Rule(id=ID, title="Missing tokenizer / model files", category="other", check=check, reads=("log",),
            doc=__doc__ or "")

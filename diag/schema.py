"""The store's schema, as sqlite-utils migrations (table ``_sqlite_migrations``, set ``vllm_diag``).

Append new migrations at the end; never edit one that shipped. ``SCHEMA_VERSION`` is the count.
Table and column names are meant to read well in ``sqlite3`` and datasette.
"""

from __future__ import annotations

from sqlite_utils.migrations import Migrations

MIGRATION_SET = "vllm_diag"
migrations = Migrations(MIGRATION_SET)

# Columns every per-process fact carries: which session, and which process (pid) wrote it.
_OWNER = {"session_id": str, "pid": int}


@migrations()
def m001_initial(db) -> None:
    db["sessions"].create(
        {
            "id": str,
            "kind": str,  # engine | log | check
            "label": str,
            "status": str,  # running | ok | failed
            "started_at": float,
            "ended_at": float,
            "vllm_version": str,
            "model": str,
            "architecture": str,
            "source": str,
            "host": str,
        },
        pk="id",
    )
    db["processes"].create(
        {
            "session_id": str,
            "pid": int,
            "role": str,  # api_server | engine_core | worker | main | other
            "rank": int,
            "ppid": int,
            "name": str,
            "host": str,
            "started_at": float,
        },
        pk=("session_id", "pid"),
        foreign_keys=[("session_id", "sessions", "id")],
    )
    db["environment"].create(
        {**_OWNER, "key": str, "value": str},
        pk=("session_id", "pid", "key"),
    )
    db["engine_config"].create(
        {**_OWNER, "key": str, "value": str},  # value is JSON
        pk=("session_id", "pid", "key"),
    )
    db["layer_specs"].create(
        {
            **_OWNER,
            "stage": str,  # layer | unified
            "layer_name": str,
            "spec_type": str,
            "block_size": int,
            "page_size_bytes": int,
            "page_size_padded": int,
            "num_kv_heads": int,
            "head_size": int,
            "head_size_v": int,
            "dtype": str,
            "sliding_window": int,
            "mamba_type": str,
            "mamba_shapes": str,
            "mamba_dtypes": str,
            "mamba_cache_mode": str,
            "num_speculative_blocks": int,
            "is_draft": int,
            "extra": str,
        }
    )
    db["kv_cache_groups"].create(
        {
            **_OWNER,
            "group_index": int,
            "spec_type": str,
            "block_size": int,
            "page_size_bytes": int,
            "page_size_padded": int,
            "num_speculative_blocks": int,
            "is_draft": int,
            "layer_names": str,
            "extra": str,
        }
    )
    db["block_tables"].create(
        {
            **_OWNER,
            "group_index": int,
            "rows": int,
            "columns": int,
            "block_size": int,
            "kernel_block_size": int,
            "derivation": str,
            "slot_mapping_mode": str,
        }
    )
    db["builder_buffers"].create(
        {**_OWNER, "group_index": int, "builder": str, "name": str, "shape": str, "dtype": str}
    )
    db["batch_steps"].create(
        {
            **_OWNER,
            "step_index": int,
            "at": float,
            "builder": str,
            "group_index": int,
            "num_reqs": int,
            "num_decodes": int,
            "num_spec_decodes": int,
            "num_prefills": int,
            "num_decode_tokens": int,
            "num_spec_decode_tokens": int,
            "num_prefill_tokens": int,
            "num_tokens": int,
            "spec_tokens_per_req": str,
        }
    )
    db["errors"].create(
        {
            **_OWNER,
            "at": float,
            "phase": str,
            "exc_type": str,
            "message": str,
            "location": str,
            "traceback": str,
            "notes": str,
            "numbers": str,
        }
    )
    db["findings"].create(
        {
            "id": int,
            "session_id": str,
            "rule": str,
            "category": str,
            "severity": str,
            "title": str,
            "message": str,
            "numbers": str,
            "comparisons": str,
            "evidence": str,
            "versions": str,
            "fixed_in": str,
            "missing_evidence": str,
        },
        pk="id",
        foreign_keys=[("session_id", "sessions", "id")],
    )
    db["suggestions"].create(
        {
            "id": int,
            "finding_id": int,
            "session_id": str,
            "rank": int,
            "title": str,
            "tradeoff": str,
            "changes": str,
            "command": str,
            "diff": str,
            "yaml": str,
            "llm_kwargs": str,
            "verified": int,
            "verification": str,
        },
        pk="id",
        foreign_keys=[("finding_id", "findings", "id"), ("session_id", "sessions", "id")],
    )
    for table in (
        "environment",
        "engine_config",
        "layer_specs",
        "kv_cache_groups",
        "block_tables",
        "builder_buffers",
        "batch_steps",
        "errors",
    ):
        db[table].create_index(["session_id"], find_unique_name=True)
    db["findings"].create_index(["session_id"], find_unique_name=True)
    db["suggestions"].create_index(["finding_id"], find_unique_name=True)


@migrations()
def m003_finding_confidence_and_basis(db) -> None:
    # How sure a finding is ("high" | "medium" | "low") and why (a matched vLLM failure site, or a
    # family inferred from the configuration and frames): Finding.confidence / Finding.basis.
    db["findings"].add_column("confidence", str)
    db["findings"].add_column("basis", str)


SCHEMA_VERSION = len(migrations._migrations)

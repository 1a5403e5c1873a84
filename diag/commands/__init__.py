"""One module per ``vllm-diag`` subcommand (see diag/cli.py)."""

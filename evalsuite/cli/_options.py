"""Option conventions every command shares: one name per concept (`--output/-o`, `--tasks/-t`, `--data-dir`,
`--panel`, `--topk`, `--overwrite`), the retired names still accepted, and `--limit N` as the short form of
`--subset first:N`. tests/cli/test_conventions.py walks every command and holds them to these rules."""

from __future__ import annotations

import typer

from evalsuite.errors import EvalsuiteError

# Retired option name -> the name every command uses now. Scripts written for the old names keep working: the root
# app's token normalizer rewrites them before parsing (they never appear in --help), with a warning on stderr.
DEPRECATED_OPTIONS: dict[str, str] = {
    "out": "output",  # run, merge, train, adqa generate, lmeval export, index build/import, teacher-queries
    "dest": "data-dir",  # data download: the folder the benchmark files go to is the folder the others read
    "judge": "panel",  # teacher-queries: the panel YAML, as in `evalsuite judge`
    "replace": "overwrite",  # leaderboard add, as in submit and index build/import
    "max-gen-toks": "max-tokens",  # lmeval export, as in run
}


def normalize_option_name(name: str) -> str:
    """click's token normalizer: called with option names without their dashes (and with command names and choices
    that match nothing); a retired name becomes its current one."""
    current = DEPRECATED_OPTIONS.get(name)
    if current is None:
        return name
    typer.echo(f"warning: --{name} is deprecated; use --{current}", err=True)
    return current


def subset_with_limit(subset: str | None, limit: int | None) -> str | None:
    """The subset asked for: `--limit N` is `--subset first:N`; giving both is an error."""
    if limit is None:
        return subset
    if subset is not None:
        raise EvalsuiteError(
            f"both --subset {subset} and --limit {limit} given",
            hint="--limit N is short for --subset first:N; give one of them",
        )
    return f"first:{limit}"

"""`--help` of every command reads at 80 columns: no line wider than the terminal, nothing ended with `…`."""

from __future__ import annotations

import typer
from typer.testing import CliRunner

from evalsuite.cli import app


def command_paths(node=None, prefix=()):
    node = node or typer.main.get_command(app)
    yield prefix
    for name, sub in getattr(node, "commands", {}).items():
        yield from command_paths(sub, (*prefix, name))


def test_every_help_fits_80_columns_uncut():
    paths = list(command_paths())
    assert len(paths) > 20 and ("view",) in paths and ("data", "download") in paths
    for path in paths:
        result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80", "TERM": "dumb"}, terminal_width=80)
        assert result.exit_code == 0, (path, result.output)
        wide = [line for line in result.output.splitlines() if len(line) > 80]
        assert not wide and "…" not in result.output, (path, wide[:3])

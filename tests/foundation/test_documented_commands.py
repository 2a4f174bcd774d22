"""Every `evalsuite …` command line in README.md and docs/ names commands, options and methods that exist.

A parser check, not a run: each command line in a shell code block (continuations joined, cut at `&&`, `|`, `;`,
`>` and `#`) and each inline code span that starts with `evalsuite ` is resolved against the real click command
tree; every option must be one of that command's options (a retired name counts: it still works, with a warning),
and every `--method` value, and `train`'s recipe, must be registered. Placeholders (`METHOD`, `...`) are skipped.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer

from evalsuite.cli import app
from evalsuite.cli._options import DEPRECATED_OPTIONS

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SHELL_FENCE = re.compile(r"^```(?:bash|sh|shell|console)?\s*$")
INLINE = re.compile(r"`((?:python -m )?evalsuite [^`]+)`")
CUT = re.compile(r"\s(?:&&|\|\||\||;|>|2>|#)\s|\s#")


@dataclass(frozen=True)
class DocumentedCommand:
    where: str  # file:line
    text: str  # from `evalsuite` to the end of that command


def _from_evalsuite(line: str) -> str | None:
    """The command starting at the word `evalsuite` (`python -m evalsuite`, `-m evalsuite` under accelerate too)."""
    match = re.search(r"(?:^|\s)(?:python -m |-m )?(evalsuite\s.*)$", line)
    if match is None:
        return None
    return CUT.split(" " + match.group(1))[0].strip()


def documented_commands() -> list[DocumentedCommand]:
    found: list[DocumentedCommand] = []
    for path in DOCUMENTS:
        lines = path.read_text(encoding="utf-8").splitlines()
        in_shell, in_other = False, False
        joined, start = "", 0
        for number, line in enumerate(lines, 1):
            where = f"{path.relative_to(ROOT)}:{number}"
            if line.startswith("```"):
                if in_shell or in_other:
                    in_shell = in_other = False
                elif SHELL_FENCE.match(line):
                    in_shell = True
                else:
                    in_other = True
                continue
            if in_shell:
                joined, start = (joined + " " + line.rstrip("\\").strip(), start or number)
                if line.rstrip().endswith("\\"):
                    continue
                for part in re.split(r"&&", joined):
                    command = _from_evalsuite(part)
                    if command:
                        found.append(DocumentedCommand(f"{path.relative_to(ROOT)}:{start}", command))
                joined, start = "", 0
            elif not in_other:
                found.extend(DocumentedCommand(where, CUT.split(" " + span)[0].strip().removeprefix("python -m "))
                             for span in INLINE.findall(line))
    return found


def _placeholder(token: str) -> bool:
    return token.isupper() or "..." in token or "…" in token or token.startswith("<")


def problems_of(command: DocumentedCommand) -> list[str]:
    """What in one documented command line does not exist; [] when everything it names does."""
    from evalsuite.agent.method import list_methods

    try:
        tokens = shlex.split(command.text)
    except ValueError:
        tokens = command.text.split()
    node = typer.main.get_command(app)  # typer's own click: a group is whatever has .commands
    words = tokens[1:]
    path = ["evalsuite"]
    while hasattr(node, "commands") and words and not words[0].startswith("-"):
        if _placeholder(words[0]):
            return []
        sub = node.commands.get(words[0])
        if sub is None:
            return [f"`{' '.join(path)} {words[0]}` is not a command"]
        node, path, words = sub, path + [words[0]], words[1:]
    options = {name for param in node.params for name in (*param.opts, *param.secondary_opts)} | {"--help"}
    options |= {f"--{old}" for old in DEPRECATED_OPTIONS}
    out = []
    for position, word in enumerate(words):
        name = word.split("=")[0]
        if re.fullmatch(r"--?[A-Za-z][\w-]*", name) and name not in options:
            out.append(f"`{' '.join(path)}` has no option {name}")
        if name == "--method" and position + 1 < len(words):
            value = words[position + 1]
            if not _placeholder(value) and value not in list_methods():
                out.append(f"--method {value} is not a registered method")
    if path[1:2] == ["train"] and words and not words[0].startswith("-") and not _placeholder(words[0]):
        from evalsuite.training.recipe import default_registry

        if words[0] not in default_registry() and words[0] not in {"plans"}:
            out.append(f"`evalsuite train {words[0]}` is not a registered recipe")
    return out


def test_the_documents_hold_many_command_lines():
    commands = documented_commands()
    assert len(commands) > 100, len(commands)  # the extraction finds them (a broken regex would find none)
    assert any(c.text.startswith("evalsuite run --model Qwen/Qwen2.5-3B-Instruct") for c in commands)


def test_every_documented_command_option_and_method_exists():
    bad = [f"{c.where}: {c.text!r}: {problem}" for c in documented_commands() for problem in problems_of(c)]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize(("text", "problem"), [
    ("evalsuite run --method zerosearch --tasks nq", "--method zerosearch is not a registered method"),
    ("evalsuite tables runs/*", "`evalsuite tables` is not a command"),
    ("evalsuite data download --dest DATA --no-such-flag", "`evalsuite data download` has no option --no-such-flag"),
    ("evalsuite leaderboard frobnicate", "`evalsuite leaderboard frobnicate` is not a command"),
])
def test_the_check_catches_each_kind_of_wrong_name(text, problem):
    assert problems_of(DocumentedCommand("x", text)) == [problem]


def test_the_check_accepts_placeholders_and_retired_names():
    assert problems_of(DocumentedCommand("x", "evalsuite run --method METHOD --tasks nq -o runs/x")) == []
    assert problems_of(DocumentedCommand("x", "evalsuite data download --dest DATA")) == []


def test_the_readmes_list_of_methods_names_only_registered_methods():
    from evalsuite.agent.method import list_methods

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    listing = text[text.index("Methods (`evalsuite methods`):"):]
    listing = listing[: listing.index(".\n")]
    named = [name for name in re.findall(r"`([a-z0-9-]+)`", listing) if name != "evalsuite methods"]
    assert len(named) >= 11 and set(named) <= set(list_methods()), sorted(set(named) - set(list_methods()))
    assert set(list_methods()) <= set(named), sorted(set(list_methods()) - set(named))  # and every method is named

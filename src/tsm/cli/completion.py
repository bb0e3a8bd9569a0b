"""`tsm completion bash|zsh|fish`: a shell completion script for tsm (and kb), generated
from the CLI's own parser, so every command and flag completes as it is today.

bash and zsh come from shtab (a static script: a TAB press runs no Python); fish, which
shtab does not write, from the same parser walked here. Installed as docs/commands.md "Terminal
output" says: bash-completion and fish load a command's file by its name, so `kb` has its
own (fish ships a kb.fish of another program, which `kb` would otherwise complete as).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

SHELLS = ("bash", "zsh", "fish")
# Positional arguments that name files or folders complete as paths.
PATH_ARGUMENTS = frozenset({"paths", "path", "file", "doc"})


def register(sub: Any, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or fish)",
        description="Print a completion script for SHELL on stdout; see docs/commands.md "
        '"Terminal output" for where to put it.',
    )
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    print(script(args.parser, args.shell), end="")
    return 0


def script(parser: argparse.ArgumentParser, shell: str) -> str:
    offer_known_values(parser)
    if shell == "fish":
        return fish(parser)
    import shtab

    for _, command in subcommands(parser):
        for action in command._actions:
            if not action.option_strings and action.dest in PATH_ARGUMENTS:
                action.complete = shtab.FILE  # type: ignore[attr-defined]
            elif not action.option_strings and not action.choices:
                # Free text (search's query): zsh must complete nothing there. shtab's empty
                # action makes a message of it, and with a message beside them zsh lists the
                # flags instead of inserting the one a prefix names (`tsm search --ca`).
                action.complete = {"zsh": "_nothing"}  # type: ignore[attr-defined]
    # shtab ends its bash script without a newline: a line appended to it must start one, or
    # it joins shtab's own `complete … tsm` line and neither name gets completion.
    text = str(shtab.complete(parser, shell=shell)).rstrip("\n") + "\n"
    if shell == "bash":
        return text + "complete -o filenames -F _shtab_tsm kb\n"
    # zsh loads the file two ways: from $fpath, where its `#compdef` line names the commands
    # (the body then only runs on a TAB press), or sourced, where its `compdef` call does.
    return text.replace("#compdef tsm\n", "#compdef tsm kb\n", 1).replace(
        "compdef _shtab_tsm -N tsm\n", "compdef _shtab_tsm -N tsm kb\n", 1
    )


def offer_known_values(parser: argparse.ArgumentParser) -> None:
    """Flags whose values are checked after parsing (`--type`, for a clearer error than
    argparse's) get them as choices here, in this process only, so the scripts offer them."""
    from ..search.query import TYPES

    for _, command in subcommands(parser):
        for action in command._actions:
            if action.dest == "type" and action.option_strings and not action.choices:
                action.choices = TYPES


def subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """The listed subcommands (not the internal ones without help), each with its one-line
    help as the parser's `help` attribute read by `fish`."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, command in action.choices.items():
                if helps.get(name) in (None, argparse.SUPPRESS):
                    continue
                command.usage_help = helps[name]  # type: ignore[attr-defined]
                yield name, command


def fish(parser: argparse.ArgumentParser) -> str:
    """`complete` lines for fish: subcommands first, then each one's flags, their choices,
    and file names where an argument is a path."""
    lines = [
        "# tsm completion for fish: write it to ~/.config/fish/completions/tsm.fish and kb.fish",
        "complete -c kb -w tsm",
        "complete -c tsm -f",
        "complete -c tsm -n __fish_use_subcommand -s h -l help -d 'show help'",
        "complete -c tsm -n __fish_use_subcommand -l version -d 'show the version'",
    ]
    commands = list(subcommands(parser))
    for name, command in commands:
        lines.append(
            f"complete -c tsm -n __fish_use_subcommand -a {_quote(name)}"
            f" -d {_quote(_first_line(getattr(command, 'usage_help', '')))}"
        )
    for name, command in commands:
        when = f"-n {_quote('__fish_seen_subcommand_from ' + name)}"
        for action in command._actions:
            if action.help == argparse.SUPPRESS:
                continue
            if not action.option_strings:
                if action.dest in PATH_ARGUMENTS:
                    lines.append(f"complete -c tsm {when} -F")
                elif action.choices:
                    choices = " ".join(str(c) for c in action.choices)
                    lines.append(f"complete -c tsm {when} -x -a {_quote(choices)}")
                continue
            flags = " ".join(
                f"-s {o[1:]}" if len(o) == 2 else f"-l {o[2:]}" for o in action.option_strings
            )
            takes_value = action.nargs != 0
            extra = ""
            if action.choices:
                extra = f" -x -a {_quote(' '.join(str(c) for c in action.choices))}"
            elif takes_value:
                extra = " -r"
            helptext = _first_line(action.help or "")
            lines.append(f"complete -c tsm {when} {flags}{extra} -d {_quote(helptext)}")
    return "\n".join(lines) + "\n"


def _first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


def _quote(text: str) -> str:
    """A fish single-quoted word."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"

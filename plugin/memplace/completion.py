"""Shell completion for the `memplace` command, bash and zsh, read off its own parser.

`memplace completion bash` prints a script to source (`source <(memplace completion bash)`,
or save it as bash-completion's `memplace`); `memplace completion zsh` one for zsh's fpath
(as `_memplace`) or to source after `compinit`. Commands, their options and the bundled
board names come from the parser and the package, so the scripts never fall behind.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Iterable
from dataclasses import dataclass

SHELLS = ("bash", "zsh")


@dataclass(frozen=True)
class Command:
    name: str
    words: tuple[str, ...]
    """Its options and subcommands, and the bundled board names where it takes a board."""


def commands(parser: argparse.ArgumentParser, boards: Iterable[str]) -> list[Command]:
    """Every command of `parser` with what may follow it."""
    found = []
    boards = sorted(boards)
    for name, sub in _subcommands(parser).items():
        words: list[str] = [*_subcommands(sub)]
        takes_board = False
        for action in sub._actions:
            words += action.option_strings
            takes_board |= action.dest == "board"
        for inner in _subcommands(sub).values():
            takes_board |= any(action.dest == "board" for action in inner._actions)
        found.append(Command(name, tuple(words + (boards if takes_board else []))))
    return found


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def script(shell: str, parser: argparse.ArgumentParser, boards: Iterable[str]) -> str:
    """The completion script for `shell` (one of SHELLS)."""
    table = commands(parser, boards)
    top = [c.name for c in table]
    top += [o for action in parser._actions for o in action.option_strings]
    return (_bash if shell == "bash" else _zsh)(top, table)


def _bash(top: list[str], table: list[Command]) -> str:
    cases = "".join(
        f"    {command.name}) words={shlex.quote(' '.join(command.words))} ;;\n"
        for command in table
    )
    return f"""# bash completion for memplace: source <(memplace completion bash)
_memplace() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} command="" words="" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${{COMP_WORDS[i]}} in -*) ;; *) command=${{COMP_WORDS[i]}}; break ;; esac
  done
  if [ -z "$command" ]; then
    COMPREPLY=($(compgen -W {shlex.quote(" ".join(top))} -- "$cur"))
    return
  fi
  case $command in
{cases}  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}}
complete -o default -o bashdefault -F _memplace memplace
"""


def _zsh(top: list[str], table: list[Command]) -> str:
    cases = "".join(
        f"    {command.name}) choices=({' '.join(shlex.quote(w) for w in command.words)}) ;;\n"
        for command in table
    )
    return f"""#compdef memplace
# zsh completion for memplace: put it on $fpath as _memplace, or source it after compinit.
_memplace() {{
  local command="" word
  for word in ${{words[2,CURRENT-1]}}; do
    [[ $word != -* ]] && {{ command=$word; break }}
  done
  if [[ -z $command ]]; then
    compadd -- {" ".join(shlex.quote(word) for word in top)}
    return
  fi
  local -a choices
  case $command in
{cases}  esac
  compadd -- $choices
  _files
}}
compdef _memplace memplace
"""

"""The command line's spelling of an error: library settings named as the flags that set them.

Below :mod:`mpc_pca.cli` every message names a setting the way Python code
passes it (``dropout_threshold=3``, ``backend='he'``, ``insecure=True``,
``chunk_rows``). ``mpc-pca`` prints the same message with the flags a user of
the command line types (``--dropout-threshold 3``, ``--backend he``,
``--insecure``, ``--chunk-rows``). The table of flags is read from the parser
itself, so a new flag needs no entry here.

The rewriting is deliberately narrow, so that prose is never mangled:

- ``name=VALUE`` becomes ``--flag VALUE`` for every flag's destination
  ``name`` (a quoted VALUE loses its quotes when it has no blank);
  ``name=True`` becomes ``--flag`` for an on/off flag, ``name=False`` becomes
  ``--no-flag`` when the parser has it, and ``name=None`` becomes
  ``no --flag``;
- a bare ``name`` becomes ``--flag`` only when it holds an underscore
  (``chunk_rows``, ``n_components``): a single word such as ``data`` or
  ``model`` is ordinary English as often as it is a setting.

A name inside quotes, after a dot or inside a longer identifier is left alone.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache

from protocols.errors import InputValidationError, ProtocolError


@dataclass(frozen=True)
class Flag:
    """One command-line flag: how it is typed, and whether it takes a value.

    Attributes
    ----------
    spelling : str
        The long option, e.g. ``--chunk-rows``.
    negative : str or None
        The ``--no-...`` form of an on/off flag that has one.
    switch : bool
        Whether the flag takes no value (``--insecure``).
    """

    spelling: str
    negative: str | None = None
    switch: bool = False


def flag_table(parser: argparse.ArgumentParser) -> dict[str, Flag]:
    """Every long flag of ``parser`` and its subcommands, by the destination it sets.

    Examples
    --------
    >>> parser = argparse.ArgumentParser()
    >>> _ = parser.add_argument("--chunk-rows", type=int)
    >>> _ = parser.add_argument("--header", action=argparse.BooleanOptionalAction)
    >>> table = flag_table(parser)
    >>> table["chunk_rows"].spelling, table["header"].negative
    ('--chunk-rows', '--no-header')
    """
    table: dict[str, Flag] = {}
    for action in _actions(parser):
        longs = [option for option in action.option_strings if option.startswith("--")]
        if not longs or action.dest in table or action.dest == "help":
            continue
        negative = next((option for option in longs if option.startswith("--no-")), None)
        positive = next((option for option in longs if not option.startswith("--no-")), longs[0])
        table[action.dest] = Flag(positive, negative, switch=action.nargs == 0)
    return table


def _actions(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield from _actions(child)
        else:
            yield action


#: Where a protocol error starts quoting another party's report (:class:`protocols.runtime` aborts).
PEER_REPORT = " reported: "
_VALUE = r"'[^']*'|\"[^\"]*\"|\[[^\]]*\]|\([^)]*\)|[^\s,;)\]]+"
_BEFORE = r"(?<![\w.'\"-])"


def in_flag_terms(text: str, table: Mapping[str, Flag]) -> str:
    """``text`` with each setting it names spelled as the command-line flag that sets it.

    Parameters
    ----------
    text : str
        A message raised below :mod:`mpc_pca.cli`.
    table : mapping of str to Flag
        The flags by destination (:func:`flag_table`).

    Examples
    --------
    >>> table = {"chunk_rows": Flag("--chunk-rows"), "backend": Flag("--backend"),
    ...          "insecure": Flag("--insecure", switch=True), "header": Flag("--header", "--no-header", True)}
    >>> in_flag_terms("chunk_rows=0 needs backend='he', insecure=True and header=False", table)
    '--chunk-rows 0 needs --backend he, --insecure and --no-header'
    >>> in_flag_terms("read it in chunks (chunk_rows) or pass the header; 'chunk_rows' stays", table)
    "read it in chunks (--chunk-rows) or pass the header; 'chunk_rows' stays"
    """
    assigned, bare = _patterns(tuple(table))
    if assigned is None:
        return text
    text = assigned.sub(lambda match: _assignment(table[match.group(1)], match.group(2)), text)
    if bare is not None:
        text = bare.sub(lambda match: table[match.group(1)].spelling, text)
    return text


@cache
def _patterns(names: tuple[str, ...]) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    """The ``name=VALUE`` and bare-name patterns of a table's names, compiled once per table."""
    longest_first = sorted(map(re.escape, names), key=len, reverse=True)
    if not longest_first:
        return None, None
    assigned = re.compile(rf"{_BEFORE}(?<!announced )\b({'|'.join(longest_first)})=({_VALUE})")
    underscored = [name for name in longest_first if "_" in name]
    bare = re.compile(rf"{_BEFORE}\b({'|'.join(underscored)})\b(?![=\w-])") if underscored else None
    return assigned, bare


def _assignment(flag: Flag, value: str) -> str:
    if value == "None":
        return f"no {flag.spelling}"
    if flag.switch and value in ("True", "False"):
        if value == "True":
            return flag.spelling
        return flag.negative if flag.negative is not None else f"no {flag.spelling}"
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"" and value[1:-1] and " " not in value:
        value = value[1:-1]
    return f"{flag.spelling} {value}"


@cache
def command_line_flags() -> Mapping[str, Flag]:
    """The flags of ``mpc-pca`` and its subcommands (:func:`flag_table` of its parser), read once."""
    from mpc_pca.cli.app import build_parser

    return flag_table(build_parser())


def spell_as_flags(exc: BaseException) -> BaseException:
    """Rewrite ``exc``'s message in flag terms, in place, and return it (its type and fields stay).

    What a peer said is left as it said it: a protocol error's text from its
    first ``reported:`` on is another party's report, and ``X announced
    name=value`` is a party's announcement, not a flag of this command.
    """
    if not exc.args or not isinstance(exc.args[0], str):
        return exc
    text: str = exc.args[0]
    spelled = (
        own_words_as_flags(text)
        if isinstance(exc, ProtocolError)
        else in_flag_terms(text, command_line_flags())
    )
    exc.args = (spelled, *exc.args[1:])
    return exc


def own_words_as_flags(text: str) -> str:
    """``text`` in flag terms up to its first ``reported:`` (what follows is another party's report, as it said it)."""
    own, peer, rest = text.partition(PEER_REPORT)
    return in_flag_terms(own, command_line_flags()) + peer + rest


@contextmanager
def errors_in_flag_terms() -> Iterator[None]:
    """Re-raise a project error from the block with its message in flag terms (:func:`spell_as_flags`)."""
    try:
        yield
    except (InputValidationError, ProtocolError) as exc:
        spell_as_flags(exc)
        raise


__all__ = [
    "Flag",
    "command_line_flags",
    "errors_in_flag_terms",
    "flag_table",
    "in_flag_terms",
    "spell_as_flags",
]

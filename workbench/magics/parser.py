"""Parsing of ``%%stream`` / ``%stream`` input into command objects (pure: no Spark, no widgets).

The magic is parsed, then executed: :func:`parse` turns the magic's line (and cell body)
into one frozen command object (:class:`StartCommand`, :class:`ListCommand`,
:class:`StopCommand`, :class:`ShowCommand`, :class:`HistoryCommand`,
:class:`ResultCommand`, :class:`WatchCommand`), or raises IPython's ``UsageError`` with one line naming the bad
value. Option values are checked with :mod:`workbench.options`, so the magic and the
Python API reject the same values with the same words.

Whether a cell body is SQL or Python follows one documented rule
(:func:`detect_language`), which ``--sql`` / ``--python`` override.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import keyword
import re
import shlex
from dataclasses import dataclass
from typing import NoReturn, Union

from IPython.core.error import UsageError

from ..options import MAX_ROWS, SINKS, OUTPUT_MODES, Trigger, check_name, check_output_mode, check_rows, check_sink, parse_trigger

__all__ = [
    "StartCommand", "ListCommand", "StopCommand", "StepCommand", "ShowCommand", "HistoryCommand", "ResultCommand", "WatchCommand",
    "Command", "parse", "parse_cell", "parse_line", "detect_language", "sql_typo_hint", "help_text",
    "SQL_KEYWORDS", "SUBCOMMANDS",
]

#: First words that make a cell body SQL (see :func:`detect_language`).
SQL_KEYWORDS: tuple[str, ...] = ("select", "with", "from", "values", "table")
#: The ``%stream`` line-magic subcommands.
SUBCOMMANDS: tuple[str, ...] = ("list", "stop", "step", "show", "history", "result", "watch")


@dataclass(frozen=True)
class StartCommand:
    """``%%stream NAME [options]``: start (or replace) stream ``NAME`` from the cell body.

    Attributes
    ----------
    name : str
        The stream's name (checked with :func:`workbench.options.check_name`).
    body : str
        The cell body, stripped of surrounding blank lines.
    language : {"sql", "python"}
        How to read ``body``.
    sink : {"memory", "console"}
    output_mode : {"append", "update", "complete"} or None
        None: Spark's default.
    trigger : Trigger or None
        None: Spark's default (back-to-back batches).
    checkpoint : str or None
        None: a fresh private temporary folder.
    rows : int or None
        Rows per console batch and in the result preview; None: the magic's ``default_rows``.
    truncate : bool
        Truncate long cells in console tables (Spark's default).
    monitor : bool
        Show the live monitor (False: a one-line status).
    replay : str or None
        A variable holding a ``Replay``/``Script``/scenario, or a scenario name from
        ``workbench.scenarios``; the body is then the query over ``source``.
    input_watermarks : bool
        Measure each watermarked input's watermark (``handle.input_watermarks()``).
    """

    name: str
    body: str
    language: str
    sink: str = "memory"
    output_mode: str | None = None
    trigger: Trigger | None = None
    checkpoint: str | None = None
    rows: int | None = None
    truncate: bool = True
    monitor: bool = True
    replay: str | None = None
    input_watermarks: bool = False


@dataclass(frozen=True)
class ListCommand:
    """``%stream list``: the table of every stream (``workbench.streams()``)."""


@dataclass(frozen=True)
class StopCommand:
    """``%stream stop NAME`` or ``%stream stop --all`` (then ``name`` is None)."""

    name: str | None
    all: bool = False


@dataclass(frozen=True)
class StepCommand:
    """``%stream step NAME [N]``: run N more data batches (default 1) of a ``%%stream --replay`` panel."""

    name: str
    batches: int = 1


@dataclass(frozen=True)
class ShowCommand:
    """``%stream show NAME``: display the stream's live view again."""

    name: str


@dataclass(frozen=True)
class HistoryCommand:
    """``%stream history NAME [--operators]``: the per-batch progress table."""

    name: str
    operators: bool = False


@dataclass(frozen=True)
class ResultCommand:
    """``%stream result NAME``: the memory sink's table as a pandas DataFrame."""

    name: str


@dataclass(frozen=True)
class WatchCommand:
    """``%stream watch NAME`` or ``%stream watch --all``: monitor queries the workbench did not start.

    ``name`` is an active query's name or id (None with ``all``).
    """

    name: str | None
    all: bool = False


Command = Union[StartCommand, ListCommand, StopCommand, StepCommand, ShowCommand, HistoryCommand, ResultCommand, WatchCommand]

_EXAMPLES = """\
The cell body is SQL when its first word (after blank lines and -- comments) is
SELECT, WITH, FROM, VALUES or TABLE (any case) and the body is not valid Python;
otherwise it is Python run in the notebook's namespace, whose last line must be a
streaming DataFrame. --sql / --python decide explicitly. SQL reads temp views,
including streaming ones (df.createOrReplaceTempView("events")).

Re-running a cell replaces its stream; the new body is checked before the old stream stops.
A Python body may also end with the StreamingQuery its own code started
(df.writeStream...start()): the workbench watches that query and shows its monitor.

Examples
--------
%%stream counts --mode complete
SELECT value % 3 AS k, count(*) AS n FROM events GROUP BY k

%%stream evens --sink console --rows 5 --trigger "1 second"
df = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 10).load()
df.where("value % 2 = 0")

%%stream words --replay guide_word_count
# a body of only comments runs the scenario's own query; otherwise the body is the
# query over the replay's input: temp view `source` in SQL, variable `source` in Python

Line magics
-----------
%stream list                  every stream: status, batches, watermark, rates
%stream stop NAME             stop one stream
%stream stop --all            stop every stream
%stream step NAME [N]         N more batches (default 1) of a --replay panel, a line each
%stream show NAME             display the stream's live monitor again
%stream history NAME          per-batch progress (a pandas DataFrame): h = %stream history counts
%stream result NAME           the memory sink's table (a pandas DataFrame)
%stream watch NAME            the live monitor of a query started elsewhere (name or id)
%stream watch --all           the live monitor of every active query of the session

Settings: %config StreamMagics (e.g. %config StreamMagics.default_rows = 5)
"""


#: The most batches one ``%stream step NAME N`` runs (each restarts the query: about a second).
MAX_STEPS = 1000


class _Parser(argparse.ArgumentParser):
    """argparse that raises a one-line ``UsageError`` instead of printing usage and exiting."""

    def __init__(self, *args: object, magic: str = "%%stream", **kwargs: object) -> None:
        kwargs.setdefault("add_help", False)
        kwargs.setdefault("allow_abbrev", False)  # `--sin` must not silently mean `--sink`
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.magic = magic

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.magic}: {message} (see %%stream? for help)")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise UsageError(f"{self.magic}: {(message or 'bad arguments').strip()}")


def _start_parser() -> _Parser:
    parser = _Parser(
        prog="%%stream", usage="%%%%stream NAME [options]\n<SQL or Python query>",
        description="Start a streaming query from this cell and show its live view under the cell.",
        epilog=_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("name", metavar="NAME", help="stream name (letters, digits, _); also the memory table's name")
    parser.add_argument("--sink", default="memory", help=f"one of {', '.join(SINKS)} (default memory)")
    parser.add_argument("--mode", default=None,
                        help=f"output mode: one of {', '.join(OUTPUT_MODES)} (default: Spark's, append)")
    parser.add_argument("--trigger", nargs="+", default=None, metavar="TRIGGER",
                        help="'1 second', '500 ms', 'once' or 'available-now' (default: back-to-back batches)")
    parser.add_argument("--checkpoint", default=None, metavar="DIR",
                        help="checkpoint folder (default: a fresh temporary one)")
    parser.add_argument("--rows", default=None, metavar="N",
                        help="rows shown per console batch and in the result preview")
    parser.add_argument("--no-truncate", dest="truncate", action="store_false",
                        help="show long values in console tables in full")
    parser.add_argument("--no-monitor", dest="monitor", action="store_false",
                        help="print a one-line status instead of the live monitor")
    parser.add_argument("--replay", default=None, metavar="SOURCE",
                        help="run on a replay: a variable holding a Replay/Script/scenario, or a scenario "
                             "name such as guide_word_count; shows the replay panel")
    parser.add_argument("--input-watermarks", dest="input_watermarks", action="store_true",
                        help="measure each watermarked input's max event time and watermark per batch "
                             "(joins, unions): h = workbench.stream(NAME); h.input_watermarks()")
    language = parser.add_mutually_exclusive_group()
    language.add_argument("--sql", dest="language", action="store_const", const="sql",
                          help="read the body as SQL")
    language.add_argument("--python", dest="language", action="store_const", const="python",
                          help="read the body as Python")
    return parser


def _line_parser() -> _Parser:
    parser = _Parser(prog="%stream", magic="%stream")
    commands = parser.add_subparsers(dest="command", parser_class=_Parser)
    commands.add_parser("list", magic="%stream list")
    stop = commands.add_parser("stop", magic="%stream stop")
    stop.add_argument("name", nargs="?", default=None, metavar="NAME")
    stop.add_argument("--all", action="store_true")
    step = commands.add_parser("step", magic="%stream step")
    step.add_argument("name", metavar="NAME")
    step.add_argument("batches", nargs="?", default="1", metavar="N")
    commands.add_parser("show", magic="%stream show").add_argument("name", metavar="NAME")
    history = commands.add_parser("history", magic="%stream history")
    history.add_argument("name", metavar="NAME")
    history.add_argument("--operators", action="store_true")
    commands.add_parser("result", magic="%stream result").add_argument("name", metavar="NAME")
    watch = commands.add_parser("watch", magic="%stream watch")
    watch.add_argument("name", nargs="?", default=None, metavar="NAME")
    watch.add_argument("--all", action="store_true")
    return parser


def help_text() -> str:
    """The help shown by ``%%stream?``: options, the SQL/Python rule, examples.

    Examples
    --------
    >>> "--trigger" in help_text() and "%stream stop --all" in help_text()
    True
    """
    return _start_parser().format_help()


def _split(line: str, magic: str) -> list[str]:
    try:
        return shlex.split(line, comments=False, posix=True)
    except ValueError as exc:  # an unclosed quote
        raise UsageError(f"{magic}: cannot read the options ({exc}): {line.strip()!r}") from None


def _checked(check: object, value: object, magic: str) -> object:
    try:
        return check(value)  # type: ignore[operator]
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{magic}: {exc}") from None


def _parse_known(parser: _Parser, tokens: list[str]) -> argparse.Namespace:
    args, extra = parser.parse_known_args(tokens)
    if extra:
        unknown = extra[0]
        if unknown.startswith("-"):
            # A subcommand's options belong to its own parser (e.g. %stream history --operators).
            chosen = _chosen_subparser(parser, args) or parser
            options = sorted(o for a in chosen._actions for o in a.option_strings)
            allowed = ", ".join(options) or "none"
            raise UsageError(f"{chosen.magic}: unknown option {unknown!r}; options: {allowed}")
        raise UsageError(
            f"{parser.magic}: unexpected argument {unknown!r} (quote values that contain spaces)"
        )
    return args


def _chosen_subparser(parser: _Parser, args: argparse.Namespace) -> _Parser | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices.get(getattr(args, action.dest, None))
    return None


_SQL_COMMENT = re.compile(r"^\s*(--[^\n]*)?$")


def detect_language(body: str) -> str:
    """Decide whether a ``%%stream`` body is SQL or Python.

    The rule: a body is SQL when its first word, after blank lines and ``--`` comment
    lines, is SELECT, WITH, FROM, VALUES or TABLE (any case) **and** the body does not
    parse as Python; anything else is Python. (The second part keeps Python such as
    ``with open(path) as f: ...`` or ``select = df.select("a")`` from reading as SQL.)

    Examples
    --------
    >>> detect_language("SELECT * FROM events")
    'sql'
    >>> detect_language("-- counts\\nwith t AS (SELECT 1) SELECT * FROM t")
    'sql'
    >>> detect_language("df = spark.readStream.table('t')\\ndf")
    'python'
    >>> detect_language("select = df.select('a')\\nselect")
    'python'
    """
    first = _first_word(body)
    if first is None or first.group(1).lower() not in SQL_KEYWORDS:
        return "python"
    try:
        ast.parse(body)
    except SyntaxError:
        return "sql"
    return "python"


def sql_typo_hint(body: str) -> str | None:
    """Why a body that fails to parse as Python was read as Python, when it looks like misspelt SQL.

    For a body whose Python syntax error the magic reports: when its first word is close
    to one of :data:`SQL_KEYWORDS` and followed by what SQL puts there (a name, ``*``, a
    quote), one clause naming the word, the keyword it is close to and ``--sql``; else None
    (Python keywords, and words followed by ``=``, ``.``, ``(`` and other Python, are left
    alone).

    Examples
    --------
    >>> sql_typo_hint("SELEC word, count(*) FROM updates GROUP BY word")
    'read as Python because `SELEC` is not a SQL keyword; did you mean SELECT? `--sql` reads the body as SQL'
    >>> sql_typo_hint("selected = df.select(") is None
    True
    """
    first = _first_word(body)
    if first is None or not re.match(r"[ \t]+[\w*'\"`]", first.string[first.end():]):
        return None
    word = first.group(1)
    if word.lower() in SQL_KEYWORDS or keyword.iskeyword(word):
        return None
    close = difflib.get_close_matches(word.lower(), SQL_KEYWORDS, n=1)
    if not close:
        return None
    return (f"read as Python because `{word}` is not a SQL keyword; did you mean {close[0].upper()}? "
            "`--sql` reads the body as SQL")


def _first_word(body: str) -> re.Match[str] | None:
    """The body's first word, after blank lines, ``--`` comment lines and opening parentheses."""
    lines = body.splitlines()
    while lines and _SQL_COMMENT.match(lines[0]):
        lines.pop(0)
    return re.match(r"\s*\(*\s*([A-Za-z_]+)", "\n".join(lines))


def _is_blank(body: str) -> bool:
    """Whether a body holds no code: only blank lines and ``#`` or ``--`` comment lines."""
    return all(not line.strip() or line.strip().startswith(("#", "--")) for line in body.splitlines())


def _clean_body(cell: str) -> str:
    # Blank lines around the query are noise; inner layout (Python indentation) is kept.
    return "\n".join(cell.splitlines()).strip("\n").rstrip()


def parse_cell(line: str, cell: str) -> StartCommand:
    """Parse ``%%stream`` (the line after it and the cell body) into a :class:`StartCommand`.

    Raises
    ------
    IPython.core.error.UsageError
        One line naming the bad value: unknown option, missing name, empty body, a bad
        sink, mode, trigger or row count.

    Examples
    --------
    >>> cmd = parse_cell("counts --mode complete --trigger 1 second", "SELECT count(*) FROM events")
    >>> cmd.name, cmd.language, cmd.output_mode, cmd.trigger.text
    ('counts', 'sql', 'complete', '1 seconds')
    >>> parse_cell("words --replay guide_word_count", "# the scenario's query").body
    ''
    >>> parse_cell("counts --sink kafka", "SELECT 1")
    Traceback (most recent call last):
    ...
    IPython.core.error.UsageError: %%stream: unknown sink 'kafka': use one of memory, console
    """
    magic = "%%stream"
    tokens = _split(line, magic)
    if not tokens or tokens[0].startswith("-"):
        raise UsageError(
            f"{magic} needs a stream name first: %%stream NAME [options], e.g. %%stream word_counts --sink console"
        )
    args = _parse_known(_start_parser(), tokens)
    name = _checked(check_name, args.name, magic)
    sink = _checked(check_sink, args.sink, magic)
    mode = _checked(check_output_mode, args.mode, magic)
    trigger = None
    if args.trigger is not None:
        trigger = _checked(parse_trigger, " ".join(args.trigger), magic)
    rows = None
    if args.rows is not None:
        try:
            rows = check_rows(int(args.rows))
        except ValueError:
            raise UsageError(f"{magic}: rows must be a whole number from 1 to {MAX_ROWS}, got {args.rows!r}") from None
    checkpoint = args.checkpoint
    if checkpoint is not None and not checkpoint.strip():
        raise UsageError(f"{magic}: --checkpoint is empty: give a folder, or leave it out for a temporary one")
    body = _clean_body(cell or "")
    if args.replay is not None:
        if args.input_watermarks:
            raise UsageError(f"{magic}: --input-watermarks cannot be used with --replay: a replay restarts its query "
                             "at every step, which resets each input's watermark; start the query live instead")
        if trigger is not None or checkpoint is not None:
            option = "--trigger" if trigger is not None else "--checkpoint"
            raise UsageError(
                f"{magic}: {option} cannot be used with --replay: the replay panel's Play and Step "
                "buttons drive the query, on a checkpoint of its own"
            )
        if rows is not None or not args.truncate:
            option = "--rows" if rows is not None else "--no-truncate"
            raise UsageError(
                f"{magic}: {option} cannot be used with --replay: a replay's console shows each step's "
                "first 20 rows, cut at 20 characters (its results() has every row whole)"
            )
    elif _is_blank(body):
        raise UsageError(
            f"{magic} {name}: the cell is empty: write a SQL query, or Python whose last line is a "
            "streaming DataFrame, below the %%stream line"
        )
    if _is_blank(body):
        body = ""  # with --replay: the scenario's own query
    language = args.language or (detect_language(body) if body else "python")
    return StartCommand(
        name=str(name), body=body, language=language, sink=str(sink), output_mode=mode,  # type: ignore[arg-type]
        trigger=trigger, checkpoint=checkpoint, rows=rows, truncate=args.truncate,  # type: ignore[arg-type]
        monitor=args.monitor, replay=args.replay, input_watermarks=args.input_watermarks,
    )


def parse_line(line: str) -> Command:
    """Parse the ``%stream`` line magic into a command.

    Examples
    --------
    >>> parse_line("stop --all")
    StopCommand(name=None, all=True)
    >>> parse_line("history counts --operators")
    HistoryCommand(name='counts', operators=True)
    >>> parse_line("pause counts")
    Traceback (most recent call last):
    ...
    IPython.core.error.UsageError: %stream: unknown subcommand 'pause': use list, stop, step, show, history, result or watch (to start a stream, use %%stream NAME with the query in the cell)
    """
    magic = "%stream"
    tokens = _split(line, magic)
    hint = "(to start a stream, use %%stream NAME with the query in the cell)"
    choices = f"{', '.join(SUBCOMMANDS[:-1])} or {SUBCOMMANDS[-1]}"
    if not tokens:
        raise UsageError(f"{magic} needs a subcommand: {choices} {hint}")
    if tokens[0] not in SUBCOMMANDS:
        raise UsageError(f"{magic}: unknown subcommand {tokens[0]!r}: use {choices} {hint}")
    parser = _line_parser()
    args = _parse_known(parser, tokens)
    sub = f"{magic} {args.command}"
    if args.command == "list":
        return ListCommand()
    if args.command == "watch":
        if args.all and args.name is not None:
            raise UsageError(f"{sub}: give a query name or id, or --all, not both")
        if not args.all and not (args.name or "").strip():
            raise UsageError(f"{sub} needs the name or id of an active streaming query, or --all for every one")
        return WatchCommand(None, all=True) if args.all else WatchCommand(args.name.strip())
    if args.command == "stop":
        if args.all and args.name is not None:
            raise UsageError(f"{sub}: give a stream name or --all, not both")
        if not args.all and args.name is None:
            raise UsageError(f"{sub} needs a stream name, or --all to stop every stream")
        if args.all:
            return StopCommand(None, all=True)
        return StopCommand(str(_checked(check_name, args.name, sub)))
    name = str(_checked(check_name, args.name, sub))
    if args.command == "step":
        batches = args.batches.strip()
        if not (batches.isascii() and batches.isdigit()) or not 1 <= int(batches) <= MAX_STEPS:
            raise UsageError(f"{sub}: N must be a whole number of batches from 1 to {MAX_STEPS}, got {args.batches!r}")
        return StepCommand(name, int(batches))
    if args.command == "show":
        return ShowCommand(name)
    if args.command == "history":
        return HistoryCommand(name, operators=args.operators)
    return ResultCommand(name)


def parse(line: str, cell: str | None = None) -> Command:
    """Parse a ``%stream`` line magic (``cell`` None) or a ``%%stream`` cell magic.

    Examples
    --------
    >>> parse("list")
    ListCommand()
    >>> parse("q", "SELECT * FROM events").language
    'sql'
    """
    if cell is None:
        return parse_line(line)
    return parse_cell(line, cell)

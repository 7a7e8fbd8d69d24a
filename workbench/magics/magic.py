"""The ``%%stream`` / ``%stream`` IPython magics: thin glue from parsed commands to the workbench.

:class:`StreamMagics` parses its input with :mod:`workbench.magics.parser`, builds the
streaming DataFrame from the cell body (SQL over temp views, or Python evaluated in the
user's namespace), starts it through the current :class:`~workbench.spark.Workbench` and
displays the stream's live monitor under the cell. Settings are traitlets, changeable
with ``%config StreamMagics.<name> = value``.

Anything a user can get wrong ends as one ``UsageError`` line (Spark's analysis messages
reduced with :func:`workbench.errors.summarize_error`), never a Py4J traceback.
"""

from __future__ import annotations

import ast
import logging
from typing import Any, Callable

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.display import display
from traitlets import Bool, Float, Int, TraitError, validate

from ..errors import JAVA_CALL, QUERY_FAILED, summarize_error
from ..options import MAX_ROWS, check_rows, check_seconds
from ..replay import scenarios
from ..replay.scenarios import Scenario
from ..replay.spec import Replay, Script
from ..spark import current_env
from ..spark.starting import check_streaming_frame
from ..spark.version_gaps import missing_feature
from ..spark.watch import is_streaming_query
from ..views.console import CellConsole, cell_console
from .parser import (
    Command, HistoryCommand, ListCommand, ResultCommand, ShowCommand, StartCommand, StepCommand, StopCommand,
    WatchCommand,
    help_text, parse, sql_typo_hint,
)

__all__ = ["StreamMagics"]

log = logging.getLogger(__name__)

_FILENAME = "<%%stream cell>"




def _one_line(exc: BaseException) -> str:
    """Spark's or Python's error as one line (a raw Py4J error: the Java exception's own line)."""
    return _named(exc)[1]


def _named(exc: BaseException) -> tuple[str, str]:
    """(exception name, one-line message); for a raw Py4J error, the Java exception's."""
    text, name = str(exc), type(exc).__name__
    match = JAVA_CALL.match(text)
    if match:  # "An error occurred while calling o1.load.\n: org.x.SomeException: message"
        if match.group(1):
            name = match.group(1).rsplit(".", 1)[-1]
        text = text[match.end():]
    return name, summarize_error(text) or name


@magics_class
class StreamMagics(Magics):
    """``%%stream NAME [options]`` starts a streaming query; ``%stream ...`` lists, stops, shows.

    Registered by ``%load_ext workbench``. See ``%%stream?`` for the options.

    Examples
    --------
    >>> %load_ext workbench                                     # doctest: +SKIP
    >>> %config StreamMagics.default_rows = 5                   # doctest: +SKIP
    """

    poll_interval = Float(
        0.5, help="Seconds between progress polls of streams started by %%stream."
    ).tag(config=True)
    default_rows = Int(
        20, help="Rows shown per console batch and in the result preview when --rows is not given."
    ).tag(config=True)
    monitor_window = Int(60, help="Batches the live monitor's charts show (the history keeps them all).").tag(
        config=True
    )
    truncate = Bool(True, help="Truncate long values in console tables (Spark's default); --no-truncate overrides.").tag(
        config=True
    )

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        #: The view last displayed for each stream (monitor, replay panel or status text).
        self.views: dict[str, Any] = {}
        #: Further views of a stream (``%stream show``, ``%stream watch``) and each stream's
        #: console, by name: closed with the cell's view when the stream is replaced.
        self._more_views: dict[str, list[Any]] = {}
        #: Replay panels by stream name (a re-run closes the previous one).
        self.panels: dict[str, Any] = {}
        #: The query each cell's own code started (by the cell's stream name), stopped on a re-run.
        self.cell_queries: dict[str, Any] = {}

    @validate("poll_interval")
    def _check_interval(self, proposal: Any) -> float:
        try:
            return check_seconds("poll_interval", proposal["value"])
        except ValueError as exc:
            raise TraitError(str(exc)) from None

    @validate("default_rows")
    def _check_rows(self, proposal: Any) -> int:
        try:
            return check_rows(proposal["value"])
        except ValueError:
            raise TraitError(f"default_rows must be a whole number from 1 to {MAX_ROWS}, got {proposal['value']!r}") from None

    @validate("monitor_window")
    def _check_positive(self, proposal: Any) -> int:
        if proposal["value"] < 1:
            raise TraitError(f"{proposal['trait'].name} must be a positive whole number, got {proposal['value']!r}")
        return proposal["value"]

    # -- entry point ----------------------------------------------------------------------------

    @line_cell_magic
    def stream(self, line: str, cell: str | None = None) -> Any:
        command = parse(line, cell)
        return self.execute(command)

    stream.__doc__ = help_text()

    def execute(self, command: Command) -> Any:
        """Run a parsed command; returns a DataFrame for list/history/result, else None."""
        actions: dict[type, Callable[[Any], Any]] = {
            StartCommand: self._start,
            ListCommand: lambda _c: current_env().streams(),
            StopCommand: self._stop,
            StepCommand: self._step,
            ShowCommand: self._show,
            HistoryCommand: lambda c: self._handle(c.name, "history").history(operators=c.operators),
            ResultCommand: self._result,
            WatchCommand: self._watch,
        }
        return actions[type(command)](command)

    # -- line magics --------------------------------------------------------------------------------

    def _handle(self, name: str, what: str) -> Any:
        try:
            return current_env().get(name)
        except ValueError as exc:
            raise UsageError(f"%stream {what}: {exc}") from None

    def _stop(self, command: StopCommand) -> None:
        if command.all:
            self.stop_everything()
            return
        panel = self.panels.get(command.name or "")
        if panel is not None:
            try:
                panel.run.pause()
            except RuntimeError as exc:  # ReplayError: the play run it stopped had failed
                raise UsageError(f"%stream stop {command.name}: {exc}") from None
            return
        self._handle(command.name or "", "stop").stop()

    def _step(self, command: StepCommand) -> None:
        """Run the batches as the panel's Step button would, printing each step's report line."""
        panel = self.panels.get(command.name)
        if panel is None:
            self._handle(command.name, "step")  # no stream of that name: its own line
            raise UsageError(f"%stream step: {command.name!r} is not a %%stream --replay panel, which step runs "
                             "(a panel built in Python steps with panel.step(); a live stream with its trigger)")
        for _ in range(command.batches):
            try:
                print(panel.step())
            except RuntimeError as exc:  # ReplayError: the run failed, was closed, or its batch timed out
                raise UsageError(f"%stream step {command.name}: {exc}") from None

    def _show(self, command: ShowCommand) -> None:
        if command.name in self.panels:
            display(self.panels[command.name])
            return
        handle = self._handle(command.name, "show")
        view = handle.monitor(rows=self.default_rows, window=self.monitor_window)
        self._keep_view(command.name, view)
        display(view)

    def _result(self, command: ResultCommand) -> Any:
        if command.name in self.panels:
            return self.panels[command.name].results()
        handle = self._handle(command.name, "result")
        try:
            return handle.result()
        except ValueError as exc:
            raise UsageError(f"%stream result: {exc}") from None
        except Exception as exc:
            raise UsageError(f"%stream result {command.name}: {_one_line(exc)}") from None

    def _watch(self, command: WatchCommand) -> None:
        env = current_env()
        if command.all:
            handles = env.watch_all()
            if not handles:
                print("no active streaming query in this session")
                return
        else:
            try:
                handles = [env.watch(command.name)]
            except (TypeError, ValueError) as exc:
                raise UsageError(f"%stream watch: {exc}") from None
        for handle in handles:
            print(_watch_line(handle))
            view = handle.monitor(rows=self.default_rows, window=self.monitor_window)
            self._keep_view(handle.name, view)
            display(view)

    def stop_everything(self, grace: float = 1.0) -> None:
        """Stop every stream and close every replay panel (``%stream stop --all``, shutdown).

        ``grace``: see :meth:`~workbench.spark.Workbench.stop_all` (0 at kernel shutdown).
        """
        # Pausing reports what the run did (Spark jobs): not at shutdown, where stopping is enough.
        for name, panel in list(self.panels.items()) if grace > 0 else []:
            try:
                panel.run.pause()
            except Exception:
                log.debug("pausing replay %s failed", name, exc_info=True)
        current_env().stop_all(grace)

    # -- %%stream -----------------------------------------------------------------------------------

    def _start(self, command: StartCommand) -> None:
        if command.replay is not None:
            self._start_replay(command)
            return
        env = current_env()
        rows = command.rows or self.default_rows
        self._stop_cell_query(command.name)
        df = self._frame(command, env)
        if is_streaming_query(df):
            self._watch_cell_query(command, df, rows)
            return
        # Created before the start (shown after it succeeds) so that every batch lands in
        # an output area owned by this cell, whichever thread Spark renders it on.
        console = cell_console(display_now=False) if command.sink == "console" else None
        self._close_panel(command.name)
        try:
            handle = env.start(
                df, command.name, sink=command.sink, output_mode=command.output_mode, trigger=command.trigger,
                checkpoint=command.checkpoint, rows=rows, truncate=command.truncate and self.truncate,
                console=console, poll_interval=self.poll_interval, input_watermarks=command.input_watermarks,
            )
        except (TypeError, ValueError) as exc:  # StreamStartError is a ValueError, already one line
            raise UsageError(f"%%stream {command.name}: {exc}") from None
        except Exception as exc:
            log.debug("starting %s failed", command.name, exc_info=True)
            raise UsageError(f"%%stream {command.name}: {_one_line(exc)}") from None
        self._show_under_cell(handle, command.monitor, rows, command.name)
        if isinstance(console, CellConsole):
            self._more_views.setdefault(command.name, []).append(console)
            display(console.widget)
            handle.on_finished(console.finish)

    def _frame(self, command: StartCommand, env: Any) -> Any:
        """The streaming DataFrame the cell describes."""
        if command.language == "sql":
            df = self._sql(command.body, env.session(), command.name)
        else:
            _renew_dead_spark(self.shell, env)
            df = self._python(command.body, command.name)
            if is_streaming_query(df):
                return df  # the cell's code started its own query: watched, see _watch_cell_query
        try:
            check_streaming_frame(df)
        except (TypeError, ValueError) as exc:
            what = "the SQL query" if command.language == "sql" else "the cell's last value"
            raise UsageError(f"%%stream {command.name}: {what} is not a streaming DataFrame: {exc}") from None
        return df

    @staticmethod
    def _sql(body: str, spark: Any, name: str) -> Any:
        try:
            return spark.sql(body.strip().rstrip(";"))
        except Exception as exc:  # pyspark's ParseException / AnalysisException, with the plan
            raise UsageError(f"%%stream {name}: SQL error: {_one_line(exc)}") from None

    def _python(self, body: str, name: str, extra: dict[str, Any] | None = None) -> Any:
        """Run all but the last statement in the user's namespace and return the last expression."""
        code = self.shell.transform_cell(body) if self.shell is not None else body
        try:
            tree = ast.parse(code, filename=_FILENAME)
        except SyntaxError as exc:
            hint = sql_typo_hint(body)
            raise UsageError(f"%%stream {name}: Python syntax error on line {exc.lineno}: {exc.msg}"
                             + (f" ({hint})" if hint else "")) from None
        if not tree.body or not isinstance(tree.body[-1], ast.Expr):
            raise UsageError(
                f"%%stream {name}: the cell's last line must be an expression giving a streaming DataFrame "
                "(e.g. a line with just `df`), or the StreamingQuery the cell started, not a statement"
            )
        *head, last = tree.body
        namespace = self.shell.user_ns if self.shell is not None else {}
        saved = {key: namespace[key] for key in (extra or {}) if key in namespace}
        namespace.update(extra or {})
        try:
            if head:
                exec(compile(ast.Module(body=head, type_ignores=[]), _FILENAME, "exec"), namespace)
            return eval(compile(ast.Expression(body=last.value), _FILENAME, "eval"), namespace)
        except UsageError:
            raise
        except Exception as exc:
            log.debug("%%%%stream %s: the cell failed", name, exc_info=True)
            gap = missing_feature(exc)  # an API this pyspark is too old for: say which release has it
            if gap is not None:
                raise UsageError(f"%%stream {name}: the cell failed: {gap}") from None
            kind, message = _named(exc)
            raise UsageError(f"%%stream {name}: the cell failed: {kind}: {message}") from None
        finally:
            for key in extra or {}:
                if key in saved:
                    namespace[key] = saved[key]
                else:
                    namespace.pop(key, None)

    def _stop_cell_query(self, name: str) -> None:
        """On a re-run, stop the query this cell's own code started last time (it would clash)."""
        handle = self.cell_queries.pop(name, None)
        if handle is not None and handle.status == "active":
            handle.stop()
            print(f"stopped query {handle.name!r}, which this cell's code started on its previous run")

    def _watch_cell_query(self, command: StartCommand, query: Any, rows: int) -> None:
        """The cell's code started a query itself (its last value): watch it, never leave it hidden."""
        env = current_env()
        for previous in env.handles():  # the stream this cell started before, from a DataFrame: replaced
            if (previous.name == command.name and previous.started_by == "workbench"
                    and previous.run_id != str(query.runId) and previous.status == "active"):
                previous.stop()
                print(f"stopped stream {command.name!r}, which this cell started on its previous run")
        try:
            handle = env.watch(query, poll_interval=self.poll_interval, started_by="cell", name=command.name)
        except (TypeError, ValueError) as exc:
            raise UsageError(f"%%stream {command.name}: {exc}") from None
        self.cell_queries[command.name] = handle
        print(
            f"stream {handle.name!r}: the cell's code started this query itself ({handle.sink} sink); "
            f"the workbench watches it (%stream stop {handle.name} stops it; --sink, --mode and --trigger "
            "apply only to DataFrames the workbench starts)"
        )
        self._show_under_cell(handle, command.monitor, rows, handle.name)

    def _keep_view(self, name: str, view: Any) -> None:
        """``view`` is the newest of stream ``name``; the one it follows still shows (another cell)."""
        previous = self.views.get(name)
        if hasattr(previous, "close") and previous is not self.panels.get(name):  # a panel closes on its own
            self._more_views.setdefault(name, []).append(previous)
        self.views[name] = view

    def _close_views(self, name: str) -> None:
        """Close every view of stream ``name`` (it is being replaced), so that its widgets do not pile up."""
        for view in [self.views.pop(name, None), *self._more_views.pop(name, [])]:
            if hasattr(view, "close") and view is not self.panels.get(name):
                view.close()

    def _show_under_cell(self, handle: Any, monitor: bool, rows: int, key: str) -> None:
        """The live monitor under the cell, or (``--no-monitor``) a one-line status."""
        self._close_views(key)  # those of the stream this one replaced
        if monitor:
            view: Any = handle.monitor(rows=rows, window=self.monitor_window)
            display(view)
        else:
            view = _status_line(handle)
            print(view)
        self.views[key] = view

    # -- --replay -------------------------------------------------------------------------------------

    def _replay_source(self, spec: str) -> tuple[Any, Any, str | None]:
        """(source, scenario query or None, scenario output mode or None) for ``--replay spec``."""
        namespace = self.shell.user_ns if self.shell is not None else {}
        value = namespace.get(spec)
        if isinstance(value, Scenario):
            return value.source, value.query, value.output_mode
        if isinstance(value, (Replay, Script)):
            return value, None, None
        if value is None and spec in scenarios.SCENARIOS:
            scenario = scenarios.get(spec)
            return scenario.source, scenario.query, scenario.output_mode
        got = f" ({spec} is a {type(value).__name__})" if value is not None else ""
        raise UsageError(
            f"%%stream: unknown replay source {spec!r}{got}: give a variable holding a workbench.Replay, "
            f"workbench.Script or scenario, or a scenario name: {', '.join(scenarios.SCENARIOS)}"
        )

    def _replay_query(self, command: StartCommand, spark: Any) -> Callable[[Any], Any]:
        if command.language == "sql":
            def sql_query(source_df: Any) -> Any:
                if _users_source(spark):
                    raise UsageError(
                        f"%%stream {command.name}: a table or view named source is the user's (spark.table('source') "
                        "reads it), and a replay's SQL reads its input as the temp view source, which would replace "
                        "it: rename yours, or write the query in Python (variable `source`)")
                source_df.createOrReplaceTempView("source")
                return self._sql(command.body, spark, command.name)

            return sql_query

        def python_query(source_df: Any) -> Any:
            return self._python(command.body, command.name, extra={"source": source_df})

        return python_query

    def _start_replay(self, command: StartCommand) -> None:
        from ..replay_api import replay_panel

        source, scenario_query, scenario_mode = self._replay_source(command.replay or "")
        if command.body.strip():
            query: Any = self._replay_query(command, current_env().session())
        elif scenario_query is not None:
            query = scenario_query
        else:
            raise UsageError(
                f"%%stream {command.name}: the cell is empty: write the query over the replay's input "
                "(temp view `source` in SQL, variable `source` in Python)"
            )
        # The new panel first (it runs the body and Spark's checks, and starts no query): a
        # body that fails leaves the stream or panel it would replace as it was.
        try:
            panel = replay_panel(
                source, query, name=command.name, output_mode=command.output_mode or scenario_mode,
                sink=command.sink, monitor=command.monitor,
            )
        except UsageError as exc:
            raise UsageError(str(exc).replace(QUERY_FAILED, "")) from None
        except Exception as exc:
            log.debug("replay %s failed", command.name, exc_info=True)
            raise UsageError(f"%%stream {command.name}: {_one_line(exc)}") from None
        try:
            self._close_panel(command.name)
            current_env().stop(command.name, missing_ok=True)
        except BaseException:
            panel.close()
            raise
        self._close_views(command.name)  # the replaced stream's, once the panel stands (a typo keeps them)
        self.panels[command.name] = panel
        self.views[command.name] = panel
        display(panel)

    def _close_panel(self, name: str) -> None:
        panel = self.panels.pop(name, None)
        if panel is not None:
            if self.views.get(name) is panel:
                del self.views[name]
            panel.close()


def _watch_line(handle: Any) -> str:
    who = {"workbench": "started by the workbench", "cell": "started by a %%stream cell's code"}.get(
        handle.started_by, "started outside the workbench"
    )
    line = f"watching {handle.name!r} ({who}; {handle.sink} sink, {handle.status}"
    if handle.history_note:
        line += f"; {handle.history_note}"
    return line + f"); %stream stop {handle.name} stops it"


def _status_line(handle: Any) -> str:
    mode = handle.output_mode or "append"
    return (
        f"stream {handle.name!r} {handle.status}: {handle.sink} sink, {mode} mode, trigger {handle.trigger} "
        f"(%stream show {handle.name} for the monitor, %stream stop {handle.name} to stop)"
    )


def _renew_dead_spark(shell: Any, env: Any) -> None:
    """Point the notebook's ``spark`` at a new session when its JVM has died.

    Otherwise a cell body such as ``spark.readStream...`` would keep failing with
    connection errors although the workbench can build a new session.
    """
    from ..spark.session_end import spark_is_gone

    namespace = getattr(shell, "user_ns", None) or {}
    spark = namespace.get("spark")
    if getattr(spark, "_sc", None) is not None and spark_is_gone(spark):
        namespace["spark"] = env.session()


def _users_source(spark: Any) -> bool:
    """Whether ``source`` names a table or view of the user's (a replay cell's own is a streaming view)."""
    try:
        return bool(spark.catalog.tableExists("source")) and not spark.table("source").isStreaming
    except Exception:  # unreadable (a view over a dropped table): not ours to judge
        return False

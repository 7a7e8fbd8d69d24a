"""The ``%%stream`` / ``%stream`` magics: the pure parser, then the magics on a real IPython shell
against real Spark (SQL and Python bodies, every option, re-runs, line magics, bad input)."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

from workbench.magics.parser import (
    HistoryCommand, ListCommand, ResultCommand, ShowCommand, StartCommand, StepCommand, StopCommand, WatchCommand, detect_language,
    help_text, parse, sql_typo_hint,
)
from workbench.options import parse_trigger
from tests.helpers import wait_for

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


# -- the parser (pure, no Spark) -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "body", "expected"),
    [
        ("counts", "SELECT * FROM events",
         StartCommand("counts", "SELECT * FROM events", "sql")),
        ("counts --sink Console --mode UPDATE --rows 5 --no-monitor --no-truncate", "df",
         StartCommand("counts", "df", "python", sink="console", output_mode="update", rows=5, monitor=False,
                      truncate=False)),
        ("q --trigger 1 second", "df", StartCommand("q", "df", "python", trigger=parse_trigger("1 second"))),
        ('q --trigger "500 ms"', "df", StartCommand("q", "df", "python", trigger=parse_trigger("500 ms"))),
        ("q --trigger once", "df", StartCommand("q", "df", "python", trigger=parse_trigger("once"))),
        ("q --trigger available-now", "df", StartCommand("q", "df", "python", trigger=parse_trigger("available-now"))),
        ("q --checkpoint '/tmp/my ckpt'", "df", StartCommand("q", "df", "python", checkpoint="/tmp/my ckpt")),
        ("q --sql", "events_view", StartCommand("q", "events_view", "sql")),
        ("q --python", "select(x)", StartCommand("q", "select(x)", "python")),
        ("q --replay guide_word_count", "", StartCommand("q", "", "python", replay="guide_word_count")),
        ("q --replay guide_word_count", "# scenario query\n", StartCommand("q", "", "python", replay="guide_word_count")),
        ("q --replay src", "SELECT * FROM source", StartCommand("q", "SELECT * FROM source", "sql", replay="src")),
        # Blank lines around the body go; Python indentation inside it stays.
        ("q", "\n\nif True:\n    x = df\nx\n\n", StartCommand("q", "if True:\n    x = df\nx", "python")),
    ],
)
def test_cell_parses_into_a_start_command(line, body, expected):
    assert parse(line, body) == expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("list", ListCommand()),
        ("stop counts", StopCommand("counts")),
        ("stop --all", StopCommand(None, all=True)),
        ("step guide", StepCommand("guide")),
        ("step guide 3", StepCommand("guide", 3)),
        ("show counts", ShowCommand("counts")),
        ("history counts", HistoryCommand("counts")),
        ("history counts --operators", HistoryCommand("counts", operators=True)),
        ("result counts", ResultCommand("counts")),
        ("watch files", WatchCommand("files")),
        ("watch 0f3c-11aa", WatchCommand("0f3c-11aa")),
        ("watch --all", WatchCommand(None, all=True)),
    ],
)
def test_line_parses_into_a_command(line, expected):
    assert parse(line) == expected


@pytest.mark.parametrize(
    ("line", "body", "fragment"),
    [
        ("q --sinkk memory", "df", "unknown option '--sinkk'"),
        ("q --sin memory", "df", "unknown option '--sin'"),  # no silent abbreviations
        ("", "df", "needs a stream name"),
        ("--sink console", "df", "needs a stream name"),
        ("q", "  \n\n ", "the cell is empty"),
        ("q", "# only a comment\n-- and another", "the cell is empty"),
        ("my-stream", "df", "bad stream name 'my-stream'"),
        ("q --sink kafka", "df", "unknown sink 'kafka': use one of memory, console"),
        ("q --mode sometimes", "df", "unknown output mode 'sometimes'"),
        ("q --trigger soon", "df", "unknown trigger 'soon'"),
        ("q --trigger 0 seconds", "df", "trigger interval must be positive"),
        ('q --trigger "continuous 1 second"', "df", "trigger 'continuous 1 second' is refused: Spark's continuous "
                                                   "mode keeps one task per source partition running"),
        ("q --rows 0", "df", "rows must be a whole number from 1 to 2147483647, got '0'"),
        ("q --rows many", "df", "rows must be a whole number from 1 to 2147483647, got 'many'"),
        ("q --rows", "df", "--rows: expected one argument"),
        ("q --trigger '1 second", "df", "cannot read the options"),
        ("q extra", "df", "unexpected argument 'extra'"),
        ("q --sql --python", "df", "not allowed with argument --sql"),
        ("q --checkpoint ''", "df", "--checkpoint is empty"),
        ("q --replay x --trigger once", "", "--trigger cannot be used with --replay"),
        ("q --replay x --sink console --rows 5", "", "--rows cannot be used with --replay"),
        ("q --replay x --sink console --no-truncate", "", "--no-truncate cannot be used with --replay"),
        ("q --trigger '1.5 ms'", "df", "trigger interval '1.5 ms' is not a whole number of milliseconds"),
    ],
)
def test_bad_cell_input_is_one_usage_line(line, body, fragment):
    with pytest.raises(UsageError) as info:
        parse(line, body)
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("", "needs a subcommand: list, stop, step, show, history, result or watch"),
        ("step", "required: NAME"),
        ("step q 0", "N must be a whole number of batches from 1 to 1000, got '0'"),
        ("step q two", "N must be a whole number of batches from 1 to 1000, got 'two'"),
        ("step q ²", "N must be a whole number of batches from 1 to 1000, got '²'"),
        ("step q 2 3", "unexpected argument '3'"),
        ("watch", "needs the name or id of an active streaming query, or --all"),
        ("watch q --all", "not both"),
        ("pause q", "unknown subcommand 'pause'"),
        ("stop", "needs a stream name, or --all"),
        ("stop q --all", "not both"),
        ("show", "required: NAME"),
        ("history q --ops", "unknown option '--ops'"),
        ("result my-q", "bad stream name 'my-q'"),
        ("list everything", "unexpected argument 'everything'"),
    ],
)
def test_bad_line_input_is_one_usage_line(line, fragment):
    with pytest.raises(UsageError) as info:
        parse(line)
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("body", "language"),
    [
        ("SELECT * FROM events", "sql"),
        ("select value from events", "sql"),
        ("  -- a comment\n\nWITH t AS (SELECT * FROM events) SELECT * FROM t", "sql"),
        ("FROM events SELECT value", "sql"),
        ("TABLE events", "sql"),
        ("(SELECT 1) UNION (SELECT 2)", "sql"),
        ("SELEC * FROM events", "python"),  # not a SQL keyword: Python (and a Python syntax error)
        ("df = spark.readStream.table('events')\ndf", "python"),
        ("select = df.select('value')\nselect", "python"),        # valid Python wins
        ("with open('f') as fh:\n    pass\ndf", "python"),
        ("events_df", "python"),
    ],
)
def test_sql_or_python(body, language):
    assert detect_language(body) == language


@pytest.mark.parametrize(
    ("body", "keyword"),
    [
        ("SELEC word, count(*) FROM updates GROUP BY word", "SELECT"),
        ("slect * FROM events", "SELECT"),
        ("-- counts\nWTIH t AS (SELECT 1) SELECT * FROM t", "WITH"),
        ("FORM events SELECT value", "FROM"),
        ("TABEL events", "TABLE"),
        ("selected = df.select(", None),          # Python with a mistake of its own
        ("selec.where('x > 1'", None),
        ("SELECT * FORM events", None),           # a SQL keyword: only --python reads it as Python
        ("form x y", "FROM"),
        ("for x y", None),                        # a Python keyword
        ("df = (", None),
    ],
)
def test_misspelt_sql_keyword_is_named_with_the_sql_switch(body, keyword):
    hint = sql_typo_hint(body)
    if keyword is None:
        assert hint is None
    else:
        assert hint.endswith(f"did you mean {keyword}? `--sql` reads the body as SQL") and "\n" not in hint


def test_help_has_every_option_and_examples():
    text = help_text()
    for option in ("--sink", "--mode", "--trigger", "--checkpoint", "--rows", "--no-monitor", "--replay",
                   "--sql", "--python", "%stream list", "%stream stop --all", "%stream history", "Examples"):
        assert option in text
    assert text.startswith("usage: %%stream NAME")


# -- the magics on a real shell and real Spark -----------------------------------------------------


@pytest.fixture(scope="module")
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "workbench")
    yield ip
    ip.run_line_magic("unload_ext", "workbench")


@pytest.fixture
def magics(shell, env, spark, rate_stream):
    """The shell's StreamMagics, with `spark` and a streaming temp view `events` defined."""
    shell.user_ns["spark"] = spark
    rate_stream(rows_per_batch=3).createOrReplaceTempView("events")
    spark.range(5).createOrReplaceTempView("static_numbers")
    instance = shell.magics_manager.registry["StreamMagics"]
    saved = {name: getattr(instance, name) for name in ("default_rows", "monitor_window", "poll_interval")}
    yield instance
    for name, value in saved.items():
        setattr(instance, name, value)
    for view in list(instance.views.values()):
        view.close() if hasattr(view, "close") else None
    instance.views.clear()
    for name in list(instance.panels):
        instance.panels.pop(name).close()


def widget_views(captured) -> list[str]:
    return [o.data[WIDGET_VIEW]["model_id"] for o in captured.outputs if WIDGET_VIEW in o.data]


RATE = "spark.readStream.format('rate-micro-batch').option('rowsPerBatch', {rows}).load()"


@pytest.mark.spark
def test_sql_cell_starts_a_memory_stream_and_shows_its_monitor(shell, magics, spark, env):
    from workbench.views.monitor import StreamMonitor

    with capture_output() as captured:
        result = shell.run_cell_magic(
            "stream", "counts --mode complete --rows 2 --trigger '0.5 seconds'",
            "SELECT value % 3 AS k, count(*) AS n\nFROM events GROUP BY k;\n",
        )
    assert result is None  # nothing echoed as Out[n]: the view is under the cell
    monitor = magics.views["counts"]
    assert isinstance(monitor, StreamMonitor)
    assert monitor.rows == 2 and monitor.window == magics.monitor_window
    assert widget_views(captured) == [monitor.model_id]
    handle = env.get("counts")
    assert (handle.sink, handle.output_mode, handle.trigger) == ("memory", "complete", "0.5 seconds")

    wait_for(lambda: handle.progress.total >= 2, 60, message="two batches")
    table = shell.run_line_magic("stream", "result counts")
    assert sorted(table["k"]) == [0, 1, 2] and table["n"].sum() >= 6
    history = shell.run_line_magic("stream", "history counts")
    assert list(history["batch_id"])[:2] == [0, 1]
    by_operator = shell.run_line_magic("stream", "history counts --operators")
    assert len(by_operator) >= len(history)
    listing = shell.run_line_magic("stream", "list")
    assert listing.set_index("name").loc["counts", "status"] == "active"

    shell.run_line_magic("stream", "stop counts")
    assert handle.status == "stopped" and not spark.streams.active
    wait_for(lambda: not monitor.running, message="the monitor to end with its stream")
    assert shell.run_line_magic("stream", "list").set_index("name").loc["counts", "status"] == "stopped"


@pytest.mark.spark
def test_python_cell_with_console_sink_prints_every_batch_in_order(shell, magics, spark, env, capsys, tmp_path):
    checkpoint = tmp_path / "ckpt"
    shell.run_cell_magic(
        "stream", f"evens --sink console --rows 2 --trigger 0.3 seconds --no-monitor --checkpoint {checkpoint}",
        f"source = {RATE.format(rows=4)}\nsource.where('value % 2 = 0')",
    )
    handle = env.get("evens")
    assert (handle.sink, handle.trigger, handle.checkpoint) == ("console", "0.3 seconds", str(checkpoint))
    seen = []
    wait_for(lambda: seen.append(capsys.readouterr().out) or "Batch: 2" in "".join(seen), 60, message="three batches")
    shell.run_line_magic("stream", "stop evens")
    text = "".join(seen) + capsys.readouterr().out
    lines = text.splitlines()
    # --no-monitor: one status line, no widget.
    assert lines[0].startswith("stream 'evens' active: console sink, append mode, trigger 0.3 seconds")
    assert "evens" not in magics.views or isinstance(magics.views["evens"], str)
    batches = [int(line.split()[1]) for line in lines if line.startswith("Batch: ")]
    assert batches[:3] == [0, 1, 2] and batches == sorted(batches)
    # --rows 2 of each batch's 2 even values out of 4: batch 1 holds 4 and 6.
    batch_1 = text.split("Batch: 1\n", 1)[1].split("Batch: 2", 1)[0]
    assert "|    4|" in batch_1 and "|    6|" in batch_1
    assert (checkpoint / "offsets").is_dir()  # --checkpoint was used
    # Each table was shown whole, so the history counts its rows (Spark says -1 for this sink).
    assert (handle.history()["num_output_rows"].iloc[:3] == 2).all()
    with pytest.raises(UsageError, match="console sink, which keeps no table"):
        shell.run_line_magic("stream", "result evens")
    with pytest.raises(UsageError, match="'evens' is not a %%stream --replay panel, which step runs"):
        shell.run_line_magic("stream", "step evens")


@pytest.mark.spark
def test_update_mode_once_trigger_and_no_truncate(shell, magics, spark, env, capsys):
    shell.run_cell_magic(
        "stream", "words --sink console --mode update --trigger once --no-truncate --no-monitor",
        f"from pyspark.sql import functions as F\n"
        f"src = {RATE.format(rows=3)}\n"
        "src.groupBy(F.concat(F.lit('a-long-word-of-thirty-letters-'), F.col('value') % 2).alias('w')).count()",
    )
    handle = env.get("words")
    assert handle.wait_finished(60), "trigger once should end by itself"
    out = capsys.readouterr().out
    assert handle.status == "stopped" and handle.output_mode == "update"
    assert "Batch: 0" in out and "Batch: 1" not in out
    assert "a-long-word-of-thirty-letters-0" in out  # not truncated to 20 characters
    shell.run_cell_magic("stream", "words --sink console --trigger available-now --no-monitor",
                         f"{RATE.format(rows=3)}")
    assert env.get("words").wait_finished(60)
    assert env.get("words").trigger == "available-now"


@pytest.mark.spark
def test_rerunning_a_cell_replaces_its_stream(shell, magics, spark, env):
    shell.run_cell_magic("stream", "q --trigger 0.5 seconds --no-monitor", "SELECT value FROM events")
    first = env.get("q")
    first_id = first.query.id
    shell.run_cell_magic("stream", "q --trigger 0.5 seconds", "SELECT value * 10 AS v FROM events")
    second = env.get("q")
    assert first.status == "stopped" and second.status == "active"
    assert [query.name for query in spark.streams.active] == ["q"]
    assert spark.streams.active[0].id == second.query.id != first_id
    wait_for(lambda: second.progress.total >= 1 and len(second.result()) > 0, 60, message="output of the second query")
    assert list(second.result().columns) == ["v"]
    assert list(shell.run_line_magic("stream", "list")["name"]) == ["q"]


@pytest.mark.spark
def test_a_replaced_stream_leaves_no_widget_open_and_nothing_holding_it(shell, magics, env):
    # A kernel whose %%stream cell runs again and again keeps one monitor's widgets (with
    # their layouts and styles) and lets each replaced stream's handle and history go; a
    # box left open used to keep its buttons, their callbacks the monitor, and so the stream.
    import gc
    import weakref

    from ipywidgets.widgets import widget

    def run_cell():
        with capture_output():
            shell.run_cell_magic("stream", "again --trigger '0.2 seconds'", "SELECT * FROM events")
        handle = env.get("again")
        wait_for(lambda: handle.progress.total >= 2, 60, message="two batches")
        return handle

    before = len(widget._instances)
    first = run_cell()
    one_monitor = len(widget._instances) - before
    with capture_output():
        shell.run_line_magic("stream", "show again")  # a second monitor of it, in another cell
    assert len(widget._instances) - before == 2 * one_monitor
    gone = [weakref.ref(first), weakref.ref(first.progress)]
    del first
    for _ in range(2):
        run_cell()
    assert len(widget._instances) - before == one_monitor
    shell.run_line_magic("stream", "stop again")
    gc.collect()
    assert [ref() for ref in gone] == [None, None], "the first run's handle or history is still held"


@pytest.mark.spark
def test_show_displays_the_monitor_again_and_stop_all_stops_everything(shell, magics, spark, env):
    from workbench.views.monitor import StreamMonitor

    shell.run_cell_magic("stream", "a --trigger 0.5 seconds --no-monitor", "SELECT * FROM events")
    shell.run_cell_magic("stream", "b --trigger 0.5 seconds --no-monitor", "SELECT * FROM events")
    with capture_output() as captured:
        assert shell.run_line_magic("stream", "show a") is None
    monitor = magics.views["a"]
    assert isinstance(monitor, StreamMonitor) and monitor.handle is env.get("a")
    assert widget_views(captured) == [monitor.model_id]
    shell.run_line_magic("stream", "stop --all")
    assert not spark.streams.active
    assert set(shell.run_line_magic("stream", "list")["status"]) == {"stopped"}
    with pytest.raises(UsageError, match=r"no stream named 'c' \(streams: a, b\)"):
        shell.run_line_magic("stream", "show c")
    with pytest.raises(UsageError, match="no stream named 'c'"):
        shell.run_line_magic("stream", "stop c")


@pytest.mark.spark
def test_settings_change_with_config(shell, magics, env):
    shell.run_line_magic("config", "StreamMagics.default_rows = 3")
    shell.run_line_magic("config", "StreamMagics.monitor_window = 7")
    shell.run_line_magic("config", "StreamMagics.poll_interval = 0.2")
    assert (magics.default_rows, magics.monitor_window, magics.poll_interval) == (3, 7, 0.2)
    shell.run_cell_magic("stream", "q --trigger 0.5 seconds", "SELECT * FROM events")
    monitor = magics.views["q"]
    assert (monitor.rows, monitor.window) == (3, 7)
    assert env.get("q").spec.poll_interval == 0.2 and env.get("q").spec.rows == 3
    shell.run_line_magic("stream", "stop q")
    from traitlets import TraitError

    with pytest.raises(TraitError, match="default_rows must be a whole number from 1 to 2147483647, got 0"):
        magics.default_rows = 0


BAD_INPUT = [
    ("q --sinkk memory", "ran = True\nspark.readStream.table('events')", "unknown option '--sinkk'"),
    ("", "ran = True\nspark.readStream.table('events')", "needs a stream name"),
    ("q", "   \n", "the cell is empty"),
    ("q --trigger soon", "ran = True\nspark.readStream.table('events')", "unknown trigger 'soon'"),
    ("q", "SELECT * FORM events", "SQL error: "),
    ("q", "SELECT * FROM no_such_table", "SQL error: The table or view `no_such_table` cannot be found"),
    ("q", "SELECT * FROM static_numbers", "the SQL query is not a streaming DataFrame"),
    ("q", "ran = True\nspark.range(3)", "the cell's last value is not a streaming DataFrame"),
    ("q", "ran = True\n42", "expected a streaming pyspark DataFrame (from spark.readStream...), got int"),
    ("q", "df = spark.readStream.table('events')", "the cell's last line must be an expression"),
    ("q", "spark.readStream.format('no-such-source').load()",
     "SparkClassNotFoundException: Failed to find the data source: no-such-source"),
    ("q", "undefined_name", "NameError: name 'undefined_name' is not defined"),
    ("q", "df = (", "Python syntax error on line 1"),
    ("q", "SELEC word, count(*) FROM events GROUP BY word",
     "Python syntax error on line 1: invalid syntax (read as Python because `SELEC` is not a SQL keyword; "
     "did you mean SELECT? `--sql` reads the body as SQL)"),
    ("q", "SELECT value % 3 AS k, count(*) AS n FROM events GROUP BY k",
     "Invalid streaming output mode: append. This output mode is not supported for streaming aggregations "
     "without watermark"),
    ("q --mode complete", "SELECT * FROM events", "Invalid streaming output mode: complete. This output mode is "
                                                  "not supported for no streaming aggregations"),
    ("q --replay nowhere", "SELECT * FROM source", "unknown replay source 'nowhere'"),
    ("q --replay guide_word_count", "SELECT word, count(*) AS n FROM source GROUP BY word",
     "Spark cannot run replay 'q': Invalid streaming output mode: append. This output mode is not supported "
     "for streaming aggregations without watermark"),
    ("q --replay guide_word_count --mode complete", "source.groupBy('wrd').count()",
     "%%stream q: the cell failed: AnalysisException: A column, variable, or function parameter with name `wrd` "
     "cannot be resolved"),
]


@pytest.mark.spark
@pytest.mark.parametrize(("line", "body", "fragment"), BAD_INPUT, ids=[f"{i}-{b[2][:30]}" for i, b in enumerate(BAD_INPUT)])
def test_bad_input_is_one_line_and_leaves_nothing_running(shell, magics, spark, env, line, body, fragment):
    shell.user_ns.pop("ran", None)
    with capture_output() as captured:
        with pytest.raises(UsageError) as info:
            shell.run_cell_magic("stream", line, body)
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message and "Traceback" not in message and "py4j" not in message.lower()
    assert len(message) < 400
    assert not spark.streams.active and not env.handles()
    assert not captured.outputs and not captured.stderr  # no widget and no logged stack trace
    if "ran = True" in body and ("--" in line or not line or "soon" in line):
        assert "ran" not in shell.user_ns, "options are checked before the cell's code runs"


@pytest.mark.spark
def test_line_magics_on_unknown_streams(shell, magics, env):
    with pytest.raises(UsageError, match=r"%stream history: no stream named 'nope' \(streams: none started yet\)"):
        shell.run_line_magic("stream", "history nope")
    with pytest.raises(UsageError, match="no stream named 'nope'"):
        shell.run_line_magic("stream", "result nope")
    with pytest.raises(UsageError, match=r"%stream step: no stream named 'nope'"):
        shell.run_line_magic("stream", "step nope")
    assert shell.run_line_magic("stream", "list").empty


@pytest.mark.spark
def test_unloading_the_extension_stops_every_stream(shell, magics, spark, env):
    shell.run_cell_magic("stream", "q --trigger 0.5 seconds --no-monitor", "SELECT * FROM events")
    assert spark.streams.active
    shell.run_line_magic("unload_ext", "workbench")
    try:
        assert not spark.streams.active
        assert env.get("q").status == "stopped"
        assert "stream" not in shell.magics_manager.magics["cell"]
    finally:
        shell.run_line_magic("load_ext", "workbench")
    assert "StreamMagics" in shell.magics_manager.registry


@pytest.mark.spark
def test_replay_scenario_by_name_with_its_own_query(shell, magics, env):
    from workbench.views.replay_panel import ReplayPanel

    with capture_output() as captured:
        # IPython refuses an empty cell body: a comment-only body runs the scenario's own query.
        shell.run_cell_magic("stream", "guide --replay guide_word_count", "# the scenario's query\n")
    panel = magics.panels["guide"]
    assert isinstance(panel, ReplayPanel) and widget_views(captured) == [panel.model_id]
    panel.step()
    with capture_output() as captured:
        shell.run_line_magic("stream", "step guide")
    assert captured.stdout.startswith("batch 1: watermark ") and captured.stdout.count("\n") == 1
    assert list(panel.history()["batch_id"]) == [0, 1]
    with capture_output() as captured:
        shell.run_line_magic("stream", "step guide 2")
    assert [line.split(":")[0] for line in captured.stdout.splitlines()] == ["batch 2", "batch 3"]
    assert list(panel.history()["batch_id"]) == [0, 1, 2, 3]
    shell.run_line_magic("stream", "stop guide")
    assert panel.run.status == "paused"


@pytest.mark.spark
def test_replay_with_sql_and_python_bodies_over_source(shell, magics, env):
    from workbench.replay import Script

    shell.user_ns["script"] = Script([[("12:00", "a"), ("12:01", "b")], [("12:02", "a")]], ["event_time", "word"])
    shell.user_ns["source"] = "kept"
    shell.run_cell_magic("stream", "by_sql --replay script --mode complete --no-monitor",
                         "SELECT word, count(*) AS n FROM source GROUP BY word")
    shell.run_cell_magic("stream", "by_python --replay script --mode complete --no-monitor",
                         "source.groupBy('word').count()")
    assert shell.user_ns["source"] == "kept"  # the Python body saw the replay input, not this
    for name, column in (("by_sql", "n"), ("by_python", "count")):
        panel = magics.panels[name]
        panel.step()
        panel.step()
        final = panel.results().query("batch_id == 1")
        assert dict(zip(final["word"], final[column])) == {"a": 2, "b": 1}
        assert shell.run_line_magic("stream", f"result {name}").equals(panel.results())


@pytest.mark.spark
def test_a_replay_sql_cell_leaves_a_users_own_source_view_alone(shell, magics, env):
    from workbench.replay import Script

    spark = env.session()
    shell.user_ns["script"] = Script([[("12:00", "a")]], ["event_time", "word"])
    spark.range(3).createOrReplaceTempView("source")
    try:
        with capture_output():
            with pytest.raises(UsageError) as error:
                shell.run_cell_magic("stream", "over_mine --replay script --no-monitor", "SELECT * FROM source")
        assert str(error.value) == (
            "%%stream over_mine: a table or view named source is the user's (spark.table('source') reads it), and a "
            "replay's SQL reads its input as the temp view source, which would replace it: rename yours, or write "
            "the query in Python (variable `source`)")
        assert spark.table("source").count() == 3 and "over_mine" not in magics.panels
    finally:
        spark.catalog.dropTempView("source")
    for _ in range(2):  # the replay's own view is replaced as before
        shell.run_cell_magic("stream", "over_mine --replay script --no-monitor", "SELECT * FROM source")
    magics.panels["over_mine"].close()


@pytest.mark.spark
def test_a_replay_cell_run_again_with_a_bad_body_keeps_the_panel_it_would_replace(shell, magics, env):
    from workbench.replay import Script

    shell.user_ns["script"] = Script([[("12:00", "a"), ("12:01", "b")], [("12:02", "a")]], ["event_time", "word"])
    shell.run_cell_magic("stream", "kept --replay script --mode complete --no-monitor", "source.groupBy('word').count()")
    panel = magics.panels["kept"]
    panel.step()
    for body in ("source.groupBy('wrd').count()", "source.groupBy('word').count() +"):
        with capture_output():
            with pytest.raises(UsageError, match="%%stream kept: "):
                shell.run_cell_magic("stream", "kept --replay script --mode complete --no-monitor", body)
        # The old panel stands, usable, with its run and results.
        assert magics.panels["kept"] is panel and panel.run.status == "paused"
    panel.step()
    assert list(panel.history()["batch_id"]) == [0, 1]
    shell.run_cell_magic("stream", "kept --replay script --mode complete --no-monitor", "source.groupBy('word').count()")
    assert magics.panels["kept"] is not panel and panel.run.status == "closed"
    magics.panels["kept"].close()


# -- queries the workbench did not start; atomic re-runs; refusals explained -----------------------------


def printed(captured) -> str:
    return captured.stdout


PARQUET_BODY = (
    "query = (spark.readStream.format('rate-micro-batch').option('rowsPerBatch', 3).load()\n"
    "         .writeStream.format('parquet').queryName('{name}')\n"
    "         .option('path', r'{out}').option('checkpointLocation', r'{ckpt}')\n"
    "         .trigger(processingTime='0.3 seconds').start())\n"
)


@pytest.mark.spark
def test_a_cell_whose_code_starts_its_own_query_is_watched_not_hidden(shell, magics, spark, env, tmp_path):
    body = PARQUET_BODY.format(name="own", out=tmp_path / "out", ckpt=tmp_path / "ckpt") + "query"
    with capture_output() as captured:
        shell.run_cell_magic("stream", "own", body)
    assert "stream 'own': the cell's code started this query itself (file sink); the workbench watches it" \
        in printed(captured)
    monitor = magics.views["own"]
    assert widget_views(captured) == [monitor.model_id]
    handle = env.get("own")
    assert handle.started_by == "cell" and handle.query.id == shell.user_ns["query"].id
    row = shell.run_line_magic("stream", "list").set_index("name").loc["own"]
    assert (row["status"], row["sink"], row["started_by"]) == ("active", "file", "cell")
    wait_for(lambda: handle.progress.total >= 2, 60, message="two batches of the cell's own query")
    assert list(handle.history()["batch_id"])[:2] == [0, 1]
    # A re-run stops the query the cell's code started before, says so, and watches the new one.
    with capture_output() as again:
        shell.run_cell_magic("stream", "own --no-monitor", body)
    assert "stopped query 'own', which this cell's code started on its previous run" in printed(again)
    assert handle.status == "stopped"
    assert [q.name for q in spark.streams.active] == ["own"] and env.get("own") is not handle
    shell.run_line_magic("stream", "stop own")
    assert not spark.streams.active


@pytest.mark.spark
def test_a_cell_changed_to_start_its_own_query_replaces_its_stream(shell, magics, spark, env, tmp_path):
    # The stream the cell started from a DataFrame ran on, and %stream stop dup then stopped it,
    # not the cell's new query.
    shell.run_cell_magic("stream", "dup --no-monitor", "spark.readStream.format('rate-micro-batch')"
                         ".option('rowsPerBatch', 3).load()")
    first = env.get("dup")
    with capture_output() as captured:
        shell.run_cell_magic("stream", "dup --no-monitor", "spark.readStream.format('rate-micro-batch')"
                             ".option('rowsPerBatch', 3).load().writeStream.format('noop').start()")
    assert "stopped stream 'dup', which this cell started on its previous run" in printed(captured)
    assert first.status == "stopped" and len(spark.streams.active) == 1
    shell.run_line_magic("stream", "stop dup")
    assert not spark.streams.active
    # A query of the user's of that name, only watched, is left alone.
    mine = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 3).load()
            .writeStream.format("noop").queryName("mine").start())
    try:
        env.watch(mine)
        with capture_output() as captured:
            shell.run_cell_magic("stream", "mine --no-monitor", "spark.readStream.format('rate-micro-batch')"
                                 ".option('rowsPerBatch', 3).load().writeStream.format('noop').start()")
        assert "stopped stream" not in printed(captured) and mine.isActive
    finally:
        for query in spark.streams.active:  # the user's, and the cell's (watched as "mine" too)
            query.stop()


@pytest.mark.spark
def test_workbench_stop_by_name_stops_a_query_it_did_not_start(spark, env, tmp_path):
    # The name was looked up (and the query watched) but not stopped.
    query = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 3).load()
             .writeStream.format("noop").queryName("outside").start())
    try:
        env.stop("outside")
        assert not query.isActive
    finally:
        query.stop()


@pytest.mark.spark
def test_watch_magic_monitors_a_users_query_and_never_stops_it_unasked(shell, magics, spark, env, tmp_path):
    shell.run_cell(PARQUET_BODY.format(name="files", out=tmp_path / "out", ckpt=tmp_path / "ckpt"))
    query = shell.user_ns["query"]
    with capture_output() as captured:
        shell.run_line_magic("stream", "watch files")
    assert printed(captured).startswith("watching 'files' (started outside the workbench; file sink, active); "
                                        "%stream stop files stops it")
    monitor = magics.views["files"]
    assert widget_views(captured) == [monitor.model_id] and monitor.handle.query.id == query.id
    with capture_output() as everything:
        shell.run_line_magic("stream", "watch --all")
    assert len(widget_views(everything)) == 1
    # %%stream with the same name leaves the user's query alone, and says how to proceed.
    with pytest.raises(UsageError, match=r"a streaming query named 'files' that the workbench did not start is "
                                         r"running; it is left alone: stop it first"):
        shell.run_cell_magic("stream", "files", "SELECT * FROM events")
    assert query.isActive
    wait_for(lambda: monitor.handle.progress.total >= 2, 60, message="batches while watched")
    shell.run_line_magic("stream", "stop files")  # asked for
    assert not query.isActive
    with pytest.raises(UsageError, match=r"%stream watch: no active streaming query named or with id 'nope'"):
        shell.run_line_magic("stream", "watch nope")
    with capture_output() as none:
        shell.run_line_magic("stream", "watch --all")
    assert printed(none) == "no active streaming query in this session\n"


@pytest.mark.spark
def test_a_rerun_is_checked_before_the_old_stream_stops(shell, magics, spark, env, tmp_path):
    shell.run_cell_magic("stream", "q --trigger 0.5 seconds --no-monitor", "SELECT * FROM events")
    old = env.get("q")
    for line, body, fragment in [
        ("q --mode complete", "SELECT * FROM events", "Invalid streaming output mode: complete"),
        ("q", "SELECT * FORM events", "SQL error"),
        ("q", "undefined_name", "NameError"),
        # A checkpoint that is a file, or under one: refused before Spark starts anything.
        (f"q --checkpoint {tmp_path / 'file'}", "SELECT * FROM events", "is a file: give a folder"),
        (f"q --checkpoint {tmp_path / 'file' / 'ck'}", "SELECT * FROM events", "is not a folder you can write"),
    ]:
        (tmp_path / "file").write_text("x")
        with pytest.raises(UsageError, match=fragment):
            shell.run_cell_magic("stream", line, body)
        assert old.status == "active" and env.get("q") is old
    # Spark refuses this one only at start (a file system it does not know): then the message
    # says so, in Spark's own words rather than Py4J's ("An error occurred while calling o459.start").
    with pytest.raises(UsageError) as info:
        shell.run_cell_magic("stream", "q --checkpoint nosuchfs://bucket/ck", "SELECT * FROM events")
    assert str(info.value).endswith("(the previous stream 'q' was stopped)")
    assert "nosuchfs" in str(info.value) and "while calling" not in str(info.value), str(info.value)
    assert old.status == "stopped" and not spark.streams.active

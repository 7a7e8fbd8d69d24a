"""The catalogue of user-facing bad input: every case, its exact one-line message, nothing left behind.

Each case is what a user can type (a ``%%stream`` option or body, a ``%stream`` line, a
``workbench.start`` argument, a replay spec or script, a monitor option, an environment
variable) with the exact message it gives. Every message names the bad value (or the bad
part) and what is allowed, is one line, and comes before Spark starts anything: afterwards
no query runs, no workbench thread is alive and no folder was created.

Other test modules check some of these messages where their feature is tested; this module
is the one place that lists them all.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from IPython.core.error import UsageError

import workbench
from tests.helpers import live_threads
from tests.test_magics import shell  # noqa: F401  (the fixture: a real shell with the magics loaded)
from workbench.replay.columns import Disorder, KeyColumn, PayloadColumn
from workbench.replay.spec import Replay, Script, WindowCount

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def world(env, spark, shell, tmp_path, monkeypatch, rate_stream):
    """What a case can use: a rate stream, a static frame, a shell, the workbench; then the checks."""
    # Any temp folder the workbench would create lands here, where the test can see it.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    rate = rate_stream(rows_per_batch=5)
    rate.createOrReplaceTempView("events")
    shell.user_ns.update(spark=spark, df=rate)
    threads_before = set(live_threads())
    yield {"spark": spark, "df": rate, "static": spark.range(3), "shell": shell, "env": env}
    assert not spark.streams.active, "the bad input left a query running"
    assert set(live_threads()) <= threads_before, "the bad input left a workbench thread running"
    # The workbench's own private folder may exist (a session has one); nothing else, and no checkpoint.
    own = env._temp_dir
    assert [p for p in tmp_path.iterdir() if p != own] == [], "the bad input left a folder behind"
    assert own is None or not any((own / "checkpoints").glob("*")), "the bad input left a checkpoint behind"


def cell(line: str, body: str = "df"):
    return lambda w: w["shell"].run_cell_magic("stream", line, body)


def line_magic(line: str):
    return lambda w: w["shell"].run_line_magic("stream", line)


def start(*args, **kwargs):
    def call(w):
        positional = [w[a] if isinstance(a, str) and a in ("df", "static") else a for a in args]
        return workbench.start(*positional, **kwargs)
    return call


def with_env(variable: str, value: str, action):
    def call(w):
        os.environ[variable] = value
        try:
            return action(w)
        finally:
            del os.environ[variable]
    return call


def call(function):
    return lambda w: function()


def monitor(**options):
    from workbench.views.monitor import StreamMonitor

    class Quiet:  # a finished stream: the options are checked before anything reads it
        name, status, error, sink, output_mode, progress = "q", "stopped", None, "memory", None, None

    return lambda w: StreamMonitor(Quiet(), **options)


SCRIPT_ROWS = [[("12:07", "dog")]]

# (case id, what the user does, exception type, the exact message)
CASES = [
    # -- %%stream options --------------------------------------------------------------------------
    ("cell sink", cell("q --sink kafka"), UsageError,
"%%stream: unknown sink 'kafka': use one of memory, console"),
    ("cell mode", cell("q --mode upsert"), UsageError,
"%%stream: unknown output mode 'upsert': use one of append, update, complete (or leave it out for Spark's default, append)"),
    ("cell trigger", cell("q --trigger soon"), UsageError, "%%stream: unknown trigger 'soon': use an interval such as '1 second' or '500 ms', 'once', 'available-now', or nothing for as fast as possible"),
    ("cell rows", cell("q --rows many"), UsageError, "%%stream: rows must be a whole number from 1 to 2147483647, got 'many'"),
    ("cell rows zero", cell("q --rows 0"), UsageError, "%%stream: rows must be a whole number from 1 to 2147483647, got '0'"),
    ("cell unknown option", cell("q --speed 3"), UsageError, "%%stream: unknown option '--speed'; options: --checkpoint, --input-watermarks, --mode, --no-monitor, --no-truncate, --python, --replay, --rows, --sink, --sql, --trigger"),
    ("cell extra argument", cell("q extra"), UsageError, "%%stream: unexpected argument 'extra' (quote values that contain spaces)"),
    ("cell empty checkpoint", cell("q --checkpoint ''"), UsageError, '%%stream: --checkpoint is empty: give a folder, or leave it out for a temporary one'),
    ("cell name of a users view", cell("events --no-monitor"), UsageError,
     "%%stream events: stream name 'events' is taken by a table or view the workbench did not make "
     "(spark.table('events') reads it): a memory-sink stream of that name would replace it; choose another name"),
    ("cell bad name", cell("my-q"), UsageError, "%%stream: bad stream name 'my-q': use letters, digits and underscores, starting with a letter or underscore (e.g. 'word_counts')"),
    ("cell no name", cell(""), UsageError, '%%stream needs a stream name first: %%stream NAME [options], e.g. %%stream word_counts --sink console'),
    ("cell replay and trigger", cell("q --replay guide_word_count --trigger once", "# the scenario's query"), UsageError, "%%stream: --trigger cannot be used with --replay: the replay panel's Play and Step buttons drive the query, on a checkpoint of its own"),
    ("cell unknown scenario", cell("q --replay nonesuch", "# the scenario's query"), UsageError, "%%stream: unknown replay source 'nonesuch': give a variable holding a workbench.Replay, workbench.Script or scenario, or a scenario name: guide_word_count, late_clicks"),
    # -- %%stream bodies ------------------------------------------------------------------------------
    ("body empty", cell("q", ""), UsageError, '%%stream is a cell magic, but the cell body is empty. Did you mean the line magic %stream (single %)?'),
    ("body python syntax", cell("q", "SELEC * FROM events"), UsageError,
     "%%stream q: Python syntax error on line 1: invalid syntax (read as Python because `SELEC` is not a SQL "
     "keyword; did you mean SELECT? `--sql` reads the body as SQL)"),
    ("body statement last", cell("q", "x = df"), UsageError, "%%stream q: the cell's last line must be an expression giving a streaming DataFrame (e.g. a line with just `df`), or the StreamingQuery the cell started, not a statement"),
    ("body not streaming", cell("q", "spark.range(3)"), UsageError, "%%stream q: the cell's last value is not a streaming DataFrame: this DataFrame is not streaming (it was built with spark.read, not spark.readStream): start streams from spark.readStream sources"),
    ("body not a frame", cell("q", "42"), UsageError, "%%stream q: the cell's last value is not a streaming DataFrame: expected a streaming pyspark DataFrame (from spark.readStream...), got int"),
    ("body python error", cell("q", "undefined_name"), UsageError, "%%stream q: the cell failed: NameError: name 'undefined_name' is not defined"),
    ("body sql unknown table", cell("q", "SELECT * FROM no_such_view"), UsageError, '%%stream q: SQL error: The table or view `no_such_view` cannot be found. Verify the spelling and correctness of the schema and catalog.'),
    ("body sql syntax", cell("q", "SELECT * FROM events WHERE value >"), UsageError, '%%stream q: SQL error: Syntax error at or near end of input. (line 1, pos 34)'),
    ("body refused by spark", cell("q", "SELECT value % 3 AS k, count(*) AS n FROM events GROUP BY 1"),
     UsageError, "%%stream q: Spark cannot start stream 'q': Invalid streaming output mode: append. This output mode is not supported for streaming aggregations without watermark on streaming DataFrames/DataSets. (hint: add .withWatermark(\"<event time column>\", \"10 minutes\") before the aggregation and group by a window of that column, or use update or complete mode)"),
    # -- %stream lines --------------------------------------------------------------------------------
    ("line no subcommand", line_magic(""), UsageError, '%stream needs a subcommand: list, stop, step, show, history, result or watch (to start a stream, use %%stream NAME with the query in the cell)'),
    ("line unknown subcommand", line_magic("pause q"), UsageError, "%stream: unknown subcommand 'pause': use list, stop, step, show, history, result or watch (to start a stream, use %%stream NAME with the query in the cell)"),
    ("line stop without name", line_magic("stop"), UsageError, '%stream stop needs a stream name, or --all to stop every stream'),
    ("line stop unknown", line_magic("stop nosuch"), UsageError, "%stream stop: no stream named 'nosuch' (streams: none started yet)"),
    ("line step count", line_magic("step q 0"), UsageError, "%stream step: N must be a whole number of batches from 1 to 1000, got '0'"),
    ("line step unknown", line_magic("step nosuch"), UsageError, "%stream step: no stream named 'nosuch' (streams: none started yet)"),
    ("line result bad name", line_magic("result my-q"), UsageError, "%stream result: bad stream name 'my-q': use letters, digits and underscores, starting with a letter or underscore (e.g. 'word_counts')"),
    ("line history option", line_magic("history q --ops"), UsageError, "%stream history: unknown option '--ops'; options: --operators"),
    # -- workbench.start -------------------------------------------------------------------------------
    ("start name with space", start("df", "my stream"), ValueError, "bad stream name 'my stream': use letters, digits and underscores, starting with a letter or underscore (e.g. 'word_counts')"),
    ("start empty name", start("df", ""), ValueError, "stream name is empty: give a name such as 'word_counts'"),
    ("start name type", start("df", 5), TypeError, 'stream name must be a string, got 5'),
    ("start sink", start("df", "q", sink="kafka"), ValueError, "unknown sink 'kafka': use one of memory, console"),
    ("start mode", start("df", "q", output_mode="upsert"), ValueError, "unknown output mode 'upsert': use one of append, update, complete (or leave it out for Spark's default, append)"),
    ("start trigger", start("df", "q", trigger="1 fortnight"), ValueError, "unknown trigger '1 fortnight': use an interval such as '1 second' or '500 ms', 'once', 'available-now', or nothing for as fast as possible"),
    ("start trigger type", start("df", "q", trigger=5), TypeError, "trigger must be a string such as '1 second', got 5"),
    ("start rows", start("df", "q", rows=-3), ValueError, 'rows must be a whole number from 1 to 2147483647, got -3'),
    ("start poll interval", start("df", "q", poll_interval=0), ValueError, 'poll_interval must be a positive number of seconds up to 86400 (a day), got 0'),
    ("start poll interval infinite", start("df", "q", poll_interval=float("inf")), ValueError,
     "poll_interval must be a positive number of seconds up to 86400 (a day), got inf"),
    ("start poll interval huge", start("df", "q", poll_interval=1e12), ValueError,
     "poll_interval must be a positive number of seconds up to 86400 (a day), got 1000000000000.0"),
    ("start rows huge", start("df", "q", rows=2**31), ValueError,
     "rows must be a whole number from 1 to 2147483647, got 2147483648"),
    ("start name newline", start("df", "abc\n"), ValueError,
     "bad stream name 'abc\\n': use letters, digits and underscores, starting with a letter or underscore (e.g. 'word_counts')"),
    ("start trigger other digits", start("df", "q", trigger="\u0661 second"), ValueError,
     "unknown trigger '\u0661 second': use an interval such as '1 second' or '500 ms', 'once', 'available-now', or nothing for as fast as possible"),
    ("start trigger huge", start("df", "q", trigger="99999999999999999999 hours"), ValueError,
     "trigger interval '99999999999999999999 hours' is longer than a day: use at most '24 hours'"),
    ("stream name type", lambda w: workbench.stream(5), TypeError, "stream name must be a string, got 5"),
    ("start input watermarks", start("df", "q", input_watermarks="no"), TypeError,
     "input_watermarks must be True or False, got 'no'"),
    ("start checkpoint file", start("df", "q", checkpoint=str(REPO / "README.md")), ValueError,
     f"checkpoint {str(REPO / 'README.md')!r} is a file: give a folder (new or a checkpoint of this query)"),
    ("start checkpoint under a file", start("df", "q", checkpoint=str(REPO / "README.md" / "ck")), ValueError,
     f"checkpoint {str(REPO / 'README.md' / 'ck')!r} cannot be made: {str(REPO / 'README.md')!r} is not a folder "
     "you can write; give another folder"),
    ("checkpoint root type", lambda w: setattr(w["env"], "checkpoint_root", 5), TypeError,
     "checkpoint_root must be a folder path or URI (a string or a Path), or None, got 5"),
    ("checkpoint root file", lambda w: setattr(w["env"], "checkpoint_root", str(REPO / "README.md")), ValueError,
     f"checkpoint_root {str(REPO / 'README.md')!r} is a file: give a folder every executor can reach, or None"),
    ("start trigger fraction", start("df", "q", trigger="1.5 ms"), ValueError,
     "trigger interval '1.5 ms' is not a whole number of milliseconds, which Spark counts in"),
    ("start checkpoint type", start("df", "q", checkpoint=True), TypeError,
     "checkpoint must be a folder path (a string or a Path), got True"),
    ("start console type", start("df", "q", sink="console", console="print"), TypeError,
     "console must be a function that takes each batch's text, got 'print'"),
    ("start truncate", start("df", "q", sink="console", truncate=50), TypeError,
     "truncate must be True (cells cut at 20 characters) or False, got 50"),
    ("watch not a query", call(lambda: workbench.watch(123)), TypeError,
     "watch() takes a StreamingQuery, or the name or id of an active streaming query, got int"),
    ("watch unknown", call(lambda: workbench.watch("nosuch")), ValueError,
     "no active streaming query named or with id 'nosuch' (active queries: none)"),
    ("start blank checkpoint", start("df", "q", checkpoint=" "), ValueError, 'checkpoint is empty: give a folder path, or leave it out for a private temporary one'),
    ("start static frame", start("static", "q"), ValueError, 'this DataFrame is not streaming (it was built with spark.read, not spark.readStream): start streams from spark.readStream sources'),
    ("start not a frame", start("df as text", "q"), TypeError, 'expected a streaming pyspark DataFrame (from spark.readStream...), got str'),
    ("start table warn rows", with_env("WORKBENCH_TABLE_WARN_ROWS", "lots", start("df", "q")), ValueError,
     "WORKBENCH_TABLE_WARN_ROWS must be a whole number of rows (0 never warns), got 'lots'"),
    ("session setting name", call(lambda: workbench.session(conf={"spark.sql.shuffle.partitions": "4"})), ValueError,
     "workbench.session: 'conf' is not a Spark setting (their names start with 'spark.'); pass settings as keywords, e.g. workbench.session(**{'spark.sql.shuffle.partitions': '4'})"),
    ("session setting value", call(lambda: workbench.session(**{"spark.sql.shuffle.partitions": [4]})), TypeError,
     "workbench.session: the value of 'spark.sql.shuffle.partitions' must be a string, number or bool, got list [4]"),
    ("stream unknown", call(lambda: workbench.stream("nosuch")), ValueError, "no stream named 'nosuch' (streams: none started yet)"),
    # -- replay specs and scripts ------------------------------------------------------------------
    ("replay rows", call(lambda: Replay(rows_per_batch=0)), ValueError, 'rows_per_batch must be a whole number >= 1, got 0'),
    ("replay advance", call(lambda: Replay(advance="soon")), ValueError, "cannot read advance 'soon': use text such as '10 minutes' or '500 ms', or seconds"),
    ("replay key name", call(lambda: Replay(keys=(KeyColumn(name="my key"),))), ValueError, "bad key column name 'my key': use letters, digits and underscores (e.g. 'key')"),
    ("replay key name newline", call(lambda: Replay(keys=(KeyColumn(name="key\n"),))), ValueError,
     "bad key column name 'key\\n': use letters, digits and underscores (e.g. 'key')"),
    ("key cardinality", call(lambda: KeyColumn(cardinality=0)), ValueError, "cardinality of key 'key' must be a whole number >= 1, got 0"),
    ("disorder distribution", call(lambda: Disorder(distribution="zipf")), ValueError, "unknown distribution 'zipf': use one of uniform, fixed, exponential"),
    ("disorder delays", call(lambda: Disorder(min_delay="5 minutes", max_delay="1 minute")), ValueError, "max_delay ('1 minute') must not be below min_delay ('5 minutes')"),
    ("payload kind", call(lambda: PayloadColumn("p", kind="blob")), ValueError, "unknown payload kind 'blob' for 'p': use one of int, float, choice"),
    # Spark's rate source and hash took these, then failed with a Java error once the panel started.
    ("replay start before 1970", call(lambda: Replay(start="1960-01-01 00:00")), ValueError,
     "start must be 1970-01-01 00:00 UTC or later, got 1960-01-01 00:00:00+00:00"),
    ("replay seed over a long", call(lambda: Replay(seed=2**70)), ValueError,
     f"seed must be a whole number from -2147483648 to 9223372036854775807, got {2**70}"),
    ("payload bound infinite", call(lambda: PayloadColumn("p", low=0, high=float("inf"))), ValueError,
     "payload 'p' bounds must be finite numbers, got inf"),
    ("payload int bound too big", call(lambda: PayloadColumn("p", high=2**60)), ValueError,
     f"payload 'p' of kind 'int' needs bounds from -2**53 to 2**53, got {2**60}"),
    ("replay from script json", call(lambda: Replay.from_json(Script(SCRIPT_ROWS, ["event_time", "word"]).to_json())),
     ValueError, 'this JSON describes a Script, not a Replay: use Script.from_json'),
    ("window count slide", call(lambda: WindowCount(window="10 minutes", slide="20 minutes")), ValueError,
     "slide '20 minutes' is longer than the window '10 minutes': Spark's sliding windows need slide <= window"),
    ("script no batches", call(lambda: Script([], ["event_time"])), ValueError, 'the script has no batches: give a list with one list of rows per micro-batch'),
    ("script row width", call(lambda: Script([[("12:07", "dog", 1)]], ["event_time", "word"])), ValueError, 'script batch 0, row 0 has 3 values but columns name 2 (event_time, word)'),
    ("script day", call(lambda: Script(SCRIPT_ROWS, ["event_time", "word"], day="yesterday")), ValueError, "cannot read day 'yesterday': use 'YYYY-MM-DD'"),
    ("panel source", call(lambda: workbench.replay_panel(42)), TypeError, 'source must be a workbench.Replay, workbench.Script or a scenario, got int'),
    ("panel without query", call(lambda: workbench.replay_panel(Replay())), TypeError, 'give the query: a function from the source DataFrame to the result DataFrame'),
    ("scenario unknown", call(lambda: workbench.scenarios.get("nonesuch")), ValueError, "unknown scenario 'nonesuch': use one of guide_word_count, late_clicks"),
    # -- monitor options ---------------------------------------------------------------------------
    ("monitor rows", monitor(rows=0), ValueError, 'rows must be a whole number from 1 to 2147483647, got 0'),
    ("monitor window", monitor(window=2.5), ValueError, 'window must be a positive whole number, got 2.5'),
    ("monitor interval", monitor(interval=-1), ValueError, 'interval must be a positive number of seconds up to 86400 (a day), got -1'),
    ("monitor quiet seconds", monitor(quiet_seconds="10"), ValueError, "quiet_seconds must be a number of seconds >= 0, got '10'"),
    ("monitor caption", monitor(caption="batch {id}"), TypeError, "caption must be a function of the newest batch's progress, got 'batch {id}'"),
]


@pytest.mark.parametrize(("action", "kind", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_gives_one_exact_line(world, action, kind, message):
    with pytest.raises(kind) as info:
        action(world)
    assert str(info.value) == message


# -- environment variables, read when the first session is built (in a child process) ------------

ENV_CASES = [
    ("WORKBENCH_MASTER", "spark//host:7077", "SparkURLError: WORKBENCH_MASTER='spark//host:7077' is not a Spark "
     "master URL: use local[N], spark://HOST:PORT, yarn or k8s://https://HOST:PORT"),
    ("WORKBENCH_MASTER", "local[0]", "SparkURLError: WORKBENCH_MASTER='local[0]' is not a Spark "
     "master URL: use local[N], spark://HOST:PORT, yarn or k8s://https://HOST:PORT"),
]

ENV_SCRIPT = textwrap.dedent(
    """
    import json, os, sys, tempfile, threading
    import workbench
    from tests.helpers import jvms_of

    tempfile.tempdir = sys.argv[1]
    report = []
    for variable, value in json.loads(sys.argv[2]):
        os.environ[variable] = value
        try:
            workbench.session()
            message = None
        except Exception as exc:
            message = f"{type(exc).__name__}: {exc}"
        del os.environ[variable]
        report.append({
            "message": message,
            "jvms": jvms_of(os.getpid()),
            "threads": [t.name for t in threading.enumerate() if t.name.startswith("workbench-")],
            "folders": os.listdir(sys.argv[1]),
        })
    print(json.dumps(report))
    """
)


@pytest.fixture(scope="module")
def env_reports(tmp_path_factory):
    import json

    folder = tmp_path_factory.mktemp("env-cases")
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "WORKBENCH_MASTER")}
    env["PYTHONPATH"] = str(REPO)
    cases = json.dumps([case[:2] for case in ENV_CASES])
    done = subprocess.run([sys.executable, "-c", ENV_SCRIPT, str(folder), cases], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("index", range(len(ENV_CASES)), ids=[f"{v}={x}" for v, x, _ in ENV_CASES])
def test_bad_environment_gives_one_exact_line_before_spark_starts(env_reports, index):
    report = env_reports[index]
    assert report["message"] == ENV_CASES[index][2]
    assert report == {"message": report["message"], "jvms": [], "threads": [], "folders": []}

"""Which Spark the workbench would use, whether its URL makes sense, and whether it answers.

``SPARK_REMOTE`` (a Spark Connect server) wins over ``WORKBENCH_MASTER`` (a master URL), as
in pyspark; with neither the workbench embeds a local Spark. :func:`spark_target` reads
that choice and refuses a malformed URL before anything starts; :func:`unreachable`
tries one TCP connection to the master or server, so that a wrong port is one line in a
few seconds instead of a JVM that retries for a minute and prints its stack traces. Like
``_java``, this module is used by the command line and must stay free of pyspark.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping
from urllib.parse import urlsplit

from .errors import WorkbenchError

__all__ = [
    "CONNECT_DEFAULT_PORT", "SparkTarget", "SparkURLError", "SparkUnreachableError",
    "spark_target", "parse_master", "parse_remote", "unreachable", "require_reachable",
    "ConnectPortInUseError", "connect_port", "port_holder", "require_free_connect_port",
    "SPARK_CHOICE_VARIABLES", "is_loopback", "doctor_line", "spark_home_line",
]

#: The port a Spark Connect server listens on unless told otherwise (and an sc:// URL's default).
CONNECT_DEFAULT_PORT = 15002

# local[0] is refused too: Spark would start a JVM only to fail ("0 threads").
_LOCAL = re.compile(r"^local(\[(\*|[1-9]\d*)(,\d+)?\])?$|^local-cluster\[\d+,\d+,\d+\]$")
_MASTER_HINT = "use local[N], spark://HOST:PORT, yarn or k8s://https://HOST:PORT"
_REMOTE_HINT = "use sc://HOST:PORT (e.g. sc://127.0.0.1:15002) or local[N]"
#: The variables with which a user points sessions at a Spark of theirs (and its checkpoints at
#: their storage): what a run that starts a Spark of its own (the test suite) must not inherit.
SPARK_CHOICE_VARIABLES = ("SPARK_REMOTE", "WORKBENCH_MASTER", "WORKBENCH_CHECKPOINT_ROOT", "PYSPARK_SUBMIT_ARGS",
                          "SPARK_HOME")


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine's loopback: ``localhost``, 127.0.0.0/8 or ``::1``.

    Parameters
    ----------
    host : str
        A host name or address (an IPv6 address may be in brackets).

    Returns
    -------
    bool

    Examples
    --------
    >>> is_loopback("127.0.1.1"), is_loopback("[::1]"), is_loopback("0.0.0.0"), is_loopback("myhost")
    (True, True, False, False)
    """
    host = host.strip().strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _OneLine(WorkbenchError):
    def _render_traceback_(self) -> list[str]:
        # IPython shows this instead of a traceback: the message is all a user needs.
        return [f"{type(self).__name__}: {self}"]


class SparkURLError(_OneLine, ValueError):
    """A master or Spark Connect URL that cannot be right; raised before anything starts."""


class SparkUnreachableError(_OneLine, ConnectionError):
    """Nothing answers at the master or Spark Connect URL."""


class ConnectPortInUseError(_OneLine, RuntimeError):
    """The port a local Spark Connect server would listen on is taken (e.g. by another kernel's)."""


@dataclass(frozen=True)
class SparkTarget:
    """The Spark a session would run on.

    Attributes
    ----------
    kind : {"embedded", "cluster", "connect"}
        A local Spark in this process (or a local Connect server pyspark starts), a
        cluster's master, or a Spark Connect server.
    url : str
        ``local[2]``, ``spark://host:7077``, ``sc://host:15002``, ...
    source : str
        Where the URL came from: ``"default"``, ``"WORKBENCH_MASTER"``, ``"SPARK_REMOTE"``
        or ``"spark.master"``.
    endpoints : tuple of (str, int)
        The addresses to check (several for a standalone master with standby masters);
        empty when there is nothing to connect to (embedded, ``yarn``).

    Examples
    --------
    >>> spark_target({"WORKBENCH_MASTER": "spark://10.0.0.5:7077"}).endpoints
    (('10.0.0.5', 7077),)
    >>> spark_target({}).kind
    'embedded'
    """

    kind: str
    url: str
    source: str
    endpoints: tuple[tuple[str, int], ...] = ()

    @property
    def on_this_machine(self) -> bool:
        """Whether Spark runs in this process or one pyspark starts here (``local[...]``)."""
        return self.kind == "embedded"

    def describe(self) -> str:
        """One phrase for ``workbench doctor``: what runs where.

        Examples
        --------
        >>> spark_target({}).describe()
        'embedded local[2] (started in the notebook kernel)'
        """
        if self.kind == "embedded":
            where = "a local Spark Connect server started by pyspark" if self.source == "SPARK_REMOTE" else (
                "started in the notebook kernel")
            return f"embedded {self.url} ({where})"
        what = "Spark Connect server" if self.kind == "connect" else "cluster"
        return f"{what} {self.url} (from {self.source})"


def _port(text: str, url: str, what: str, hint: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise SparkURLError(f"{what}={url!r} has a bad port {text!r}: {hint}")
    return int(text)


def _host_port(part: str, url: str, what: str, hint: str, default: int | None = None) -> tuple[str, int]:
    if part.startswith("["):  # an IPv6 address: [::1]:15002
        host, _, rest = part[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else rest
    else:
        host, sep, port = part.rpartition(":")
        if not sep:
            host, port = part, ""
    if not host or any(c in host for c in "/?#@ []") or (":" in host and not part.startswith("[")):
        raise SparkURLError(f"{what}={url!r} has no valid host: {hint}")
    if not port:
        if default is None:
            raise SparkURLError(f"{what}={url!r} has no port: {hint}")
        return host, default
    return host, _port(port, url, what, hint)


def parse_master(url: str, source: str = "WORKBENCH_MASTER") -> SparkTarget:
    """Check a Spark master URL and say what it points at.

    Parameters
    ----------
    url : str
        ``local[N]``, ``spark://HOST:PORT[,HOST:PORT...]``, ``yarn`` or ``k8s://...``.
    source : str
        Named in error messages (the variable or setting it came from).

    Returns
    -------
    SparkTarget

    Raises
    ------
    SparkURLError
        For anything Spark would refuse or misread (no port, a typo in the scheme).

    Examples
    --------
    >>> parse_master("spark://127.0.0.1:7077,127.0.0.1:7078").endpoints
    (('127.0.0.1', 7077), ('127.0.0.1', 7078))
    >>> parse_master("spark://host")
    Traceback (most recent call last):
    ...
    workbench._spark_target.SparkURLError: WORKBENCH_MASTER='spark://host' has no port: use local[N], spark://HOST:PORT, yarn or k8s://https://HOST:PORT
    """
    url = _without_lone_bracket(url, source, _MASTER_HINT)
    if _LOCAL.match(url):
        return SparkTarget("embedded", url, source)
    if url == "yarn":
        return SparkTarget("cluster", url, source)
    if url.startswith("spark://"):
        parts = url[len("spark://"):].split(",")
        endpoints = tuple(_host_port(part, url, source, _MASTER_HINT) for part in parts)
        return SparkTarget("cluster", url, source, endpoints)
    if url.startswith("k8s://"):
        try:
            api = urlsplit(url[len("k8s://"):] if "://" in url[len("k8s://"):] else "https://" + url[len("k8s://"):])
        except ValueError as error:  # e.g. [not-an-address]
            raise SparkURLError(f"{source}={url!r} has a bad API server address ({error}): {_MASTER_HINT}") from None
        if not api.hostname:
            raise SparkURLError(f"{source}={url!r} has no API server host: {_MASTER_HINT}")
        try:
            port = api.port or (80 if api.scheme == "http" else 443)
        except ValueError:
            raise SparkURLError(f"{source}={url!r} has a bad port: {_MASTER_HINT}") from None
        return SparkTarget("cluster", url, source, ((api.hostname, port),))
    raise SparkURLError(f"{source}={url!r} is not a Spark master URL: {_MASTER_HINT}")


def parse_remote(url: str, source: str = "SPARK_REMOTE") -> SparkTarget:
    """Check a Spark Connect URL (``sc://HOST[:PORT][/;param=value...]``) and say where it points.

    ``local[N]`` is pyspark's own: it starts a Connect server on this machine.

    Examples
    --------
    >>> parse_remote("sc://127.0.0.1/;user_id=me").endpoints
    (('127.0.0.1', 15002),)
    >>> parse_remote("127.0.0.1:15002")
    Traceback (most recent call last):
    ...
    workbench._spark_target.SparkURLError: SPARK_REMOTE='127.0.0.1:15002' is not a Spark Connect URL: use sc://HOST:PORT (e.g. sc://127.0.0.1:15002) or local[N]
    """
    url = _without_lone_bracket(url, source, _REMOTE_HINT)
    if _LOCAL.match(url):
        return SparkTarget("embedded", url, source)
    if not url.startswith("sc://"):
        raise SparkURLError(f"{source}={url!r} is not a Spark Connect URL: {_REMOTE_HINT}")
    netloc = url[len("sc://"):].split("/", 1)[0]
    endpoint = _host_port(netloc, url, source, _REMOTE_HINT, default=CONNECT_DEFAULT_PORT)
    return SparkTarget("connect", url, source, (endpoint,))


def _without_lone_bracket(url: str, source: str, hint: str) -> str:
    """``url`` without surrounding blanks; a one-line error for an IPv6 bracket left open (``sc://[::1``).

    >>> _without_lone_bracket("sc://[::1", "SPARK_REMOTE", "use sc://HOST:PORT")
    Traceback (most recent call last):
    ...
    workbench._spark_target.SparkURLError: SPARK_REMOTE='sc://[::1' has an unmatched '[': use sc://HOST:PORT
    """
    url = url.strip()
    if url.count("[") != url.count("]"):
        lone = "[" if url.count("[") > url.count("]") else "]"
        raise SparkURLError(f"{source}={url!r} has an unmatched {lone!r}: {hint}")
    return url


def spark_target(environ: Mapping[str, str], master: str | None = None) -> SparkTarget:
    """The Spark a new session would use: ``SPARK_REMOTE``, else the master, else ``local[2]``.

    Parameters
    ----------
    environ : mapping
        Where to read ``SPARK_REMOTE`` and ``WORKBENCH_MASTER``.
    master : str, optional
        A ``spark.master`` setting given to the session; it wins over ``WORKBENCH_MASTER``.

    Raises
    ------
    SparkURLError
        For a malformed URL.

    Examples
    --------
    >>> spark_target({"SPARK_REMOTE": "sc://localhost"}).url
    'sc://localhost'
    """
    remote = environ.get("SPARK_REMOTE")
    if remote:
        return parse_remote(remote)
    if master:
        return parse_master(master, "spark.master")
    if environ.get("WORKBENCH_MASTER"):
        return parse_master(environ["WORKBENCH_MASTER"])
    return SparkTarget("embedded", "local[2]", "default")


def _why_not(host: str, port: int, timeout: float) -> str | None:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except socket.gaierror as error:
        return f"unknown host {host} ({error.strerror})"
    except ConnectionRefusedError:
        return "connection refused"
    except (socket.timeout, TimeoutError):
        return f"no answer within {timeout:g} s"
    except OSError as error:
        return (error.strerror or str(error)).lower()


def unreachable(target: SparkTarget, timeout: float = 5.0) -> str | None:
    """Why nothing answers at ``target``, or None when one of its endpoints accepts a connection.

    Only a TCP connection is tried: no JVM starts. A target without endpoints (embedded,
    ``yarn``) counts as reachable.

    Examples
    --------
    >>> unreachable(parse_master("spark://127.0.0.1:1"))
    'connection refused'
    """
    reasons = [_why_not(host, port, timeout) for host, port in target.endpoints]
    if not reasons or any(reason is None for reason in reasons):
        return None
    return reasons[0] if len(set(reasons)) == 1 else "; ".join(
        f"{host}:{port} {reason}" for (host, port), reason in zip(target.endpoints, reasons))


def doctor_line(environ: Mapping[str, str]) -> tuple[str, bool]:
    """``workbench doctor``'s line for Spark: which Spark a session would use and whether it answers.

    A malformed URL is its one-line error; only a TCP connection is tried (no JVM).

    Examples
    --------
    >>> doctor_line({"SPARK_REMOTE": "sc://[::1"})
    ("spark       SPARK_REMOTE='sc://[::1' has an unmatched '[': use sc://HOST:PORT (e.g. sc://127.0.0.1:15002) or local[N]", False)
    """
    try:
        target = spark_target(environ)
    except SparkURLError as error:
        return f"{'spark':<11} {error}", False
    if target.source == "SPARK_REMOTE" and target.kind == "embedded":
        try:  # the checks the session makes before pyspark starts a Connect server here
            require_free_connect_port(connect_port(environ), target.url)
        except (SparkURLError, ConnectPortInUseError) as error:
            return f"{'spark':<11} {error}", False
    if not target.endpoints:
        note = "" if target.kind == "embedded" else ": not checked (the URL names no address to try)"
        return f"{'spark':<11} {target.describe()}{note}", True
    reason = unreachable(target, timeout=3.0)
    if reason is None:
        return f"{'spark':<11} {target.describe()}: reachable", True
    return f"{'spark':<11} {target.describe()}: cannot reach {target.url}: {reason}", False


def _spark_home_version(home: Path) -> str | None:
    """The version of the Spark at ``home`` without starting a JVM: ``RELEASE`` of a distribution (``Spark
    4.0.0 built for Hadoop 3.4.1``), else the name of ``jars/spark-core_*.jar`` (pip's pyspark has no RELEASE)."""
    try:
        release = re.match(r"\s*Spark (\S+)", (home / "RELEASE").read_text(errors="replace"))
    except OSError:
        release = None
    if release:
        return release[1]
    jars = (re.fullmatch(r"spark-core_[\d.]+-(.+)\.jar", jar.name) for jar in (home / "jars").glob("spark-core_*"))
    return next((jar[1] for jar in jars if jar), None)


def _release(version: str) -> str:
    # 4.1.0.dev0 (pyspark) and 4.1.0-SNAPSHOT (its jars) are one Spark
    return found[0] if (found := re.match(r"\d+\.\d+\.\d+", version)) else version


def spark_home_line(environ: Mapping[str, str], pyspark_version: str | None) -> tuple[str | None, bool]:
    """``workbench doctor``'s line for ``SPARK_HOME`` (None when it is unset), and whether sessions can use it.

    With ``SPARK_HOME`` set, pyspark starts Spark with its ``bin/spark-submit``, which must be
    there and of pyspark's version (a Spark Connect server of ``SPARK_REMOTE`` needs neither).

    Parameters
    ----------
    environ : mapping
        Where ``SPARK_HOME`` (and ``SPARK_REMOTE``) are read.
    pyspark_version : str or None
        The installed pyspark's version.

    Returns
    -------
    tuple of (str or None, bool)

    Examples
    --------
    >>> spark_home_line({"SPARK_HOME": "/nonexistent"}, "4.0.1")
    ("SPARK_HOME  /nonexistent has no bin/spark-submit, which sessions start Spark with: unset SPARK_HOME, or point it at the Spark of pyspark's version (4.0.1)", False)
    """
    home = environ.get("SPARK_HOME")
    if not home:
        return None, True
    line = f"{'SPARK_HOME':<11} {home}"
    try:
        if spark_target(environ).kind == "connect":
            return f"{line} (not used: sessions connect to SPARK_REMOTE)", True
    except SparkURLError:
        pass  # the spark line says what is wrong with the URL
    fix = f"unset SPARK_HOME, or point it at the Spark of pyspark's version ({pyspark_version})"
    if not (Path(home) / "bin" / "spark-submit").is_file():
        return f"{line} has no bin/spark-submit, which sessions start Spark with: {fix}", False
    version = _spark_home_version(Path(home))
    if version is None:
        return f"{line}: Spark of unknown version (no RELEASE file or jars/spark-core_*.jar)", True
    if pyspark_version and _release(version).split(".")[:2] != _release(pyspark_version).split(".")[:2]:
        return f"{line} holds Spark {version}, not pyspark's {pyspark_version}: {fix}", False
    if pyspark_version and _release(version) != _release(pyspark_version):  # patch releases of a minor work together
        return f"{line}: Spark {version} (pyspark {pyspark_version}: another patch release of the same Spark)", True
    return f"{line}: Spark {version}", True


def require_reachable(target: SparkTarget, timeout: float = 5.0) -> None:
    """Raise :class:`SparkUnreachableError` (one line) unless ``target`` answers.

    Examples
    --------
    >>> require_reachable(parse_remote("sc://127.0.0.1:1"))
    Traceback (most recent call last):
    ...
    workbench._spark_target.SparkUnreachableError: cannot reach sc://127.0.0.1:1: connection refused (is the Spark Connect server running? SPARK_REMOTE names it)
    """
    reason = unreachable(target, timeout)
    if reason is None:
        return
    server = "Spark Connect server" if target.kind == "connect" else "master"
    raise SparkUnreachableError(
        f"cannot reach {target.url}: {reason} (is the {server} running? {target.source} names it)"
    )


def connect_port(environ: Mapping[str, str]) -> int:
    """The port for a Spark Connect server started here: ``WORKBENCH_CONNECT_PORT``, else 15002.

    Only used with ``SPARK_REMOTE=local[N]``, where pyspark starts a server inside the
    kernel; two kernels on one machine need two ports.

    Raises
    ------
    SparkURLError
        When ``WORKBENCH_CONNECT_PORT`` is not a port number.

    Examples
    --------
    >>> connect_port({}), connect_port({"WORKBENCH_CONNECT_PORT": "15003"})
    (15002, 15003)
    >>> connect_port({"WORKBENCH_CONNECT_PORT": "http"})
    Traceback (most recent call last):
    ...
    workbench._spark_target.SparkURLError: WORKBENCH_CONNECT_PORT='http' is not a port: use a whole number from 1024 to 65535 (e.g. 15003)
    """
    text = environ.get("WORKBENCH_CONNECT_PORT", "").strip()
    if not text:
        return CONNECT_DEFAULT_PORT
    if not text.isdigit() or not 1024 <= int(text) <= 65535:
        raise SparkURLError(
            f"WORKBENCH_CONNECT_PORT={text!r} is not a port: use a whole number from 1024 to 65535 (e.g. 15003)")
    return int(text)


def _taken(port: int) -> bool:
    # The server binds 127.0.0.1 with SO_REUSEADDR: a bind like its own fails exactly when its would.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def port_holder(port: int) -> int | None:
    """The id of a process of this user listening on TCP ``port``, or None if none is found.

    Read from ``/proc`` (Linux): the listening socket's inode, then the process holding it.
    Other users' processes and other systems give None.
    """
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            # local address "ADDR:PORT" in hex, state 0A = LISTEN, inode in column 10
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{fields[9]}]")
    if not inodes:
        return None
    holders = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fds = os.listdir(f"/proc/{entry}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{entry}/fd/{fd}") in inodes:
                    holders.add(int(entry))
                    break
            except OSError:
                continue
    return _opener(holders, _parent_pid)


def _parent_pid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _opener(holders: set[int], parent_of: Callable[[int], int | None]) -> int | None:
    """Of the processes holding one socket, the one that opened it.

    A descendant that inherited the socket holds it too, and process ids wrap around, so the
    lowest id is not necessarily the oldest: the opener is the holder none of whose ancestors
    is a holder.
    """
    def has_holding_ancestor(pid: int) -> bool:
        seen = set()
        parent = parent_of(pid)
        while parent and parent not in seen:
            if parent in holders:
                return True
            seen.add(parent)
            parent = parent_of(parent)
        return False

    roots = [pid for pid in holders if not has_holding_ancestor(pid)]
    return min(roots or holders) if holders else None


def require_free_connect_port(port: int, remote: str) -> None:
    """Raise :class:`ConnectPortInUseError` (one line) when ``port`` is taken on this machine.

    Checked before pyspark starts a local Spark Connect server (``SPARK_REMOTE=local[N]``):
    otherwise the server of a second kernel fails to bind its port, and its client reaches
    the first kernel's server instead, which refuses it (each server accepts only the
    random token of the kernel that started it).
    """
    if not _taken(port):
        return
    pid = port_holder(port)
    holder = f" (pid {pid})" if pid is not None else ""
    free = next((p for p in range(port + 1, port + 100) if p <= 65535 and not _taken(p)), None)
    raise ConnectPortInUseError(
        f"Spark Connect port {port} is in use by another process{holder}, e.g. another notebook's "
        f"SPARK_REMOTE={remote} server, which serves only its own kernel: set WORKBENCH_CONNECT_PORT="
        f"{free or 'PORT'} to start one for this kernel, or SPARK_REMOTE=sc://HOST:PORT to use a shared server"
    )

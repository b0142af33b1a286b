"""A lock on a results directory: one run at a time writes into it.

Snakemake locks its *working directory* (``.snakemake/locks``); two runs started from
different working directories with the same results directory would both run the same
jobs. :func:`acquire` creates ``<results>/.sparsesvm.lock`` holding who runs (pid, host,
working directory, start time, command); a second run is refused with a
:class:`ResultsLockedError` naming the holder and the way out. A lock whose process is
gone (same host, pid no longer running: a run killed with SIGKILL) is stale and taken
over. The lock file is created complete in one step (``os.link`` of a written temporary
file: atomic, and fails if the lock exists), so a reader never sees a half-written lock.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

__all__ = ["LOCK_NAME", "ResultsLockedError", "acquire", "release", "holder"]

#: Name of the lock file inside the results directory.
LOCK_NAME = ".sparsesvm.lock"


class ResultsLockedError(RuntimeError):
    """The results directory is locked by another run (the message says which and what to do)."""


def _me():
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "cwd": os.getcwd(),
        "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "command": " ".join(sys.argv),
    }


def holder(directory):
    """The record of the run holding the lock of ``directory``, or None when unlocked.

    Returns
    -------
    dict or None
        ``pid``, ``host``, ``cwd``, ``started``, ``command`` (an unreadable lock file
        gives ``{"unreadable": <reason>}``).
    """
    path = Path(directory) / LOCK_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        record = json.loads(text)
        if not isinstance(record, dict):
            raise ValueError("not a JSON object")
        return record
    except ValueError as exc:
        return {"unreadable": f"{exc}"}


def _alive(pid):
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _is_stale(record):
    """True when the holder certainly ended: same host, its pid no longer runs."""
    if "pid" not in record or record.get("host") != socket.gethostname():
        return False
    return not _alive(record["pid"])


def _describe(record):
    if "unreadable" in record:
        return f"an unreadable lock ({record['unreadable']})"
    return (f"pid {record.get('pid')} on host {record.get('host')}, working directory "
            f"{record.get('cwd')}, started {record.get('started')}: {record.get('command')}")


def acquire(directory):
    """Lock ``directory`` for this process (created if needed).

    Parameters
    ----------
    directory : str or Path
        The results directory.

    Returns
    -------
    pathlib.Path
        The lock file.

    Raises
    ------
    ResultsLockedError
        Another live run holds the lock (or one on another host, which cannot be
        checked): the message names it and the way out.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / LOCK_NAME
    me = _me()
    tmp = directory / f"{LOCK_NAME}.{me['host']}.{me['pid']}.tmp"
    for _ in range(3):
        tmp.write_text(json.dumps(me, indent=1) + "\n", encoding="utf-8")
        try:
            os.link(tmp, path)  # atomic, complete, and fails if a lock exists
            linked = True
        except FileExistsError:
            linked = False
        finally:
            tmp.unlink()
        if linked:
            return path
        record = holder(directory)
        if record is None:  # released meanwhile
            continue
        if record.get("pid") == me["pid"] and record.get("host") == me["host"]:
            return path  # already ours
        if _is_stale(record):
            print(f"removing the stale lock of a run that ended without releasing it ({_describe(record)})",
                  file=sys.stderr)
            try:
                path.unlink()
            except FileNotFoundError:
                pass
            continue
        raise ResultsLockedError(
            f"results directory {directory} is in use by another run ({_describe(record)}). "
            "Two runs on one results directory would run the same jobs twice. Wait for that run to end, "
            "or give this one another results directory (--config results=<dir>). If that run is not "
            f"alive any more (killed on another host, or its pid reused), delete {path} and run again."
        )
    raise ResultsLockedError(f"could not lock {directory}: {path} keeps appearing; is another run starting?")


def release(directory):
    """Remove the lock of ``directory`` if this process holds it; True if removed."""
    path = Path(directory) / LOCK_NAME
    record = holder(directory)
    if record and record.get("pid") == os.getpid() and record.get("host") == socket.gethostname():
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        return True
    return False

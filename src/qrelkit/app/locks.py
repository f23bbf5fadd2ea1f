"""Advisory locks the app holds beside SQLite's own: one byte of a file, locked without waiting.

An open-file-description lock (Linux's ``F_OFD_SETLK``) holds between threads of one process as well as
between processes, is not dropped when another descriptor of the same file closes (POSIX ``lockf`` locks
are, which matters on a database file whose descriptors SQLite opens and closes), and the kernel releases it
however the process ends. Where OFD locks do not exist, ``lockf`` on that byte (between processes only), or
``flock`` on the whole file for a file SQLite also locks.

Used by the lock of a model labeller's runs (:func:`qrelkit.app.models.runner.run_lock`) and by ``judge
serve``'s lock of the database file itself (:mod:`qrelkit.app.web.server`).
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct

__all__ = ["try_lock_byte"]


def try_lock_byte(fd: int, offset: int, *, whole_file_fallback: bool = False) -> bool:
    """Lock byte ``offset`` of the open file ``fd`` for writing, without waiting: ``True`` when taken,
    ``False`` when another process or thread holds it. Any other failure is raised as the ``OSError``."""
    try:
        if hasattr(fcntl, "F_OFD_SETLK"):
            request = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, offset, 1, 0)
            fcntl.fcntl(fd, fcntl.F_OFD_SETLK, request)
        elif whole_file_fallback:  # pragma: no cover - platforms without OFD locks
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        else:  # pragma: no cover - platforms without OFD locks
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True

"""Writing an output file: the one owner of how every result, pool, manifest and export reaches the disk.

A file is written whole to a temporary name in its target's folder, flushed to the disk, and renamed over
the target, so a failed write (a full disk, a quota, a lost mount) leaves neither a partial file nor a stray
temporary one, and an existing target is untouched. Files that go together (qrels and their manifest, a pool
and its ``.meta.json``) are all written before any is renamed. A target that is a device or a FIFO
(``/dev/stdout``, ``/dev/full``) cannot be renamed over: it is written directly, and files that go beside
it are refused, since they would land in the device's folder. A failure is an
:class:`~qrelkit.errors.OutputError`: one line naming the file, the reason and the fix.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from ..errors import OutputError

__all__ = ["check_output", "write_output", "write_outputs"]


def _failed(path: Path, exc: OSError) -> OutputError:
    reason = exc.strerror or type(exc).__name__
    if isinstance(exc, PermissionError):
        fix = "choose a path this user may write, or change its permissions"
    elif isinstance(exc, FileNotFoundError) and not path.parent.is_dir():
        return OutputError(
            f"cannot write: the folder {str(path.parent)!r} does not exist",
            source=str(path),
            fix="create it first, or choose another path",
        )
    else:
        fix = "free space on the disk (or choose another path) and run the command again"
    return OutputError(f"cannot write ({reason}); nothing was written", source=str(path), fix=fix)


def check_output(path: str | os.PathLike[str]) -> None:
    """Refuse, before any work, an output whose folder is missing or not writable: the error
    :func:`write_output` would give at the end, said at the start (a long command loses nothing)."""
    target = Path(path)
    if _is_device(target):
        return
    folder = target.parent
    if not folder.is_dir():
        raise _failed(target, FileNotFoundError(2, "No such file or directory"))
    if not os.access(folder, os.W_OK | os.X_OK):
        raise _failed(target, PermissionError(13, "Permission denied"))


def _is_device(path: Path) -> bool:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _mode_for(path: Path) -> int:
    """An existing target's permission bits, else those a new file gets under the umask."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return 0o666 & ~_umask()


def _umask() -> int:
    """The process's umask, read without changing it where the system says it (Linux: a second thread
    creating a file meanwhile must not see a cleared umask), else set and restored."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def write_outputs(files: Sequence[tuple[str | os.PathLike[str], str | bytes]]) -> None:
    """Write every ``(path, data)`` (text is UTF-8), all or none: each to a temporary name beside its
    target, then each renamed over its target. A single target that is a device or FIFO is written
    directly; a device among several targets is refused before anything is written."""
    targets = [(Path(p), d.encode("utf-8") if isinstance(d, str) else d) for p, d in files]
    devices = [p for p, _ in targets if _is_device(p)]
    if devices:
        if len(targets) > 1:
            raise OutputError(
                "is a device, not a file, and this output writes "
                + ", ".join(repr(p.name) for p, _ in targets if p != devices[0])
                + " beside it",
                source=str(devices[0]),
                fix="name a file in a folder, where the files that go with it can be written too",
            )
        path, data = targets[0]
        try:
            with path.open("wb") as handle:
                handle.write(data)
        except OSError as exc:
            raise _failed(path, exc) from None
        return
    written: list[tuple[Path, Path]] = []
    try:
        for path, data in targets:
            if path.is_dir():
                raise OutputError("is a folder, not a file", source=str(path), fix="name a file inside it")
            try:
                fd = os.open(
                    path.parent / f".{path.name}.{os.getpid()}.tmp",
                    os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                    _mode_for(path),
                )
            except OSError as exc:
                raise _failed(path, exc) from None
            temporary = path.parent / f".{path.name}.{os.getpid()}.tmp"
            written.append((temporary, path))
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
            except OSError as exc:
                raise _failed(path, exc) from None
        for temporary, path in written:
            try:
                os.replace(temporary, path)
            except OSError as exc:
                raise _failed(path, exc) from None
        written = []
    finally:
        for temporary, _ in written:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def write_output(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write one output file all or nothing (see :func:`write_outputs`)."""
    write_outputs([(path, data)])

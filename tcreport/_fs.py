"""File-system helpers shared by every writer (reports, ingest folders, batch datasets).

The user's files are sacred. Every output goes through here so that the safe behaviour is the only
one: an output never lands on an input of the same command; a folder is replaced only when tcreport
made it (it carries :data:`MARKER`) and only by unlinking the files tcreport put there, never by
``rmtree`` of whatever the path resolves to; replacing a file keeps its mode; a read-only file or a
symbolic link is written only when the caller says so.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO

from tcreport.errors import OutputError

#: Written into every folder tcreport creates as a whole (``ingest`` folders, ``batch`` OUT). Its
#: presence is what lets ``--force`` replace an ingest folder and a batch add to an existing OUT.
MARKER = ".tcreport-output"


def current_umask() -> int:
    """The process umask, read by setting and restoring it (tcreport writes from one thread).

    Atomic writes go through ``tempfile``, which creates 0600 files and 0700 folders; outputs meant
    for sharing get the permissions a plain ``open`` would have given them.
    """
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)  # hard links and bind mounts too
    except OSError:
        return False


def refuse_inputs(output: Path, inputs: Iterable[Path | None]) -> None:
    """Raise :class:`OutputError` when ``output`` would land on or inside an input of the command.

    Symbolic links, hard links and ``..`` are resolved first. Refused: the input itself (or a
    hard link to it), a folder that is or contains an input, and anything inside an input
    folder, new or not: a report, ingest folder or batch OUT written there would be read as input
    by the next ``report`` or ``batch`` of that folder (and a folder's reader may take any file
    in it). The rule is the same for ``report``, ``summary -o``, ``export``, ``diff``, ``ingest``
    and ``batch``.
    """
    out = _real(output)
    for given in inputs:
        if given is None or not os.path.lexists(given):
            continue
        src = _real(given)
        if out == src or _same_file(out, src):
            raise OutputError(f"is the input {given}; refusing to write over it", output)
        if src.is_relative_to(out):
            raise OutputError(f"contains the input {given}; refusing to write there", output)
        if src.is_dir() and out.is_relative_to(src):
            raise OutputError(
                f"is inside the input folder {given}; refusing to write there, where the next "
                "report or batch of that folder would read it as input (choose a path outside)",
                output,
            )


def refuse_read(output: Path, source: Path, names: Iterable[str]) -> None:
    """Raise :class:`OutputError` when ``output`` is a file the reader of ``source`` read.

    A reader may read more than the file it was given (the xplane reader's
    ``tcreport-capture.json``, DLProf's sibling reports): ``names`` are the base names it lists in
    ``RunMeta.files``, found beside ``source`` (or inside it, for a folder).
    """
    base = source if source.is_dir() else source.parent
    out = _real(output)
    for name in names:
        read = base / name
        if os.path.lexists(read) and (out == _real(read) or _same_file(out, read)):
            raise OutputError(
                f"is a file the input {source} was read with; refusing to write over it", output
            )


def _read_only(path: Path) -> bool:
    """Unwritable to us, or without its owner's write bit (which root would ignore)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return False
    return not (mode & stat.S_IWUSR) or not os.access(path, os.W_OK)


def check_file_target(
    path: Path, *, follow_link: bool = False, replace_read_only: bool = False
) -> Path:
    """The file to replace for output ``path``, after refusing what the user did not ask for.

    A symbolic link is refused unless ``follow_link`` (then its target is written and the link
    stays); a read-only file is refused unless ``replace_read_only`` (it stays read-only).
    """
    if path.is_symlink():
        if not follow_link:
            raise OutputError(
                "is a symbolic link; pass --follow-link to write the file it points to", path
            )
        target = _real(path)
    else:
        target = Path(os.path.abspath(path))
    if target.is_dir():
        raise OutputError("is a directory; give a file name", path)
    try:
        kind = os.stat(target).st_mode
    except OSError:
        kind = None
    if kind is not None and not stat.S_ISREG(kind):  # a FIFO, device, socket: never renamed over
        raise OutputError("exists and is not a regular file; refusing to replace it", path)
    if not target.parent.is_dir():
        raise OutputError("parent directory does not exist", path)
    if _read_only(target) and not replace_read_only:
        raise OutputError("is read-only; pass --replace-read-only to replace it", path)
    return target


def write_text_atomic(
    path: str | Path, text: str, *, follow_link: bool = False, replace_read_only: bool = False
) -> Path:
    """Write ``text`` to ``path`` via a temporary file in the same directory, then rename.

    A replaced file keeps its mode; a symbolic link or a read-only file is refused unless the
    matching flag says to write it (:func:`write_atomic`).
    """
    # A lone surrogate is a file name's undecodable byte as Python holds it (0xff -> U+DCFF): it
    # is written as its escape ("\\udcff"), so the file stays UTF-8 and names it as a terminal does.
    return write_atomic(
        Path(path),
        lambda fh: fh.write(text.encode("utf-8", "backslashreplace")),
        follow_link=follow_link,
        replace_read_only=replace_read_only,
    )


def write_atomic(
    path: Path,
    writer: Callable[[IO[bytes]], object],
    *,
    follow_link: bool = False,
    replace_read_only: bool = False,
) -> Path:
    """Write through ``writer`` to a temporary file beside the target, then rename it into place.

    A replaced file keeps its permission bits; a new one gets what ``open`` would give it.
    """
    target = check_file_target(path, follow_link=follow_link, replace_read_only=replace_read_only)
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~current_umask()
    try:
        with tempfile.NamedTemporaryFile(
            dir=target.parent,
            prefix=".tcr-",
            suffix=".tmp",
            delete=False,  # any valid name fits
        ) as fh:
            tmp = Path(fh.name)
            try:
                writer(fh)
            except BaseException:
                fh.close()
                tmp.unlink(missing_ok=True)
                raise
        try:
            os.chmod(tmp, mode)
            os.replace(tmp, target)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise OutputError(f"cannot write: {exc.strerror or exc}", path) from exc
    return target


def claim_folder(
    folder: Path,
    kind: str,
    legacy: Sequence[str] = (),
    is_legacy: Callable[[Path], bool] | None = None,
    scratch: Sequence[str] = (),
) -> None:
    """Create ``folder`` (marked), or accept it when it is empty, marked, or an unmarked tcreport
    output from before the marker (every entry named in ``legacy``, and ``is_legacy(folder)``
    confirms its content is tcreport's); refuse any other folder.

    Writers that add to a folder (``batch`` OUT) call this first, so a typo'd ``-o`` never spills
    datasets and reports into a user's folder. Names alone prove nothing: a user's web site has a
    ``dataset/`` and an ``index.html`` too, hence ``is_legacy``.
    """
    if os.path.lexists(folder):
        if not folder.is_dir():
            raise OutputError("exists and is not a folder", folder)
        if has_marker(folder):
            return
        try:  # ``scratch``: names only tcreport makes (its lock, its staging), not content
            entries = [e for e in os.listdir(folder) if e not in scratch]
        except OSError as exc:
            raise OutputError(f"cannot list: {exc.strerror}", folder) from exc
        named = bool(legacy) and set(entries) <= set(legacy) and legacy[0] in entries
        if entries and not (named and (is_legacy is None or is_legacy(folder))):
            raise OutputError(
                f"exists and is not a 'tcreport {kind}' output; refusing to write into it "
                "(choose a new or empty folder)",
                folder,
            )
    else:
        try:
            folder.mkdir(parents=True)
        except FileExistsError:  # another tcreport made it meanwhile: judge it as it is now
            return claim_folder(folder, kind, legacy, is_legacy, scratch)
        except OSError as exc:
            raise OutputError(f"cannot create: {exc.strerror}", folder) from exc
    try:
        write_marker(folder, kind)
    except OSError as exc:
        raise OutputError(f"cannot write: {exc.strerror}", folder) from exc


def write_marker(folder: Path, kind: str) -> None:
    """Mark ``folder`` as made by tcreport (``kind``: ``ingest`` or ``batch``)."""
    (folder / MARKER).write_text(f"tcreport {kind}\n", encoding="utf-8")


def has_marker(folder: Path) -> bool:
    return (folder / MARKER).is_file() and not (folder / MARKER).is_symlink()


def check_replaceable(
    folder: Path, own_names: Sequence[str], legacy: str | None = None
) -> list[str]:
    """The entries of ``folder`` that replacing it will unlink; refuse anything tcreport did not make.

    ``folder`` must be a real directory (not a link) that carries :data:`MARKER` (or, made before
    the marker existed, holds ``legacy``), and every entry must be a regular file named in
    ``own_names``: a user file dropped in later is never deleted with it. An empty folder holds
    nothing to lose and may be replaced.
    """
    if folder.is_symlink():
        raise OutputError("is a symbolic link; refusing to replace it", folder)
    if not folder.is_dir():
        raise OutputError(
            "exists and is not a folder tcreport wrote; refusing to replace it", folder
        )
    try:
        entries = sorted(os.listdir(folder))
    except OSError as exc:
        raise OutputError(f"cannot list: {exc.strerror}", folder) from exc
    if not entries:
        return []
    if not has_marker(folder) and (legacy is None or legacy not in entries):
        raise OutputError(
            "exists and was not written by tcreport; refusing to replace it (choose a new folder)",
            folder,
        )
    allowed = {*own_names, MARKER}
    foreign = [
        e for e in entries if e not in allowed or not stat.S_ISREG(os.lstat(folder / e).st_mode)
    ]
    if foreign:
        shown = ", ".join(foreign[:3]) + (" ..." if len(foreign) > 3 else "")
        raise OutputError(
            f"holds files tcreport did not write ({shown}); refusing to replace it", folder
        )
    return entries


@contextlib.contextmanager
def locked(target: Path) -> Iterator[None]:
    """Hold an exclusive lock for replacing ``target``, so two commands never swap it at once.

    The lock file sits beside ``target`` (``.tcr-<hash>.lock``, any name length fits) and is
    removed when done; a waiter that wakes on a lock file already removed takes a fresh one, so
    removal never lets two holders in.
    """
    import hashlib  # only here: loading OpenSSL is a tenth of `tcreport --help`

    digest = hashlib.sha256(os.fsencode(target.name)).hexdigest()[:16]
    lock = target.parent / f".tcr-{digest}.lock"
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except OSError as exc:
            raise OutputError(f"cannot lock: {exc.strerror}", target) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                same = os.path.samestat(os.fstat(fd), os.lstat(lock))
            except FileNotFoundError:
                same = False
            if same:
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # the holder before us removed it: lock the new one
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock)
        os.close(fd)


def replace_folder(tmp: Path, target: Path, entries: Sequence[str]) -> Path | None:
    """Swap the finished ``tmp`` folder into ``target``, then unlink the old one's ``entries``.

    The old folder is renamed aside first (never ``rmtree``), so at every moment ``target`` is
    either the old complete folder or the new one. Call it under :func:`locked`. Anything else
    found in the old folder (a file the user added meanwhile) is never deleted or hidden: the old
    folder is kept under a visible name, which is returned for the caller to announce.
    """
    if not os.path.lexists(target):
        os.replace(tmp, target)
        return None
    os.chmod(tmp, stat.S_IMODE(os.lstat(target).st_mode))  # a replaced folder keeps its mode
    old = Path(tempfile.mkdtemp(dir=target.parent, prefix=".tcr-", suffix=".old"))
    os.rmdir(old)
    os.replace(target, old)
    try:
        os.replace(tmp, target)
    except BaseException:
        os.replace(old, target)
        raise
    for name in entries:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(old / name)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(old / MARKER)
    try:
        os.rmdir(old)
    except OSError:  # someone added a file meanwhile: keep it, where the user can see it
        kept = Path(tempfile.mkdtemp(dir=target.parent, prefix=f"{target.name[:200]}.kept-"))
        os.replace(old, kept)  # onto the empty folder just made: a name nobody else has
        return kept
    return None

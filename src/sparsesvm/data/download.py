"""Checksummed downloads: one file from URLs tried in order or from a local mirror.

:func:`download` fetches one file (``http(s)://``/``ftp://`` with :mod:`urllib`,
``file://`` URLs and plain paths copied, or ``<mirror>/<name>`` from a mirror
directory), checks it against accepted checksums (of the file, or of its gunzipped
content), rejects HTML error pages and truncated gzip streams, and renames it onto its
destination only once checked (:func:`sparsesvm._io.atomic_path`). :func:`fetch` does
the same by relative name from :data:`sparsesvm.data.sources.SOURCES`;
:func:`check_downloads` checks downloaded files again before a job reads them.

Why not pooch (``pooch.retrieve``, 1.9.0, measured): it refuses ``file://`` URLs and
plain paths (the mirror), takes one URL and one digest (MNIST has three hosts, News20
two accepted digests), hashes the downloaded file before any processor (MNIST's digest
is of the decompressed content), leaves files mode 0600 (the outputs are
``0o666 & ~umask``), and its mismatch error names the file's base name only.
"""

from __future__ import annotations

import contextlib
import glob
import gzip
import hashlib
import os
import urllib.parse
import urllib.request
import zlib
from pathlib import Path

from .._io import atomic_path
from .sources import SOURCES

__all__ = [
    "ChecksumError",
    "DownloadError",
    "GZIP_MAGIC",
    "download",
    "fetch",
    "file_digest",
    "verify_file",
    "check_downloads",
    "looks_like_html",
]

_CHUNK = 1 << 20
_USER_AGENT = "sparsesvm-downloader/0.1 (+https://github.com; python-urllib)"
#: The first two bytes of a gzip stream.
GZIP_MAGIC = b"\x1f\x8b"


class ChecksumError(ValueError):
    """A file's content does not match the expected checksum.

    Raised for a plain mismatch and for content that cannot be the expected file
    (an HTML error page saved as data, a truncated gzip stream). The message names
    the file, the algorithm, the expected digest(s) and the actual digest.

    Attributes
    ----------
    path : str
        The file (or URL) whose content was checked.
    expected : list of str
        Accepted hex digests.
    actual : str
        Hex digest of the content actually read (of the raw bytes when they could not
        be decompressed).
    algorithm : str
    reason : str or None
        Why the content is wrong beyond the mismatch (e.g. "HTML page").
    attempts : list of str
        One line per source tried, when there were several.
    """

    def __init__(self, path, expected, actual, algorithm="sha256", reason=None, attempts=None):
        self.path = str(path)
        self.expected = list(expected)
        self.actual = actual
        self.algorithm = algorithm
        self.reason = reason
        self.attempts = list(attempts or [])
        exp = self.expected[0] if len(self.expected) == 1 else " or ".join(self.expected)
        msg = f"checksum mismatch for {self.path}: expected {algorithm} {exp}, actual {actual}"
        if reason:
            msg += f" ({reason})"
        if self.attempts:
            msg += "; attempts: " + "; ".join(self.attempts)
        super().__init__(msg)


class DownloadError(OSError):
    """No URL could be fetched (network errors only; bad content is ChecksumError)."""


# --------------------------------------------------------------------------------------
# Checksums
# --------------------------------------------------------------------------------------


def _normalise_checksums(checksum, algorithm):
    if algorithm not in hashlib.algorithms_guaranteed:
        raise ValueError(
            f"unknown checksum algorithm {algorithm!r}; use one of "
            f"{sorted(hashlib.algorithms_guaranteed)}"
        )
    if isinstance(checksum, str):
        checksum = [checksum]
    digests = [str(c).strip().lower() for c in checksum]
    if not digests:
        raise ValueError("checksum: give at least one accepted hex digest")
    size = hashlib.new(algorithm).digest_size * 2
    for d in digests:
        if len(d) != size or any(ch not in "0123456789abcdef" for ch in d):
            raise ValueError(
                f"checksum {d!r} is not a {algorithm} hex digest ({size} hex characters)"
            )
    return digests


def looks_like_html(head: bytes) -> bool:
    """Whether the first bytes of a file are those of an HTML (or XML) page.

    Parameters
    ----------
    head : bytes
        The first bytes of the file (2048 are plenty).
    """
    text = head.lstrip().lower()
    return text.startswith((b"<!doctype html", b"<html", b"<head", b"<?xml")) or (
        text.startswith(b"<") and b"<html" in text[:1024]
    )


def _hash_stream(fh, algorithm):
    h = hashlib.new(algorithm)
    for chunk in iter(lambda: fh.read(_CHUNK), b""):
        h.update(chunk)
    return h.hexdigest()


def _content_digest(path, algorithm, decompressed):
    """Digest of a file (or of its gunzipped content) and what is wrong with it.

    Returns
    -------
    digest : str
        Hex digest of the checked content (of the raw bytes when decompression failed).
    problem : str or None
        "HTML page", "truncated gzip stream", ... or None when the content is readable.
    """
    with open(path, "rb") as fh:
        head = fh.read(2048)
        fh.seek(0)
        raw_digest = _hash_stream(fh, algorithm)
    if looks_like_html(head):
        return raw_digest, "the file is an HTML page (an error page?), not data"
    is_gzip = head[:2] == GZIP_MAGIC
    if decompressed and not is_gzip:
        return raw_digest, "expected a gzip file (no gzip magic number)"
    if is_gzip or decompressed:
        try:
            with gzip.open(path, "rb") as fh:
                inner_digest = _hash_stream(fh, algorithm)
        except EOFError:
            return raw_digest, "truncated gzip stream"
        except (OSError, zlib.error) as exc:
            return raw_digest, f"corrupt gzip stream: {exc}"
        if decompressed:
            return inner_digest, None
    return raw_digest, None


def file_digest(path, algorithm="sha256", *, decompressed=False):
    """Hex digest of a file, or of its gunzipped content when ``decompressed``.

    Parameters
    ----------
    path : str or Path
    algorithm : str
        Any :data:`hashlib.algorithms_guaranteed` name ("sha256", "md5", ...).
    decompressed : bool
        Hash the decompressed content of a gzip file.

    Returns
    -------
    str
        Lower-case hex digest.
    """
    if algorithm not in hashlib.algorithms_guaranteed:
        raise ValueError(f"unknown checksum algorithm {algorithm!r}")
    if not decompressed:
        with open(path, "rb") as fh:
            return _hash_stream(fh, algorithm)
    try:
        with gzip.open(path, "rb") as fh:
            return _hash_stream(fh, algorithm)
    except (EOFError, OSError, zlib.error) as exc:
        raise ValueError(f"{path}: cannot decompress as gzip ({exc})") from exc


def verify_file(path, checksum, *, algorithm="sha256", decompressed=False, name=None):
    """Check a file against accepted checksums; raise :class:`ChecksumError` if it fails.

    Also rejects HTML pages and truncated or corrupt gzip streams (for any file whose
    content starts with the gzip magic number, and for ``decompressed=True``).

    Parameters
    ----------
    path : str or Path
    checksum : str or sequence of str
        Accepted hex digest(s).
    algorithm : str
    decompressed : bool
        The checksum is of the gunzipped content.
    name : str, optional
        Name used in the error message (default: ``path``).

    Returns
    -------
    str
        The matching digest.
    """
    digests = _normalise_checksums(checksum, algorithm)
    actual, problem = _content_digest(path, algorithm, decompressed)
    label = name or str(path)
    if problem is not None:
        raise ChecksumError(label, digests, actual, algorithm, reason=problem)
    if actual not in digests:
        what = "of the decompressed content" if decompressed else None
        raise ChecksumError(label, digests, actual, algorithm, reason=what)
    return actual


def check_downloads(paths, sources):
    """Check downloaded files again before reading them (every consumer does).

    A file changed after its download (edited, truncated, replaced) is refused, naming
    it, instead of being read into the features.

    Parameters
    ----------
    paths : mapping of str to str or Path
        Key (e.g. "train_images") -> downloaded file.
    sources : mapping of str to dict
        Key -> its entry ``{"checksum", "algorithm", "decompressed", ...}`` (the
        workflow's ``config["downloads"][dataset]``).

    Raises
    ------
    ChecksumError
        Naming the file, both digests and the way out (delete it, rerun).
    """
    for key, path in paths.items():
        entry = sources[key]
        algorithm = entry.get("algorithm", "sha256")
        try:
            verify_file(path, entry["checksum"], algorithm=algorithm,
                        decompressed=bool(entry.get("decompressed", False)))
        except ChecksumError as exc:
            hint = "changed since its download: delete it and run again to download it again"
            reason = f"{exc.reason}; {hint}" if exc.reason else hint
            raise ChecksumError(path, exc.expected, exc.actual, algorithm, reason=reason) from None


# --------------------------------------------------------------------------------------
# Downloads
# --------------------------------------------------------------------------------------


class _TruncatedTransfer(Exception):
    pass


def _url_to_local_path(url):
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme == "file":
        return Path(urllib.request.url2pathname(parsed.path))
    if parsed.scheme in ("", ) or (len(parsed.scheme) == 1 and os.name == "nt"):
        return Path(url)
    return None


def _copy_stream(src, dst, expected_length=None):
    n = 0
    for chunk in iter(lambda: src.read(_CHUNK), b""):
        dst.write(chunk)
        n += len(chunk)
    if expected_length is not None and n != expected_length:
        raise _TruncatedTransfer(f"received {n} bytes, the server announced {expected_length}")
    return n


def _fetch(url, out, timeout):
    """Copy one URL (http(s)/ftp, file:// or plain path) into the open file ``out``."""
    local = _url_to_local_path(url)
    if local is not None:
        with open(local, "rb") as src:
            _copy_stream(src, out)
        return
    req = urllib.request.Request(url, headers={"User-Agent": _USER_AGENT})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        length = resp.headers.get("Content-Length") if hasattr(resp, "headers") else None
        _copy_stream(resp, out, int(length) if length and length.isdigit() else None)


def _fetch_checked(url, tmp, digests, algorithm, decompressed, timeout):
    """Copy ``url`` into the file ``tmp`` and check it; :class:`ChecksumError` if it is wrong."""
    with open(tmp, "wb") as out:
        try:
            _fetch(url, out, timeout)
        except _TruncatedTransfer as exc:
            out.flush()
            actual, _ = _content_digest(tmp, algorithm, False)
            reason = f"truncated: {exc}"
            raise ChecksumError(url, digests, actual, algorithm, reason=reason) from None
        out.flush()
        os.fsync(out.fileno())
    verify_file(tmp, digests, algorithm=algorithm, decompressed=decompressed, name=url)


def _failure(dest, sources, digests, algorithm, attempts, content_errors):
    """The error of a download that no source satisfied: bad content, else unreachable."""
    if not content_errors:
        return DownloadError(f"could not download {dest}: " + "; ".join(attempts))
    last = content_errors[-1]
    if len(sources) > 1:
        return ChecksumError(dest, digests, last.actual, algorithm, reason=last.reason,
                             attempts=attempts)
    reason = f"{last.reason}; source {sources[0]}" if last.reason else f"source {sources[0]}"
    return ChecksumError(dest, digests, last.actual, algorithm, reason=reason)


def _fetch_first_good(sources, tmp, dest, digests, algorithm, decompressed, timeout):
    """Write into ``tmp`` the content of the first source with an accepted digest."""
    attempts, content_errors = [], []
    for url in sources:
        try:
            _fetch_checked(url, tmp, digests, algorithm, decompressed, timeout)
            return
        except ChecksumError as err:
            content_errors.append(err)
            attempts.append(f"{url}: {err}")
        except (OSError, ValueError) as exc:  # URLError, HTTPError, timeouts, bad URL
            attempts.append(f"{url}: {type(exc).__name__}: {exc}")
    raise _failure(dest, sources, digests, algorithm, attempts, content_errors)


def _default_mirror_name(dest):
    matches = [k for k in SOURCES if Path(k).name == dest.name]
    if len(matches) == 1:
        return matches[0]
    return dest.name


def _source_list(urls, dest, mirror, name):
    """The sources to try: ``[<mirror>/<name>]`` when a mirror is given, else the URLs."""
    if mirror is not None:
        rel = name if name is not None else _default_mirror_name(dest)
        src = Path(mirror) / rel
        if not src.is_file():
            raise FileNotFoundError(f"mirror {mirror} has no file {rel} (looked for {src})")
        return [str(src)]
    if isinstance(urls, (str, os.PathLike)):
        urls = [urls]
    sources = [str(u) for u in urls]
    if not sources:
        raise ValueError(f"download of {dest}: no URL given")
    return sources


def _remove_stale_parts(dest):
    """Remove the temporary files of an earlier download killed before its cleanup.

    (SIGKILL, power loss.) Nothing else writes these names: one job per file, and the
    workflow locks its results directory.
    """
    for stale in dest.parent.glob(f".{glob.escape(dest.name)}.*.part"):
        with contextlib.suppress(FileNotFoundError):
            stale.unlink()


def download(urls, dest, checksum, *, algorithm="sha256", decompressed=False, mirror=None,
             name=None, timeout=60.0, force=False):
    """Download one file, check its checksum, and write it atomically.

    Parameters
    ----------
    urls : str or sequence of str
        Tried in order until one gives content with an accepted checksum. ``http(s)://``
        and ``ftp://`` URLs are fetched with :mod:`urllib` (with ``timeout``);
        ``file://`` URLs and plain paths are copied.
    dest : str or Path
        Final path. Written through a temporary file in the same directory, renamed
        only once the content is checked: an interrupted download never leaves a file
        at ``dest``.
    checksum : str or sequence of str
        Accepted hex digest(s) (e.g. of the public original and of a re-compressed
        mirror).
    algorithm : str
        Hash algorithm ("sha256" by default; "md5" etc. allowed).
    decompressed : bool
        The checksum is of the gunzipped content (for re-compressed mirrors).
    mirror : str or Path, optional
        A local mirror directory. When given, the file is taken from
        ``<mirror>/<name>`` instead of from ``urls``.
    name : str, optional
        Path of the file relative to ``mirror``, e.g. "mnist/train-images-idx3-ubyte.gz".
        Default: the :data:`~sparsesvm.data.sources.SOURCES` key with the same file name
        as ``dest``, else ``dest``'s file name.
    timeout : float
        Seconds for each network connection.
    force : bool
        Download even if ``dest`` already exists with an accepted checksum.

    Returns
    -------
    Path
        ``dest``.

    Raises
    ------
    ChecksumError
        The content (from every source tried) does not match: message names the file,
        the expected and the actual checksum (and whether it was an HTML page or a
        truncated gzip stream).
    DownloadError
        No source could be read at all (network errors, missing files).
    FileNotFoundError
        ``mirror`` is given but does not hold the file.
    """
    digests = _normalise_checksums(checksum, algorithm)
    dest = Path(dest)
    sources = _source_list(urls, dest, mirror, name)
    _remove_stale_parts(dest)
    if dest.exists() and not force:
        with contextlib.suppress(ChecksumError):  # stale or damaged: fetch again
            verify_file(dest, digests, algorithm=algorithm, decompressed=decompressed)
            return dest
    with atomic_path(dest, ".part") as tmp:
        _fetch_first_good(sources, tmp, dest, digests, algorithm, decompressed, timeout)
    return dest


def fetch(name, dest, *, mirror=None, sources=None, timeout=60.0):
    """Download one file of :data:`~sparsesvm.data.sources.SOURCES` (or of a table like it).

    Parameters
    ----------
    name : str
        Relative name, the key of the table, e.g. "mnist/train-images-idx3-ubyte.gz".
    dest : str or Path
    mirror : str or Path, optional
        Take ``<mirror>/<name>`` instead of the URLs.
    sources : dict, optional
        A table with entries ``{"urls", "checksum", "algorithm", "decompressed"}``
        (default :data:`~sparsesvm.data.sources.SOURCES`).
    timeout : float

    Returns
    -------
    Path
    """
    table = SOURCES if sources is None else sources
    if name not in table:
        raise ValueError(f"unknown source {name!r}; known: {sorted(table)}")
    entry = table[name]
    return download(entry.get("urls", []), dest, entry["checksum"],
                    algorithm=entry.get("algorithm", "sha256"),
                    decompressed=bool(entry.get("decompressed", False)),
                    mirror=mirror, name=name, timeout=timeout)

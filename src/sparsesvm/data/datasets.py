"""Checksummed downloads and checking parsers for the three benchmark datasets.

Three public datasets feed the experiments (spec section 5):

* MNIST (IDX files, gzip-compressed) -> :func:`read_mnist_images`,
  :func:`read_mnist_labels`, :func:`load_mnist`;
* 20 Newsgroups "bydate" (one tarball) -> :func:`load_news20`;
* Golub et al. (1999) leukemia (two expression TSVs and a sample table)
  -> :func:`load_leukemia`.

:func:`download` fetches one file (from a list of URLs tried in order, or from a
local mirror directory), checks it against a checksum, rejects HTML error pages
and truncated gzip streams, and writes it atomically (temporary name + rename).
:data:`SOURCES` lists the default public URLs and the checksums verified against
the offline mirror, for the workflow's configuration.

Every parser checks what it reads; a file in the wrong format raises
:class:`ValueError` naming the file and what was expected.
"""

from __future__ import annotations

import contextlib
import glob
import gzip
import hashlib
import os
import tarfile
import tempfile
import urllib.parse
import urllib.request
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = [
    "ChecksumError",
    "DownloadError",
    "Dataset",
    "TextDataset",
    "SOURCES",
    "MNIST_EXPECTED",
    "NEWS20_EXPECTED",
    "LEUKEMIA_EXPECTED",
    "LEUKEMIA_CLASSES",
    "download",
    "fetch",
    "file_digest",
    "verify_file",
    "check_downloads",
    "atomic_path",
    "read_mnist_images",
    "read_mnist_labels",
    "load_mnist",
    "load_news20",
    "load_leukemia",
]

_CHUNK = 1 << 20
_USER_AGENT = "sparsesvm-downloader/0.1 (+https://github.com; python-urllib)"
_GZIP_MAGIC = b"\x1f\x8b"

# --------------------------------------------------------------------------------------
# Default public sources and checksums
# --------------------------------------------------------------------------------------

_MNIST_MIRRORS = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",  # torchvision's mirror
    "https://storage.googleapis.com/cvdf-datasets/mnist/",  # TensorFlow's mirror
    "http://yann.lecun.com/exdb/mnist/",  # the original host (often refuses)
)


def _mnist_source(name, sha256_raw, md5_raw, sha256_gz_mirror, md5_gz_original=None):
    return {
        "urls": [base + name for base in _MNIST_MIRRORS],
        # The images in the offline mirror are re-compressed: only the decompressed
        # content is identical to the public original, so it is what we check.
        "algorithm": "sha256",
        "checksum": sha256_raw,
        "decompressed": True,
        "md5_decompressed": md5_raw,
        "sha256_mirror_file": sha256_gz_mirror,
        "md5_original_gz": md5_gz_original,
        "verified_against": "offline mirror (decompressed content)",
    }


#: Default public sources, keyed by the file's path relative to a mirror directory.
#: ``download(entry["urls"], dest, entry["checksum"], algorithm=entry["algorithm"],
#: decompressed=entry["decompressed"])`` fetches and checks one file. ``checksum`` may
#: be a list of accepted digests. All digests were computed on the offline mirror
#: (``/work/shared/data``); the extra keys are for reference only.
SOURCES: dict[str, dict] = {
    "mnist/train-images-idx3-ubyte.gz": _mnist_source(
        "train-images-idx3-ubyte.gz",
        sha256_raw="ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
        md5_raw="6bbc9ace898e44ae57da46a324031adb",
        sha256_gz_mirror="0b367032e93c5d0cea0925647cfdb18614af8ee15f83e6f2fc2ad904a6835971",
        md5_gz_original="f68b3c2dcbeaaa9fbdd348bbdeb94873",
    ),
    "mnist/train-labels-idx1-ubyte.gz": _mnist_source(
        "train-labels-idx1-ubyte.gz",
        sha256_raw="65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
        md5_raw="a25bea736e30d166cdddb491f175f624",
        sha256_gz_mirror="3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
        md5_gz_original="d53e105ee54ea40749a09fcbcd1e9432",
    ),
    "mnist/t10k-images-idx3-ubyte.gz": _mnist_source(
        "t10k-images-idx3-ubyte.gz",
        sha256_raw="0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
        md5_raw="2646ac647ad5339dbf082846283269ea",
        sha256_gz_mirror="167310007f03058885c7e95e6c0b19c20de5c7fd3031f4cbdadc9014a523d80b",
        md5_gz_original="9fb629c4189551a2d022fa330f9573f3",
    ),
    "mnist/t10k-labels-idx1-ubyte.gz": _mnist_source(
        "t10k-labels-idx1-ubyte.gz",
        sha256_raw="ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
        md5_raw="27ae3e4e09519cfbb04c329615203637",
        sha256_gz_mirror="f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
        md5_gz_original="ec29112dd5afa0611ce80d1b7f02629c",
    ),
    "news20/20news-bydate.tar.gz": {
        "urls": [
            "http://qwone.com/~jason/20Newsgroups/20news-bydate.tar.gz",
            "https://ndownloader.figshare.com/files/5975967",  # scikit-learn's copy
        ],
        "algorithm": "sha256",
        # The mirror's line endings are normalised to LF, so its bytes differ from the
        # public archive: accept both (the public one is scikit-learn's checksum).
        "checksum": [
            "8f1b2514ca22a5ade8fbb9cfa5727df95fa587f4c87b786e15c759fa66d95610",
            "4577e0c734aa970699b0950b587f12a97630c6a536b692efeca240752af3ae86",
        ],
        "decompressed": False,
        "sha256_mirror_file": "4577e0c734aa970699b0950b587f12a97630c6a536b692efeca240752af3ae86",
        "sha256_mirror_decompressed": "e374c4a0accb54bc822cd25c693742def12c4ca30b1de7c39e51f4c6d7f37847",
        "verified_against": "offline mirror (file); public digest from scikit-learn",
    },
    "leukemia/data_set_ALL_AML_train.tsv": {
        "urls": ["https://www-genome.wi.mit.edu/mpr/data_set_ALL_AML_train.txt"],
        "algorithm": "sha256",
        "checksum": "9519e1fbedb3bdad48e8d700eb31dded79dce34899e772941716fca398f87b9d",
        "decompressed": False,
        "verified_against": "offline mirror only (public file not reachable here)",
    },
    "leukemia/data_set_ALL_AML_independent.tsv": {
        "urls": ["https://www-genome.wi.mit.edu/mpr/data_set_ALL_AML_independent.txt"],
        "algorithm": "sha256",
        "checksum": "2fd5bf6756658cf7bb42e3072d82028f392788ea38743b33c32185d4ff9f31e7",
        "decompressed": False,
        "verified_against": "offline mirror only (public file not reachable here)",
    },
    "leukemia/table_ALL_AML_samples.tsv": {
        "urls": ["https://www-genome.wi.mit.edu/mpr/table_ALL_AML_samples.txt"],
        "algorithm": "sha256",
        "checksum": "ffa7118fe7f8ac940018cca4e47918c851e8c9ed5791546cb34efa6119d79a8a",
        "decompressed": False,
        "verified_against": "offline mirror only (exported from Bioconductor golubEsets)",
    },
}

#: Sizes of the real MNIST splits (pass ``expected=None`` to skip for tiny fixtures);
#: ``train_counts``: training images per digit 0..9 (the workflow checks the configured
#: samples per class against the smallest before any job).
MNIST_EXPECTED = {
    "n_train": 60000,
    "n_test": 10000,
    "train_counts": (5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949),
}
#: Sizes and number of classes of the real 20 Newsgroups bydate split; ``train_counts``:
#: training documents per group, in sorted group order.
NEWS20_EXPECTED = {
    "n_train": 11314,
    "n_test": 7532,
    "n_classes": 20,
    "train_counts": (480, 584, 591, 590, 578, 593, 585, 594, 598, 597,
                     600, 595, 591, 594, 593, 599, 546, 564, 465, 377),
}
#: The three leukemia classes, in label order 0, 1, 2.
LEUKEMIA_CLASSES = ("ALL B-cell", "ALL T-cell", "AML")
#: Gene count and class counts (in :data:`LEUKEMIA_CLASSES` order) of the real data.
LEUKEMIA_EXPECTED = {"n_genes": 7129, "train_counts": (19, 8, 11), "test_counts": (19, 1, 14)}


# --------------------------------------------------------------------------------------
# Errors and containers
# --------------------------------------------------------------------------------------


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


@dataclass
class Dataset:
    """A dense train/test dataset.

    Attributes
    ----------
    X_train : ndarray, shape (n_train, ...)
        MNIST: uint8 (n_train, 28, 28); leukemia: float64 (n_train, n_genes).
    y_train : ndarray of int64, shape (n_train,)
        Class indices into ``class_names``.
    X_test, y_test : as above for the test split.
    class_names : list of str, length n_classes
    feature_names : list of str or None
        Leukemia: the gene accession numbers (length n_genes).
    train_ids, test_ids : list of str or None
        Leukemia: the sample numbers, in the row order of ``X_train`` / ``X_test``.
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    class_names: list
    feature_names: list | None = None
    train_ids: list | None = None
    test_ids: list | None = None


@dataclass
class TextDataset:
    """Documents and labels of a text classification dataset.

    Attributes
    ----------
    docs_train : list of str, length n_train
    y_train : ndarray of int64, shape (n_train,)
    docs_test : list of str, length n_test
    y_test : ndarray of int64, shape (n_test,)
    class_names : list of str, length n_classes (sorted; label k is class_names[k])
    train_files, test_files : list of str
        Path of each document inside the archive (``<split>/<group>/<id>``).
    """

    docs_train: list
    y_train: np.ndarray
    docs_test: list
    y_test: np.ndarray
    class_names: list
    train_files: list = field(default_factory=list)
    test_files: list = field(default_factory=list)


# --------------------------------------------------------------------------------------
# Checksums and downloads
# --------------------------------------------------------------------------------------


def _umask():
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # pragma: no cover - non-Linux
    os.umask(mask)  # pragma: no cover
    return mask  # pragma: no cover


def _make_temp(directory, name, suffix):
    """A temporary file next to its final name, with the mode a new file would get.

    ``tempfile.mkstemp`` creates files readable by their owner only; the final files
    (shared datasets and features) get the usual ``0o666 & ~umask``.
    """
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=suffix)
    os.fchmod(fd, 0o666 & ~_umask())
    return fd, tmp


@contextlib.contextmanager
def atomic_path(final, suffix=".tmp"):
    """A temporary path next to ``final``, renamed onto it when the ``with`` block succeeds.

    The one atomic-write helper of the package and the workflow: a reader (or a rerun
    after a crash) sees either no file, the old file or the complete new one, never a
    partial file. The temporary file is hidden (``.<name>.<random><suffix>``), in the
    same directory (the rename never crosses file systems), removed if the block raises,
    and has the mode a plain ``open`` would give (``0o666 & ~umask``: 0644 with the
    usual umask 022, 0664 with a group's 002), not ``mkstemp``'s owner-only 0600.

    Parameters
    ----------
    final : str or Path
        Destination; its parent directory is created if needed.
    suffix : str
        Suffix of the temporary name (e.g. ".npy", which ``np.save`` would otherwise add).

    Yields
    ------
    str
        The temporary path to write.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _make_temp(final.parent, final.name, suffix)
    os.close(fd)
    try:
        yield tmp
        os.replace(tmp, final)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


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


def _looks_like_html(head: bytes) -> bool:
    text = head.lstrip().lower()
    return text.startswith((b"<!doctype html", b"<html", b"<head", b"<?xml")) or (
        text.startswith(b"<") and b"<html" in text[:1024]
    )


def _content_digest(path, algorithm, decompressed):
    """Digest of a file (or of its gunzipped content) plus a problem description.

    Returns
    -------
    digest : str
        Hex digest of the checked content (of the raw bytes when decompression failed).
    raw_digest : str
        Hex digest of the raw bytes.
    problem : str or None
        "HTML page", "truncated gzip stream", ... or None when the content is readable.
    """
    path = Path(path)
    raw = hashlib.new(algorithm)
    with open(path, "rb") as fh:
        head = fh.read(2048)
        fh.seek(0)
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            raw.update(chunk)
    raw_digest = raw.hexdigest()
    if _looks_like_html(head):
        return raw_digest, raw_digest, "the file is an HTML page (an error page?), not data"
    is_gzip = head[:2] == _GZIP_MAGIC
    if decompressed and not is_gzip:
        return raw_digest, raw_digest, "expected a gzip file (no gzip magic number)"
    if is_gzip or decompressed:
        inner = hashlib.new(algorithm)
        try:
            with gzip.open(path, "rb") as fh:
                for chunk in iter(lambda: fh.read(_CHUNK), b""):
                    inner.update(chunk)
        except EOFError:
            return raw_digest, raw_digest, "truncated gzip stream"
        except (OSError, zlib.error) as exc:
            return raw_digest, raw_digest, f"corrupt gzip stream: {exc}"
        if decompressed:
            return inner.hexdigest(), raw_digest, None
    return raw_digest, raw_digest, None


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
    if decompressed:
        h = hashlib.new(algorithm)
        try:
            with gzip.open(path, "rb") as fh:
                for chunk in iter(lambda: fh.read(_CHUNK), b""):
                    h.update(chunk)
        except (EOFError, OSError, zlib.error) as exc:
            raise ValueError(f"{path}: cannot decompress as gzip ({exc})") from exc
        return h.hexdigest()
    h = hashlib.new(algorithm)
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


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
    actual, _, problem = _content_digest(path, algorithm, decompressed)
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


class _TruncatedTransfer(Exception):
    pass


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


def _default_mirror_name(dest):
    dest = Path(dest)
    matches = [k for k in SOURCES if Path(k).name == dest.name]
    if len(matches) == 1:
        return matches[0]
    return dest.name


def download(
    urls,
    dest,
    checksum,
    *,
    algorithm="sha256",
    decompressed=False,
    mirror=None,
    name=None,
    timeout=60.0,
    force=False,
):
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
        Default: the :data:`SOURCES` key with the same file name as ``dest``, else
        ``dest``'s file name.
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
    if mirror is not None:
        rel = name if name is not None else _default_mirror_name(dest)
        src = Path(mirror) / rel
        if not src.is_file():
            raise FileNotFoundError(f"mirror {mirror} has no file {rel} (looked for {src})")
        sources = [str(src)]
    else:
        if isinstance(urls, (str, os.PathLike)):
            urls = [urls]
        sources = [str(u) for u in urls]
        if not sources:
            raise ValueError(f"download of {dest}: no URL given")

    # an earlier download killed before its cleanup (SIGKILL, power loss) left its
    # temporary file: nothing else writes these names (one job per file, and the
    # workflow locks its results directory)
    for stale in dest.parent.glob(f".{glob.escape(dest.name)}.*.part"):
        with contextlib.suppress(FileNotFoundError):
            stale.unlink()

    if dest.exists() and not force:
        try:
            verify_file(dest, digests, algorithm=algorithm, decompressed=decompressed)
            return dest
        except ChecksumError:
            pass  # stale or damaged: fetch again

    dest.parent.mkdir(parents=True, exist_ok=True)
    attempts = []
    content_errors = []
    for url in sources:
        fd, tmp_name = _make_temp(dest.parent, dest.name, ".part")
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as out:
                try:
                    _fetch(url, out, timeout)
                except _TruncatedTransfer as exc:
                    out.flush()
                    actual, _, _ = _content_digest(tmp, algorithm, False)
                    err = ChecksumError(url, digests, actual, algorithm, reason=f"truncated: {exc}")
                    content_errors.append(err)
                    attempts.append(f"{url}: {err}")
                    continue
                except (OSError, ValueError) as exc:  # URLError, HTTPError, timeouts, bad URL
                    attempts.append(f"{url}: {type(exc).__name__}: {exc}")
                    continue
                out.flush()
                os.fsync(out.fileno())
            try:
                verify_file(tmp, digests, algorithm=algorithm, decompressed=decompressed, name=url)
            except ChecksumError as err:
                content_errors.append(err)
                attempts.append(f"{url}: {err}")
                continue
            os.replace(tmp, dest)
            return dest
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()

    if content_errors:
        last = content_errors[-1]
        if len(sources) > 1:
            raise ChecksumError(dest, digests, last.actual, algorithm, reason=last.reason,
                                attempts=attempts)
        reason = f"{last.reason}; source {sources[0]}" if last.reason else f"source {sources[0]}"
        raise ChecksumError(dest, digests, last.actual, algorithm, reason=reason)
    raise DownloadError(f"could not download {dest}: " + "; ".join(attempts))


def fetch(name, dest, *, mirror=None, sources=None, timeout=60.0):
    """Download one file of :data:`SOURCES` (or of a table like it) by its relative name.

    Parameters
    ----------
    name : str
        Key of the table, e.g. "mnist/train-images-idx3-ubyte.gz".
    dest : str or Path
    mirror : str or Path, optional
        Take ``<mirror>/<name>`` instead of the URLs.
    sources : dict, optional
        A table with entries ``{"urls", "checksum", "algorithm", "decompressed"}``
        (default :data:`SOURCES`; the workflow passes its configured table).
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


# --------------------------------------------------------------------------------------
# MNIST (IDX)
# --------------------------------------------------------------------------------------

_IDX_IMAGES_MAGIC = 2051  # 0x00000803: unsigned byte, 3 dimensions
_IDX_LABELS_MAGIC = 2049  # 0x00000801: unsigned byte, 1 dimension


def _read_maybe_gzip(path):
    path = Path(path)
    with open(path, "rb") as fh:
        magic = fh.read(2)
    if magic == _GZIP_MAGIC:
        try:
            with gzip.open(path, "rb") as fh:
                return fh.read()
        except EOFError as exc:
            raise ValueError(f"{path}: truncated gzip stream (the file is incomplete)") from exc
        except (OSError, zlib.error) as exc:
            raise ValueError(f"{path}: corrupt gzip stream ({exc})") from exc
    with open(path, "rb") as fh:
        return fh.read()


def _idx_header(data, path, magic, ndim, what):
    header_len = 4 + 4 * ndim
    got = int.from_bytes(data[:4], "big")
    if len(data) >= 4 and got != magic:
        hint = " (it looks like an HTML page)" if _looks_like_html(data[:2048]) else ""
        raise ValueError(
            f"{path}: not an IDX {what} file: magic number {got:#010x}, expected "
            f"{magic:#010x}{hint}"
        )
    if len(data) < header_len:
        raise ValueError(
            f"{path}: not an IDX {what} file: {len(data)} bytes, shorter than the "
            f"{header_len}-byte header"
        )
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return header_len, dims


def read_mnist_images(path, *, expected_n=None, shape=(28, 28)):
    """Read an MNIST IDX image file (gzip-compressed or not).

    Parameters
    ----------
    path : str or Path
    expected_n : int, optional
        Required number of images (60000 / 10000 for the real files).
    shape : tuple of int
        Required image size (rows, cols).

    Returns
    -------
    ndarray of uint8, shape (n, rows, cols)

    Raises
    ------
    ValueError
        Wrong magic number, image size, image count or data length (naming the file).
    """
    data = _read_maybe_gzip(path)
    start, (n, rows, cols) = _idx_header(data, path, _IDX_IMAGES_MAGIC, 3, "images")
    if (rows, cols) != tuple(shape):
        raise ValueError(f"{path}: images of {rows}x{cols} pixels, expected {shape[0]}x{shape[1]}")
    if expected_n is not None and n != expected_n:
        raise ValueError(f"{path}: header says {n} images, expected {expected_n}")
    size = n * rows * cols
    if len(data) - start != size:
        raise ValueError(
            f"{path}: expected {size} bytes of pixels for {n} images of {rows}x{cols}, "
            f"found {len(data) - start}"
        )
    return np.frombuffer(data, dtype=np.uint8, offset=start).reshape(n, rows, cols).copy()


def read_mnist_labels(path, *, expected_n=None, n_classes=10):
    """Read an MNIST IDX label file (gzip-compressed or not).

    Parameters
    ----------
    path : str or Path
    expected_n : int, optional
        Required number of labels.
    n_classes : int
        Labels must lie in ``0 .. n_classes - 1``.

    Returns
    -------
    ndarray of int64, shape (n,)

    Raises
    ------
    ValueError
        Wrong magic number, count, data length or label values (naming the file).
    """
    data = _read_maybe_gzip(path)
    start, (n,) = _idx_header(data, path, _IDX_LABELS_MAGIC, 1, "labels")
    if expected_n is not None and n != expected_n:
        raise ValueError(f"{path}: header says {n} labels, expected {expected_n}")
    if len(data) - start != n:
        raise ValueError(f"{path}: expected {n} bytes of labels, found {len(data) - start}")
    y = np.frombuffer(data, dtype=np.uint8, offset=start).astype(np.int64)
    if n and y.max() >= n_classes:
        raise ValueError(f"{path}: label {int(y.max())} outside 0..{n_classes - 1}")
    return y


def load_mnist(train_images, train_labels, test_images, test_labels, *, expected=MNIST_EXPECTED):
    """Read the four MNIST files.

    Parameters
    ----------
    train_images, train_labels, test_images, test_labels : str or Path
        IDX files (``*-ubyte.gz`` or uncompressed).
    expected : dict or None
        ``{"n_train": 60000, "n_test": 10000}`` (the default) checks the real sizes;
        ``None`` only checks that images and labels agree (tiny fixtures).

    Returns
    -------
    Dataset
        ``X_train`` uint8 (n_train, 28, 28), ``y_train`` int64 (n_train,), same for
        test; ``class_names`` = ["0", ..., "9"].
    """
    n_tr = expected.get("n_train") if expected else None
    n_te = expected.get("n_test") if expected else None
    X_train = read_mnist_images(train_images, expected_n=n_tr)
    y_train = read_mnist_labels(train_labels, expected_n=n_tr)
    X_test = read_mnist_images(test_images, expected_n=n_te)
    y_test = read_mnist_labels(test_labels, expected_n=n_te)
    for X, y, pi, pl in ((X_train, y_train, train_images, train_labels),
                         (X_test, y_test, test_images, test_labels)):
        if X.shape[0] != y.shape[0]:
            raise ValueError(f"{pi} holds {X.shape[0]} images but {pl} holds {y.shape[0]} labels")
    return Dataset(X_train, y_train, X_test, y_test, [str(k) for k in range(10)])


# --------------------------------------------------------------------------------------
# 20 Newsgroups (bydate tarball)
# --------------------------------------------------------------------------------------

_NEWS20_SPLITS = ("20news-bydate-train", "20news-bydate-test")


def _safe_extract(tf, members, work, tarball):
    """Extract regular files and folders only, never outside ``work``."""
    if hasattr(tarfile, "data_filter"):  # Python >= 3.10.12 / 3.11.4
        tf.extractall(work, filter="data")
        return
    for m in members:  # pragma: no cover - older Pythons
        parts = Path(m.name).parts
        if m.name.startswith("/") or ".." in parts or not (m.isfile() or m.isdir()):
            raise ValueError(f"{tarball}: unsafe member {m.name!r} (absolute path, '..' or link)")
    tf.extractall(work)  # pragma: no cover


def load_news20(tarball, *, expected=NEWS20_EXPECTED, tmpdir=None):
    """Read the 20 Newsgroups "bydate" tarball with scikit-learn's ``load_files``.

    The archive is extracted to a temporary directory (removed afterwards); each split
    (``20news-bydate-train/<group>/<id>``, ``20news-bydate-test/<group>/<id>``) is read
    with ``sklearn.datasets.load_files(encoding="latin-1", shuffle=False)``: documents in
    class order (groups sorted by name), file names sorted within a class.

    Parameters
    ----------
    tarball : str or Path
        ``20news-bydate.tar.gz``.
    expected : dict or None
        ``{"n_train": 11314, "n_test": 7532, "n_classes": 20}`` (default) checks the real
        counts; ``None`` skips the count checks (tiny fixtures).
    tmpdir : str or Path, optional
        Where to extract (default: the system temporary directory).

    Returns
    -------
    TextDataset
        ``docs_*`` lists of str, ``y_*`` int64 label vectors, ``class_names`` (sorted,
        identical in both splits).
    """
    from sklearn.datasets import load_files

    tarball = Path(tarball)
    try:
        tf = tarfile.open(tarball, "r:*")
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise ValueError(f"{tarball}: not a readable tar archive ({exc})") from exc
    with tempfile.TemporaryDirectory(dir=tmpdir, prefix="news20-") as work:
        try:
            with tf:
                members = tf.getmembers()
                tops = {m.name.split("/", 1)[0] for m in members}
                missing = [s for s in _NEWS20_SPLITS if s not in tops]
                if missing:
                    raise ValueError(
                        f"{tarball}: expected top-level folders {list(_NEWS20_SPLITS)}, "
                        f"missing {missing} (found {sorted(tops)[:5]})"
                    )
                _safe_extract(tf, members, work, tarball)
        except getattr(tarfile, "FilterError", ()) as exc:
            raise ValueError(f"{tarball}: unsafe archive member ({exc})") from exc
        except (tarfile.TarError, EOFError, zlib.error) as exc:
            raise ValueError(f"{tarball}: damaged or truncated tar archive ({exc})") from exc
        except OSError as exc:
            if isinstance(exc, (PermissionError, FileNotFoundError)):
                raise
            raise ValueError(f"{tarball}: damaged or truncated archive ({exc})") from exc
        parts = []
        for split in _NEWS20_SPLITS:
            bunch = load_files(
                os.path.join(work, split), encoding="latin-1", shuffle=False,
                decode_error="strict",
            )
            files = [os.path.relpath(f, work).replace(os.sep, "/") for f in bunch.filenames]
            parts.append((list(bunch.data), np.asarray(bunch.target, dtype=np.int64),
                          list(bunch.target_names), files))
    (d_tr, y_tr, names_tr, f_tr), (d_te, y_te, names_te, f_te) = parts
    if names_tr != names_te:
        raise ValueError(
            f"{tarball}: train and test splits have different groups "
            f"({sorted(set(names_tr) ^ set(names_te))})"
        )
    if expected:
        checks = (("n_classes", len(names_tr), "groups"), ("n_train", len(d_tr), "training documents"),
                  ("n_test", len(d_te), "test documents"))
        for key, got, what in checks:
            if key in expected and got != expected[key]:
                raise ValueError(f"{tarball}: found {got} {what}, expected {expected[key]}")
    return TextDataset(d_tr, y_tr, d_te, y_te, names_tr, f_tr, f_te)


# --------------------------------------------------------------------------------------
# Leukemia (Golub et al. 1999)
# --------------------------------------------------------------------------------------


def _read_tsv_rows(path):
    path = Path(path)
    text = path.read_text(encoding="latin-1")
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = line.split("\t")
        while fields and fields[-1] == "":
            fields.pop()
        rows.append(fields)
    if not rows:
        raise ValueError(f"{path}: empty file")
    return rows


def _read_expression(path, n_genes):
    """Return (sample numbers (list of int), values (n_samples, n_probes), accessions)."""
    rows = _read_tsv_rows(path)
    header = rows[0]
    if header[:2] != ["Gene Description", "Gene Accession Number"]:
        raise ValueError(
            f"{path}: not a Golub expression table: expected the first columns "
            f"'Gene Description', 'Gene Accession Number', found {header[:2]}"
        )
    rest = header[2:]
    if len(rest) == 0 or len(rest) % 2:
        raise ValueError(
            f"{path}: expected pairs of columns (<sample number>, call) after the gene "
            f"columns, found {len(rest)} columns"
        )
    samples = []
    for k in range(0, len(rest), 2):
        num, call = rest[k], rest[k + 1]
        if not call.lower().startswith("call") or not num.strip().isdigit():
            raise ValueError(
                f"{path}: expected a sample-number column followed by a 'call' column at "
                f"columns {k + 3}-{k + 4}, found {num!r}, {call!r}"
            )
        samples.append(int(num))
    if len(set(samples)) != len(samples):
        raise ValueError(f"{path}: repeated sample numbers in the header")
    body = rows[1:]
    ncol = len(header)
    values = np.empty((len(body), len(samples)), dtype=np.float64)
    accessions = []
    for i, fields in enumerate(body):
        if len(fields) != ncol:
            raise ValueError(
                f"{path}: line {i + 2} has {len(fields)} fields, expected {ncol}"
            )
        accessions.append(fields[1])
        try:
            values[i] = [float(v) for v in fields[2::2]]
        except ValueError as exc:
            raise ValueError(f"{path}: line {i + 2}: non-numeric expression value ({exc})") from exc
    if n_genes is not None and len(body) != n_genes:
        raise ValueError(f"{path}: {len(body)} probes, expected {n_genes}")
    return samples, values.T.copy(), accessions


def _read_sample_table(path):
    rows = _read_tsv_rows(path)
    header = rows[0]
    need = ["Samples", "ALL.AML", "T.B.cell"]
    missing = [c for c in need if c not in header]
    if missing:
        raise ValueError(
            f"{path}: not a Golub sample table: missing column(s) {missing} "
            f"(expected {need} among the columns, found {header})"
        )
    idx = {c: header.index(c) for c in need}
    labels = {}
    for i, fields in enumerate(rows[1:]):
        if len(fields) < len(header):
            fields = fields + [""] * (len(header) - len(fields))
        num = fields[idx["Samples"]].strip()
        if not num.isdigit():
            raise ValueError(f"{path}: line {i + 2}: sample number {num!r} is not an integer")
        kind, cell = fields[idx["ALL.AML"]].strip(), fields[idx["T.B.cell"]].strip()
        if kind == "AML":
            k = 2
        elif kind == "ALL" and cell == "B-cell":
            k = 0
        elif kind == "ALL" and cell == "T-cell":
            k = 1
        else:
            raise ValueError(
                f"{path}: line {i + 2}: sample {num} has ALL.AML={kind!r}, T.B.cell={cell!r}; "
                "expected AML, or ALL with B-cell/T-cell"
            )
        if int(num) in labels:
            raise ValueError(f"{path}: sample {num} listed twice")
        labels[int(num)] = k
    return labels


def load_leukemia(train_tsv, test_tsv, samples_tsv, *, expected=LEUKEMIA_EXPECTED):
    """Read the Golub leukemia data as a three-class problem.

    Parameters
    ----------
    train_tsv, test_tsv : str or Path
        ``data_set_ALL_AML_train.tsv`` / ``data_set_ALL_AML_independent.tsv``: columns
        ``Gene Description``, ``Gene Accession Number``, then per sample a value column
        named by the sample number and a ``call`` column.
    samples_tsv : str or Path
        ``table_ALL_AML_samples.tsv`` with columns ``Samples``, ``ALL.AML``, ``T.B.cell``.
    expected : dict or None
        ``{"n_genes": 7129, "train_counts": (19, 8, 11), "test_counts": (19, 1, 14)}``
        (default) checks the real data; ``None`` skips these checks (tiny fixtures).
        Keys may be given individually.

    Returns
    -------
    Dataset
        ``X_train`` float64 (n_train, n_genes) and ``X_test`` float64 (n_test, n_genes),
        the raw expression values, rows in increasing sample number; ``y_*`` int64 in
        {0: ALL B-cell, 1: ALL T-cell, 2: AML}; ``feature_names`` = accession numbers;
        ``train_ids`` / ``test_ids`` = sample numbers (as str).
    """
    expected = expected or {}
    n_genes = expected.get("n_genes")
    labels = _read_sample_table(samples_tsv)
    s_tr, X_tr, acc_tr = _read_expression(train_tsv, n_genes)
    s_te, X_te, acc_te = _read_expression(test_tsv, n_genes)
    if acc_tr != acc_te:
        raise ValueError(f"{train_tsv} and {test_tsv} list different probes (or in a different order)")
    overlap = sorted(set(s_tr) & set(s_te))
    if overlap:
        raise ValueError(f"{train_tsv} and {test_tsv} share samples {overlap[:5]}")
    out = []
    for path, samples, X, key in ((train_tsv, s_tr, X_tr, "train_counts"),
                                  (test_tsv, s_te, X_te, "test_counts")):
        unknown = [s for s in samples if s not in labels]
        if unknown:
            raise ValueError(f"{path}: samples {unknown[:5]} are not in the sample table {samples_tsv}")
        order = np.argsort(samples, kind="stable")
        ids = [samples[i] for i in order]
        y = np.array([labels[s] for s in ids], dtype=np.int64)
        counts = tuple(int(c) for c in np.bincount(y, minlength=3))
        if key in expected and counts != tuple(expected[key]):
            raise ValueError(
                f"{path}: class counts {dict(zip(LEUKEMIA_CLASSES, counts))}, expected "
                f"{dict(zip(LEUKEMIA_CLASSES, tuple(expected[key])))}"
            )
        out.append((np.ascontiguousarray(X[order]), y, [str(s) for s in ids]))
    (X_train, y_train, id_tr), (X_test, y_test, id_te) = out
    return Dataset(X_train, y_train, X_test, y_test, list(LEUKEMIA_CLASSES),
                   feature_names=acc_tr, train_ids=id_tr, test_ids=id_te)

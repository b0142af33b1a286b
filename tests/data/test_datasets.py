"""Downloads with checksums and the dataset parsers (tiny self-made files + real mirror)."""

import gzip
import hashlib
import http.server
import io
import threading
import urllib.request
from functools import partial
from pathlib import Path

import fixtures_data as fd
import numpy as np
import pytest

from sparsesvm.data import sources
from sparsesvm.data.download import (
    ChecksumError,
    DownloadError,
    _normalise_checksums,
    download,
    fetch,
    file_digest,
    verify_file,
)
from sparsesvm.data.leukemia import load_leukemia
from sparsesvm.data.mnist import load_mnist, read_mnist_images, read_mnist_labels
from sparsesvm.data.news20 import load_news20
from sparsesvm.data.sources import DOWNLOADS, SOURCES

# Tests on the real offline mirror take the ``mirror_dir`` fixture (tests/conftest.py):
# skipped, with the reason, when the mirror is absent.


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def md5(data):
    return hashlib.md5(data).hexdigest()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny_mirror")
    return fd.write_tiny_mirror(root)


def leftovers(directory):
    return sorted(p.name for p in Path(directory).iterdir() if p.name.endswith(".part"))


# ------------------------------------------------------------------------------- download


@pytest.fixture
def payload(tmp_path):
    raw = bytes(range(256)) * 40
    src = fd.write_bytes(tmp_path / "src" / "data.bin.gz", raw, gz=True)
    return raw, src


def test_download_file_url_sha256(payload, tmp_path):
    raw, src = payload
    dest = tmp_path / "out" / "data.bin.gz"
    got = download(src.as_uri(), dest, sha256(src.read_bytes()))
    assert got == dest
    assert dest.read_bytes() == src.read_bytes()
    assert leftovers(dest.parent) == []


def test_download_plain_path_md5_of_decompressed(payload, tmp_path):
    raw, src = payload
    dest = tmp_path / "data.bin.gz"
    download(str(src), dest, md5(raw), algorithm="md5", decompressed=True)
    assert gzip.decompress(dest.read_bytes()) == raw


def test_download_accepts_any_listed_digest_and_falls_back_over_urls(payload, tmp_path):
    raw, src = payload
    dest = tmp_path / "data.bin.gz"
    urls = [(tmp_path / "missing.gz").as_uri(), src.as_uri()]
    download(urls, dest, ["0" * 64, sha256(src.read_bytes()).upper()])
    assert dest.read_bytes() == src.read_bytes()


def test_download_mismatch_names_file_expected_actual(payload, tmp_path):
    raw, src = payload
    dest = tmp_path / "data.bin.gz"
    wrong = "ab" * 32
    with pytest.raises(ChecksumError) as info:
        download(src.as_uri(), dest, wrong)
    msg = str(info.value)
    assert isinstance(info.value, ValueError)
    assert "data.bin.gz" in msg and wrong in msg and sha256(src.read_bytes()) in msg
    assert info.value.actual == sha256(src.read_bytes())
    assert not dest.exists() and leftovers(tmp_path) == []


def test_download_mismatch_of_decompressed_content_reports_that_digest(payload, tmp_path):
    raw, src = payload
    with pytest.raises(ChecksumError) as info:
        download(src.as_uri(), tmp_path / "d.gz", "0" * 32, algorithm="md5",
                          decompressed=True)
    assert md5(raw) in str(info.value) and "decompressed" in str(info.value)


def test_download_rejects_html_error_page(tmp_path):
    page = b"<!DOCTYPE html>\n<html><head><title>403 Forbidden</title></head><body>no</body></html>\n"
    src = fd.write_bytes(tmp_path / "t10k-images-idx3-ubyte.gz", page, gz=False)
    dest = tmp_path / "out" / "t10k-images-idx3-ubyte.gz"
    expected = "c" * 64
    with pytest.raises(ChecksumError) as info:
        download(src.as_uri(), dest, expected, decompressed=True)
    msg = str(info.value)
    assert "HTML" in msg and expected in msg and sha256(page) in msg
    assert "t10k-images-idx3-ubyte.gz" in msg
    assert not dest.exists() and leftovers(dest.parent) == []


def test_download_rejects_html_even_if_checksum_listed(tmp_path):
    # a page whose digest was (wrongly) put in the config is still not data
    page = b"  <html><body>Please enable cookies</body></html>"
    src = fd.write_bytes(tmp_path / "page.gz", page, gz=False)
    with pytest.raises(ChecksumError, match="HTML"):
        download(src.as_uri(), tmp_path / "x.gz", sha256(page))


@pytest.mark.parametrize("decompressed", [False, True])
def test_download_rejects_truncated_gzip(payload, tmp_path, decompressed):
    raw, src = payload
    whole = src.read_bytes()
    cut = fd.write_bytes(tmp_path / "cut" / "data.bin.gz", whole[: len(whole) // 2], gz=False)
    dest = tmp_path / "out" / "data.bin.gz"
    expected = sha256(raw) if decompressed else sha256(whole)
    with pytest.raises(ChecksumError) as info:
        download(cut.as_uri(), dest, expected, decompressed=decompressed)
    msg = str(info.value)
    assert "truncated" in msg and expected in msg and sha256(whole[: len(whole) // 2]) in msg
    assert not dest.exists() and leftovers(dest.parent) == []


class _FakeResponse(io.RawIOBase):
    """A urlopen() result that serves some bytes, then fails or stops early."""

    def __init__(self, data, fail_after=None, exc=None, length=None):
        self._buf = io.BytesIO(data)
        self._fail_after = fail_after
        self._exc = exc
        self._served = 0
        self.headers = {"Content-Length": str(length if length is not None else len(data))}

    def read(self, n=-1):
        if self._fail_after is not None and self._served >= self._fail_after:
            raise self._exc
        chunk = self._buf.read(n if self._fail_after is None else min(n, self._fail_after - self._served))
        self._served += len(chunk)
        return chunk

    def __enter__(self):
        return self

    def __exit__(self, *args):
        return False


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), ConnectionResetError("peer reset")])
def test_interrupted_download_leaves_no_final_file(payload, tmp_path, monkeypatch, exc):
    raw, src = payload
    data = src.read_bytes()
    calls = []

    def fake_urlopen(req, timeout=None):
        calls.append((req.full_url, timeout, req.get_header("User-agent")))
        return _FakeResponse(data, fail_after=len(data) // 3, exc=exc)

    monkeypatch.setattr(urllib.request, "urlopen", fake_urlopen)
    dest = tmp_path / "out" / "data.bin.gz"
    expected_type = KeyboardInterrupt if isinstance(exc, KeyboardInterrupt) else DownloadError
    with pytest.raises(expected_type):
        download("https://example.org/data.bin.gz", dest, sha256(data), timeout=7)
    assert calls[0][1] == 7 and calls[0][2]  # timeout and a User-Agent are passed
    assert not dest.exists()
    assert leftovers(dest.parent) == []


def test_server_closing_early_is_reported_as_truncated(payload, tmp_path, monkeypatch):
    raw, src = payload
    data = src.read_bytes()
    monkeypatch.setattr(
        urllib.request, "urlopen",
        lambda req, timeout=None: _FakeResponse(data[:100], length=len(data)),
    )
    dest = tmp_path / "data.bin.gz"
    with pytest.raises(ChecksumError, match="truncated") as info:
        download("https://example.org/data.bin.gz", dest, sha256(data))
    assert sha256(data[:100]) in str(info.value)
    assert not dest.exists() and leftovers(tmp_path) == []


@pytest.fixture
def http_server(tmp_path):
    root = tmp_path / "www"
    root.mkdir()
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_download_over_http_with_fallback_after_404(http_server, payload, tmp_path):
    root, base = http_server
    raw, src = payload
    (root / "data.bin.gz").write_bytes(src.read_bytes())
    dest = tmp_path / "out" / "data.bin.gz"
    download([f"{base}/nope.gz", f"{base}/data.bin.gz"], dest, md5(raw),
                      algorithm="md5", decompressed=True, timeout=10)
    assert dest.read_bytes() == src.read_bytes()


def test_download_all_urls_unreachable_is_download_error(tmp_path):
    with pytest.raises(DownloadError, match="missing1"):
        download([str(tmp_path / "missing1"), str(tmp_path / "missing2")],
                          tmp_path / "x", "0" * 64)
    assert not (tmp_path / "x").exists()


def test_download_from_mirror_directory(tiny, tmp_path):
    name = "mnist/t10k-labels-idx1-ubyte.gz"
    digest = tiny["checksums"][name]["sha256_decompressed"]
    dest = tmp_path / "res" / "t10k-labels-idx1-ubyte.gz"
    # explicit relative name; URLs are ignored when a mirror is given
    download(["https://unreachable.invalid/x.gz"], dest, digest, decompressed=True,
                      mirror=tiny["root"], name=name)
    assert dest.read_bytes() == (Path(tiny["root"]) / name).read_bytes()
    # default relative name found through SOURCES from the destination's file name
    dest2 = tmp_path / "other" / "t10k-labels-idx1-ubyte.gz"
    download([], dest2, digest, decompressed=True, mirror=tiny["root"])
    assert dest2.read_bytes() == dest.read_bytes()
    with pytest.raises(FileNotFoundError, match="nothere.gz"):
        download([], tmp_path / "nothere.gz", digest, mirror=tiny["root"])


def test_fetch_by_name_from_a_sources_table(tiny, tmp_path):
    name = "leukemia/table_ALL_AML_samples.tsv"
    dest = fetch(name, tmp_path / "t.tsv", sources=tiny["sources"])
    assert dest.read_bytes() == (Path(tiny["root"]) / name).read_bytes()
    with pytest.raises(ChecksumError, match="t2.tsv"):  # the real checksum rejects the tiny file
        fetch(name, tmp_path / "t2.tsv", mirror=tiny["root"])
    with pytest.raises(ValueError, match="unknown source"):
        fetch("mnist/nope.gz", tmp_path / "x")


def test_existing_good_file_is_kept_and_bad_one_replaced(payload, tmp_path):
    raw, src = payload
    digest = sha256(src.read_bytes())
    dest = tmp_path / "data.bin.gz"
    dest.write_bytes(src.read_bytes())
    # no usable URL: the existing file is verified and kept
    download([str(tmp_path / "missing")], dest, digest)
    dest.write_bytes(b"stale")
    download(src.as_uri(), dest, digest)
    assert dest.read_bytes() == src.read_bytes()


@pytest.mark.parametrize(
    "checksum, algorithm, match",
    [("xyz", "sha256", "hex digest"), ("0" * 32, "sha256", "64 hex"), ("0" * 32, "nohash", "unknown"),
     ([], "sha256", "at least one")],
)
def test_download_rejects_bad_checksum_arguments(payload, tmp_path, checksum, algorithm, match):
    raw, src = payload
    with pytest.raises(ValueError, match=match):
        download(src.as_uri(), tmp_path / "x", checksum, algorithm=algorithm)


def test_sources_table_is_well_formed():
    assert set(SOURCES) == set(fd.MNIST_FILES.values()) | {fd.NEWS20_FILE} | set(
        fd.LEUKEMIA_FILES.values())
    for name, entry in SOURCES.items():
        assert entry["file"] == name
        assert entry["urls"] and all(u.startswith(("http://", "https://")) for u in entry["urls"])
        assert all(u.rstrip("/").split("/")[-1] for u in entry["urls"])
        _normalise_checksums(entry["checksum"], entry["algorithm"])  # valid digests
        if name.startswith("mnist/"):
            assert len(entry["urls"]) >= 2 and entry["decompressed"]
            assert all(u.endswith(Path(name).name) for u in entry["urls"])


def test_downloads_table_is_a_valid_config_default():
    """DOWNLOADS is the default of the workflow config's `downloads`: the schema accepts it."""
    jsonschema = pytest.importorskip("jsonschema")  # a dependency of Snakemake, not of the package
    yaml = pytest.importorskip("yaml")
    schema_file = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"
    schema = yaml.safe_load(schema_file.read_text())
    sub = {**schema["properties"]["downloads"], "$defs": schema["$defs"]}
    jsonschema.validate(DOWNLOADS, sub)
    bad = {**DOWNLOADS, "mnist": {**DOWNLOADS["mnist"], "extra": DOWNLOADS["mnist"]["train_images"]}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, sub)
    assert SOURCES == {e["file"]: e for entries in DOWNLOADS.values() for e in entries.values()}


@pytest.mark.mirror
def test_sources_checksums_hold_on_the_mirror(mirror_dir, tmp_path):
    readme_md5_decompressed = {  # from the mirror's README
        "mnist/train-images-idx3-ubyte.gz": "6bbc9ace898e44ae57da46a324031adb",
        "mnist/t10k-images-idx3-ubyte.gz": "2646ac647ad5339dbf082846283269ea",
    }
    readme_md5_gz = {
        "mnist/train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
        "mnist/t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
    }
    for name, entry in SOURCES.items():
        verify_file(mirror_dir / name, entry["checksum"], algorithm=entry["algorithm"],
                    decompressed=entry["decompressed"])
    # the reference digests quoted in sources.py's docstring hold on the mirror
    for name, digest in readme_md5_decompressed.items():
        assert digest in sources.__doc__
        verify_file(mirror_dir / name, digest, algorithm="md5", decompressed=True)
    for name, digest in readme_md5_gz.items():
        assert digest in sources.__doc__
        assert file_digest(mirror_dir / name, "md5") == digest
    # one real download through the mirror option
    name = "mnist/t10k-labels-idx1-ubyte.gz"
    entry = SOURCES[name]
    dest = download(entry["urls"], tmp_path / name, entry["checksum"],
                    algorithm=entry["algorithm"], decompressed=entry["decompressed"],
                    mirror=mirror_dir, name=name)
    assert dest.read_bytes() == (mirror_dir / name).read_bytes()


# ---------------------------------------------------------------------------------- MNIST


def test_mnist_roundtrip_gz_and_raw(tiny, tmp_path):
    root = Path(tiny["root"])
    ds = load_mnist(*(root / f for f in fd.MNIST_FILES.values()),
                             expected=tiny["expected"]["mnist"])
    assert ds.X_train.dtype == np.uint8 and ds.X_train.shape == (60, 28, 28)
    assert ds.y_train.dtype == np.int64
    np.testing.assert_array_equal(ds.y_train, tiny["labels"]["mnist"]["train"])
    np.testing.assert_array_equal(ds.y_test, tiny["labels"]["mnist"]["test"])
    assert ds.class_names == [str(k) for k in range(10)]
    raw = tmp_path / "imgs-idx3-ubyte"
    raw.write_bytes(gzip.decompress((root / fd.MNIST_FILES["test_images"]).read_bytes()))
    np.testing.assert_array_equal(read_mnist_images(raw), ds.X_test)


def test_mnist_real_sizes_are_checked_by_default(tiny):
    root = Path(tiny["root"])
    with pytest.raises(ValueError, match=r"60 images, expected 60000"):
        load_mnist(*(root / f for f in fd.MNIST_FILES.values()))


@pytest.mark.parametrize(
    "kind, match",
    [
        ("labels_as_images", r"magic number 0x00000801, expected 0x00000803"),
        ("small_images", r"27x28 pixels, expected 28x28"),
        ("short_pixels", r"expected 3136 bytes of pixels for 4 images"),
        ("html", r"HTML"),
        ("header_only", r"shorter than the 16-byte header"),
        ("truncated_gzip", r"truncated gzip"),
        ("count", r"header says 3 images, expected 5"),
    ],
)
def test_mnist_image_errors_name_file_and_expectation(tmp_path, kind, match):
    rng = np.random.default_rng(1)
    path = tmp_path / f"{kind}-idx3-ubyte.gz"
    if kind == "labels_as_images":
        fd.write_idx_labels(path, [1, 2, 3])
    elif kind == "small_images":
        fd.write_idx_images(path, rng.integers(0, 255, (2, 27, 28)))
    elif kind == "short_pixels":
        good = fd.idx_images_bytes(rng.integers(0, 255, (4, 28, 28)))
        fd.write_bytes(path, good[:-10])
    elif kind == "html":
        fd.write_bytes(path, b"<html><body>Not Found</body></html>", gz=False)
    elif kind == "header_only":
        fd.write_bytes(path, b"\x00\x00\x08\x03\x00")
    elif kind == "truncated_gzip":
        blob = fd.gzip_bytes(fd.idx_images_bytes(rng.integers(0, 255, (20, 28, 28))))
        fd.write_bytes(path, blob[: len(blob) - 200], gz=False)
    elif kind == "count":
        fd.write_idx_images(path, rng.integers(0, 255, (3, 28, 28)))
    with pytest.raises(ValueError, match=match) as info:
        read_mnist_images(path, expected_n=5 if kind == "count" else None)
    assert str(path) in str(info.value)


def test_mnist_label_errors(tmp_path):
    p = fd.write_idx_labels(tmp_path / "l.gz", [0, 3, 12])
    with pytest.raises(ValueError, match=r"label 12 outside 0..9"):
        read_mnist_labels(p)
    p = fd.write_idx_images(tmp_path / "i.gz", np.zeros((1, 28, 28)))
    with pytest.raises(ValueError, match=r"i.gz: not an IDX labels file"):
        read_mnist_labels(p)
    p = fd.write_bytes(tmp_path / "short.gz", fd.idx_labels_bytes([1, 2, 3])[:-1])
    with pytest.raises(ValueError, match=r"expected 3 bytes of labels, found 2"):
        read_mnist_labels(p)


def test_mnist_images_and_labels_must_agree(tiny, tmp_path):
    root = Path(tiny["root"])
    fewer = fd.write_idx_labels(tmp_path / "few-labels.gz", [0, 1])
    with pytest.raises(ValueError, match=r"holds 60 images but .*few-labels.gz holds 2 labels"):
        load_mnist(root / fd.MNIST_FILES["train_images"], fewer,
                            root / fd.MNIST_FILES["test_images"], root / fd.MNIST_FILES["test_labels"],
                            expected=None)


@pytest.mark.mirror
def test_mnist_real_mirror(mirror_dir):
    ds = load_mnist(*(mirror_dir / f for f in fd.MNIST_FILES.values()))
    assert ds.X_train.shape == (60000, 28, 28) and ds.X_test.shape == (10000, 28, 28)
    assert ds.X_train.dtype == np.uint8
    # the published class sizes of the MNIST test set
    np.testing.assert_array_equal(np.bincount(ds.y_test),
                                  [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009])
    assert np.bincount(ds.y_train, minlength=10).sum() == 60000 and ds.y_train.max() == 9
    assert ds.X_train.max() == 255 and ds.X_train.min() == 0


# ------------------------------------------------------------------------------- leukemia


def _leuk_paths(root):
    return [Path(root) / fd.LEUKEMIA_FILES[k] for k in ("train", "test", "samples")]


def test_leukemia_roundtrip_in_sample_order(tiny):
    ds = load_leukemia(*_leuk_paths(tiny["root"]), expected=tiny["expected"]["leukemia"])
    ref = tiny["labels"]["leukemia"]
    # the generator numbered samples in row order of X_train/X_test (before shuffling columns)
    np.testing.assert_array_equal(ds.X_train, ref["X_train"])
    np.testing.assert_array_equal(ds.X_test, ref["X_test"])
    np.testing.assert_array_equal(ds.y_train, ref["train"])
    np.testing.assert_array_equal(ds.y_test, ref["test"])
    assert ds.class_names == ["ALL B-cell", "ALL T-cell", "AML"]
    assert [int(s) for s in ds.test_ids] == sorted(int(s) for s in ds.test_ids)
    assert ds.X_train.dtype == np.float64 and ds.X_train.shape == (11, 20)
    assert len(ds.feature_names) == 20


def test_leukemia_real_counts_checked_by_default(tiny):
    with pytest.raises(ValueError, match=r"20 probes, expected 7129"):
        load_leukemia(*_leuk_paths(tiny["root"]))
    with pytest.raises(ValueError, match=r"class counts .*'ALL B-cell': 5.*expected.*'ALL B-cell': 19"):
        load_leukemia(*_leuk_paths(tiny["root"]),
                               expected={"train_counts": (19, 8, 11)})


def test_leukemia_format_errors(tmp_path, tiny):
    train, test, samples = _leuk_paths(tiny["root"])
    vals = np.arange(6).reshape(3, 2)
    bad_header = fd.write_expression_tsv(tmp_path / "h.tsv", vals, [1, 2],
                                         header=["Description", "Accession", "1", "call", "2", "call"])
    with pytest.raises(ValueError, match=r"h.tsv: not a Golub expression table.*'Gene Description'"):
        load_leukemia(bad_header, test, samples, expected=None)

    no_call = fd.write_expression_tsv(tmp_path / "c.tsv", vals, [1, 2],
                                      header=["Gene Description", "Gene Accession Number", "1", "2", "x", "y"])
    with pytest.raises(ValueError, match=r"c.tsv: expected a sample-number column followed by a 'call'"):
        load_leukemia(no_call, test, samples, expected=None)

    ragged = tmp_path / "r.tsv"
    lines = train.read_text(encoding="latin-1").splitlines()
    lines[3] = "\t".join(lines[3].split("\t")[:-3])
    ragged.write_text("\n".join(lines), encoding="latin-1")
    with pytest.raises(ValueError, match=r"r.tsv: line 4 has \d+ fields, expected"):
        load_leukemia(ragged, test, samples, expected=None)

    text = tmp_path / "t.tsv"
    lines = train.read_text(encoding="latin-1").splitlines()
    f = lines[2].split("\t")
    f[2] = "high"
    lines[2] = "\t".join(f)
    text.write_text("\n".join(lines), encoding="latin-1")
    with pytest.raises(ValueError, match=r"t.tsv: line 3: non-numeric"):
        load_leukemia(text, test, samples, expected=None)


def test_leukemia_sample_table_errors(tmp_path, tiny):
    train, test, samples = _leuk_paths(tiny["root"])
    rows = [r.split("\t") for r in samples.read_text().splitlines()]
    missing = tmp_path / "s1.tsv"
    missing.write_text("\n".join("\t".join(r[:3]) for r in rows))
    with pytest.raises(ValueError, match=r"s1.tsv: not a Golub sample table: missing column.*T.B.cell"):
        load_leukemia(train, test, missing, expected=None)
    odd = tmp_path / "s2.tsv"
    rows2 = [list(r) for r in rows]
    rows2[1][2] = "CLL"
    odd.write_text("\n".join("\t".join(r) for r in rows2))
    with pytest.raises(ValueError, match=r"s2.tsv: line 2: sample 1 has ALL.AML='CLL'"):
        load_leukemia(train, test, odd, expected=None)
    short = tmp_path / "s3.tsv"
    short.write_text("\n".join("\t".join(r) for r in rows[:-1]))
    with pytest.raises(ValueError, match=r"samples \[\d+\] are not in the sample table"):
        load_leukemia(train, test, short, expected=None)


def test_leukemia_train_and_test_must_share_probes(tmp_path, tiny):
    train, test, samples = _leuk_paths(tiny["root"])
    other = fd.write_expression_tsv(tmp_path / "o.tsv", np.ones((20, 1)), [12],
                                    accessions=[f"OTHER{g}" for g in range(20)])
    with pytest.raises(ValueError, match=r"list different probes"):
        load_leukemia(train, other, samples, expected=None)


@pytest.mark.mirror
def test_leukemia_real_mirror(mirror_dir):
    pd = pytest.importorskip("pandas")
    paths = _leuk_paths(mirror_dir)
    ds = load_leukemia(*paths)  # default checks: 7129 genes, 19/8/11 and 19/1/14
    assert ds.X_train.shape == (38, 7129) and ds.X_test.shape == (34, 7129)
    np.testing.assert_array_equal(np.bincount(ds.y_train), [19, 8, 11])
    np.testing.assert_array_equal(np.bincount(ds.y_test), [19, 1, 14])
    assert ds.train_ids == [str(i) for i in range(1, 39)]
    assert ds.test_ids == [str(i) for i in range(39, 73)]
    # independent reading with pandas, by column name
    for path, X, ids in ((paths[0], ds.X_train, ds.train_ids), (paths[1], ds.X_test, ds.test_ids)):
        df = pd.read_csv(path, sep="\t", dtype=str)
        ref = df[ids].astype(float).to_numpy().T
        np.testing.assert_array_equal(X, ref)
        assert list(df["Gene Accession Number"]) == ds.feature_names
    table = pd.read_csv(paths[2], sep="\t", dtype=str)
    cls = {"ALL/B-cell": 0, "ALL/T-cell": 1}
    lab = {row.Samples: cls.get(f"{row._3}/{row._4}", 2) for row in table.itertuples()}
    assert [lab[s] for s in ds.test_ids] == ds.y_test.tolist()


# ------------------------------------------------------------------------------- news20


def test_news20_roundtrip(tiny):
    ds = load_news20(Path(tiny["root"]) / fd.NEWS20_FILE, expected=tiny["expected"]["news20"])
    assert ds.class_names == sorted(fd.NEWS20_GROUPS)
    assert len(ds.docs_train) == 120 and len(ds.docs_test) == 40
    np.testing.assert_array_equal(np.bincount(ds.y_train), [6] * 20)
    assert ds.y_train.dtype == np.int64
    # each document is labelled with the group folder it came from, decoded as latin-1
    for doc, y, f in zip(ds.docs_train, ds.y_train, ds.train_files):
        split, group, _ = f.split("/")
        assert split == "20news-bydate-train" and group == ds.class_names[y]
        assert f"@{group}.example" in doc and "caf\xe9" in doc


def test_news20_errors(tiny, tmp_path):
    good = Path(tiny["root"]) / fd.NEWS20_FILE
    with pytest.raises(ValueError, match=r"found 120 training documents, expected 11314"):
        load_news20(good, expected={"n_train": 11314})
    with pytest.raises(ValueError, match=r"found 20 groups, expected 19"):
        load_news20(good, expected={"n_classes": 19})
    only_train = fd.write_news_tarball(tmp_path / "a.tar.gz", {"20news-bydate-train": {"x.y": ["a b"]}})
    with pytest.raises(ValueError, match=r"a.tar.gz: expected top-level folders.*missing \['20news-bydate-test'\]"):
        load_news20(only_train, expected=None)
    blob = good.read_bytes()
    cut = fd.write_bytes(tmp_path / "cut.tar.gz", blob[: len(blob) // 2], gz=False)
    with pytest.raises(ValueError, match=r"cut.tar.gz"):
        load_news20(cut, expected=None)
    html = fd.write_bytes(tmp_path / "page.tar.gz", b"<html>moved</html>", gz=False)
    with pytest.raises(ValueError, match=r"page.tar.gz: not a readable tar archive"):
        load_news20(html, expected=None)
    evil = fd.write_news_tarball(tmp_path / "e.tar.gz", {
        "20news-bydate-train": {"a.b": ["x"]}, "20news-bydate-test": {"a.b": ["y"]},
        "20news-bydate-test/../../escape": {"c.d": ["z"]},
    })
    with pytest.raises(ValueError, match=r"e.tar.gz: unsafe"):
        load_news20(evil, expected=None)
    mixed = fd.write_news_tarball(tmp_path / "m.tar.gz", {
        "20news-bydate-train": {"a.b": ["x y"], "c.d": ["z w"]},
        "20news-bydate-test": {"a.b": ["x"], "e.f": ["w"]},
    })
    with pytest.raises(ValueError, match=r"different groups"):
        load_news20(mixed, expected=None)


def test_tiny_mirror_is_deterministic(tiny, tmp_path):
    # the workflow's test config pins these digests: same bytes on every run
    again = fd.write_tiny_mirror(tmp_path / "again")
    assert again["checksums"] == tiny["checksums"]
    assert sorted(again["files"]) == sorted(SOURCES)


def test_downloaded_file_gets_the_usual_permissions(payload, tmp_path):
    import os
    import stat

    raw, src = payload
    mask = os.umask(0o022)
    try:
        dest = download(src.as_uri(), tmp_path / "d.gz", sha256(src.read_bytes()))
    finally:
        os.umask(mask)
    assert stat.S_IMODE(dest.stat().st_mode) == 0o644

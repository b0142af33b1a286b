"""Leukemia (Golub et al. 1999): the reader of the expression and sample tables, and the
real sizes.

:func:`load_leukemia` reads the two expression TSVs (train, independent test) and the
sample table into a three-class :class:`~sparsesvm.data.containers.Dataset` (ALL B-cell,
ALL T-cell, AML). A table in the wrong format raises :class:`ValueError` naming the file,
the line and what was expected.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .containers import Dataset

__all__ = ["LEUKEMIA_CLASSES", "LEUKEMIA_EXPECTED", "load_leukemia"]

#: The three leukemia classes, in label order 0, 1, 2.
LEUKEMIA_CLASSES = ("ALL B-cell", "ALL T-cell", "AML")
#: Gene count and class counts (in :data:`LEUKEMIA_CLASSES` order) of the real data.
LEUKEMIA_EXPECTED = {"n_genes": 7129, "train_counts": (19, 8, 11), "test_counts": (19, 1, 14)}


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
        raise ValueError(
            f"{train_tsv} and {test_tsv} list different probes (or in a different order)"
        )
    overlap = sorted(set(s_tr) & set(s_te))
    if overlap:
        raise ValueError(f"{train_tsv} and {test_tsv} share samples {overlap[:5]}")
    out = []
    for path, samples, X, key in ((train_tsv, s_tr, X_tr, "train_counts"),
                                  (test_tsv, s_te, X_te, "test_counts")):
        unknown = [s for s in samples if s not in labels]
        if unknown:
            raise ValueError(
                f"{path}: samples {unknown[:5]} are not in the sample table {samples_tsv}"
            )
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

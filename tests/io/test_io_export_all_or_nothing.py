"""dentalkit.io.export writes a complete export or nothing (issue 23 follow-up).

Every table is checked against its declaration (and every CSV cell for control
characters) before the first file is written, and the files are renamed into place only
when all of them were written: a refused table — even the last one — or a failing write
leaves the target folder as it was, with no temporary files. The errors name the table,
the column and the rows.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pandas as pd
import pytest

from dentalkit import io
from dentalkit.errors import DentalkitWarning, InputError

FORMATS = [("csv",), ("parquet",), ("csv", "parquet")]


def _good() -> dict[str, pd.DataFrame]:
    measures = pd.DataFrame(
        {
            "patient_id": ["P1", "P2", "P3"],
            "measure": ["SNA", "SNA", "SNA"],
            "value": [81.2, 83.9, 79.5],
            "unit": "deg",
        }
    )
    mine = pd.DataFrame({"patient_id": ["P1", "P2"], "score": [1.0, 2.0]})
    return {"ceph_measures": measures, "mine": mine}


def _summary(**change) -> pd.DataFrame:
    base = pd.DataFrame(
        {
            "measure": ["SNA", "SNB", "ANB"],
            "n": [10, 10, 10],
            "n_units": [10.0, 10.0, 10.0],
            "session": ["first"] * 3,
            "mean": [81.0, 78.0, 3.0],
            "unit": "deg",
        }
    )
    return base.assign(**change)


def _folder(tmp_path):
    """A target folder that already holds an unrelated file and an older export file."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    (out / "ceph_measures.csv").write_text("old", encoding="utf-8")
    return out


def _state(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _export(tables, out, formats):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DentalkitWarning)  # 'mine.score' has no description
        return io.export(tables, out, formats=formats)


#: (id, refused last table, message, formats it is refused in). Control characters are
#: refused in CSV cells only (Parquet holds them), so that case runs for the CSV formats.
REFUSALS = [
    (
        "null",
        _summary(n_units=[10.0, 10.0, np.nan]),
        r"'ceph_summary': column 'n_units' may not be null, but row 2 \(0-based position\)",
        FORMATS,
    ),
    (
        "fraction",
        _summary(n=[10.0, 2.5, 10.0]),
        r"'ceph_summary': column 'n' \(declared int64\) cannot hold its values in row 1 ",
        FORMATS,
    ),
    (
        "vocabulary",
        _summary(session=["first", "first", "middle"]),
        r"'ceph_summary': column 'session' has value\(s\) \['middle'\] .* in row 2 ",
        FORMATS,
    ),
    (
        "control",
        _summary(measure=["SNA", "SN\x07B", "ANB"]),
        r"'ceph_summary', column 'measure': control character U\+0007 in row 1 \(0-based position\); ",
        [f for f in FORMATS if "csv" in f],
    ),
]


@pytest.mark.parametrize(
    ("formats", "bad", "needle"),
    [
        pytest.param(formats, bad, needle, id=f"{name}-{'+'.join(formats)}")
        for name, bad, needle, refused_in in REFUSALS
        for formats in refused_in
    ],
)
def test_a_refused_last_table_leaves_the_folder_as_it_was(tmp_path, formats, bad, needle):
    out = _folder(tmp_path)
    before = _state(out)
    with pytest.raises(InputError, match=needle):
        _export({**_good(), "ceph_summary": bad}, out, formats)
    assert _state(out) == before  # nothing new, nothing replaced, no temporary file


def test_a_control_character_is_kept_in_a_parquet_only_export(tmp_path):
    # why the control case above runs for the CSV formats only
    bad = _summary(measure=["SNA", "SN\x07B", "ANB"])
    _export({**_good(), "ceph_summary": bad}, tmp_path / "out", ("parquet",))
    back = pd.read_parquet(tmp_path / "out" / "ceph_summary.parquet")
    assert back["measure"].astype(str).tolist() == ["SNA", "SN\x07B", "ANB"]


def test_a_misfit_is_refused_before_the_folder_is_made(tmp_path):
    out = tmp_path / "new" / "export"
    with pytest.raises(InputError, match="n_units"):
        _export({**_good(), "ceph_summary": _summary(n_units=[1.0, None, 1.0])}, out, ("csv",))
    assert not (tmp_path / "new").exists()


def test_a_failing_write_leaves_nothing_new(tmp_path, monkeypatch):
    out = _folder(tmp_path)
    before = _state(out)
    real = pd.DataFrame.to_csv
    calls = []

    def flaky(self, *args, **kwargs):  # the third CSV fails as a full disk would
        calls.append(1)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pd.DataFrame, "to_csv", flaky)
    with pytest.raises(OSError, match="No space left"):
        _export({**_good(), "ceph_summary": _summary()}, out, ("csv", "parquet"))
    assert len(calls) == 3
    assert _state(out) == before
    # into a folder the call had to make: the folders are removed again
    calls.clear()
    with pytest.raises(OSError, match="No space left"):
        _export({**_good(), "ceph_summary": _summary()}, tmp_path / "a" / "b", ("csv",))
    assert not (tmp_path / "a").exists()


@pytest.mark.parametrize("formats", FORMATS)
def test_a_complete_export_replaces_the_older_files_and_leaves_no_temporary_file(tmp_path, formats):
    out = _folder(tmp_path)
    files = _export({**_good(), "ceph_summary": _summary()}, out, formats)
    names = {f"{t}.{f}" for t in ("ceph_measures", "mine", "ceph_summary") for f in formats}
    names |= {"data_dictionary.csv", "data_dictionary.json"}
    assert set(files) == names
    assert set(os.listdir(out)) == names | {"notes.txt", "ceph_measures.csv"}
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine"
    if "csv" in formats:
        assert (out / "ceph_measures.csv").read_text(encoding="utf-8").startswith("patient_id,")
        assert io.read_export(out)["ceph_summary"]["n_units"].tolist() == [10, 10, 10]


def test_the_writer_names_rows_by_position_and_index_label():
    frame = pd.DataFrame({"patient_id": ["P1", None, "P3"], "value": 1.0}, index=["a", "b", "c"])
    with pytest.raises(InputError, match=r"row 1 \(0-based position; index label 'b'\) holds"):
        io.arrow_table(frame, "ceph_measures")
    many = pd.DataFrame({"patient_id": [None] * 8, "value": 1.0})
    with pytest.raises(InputError, match=r"rows 0, 1, 2, 3, 4 … \(8 rows\) \(0-based positions\)"):
        io.arrow_table(many, "ceph_measures")
    # a refused value far down a long column is found and named
    counts = pd.DataFrame({"measure": "SNA", "n": np.r_[np.ones(9000), 0.5], "n_units": 1})
    with pytest.raises(InputError, match=r"column 'n' \(declared int64\).* in row 9000 "):
        io.arrow_table(counts, "ceph_summary")
    fractions = pd.DataFrame({"measure": "SNA", "n": np.full(7, 0.5), "n_units": 1})
    with pytest.raises(InputError, match=r"in rows 0, 1, 2, 3, 4 and possibly more \(0-based"):
        io.arrow_table(fractions, "ceph_summary")

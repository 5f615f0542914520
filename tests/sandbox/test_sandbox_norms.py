"""The synthetic cohort sits on the norms the simulator follows (issue 31).

The demo's patients (``DEMO-001`` …, with the demo's patient record of sex and birth
date) are simulated at the demo's two sessions (ages 8–17); for a norm given for one
year of age only (Ricketts' norms at age 9) every patient is simulated once more in the
middle of that year, so that every patient counts, not the few the demo has at that age. Their lateral landmarks are *measured by dentalkit's analyses*
(:func:`dentalkit.ceph.measure`, :func:`dentalkit.ceph.zscores`, matched on sex and
age as the demo matches them) and compared with the published norms of
``ceph_norms.csv``: the two implementations are independent (the sandbox imports no
analysis module, ``tests/test_imports.py``). A demo figure that looks like a finding
would otherwise be an artefact of the simulator.
"""

from __future__ import annotations

import warnings
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
import pytest

from dentalkit import ceph, tle
from dentalkit.errors import DentalkitWarning
from dentalkit.landmark_map import load_landmark_map
from dentalkit.sandbox._anatomy_ceph import FOLLOWED_NORMS
from dentalkit.sandbox._patient import patient
from dentalkit.sandbox.simulate import respond
from dentalkit.study.demo import SESSIONS, sandbox_calibration, sandbox_patients

#: Demo patients simulated: enough that a cohort mean z is known to about ±0.15.
N_PATIENTS = 240
#: The demo manifest's image URL of a lateral cephalogram (sandbox.image_url).
URL = "http://127.0.0.1:1/_sandbox/images/lateral_ceph/{pid}/{date}.png"


def _norms() -> pd.DataFrame:
    norms = ceph.load_norms()
    keys = pd.DataFrame(FOLLOWED_NORMS, columns=["measure", "group"])
    return norms.merge(keys, on=["measure", "group"])


def _landmarks(sessions: list[tuple[str, str]]) -> pd.DataFrame:
    names = load_landmark_map("lateral").set_index("key")["name"]
    rows = []
    for pid, ts in sessions:
        body = respond(
            "ceph-lateral-points",
            {"PatientID": pid, "TimeStamp": ts, "ImageName": URL.format(pid=pid, date=ts[:10])},
        )
        rows += [
            (pid, ts, k, v["x_coordinate"], v["y_coordinate"]) for k, v in body["Results"].items()
        ]
    lm = pd.DataFrame(rows, columns=["patient_id", "timestamp", "landmark", "x", "y"])
    lm["name"] = lm["landmark"].map(names)
    return lm


def _record(ids: list[str]) -> pd.DataFrame:
    """The demo's patient record (:func:`dentalkit.study.demo.sandbox_patients`: sex and birth
    date from the sandbox's truth), read from the patient draw without the rest of the
    truth (teeth, findings), which this test does not need."""
    rows = [(pid, patient(pid).sex, patient(pid).birth_date.isoformat()) for pid in ids]
    return pd.DataFrame(rows, columns=["patient_id", "sex", "birth_date"])


@pytest.fixture(scope="module")
def zscores() -> pd.DataFrame:
    ids = tle.example_patients(N_PATIENTS)["patient_id"].astype(str).tolist()
    record = _record(ids)
    norms = _norms()
    sessions = [(pid, ts, "demo") for pid in ids for ts in SESSIONS]
    one_year = norms[norms["age_min"] == norms["age_max"]]
    for age in sorted(set(one_year["age_min"])):  # the middle of that year of age
        for pid, born in zip(record["patient_id"], record["birth_date"], strict=True):
            when = datetime.fromisoformat(born).replace(tzinfo=UTC)
            when += timedelta(days=(age + 0.5) * 365.25)
            sessions.append((pid, when.strftime("%Y-%m-%dT%H:%M:%SZ"), f"age {age:g}"))
    lm = _landmarks([s[:2] for s in sessions])
    mm_per_px = sandbox_calibration()["ceph_lateral_points"]
    measured = ceph.measure(lm, sorted(norms["measure"].unique()), mm_per_px=mm_per_px)
    with warnings.catch_warnings():  # the norms are textbook values: said in the docs
        warnings.simplefilter("ignore", DentalkitWarning)
        z = ceph.zscores(measured, patients=record, norms=norms, include_unverified=True)
    kinds = pd.DataFrame(sessions, columns=["patient_id", "timestamp", "_kind"])
    z = z.astype({"patient_id": str, "timestamp": str}).merge(kinds, on=["patient_id", "timestamp"])
    # a measure counts at the demo's sessions, and at the extra ones of its one-year norm
    band = "age " + one_year["age_min"].map("{:g}".format)
    extra = dict(zip(one_year["measure"], band, strict=True))
    keep = (z["_kind"] == "demo") | (z["_kind"] == z["measure"].astype(str).map(extra))
    z = z[keep]
    return z.merge(record[["patient_id", "sex"]].rename(columns={"sex": "_sex"}), on="patient_id")


def test_every_followed_norm_is_a_norm_with_an_sd():
    norms = _norms()
    assert len(norms.drop_duplicates(["measure", "group"])) == len(FOLLOWED_NORMS)
    assert norms["sd"].gt(0).all()


@pytest.mark.parametrize(("measure", "group"), FOLLOWED_NORMS, ids=[m for m, _ in FOLLOWED_NORMS])
def test_cohort_mean_z_within_half_an_sd(zscores, measure, group):
    rows = zscores[(zscores["measure"] == measure) & (zscores["norm_group"] == group)]
    rows = rows[np.isfinite(rows["z"].to_numpy(dtype=float))]
    for sex in ("F", "M"):
        z = rows.loc[rows["_sex"] == sex, "z"]
        assert z.size >= 0.4 * N_PATIENTS, (measure, sex, z.size)  # every age band filled
        assert abs(z.mean()) <= 0.5, f"{measure} ({group}), sex {sex}: mean z {z.mean():+.2f}"


def test_record_is_the_demo_record():
    ids = ["DEMO-001", "DEMO-002", "DEMO-003"]
    pd.testing.assert_frame_equal(_record(ids), sandbox_patients(ids))

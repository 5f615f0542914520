"""Property tests: rotation, translation, uniform scale and mirroring of the film."""

from __future__ import annotations

import numpy as np
import pandas as pd
from ceph_fixtures import FRONTAL, LATERAL, image_table
from hypothesis import given, settings
from hypothesis import strategies as st

from dentalkit.ceph import load_measures, measure

CAT = load_measures().set_index("id")


def _values(table: pd.DataFrame, mm_per_px: float) -> pd.Series:
    out = measure(table, mm_per_px=mm_per_px, errors="raise")
    return pd.Series(out["value"].to_numpy(), index=out["measure"].astype(str))


BASE_LAT = _values(image_table(LATERAL, px_per_mm=1.0), 1.0)
BASE_FRO = _values(image_table(FRONTAL, view="frontal", px_per_mm=1.0), 1.0)

transforms = st.fixed_dictionaries(
    {
        "angle_deg": st.floats(-180, 180),
        "px_per_mm": st.floats(0.5, 25.0),
        "mirror": st.booleans(),
        "offset": st.tuples(st.floats(-5000, 5000), st.floats(-5000, 5000)),
    }
)


@settings(max_examples=25, deadline=None)
@given(transforms)
def test_lateral_measures_invariant_in_mm(tf):
    got = _values(image_table(LATERAL, **tf), 1.0 / tf["px_per_mm"])
    np.testing.assert_allclose(got[BASE_LAT.index], BASE_LAT, rtol=1e-9, atol=1e-7)


@settings(max_examples=20, deadline=None)
@given(transforms)
def test_frontal_measures_invariant_in_mm(tf):
    got = _values(image_table(FRONTAL, view="frontal", **tf), 1.0 / tf["px_per_mm"])
    np.testing.assert_allclose(got[BASE_FRO.index], BASE_FRO, rtol=1e-9, atol=1e-7)


@settings(max_examples=25, deadline=None)
@given(st.floats(0.5, 25.0), st.floats(-180, 180), st.booleans())
def test_px_lengths_scale_with_the_image_and_angles_do_not(scale, angle_deg, mirror):
    out = measure(
        image_table(LATERAL, px_per_mm=scale, angle_deg=angle_deg, mirror=mirror), errors="raise"
    )
    got = pd.Series(out["value"].to_numpy(), index=out["measure"].astype(str))
    lengths = CAT.index[(CAT["quantity"] == "length") & (CAT["view"] == "lateral")]
    others = CAT.index[(CAT["quantity"] != "length") & (CAT["view"] == "lateral")]
    np.testing.assert_allclose(got[lengths], scale * BASE_LAT[lengths], rtol=1e-9, atol=1e-7)
    np.testing.assert_allclose(got[others], BASE_LAT[others], rtol=1e-9, atol=1e-7)
    assert set(out.loc[out["measure"].isin(lengths), "unit"]) == {"px"}

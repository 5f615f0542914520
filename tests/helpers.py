"""Small constants shared by tests (no fixtures here; those live in conftest.py)."""

#: A valid /tle query as our codebook encodes it (age 14, female, Class II/1, mild
#: crowding, no spacing, overjet 4.5 mm, overbite 3.0 mm, extraction, difficulty 6.5).
VALID_TLE_QUERY = {
    "p01": "14",
    "p02": "F",
    "p03": "2",
    "p04": "1",
    "p05": "0",
    "p06": "4.5",
    "p07": "3.0",
    "p08": "0",
    "p09": "0",
    "p10": "1",
    "p11": "6.5",
}

#: The endpoints of the ``sandbox_store`` fixture (tests/conftest.py): every kind of answer
#: the contract tables hold.
STORE_ENDPOINTS = (
    "ceph_lateral_points",
    "occlusogram_upper_points",
    "occlusogram_lower_points",
    "pano_segmentation",
    "clinical_images",
    "panos_findings",
    "classifier",
    "tmj_xsectional",
)
#: The patients and sessions of the ``sandbox_store`` fixture.
STORE_PATIENTS = tuple(f"IO{i:02d}" for i in range(6))
STORE_SESSIONS = ("2024-03-05", "2025-03-05")

"""The registry says exactly what the specification shows."""

import pytest

from dentalkit.endpoints import ENDPOINTS, Kind, VersionFamily, get_endpoint, image_endpoints

SPEC_PATHS = {
    "/clinical-images",
    "/frontal-segmentation",
    "/panos-findings",
    "/pano-segmentation",
    "/occlusogram-upper-points",
    "/occlusogram-upper-seg",
    "/occlusogram-lower-points",
    "/occlusogram-lower-seg",
    "/ceph-lateral-points",
    "/ceph-frontal-points",
    "/classifier",
    "/tmj-xsectional",
}


def test_twelve_post_image_endpoints_and_get_tle():
    assert {e.path for e in image_endpoints()} == SPEC_PATHS
    assert all(e.method == "POST" for e in image_endpoints())
    tle = get_endpoint("/tle")
    assert tle.method == "GET"
    assert [q.name for q in tle.query] == [f"p{i:02d}" for i in range(1, 12)]
    assert len(ENDPOINTS) == 13


@pytest.mark.parametrize(
    ("path", "fields"),
    [
        # Spec "Segmentation response": PatientID absent from the occlusogram segmentation
        # responses; TimeStamp and ImageName only in the frontal one.
        (
            "/frontal-segmentation",
            ["Version", "PatientID", "TimeStamp", "ImageName", "Results", "OutputImageUrl"],
        ),
        ("/pano-segmentation", ["Version", "PatientID", "Results", "OutputImageUrl"]),
        ("/occlusogram-upper-seg", ["Version", "Results", "OutputImageUrl"]),
        ("/occlusogram-lower-seg", ["Version", "Results", "OutputImageUrl"]),
        # Keypoints: PatientID in the upper response, absent from the lower one.
        (
            "/occlusogram-upper-points",
            ["Version", "PatientID", "Teeth", "CatenaryPoints", "OutputImageUrl"],
        ),
        ("/occlusogram-lower-points", ["Version", "Teeth", "CatenaryPoints", "OutputImageUrl"]),
        # Landmarks: PatientID for lateral, absent from frontal.
        (
            "/ceph-lateral-points",
            ["Version", "PatientID", "NumberOfPredictedPoints", "Results", "OutputImageUrl"],
        ),
        (
            "/ceph-frontal-points",
            ["Version", "NumberOfPredictedPoints", "Results", "OutputImageUrl"],
        ),
        # Findings: ImageContents only for clinical findings.
        (
            "/clinical-images",
            [
                "Version",
                "PatientID",
                "TimeStamp",
                "ImageName",
                "ImageContents",
                "Results",
                "OutputImageUrl",
            ],
        ),
        (
            "/panos-findings",
            ["Version", "PatientID", "TimeStamp", "ImageName", "Results", "OutputImageUrl"],
        ),
        # Classifier and TMJ: no Version, no output image.
        ("/classifier", ["PatientID", "TimeStamp", "ImageName", "Classification"]),
        ("/tmj-xsectional", ["PatientID", "TimeStamp", "ImageName", "Results"]),
        ("/tle", ["app", "estimate_length"]),
    ],
)
def test_response_field_sets_follow_the_spec(path, fields):
    assert list(get_endpoint(path).response_fields) == fields


def test_optional_fields_and_defaults():
    fs = get_endpoint("frontal-segmentation")
    assert fs.field("StandardName").default == "ICON"
    assert fs.field("plot_labels").type is bool
    for path in ("/pano-segmentation", "/occlusogram-upper-seg", "/occlusogram-lower-seg"):
        (field,) = get_endpoint(path).optional_fields
        assert (field.name, field.type, field.param) == ("DrawContours", bool, "draw_contours")
    for e in ENDPOINTS.values():
        if e.path not in (
            "/frontal-segmentation",
            "/pano-segmentation",
            "/occlusogram-upper-seg",
            "/occlusogram-lower-seg",
        ):
            assert e.optional_fields == ()
    with pytest.raises(KeyError, match="DrawContours"):
        get_endpoint("pano_segmentation").field("PlotLabels")


def test_version_families():
    kp = {e.path for e in ENDPOINTS.values() if e.version is VersionFamily.KEYPOINTS}
    none = {e.path for e in ENDPOINTS.values() if e.version is None}
    assert kp == {"/occlusogram-upper-points", "/occlusogram-lower-points"}
    assert none == {"/classifier", "/tmj-xsectional", "/tle"}


def test_kinds_and_landmark_counts():
    assert get_endpoint("ceph_lateral_points").n_landmarks == 169
    assert get_endpoint("ceph_frontal_points").n_landmarks == 118
    kinds = {e.kind for e in ENDPOINTS.values()}
    assert kinds == set(Kind)


def test_lookup_errors_list_valid_names():
    with pytest.raises(KeyError, match="ceph_lateral_points"):
        get_endpoint("ceph")

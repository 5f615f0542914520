"""The synthetic input images agree with the answers about them (pixel sampling).

Each test decodes the PNG the sandbox serves with Pillow and samples its pixels at
places the *endpoint* returned (tooth polygons, boxes, landmark contours), never at the
renderer's own geometry. Requests use a full date-time ``TimeStamp`` while the image URL
carries only the date, as the demo's manifest does (the case that used to misplace the
answers: two sets of teeth in the demo's tooth map).

Sample points are laid with shapely (grid points inside a polygon shrunk by a few pixels,
or in a ring outside all teeth), independently of Pillow's polygon fill.
"""

import io

import numpy as np
import pytest
import shapely

from dentalkit.sandbox.simulate import respond

PIL = pytest.importorskip("PIL")
from PIL import Image  # noqa: E402

from dentalkit.sandbox.render import input_image  # noqa: E402

PATIENTS = ("P001", "P007", "Q-agree-3")
TS = "2024-03-05T10:00:00Z"
SESSION = "2024-03-05"


def _url(kind: str, pid: str) -> str:
    return f"http://127.0.0.1:9/_sandbox/images/{kind}/{pid}/{SESSION}.png"


def _answer(endpoint: str, kind: str, pid: str) -> dict:
    return respond(endpoint, {"PatientID": pid, "TimeStamp": TS, "ImageName": _url(kind, pid)})


def _gray(kind: str, pid: str) -> np.ndarray:
    png = input_image(f"{kind}/{pid}/{SESSION}.png")
    return np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=float)


def _grid_in(geom, step: float = 4.0) -> np.ndarray:
    """Integer pixel centres on a grid inside ``geom`` (shapely), shape (n, 2)."""
    x0, y0, x1, y1 = geom.bounds
    xs, ys = np.meshgrid(np.arange(np.ceil(x0), x1, step), np.arange(np.ceil(y0), y1, step))
    xs, ys = xs.ravel(), ys.ravel()
    inside = shapely.contains_xy(geom, xs, ys)
    return np.column_stack([xs[inside], ys[inside]]).astype(int)


def _sample(img: np.ndarray, pts: np.ndarray) -> np.ndarray:
    h, w = img.shape
    keep = (pts[:, 0] >= 0) & (pts[:, 0] < w) & (pts[:, 1] >= 0) & (pts[:, 1] < h)
    pts = pts[keep]
    return img[pts[:, 1], pts[:, 0]]


def _teeth(body: dict) -> dict[str, shapely.Polygon]:
    return {k: shapely.Polygon(r["points"]) for k, r in body["Results"].items() if not r["missing"]}


def _check_teeth_drawn(img: np.ndarray, teeth: dict[str, shapely.Polygon]) -> None:
    assert len(teeth) >= 10
    union = shapely.union_all(list(teeth.values()))
    ring = union.buffer(14).difference(union.buffer(5))
    outside = _sample(img, _grid_in(ring))
    assert len(outside) > 200
    for key, poly in teeth.items():
        inner = _sample(img, _grid_in(poly.buffer(-3)))
        assert len(inner) > 20, key
        # every tooth the endpoint reports is a bright tooth in the image …
        assert np.median(inner) - np.median(outside) > 80, key
        assert np.mean(inner > np.percentile(outside, 95)) > 0.9, key
    # … and what surrounds the teeth is not tooth
    all_inner = _sample(img, _grid_in(union.buffer(-3), step=8))
    assert np.mean(outside > np.percentile(all_inner, 5)) < 0.05


@pytest.mark.parametrize("pid", PATIENTS)
def test_pano_teeth_are_drawn_where_pano_segmentation_puts_them(pid):
    _check_teeth_drawn(_gray("pano", pid), _teeth(_answer("pano-segmentation", "pano", pid)))


@pytest.mark.parametrize("pid", PATIENTS)
def test_photo_teeth_are_drawn_where_frontal_segmentation_puts_them(pid):
    body = _answer("frontal-segmentation", "intraoral_frontal", pid)
    _check_teeth_drawn(_gray("intraoral_frontal", pid), _teeth(body))


@pytest.mark.parametrize("arch", ["upper", "lower"])
@pytest.mark.parametrize("pid", PATIENTS[:2])
def test_model_teeth_are_drawn_where_occlusogram_seg_puts_them(pid, arch):
    body = _answer(f"occlusogram-{arch}-seg", f"model_{arch}", pid)
    _check_teeth_drawn(_gray(f"model_{arch}", pid), _teeth(body))


def _boxes(body: dict) -> list[tuple[str, shapely.Polygon]]:
    return [
        (name, shapely.box(*d["TopLeft"], *d["BottomRight"]))
        for name, dets in body["Results"].items()
        for d in dets
    ]


def _tooth_level(img: np.ndarray, teeth: dict[str, shapely.Polygon]) -> float:
    """A level between the teeth's brightness and the darkest tenth of the image."""
    union = shapely.union_all(list(teeth.values()))
    inner = np.median(_sample(img, _grid_in(union.buffer(-3), step=8)))
    return 0.5 * (inner + np.percentile(img, 10))


@pytest.mark.parametrize(
    "kind", ["intraoral_frontal", "intraoral_right", "intraoral_upper", "intraoral_lower"]
)
def test_clinical_boxes_lie_on_drawn_teeth(kind):
    n_boxes = 0
    for i in range(12):
        pid = f"CB{i}"
        body = _answer("clinical-images", kind, pid)
        if not body["Results"]:
            continue
        img = _gray(kind, pid)
        # the tooth level from an independent answer about the same photo kind: bright
        # pixels well above the background of the photo's corners
        corners = np.concatenate([img[:40, :40].ravel(), img[-40:, -40:].ravel()])
        for name, box in _boxes(body):
            inside = _sample(img, _grid_in(box, step=2.0))
            assert len(inside) > 10, (pid, name)
            tooth_share = np.mean(inside > corners.max() + 60)
            floor = 0.3 if name in ("gingivitis", "calculus") else 0.6
            assert tooth_share > floor, (pid, name, box.bounds, tooth_share)
            n_boxes += 1
    assert n_boxes >= 15


@pytest.mark.parametrize("pid", [f"PF{i}" for i in range(8)])
def test_pano_finding_boxes_lie_on_drawn_teeth(pid):
    body = _answer("panos-findings", "pano", pid)
    teeth = _teeth(_answer("pano-segmentation", "pano", pid))
    img = _gray("pano", pid)
    level = _tooth_level(img, teeth)
    for name, box in _boxes(body):
        inside = _sample(img, _grid_in(box, step=2.0))
        # periapical lesions are boxed around the apex: a root tip, then bone
        floor = 0.1 if name == "periapical_lesion" else 0.4
        assert np.mean(inside > level) > floor, (pid, name, box.bounds)


def test_some_pano_findings_were_checked():
    n = sum(len(_boxes(_answer("panos-findings", "pano", f"PF{i}"))) for i in range(8))
    assert n >= 5


# --- cephalograms --------------------------------------------------------------------
#
# Contour landmarks carry 0.8 mm (8 px) of noise, more than the drawn cortex is wide, so
# the contours are sampled on the noise-free answer of the same request (the documented
# ``noise=False`` switch: the geometry the endpoint answers before its noise).


def _ceph_groups(endpoint: str, kind: str, pid: str, view: str) -> dict[str, np.ndarray]:
    """Points (px) of the answer grouped by the shipped landmark map (not the simulator)."""
    from dentalkit.landmark_map import key_to_name

    body = respond(
        endpoint,
        {"PatientID": pid, "TimeStamp": TS, "ImageName": _url(kind, pid)},
        noise=False,
    )
    names = key_to_name(view)
    groups: dict[str, list] = {}
    for key, p in body["Results"].items():
        name = names[key]
        group = name.rsplit("_", 1)[0] if name[-1].isdigit() else name
        groups.setdefault(group, []).append((p["x_coordinate"], p["y_coordinate"]))
    return {g: np.asarray(v, dtype=float) for g, v in groups.items()}


def _along(poly: np.ndarray, step: float = 5.0) -> tuple[np.ndarray, np.ndarray]:
    """Points every ``step`` px along a polyline and the unit normals there."""
    seg = np.diff(poly, axis=0)
    out, normals = [], []
    for p0, d in zip(poly[:-1], seg, strict=True):
        length = float(np.hypot(*d))
        if length == 0:
            continue
        t = np.arange(0.0, length, step)[:, None] / length
        out.append(p0 + t * d)
        normals.append(np.repeat([[-d[1] / length, d[0] / length]], len(t), axis=0))
    return np.vstack(out), np.vstack(normals)


def _window_max(img: np.ndarray, pts: np.ndarray, r: int = 2) -> np.ndarray:
    h, w = img.shape
    xy = np.rint(pts).astype(int)
    best = np.zeros(len(xy))
    for dx in range(-r, r + 1):
        for dy in range(-r, r + 1):
            x = np.clip(xy[:, 0] + dx, 0, w - 1)
            y = np.clip(xy[:, 1] + dy, 0, h - 1)
            best = np.maximum(best, img[y, x])
    return best


def _check_lines(img: np.ndarray, groups: dict[str, np.ndarray], lines: tuple[str, ...]) -> None:
    for g in lines:
        pts, nrm = _along(groups[g])
        on = _window_max(img, pts)
        off = np.concatenate([
            _sample(img, np.rint(pts + 25 * nrm).astype(int)),
            _sample(img, np.rint(pts - 25 * nrm).astype(int)),
        ])  # fmt: skip
        assert np.median(on) > 170, g
        assert np.median(on) - np.median(off) > 60, g


@pytest.mark.parametrize("pid", PATIENTS)
def test_lateral_ceph_outlines_follow_the_answered_contours(pid):
    img = _gray("lateral_ceph", pid)
    groups = _ceph_groups("ceph-lateral-points", "lateral_ceph", pid, "lateral")
    _check_lines(img, groups, ("mandible_contour", "maxilla_contour", "cranial_base",
                               "nasal_bone", "sella_contour"))  # fmt: skip
    # incisors and molars: dense inside their outlines, not around them
    for g in ("upper_incisor_outline", "lower_incisor_outline", "upper_molar_outline",
              "lower_molar_outline"):  # fmt: skip
        poly = shapely.Polygon(groups[g])
        inner = _sample(img, _grid_in(poly.buffer(-3), step=2.0))
        assert np.median(inner) > 220, g
    # the soft-tissue profile is the edge of the head: inside (towards S) is tissue,
    # outside (away from S) is air
    pts, nrm = _along(groups["soft_tissue_profile"])
    s = groups["S"][0]
    towards_s = np.sign(np.sum((s - pts) * nrm, axis=1))[:, None]
    inside = _sample(img, np.rint(pts + 15 * towards_s * nrm).astype(int))
    outside = _sample(img, np.rint(pts - 15 * towards_s * nrm).astype(int))
    assert np.median(inside) - np.median(outside) > 25
    assert np.median(outside) < 20


@pytest.mark.parametrize("pid", PATIENTS)
def test_frontal_ceph_outlines_follow_the_answered_contours(pid):
    img = _gray("frontal_ceph", pid)
    groups = _ceph_groups("ceph-frontal-points", "frontal_ceph", pid, "frontal")
    _check_lines(img, groups, ("skull_outline", "mandible_contour"))
    for g in ("orbit_contour_R", "orbit_contour_L", "nasal_cavity"):
        poly = shapely.Polygon(groups[g])
        inner = _sample(img, _grid_in(poly.buffer(-8), step=3.0))
        rim = _window_max(img, _along(np.vstack([groups[g], groups[g][:1]]))[0])
        assert np.median(rim) - np.median(inner) > 100, g


def test_noisy_ceph_answers_scatter_around_the_drawn_contours():
    """The noisy answer (what a client gets) lies on the drawn mandible, within noise."""
    pid = PATIENTS[0]
    img = _gray("lateral_ceph", pid)
    body = _answer("ceph-lateral-points", "lateral_ceph", pid)
    from dentalkit.landmark_map import key_to_name

    names = key_to_name("lateral")
    pts = np.array([
        (p["x_coordinate"], p["y_coordinate"])
        for k, p in body["Results"].items()
        if names[k].startswith("mandible_contour_")
    ])  # fmt: skip
    # within a 2.5-SD window (20 px) of each noisy point the bright cortex is found
    assert np.mean(_window_max(img, pts, r=20) > 170) > 0.9


@pytest.mark.parametrize("arch", ["upper", "lower"])
def test_model_keypoints_fall_on_drawn_teeth(arch):
    pid = PATIENTS[1]
    img = _gray(f"model_{arch}", pid)
    body = _answer(f"occlusogram-{arch}-points", f"model_{arch}", pid)
    teeth = _teeth(_answer(f"occlusogram-{arch}-seg", f"model_{arch}", pid))
    level = _tooth_level(img, teeth)
    present = [r for r in body["Teeth"].values() if not r["missing"]]
    centroids = np.rint([r["centroid"] for r in present]).astype(int)
    assert len(centroids) >= 10
    assert np.all(_sample(img, centroids) > level)


def test_clinical_output_image_for_a_foreign_url_draws_the_analysed_photo():
    """For a non-sandbox URL the boxes are on a photo kind chosen by the URL's hash; the
    output image must show that photo (its boxes lie on its drawn teeth)."""
    from dentalkit.sandbox.render import output_image

    ep = "clinical-images"
    for i in range(30):
        req = {"PatientID": f"FX{i}", "TimeStamp": SESSION, "ImageName": f"https://x/{i}.jpg"}
        body = respond(ep, req)
        if sum(len(v) for v in body["Results"].values()) >= 2:
            break
    out = np.asarray(Image.open(io.BytesIO(output_image(ep, req, body))).convert("L"), float)
    # the output image is the input photo with box outlines: sample box interiors shrunk
    # by 4 px (inside the drawn outline); teeth are the brightest pixels of the photo
    for _, box in _boxes(body):
        inside = _sample(out, _grid_in(box.buffer(-4), step=2.0))
        if len(inside):
            assert np.mean(inside > 200) > 0.25, box.bounds


def test_tmj_image_shows_the_flattening_the_answer_reports():
    """The TMJ image draws both joints (patient's right on the image's left, documented
    layout); a condyle reported flattened has no bone at the top of its head."""
    seen = {True: 0, False: 0}
    for i in range(120):
        pid = f"T{i}"
        sentence = _answer("tmj-xsectional", "tmj", pid)["Results"]["Finding"]
        img = _gray("tmj", pid)
        h, w = img.shape
        for side, x in (("right", 0.25 * w), ("left", 0.75 * w)):
            flat = f"Condylar flattening detected on the {side} condyle." in sentence
            top = img[int(0.29 * h), int(x)]
            assert (top < 40) if flat else (top > 150), (pid, side, sentence)
            seen[flat] += 1
    assert seen[True] >= 3

"""Tooth figures: one patient's tooth map and the cohort FDI odontogram heat map.

- :func:`tooth_map` — the tooth outlines of one image coloured by a value (area,
  width, z-score …); missing teeth hatched at their estimated place.
- :func:`odontogram` — a value per FDI tooth (e.g. the prevalence of missing teeth
  from :func:`dentalkit.teeth.missing`) on the 32-tooth chart, quadrants laid out as
  clinicians read them.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import shapely
from matplotlib.collections import PolyCollection
from matplotlib.patches import Ellipse, Patch

from dentalkit.errors import DentalkitWarning, InputError
from dentalkit.plot._common import (
    colormap,
    finish_pixel_axes,
    fit_height_to_view,
    new_axes,
    owns_figure,
    require_columns,
    select_session,
    show_image,
    text_colour_on,
    value_norm,
)
from dentalkit.plot._identity import Identity, check_identity, session_label
from dentalkit.plot._labels import Candidate, place_labels
from dentalkit.plot._odontogram import ODONTOGRAM_LAYOUT, odontogram
from dentalkit.plot.house import fontsize, unit_text
from dentalkit.teeth import TOOTH_DIGIT

__all__ = ["ODONTOGRAM_LAYOUT", "missing_placeholders", "odontogram", "tooth_map"]

_KEY = ("patient_id", "timestamp", "source", "tooth")
_IMAGE_KEY = ("patient_id", "timestamp", "source")
MISSING_HATCH = "/////"


def _positions(rows: pd.DataFrame) -> np.ndarray:
    """Signed position along the arch: −8 (right m3) … −1, +1 … +8 (left m3)."""
    digit = rows["tooth_type"].astype(object).map(TOOTH_DIGIT).to_numpy(dtype=float)
    sign = rows["side"].astype(object).map({"rgt": -1.0, "lft": 1.0}).to_numpy(dtype=float)
    return digit * sign


def _extrapolate(s: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Piecewise-linear interpolation of ys(xs) at s, extended linearly beyond the ends."""
    out = np.interp(s, xs, ys)
    if len(xs) >= 2:
        lo_slope = (ys[1] - ys[0]) / (xs[1] - xs[0])
        hi_slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
        out = np.where(s < xs[0], ys[0] + (s - xs[0]) * lo_slope, out)
        out = np.where(s > xs[-1], ys[-1] + (s - xs[-1]) * hi_slope, out)
    return out


def missing_placeholders(
    rows: pd.DataFrame, geoms: np.ndarray, present: np.ndarray
) -> pd.DataFrame:
    """Estimated centre and radius of each missing tooth from its present neighbours.

    Per arch, the centroids of the present teeth are interpolated (extrapolated at the
    ends) along the signed arch position (−8 … 8, no zero: the two central incisors
    are neighbours); the radius is that of a circle of the neighbours' mean area.
    Arches with fewer than two present teeth give no estimate (NaN).
    """
    pos = _positions(rows)
    c = shapely.centroid(geoms)
    cx, cy = shapely.get_x(c), shapely.get_y(c)
    radius = np.sqrt(shapely.area(geoms) / np.pi)
    arch = rows["arch"].astype(str).to_numpy()
    # close the gap at the midline so the centrals are one step apart
    s_all = np.where(pos > 0, pos - 0.5, pos + 0.5)
    out = pd.DataFrame(index=rows.index[~present], columns=["x", "y", "r"], dtype=float)
    for a in np.unique(arch):
        ok = present & (arch == a) & np.isfinite(s_all) & np.isfinite(cx)
        want = ~present & (arch == a) & np.isfinite(s_all)
        if not want.any() or ok.sum() < 2:
            continue
        order = np.argsort(s_all[ok])
        s_ok = s_all[ok][order]
        s_want = s_all[want]
        out.loc[rows.index[want], "x"] = _extrapolate(s_want, s_ok, cx[ok][order])
        out.loc[rows.index[want], "y"] = _extrapolate(s_want, s_ok, cy[ok][order])
        out.loc[rows.index[want], "r"] = np.interp(s_want, s_ok, radius[ok][order])
    return out


def tooth_map(
    teeth: pd.DataFrame,
    value: str | None = None,
    session: Any = None,
    *,
    values: pd.DataFrame | None = None,
    cmap: Any = None,
    vmin: float | None = None,
    vmax: float | None = None,
    center: float | None = None,
    label: str | None = None,
    numbers: bool = True,
    image: Any = None,
    crop: bool = True,
    show_axes: bool = True,
    identity: Identity = "pseudonym",
    ax: Any = None,
) -> Any:
    """Tooth outlines of one image, coloured by a value; missing teeth hatched.

    Parameters
    ----------
    teeth : DataFrame
        The ``teeth`` table (``patient_id``, ``timestamp``, ``source``, ``tooth``,
        ``tooth_type``, ``side``, ``arch``, ``fdi``, ``missing``, ``geometry``).
    value : str, optional
        Column to colour by, in ``teeth`` or in ``values`` (e.g. ``"area"``,
        ``"md_width"``, a z-score). Without it teeth are drawn in one neutral colour.
    session : str, tuple or mapping, optional
        Which image: ``(patient_id, timestamp, source)`` or a mapping; optional when
        the table holds one.
    values : DataFrame, optional
        A table with the value, joined on ``patient_id``, ``timestamp``, ``source``,
        ``tooth`` (e.g. the output of :func:`dentalkit.teeth.measure`).
    cmap : str or Colormap, optional
        Default viridis, or RdBu_r when ``center`` is given.
    vmin, vmax : float, optional
        Colour limits (default: the data range; symmetric around ``center``).
    center : float, optional
        Value at the middle of a diverging map (e.g. 0 for z-scores).
    label : str, optional
        Colour bar label (default: the value name and its unit from a ``unit``
        column; areas get unit²).
    numbers : bool
        Write each tooth's FDI number (black or white, whichever reads better on the
        tooth's colour).
    image : array, PIL image, PNG bytes or path, optional
        The photograph or radiograph underneath.
    crop : bool
        Limit the view to the teeth (with a margin) rather than the whole image.
    show_axes : bool
    identity : "pseudonym", "raw", None or mapping
        How the title names the image's session (see :func:`dentalkit.plot.ceph_tracing`).
    ax : matplotlib Axes, optional
        When it is the only Axes of its figure (or none is given), the figure's height is
        fitted to the view.

    Returns
    -------
    matplotlib Axes
        Image coordinates, equal aspect, **y inverted**. Present teeth form one
        ``PolyCollection`` (gid ``"teeth"``) whose face colours are
        ``cmap(norm(value))``; teeth without a value are grey. Each missing tooth is
        a hatched, dashed ellipse (gid ``"missing:<tooth>"``) at the place
        interpolated between its present neighbours (see
        :func:`missing_placeholders`) — a schematic, not a measurement.
    """
    require_columns(
        teeth, ["source", "tooth", "tooth_type", "side", "arch", "missing", "geometry"], "teeth"
    )
    check_identity(identity)
    rows = select_session(teeth, session, what="teeth", keys=_IMAGE_KEY).copy()
    vals, unit = _value_column(rows, value, values)
    missing = rows["missing"].fillna(False).astype(bool).to_numpy()
    geoms = np.asarray(rows["geometry"].to_numpy(dtype=object))
    geoms = np.where(shapely.is_geometry(geoms), geoms, None)
    present = ~missing & ~shapely.is_missing(geoms) & ~shapely.is_empty(geoms)

    created = ax is None
    ax = new_axes(ax, (85.0, 60.0))
    has_image = image is not None
    shape = None
    if has_image:
        shape = show_image(ax, image).shape
    verts, owner = _outlines(geoms, present)
    coll = PolyCollection(verts, edgecolors="#333333", linewidths=0.5, zorder=2)
    coll.set_gid("teeth")
    if vals is not None:
        coll.set_array(vals[owner])
        coll.set_cmap(colormap(cmap, center))
        coll.set_norm(value_norm(vals[present], vmin, vmax, center))
    else:
        coll.set_facecolor("#F2EDE4")
    ax.add_collection(coll)

    holes = missing_placeholders(rows, geoms, present)
    unplaced = holes.index[holes["x"].isna()]
    if len(unplaced):
        warnings.warn(
            f"missing teeth {rows.loc[unplaced, 'tooth'].astype(str).tolist()} are not drawn: "
            "fewer than two present teeth in their arch to place them by",
            DentalkitWarning,
            stacklevel=2,
        )
    placed = holes.dropna()
    for idx, h in placed.iterrows():
        ax.add_patch(
            Ellipse(
                (h["x"], h["y"]),
                2 * h["r"],
                2 * h["r"],
                facecolor="white",
                edgecolor="#555555",
                hatch=MISSING_HATCH,
                ls="--",
                lw=0.6,
                zorder=2,
                gid=f"missing:{rows.loc[idx, 'tooth']}",
            )
        )
    xs = [v[:, 0] for v in verts] + [
        placed["x"].to_numpy() + s * placed["r"].to_numpy() for s in (-1, 1)
    ]
    ys = [v[:, 1] for v in verts] + [
        placed["y"].to_numpy() + s * placed["r"].to_numpy() for s in (-1, 1)
    ]
    finish_pixel_axes(
        ax,
        np.concatenate(xs) if xs else np.array([]),
        np.concatenate(ys) if ys else np.array([]),
        image_shape=shape,
        crop=crop,
        show_axes=show_axes,
    )
    if vals is not None:
        fig = ax.get_figure()
        cax = ax.inset_axes([1.03, 0.0, 0.035, 1.0])  # as tall as the (equal-aspect) image
        cb = fig.colorbar(coll, cax=cax)
        cb.set_label(label or _value_label(value, unit))
    keyed = {"patient_id", "timestamp"} <= set(rows.columns)
    who = (
        session_label(teeth, rows["patient_id"].iloc[0], rows["timestamp"].iloc[0], identity)
        if keyed
        else ""
    )
    if len(placed):
        ax.legend(
            handles=[
                Patch(
                    facecolor="white",
                    edgecolor="#555555",
                    hatch=MISSING_HATCH,
                    ls="--",
                    label="missing (position estimated)",
                )
            ],
            loc="lower left",
            bbox_to_anchor=(0.0, 1.0),
            borderaxespad=0.2,
            title=who or None,
            alignment="left",
        )
    elif who:
        ax.set_title(who, fontsize=fontsize("legend"), fontweight="normal")
    if owns_figure(ax, created):  # as tall as the view needs (legend and colour bar included)
        fit_height_to_view(ax)
    if numbers:  # after the view and the size: placed in display space, clear of each other
        faces = coll.to_rgba(vals[owner]) if vals is not None else None
        _numbers(ax, rows, geoms, present, placed, faces, owner)
    return ax


def _outlines(geoms: np.ndarray, present: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """Exterior rings of every present (multi)polygon, and the row each ring belongs to."""
    rows = np.flatnonzero(present)
    parts, part_row = shapely.get_parts(geoms[rows], return_index=True)
    coords, ring = shapely.get_coordinates(shapely.get_exterior_ring(parts), return_index=True)
    verts = np.split(coords, np.flatnonzero(np.diff(ring)) + 1) if len(coords) else []
    return verts, rows[part_row]


def _value_column(
    rows: pd.DataFrame, value: str | None, values: pd.DataFrame | None
) -> tuple[np.ndarray | None, str | None]:
    if value is None:
        return None, None
    if values is not None:
        keys = [k for k in _KEY if k in values.columns and k in rows.columns]
        require_columns(values, [value], "values")
        if "tooth" not in keys:
            raise InputError("values needs a 'tooth' column (and the session key) to join on")
        extra = [value] + (["unit"] if "unit" in values.columns else [])
        right = values[keys + extra].copy()
        for k in keys:
            right[k] = right[k].astype(str)
        left = rows[keys].astype(str).reset_index()
        if right.duplicated(keys).any():
            raise InputError(f"values has several rows per {keys}; give one value per tooth")
        joined = left.merge(right, on=keys, how="left").set_index("index").loc[rows.index]
        vals = pd.to_numeric(joined[value], errors="coerce").to_numpy(dtype=float)
        unit = _first(joined, "unit")
        return vals, unit
    if value not in rows.columns:
        raise InputError(
            f"value column {value!r} is not in the teeth table; pass the table that has it "
            "as values= (e.g. dentalkit.teeth.measure(teeth))"
        )
    vals = pd.to_numeric(rows[value], errors="coerce").to_numpy(dtype=float)
    return vals, _first(rows, "unit")


def _first(table: pd.DataFrame, col: str) -> str | None:
    if col not in table.columns:
        return None
    v = table[col].dropna()
    return str(v.iloc[0]) if len(v) else None


def _value_label(value: str | None, unit: str | None) -> str:
    if unit is None or value is None:
        return str(value)
    if value in ("compactness",):
        return value
    text = unit_text(unit) + ("²" if value == "area" and "²" not in unit_text(unit) else "")
    return f"{value.replace('_', ' ')} ({text})"


def _numbers(
    ax: Any,
    rows: pd.DataFrame,
    geoms: np.ndarray,
    present: np.ndarray,
    placed: pd.DataFrame,
    faces: np.ndarray | None = None,
    owner: np.ndarray | None = None,
) -> None:
    """FDI numbers in the teeth, each clear of the others.

    A number sits in its tooth (in black or white, whichever reads better on the tooth's
    colour); where a narrow tooth cannot hold it beside its neighbours' numbers (lower
    incisors in a single-column panoramic view), it moves up or down along the tooth, on
    a white box, to the first place that covers no other number.
    """
    if "fdi" not in rows.columns:
        return
    rp = shapely.point_on_surface(np.where(present, geoms, None))
    fdi = rows["fdi"].to_numpy()
    colour_of = {}
    if faces is not None and owner is not None:
        for row, face in zip(owner, faces, strict=True):
            colour_of.setdefault(int(row), text_colour_on(face))
    todo = [
        (
            shapely.get_x(rp[i]),
            shapely.get_y(rp[i]),
            str(int(fdi[i])),
            colour_of.get(int(i), "black"),
        )
        for i in np.flatnonzero(present)
        if pd.notna(fdi[i])
    ]
    todo += [
        (h["x"], h["y"], str(int(rows.loc[idx, "fdi"])), "#333333")
        for idx, h in placed.iterrows()
        if pd.notna(rows.loc[idx, "fdi"])
    ]
    occupied: list[np.ndarray] = []
    steps = (0.0, 5.0, -5.0, 9.0, -9.0, 13.0, -13.0)
    for x, y, text, colour in todo:
        (artist,) = place_labels(
            ax,
            [text],
            [[Candidate((x, y), (0.0, dy), "center", "center") for dy in steps]],
            pad_pt=0.3,
            occupied=occupied,
            fontsize=fontsize("note"),
            color=colour,
            zorder=3,
        )
        if artist.get_position() != (0.0, 0.0) or colour == "#333333":  # off its tooth
            artist.set_color("black" if colour != "#333333" else colour)
            artist.set_bbox({"boxstyle": "round,pad=0.1", "fc": "white", "lw": 0, "alpha": 0.85})

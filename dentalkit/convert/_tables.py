"""The public converters: ``tables()`` and one function per table."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache
from pathlib import Path

import pandas as pd

from dentalkit._progress import bar
from dentalkit.convert import (
    _calibration,
    _classifier,
    _findings,
    _keypoints,
    _landmarks,
    _teeth,
    _tle,
    _tmj,
)
from dentalkit.convert._common import Problems, Requests, gc_paused, prepare
from dentalkit.convert._requests import check_timestamp_format
from dentalkit.convert.schemas import TABLE_KINDS, TABLE_NAMES
from dentalkit.endpoints import Kind
from dentalkit.errors import DentalkitWarning, Errors, InputError, check_errors
from dentalkit.landmark_map import load_landmark_map

LandmarkMap = str | Path | pd.DataFrame | Mapping[str, str] | None

_PARAMS_DOC = """
    Parameters
    ----------
    responses : pandas.DataFrame
        The responses table (``docs/data-contract.md``), e.g.
        ``pandas.read_parquet(responses_dir)``: columns at least ``endpoint`` (registry
        name, path or slug), ``patient_id``, ``timestamp`` and ``body`` (the exact JSON
        text, bytes, or an already parsed dict); optional ``status_code`` and ``error``,
        and ``options`` (the JSON of the /tle query). Rows whose ``status_code`` is
        present and not 200, or whose ``error`` is set, are fetch failures: they are
        skipped and are not problems (the fetcher lists them).
    errors : {"raise", "collect", "warn"}
        dentalkit's one ``errors=`` rule (:func:`dentalkit.errors.check_errors`).
        ``"raise"`` (default): a malformed body raises
        :class:`~dentalkit.errors.ResponseFormatError` naming the endpoint, patient,
        timestamp, responses row and JSON path; a bad responses row (unknown endpoint,
        null patient_id) raises :class:`~dentalkit.errors.InputError`. ``"collect"``:
        each becomes a row of the ``problems`` table and that response is dropped; the
        others convert. ``"warn"``: as ``"collect"``, plus one
        :class:`~dentalkit.errors.DentalkitWarning` when there are problems."""

_PARTS_DOC = _PARAMS_DOC.replace(
    """    responses : pandas.DataFrame
        The responses table""",
    """    parts : iterable of pandas.DataFrame
        Consecutive pieces of one responses table""",
)

_NOTES_DOC = """
    Notes
    -----
    Data the service sent that is well-formed but contradicts the spec or itself
    (``NumberOfPredictedPoints`` ≠ landmarks present, ``ImageContents`` ≠ detections,
    an unknown tooth prefix, an echo that differs from the request) is kept and listed
    in ``problems`` in both modes; an echo mismatch also warns
    (:class:`~dentalkit.errors.EchoMismatchWarning`). The session key always comes from
    the request, never from the echo.

    What counts as malformed: a required field missing or of the wrong type; a record
    (landmark, tooth, detection, classification) with fields other than the spec's;
    a coordinate that is not a pair of finite numbers; a number beyond ±10^6
    (``MAX_ABS``: no dental image is a million pixels wide, so such a value is
    corruption); a key or table string longer than 4,096 characters (``MAX_TEXT``).
    Top-level fields the spec does not show are ignored (a new field does not break a
    cohort); a ``Version`` on an endpoint the spec shows without one is kept as
    ``model_version``. The echo fields and ``OutputImageUrl`` are optional but must be
    strings.
"""


def tables(
    responses: pd.DataFrame,
    errors: Errors = "raise",
    landmark_map: LandmarkMap = None,
    include: Iterable[str] | None = None,
    tmj_phrases: _tmj.PhrasesArg = None,
    progress: bool = False,
    *,
    timestamp_format: str | None = None,
    calibration: pd.DataFrame | None = None,
) -> dict[str, pd.DataFrame]:
    """Convert a responses table into every dentalkit table, plus ``problems``.

    Each body is parsed once (orjson) and flattened in one pass; tables are typed as
    declared in :mod:`dentalkit.convert.schemas`.
    {params}
    landmark_map : path, DataFrame or mapping, optional
        Landmark map giving each key its anatomical ``name`` (default: the shipped map,
        see :func:`dentalkit.landmark_map.load_landmark_map`); a mapping ``key → name``
        is accepted too.
    include : iterable of str, optional
        Build only these tables (default: all); only their responses are read.
    tmj_phrases : path or list of paths, optional
        Extra TMJ phrases files added to the shipped ones (default:
        :data:`dentalkit.settings.tmj_phrases`); see :func:`dentalkit.convert.has_finding`.
    progress : bool
        Show a tqdm bar on stderr that counts the responses as each endpoint kind's are
        converted (only when stderr is a terminal; the CLI's ``tables`` and the demo turn
        it on). Default False: a library call prints nothing.
    timestamp_format : str, optional
        The strptime format of the timestamps (``"%d/%m/%Y"``) that ``session_time`` is
        parsed with; default ``responses.attrs["timestamp_format"]`` (the format the
        fetch recorded, set by :func:`dentalkit.fetch.read_responses`), else ISO 8601. An
        image request's timestamp that does not parse is a ``problems`` row (rows kept,
        ``session_time`` missing).
    calibration : pandas.DataFrame, optional
        Per-image scales, e.g. ``dentalkit.fetch.read_calibration(store)``: returned,
        checked and typed, as the ``calibration`` table (``patient_id``, ``timestamp``,
        ``endpoint``, ``image_url``, ``mm_per_px``, ``calibration_source``); a row whose
        ``mm_per_px`` is not a finite number > 0 is a problem.

    Returns
    -------
    dict of str to pandas.DataFrame
        ``landmarks``, ``teeth``, ``tooth_keypoints``, ``arch_points``, ``findings``,
        ``finding_counts``, ``classifications``, ``tmj``, ``tle`` (or those of
        ``include``), ``calibration`` (when ``calibration`` is given) and ``problems``
        (always present; empty tables have their full schema).
    {notes}
    Examples
    --------
    >>> import pandas as pd
    >>> from dentalkit import convert
    >>> import json
    >>> body = json.dumps({"app": "tle", "estimate_length": 21.5})
    >>> opts = json.dumps({f"p{i:02d}": "1" for i in range(1, 12)})
    >>> responses = pd.DataFrame(
    ...     {
    ...         "endpoint": ["tle"],
    ...         "patient_id": [None],
    ...         "timestamp": [None],
    ...         "body": [body],
    ...         "options": [opts],
    ...     }
    ... )
    >>> out = convert.tables(responses)
    >>> out["tle"]["estimate_length_months"].tolist(), len(out["problems"])
    ([21.5], 0)
    """
    stream = _Stream(
        errors, landmark_map, include, tmj_phrases, "dentalkit.convert.tables", timestamp_format
    )
    out = stream.convert(responses, progress)
    if calibration is not None:
        out["calibration"] = stream.calibration(calibration)
    out["problems"] = stream.finish(stacklevel=3)
    return out


tables.__doc__ = tables.__doc__.replace("{params}", _PARAMS_DOC).replace("{notes}", _NOTES_DOC)


def tables_in_parts(
    parts: Iterable[pd.DataFrame],
    errors: Errors = "raise",
    landmark_map: LandmarkMap = None,
    include: Iterable[str] | None = None,
    tmj_phrases: _tmj.PhrasesArg = None,
    *,
    timestamp_format: str | None = None,
    calibration: pd.DataFrame | None = None,
) -> Iterator[dict[str, pd.DataFrame]]:
    """Convert a responses table that comes in pieces, one piece at a time.

    For a study too large to hold every body at once: each piece (e.g. from
    :func:`dentalkit.fetch.read_responses_in_parts`) is converted and given back before
    the next is read, so memory holds one piece and its tables. The result is
    :func:`tables` of the whole table, cut into pieces: for each piece, one dict of the
    same tables (its rows, in the same order and dtypes); then, last, one dict with
    ``calibration`` (when given) and ``problems`` (every problem; ``row`` numbers count
    the rows of all the pieces before, so they are positions in the whole table, as
    :func:`tables` gives them). A categorical column's categories are those of the
    piece's rows: writing the pieces to one Parquet file
    (:func:`dentalkit.io.write_tables_in_parts`) gives the whole table.
    {params}
    landmark_map, include, tmj_phrases, calibration
        As for :func:`tables`.
    timestamp_format : str, optional
        As for :func:`tables`; default each piece's ``attrs["timestamp_format"]`` (the
        format the fetch recorded), else ISO 8601.

    Yields
    ------
    dict of str to pandas.DataFrame
        The tables of each piece, then ``{"problems": DataFrame}`` (with
        ``"calibration"`` first when ``calibration`` is given).
    {notes}
    Examples
    --------
    >>> import json
    >>> import pandas as pd
    >>> from dentalkit import convert
    >>> def piece(patient):
    ...     body = {"ImageName": "tmj.png", "Results": {"Finding": "No finding."}}
    ...     return pd.DataFrame(
    ...         {
    ...             "endpoint": ["tmj_xsectional"],
    ...             "patient_id": [patient],
    ...             "timestamp": ["2024-03-05"],
    ...             "body": [json.dumps(body)],
    ...         }
    ...     )
    >>> out = list(convert.tables_in_parts([piece("P1"), piece("P2")], include=["tmj"]))
    >>> [list(d) for d in out], [len(d["tmj"]) for d in out[:2]], len(out[2]["problems"])
    ([['tmj'], ['tmj'], ['problems']], [1, 1], 0)
    """
    stream = _Stream(
        errors,
        landmark_map,
        include,
        tmj_phrases,
        "dentalkit.convert.tables_in_parts",
        timestamp_format,
    )
    for part in parts:
        yield stream.convert(part)
    last = {} if calibration is None else {"calibration": stream.calibration(calibration)}
    last["problems"] = stream.finish(stacklevel=3)
    yield last


tables_in_parts.__doc__ = tables_in_parts.__doc__.replace("{params}", _PARTS_DOC).replace(
    "{notes}", _NOTES_DOC
)


class _Stream:
    """The conversion of one responses table, given whole or in consecutive pieces."""

    def __init__(
        self,
        errors: Errors,
        landmark_map: LandmarkMap,
        include: Iterable[str] | str | None,
        tmj_phrases: _tmj.PhrasesArg,
        caller: str,
        timestamp_format: str | None = None,
    ) -> None:
        self.wanted = _wanted(include)
        self.errors = check_errors(errors, caller)
        self.timestamp_format = check_timestamp_format(timestamp_format)
        self.problems = Problems(self.errors)
        self.names = _landmark_names(landmark_map) if "landmarks" in self.wanted else {}
        self.kinds = {TABLE_KINDS[t] for t in self.wanted}
        self.tmj_phrases = tmj_phrases
        self.rows = 0  # rows of the pieces converted so far

    def convert(self, responses: pd.DataFrame, progress: bool = False) -> dict[str, pd.DataFrame]:
        """The tables of one piece (all of :attr:`wanted`, empty ones with their schema)."""
        fmt = self.timestamp_format
        if fmt is None and isinstance(responses, pd.DataFrame):
            fmt = check_timestamp_format(responses.attrs.get("timestamp_format"))
        req = prepare(responses, self.problems, fmt, offset=self.rows)
        self.rows += len(responses)
        with gc_paused():
            built = _convert_kinds(
                req, self.kinds, self.problems, self.names, self.tmj_phrases, progress
            )
        return {t: built[t] for t in self.wanted}

    def calibration(self, calibration: pd.DataFrame) -> pd.DataFrame:
        """The checked ``calibration`` table (its problems join the others)."""
        self.wanted = (*self.wanted, "calibration")
        return _calibration.convert(calibration, self.problems)

    def finish(self, stacklevel: int) -> pd.DataFrame:
        """The problems table of everything converted; the warnings of the run, once
        (``stacklevel`` as for a ``warnings.warn`` made by the caller of the caller)."""
        self.problems.warn(stacklevel=stacklevel + 1)
        found = self.problems.frame(self.wanted)
        if self.errors == "warn" and len(found):
            warnings.warn(
                f"{len(found)} problem(s) while converting "
                f"({int((found['severity'] == 'error').sum())} left out, the rest kept), e.g. "
                f"responses row {found['row'].iloc[0]} (0-based position) at "
                f"{found['path'].iloc[0]}: "
                f"{found['reason'].iloc[0]}. The 'problems' table lists them all",
                DentalkitWarning,
                stacklevel=stacklevel,
            )
        return found


def _wanted(include: Iterable[str] | str | None) -> tuple[str, ...]:
    wanted = tuple(t for t in TABLE_NAMES if t in TABLE_KINDS)
    if include is not None:
        include = [include] if isinstance(include, str) else list(include)
        unknown = sorted(set(include) - set(wanted))
        if unknown:
            raise InputError(f"include: unknown table(s) {unknown}; tables are {', '.join(wanted)}")
        wanted = tuple(t for t in wanted if t in include)
    return wanted


def _convert_kinds(
    req: Requests,
    kinds: set[Kind],
    problems: Problems,
    names: dict[str, dict[str, str]],
    tmj_phrases: _tmj.PhrasesArg = None,
    progress: bool = False,
) -> dict[str, pd.DataFrame]:
    """Build the tables of ``kinds``, one endpoint kind at a time (a bar counts responses)."""
    built: dict[str, pd.DataFrame] = {}
    todo = {kind: req.of_kind(kind) for kind in Kind if kind in kinds}
    counter = bar(sum(len(i) for i in todo.values()), "tables", "response", enabled=progress)
    for kind, idx in todo.items():
        counter.set_postfix_str(kind.value)
        if kind is Kind.LANDMARKS:
            built["landmarks"] = _landmarks.convert(req, idx, problems, names)
        elif kind is Kind.SEGMENTATION:
            built["teeth"] = _teeth.convert(req, idx, problems)
        elif kind is Kind.KEYPOINTS:
            built.update(_keypoints.convert(req, idx, problems))
        elif kind is Kind.FINDINGS:
            built.update(_findings.convert(req, idx, problems))
        elif kind is Kind.CLASSIFIER:
            built["classifications"] = _classifier.convert(req, idx, problems)
        elif kind is Kind.TMJ:
            built["tmj"] = _tmj.convert(req, idx, problems, tmj_phrases)
        elif kind is Kind.TLE:
            built["tle"] = _tle.convert(req, idx, problems)
        counter.update(len(idx))
    counter.close()
    return built


def _landmark_names(landmark_map: LandmarkMap) -> dict[str, dict[str, str]]:
    if landmark_map is None:
        return _default_names()
    if isinstance(landmark_map, Mapping):
        landmark_map = pd.DataFrame(
            {"key": list(landmark_map), "name": list(landmark_map.values())}
        )
    return _names_by_view(load_landmark_map(path=landmark_map))


@lru_cache(maxsize=1)
def _default_names() -> dict[str, dict[str, str]]:
    return _names_by_view(load_landmark_map())


def _names_by_view(table: pd.DataFrame) -> dict[str, dict[str, str]]:
    return {
        view: dict(zip(group["key"], group["name"], strict=True))
        for view, group in table.groupby("view", sort=False)
    }


def _one(
    table: str,
    responses: pd.DataFrame,
    errors: Errors,
    landmark_map: LandmarkMap = None,
    tmj_phrases: _tmj.PhrasesArg = None,
) -> pd.DataFrame:
    stream = _Stream(errors, landmark_map, (table,), tmj_phrases, f"dentalkit.convert.{table}")
    out = stream.convert(responses)
    problems = stream.problems
    problems.warn(stacklevel=4)
    found = problems.frame([table])
    if len(found):
        dropped = int((found["severity"] == "error").sum())
        warnings.warn(
            f"{len(found)} problem(s) while converting {table} ({dropped} dropped, the rest "
            f"kept), e.g. responses row {found['row'].iloc[0]} (0-based position) at "
            f"{found['path'].iloc[0]}: "
            f"{found['reason'].iloc[0]}. dentalkit.convert.tables(...)['problems'] lists them all",
            DentalkitWarning,
            stacklevel=3,
        )
    return out[table]


def landmarks(
    responses: pd.DataFrame, errors: Errors = "raise", landmark_map: LandmarkMap = None
) -> pd.DataFrame:
    """Cephalometric landmarks, long format: one row per landmark.

    Columns: the session key, ``view`` (lateral/frontal), ``landmark`` (``Later_12``),
    ``name`` (anatomical name from the landmark map, null when unmapped), ``x``, ``y``
    (float64, the service's pixel units, image coordinates with y down; the spec shows
    neither unit nor origin).
    {common}
    landmark_map : path, DataFrame or mapping, optional
        Replaces the shipped landmark map (see :func:`tables`).
    """
    return _one("landmarks", responses, errors, landmark_map)


def teeth(responses: pd.DataFrame, errors: Errors = "raise") -> pd.DataFrame:
    """Tooth outlines from the four segmentation endpoints: one row per tooth and source.

    Columns: the session key, ``source``, ``tooth`` (``m1_rgt_up``), ``tooth_type``,
    ``side``, ``arch``, ``fdi`` (ISO 3950: quadrant 1 upper right, 2 upper left, 3 lower
    left, 4 lower right; i1=1 … m3=8), ``missing``, ``geometry`` (shapely Polygon in
    pixel units, None when missing or unusable) and ``repaired``.

    Outlines: a missing tooth (the spec's ``[[0, 0]]``) has geometry None. An invalid
    outline (self-intersection, spike) is given to ``shapely.make_valid``; when the
    result has exactly one polygonal part that polygon is kept and ``repaired`` is True
    (zero-area debris such as a collapsed spike is dropped). An outline that splits
    into several polygons (figure of eight), has no area (collinear points) or has
    fewer than 3 distinct points gets geometry None and a problem row: no single tooth
    area is defensible, and keeping the largest part would silently change it. Unknown
    tooth prefixes are kept with ``tooth_type`` and ``fdi`` null and reported.
    {common}
    """
    return _one("teeth", responses, errors)


def tooth_keypoints(responses: pd.DataFrame, errors: Errors = "raise") -> pd.DataFrame:
    """Occlusogram tooth keypoints: one row per point (``centroid``, ``t01`` …) of a tooth.

    Columns: the session key, ``arch`` (up/lo, from the endpoint), ``tooth``, ``fdi``,
    ``missing``, ``point``, ``x``, ``y`` (pixel units). A missing tooth's centroid is
    kept as sent: filter on ``missing`` before using positions.
    {common}
    """
    return _one("tooth_keypoints", responses, errors)


def arch_points(responses: pd.DataFrame, errors: Errors = "raise") -> pd.DataFrame:
    """Occlusogram catenary points: one row per ``CatenaryPoints`` entry.

    Columns: the session key, ``arch`` (up/lo), ``point`` (``t25``), ``index`` (int16,
    the integer of the key, for ordering along the arch), ``x``, ``y`` (pixel units).
    {common}
    """
    return _one("arch_points", responses, errors)


def findings(responses: pd.DataFrame, errors: Errors = "raise") -> pd.DataFrame:
    """Detections of clinical and panoramic findings: one row per detection box.

    Columns: the session key, ``source`` (clinical/pano), ``class_name``, ``x0``, ``y0``
    (TopLeft) and ``x1``, ``y1`` (BottomRight), pixel units. ``Results`` ``{}`` gives no
    rows (nothing detected), not an error.
    {common}
    """
    return _one("findings", responses, errors)


def finding_counts(responses: pd.DataFrame, errors: Errors = "raise") -> pd.DataFrame:
    """Per-class counts from ``ImageContents`` (clinical findings): one row per class.

    Columns: the session key, ``source``, ``class_name``, ``count`` (int32). Counts are
    cross-checked against the detections; a mismatch is a problem (rows kept).
    Panoramic findings have no ``ImageContents`` and add no rows.
    {common}
    """
    return _one("finding_counts", responses, errors)


def classifications(responses: pd.DataFrame, errors: Errors = "raise") -> pd.DataFrame:
    """Image classifications: one row per classifier response.

    Columns: the session key, ``image_name`` (the stored file name the service
    returns, not the URL), ``category``, ``confidence``.
    {common}
    """
    return _one("classifications", responses, errors)


def tmj(
    responses: pd.DataFrame, errors: Errors = "raise", tmj_phrases: _tmj.PhrasesArg = None
) -> pd.DataFrame:
    """TMJ cross-sectional findings: one row per response.

    Columns: the session key, ``image_name``, ``finding`` (the sentence as sent) and
    ``has_finding`` (nullable boolean: True, False, or missing when the sentence is
    recognised neither as "no finding" nor as a finding; see
    :func:`dentalkit.convert.has_finding` for the rule and ``tmj_phrases`` for
    extending it). Each distinct unrecognised sentence gives one problems row.
    {common}
    tmj_phrases : path or list of paths, optional
        Extra TMJ phrases files (default :data:`dentalkit.settings.tmj_phrases`).
    """
    return _one("tmj", responses, errors, tmj_phrases=tmj_phrases)


def tle(responses: pd.DataFrame, errors: Errors = "raise") -> pd.DataFrame:
    """Treatment-length estimates: one row per /tle response.

    Columns: the session key (patient_id and timestamp may be null), ``p01`` … ``p11``
    (the query parameters as sent, from ``options``), ``app`` and
    ``estimate_length_months`` (the service's ``estimate_length``, months).
    {common}
    """
    return _one("tle", responses, errors)


_ONE_DOC = """
    Returns
    -------
    pandas.DataFrame
        The table, typed as declared in :mod:`dentalkit.convert.schemas`. Problems (in
        either mode) are summarised in one :class:`~dentalkit.errors.DentalkitWarning`;
        :func:`dentalkit.convert.tables` returns them as the ``problems`` table.
"""

for _f in (
    landmarks,
    teeth,
    tooth_keypoints,
    arch_points,
    findings,
    finding_counts,
    classifications,
    tmj,
    tle,
):
    _f.__doc__ = _f.__doc__.replace("{common}", _PARAMS_DOC) + _ONE_DOC + _NOTES_DOC

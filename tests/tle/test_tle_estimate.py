"""estimate() and sensitivity() against the local sandbox through the responses store:
dedup, determinism, the sandbox's documented rule, failure handling. Requests are counted
at the sandbox."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from dentalkit.errors import DentalkitWarning, InputError, ManifestError, ResponseFormatError
from dentalkit.tle import encode, estimate, example_patients, problems, sensitivity

PARAMS = [f"p{i:02d}" for i in range(1, 12)]
BASE = {
    "age_years": 14.0,
    "sex": "female",
    "malocclusion_class": "II/1",
    "crowding": "mild",
    "spacing": "none",
    "overjet_mm": 4.5,
    "overbite_mm": 3.0,
    "crossbite": False,
    "open_bite": False,
    "extraction": False,
    "difficulty_score": 5.0,
}


@pytest.fixture(scope="module")
def sb():
    """This module's own sandbox, so request counts are not shared with other tests."""
    from dentalkit.sandbox import running

    with running() as server:
        yield server


@pytest.fixture
def client(sb, tmp_path):
    """A fetcher into a fresh store (the name is kept: it stands where a client stood)."""
    from dentalkit.fetch.client import Client
    from dentalkit.fetch.cohort import Fetcher

    sb.reset_stats()
    with Client(sb.base_url, api_key=sb.api_key, cache="memory", max_retries=0) as c:
        yield Fetcher(tmp_path / "store", c)


def rule(row: pd.Series) -> float:
    """The sandbox's own answer for the query of one output row (its documented rule)."""
    from dentalkit.sandbox.simulate import estimate_tle

    return estimate_tle({p: row[p] for p in PARAMS})["estimate_length"]


def test_identical_parameter_sets_cost_one_request(sb, client):
    rows = [
        BASE,
        BASE,  # identical
        {**BASE, "age_years": 14.7, "sex": "F"},  # same strings after encoding (14, F)
        {**BASE, "crowding": "severe"},
        {**BASE, "crowding": "severe"},
        {**BASE, "extraction": "yes"},
    ]
    est = estimate(pd.DataFrame(rows), client)
    stats = sb.stats()
    assert stats["by_path"] == {"/tle": 3}
    assert sorted(stats["by_request"].values()) == [1, 1, 1]
    assert est.attrs["requests"] == 3 and est.attrs["sent"] == 3
    assert est["estimate_length_months"].notna().all()
    m = est["estimate_length_months"].to_numpy()
    assert m[0] == m[1] == m[2] and m[3] == m[4]
    # the store answers a second run: nothing is sent, not even a cache lookup
    again = estimate(pd.DataFrame(rows), client)
    assert sb.stats()["total"] == 3
    assert again.attrs["from_store"] == 3 and again.attrs["sent"] == 0
    pd.testing.assert_frame_equal(again, est, check_like=False)
    # and the stored responses alone give the same table, with no fetcher at all
    alone = estimate(pd.DataFrame(rows), client.stored())
    pd.testing.assert_frame_equal(alone, est, check_like=False)


def test_every_row_gets_the_answer_to_its_own_query(sb, client):
    patients = example_patients(40, seed=3)
    est = estimate(patients, client)
    assert est.index.equals(patients.index)
    assert est[list(patients.columns)].equals(patients)  # input columns untouched
    assert est[PARAMS].equals(encode(patients))
    expected = est.apply(rule, axis=1)
    np.testing.assert_array_equal(est["estimate_length_months"].to_numpy(), expected.to_numpy())
    assert est["estimate_length_months"].dtype == "float64"
    assert set(est["app"]) == {"dentalkit-sandbox-tle"}
    assert sb.stats()["total"] == len(est[PARAMS].drop_duplicates())


def test_deterministic_across_clients_without_shared_cache(sb, tmp_path):
    from dentalkit.fetch.client import Client
    from dentalkit.fetch.cohort import Fetcher

    patients = example_patients(15, seed=9)
    runs = []
    for k in range(2):
        with Client(sb.base_url, api_key=sb.api_key, cache="memory") as c:
            fetcher = Fetcher(tmp_path / f"store{k}", c)
            runs.append(estimate(patients, fetcher)["estimate_length_months"])
    pd.testing.assert_series_equal(runs[0], runs[1])


def test_monotone_where_the_sandbox_rule_says_so(client):
    patients = example_patients(4, seed=1)
    patients["age_years"] = np.maximum(patients["age_years"], 18)  # adult: age counts

    def curves(parameter, values):
        c = sensitivity(patients, parameter, values, client)
        per = c.loc[c["curve"] == "patient", "estimate_length_months"].to_numpy()
        assert per.max() < 60  # below the rule's clip at 60 months: increases stay visible
        return per.reshape(len(patients), len(values))  # patient-major, values in order

    for parameter, values in [
        ("crowding", ["none", "mild", "moderate", "severe"]),
        ("spacing", ["none", "mild", "moderate", "severe"]),
        ("extraction", [False, True]),
        ("crossbite", [False, True]),
    ]:
        assert (np.diff(curves(parameter, values), axis=1) > 0).all(), parameter
    for parameter, values in [
        ("difficulty_score", [0.0, 2.5, 5.0, 7.5, 10.0]),
        ("age_years", [18, 25, 35, 50]),
        ("overjet_mm", [3.0, 5.0, 8.0, 12.0]),
    ]:
        assert (np.diff(curves(parameter, values), axis=1) >= 0).all(), parameter
    same = curves("sex", ["female", "male"])  # the rule: sex has no effect
    np.testing.assert_array_equal(same[:, 0], same[:, 1])


def test_invalid_rows_are_not_sent(sb, client):
    rows = pd.DataFrame(
        [BASE, {**BASE, "sex": "x"}, {**BASE, "age_years": None}], index=["a", "b", "c"]
    )
    rows["patient_id"] = ["PA", "PB", "PC"]
    with pytest.raises(ManifestError, match="2 problem"):
        estimate(rows, client, errors="raise")
    assert sb.stats()["total"] == 0
    with pytest.warns(DentalkitWarning, match="2 of 3 patient row"):
        est = estimate(rows, client, errors="warn")
    assert sb.stats()["total"] == 1
    assert est["estimate_length_months"].isna().tolist() == [False, True, True]
    assert est.loc["b", PARAMS].isna().all() and est.loc["a", PARAMS].notna().all()
    found = problems(est)
    assert found["row"].tolist() == [1, 2]  # positions; the caller's labels beside them
    assert found["index_label"].tolist() == ["b", "c"]
    assert found["patient_id"].tolist() == ["PB", "PC"]
    assert set(found["error_type"]) == {"InputError"}
    assert found["status_code"].isna().all() and str(found["status_code"].dtype) == "Int16"

    # Results concatenate (attrs hold plain records, not DataFrames) and copy their records.
    both = pd.concat([est, est.copy()])
    assert len(both) == 6 and len(problems(both)) == 2
    good = estimate(rows.loc[["a"]], client)
    assert problems(good).empty and list(problems(good).columns) == list(found.columns)
    mixed = pd.concat([est, good])  # records differ: pandas drops attrs, and we say so
    with pytest.raises(InputError, match="before concatenating"):
        problems(mixed)


def test_repeated_index_labels_map_back_by_position(client):
    rows = pd.DataFrame(
        [BASE, {**BASE, "crowding": "severe"}, {**BASE, "sex": "?"}], index=[7, 7, 7]
    )
    with pytest.warns(DentalkitWarning):
        est = estimate(rows, client, errors="warn")
    assert est.index.tolist() == [7, 7, 7]
    months = est["estimate_length_months"].to_numpy()
    assert months[1] > months[0] and np.isnan(months[2])
    assert problems(est)["row"].tolist() == [2]
    assert problems(est)["index_label"].tolist() == [7]


def test_failed_calls_are_collected_or_raised(tmp_path):
    from dentalkit.errors import ServerError
    from dentalkit.fetch.client import Client
    from dentalkit.fetch.cohort import Fetcher
    from dentalkit.sandbox import running

    patients = example_patients(4, seed=2)
    with running(faults={"error_rate": 1.0}) as failing:
        c = Client(failing.base_url, api_key=failing.api_key, cache="memory", max_retries=0)
        fetcher = Fetcher(tmp_path / "store", c)
        with pytest.warns(DentalkitWarning, match="4 of 4 patient row"):
            est = estimate(patients, fetcher, errors="warn")
        assert est["estimate_length_months"].isna().all() and est["app"].isna().all()
        found = problems(est)
        assert len(found) == 4
        assert set(found["error_type"]) == {"ServerError"}
        assert set(found["status_code"]) <= {500, 502, 503}
        assert found["patient_id"].tolist() == patients["patient_id"].tolist()
        assert found["value"].str.startswith("p01=").all()
        # the failures are in the store's failures table; a retry sends them again
        assert len(fetcher.last_report.failures) == 4
        with pytest.raises(ServerError):
            estimate(patients, Fetcher(tmp_path / "store", c, retry_failed=True), errors="raise")


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"app": "x"}, "$.estimate_length"),
        ({"app": "x", "estimate_length": "22"}, "$.estimate_length"),
        ({"app": "x", "estimate_length": True}, "$.estimate_length"),
        ({"app": "x", "estimate_length": None}, "$.estimate_length"),
        ({"app": "x", "estimate_length": -1}, "$.estimate_length"),
        ({"app": "x", "estimate_length": float("nan")}, "$.estimate_length"),
        ({"app": 3, "estimate_length": 20}, "$.app"),
        ({"estimate_length": 20}, "$.app"),
        (["not", "an", "object"], "$"),
    ],
)
def test_malformed_bodies_are_format_errors(body, path):
    from dentalkit.tle.estimation import _parse

    with pytest.raises(ResponseFormatError) as info:
        _parse(body)
    assert info.value.path == path
    assert _parse({"app": "x", "estimate_length": 22}) == ("x", 22.0)


def test_sensitivity_table_and_mean_curve(client):
    patients = example_patients(3, seed=4)
    values = [0.0, 5.0, 10.0]
    curve = sensitivity(patients, "p11", values, client)
    assert len(curve) == 3 * 3 + 3
    assert curve["curve"].tolist() == ["patient"] * 9 + ["mean"] * 3
    assert set(curve["parameter"]) == {"p11"} and set(curve["column"]) == {"difficulty_score"}
    per = curve[curve["curve"] == "patient"]
    assert per["patient"].tolist() == np.repeat(patients["patient_id"], 3).tolist()
    assert per["code"].tolist() == ["0.0", "5.0", "10.0"] * 3
    grid = per["estimate_length_months"].to_numpy().reshape(3, 3)
    mean = curve[curve["curve"] == "mean"]
    np.testing.assert_allclose(mean["estimate_length_months"], grid.mean(axis=0))
    assert mean["n_patients"].tolist() == [3, 3, 3]
    assert mean["value"].tolist() == values
    # each point is the sandbox's answer for the patient with only that factor changed
    for (_, patient), row in zip(patients.iterrows(), grid, strict=True):
        for value, months in zip(values, row, strict=True):
            query = encode(pd.DataFrame([{**patient.to_dict(), "difficulty_score": value}]))
            assert months == rule(query.iloc[0])
    # curves of several factors make one table
    crowding = sensitivity(patients, "crowding", ["none", "severe"], client)
    both = pd.concat([curve, crowding], ignore_index=True)
    assert set(both["parameter"]) == {"p11", "p04"} and problems(both).empty


def test_sensitivity_single_patient_and_bad_values(sb, client):
    curve = sensitivity(BASE, "crowding", ["none", "severe"], client)
    assert curve["patient"].tolist()[:2] == ["0", "0"]
    sb.reset_stats()
    with pytest.raises(ManifestError, match="very"):
        sensitivity(BASE, "crowding", ["none", "very"], client)
    assert sb.stats()["total"] == 0
    with pytest.warns(DentalkitWarning, match="2 point"):
        partial = sensitivity(
            pd.DataFrame([BASE, BASE]), "age_years", [14, 99], client, errors="warn"
        )
    mean = partial[partial["curve"] == "mean"]
    assert mean["n_patients"].tolist() == [2, 0]
    # the varied queries are stored under the sensitivity session label, never a visit's
    assert set(client.stored()["timestamp"]) == {"tle-sensitivity"}
    assert np.isnan(mean["estimate_length_months"].iloc[1])
    with pytest.raises(InputError, match="at least one value"):
        sensitivity(BASE, "crowding", [], client)
    with pytest.raises(InputError, match="neither a /tle parameter"):
        sensitivity(BASE, "height", [1], client)
    with pytest.raises(InputError, match="give one patient"):
        sensitivity([BASE], "crowding", ["none"], client)


def test_argument_checks(client):
    from dentalkit.fetch.client import Client

    with pytest.raises(InputError, match="'raise', 'collect', 'warn'"):
        estimate(pd.DataFrame([BASE]), client, errors="skip")
    with pytest.raises(InputError, match="must be a pandas DataFrame"):
        estimate([BASE], client)
    with (
        Client("http://127.0.0.1:9/api/v2", api_key="k", cache="memory") as c,
        pytest.raises(InputError, match="Fetcher"),
    ):
        estimate(pd.DataFrame([BASE]), c)
    with pytest.raises(InputError, match="missing"):
        estimate(pd.DataFrame([BASE]), pd.DataFrame({"endpoint": ["tle"]}))


def test_empty_and_all_invalid_tables_send_nothing(sb, client):
    empty = pd.DataFrame(columns=list(BASE))
    out = estimate(empty, client)
    assert len(out) == 0 and "estimate_length_months" in out.columns
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DentalkitWarning)
        out = estimate(pd.DataFrame([{**BASE, "sex": "?"}]), client, errors="warn")
    assert out["estimate_length_months"].isna().all()
    assert sb.stats()["total"] == 0


def test_a_cohort_manifest_store_answers_estimate(sb, client, tmp_path):
    # /tle rows fetched with the image endpoints (as the demo does) answer estimate():
    # the same store, the same request keys, nothing sent again.
    import orjson

    from dentalkit.fetch.cohort import Fetcher, fetch_cohort

    patients = example_patients(6, seed=5)
    manifest = patients[["patient_id"]].assign(timestamp="2024-03-05", endpoint="tle")
    manifest = manifest.join(encode(patients))
    report = fetch_cohort(manifest, out=tmp_path / "s", client=client.client, progress=False)
    assert report.failed == 0 and len(report.problems) == 0
    stored = report.responses().set_index("patient_id")["body"].map(orjson.loads)
    sb.reset_stats()
    est = estimate(patients, Fetcher(tmp_path / "s", client.client)).set_index("patient_id")
    assert sb.stats()["total"] == 0 and est.attrs["from_store"] == est.attrs["requests"]
    for pid, body in stored.items():
        assert body["estimate_length"] == est.loc[pid, "estimate_length_months"]


@pytest.mark.parametrize("package", ["tle", "ceph", "arch", "teeth", "findings", "stats"])
def test_analysis_modules_never_import_the_client(package):
    # `import dentalkit` loads the fetch layer for its public names, so the check reads
    # the analysis modules' own import statements (also those inside functions).
    import ast
    from pathlib import Path

    import dentalkit

    forbidden = {
        "dentalkit.fetch.client",
        "dentalkit.fetch._http",
        "dentalkit.fetch.cohort",
        "requests",
    }
    folder = Path(dentalkit.__file__).parent / package
    found = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            found += [f"{path.name}: {n}" for n in names if n in forbidden]
    assert found == []


def test_missing_answers_in_a_plain_responses_table_are_problems(client):
    patients = example_patients(3, seed=8)
    est = estimate(patients.iloc[:2], client)
    with pytest.warns(DentalkitWarning, match="1 of 3 patient row"):
        partial = estimate(patients, client.stored(), errors="warn")
    assert partial["estimate_length_months"].isna().tolist() == [False, False, True]
    found = problems(partial)
    assert "no stored answer" in found["reason"].iloc[0] and "Fetcher" in found["reason"].iloc[0]
    assert (
        partial["estimate_length_months"].iloc[:2].tolist()
        == est["estimate_length_months"].tolist()
    )
    with pytest.raises(
        InputError, match=r"patient '[^']+', row 2 \(0-based position\): no stored answer"
    ) as info:
        estimate(patients, client.stored())  # "raise" is the default
    assert "pass a fetcher" in str(info.value) and "errors='collect'" in str(info.value)
    assert info.value.problems["row"].tolist() == [2]

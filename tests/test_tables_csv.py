"""The per-query CSV of every variant and combined_dataframe: the Results' numbers, exactly."""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
import pytest
from conftest import REPO, results_from_columns

from rag_eval._data.config.schema import load_config
from rag_eval._report.tables_csv import per_query_csv
from rag_eval._run.execute import execute
from rag_eval._scoring.results import Results, combined_dataframe

NAN = float("nan")


def results(values: dict[str, list[float]], qids: tuple[str, ...]) -> Results:
    return results_from_columns(values, qids)


# Awkward ids (a comma, a quote, "NA"), a value left out (NaN), and a metric only one variant has.
HAND = {
    "bm25": results({"ndcg@10": [0.1, 1 / 3, NAN], "mrr": [1.0, 0.5, 0.0]}, ("q,1", 'q"2', "NA")),
    "dense": results({"ndcg@10": [2 / 3, 0.0, 0.7]}, ("q,1", 'q"2', "NA")),
}


def read_back(text: str, metrics: list[str]) -> pd.DataFrame:
    """The CSV as pandas reads it: ids as text ("NA" stays "NA"), empty metric cells NaN.

    Floats are exact with pandas 3's default parser (pandas 2 needs float_precision="round_trip").
    """
    return pd.read_csv(
        io.StringIO(text), dtype={"variant": str, "qid": str}, keep_default_na=False,
        na_values={m: [""] for m in metrics},
    )


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def test_csv_text_by_hand():
    assert per_query_csv(HAND).split("\n") == [
        "variant,qid,ndcg@10,mrr",
        'bm25,"q,1",0.1,1.0',
        'bm25,"q""2",0.3333333333333333,0.5',
        "bm25,NA,,0.0",
        'dense,"q,1",0.6666666666666666,',
        'dense,"q""2",0.0,',
        "dense,NA,0.7,",
        "",
    ]


def test_csv_reads_back_exactly_with_pandas():
    frame = read_back(per_query_csv(HAND), ["ndcg@10", "mrr"])
    assert list(frame.columns) == ["variant", "qid", "ndcg@10", "mrr"]
    assert frame["qid"].tolist() == ["q,1", 'q"2', "NA"] * 2
    for label, result in HAND.items():
        rows = frame[frame["variant"] == label]
        for name in ("ndcg@10", "mrr"):
            expected = result.values[name].tolist() if name in result.values else [NAN] * 3
            assert all(same(a, b) for a, b in zip(rows[name].tolist(), expected)), (label, name)


@pytest.fixture(scope="module")
def ocean_run():
    return execute(load_config(REPO / "configs" / "ocean_facts.yaml"), progress=False)


def test_csv_of_a_run_holds_every_value_of_every_variant(ocean_run):
    metrics = ocean_run.outcomes[0].results.metric_names
    frame = read_back(per_query_csv(ocean_run), metrics)
    assert list(frame.columns) == ["variant", "qid", *metrics]
    assert len(frame) == sum(len(o.results.query_ids) for o in ocean_run.outcomes)
    for outcome in ocean_run.outcomes:
        rows = frame[frame["variant"] == outcome.label]
        assert tuple(rows["qid"]) == outcome.results.query_ids
        for name in metrics:
            column = rows[name].to_numpy()
            assert np.array_equal(column, outcome.results.values[name], equal_nan=True), (outcome.label, name)


def test_combined_dataframe_shape_columns_and_values():
    frame = combined_dataframe(HAND)
    assert list(frame.columns) == ["variant", "qid", "ndcg@10", "mrr"]
    assert frame.shape == (6, 4)
    assert frame["variant"].tolist() == ["bm25"] * 3 + ["dense"] * 3
    assert frame["ndcg@10"].tolist()[:2] == [0.1, 1 / 3] and math.isnan(frame["ndcg@10"].iloc[2])
    assert frame["ndcg@10"].tolist()[3:] == [2 / 3, 0.0, 0.7]
    assert frame["mrr"].tolist()[:3] == [1.0, 0.5, 0.0] and frame["mrr"].iloc[3:].isna().all()
    assert frame["mrr"].dtype == np.float64


def test_combined_dataframe_agrees_with_each_to_dataframe(ocean_run):
    by_label = {o.label: o.results for o in ocean_run.outcomes}
    frame = combined_dataframe(by_label)
    for label, result in by_label.items():
        own = result.to_dataframe().reset_index()
        part = frame[frame["variant"] == label].drop(columns="variant").reset_index(drop=True)
        pd.testing.assert_frame_equal(part, own, check_exact=True)


def test_combined_dataframe_of_nothing_is_empty():
    frame = combined_dataframe({})
    assert list(frame.columns) == ["variant", "qid"] and len(frame) == 0

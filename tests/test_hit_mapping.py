"""The hit mapping of external retrievers: every way, every problem, each count derived by hand."""

from __future__ import annotations

import pytest

from rag_eval._core.errors import RetrieverError
from rag_eval._retrievers.external.hits import Hit
from rag_eval._retrievers.external.mapping import HitMapper, MapSpec, read_id_map

DOCS = {
    "d1": {"text": "The sea is salty. Whales sing."},
    "d 2": {"text": "Coral reefs bleach when water warms. Whales sing."},
}
SPANS = MapSpec(doc_id="doc", start="s", end="e")


def test_spans_map_to_chunk_ids_and_a_whole_document_to_its_own_id():
    mapper = HitMapper(SPANS, DOCS, adapter="t")
    hits = [
        Hit("a", 0.9, "The sea is salty.", {"doc": "d1", "s": 0, "e": 17}),
        Hit("b", 0.8, None, {"doc": "d 2", "s": 0, "e": 49}),  # the whole document (49 characters)
        Hit("c", 0.7, None, {"doc": "d1", "s": "18", "e": 30.0}),  # offsets as a string and a float
    ]
    assert len(DOCS["d 2"]["text"]) == 49
    assert mapper.rank("q", hits) == {"d1#0-17": 0.9, "d 2": 0.8, "d1#18-30": 0.7}
    info = mapper.describe()
    assert (info["hits"], info["mapped"], info["unmapped"], info["by_way"]) == (3, 3, 0, {"spans": 3})


def test_a_stale_hit_is_relocated_when_its_text_occurs_once_and_counted_stale_when_it_is_gone():
    mapper = HitMapper(SPANS, DOCS, adapter="t")
    hits = [
        Hit("moved", 1.0, "Coral reefs bleach", {"doc": "d 2", "s": 5, "e": 23}),  # now at 0
        Hit("gone", 0.5, "Kelp forests", {"doc": "d1", "s": 0, "e": 12}),
        Hit("twice", 0.4, "Whales sing.", {"doc": "d1", "s": 0, "e": 12}),  # occurs once in d1 (at 18)
    ]
    assert mapper.rank("q", hits) == {"d 2#0-18": 1.0, "d1#18-30": 0.4}
    info = mapper.describe()
    assert (info["relocated"], info["stale"], info["unmapped"]) == (2, 1, 1)
    assert info["unmapped_by_query"] == {"q": 1}
    assert info["examples"]["stale"][0]["hit"] == "gone"


def test_absent_fields_unknown_documents_and_bad_offsets_are_unmapped_with_their_reason():
    mapper = HitMapper(SPANS, DOCS, adapter="t")
    hits = [
        Hit("x", 1.0, None, {"doc": "d1"}),
        Hit("y", 0.9, None, {"doc": "d9", "s": 0, "e": 3}),
        Hit("z", 0.8, None, {"doc": "d1", "s": 5, "e": 500}),
        Hit("w", 0.7, None, {"doc": "d1", "s": True, "e": 3}),
    ]
    assert mapper.rank("q", hits) == {}
    reasons = [row["why"] for row in mapper.describe()["examples"]["unmapped"]]
    assert reasons == [
        "metadata has no 's', 'e'",
        "document 'd9' is not in the dataset",
        "span [5, 500) is outside document 'd1' of 30 characters",
        "offsets True, 3 are not integers",
    ]
    with pytest.raises(RetrieverError, match="none of the 4 hits maps"):
        mapper.check_mapped()


def test_ways_are_tried_in_order_and_the_first_that_maps_wins(tmp_path):
    id_map = tmp_path / "ids.tsv"
    id_map.write_text("\ufeffext-1\td1#4-7\n\next-2\td 2\n", encoding="utf-8")
    spec = MapSpec(passage_id="pid", text=True)
    mapper = HitMapper(spec, DOCS, read_id_map(id_map), adapter="t")
    hits = [
        Hit("ext-2", 0.9, None, {"pid": "d1"}),  # passage_id first
        Hit("ext-1", 0.8, None, {}),  # then the id map
        Hit(None, 0.7, "reefs bleach", {}),  # then the text, inside d 2 at 6
        Hit(None, 0.6, "The sea is salty. Whales sing.", {}),  # equal to d1: a duplicate of the first hit
    ]
    assert mapper.rank("q", hits) == {"d1": 0.9, "d1#4-7": 0.8, "d 2#6-18": 0.7}
    info = mapper.describe()
    assert info["by_way"] == {"passage_id": 1, "id_map": 1, "text": 2}
    assert info["duplicates"] == 1


def test_a_text_in_two_documents_maps_to_the_first_and_counts_as_ambiguous():
    mapper = HitMapper(MapSpec(text=True), DOCS, adapter="t")
    assert mapper.rank("q", [Hit(None, 1.0, "Whales sing.")]) == {"d 2#37-49": 1.0}
    assert mapper.describe()["ambiguous_text"] == 1


def test_hits_without_scores_keep_their_rank_order():
    mapper = HitMapper(MapSpec(passage_id="@id"), {"a": {"text": ""}, "b": {"text": ""}, "c": {"text": ""}}, adapter="t")
    ranking = mapper.rank("q", [Hit("c", None), Hit("a", None), Hit("b", None)])
    assert sorted(ranking, key=ranking.__getitem__, reverse=True) == ["c", "a", "b"]
    assert mapper.describe()["scoreless_hits"] == 3


def test_a_mapping_must_name_a_way_and_a_span_all_three_fields():
    with pytest.raises(RetrieverError, match="map names no way"):
        HitMapper(MapSpec(), DOCS, adapter="t")
    with pytest.raises(ValueError, match="add start and end"):
        MapSpec(doc_id="doc")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("a b\n", "line 1: 'a b' is not 'external id<TAB>passage id'"),
        ("a\tx\na\ty\n", "line 2: external id 'a' is mapped twice"),
        ("\n\n", "holds no mapping"),
    ],
)
def test_a_bad_id_map_names_its_file_and_line(tmp_path, content, message):
    path = tmp_path / "map.tsv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(RetrieverError, match=message):
        read_id_map(path)

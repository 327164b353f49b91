"""Check a pool's Argilla records (`rag-eval pool --argilla FILE`) with the Argilla 2.x SDK's own ingestion.

Not part of the test suite: the Argilla SDK is not a dependency, and an Argilla server cannot run here
(it needs Elasticsearch). In a separate virtual environment:

    python3 -m venv /tmp/argenv && /tmp/argenv/bin/pip install argilla requests
    ARGILLA_API_URL=http://127.0.0.1:9 ARGILLA_API_KEY=offline /tmp/argenv/bin/python scripts/check_argilla.py \\
        pool.argilla.jsonl HIGHEST_GRADE

It builds the dataset settings docs/judging.md gives (two text fields, a rating question 0..HIGHEST_GRADE,
the metadata properties), then passes every record, as a dict, through the SDK's ingestion, the code
``dataset.records.log`` runs before it sends anything: each dict is mapped to a record and validated into
the API's model. The SDK's login check is skipped (nothing else is); no request is sent. Exits 0 when every
record maps with its id, fields and metadata as written.
"""

import json
import sys
import warnings

warnings.simplefilter("ignore")
import argilla as rg  # noqa: E402
from argilla._api import _client  # noqa: E402

_client.APIClient._validate_connection = lambda self: None  # no server: skip the login check, nothing else


def main(path: str, highest: int) -> int:
    settings = rg.Settings(
        fields=[rg.TextField(name="query"), rg.TextField(name="text")],
        questions=[rg.RatingQuestion(name="grade", values=list(range(highest + 1)))],
        metadata=[
            rg.TermsMetadataProperty(name="query_id"), rg.TermsMetadataProperty(name="doc"),
            rg.IntegerMetadataProperty(name="start"), rg.IntegerMetadataProperty(name="end"),
            rg.IntegerMetadataProperty(name="priority"),
        ],
    )
    dataset = rg.Dataset(name="pool", settings=settings)
    with open(path, encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines]
    models = dataset.records._ingest_records(records)  # what records.log(records) does before sending
    problems = []
    for record, model in zip(records, models):
        metadata = {item.name: item.value for item in model.metadata or []}
        wanted = {key: record[key] for key in ("query_id", "doc", "start", "end", "priority") if key in record}
        if model.external_id != record["id"] or model.fields != {"query": record["query"], "text": record["text"]}:
            problems.append(f"record {record['id']}: id or fields changed")
        if metadata != wanted:
            problems.append(f"record {record['id']}: metadata {metadata} != {wanted}")
    print(f"argilla {rg.__version__}: {len(models)} of {len(records)} records mapped and validated; "
          f"{len(records) - len(problems)} with id, fields and metadata as written")
    for problem in problems:
        print(f"problem: {problem}", file=sys.stderr)
    return 0 if len(models) == len(records) and not problems else 1


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: check_argilla.py POOL.argilla.jsonl HIGHEST_GRADE")
    sys.exit(main(sys.argv[1], int(sys.argv[2])))

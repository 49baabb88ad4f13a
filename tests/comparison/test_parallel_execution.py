"""`embtie compare --jobs N`: runs trained in worker processes give exactly the results of one-at-a-time."""

from __future__ import annotations

import csv
import math

from embtie import cli, comparison
from tiny_runs import TINY_GPT_BODY

OVER = [*TINY_GPT_BODY, "train.max_steps=4", "train.eval_every=2", "train.eval_batches=2", "train.warmup_steps=0"]


def _rows(out):
    return {(r["strategy"], r["seed"]): r for r in csv.DictReader((out / "results.csv").read_text().splitlines())}


def test_parallel_runs_match_sequential_ones(tmp_path, capsys):
    base = ["compare", "ptb-gpt-tiny", "--strategies", "tied,l2norm", "--seeds", "1", "--no-progress"]
    assert cli.main([*base, "--out", str(tmp_path / "seq"), *OVER]) == 0
    assert cli.main([*base, "--jobs", "2", "--out", str(tmp_path / "par"), *OVER]) == 0
    seq, par = _rows(tmp_path / "seq"), _rows(tmp_path / "par")
    assert seq.keys() == par.keys() == {("tied", "0"), ("l2norm", "0")}
    for k in seq:
        for field in ("valid_ppl", "step0_loss", "params_learned", "rho_output_norm_freq"):
            a, b = float(par[k][field]), float(seq[k][field])
            assert a == b or (math.isnan(a) and math.isnan(b)), (k, field, a, b)


def test_bad_jobs_is_one_line(capsys):
    assert cli.main(["compare", "ptb-gpt-tiny", "--jobs", "0", "--out", "/tmp/embtie-never-written"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["embtie: error: --jobs 0 must be >= 1"] or (len(err) == 1 and "--jobs 0 must be >= 1" in err[0])


def test_labelled_variants_parse_and_refuse_bad_entries():
    from embtie import comparison
    from embtie.errors import ConfigError

    assert comparison.parse_strategy("tied") == ("tied", "tied", {})
    assert comparison.parse_strategy("ad-l2=adaptive:within=l2norm:cutoffs=[20,50]") == (
        "ad-l2",
        "adaptive",
        {"within": "l2norm", "cutoffs": [20, 50]},
    )
    for bad, words in (("adaptive:within=l2norm", "give a label"), ("a b=tied", "bad strategy label"),
                       ("x=tied:scale", "not key=value")):  # fmt: skip
        try:
            comparison.parse_strategy(bad)
        except ConfigError as e:
            assert words in str(e)
        else:
            raise AssertionError(bad)


def test_a_labelled_variant_runs_with_its_options(tmp_path):
    argv = ["compare", "ptb-gpt-tiny", "--strategies", "tied,scaled=tied:logit_scale=0.5", "--seeds", "1",
            "--no-progress", "--out", str(tmp_path / "v"), *OVER]  # fmt: skip
    assert cli.main(argv) == 0
    import yaml

    cfg = yaml.safe_load((tmp_path / "v" / "runs" / "scaled" / "seed0" / "config.yaml").read_text())
    assert cfg["sharing"] == {"name": "tied", "options": {"logit_scale": 0.5}}
    rows = _rows(tmp_path / "v")
    assert (
        set(rows) == {("tied", "0"), ("scaled", "0")}
        and rows[("scaled", "0")]["valid_ppl"] != rows[("tied", "0")]["valid_ppl"]
    )
    assert "--strategies tied,scaled=tied:logit_scale=0.5 --seeds 1" in (tmp_path / "v" / "report.md").read_text()
    opts = {"within": "l2norm", "cutoffs": [2, 5]}
    spec = comparison.CompareSpec(strategies=["tied", "ad"], variants={"ad": ("adaptive", opts)})
    assert "--strategies tied,ad=adaptive:within=l2norm:cutoffs=[2,5] --seeds" in spec.command()
    listed = comparison.split_strategies("tied,ad=adaptive:within=l2norm:cutoffs=[2,5]")
    assert [comparison.parse_strategy(x) for x in listed] == [("tied", "tied", {}), ("ad", "adaptive", opts)]

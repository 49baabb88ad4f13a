"""Saved reports redrawn under the four verdicts (embtie.reporting.saved_verdicts): the verdicts are
recomputed from the per-seed values of the folder's results file, the old three-valued reading and its
Welch test leave the page, the rest of the page stays, and every redrawn folder under results/ is what the
redraw gives today (so its verdicts are the ones its results file implies)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from embtie.comparison.verdicts import all_verdicts
from embtie.reporting.saved_verdicts import read_rows, redraw_markdown, saved_comparison

ROOT = Path(__file__).resolve().parents[2]
REDRAWN = [
    "press-wolf", "su-convergence", "shalev-captioning/show-tell", "shalev-captioning/show-attend-tell",
    "wikitext2-adaptive", "liu-multi30k/transformer", "liu-multi30k/dynamicconv", "shalev-multi30k/de-en",
    "shalev-multi30k/en-de", "multi30k-h100", "default-job/seeds0-4", "default-job/seeds5-9",
    "default-job/scheme1-seeds0-9", "default-job/paired-seeds0-4", "default-job/paired-seeds0-9",
]  # fmt: skip

TIED = [100.0, 102.0, 98.0]
OLD = """# embtie comparison: ptb-lstm-small

## Summary

Budget: every run trained 300 optimizer steps; 3 seed(s) per strategy.

Baseline `tied`: perplexity 100.0 (mean over seeds).

`noisy`: +1.0 perplexity; not a demonstrated difference (the seed test gives p = 0.50, bootstrap p = 0.00).

In short: nothing beat tied; worse: untied; within noise: noisy.

Strategies: tied, untied, noisy; seeds: 3.

Config overrides on top of the preset, for every run: none.

## Validation perplexity and significance against tied

{caption}

| strategy | valid ppl: mean ± std [95% CI] | Δ ppl vs tied [95% CI] | p: bootstrap / seeds | verdict | best valid ppl |
|---|---|---|---|---|---|
| tied | 100.0 | baseline | - | - | 100.0 |
| untied | 120.0 | +20.0 [+19, +21] | 0.001 / 0.001 | worse | 120.0 |
| noisy | 101.0 | +1.0 [+0.5, +1.5] | 0.001 / 0.500 | within noise | 101.0 |

![A figure that was not kept.](gone.png)

*A figure that was not kept.* Regenerate: `embtie compare ...`

## Throughput

Kept as it was.
""".format(
    caption="*Mean over seeds. p (seeds): Welch's t-test over the per-seed values, the noise of training. The verdict "
    "is 'better' or 'worse' only when both are below 0.05 (the seed test where there are >= 2 seeds), else "
    "'within noise'.*"
)


def _folder(tmp_path: Path) -> Path:
    values = {"tied": TIED, "untied": [t * 1.2 + e for t, e in zip(TIED, (0.1, -0.2, 0.1))],
              "noisy": [t * (1 + e) for t, e in zip(TIED, (0.04, -0.03, 0.02))]}  # fmt: skip
    rows = [{"strategy": n, "seed": s, "valid_ppl": v, "best_valid_ppl": v, "valid_loss": None, "step0_loss": None,
             "su_predicted": 0.0, "ln_v": 0.0, "params_learned": None, "params_fixed": None, "tokens_per_s": None,
             "steps": 300, "rho_output_norm_freq": None, "rho_input_norm_freq": None, "input_rows_per_batch": 0.0,
             "output_rows_per_batch": 1.0, "run_dir": ""}
            for n, vals in values.items() for s, v in enumerate(vals)]  # fmt: skip
    saved = {"preset": "ptb-lstm-small", "strategies": list(values), "seeds": 3, "baseline": "tied", "rows": rows}
    (tmp_path / "results.json").write_text(json.dumps(saved), encoding="utf-8")
    (tmp_path / "report.md").write_text(OLD, encoding="utf-8")
    return tmp_path


def test_redraw_recomputes_the_verdicts_and_keeps_the_rest(tmp_path):
    folder = _folder(tmp_path)
    comparison = saved_comparison(folder)
    new = redraw_markdown(OLD, comparison, folder)
    assert "within noise" not in new and "Welch" not in new and "nothing beat tied" not in new
    assert "Budget: every run trained 300 optimizer steps; 3 seed(s) per strategy." in new
    assert "Made on: not recorded" in new and "## Verdicts: paired seeds and margins of equivalence" in new
    assert new.index("## Verdicts") < new.index("Strategies: tied, untied, noisy") < new.index("## Validation")
    assert "gone.png" not in new and "## Throughput\n\nKept as it was." in new
    rows, _ = read_rows(folder)
    want = all_verdicts(rows, "tied")["valid_ppl"]
    untied, noisy = want.decision("untied"), want.decision("noisy")
    assert untied is not None and noisy is not None
    assert untied.verdict == "worse" and noisy.verdict == "undecided"
    table = {line.split(" | ")[0].strip("| "): line.split(" | ") for line in new.splitlines() if line.startswith("| ")}
    assert table["untied"][4] == "worse" and table["noisy"][4] == "undecided"
    assert table["noisy"][3] == f"0.001 / {noisy.p_difference_holm:.3f}"
    assert "p: bootstrap / paired seeds" in new
    assert redraw_markdown(new, comparison, folder) == new  # a redrawn page redraws to itself


def test_one_seed_is_undecided_with_its_seed_count(tmp_path):
    folder = _folder(tmp_path)
    saved = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    saved["rows"] = [r for r in saved["rows"] if r["seed"] == 0]
    (folder / "results.json").write_text(json.dumps(saved), encoding="utf-8")
    new = redraw_markdown(OLD, saved_comparison(folder), folder)
    assert "| noisy | 101.0 | +1.0 [+0.5, +1.5] | 0.001 / - | undecided, 1 paired seed | 101.0 |" in new
    assert "every one is undecided, 1 paired seed" in new


@pytest.mark.parametrize("name", REDRAWN)
def test_results_folders_carry_the_verdicts_their_results_files_give(name):
    folder = ROOT / "results" / name
    text = (folder / "report.md").read_text(encoding="utf-8")
    assert "within noise" not in text and "Welch" not in text
    assert "within noise" not in (folder / "report.html").read_text(encoding="utf-8")
    assert redraw_markdown(text, saved_comparison(folder), folder) == text


def test_no_report_under_results_reads_within_noise():
    pages = [*ROOT.glob("results/**/report.md"), *ROOT.glob("results/**/report.html")]
    assert len(pages) >= 2 * len(REDRAWN)
    assert [p for p in pages if "within noise" in p.read_text(encoding="utf-8")] == []

"""The confirmations on fresh seeds under results/ (issue 50, item 5): each folder's confirmation.md is
exactly what ``embtie confirm ORIGINAL FRESH --report-only`` prints from the runs committed beside it, and
every row of its table, and every machine line, is quoted in the folder's README.md as written."""

from __future__ import annotations

from pathlib import Path

import pytest

from embtie.comparison.confirmation_report import confirmation_report

ROOT = Path(__file__).resolve().parents[2]
# (confirmation file, original folder, fresh folders), all under results/
CONFIRMATIONS = [
    ("modded-untie-confirmation/confirmation.md", "modded-nanogpt-head/untie-vs-tied",
     ["modded-untie-confirmation/fresh"]),
    ("su-ordering-confirmation/confirmation.md", "su-ordering", ["su-ordering-confirmation/fresh"]),
    ("su-ordering-confirmation/confirmation-zen4.md", "su-ordering", ["su-ordering-confirmation/zen4"]),
    ("quantization-confirmation/confirmation.md", "quantization/int8", ["quantization-confirmation/int8"]),
    ("ladder-matched-m-confirmation/confirmation.md", "ladder-matched-m", ["ladder-matched-m-confirmation/fresh"]),
]  # fmt: skip


@pytest.mark.parametrize(("file", "original", "fresh"), CONFIRMATIONS, ids=[c[0] for c in CONFIRMATIONS])
def test_the_confirmation_table_is_redrawn_from_the_runs_and_quoted(file, original, fresh, monkeypatch):
    monkeypatch.chdir(ROOT)
    name = file.split("/")[0]
    saved = (ROOT / "results" / file).read_text(encoding="utf-8")
    drawn = confirmation_report(Path("results", original), [Path("results", f) for f in fresh])
    assert drawn == saved
    readme = (ROOT / "results" / name / "README.md").read_text(encoding="utf-8")
    quoted = [line for line in saved.splitlines() if line.startswith("| ") and not line.startswith("| strategy")]
    quoted += [line for line in saved.splitlines() if line.startswith("results/")]
    assert quoted and all(line in readme for line in quoted)


def _said(d: dict) -> str:
    return f"{d['verdict']}, {d['mean']:+.2f}% [{d['ci'][0]:+.2f}, {d['ci'][1]:+.2f}] ({100 * d['ci_confidence']:.4g}%)"


def test_the_modded_untie_figures_are_the_runs():
    import json

    folder = ROOT / "results" / "modded-untie-confirmation"
    readme = (folder / "README.md").read_text(encoding="utf-8").replace("−", "-")
    saved = json.loads((folder / "fresh" / "results.json").read_text(encoding="utf-8"))
    verdicts = saved["verdicts"]["valid_ppl"]
    assert f"its report prints untied {_said(verdicts['decisions']['untied'])}" in readme
    pair = verdicts["choice"]["pairs"]["tie-untie vs untied"]
    assert f"gives tie-untie vs untied {_said(pair)} of untied's perplexity, {pair['n']} pairs" in readme
    design = json.loads((folder / "fresh" / "design.json").read_text(encoding="utf-8"))
    assert f"(design {design['hash']})" in readme and design["runs_before"] == 0
    runs = [json.loads(p.read_text()) for p in sorted((folder / "fresh" / "runs").glob("*/seed*/summary.json"))]
    assert {json.dumps(r["numerics"], sort_keys=True) for r in runs} == {json.dumps(
        {"cpu": "Intel(R) Xeon(R) Processor", "cpu_capability": "AVX512", "kernel_env": {}, "threads": 1,
         "torch": "2.13.0+cpu"}, sort_keys=True)}  # fmt: skip
    seconds = [r["elapsed_s"] for r in runs]
    assert f"{len(runs)} runs, {sum(seconds):,.0f} s of" in readme
    assert f"({min(seconds):.0f}–{max(seconds):.0f} s a run" in readme
    assert f"{sum(seconds) / 3600:.2f}\ncore-hours" in readme or f"{sum(seconds) / 3600:.2f} core-hours" in readme


def _runs(folder: Path) -> list[dict]:
    import json

    return [json.loads(p.read_text()) for p in sorted(folder.glob("runs/*/seed*/summary.json"))]


ZEN4 = {"cpu": "AMD EPYC", "cpu_capability": "AVX512", "kernel_env": {}, "threads": 1, "torch": "2.13.0+cpu"}


def _said_pct(d: dict) -> str:
    return f"{d['mean']:.2f}% [{d['ci'][0]:.2f}, {d['ci'][1]:.2f}] ({100 * d['ci_confidence']:.4g}%)"


def _cost_quoted(readme: str, runs: list[dict]) -> None:
    seconds = [r["elapsed_s"] for r in runs]
    flat = " ".join(readme.split())
    assert f"{len(runs)} runs, {sum(seconds):,.0f} s of" in flat
    assert f"({min(seconds):.0f}–{max(seconds):.0f} s a run" in flat
    assert f"{sum(seconds) / 3600:.2f} core-hours" in flat


def test_the_quantization_confirmation_figures_are_the_runs():
    import json

    folder = ROOT / "results" / "quantization-confirmation"
    readme = (folder / "README.md").read_text(encoding="utf-8").replace("−", "-")
    design = json.loads((folder / "int8" / "design.json").read_text(encoding="utf-8"))
    flat = " ".join(readme.split())
    assert f"(design {design['hash']})" in flat and f"at {design['fixed_at'][:19]} UTC" in flat
    assert design["runs_before"] == 0
    runs = _runs(folder / "int8")
    assert len(runs) == 15 and all(r["numerics"] == ZEN4 for r in runs)
    _cost_quoted(readme, runs)
    for name in ("int8", "int4"):
        saved = json.loads((folder / name / "results.json").read_text(encoding="utf-8"))["verdicts"]
        primary = saved[f"valid_ppl_{name}"]
        assert primary["role"] == "primary"
        untied, l2norm = primary["decisions"]["untied"], primary["decisions"]["l2norm"]
        assert untied["verdict"] == "better" and _said_pct(untied) in flat
        assert l2norm["verdict"] == "undecided" and f"{l2norm['mean']:.2f}%" in flat


def test_the_su_ordering_second_attempt_figures_are_the_runs():
    import json

    folder = ROOT / "results" / "su-ordering-confirmation"
    flat = " ".join((folder / "README.md").read_text(encoding="utf-8").split())
    design = json.loads((folder / "zen4" / "design.json").read_text(encoding="utf-8"))
    assert f"(design {design['hash']})" in flat and f"at {design['fixed_at'][:19]} UTC" in flat
    assert design["runs_before"] == 0 and design["design"]["first_seed"] == 3100
    runs = _runs(folder / "zen4")
    assert len(runs) == 25 and all(r["numerics"] == ZEN4 for r in runs)
    assert f"before the first of its {len(runs)} runs" in flat
    _cost_quoted((folder / "README.md").read_text(encoding="utf-8"), runs)


def _pct(x: float) -> str:
    return f"{x:+.2f}".replace("-", "−")


def test_the_su_alike_figures_are_the_runs():
    """results/su-alike: the design, machine and cost, and each pair's row of the README table, from the
    runs and the results.json the comparison wrote; the claims table quotes the decided pair."""
    import json

    folder = ROOT / "results" / "su-alike"
    text = (folder / "README.md").read_text(encoding="utf-8")
    flat = " ".join(text.split())
    design = json.loads((folder / "design.json").read_text(encoding="utf-8"))
    assert f"design {design['hash']} fixed at {design['fixed_at'][:19]} UTC" in flat and design["runs_before"] == 0
    assert design["design"]["first_seed"] == 3200 and design["design"]["baseline"] == "tied-shuffle"
    runs = _runs(folder)
    assert len(runs) == 15 and all(r["numerics"] == ZEN4 for r in runs)
    assert f"before the first of its {len(runs)} runs" in flat
    _cost_quoted(text, runs)
    pairs = json.loads((folder / "results.json").read_text(encoding="utf-8"))["verdicts"]["valid_ppl"]["choice"]
    for name, d in pairs["pairs"].items():
        ci = f"{_pct(d['mean'])}% [{_pct(d['ci'][0])}, {_pct(d['ci'][1])}] ({100 * d['ci_confidence']:.4g}%)"
        tost = f"[{_pct(d['tost_ci'][0])}, {_pct(d['tost_ci'][1])}] ({100 * d['tost_confidence']:.4g}%)"
        verdict = "**equivalent**" if d["verdict"] == "equivalent" else d["verdict"]
        assert f"| {name} | {d['n']} | {ci} | {tost} | {verdict} |" in text, name
    equal = pairs["pairs"]["untied vs tied-bert"]
    assert equal["verdict"] == "equivalent" and f"equivalence p {equal['p_equivalence_holm']:.2g}" in flat
    assert f"line says the same: {pairs['sentence']}" in flat
    claims = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"untied and tied-bert **equivalent** ({_pct(equal['mean'])}%, {equal['n']} pairs)" in claims


def test_the_ladder_matched_m_confirmation_figures_are_the_runs():
    import json

    folder = ROOT / "results" / "ladder-matched-m-confirmation"
    text = (folder / "README.md").read_text(encoding="utf-8")
    flat = " ".join(text.replace("−", "-").split())
    design = json.loads((folder / "fresh" / "design.json").read_text(encoding="utf-8"))
    assert f"design {design['hash']} fixed at {design['fixed_at'][:19]} UTC" in flat and design["runs_before"] == 0
    assert design["design"]["first_seed"] == 3300
    runs = _runs(folder / "fresh")
    assert len(runs) == 9 and all(r["numerics"] == ZEN4 for r in runs)
    assert f"before the first of its {len(runs)} runs" in flat
    _cost_quoted(text, runs)
    learned = {r["strategy"]: r["params_learned"] for r in runs}
    assert f"tied and l2norm {learned['tied']:,} learned" in flat and learned["l2norm"] == learned["tied"]
    assert f"untied {learned['untied']:,} (1 block)" in flat
    verdicts = json.loads((folder / "fresh" / "results.json").read_text(encoding="utf-8"))["verdicts"]["valid_ppl"]
    untied = verdicts["decisions"]["untied"]
    assert untied["verdict"] == "worse" and untied["model_based"] and f"exact p {untied['p_signflip']:.2g}" in flat
    lo, hi = untied["ci"]
    ci = f"{untied['mean']:+.2f}%, CI [{lo:+.2f}, {hi:+.2f}] ({100 * untied['ci_confidence']:.4g}%)"
    assert ci in flat
    assert f"(-{abs(verdicts['decisions']['l2norm']['mean']):.2f}%, original" in flat


def test_the_liu_pooled_partial_figures_are_the_runs(monkeypatch):
    """results/liu-decisive: the Zen 4 pairs' BLEU, the cost, the three-block estimate and the tool's pooled table
    (redrawn by confirm --report-only --pool-original) are what the README quotes."""
    import json

    from embtie.decisions import Margin, decide_all
    from embtie.decisions.pooled import blocked_difference

    monkeypatch.chdir(ROOT)
    folder = ROOT / "results" / "liu-decisive"
    text = (folder / "README.md").read_text(encoding="utf-8")
    flat = " ".join(text.replace("−", "-").split())
    runs = _runs(folder / "zen4")
    assert len(runs) == 4 and all(r["numerics"] == ZEN4 for r in runs)
    seconds = [r["elapsed_s"] for r in runs]
    assert f"4 runs, {sum(seconds):,.0f} s, {sum(seconds) / 3600:.2f} core-hours" in flat

    def bleu(strategy: str, seed: int) -> float:
        run = folder / "zen4" / "runs" / strategy / f"seed{seed}"
        d = json.loads((run / "analysis" / "diagnostics.json").read_text(encoding="utf-8"))
        return float(d["translation"]["scores"]["bleu"])

    for seed in (6, 7):
        t, m = bleu("tied", seed), bleu("l2norm", seed)
        assert f"| seed {seed} | {t:.2f} | {m:.2f} | {m - t:+.2f} |" in text.replace("−", "-")

    def pairs(name: str) -> tuple[list[float], list[float]]:
        rows = json.loads((folder / name / "results.json").read_text(encoding="utf-8"))["rows"]
        by = {s: {r["seed"]: r["bleu"] for r in rows if r["strategy"] == s} for s in ("tied", "l2norm")}
        seeds = sorted(set(by["tied"]) & set(by["l2norm"]))
        return [by["l2norm"][s] for s in seeds], [by["tied"][s] for s in seeds]

    blocks = {n: pairs(n) for n in ("transformer", "amd-epyc-zen5", "zen4")}
    d = decide_all({"l2norm": blocked_difference(blocks, Margin(0.5))}, True)["l2norm"]
    assert f"+{d.mean:.2f} BLEU [+{d.ci[0]:.2f}, +{d.ci[1]:.2f}] (95%), {d.n} pairs, 6 degrees" in flat
    saved = (folder / "pooled-partial.md").read_text(encoding="utf-8")
    drawn = confirmation_report(Path("results/liu-decisive/transformer"),
                                [Path("results/liu-decisive/amd-epyc-zen5"), Path("results/liu-decisive/zen4")],
                                pool_original=True)  # fmt: skip
    assert drawn == saved and saved in text


def test_the_liu_pooled_look_is_the_runs(monkeypatch):
    """results/liu-decisive, second design: the Zen 3 pair, its machine record and cost, the look's verdict over the
    four blocks with its sign-flip p, the fresh-seed pairs alone, and the tool's pooled table (redrawn) are what
    the README quotes; the design was fixed before the block's runs."""
    import json
    from datetime import datetime

    from embtie.decisions import Margin, decide_all
    from embtie.decisions.pooled import blocked_difference

    monkeypatch.chdir(ROOT)
    folder = ROOT / "results" / "liu-decisive"
    text = (folder / "README.md").read_text(encoding="utf-8").replace("−", "-")
    flat = " ".join(text.split())
    runs = _runs(folder / "zen3")
    zen3 = {"cpu": "AMD EPYC", "cpu_capability": "AVX2", "kernel_env": {}, "threads": 1, "torch": "2.13.0+cpu",
            "cpu_id": "AuthenticAMD family 25 model 1"}  # fmt: skip
    assert len(runs) == 2 and all(r["numerics"] == zen3 for r in runs)
    seconds = sum(r["elapsed_s"] for r in runs)
    assert f"2 runs, {seconds:,.0f} s, {seconds / 3600:.2f} core-hours" in flat
    design = json.loads((folder / "zen3" / "design.json").read_text(encoding="utf-8"))
    started = json.loads((folder / "zen3" / "design-runs.json").read_text(encoding="utf-8"))
    fixed = datetime.fromisoformat(design["fixed_at"])
    assert design["runs_before"] == 0
    assert all(datetime.fromisoformat(r["started_at"]) >= fixed for r in started.values())
    assert f"design {design['hash']} fixed at {fixed:%H:%M:%S} UTC" in flat

    def pairs(name: str) -> tuple[list[float], list[float]]:
        rows = json.loads((folder / name / "results.json").read_text(encoding="utf-8"))["rows"]
        by = {s: {r["seed"]: r["bleu"] for r in rows if r["strategy"] == s} for s in ("tied", "l2norm")}
        seeds = sorted(set(by["tied"]) & set(by["l2norm"]))
        return [by["l2norm"][s] for s in seeds], [by["tied"][s] for s in seeds]

    blocks = {n: pairs(n) for n in ("transformer", "amd-epyc-zen5", "zen4", "zen3")}
    (m,), (t,) = blocks["zen3"]
    assert f"| seed 8 | {t:.2f} | {m:.2f} | {m - t:+.2f} |" in text
    d = decide_all({"l2norm": blocked_difference(blocks, Margin(0.5))}, True)["l2norm"]
    assert d.verdict == "better" and not d.model_based and d.n == 10
    assert (f"l2norm better than tied in BLEU, +{d.mean:.2f} [+{d.ci[0]:.2f}, +{d.ci[1]:.2f}] (95%)**, difference p "
            f"{d.p_difference:.2g}, 6 degrees of freedom") in flat  # fmt: skip
    assert f"(p {d.p_equivalence:.2f}: the estimate" in flat
    assert f"sign-flip p of the ten differences is {d.p_signflip:.2g}" in flat
    fresh = decide_all({"l2norm": blocked_difference({n: blocks[n] for n in ("zen4", "zen3")}, Margin(0.5))}, True)
    f = fresh["l2norm"]
    assert f.verdict == "undecided" and f"+{f.mean:.2f} BLEU [{f.ci[0]:+.2f}, {f.ci[1]:+.2f}] (95%), 3 pairs" in flat
    means = {n: sum(a - b for a, b in zip(*blocks[n])) / len(blocks[n][0]) for n in blocks}
    assert (f"first machine {means['transformer']:+.2f} (6 pairs), Zen 5 {means['amd-epyc-zen5']:+.2f} (1), Zen 4 "
            f"{means['zen4']:+.2f} (2), Zen 3 {means['zen3']:+.2f} (1)") in flat  # fmt: skip
    saved = (folder / "pooled.md").read_text(encoding="utf-8")
    drawn = confirmation_report(Path("results/liu-decisive/transformer"),
                                [Path(f"results/liu-decisive/{n}") for n in ("amd-epyc-zen5", "zen4", "zen3")],
                                pool_original=True)  # fmt: skip
    assert drawn == saved and saved in text
    assert f"better, +{d.mean:.2f} [+{d.ci[0]:.2f}, +{d.ci[1]:.2f}] (95%), 10 pairs, 4 machines" in saved
    row = next(line for line in (ROOT / "README.md").read_text(encoding="utf-8").replace("−", "-").splitlines()
               if line.startswith("| Liu et al. | normalized sharing beats tied in BLEU |"))  # fmt: skip
    assert f"**l2norm better than tied, +{d.mean:.2f} [+{d.ci[0]:.2f}, +{d.ci[1]:.2f}] (95%) BLEU**" in row
    assert f"exact sign-flip p {d.p_signflip:.2g}" in row and f"undecided (+{f.mean:.2f}, all three" in row
    docs = " ".join((ROOT / "docs" / "reproductions.md").read_text(encoding="utf-8").replace("−", "-").split())
    assert (f"l2norm - tied = +{d.mean:.2f} [+{d.ci[0]:.2f}, +{d.ci[1]:.2f}] (95%) BLEU, 10 pairs, exact sign-flip p "
            f"{d.p_signflip:.2g}: **better**") in docs  # fmt: skip
    assert f"the three fresh pairs alone are undecided (+{f.mean:.2f})" in docs

"""The comparison report: statistics, learning curves, step-0 loss, parameter counts, norms, norm vs
frequency, word similarity and row updates, each figure with a caption and the command behind it.
Everything is read from the comparison's saved files (``embtie.compare.collect``)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from embtie import plots, report
from embtie.report import Figure, Heading, Table, Text, fmt


def _seed0(results: dict) -> dict[str, dict]:
    """The first seed's run of every strategy (per-run diagnostics are shown for one seed)."""
    out: dict[str, dict] = {}
    for p in sorted(results["per_run"], key=lambda p: p["seed"]):
        out.setdefault(p["strategy"], p)
    return out


def _ci(s: dict, digits: int = 1) -> str:
    if s["n"] == 0:
        return "-"
    if s["n"] == 1 or not math.isfinite(s["half_width"]):
        return f"{fmt(s['mean'], digits)} (1 seed)"
    return (
        f"{fmt(s['mean'], digits)} ± {fmt(s['std'], digits)} [{fmt(s['ci_low'], digits)}, {fmt(s['ci_high'], digits)}]"
    )


def build(results: dict, out_dir: Path) -> report.Report:
    cmd = results["command"]
    names = results["strategies"]
    seed0 = _seed0(results)
    rows = results["rows"]
    base = results["baseline"]
    any_diag = next(iter(seed0.values()))["diag"]
    v, d, ln_v = any_diag["vocab_size"], any_diag["dim"], any_diag["step0"]["ln_v"]
    r = report.Report(f"embtie comparison: {results['preset']}")
    if results["runs_finished"] < results["runs_planned"]:
        r.add(
            Text(
                f"Partial report: {results['runs_finished']} of {results['runs_planned']} runs are finished; "
                "statistics use the seeds finished so far."
            )
        )
    r.add(
        Text(
            f"Strategies: {', '.join(names)}; seeds: {results['seeds']}; vocabulary V = {v:,}, width d = {d}. "
            f"Reproduce everything (finished runs are skipped, plots are redrawn from saved files): `{cmd}`"
        ),
        Text(
            "Config overrides on top of the preset, for every run: "
            + (", ".join(f"`{o}`" for o in results["overrides"]) or "none")
            + ". Validation perplexities are on the validation tokens the runs evaluate "
            "(all of them unless `data.valid_tokens` limits them)."
        ),
    )

    # ---------------------------------------------------------------- statistics
    r.add(Heading("Validation perplexity and significance against tied"))
    trows = []
    for n in names:
        s = results["summary"][n]
        t = results["tests"].get(n)
        if n == base:
            delta, p, verdict = "baseline", "-", "-"
        elif t is None:
            delta, p, verdict = "-", "-", "no tied baseline in this comparison"
        else:
            lo, hi = t["delta_ci"]
            delta = f"{t['delta']:+.1f} [{lo:+.1f}, {hi:+.1f}]"
            p, verdict = f"{t['p_value']:.3f} / {_p(t.get('p_seeds'))}", t["verdict"]
        trows.append([n, _ci(s["valid_ppl"]), delta, p, verdict, _ci(s["best_valid_ppl"]), _ci(s["step0_loss"], 2)])
    r.add(
        Table(
            [
                "strategy",
                "valid ppl: mean ± std [95% CI]",
                "Δ ppl vs tied [95% CI]",
                "p: bootstrap / seeds",
                "verdict",
                "best valid ppl",
                "step-0 loss",
            ],
            trows,
            "Mean, standard deviation and Student-t 95% interval over seeds. Δ and p: paired bootstrap "
            "(1000 resamples, sacrebleu's test statistic) over the validation batches, seed means compared "
            "(over the seeds both strategies have finished); it sees the noise of the evaluation sample only. "
            "p (seeds): Welch's t-test over the per-seed values, the noise of training. The verdict is "
            "'better' or 'worse' only when both are below 0.05 (the seed test where there are >= 2 seeds), "
            "else 'within noise'.",
        )
    )
    vals = {n: [x["valid_ppl"] for x in rows if x["strategy"] == n] for n in names}
    r.add(
        Figure(
            plots.metric_by_strategy(vals, out_dir / "valid_ppl.png", "validation perplexity", log=True),
            "Final validation perplexity per strategy: seed mean with 95% interval, seeds as dots, tied's mean dotted.",
            cmd,
        )
    )

    # ---------------------------------------------------------------- translation
    if any(p["diag"].get("translation") for p in results["per_run"]):
        _translation_section(r, results, names, cmd, out_dir)

    # ---------------------------------------------------------------- curves
    r.add(Heading("Learning curves"))
    curves = {n: [p["curves"] for p in results["per_run"] if p["strategy"] == n] for n in names}
    r.add(
        Figure(
            plots.learning_curves(curves, out_dir / "learning_curves.png", ln_v=ln_v),
            "Train and validation loss per strategy (seed mean; band = min to max over seeds). The y axis stops "
            "at ln V + 1.5; the step-0 section shows the initial losses whole.",
            cmd,
        )
    )

    # ---------------------------------------------------------------- step 0
    r.add(Heading("Initial loss (Su 2023)"))
    measured = {n: [x["step0_loss"] for x in rows if x["strategy"] == n and x["step0_loss"] is not None] for n in names}
    pred = {n: seed0[n]["diag"]["step0"]["predicted"] for n in names}
    refined = {n: seed0[n]["diag"]["step0"]["predicted_refined"] for n in names}
    r.add(
        Table(
            ["strategy", "measured step-0 loss (seed mean)", "Su's prediction", "refined prediction", "ln V"],
            [
                [n, fmt(float(np.mean(measured[n])) if measured[n] else None), fmt(pred[n]), fmt(refined[n]), fmt(ln_v)]
                for n in names
            ],
            "Measured: training loss of the first batch before any update. Prediction: log(e^(m_ii - m_off) + V - 1) "
            "from the strategy's step-0 logit moments (embtie.analysis.initial_loss), for a model whose residual "
            "branches start at zero; the refined one keeps the spread of the logits.",
        )
    )
    r.add(
        Figure(
            plots.step0_losses(measured, pred, ln_v, out_dir / "step0_loss.png"),
            "Loss at step 0 per strategy (bars: seed mean, dots: seeds) against Su's prediction (diamonds) and ln V.",
            cmd,
        )
    )

    # ---------------------------------------------------------------- parameters
    r.add(Heading("Learned and fixed parameters (Shalev et al., Table 3)"))
    pc = {n: seed0[n]["diag"]["params"] for n in names}
    ref = pc.get("untied", pc.get(base))
    prow = []
    for n in names:
        c = pc[n]
        red = (ref["learned"] - c["learned"]) / ref["learned"] if ref else None
        prow.append(
            [
                n,
                fmt(c["learned"]),
                fmt(c["sharing_learned"]),
                fmt(c["fixed"]),
                f"{100 * red:.1f}%" if red is not None else "-",
            ]
        )
    refname = "untied" if "untied" in pc else base
    r.add(
        Table(
            [
                "strategy",
                "learned (model)",
                "learned (embedding + output layer)",
                "fixed",
                f"fewer learned than {refname}",
            ],
            prow,
        )
    )
    r.add(
        Figure(
            plots.parameter_counts(pc, out_dir / "parameters.png"),
            "Learned parameters (rest of model / embedding and output layer) and fixed ones per strategy.",
            cmd,
        )
    )

    # ---------------------------------------------------------------- norms
    r.add(Heading("Norms of input and output vectors (Liu et al., Figure 2)"))
    hists = {n: seed0[n]["diag"]["norms"] for n in names}
    r.add(
        Table(
            ["strategy", "input norm mean ± std", "output norm mean ± std", "output min - max"],
            [
                [
                    n,
                    f"{hists[n]['input']['mean']:.3f} ± {hists[n]['input']['std']:.3f}",
                    f"{hists[n]['output']['mean']:.3f} ± {hists[n]['output']['std']:.3f}",
                    f"{hists[n]['output']['min']:.3f} - {hists[n]['output']['max']:.3f}",
                ]
                for n in names
            ],
            "Effective vectors after training (seed 0): input = what the model is fed (after normalisation and "
            "embed_scale), output = the rows the logits are taken against (all scales folded in).",
        )
    )
    r.add(
        Figure(
            plots.norm_histograms(hists, out_dir / "norm_histograms.png"),
            "Histograms of input-vector (blue) and output-vector (red) L2 norms after training, seed 0.",
            f"{cmd}  (one run: embtie analyze RUN_DIR)",
        )
    )

    # ---------------------------------------------------------------- norm vs frequency
    nf_ok = all(seed0[n]["diag"].get("norm_frequency") for n in names)
    r.add(Heading("Output-vector norm against token frequency (Shalev et al., Figure 2)"))
    if nf_ok:
        frows = []
        for n in names:
            s = results["summary"][n]["rho_output_norm_freq"]
            rin = [
                x["rho_input_norm_freq"] for x in rows if x["strategy"] == n and x["rho_input_norm_freq"] is not None
            ]
            frows.append([n, _ci(s, 2), fmt(float(np.mean(rin)) if rin else None)])
        r.add(
            Table(
                ["strategy", "Spearman rho, output norm vs train count", "rho, input norm vs count (mean)"],
                frows,
                "Shalev et al. report |rho| = 0.76-0.93 for learned target vectors (large norms for rare words in "
                "their Figure 2); here rho keeps its sign. '-' where the norms are constant "
                "(normalised or fixed rows).",
            )
        )
        points = {
            n: {
                "counts": seed0[n]["arrays"]["counts"],
                "norms": seed0[n]["arrays"]["output_norms"],
                "rho": (seed0[n]["diag"]["norm_frequency"]["output"] or {}).get("rho"),
            }
            for n in names
        }
        r.add(
            Figure(
                plots.norm_vs_frequency(points, out_dir / "norm_vs_frequency.png"),
                "Output-vector norm against training frequency, one dot per token, log axes, seed 0; rho = Spearman.",
                f"{cmd}  (one run: embtie analyze RUN_DIR)",
            )
        )
    else:
        r.add(Text("Not available: the task's vocabulary has no training counts."))

    # ---------------------------------------------------------------- word similarity
    r.add(Heading("Word similarity of input vs output vectors (Shalev et al., Table 4)"))
    ws = {n: seed0[n]["diag"].get("wordsim") for n in names}
    if all(ws.values()):
        benches = list(next(iter(ws.values())))
        wrows = []
        for n in names:
            cells = [n]
            for b in benches:
                e = ws[n][b]
                cells.append(f"{fmt(e['output']['rho'])} / {fmt(e['input']['rho'])}")
            wrows.append(cells)
        cov = next(iter(ws.values()))
        wrows.append(
            ["coverage (pairs found)"] + [f"{cov[b]['output']['found']}/{cov[b]['output']['total']}" for b in benches]
        )
        r.add(
            Table(
                ["strategy", *[f"{b}: output / input" for b in benches]],
                wrows,
                "Spearman rho between cosine similarities and human judgements, output vectors / input vectors "
                "(seed 0), over the pairs whose two words are in the vocabulary (last row).",
            )
        )
    else:
        r.add(Text("Not available: the task's vocabulary is not a word vocabulary with counts."))

    # ---------------------------------------------------------------- row updates
    r.add(Heading("How often each row is updated (Press & Wolf)"))
    ups = {}
    urows = []
    for n in names:
        dg, ar = seed0[n]["diag"], seed0[n]["arrays"]
        ru = dg["row_updates"]
        ups[n] = {
            "batches": ru["batches"],
            "input_counts": ar["input_update_counts"],
            "output_counts": ar["output_update_counts"],
        }
        urows.append(
            [
                n,
                f"{100 * ru['input_rows_per_batch']:.1f}%",
                f"{100 * ru['output_rows_per_batch']:.1f}%",
                ", ".join(ru["parameters"]) or "-",
            ]
        )
    r.add(
        Table(
            [
                "strategy",
                "rows with input-path gradient per batch",
                "rows with output-path gradient per batch",
                "row parameters",
            ],
            urows,
            f"Over the first {ups[names[0]]['batches']} training batches, with the trained weights (seed 0). The input "
            "path is the gradient through sharing.embed, the output path the one through the output layer; a "
            "fixed classifier's rows are buffers and never get one.",
        )
    )
    r.add(
        Figure(
            plots.row_update_frequency(ups, out_dir / "row_updates.png"),
            "Share of batches in which a vocabulary row gets a non-zero gradient through the input path (blue) and "
            "the output path (red), against the token's frequency rank.",
            f"{cmd}  (one run: embtie analyze RUN_DIR)",
        )
    )

    # ---------------------------------------------------------------- throughput
    r.add(Heading("Throughput"))
    r.add(
        Table(
            ["strategy", "training tokens/s (mean ± std [95% CI])"],
            [[n, _ci(results["summary"][n]["tokens_per_s"], 0)] for n in names],
            "Measured while the runs trained; on a shared machine these numbers are noisy (use bench/ for ratios).",
        )
    )
    return r


def _p(p: float | None) -> str:
    """A p-value for a table cell ('-' when the test could not be run, e.g. one seed)."""
    return "-" if p is None or not math.isfinite(p) else f"{p:.3f}"


def _translation_section(r: report.Report, results: dict, names: list[str], cmd: str, out_dir: Path) -> None:
    base = results["baseline"]
    rows = results["rows"]
    r.add(Heading("Translation: BLEU and vocabulary usage (Shalev et al., Tables 1-2)"))
    brows = []
    for n in names:
        s = results["summary"][n]
        t = results["bleu_tests"].get(n)
        if n == base:
            delta, p, verdict = "baseline", "-", "-"
        elif t is None:
            delta, p, verdict = "-", "-", "-"
        else:
            lo, hi = t["delta_ci"]
            delta, verdict = f"{t['delta']:+.2f} [{lo:+.2f}, {hi:+.2f}]", t["verdict"]
            p = f"{t['p_value']:.3f} / {_p(t.get('p_seeds'))}"
        mine = [x for x in rows if x["strategy"] == n]
        share = [x["rare_token_share"] for x in mine if x["rare_token_share"] is not None]
        brows.append(
            [
                n,
                _ci(s["bleu"], 2),
                delta,
                p,
                verdict,
                _ci(s["vu"], 0),
                f"{100 * float(np.mean(share)):.2f}%" if share else "-",
            ]
        )
    ref_vu = next(
        (p["diag"]["translation"]["reference_vocab_usage"] for p in results["per_run"] if p["diag"].get("translation")),
        None,
    )
    ref_text = (
        f" The references themselves: VU {ref_vu['vu']}, rare share {100 * ref_vu['rare_token_share']:.2f}%."
        if ref_vu
        else ""
    )
    r.add(
        Table(
            [
                "strategy",
                "BLEU: mean ± std [95% CI]",
                "Δ BLEU vs tied [95% CI]",
                "p: bootstrap / seeds",
                "verdict",
                "VU (distinct words)",
                "rare-word share",
            ],
            brows,
            "sacreBLEU on the validation split (detokenized, cased). Δ and p: paired bootstrap over sentences "
            "(sacrebleu's resampling and test statistic; with several seeds the same resampled sentences score "
            "every seed and the seed means are compared); p (seeds): Welch's t-test over per-seed BLEU; "
            "the verdict needs both below 0.05. VU: distinct words (13a-tokenized, lower-cased) in the "
            "hypotheses; rare: words seen at most 10 times in the training targets." + ref_text,
        )
    )
    vals = {n: [x["bleu"] for x in rows if x["strategy"] == n and x["bleu"] is not None] for n in names}
    r.add(
        Figure(
            plots.metric_by_strategy(vals, out_dir / "bleu.png", "BLEU"),
            "Validation BLEU per strategy: seed mean with 95% interval, seeds as dots.",
            cmd,
        )
    )

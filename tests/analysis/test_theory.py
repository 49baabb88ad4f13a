"""The theory checks reproduce what the papers claim (and say where they do not)."""

import json
import math

import pytest
import torch

from embtie import sharing
from embtie.analysis.initial_loss import measure_initial_loss, predicted_loss, predicted_loss_refined
from embtie.analysis.properties import measure_properties
from embtie.analysis.theory import corpus_tokens
from embtie.cli import main
from embtie.sharing.base import LogitMoments


@pytest.fixture(scope="module")
def ptb_sample():
    return corpus_tokens(10000, 6000, seed=0)[1]


def test_su_formula_matches_his_closed_form():
    # tied, V = 10000, d sigma = 16: log(e^16 + V - 1)
    m = LogitMoments(16.0, 0.0, 0.0, 0.0)
    assert predicted_loss(m, 10000) == pytest.approx(math.log(math.exp(16) + 9999))
    # no diagonal term and no spread: exactly log V
    assert predicted_loss(LogitMoments(0.0, 0.0, 0.0, 0.0), 10000) == pytest.approx(math.log(10000))
    # off-diagonal spread s^2 adds s^2 / 2 while s is small (log-normal sum)
    m = LogitMoments(0.0, 0.0, 0.0, 1.0)
    assert predicted_loss_refined(m, 10**6) == pytest.approx(math.log(10**6) + 0.5, abs=1e-3)


def test_refined_prediction_matches_monte_carlo_lse():
    torch.manual_seed(0)
    v, var = 5000, 4.0
    z = torch.randn(200, v, dtype=torch.float64) * math.sqrt(var)
    mc = float(torch.logsumexp(z, dim=1).mean())
    assert predicted_loss_refined(LogitMoments(0.0, var, 0.0, var), v) == pytest.approx(mc, abs=0.1)


@pytest.mark.parametrize(
    "name", ["tied", "untied", "tied-loginit", "tied-proj", "tied-bert", "tied-shuffle", "fixed", "ngpt"]
)
def test_initial_loss_prediction_matches_measurement(name, ptb_sample):
    """Refined prediction within 2.5% of the measured bigram loss on real PTB text."""
    torch.manual_seed(0)
    s = sharing.build(name, vocab_size=10000, dim=128)
    measured = measure_initial_loss(s, ptb_sample)
    predicted = predicted_loss_refined(s.step0_moments(), 10000)
    assert predicted == pytest.approx(measured, rel=0.025)


def test_tied_initial_loss_is_far_above_log_v_and_countermeasures_fix_it(ptb_sample):
    ln_v = math.log(10000)
    losses = {}
    for name in ("tied", "untied", "tied-loginit", "tied-bert", "tied-shuffle"):
        torch.manual_seed(0)
        losses[name] = measure_initial_loss(sharing.build(name, vocab_size=10000, dim=256), ptb_sample)
    assert losses["tied"] > ln_v + 5
    for name in ("untied", "tied-loginit", "tied-bert", "tied-shuffle"):
        assert abs(losses[name] - ln_v) < 1.0, (name, losses[name])


def test_liu_property_verdicts():
    verdict = {n: measure_properties(n, 1000, 48, trials=1500).holds for n in ("tied", "l2norm", "cosine", "distance")}
    assert verdict["l2norm"] == {"identity": True, "normality": True, "unbiased": True}
    assert verdict["tied"] == {"identity": False, "normality": False, "unbiased": False}
    assert verdict["cosine"] == {"identity": True, "normality": False, "unbiased": False}
    assert verdict["distance"] == {"identity": True, "normality": False, "unbiased": False}
    sq = measure_properties("sqnorm", 1000, 48, trials=1500)
    assert sq.holds["unbiased"] and not sq.holds["normality"]


def test_sqnorm_identity_counterexample():
    """z_i = e_i.h/||e_i||^2 beats z_k = 1 for a short row pointing the same way as e_k."""
    s = sharing.build("sqnorm", vocab_size=3, dim=4)
    with torch.no_grad():
        s.weight.copy_(torch.tensor([[1.0, 0, 0, 0], [0.5, 0.1, 0, 0], [0, 0, 1.0, 0]]))
    z = s.logits(s.input_vectors()[0]).detach()
    assert z[0] == pytest.approx(1.0) and z.argmax() == 1
    # with equal norms sqnorm is a scaled cosine and identity holds
    r = measure_properties("sqnorm", 500, 32, trials=200, spread=0.0)
    assert r.identity == 1.0


def test_theory_cli_json(capsys):
    rc = main(["theory", "--strategies", "tied,l2norm,untied", "--tokens", "2000", "--trials", "300", "--json"])
    assert rc == 0
    rep = json.loads(capsys.readouterr().out)
    assert set(rep) >= {"log_vocab", "initial_loss", "properties", "parameters"}
    assert rep["log_vocab"] == pytest.approx(math.log(10000))
    assert set(rep["initial_loss"]["tied"]) == {"predicted", "predicted_refined", "measured"}
    assert set(rep["properties"]["l2norm"]) >= {"identity", "normality", "unbiased", "holds"}
    assert rep["properties"]["l2norm"]["holds"]["normality"] is True
    assert rep["parameters"]["untied"] == {"learned": 2 * 10000 * 256, "fixed": 0}


def test_theory_cli_rejects_unknown_strategy(capsys):
    assert main(["theory", "--strategies", "bogus", "--json"]) == 2
    assert "unknown strategy 'bogus'" in capsys.readouterr().err


def test_theory_lists_a_strategy_without_a_flat_table_as_not_applicable(capsys):
    """`embtie theory` covers every strategy, adaptive included (issue 28: it stopped with an AttributeError):
    adaptive gets its initial loss and parameters; Liu's properties are marked not applicable."""
    rc = main(["theory", "--strategies", "tied,adaptive", "--tokens", "2000", "--trials", "200"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "adaptive" in out and "not applicable" in out
    assert main(["theory", "--strategies", "tied,adaptive", "--tokens", "2000", "--trials", "200", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert set(rep["initial_loss"]) == {"tied", "adaptive"}
    assert set(rep["properties"]) == {"tied"}
    assert set(rep["properties_not_applicable"]) == {"adaptive"}
    assert rep["parameters"]["adaptive"]["learned"] > 0

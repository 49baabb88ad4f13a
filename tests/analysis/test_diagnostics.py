"""Diagnostics (norms, frequency correlation, word similarity, vocabulary usage, row updates, parameter
counts) on tiny data with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from embtie import sharing
from embtie.analysis import frequency, norms, param_counts, row_updates, wordsim
from embtie.errors import DataError
from embtie.evaluation import vocab_usage


def test_row_norms_and_histogram():
    v = torch.tensor([[3.0, 4.0], [0.0, 1.0], [6.0, 8.0]])
    n = norms.row_norms(v)
    assert n.tolist() == [5.0, 1.0, 10.0]
    h = norms.norm_histogram(n, bins=3, value_range=(0.0, 12.0))
    assert h["counts"] == [1, 1, 1] and h["edges"] == [0.0, 4.0, 8.0, 12.0]
    assert h["mean"] == pytest.approx(16 / 3) and h["max"] == 10.0
    # all-equal norms (l2norm) still give a valid histogram with every row in it
    assert sum(norms.norm_histogram(np.ones(7), bins=5)["counts"]) == 7


def test_input_output_norms_follow_the_strategy():
    torch.manual_seed(0)
    s = sharing.build("l2norm", vocab_size=50, dim=8)
    io = norms.input_output_norms(s)
    assert np.allclose(io["input"], 1.0) and np.allclose(io["output"], 1.0)
    t = sharing.build("tied", vocab_size=50, dim=8)
    io = norms.input_output_norms(t)
    assert np.allclose(io["input"], io["output"]) and io["input"].std() > 0


def test_norm_frequency_correlation_known_ranks():
    counts = np.array([100, 50, 10, 5, 1, 0])
    nrm = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 99.0])  # rarer -> larger, perfectly monotone
    r = frequency.norm_frequency_correlation(nrm, counts)
    assert r["n"] == 5 and r["rho"] == pytest.approx(-1.0)
    r = frequency.norm_frequency_correlation(nrm[::-1].copy(), counts[::-1].copy(), min_count=5)
    assert r["n"] == 4 and r["rho"] == pytest.approx(-1.0)
    assert math.isnan(frequency.norm_frequency_correlation(np.ones(6), counts)["rho"])
    rounding = 1.0 + np.array([1e-7, -1e-7, 0, 2e-7, -1e-7, 0])  # unit rows after float32 normalisation
    assert math.isnan(frequency.norm_frequency_correlation(rounding, counts)["rho"])


def test_wordsim_parse_handles_crlf_and_reports_coverage():
    lines = ["Cat\tdog\t8.0\r", "cat\tcar\t2.0\r", "", "dog\tpuppy\t9.5\r", "car\tbus\t5.0", "zebra\tquark\t1"]
    pairs = wordsim.parse_pairs(lines)
    assert pairs[0] == wordsim.Pair("cat", "dog", 8.0) and len(pairs) == 5
    stoi = {"cat": 0, "dog": 1, "car": 2, "puppy": 3, "bus": 4}
    # vectors whose cosines rank the pairs exactly like the human scores
    vec = torch.tensor([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.9, 0.05], [0.5, 1.0]])
    r = wordsim.similarity_correlation(vec, stoi, pairs)
    assert r["found"] == 4 and r["total"] == 5 and r["coverage"] == pytest.approx(0.8)
    cos = torch.nn.functional.cosine_similarity
    sims = [float(cos(vec[stoi[p.w1]], vec[stoi[p.w2]], dim=0)) for p in pairs[:4]]
    assert np.argsort(sims).tolist() == np.argsort([8.0, 2.0, 9.5, 5.0]).tolist()
    assert r["rho"] == pytest.approx(1.0)
    with pytest.raises(DataError, match="line 1"):
        wordsim.parse_pairs(["only two"])


def test_wordsim_real_benchmarks_load():
    sizes = {name: len(wordsim.load_benchmark(name)) for name in wordsim.BENCHMARKS}
    assert sizes == {"SimLex-999": 999, "MEN": 3000, "MTurk-771": 771, "WS-353": 353}
    pairs = wordsim.load_benchmark("MTurk-771")
    assert all("\r" not in p.w2 for p in pairs)


def test_vocabulary_usage_counts_types_and_rare_share():
    counts = {"the": 1000, "bird": 500, "seagull": 3, "duck": 8}
    r = vocab_usage.vocabulary_usage([["the", "bird"], ["the", "seagull"], ["a", "duck"]], counts, rare_max=10)
    assert r["vu"] == 5 and r["tokens"] == 6
    assert r["types_rare"] == 3  # seagull, duck, and the unseen "a"
    assert r["rare_token_share"] == pytest.approx(3 / 6)


class _TinyLM(torch.nn.Module):
    """h_t = tanh(W x_t): a bigram model that uses its sharing object on both sides."""

    def __init__(self, s):
        super().__init__()
        self.s = s
        self.mix = torch.nn.Linear(s.dim, s.dim)

    def loss(self, batch):
        ids, tgt = batch
        return self.s.loss(torch.tanh(self.mix(self.s.embed(ids))), tgt) + self.s.regularization()


def _batches(v, n=3):
    g = torch.Generator().manual_seed(1)
    return [(torch.randint(0, v // 2, (2, 5), generator=g), torch.randint(0, v, (2, 5), generator=g)) for _ in range(n)]


@pytest.mark.parametrize("name", ["untied", "tied"])
def test_row_updates_input_rows_are_the_batch_tokens(name):
    torch.manual_seed(0)
    v = 20
    s = sharing.build(name, vocab_size=v, dim=6)
    model = _TinyLM(s)
    batches = _batches(v)
    r = row_updates.row_update_counts(s, model.loss, batches)
    expected_in = np.zeros(v, dtype=int)
    for ids, _ in batches:
        expected_in[ids.unique().numpy()] += 1
    assert r["input_counts"].tolist() == expected_in.tolist()
    assert r["output_counts"].tolist() == [3] * v  # softmax reaches every output row at every step
    assert r["output_rows_per_batch"] == pytest.approx(1.0)
    assert all(p.grad is None for p in s.parameters())


def test_row_updates_split_sums_to_the_full_gradient():
    torch.manual_seed(0)
    s = sharing.build("tied", vocab_size=16, dim=4)
    model = _TinyLM(s)
    batch = _batches(16, 1)[0]
    split = row_updates.split_row_gradients(s, model.loss, batch)
    (full,) = torch.autograd.grad(model.loss(batch), [s.weight])
    assert torch.allclose(split["input"]["weight"] + split["output"]["weight"], full, atol=1e-6)


def test_row_updates_fixed_classifier_has_no_output_rows():
    torch.manual_seed(0)
    s = sharing.build("fixed", vocab_size=20, dim=6)
    r = row_updates.row_update_counts(s, _TinyLM(s).loss, _batches(20))
    assert r["output_counts"].sum() == 0 and r["input_counts"].sum() > 0
    assert r["parameters"] == ["weight"]


def test_parameter_counts_learned_vs_fixed():
    s_fixed = sharing.build("fixed", vocab_size=100, dim=8)
    s_untied = sharing.build("untied", vocab_size=100, dim=8)
    m_fixed, m_untied = _TinyLM(s_fixed), _TinyLM(s_untied)
    pf = param_counts.model_parameter_counts(m_fixed, s_fixed)
    pu = param_counts.model_parameter_counts(m_untied, s_untied)
    assert pf["fixed"] == 800 and pf["learned"] == 800 + 8 * 8 + 8
    assert pu["fixed"] == 0 and pu["learned"] == 1600 + 72

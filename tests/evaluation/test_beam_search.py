"""Beam search and greedy search against hand-built score tables, and checkpoint averaging."""

import math

import pytest
import torch

from embtie.data.subwords import BOS, EOS
from embtie.evaluation.beam_search import beam_search, greedy
from embtie.models.seq2seq import map_state
from embtie.rundir.averaging import average_state_dicts

A, B = 4, 5  # two ordinary tokens; vocabulary = pad, unk, bos, eos, a, b
V = 6
TINY = 1e-9


class TableModel:
    """A 'model' whose next-token distribution is looked up from (source id, prefix) in a table.

    The source id is src[:, 0]; prefixes not in the table get ``default`` (EOS with prob 1).
    """

    source_state_keys: tuple[str, ...] = ()
    max_positions = None

    def __init__(self, tables: dict[int, dict[tuple[int, ...], dict[int, float]]], default=None) -> None:
        self.tables = tables
        self.default = default or {EOS: 1.0}
        self.calls = 0

    def start(self, src):
        return {"sid": src[:, 0].clone(), "prefix": torch.empty(src.shape[0], 0, dtype=torch.long)}

    def reorder_state(self, state, index):
        return map_state(state, lambda t: t.index_select(0, index))

    def next_logprobs(self, prev, state):
        self.calls += 1
        prefix = state["prefix"]
        if prefix.shape[1] or not bool((prev == BOS).all()):
            prefix = torch.cat([prefix, prev[:, None]], 1)
        rows = []
        for sid, p in zip(state["sid"].tolist(), prefix.tolist()):
            dist = self.tables[sid].get(tuple(p), self.default)
            probs = torch.full((V,), TINY, dtype=torch.float64)
            for tok, pr in dist.items():
                probs[tok] = pr
            rows.append(torch.log(probs / probs.sum()))
        return torch.stack(rows).float(), {**state, "prefix": prefix}


def src_of(*sids, length=3):
    return torch.tensor([[s] + [7] * (length - 1) for s in sids])


# Greedy takes "a" (0.5) then EOS: 0.5 * 0.4 = 0.20; "b EOS" = 0.4 * 0.9 = 0.36 is better.
GARDEN = {
    (): {A: 0.5, B: 0.4, EOS: 0.1},
    (A,): {EOS: 0.4, A: 0.3, B: 0.3},
    (B,): {EOS: 0.9, A: 0.05, B: 0.05},
}
# Short "" (EOS first, 0.3) beats "a" (0.7 * 0.4 = 0.28) on raw score, loses once divided by length.
SHORT_VS_LONG = {
    (): {EOS: 0.3, A: 0.7},
    (A,): {EOS: 0.4, A: 0.3, B: 0.3},
    (A, A): {EOS: 0.1, A: 0.9},
    (A, B): {EOS: 0.1, B: 0.9},
}


def test_beam_finds_the_better_hypothesis_that_greedy_misses():
    m = TableModel({1: GARDEN})
    g = greedy(m, src_of(1))[0]
    assert g.tokens == [A]
    assert g.score == pytest.approx(math.log(0.5 * 0.4), abs=1e-5)
    best = beam_search(m, src_of(1), beam=2, lenpen=1.0)[0]
    assert best.tokens == [B]
    assert best.score == pytest.approx(math.log(0.4 * 0.9), abs=1e-5)
    assert best.normalized == pytest.approx(math.log(0.36) / 2, abs=1e-5)


def test_length_penalty_decides_between_short_and_long():
    m = TableModel({1: SHORT_VS_LONG})
    no_norm = beam_search(m, src_of(1), beam=2, lenpen=0.0)[0]
    assert no_norm.tokens == []  # log 0.3 = -1.20 > log 0.28 = -1.27
    assert no_norm.score == pytest.approx(math.log(0.3), abs=1e-5)
    per_token = beam_search(m, src_of(1), beam=2, lenpen=1.0)[0]
    assert per_token.tokens == [A]  # -1.27 / 2 > -1.20 / 1
    assert per_token.normalized == pytest.approx(math.log(0.28) / 2, abs=1e-5)


def test_eos_is_forced_at_max_length_and_never_part_of_the_output():
    # The table never ends a sentence by itself: a, a, a, ...
    m = TableModel({1: {}}, default={A: 1.0})
    for beam in (1, 3):
        hyps = (greedy if beam == 1 else beam_search)(m, src_of(1, length=2), max_len_ratio=1.0, max_len_extra=1)
        # at most floor(1.0 * 2 + 1) = 3 tokens, then EOS (prob TINY, forced)
        assert hyps[0].tokens == [A, A, A]
        expected = math.log(TINY)  # three times log(~1), then the forced EOS
        assert hyps[0].score == pytest.approx(expected, rel=1e-3)


def test_finished_hypotheses_are_not_extended_and_sentences_stop_early():
    m = TableModel({1: GARDEN})
    beam_search(m, src_of(1), beam=2, max_len_ratio=10, max_len_extra=50)
    # step 0, step 1 ("a EOS" and "b EOS" both finish), nothing more despite a limit of 80
    assert m.calls == 2


def test_batched_beam_equals_one_sentence_at_a_time():
    tables = {1: GARDEN, 2: SHORT_VS_LONG, 3: {(): {B: 0.6, EOS: 0.4}, (B,): {B: 0.5, EOS: 0.5}}}
    src = torch.cat([src_of(1, length=3), src_of(2, length=3), src_of(3, length=3)])
    src[1, 2] = 0  # a padded row: shorter source, other max length
    together = beam_search(TableModel(tables), src, beam=3, lenpen=0.6)
    for i in range(3):
        alone = beam_search(TableModel(tables), src[i : i + 1, : int((src[i] != 0).sum())], beam=3, lenpen=0.6)
        assert together[i].tokens == alone[0].tokens
        assert together[i].score == pytest.approx(alone[0].score, abs=1e-5)


def test_beam_one_is_greedy_on_tables():
    tables = {1: GARDEN, 2: SHORT_VS_LONG}
    src = torch.cat([src_of(1), src_of(2)])
    for lenpen in (0.0, 1.0, 2.0):
        b1 = beam_search(TableModel(tables), src, beam=1, lenpen=lenpen)
        g = greedy(TableModel(tables), src)
        assert [h.tokens for h in b1] == [h.tokens for h in g]
        assert [h.score for h in b1] == pytest.approx([h.score for h in g], abs=1e-5)


def test_average_state_dicts_is_the_fp32_mean_and_keeps_aliases():
    states = []
    for i in range(3):
        w = torch.full((2, 3), float(i), dtype=torch.bfloat16)
        states.append({"enc.weight": w, "dec.weight": w, "other": torch.tensor([i, 2.0 * i]), "step": torch.tensor(i)})
    avg = average_state_dicts(states)
    assert avg["enc.weight"] is avg["dec.weight"]
    assert avg["enc.weight"].dtype == torch.bfloat16
    assert torch.equal(avg["enc.weight"], torch.ones(2, 3, dtype=torch.bfloat16))
    assert torch.allclose(avg["other"], torch.tensor([1.0, 2.0]))
    assert int(avg["step"]) == 2
    # fp32 accumulation: the float16 sum 3 x 60000 would overflow (max 65504); the mean does not
    big = [{"w": torch.tensor([60000.0], dtype=torch.float16)} for _ in range(3)]
    assert float(average_state_dicts(big)["w"]) == 60000.0


def _rescore(tables, sid, tokens):
    """sum log p of ``tokens`` then EOS under the table model."""
    m = TableModel({sid: tables})
    state, prev, total = m.start(src_of(sid)), torch.tensor([BOS]), 0.0
    for tok in [*tokens, EOS]:
        lp, state = m.next_logprobs(prev, state)
        total += float(lp[0, tok])
        prev = torch.tensor([tok])
    return total


def test_any_beam_width_gives_an_eos_free_hypothesis_with_its_exact_score():
    # beams of up to 8 over a vocabulary of 6: fewer non-EOS candidates than slots, so EOS candidates
    # fill live slots (they are given -inf so that nothing continues past an EOS)
    # a model that, fed its own EOS, goes on confidently (as a trained model may): (EOS,) -> A -> EOS
    tables = {(): {A: 0.5, B: 0.3, EOS: 0.2}, (A,): {A: 0.6, EOS: 0.4}, (A, A): {EOS: 0.9, B: 0.1},
              (EOS,): {A: 1.0}, (EOS, A): {EOS: 1.0}}  # fmt: skip
    for k in (1, 2, 4, 6, 7, 8):
        m = TableModel({1: tables})
        (hyp,) = beam_search(m, src_of(1, length=4), beam=k, lenpen=1.0, max_len_ratio=2, max_len_extra=2)
        assert EOS not in hyp.tokens, k
        assert hyp.score == pytest.approx(_rescore(tables, 1, hyp.tokens), abs=1e-5), k

"""Greedy and batched beam search over any ``Seq2Seq`` model (or a captioner bound to its images).

Both searches drive the model incrementally through ``start(src)``, ``next_logprobs(prev, state)``
and ``reorder_state(state, index)`` (``IncrementalDecoder``; see ``embtie.models.seq2seq``), so they
run wherever the model runs (CPU or GPU). A sentence's output has at most ``floor(max_len_ratio * S + max_len_extra)``
tokens before its EOS, S being its source length (EOS included); at that length EOS is forced.

Beam search follows fairseq: each step keeps the 2K best extensions of the K live hypotheses; those
ending in EOS within the first K ranks are finished with score ``sum log p / (length + 1) ** lenpen``
(length + 1 counts the EOS); the K best others stay live. A sentence is done once it has K finished
hypotheses (or at its maximum length); its best finished hypothesis is returned. With K = 1 this is
exactly greedy search.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch import Tensor

from embtie.data.subwords import BOS, EOS, PAD

DecodingState = dict[str, Any]


class IncrementalDecoder(Protocol):
    """What the searches drive: a ``Seq2Seq`` model, or a captioner bound to its images.

    ``source_state_keys`` names the state entries that depend on the source alone (left as they are
    while every row keeps decoding its own sentence); ``max_positions`` caps the output length (BOS
    takes position 0; None: no cap).
    """

    @property
    def source_state_keys(self) -> tuple[str, ...]: ...

    @property
    def max_positions(self) -> int | None: ...

    def start(self, src: Tensor) -> DecodingState: ...

    def next_logprobs(self, prev: Tensor, state: DecodingState) -> tuple[Tensor, DecodingState]: ...

    def reorder_state(self, state: DecodingState, index: Tensor) -> DecodingState: ...


@dataclass
class Hypothesis:
    tokens: list[int]
    """output ids without BOS/EOS"""
    score: float
    """sum of log-probabilities, EOS included"""
    normalized: float
    """score / (len(tokens) + 1) ** lenpen (the beam's ranking score)"""


def max_lengths(src: Tensor, ratio: float, extra: int, cap: int | None = None) -> Tensor:
    """(B,) the most output tokens (before EOS) allowed for each source row of src (B, S)."""
    n = (src != PAD).sum(1).double()
    m = torch.floor(n * ratio + extra).long().clamp_min(0)
    if cap is not None:
        m = m.clamp_max(cap)
    return m


def _position_cap(model: IncrementalDecoder) -> int | None:
    """Longest output the model's positions allow (BOS takes position 0), if it has a limit."""
    mp = model.max_positions
    return None if mp is None else mp - 1


@torch.no_grad()
def greedy(
    model: IncrementalDecoder, src: Tensor, *, max_len_ratio: float = 1.5, max_len_extra: int = 10
) -> list[Hypothesis]:
    """Arg-max decoding of every row of src (B, S)."""
    b = src.shape[0]
    limit = max_lengths(src, max_len_ratio, max_len_extra, _position_cap(model)).to(src.device)
    state = model.start(src)
    prev = torch.full((b,), BOS, dtype=torch.long, device=src.device)
    done = torch.zeros(b, dtype=torch.bool, device=src.device)
    score = torch.zeros(b, dtype=torch.float64, device=src.device)
    out: list[Tensor] = []
    for t in range(int(limit.max()) + 1):
        lp, state = model.next_logprobs(prev, state)
        tok = lp.argmax(-1)
        tok = torch.where(limit <= t, torch.full_like(tok, EOS), tok)
        score += torch.where(done, 0.0, lp.gather(1, tok[:, None]).squeeze(1).double())
        tok = torch.where(done, torch.full_like(tok, PAD), tok)
        out.append(tok)
        done |= tok == EOS
        if bool(done.all()):
            break
        prev = torch.where(done, torch.full_like(tok, EOS), tok)
    rows = torch.stack(out, 1).tolist()
    hyps = []
    for r, s in zip(rows, score.tolist()):
        toks = r[: r.index(EOS)] if EOS in r else r
        hyps.append(Hypothesis(toks, s, s / (len(toks) + 1)))
    return hyps


TOPK_BLOCK = 128
"""Block width of ``row_topk``'s first pass."""


def row_topk(x: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """The k largest entries of each row of x (n, V) and their indices, like ``x.topk(k, dim=1)``.

    For wide rows, two passes: the max of every block of TOPK_BLOCK entries, then an exact top-k over
    the entries of the k blocks with the largest maxima (each of the k largest entries lies in one
    of them: a block holding one has a max at least the k-th largest value, which no other block
    reaches). About 1.5x faster than torch.topk on (80, 6000) rows on CPU; ties may come in
    another order.
    """
    n, v = x.shape
    nb = v // TOPK_BLOCK
    if nb < 4 * k or not x.is_contiguous():
        return x.topk(k, dim=1)
    w = nb * TOPK_BLOCK
    blocks = x[:, :w].view(n, nb, TOPK_BLOCK)
    bi = blocks.amax(dim=2).topk(k, dim=1).indices  # (n, k)
    cand = blocks.gather(1, bi.unsqueeze(-1).expand(-1, -1, TOPK_BLOCK)).view(n, k * TOPK_BLOCK)
    idx = (bi.unsqueeze(-1) * TOPK_BLOCK + torch.arange(TOPK_BLOCK, device=x.device)).view(n, k * TOPK_BLOCK)
    if w < v:  # the tail that fills no whole block is always a candidate
        cand = torch.cat([cand, x[:, w:]], dim=1)
        idx = torch.cat([idx, torch.arange(w, v, device=x.device).expand(n, -1)], dim=1)
    top, pos = cand.topk(k, dim=1)
    return top, idx.gather(1, pos)


@dataclass
class _Live:
    """The live hypotheses of the sentences still being decoded: n sentences, kc rows (beams) each."""

    active: list[int]
    """original sentence id of each remaining sentence (n)."""
    scores: Tensor
    """(n, kc) float32 sum of log-probabilities of each live hypothesis."""
    history: Tensor
    """(n, kc, t) long the output ids so far."""
    limit: Tensor
    """(n,) the most output tokens (before EOS) of each sentence."""


@dataclass
class _Candidates:
    """The best extensions of every sentence's live hypotheses, best first: (n, c) with c >= k."""

    scores: Tensor
    beam: Tensor
    """the live row (0 .. kc-1) each candidate extends."""
    token: Tensor


def _candidates(lp: Tensor, live: _Live, k: int, t: int) -> _Candidates:
    """The 2k best extensions (at least k, -inf fillers) of each sentence, from log-probabilities lp (n kc, V)."""
    n, v = live.scores.shape[0], lp.shape[-1]
    kc = live.scores.shape[1]
    dev = lp.device
    force = (live.limit <= t).view(n, 1)
    if bool(force.any()):  # rows at their length limit may only end: everything but EOS is -inf
        rows = force.expand(n, kc).reshape(-1, 1)
        lp = lp.masked_fill(rows & (torch.arange(v, device=dev) != EOS), float("-inf"))
    # The 2k best of the kc x V continuations of a sentence are among the 2k best tokens of each
    # beam's row: rank those (n kc, 2k) only, instead of adding the scores to all (n kc, V) entries.
    per = min(2 * k, v)
    row_s, row_i = row_topk(lp, per)
    cand = (row_s.view(n, kc, per) + live.scores.unsqueeze(-1)).view(n, kc * per)
    top_s, pos = cand.topk(min(2 * k, kc * per), dim=1)
    src_beam, tok = pos // per, row_i.view(n, kc * per).gather(1, pos)
    if top_s.shape[1] < k:  # a vocabulary smaller than the beam at the first step: -inf fillers
        pad = k - top_s.shape[1]
        top_s = torch.cat([top_s, top_s.new_full((n, pad), float("-inf"))], 1)
        src_beam = torch.cat([src_beam, src_beam.new_zeros((n, pad))], 1)
        tok = torch.cat([tok, tok.new_full((n, pad), EOS)], 1)
    return _Candidates(top_s, src_beam, tok)


def _finish(c: _Candidates, live: _Live, finished: list[list[Hypothesis]], k: int, lenpen: float) -> None:
    """Finish the EOS candidates ranked within the first k (a sentence keeps its first k finished)."""
    is_eos = c.token[:, :k] == EOS
    eos_rows, eos_ranks = torch.nonzero(is_eos & torch.isfinite(c.scores[:, :k]), as_tuple=True)
    if not len(eos_rows):
        return
    hist = live.history[eos_rows, c.beam[eos_rows, eos_ranks]].tolist()
    for r, s, h in zip(eos_rows.tolist(), c.scores[eos_rows, eos_ranks].tolist(), hist):
        sent = live.active[r]
        if len(finished[sent]) < k:
            finished[sent].append(Hypothesis(h, s, s / (len(h) + 1) ** lenpen))


def _advance(c: _Candidates, live: _Live, k: int) -> tuple[Tensor, Tensor]:
    """Keep the k best non-EOS candidates as the live hypotheses; (their tokens (n, k), the decoding
    row each extends, flat (n k,))."""
    n, kc = live.scores.shape
    width = c.scores.shape[1]
    rank = torch.arange(width, device=c.scores.device).expand_as(c.scores) + (c.token == EOS).long() * width
    keep = rank.argsort(dim=1)[:, :k]
    beams = c.beam.gather(1, keep)
    toks = c.token.gather(1, keep)
    # fewer than k non-EOS candidates (a vocabulary smaller than 2k): an EOS candidate that fills a
    # live slot must not be continued past its EOS
    live.scores = c.scores.gather(1, keep).masked_fill(toks == EOS, float("-inf"))
    history = live.history.gather(1, beams.unsqueeze(-1).expand(-1, -1, live.history.shape[2]))
    live.history = torch.cat([history, toks[..., None]], 2)
    flat = (torch.arange(n, device=c.scores.device).unsqueeze(1) * kc + beams).view(-1)
    return toks, flat


def _drop(live: _Live, done: list[bool], toks: Tensor, flat: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """Remove the sentences that are ``done`` from ``live``; their rows of toks (n, k) and flat (n k,)."""
    n = len(done)
    rows = torch.tensor([r for r in range(n) if not done[r]], dtype=torch.long, device=toks.device)
    live.active = [live.active[r] for r in rows.tolist()]
    live.scores, live.history, live.limit = live.scores[rows], live.history[rows], live.limit[rows]
    return toks[rows], flat.view(n, k)[rows].reshape(-1)


def _reorder(model: IncrementalDecoder, state: DecodingState, flat: Tensor, keep_source: bool) -> DecodingState:
    """The decoding state of rows ``flat``; with ``keep_source`` (every row still decodes its own
    sentence) the model's source-only entries stay as they are."""
    source_keys = model.source_state_keys
    if source_keys and keep_source:
        moved = model.reorder_state({key: v for key, v in state.items() if key not in source_keys}, flat)
        return {**moved, **{key: state[key] for key in source_keys}}
    return model.reorder_state(state, flat)


@torch.no_grad()
def beam_search(
    model: IncrementalDecoder,
    src: Tensor,
    *,
    beam: int = 5,
    lenpen: float = 1.0,
    max_len_ratio: float = 1.5,
    max_len_extra: int = 10,
) -> list[Hypothesis]:
    """Batched beam search of width ``beam`` over every row of src (B, S); the best hypothesis of each."""
    if beam < 1:
        raise ValueError(f"beam={beam} must be >= 1")
    dev = src.device
    b, k = src.shape[0], beam
    limit = max_lengths(src, max_len_ratio, max_len_extra, _position_cap(model)).to(dev)
    # The first step decodes one row per sentence (its k beams would all be the same BOS prefix);
    # the state is expanded to k rows per sentence by the first reorder.
    state = model.start(src)
    live = _Live(
        active=list(range(b)),
        scores=torch.zeros((b, 1), dtype=torch.float32, device=dev),
        history=torch.empty((b, 1, 0), dtype=torch.long, device=dev),
        limit=limit,
    )
    prev = torch.full((b,), BOS, dtype=torch.long, device=dev)
    finished: list[list[Hypothesis]] = [[] for _ in range(b)]
    t = 0
    while live.active:
        lp, state = model.next_logprobs(prev, state)
        kc = live.scores.shape[1]  # rows per sentence now: 1 at the first step, then k
        cand = _candidates(lp, live, k, t)
        _finish(cand, live, finished, k, lenpen)
        done = [len(finished[sent]) >= k or bool(live.limit[r] <= t) for r, sent in enumerate(live.active)]
        toks, flat = _advance(cand, live, k)
        if any(done):
            toks, flat = _drop(live, done, toks, flat, k)
        if not live.active:
            break
        state = _reorder(model, state, flat, keep_source=not any(done) and kc == k)
        prev = toks.reshape(-1)
        t += 1
    return [max(f, key=lambda h: h.normalized) for f in finished]


def translate_ids(
    model: IncrementalDecoder,
    src: Tensor,
    *,
    beam: int = 5,
    lenpen: float = 1.0,
    max_len_ratio: float = 1.5,
    max_len_extra: int = 10,
) -> list[list[int]]:
    """Best output ids of every row of src (B, S): greedy when beam == 1, else beam search."""
    if beam == 1:
        hyps = greedy(model, src, max_len_ratio=max_len_ratio, max_len_extra=max_len_extra)
    else:
        hyps = beam_search(
            model, src, beam=beam, lenpen=lenpen, max_len_ratio=max_len_ratio, max_len_extra=max_len_extra
        )
    return [h.tokens for h in hyps]

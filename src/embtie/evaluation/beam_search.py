"""Greedy and batched beam search over any ``Seq2Seq`` model.

Both searches drive the model incrementally through ``start(src)``, ``next_logprobs(prev, state)``
and ``reorder_state(state, index)`` (see ``embtie.models.seq2seq``), so they run wherever the model
runs (CPU or GPU). A sentence's output has at most ``floor(max_len_ratio * S + max_len_extra)``
tokens before its EOS, S being its source length (EOS included); at that length EOS is forced.

Beam search follows fairseq: each step keeps the 2K best extensions of the K live hypotheses; those
ending in EOS within the first K ranks are finished with score ``sum log p / (length + 1) ** lenpen``
(length + 1 counts the EOS); the K best others stay live. A sentence is done once it has K finished
hypotheses (or at its maximum length); its best finished hypothesis is returned. With K = 1 this is
exactly greedy search.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from embtie.data.subwords import BOS, EOS, PAD


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


def _position_cap(model) -> int | None:
    """Longest output the model's positions allow (BOS takes position 0), if it has a limit."""
    mp = getattr(getattr(model, "config", None), "max_positions", None)
    return None if mp is None else mp - 1


@torch.no_grad()
def greedy(model, src: Tensor, *, max_len_ratio: float = 1.5, max_len_extra: int = 10) -> list[Hypothesis]:
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


@torch.no_grad()
def beam_search(
    model,
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
    limit_all = max_lengths(src, max_len_ratio, max_len_extra, _position_cap(model)).to(dev)
    # The first step decodes one row per sentence (its k beams would all be the same BOS prefix);
    # the state is expanded to k rows per sentence by the first reorder.
    state = model.start(src)
    source_keys = getattr(model, "source_state_keys", ())
    scores = torch.zeros((b, 1), dtype=torch.float32, device=dev)
    history = torch.empty((b, 1, 0), dtype=torch.long, device=dev)
    prev = torch.full((b,), BOS, dtype=torch.long, device=dev)
    active = list(range(b))  # original sentence id of each remaining row
    limit = limit_all
    finished: list[list[Hypothesis]] = [[] for _ in range(b)]
    t = 0
    while active:
        lp, state = model.next_logprobs(prev, state)
        n, v = len(active), lp.shape[-1]
        kc = scores.shape[1]  # rows per sentence now: 1 at the first step, then k
        force = (limit <= t).view(n, 1)
        if bool(force.any()):  # rows at their length limit may only end: everything but EOS is -inf
            rows = force.expand(n, kc).reshape(-1, 1)
            lp = lp.masked_fill(rows & (torch.arange(v, device=dev) != EOS), float("-inf"))
        # The 2k best of the kc x V continuations of a sentence are among the 2k best tokens of each
        # beam's row: rank those (n kc, 2k) only, instead of adding the scores to all (n kc, V) entries.
        per = min(2 * k, v)
        row_s, row_i = row_topk(lp, per)
        cand = (row_s.view(n, kc, per) + scores.unsqueeze(-1)).view(n, kc * per)
        top_s, pos = cand.topk(min(2 * k, kc * per), dim=1)
        src_beam, tok = pos // per, row_i.view(n, kc * per).gather(1, pos)
        if top_s.shape[1] < k:  # a vocabulary smaller than the beam at the first step: -inf fillers
            pad = k - top_s.shape[1]
            top_s = torch.cat([top_s, top_s.new_full((n, pad), float("-inf"))], 1)
            src_beam = torch.cat([src_beam, src_beam.new_zeros((n, pad))], 1)
            tok = torch.cat([tok, tok.new_full((n, pad), EOS)], 1)
        is_eos = tok == EOS

        # Finish: EOS candidates ranked within the first k.
        eos_rows, eos_ranks = torch.nonzero(is_eos[:, :k] & torch.isfinite(top_s[:, :k]), as_tuple=True)
        if len(eos_rows):
            hist = history[eos_rows, src_beam[eos_rows, eos_ranks]].tolist()
            for r, s, h in zip(eos_rows.tolist(), top_s[eos_rows, eos_ranks].tolist(), hist):
                sent = active[r]
                if len(finished[sent]) < k:
                    finished[sent].append(Hypothesis(h, s, s / (len(h) + 1) ** lenpen))
        done = [len(finished[active[r]]) >= k or bool(limit[r] <= t) for r in range(n)]

        # Continue: the k best non-EOS candidates.
        rank = torch.arange(top_s.shape[1], device=dev).expand_as(top_s) + is_eos.long() * top_s.shape[1]
        keep = rank.argsort(dim=1)[:, :k]
        scores = top_s.gather(1, keep)
        beams = src_beam.gather(1, keep)
        toks = tok.gather(1, keep)
        # fewer than k non-EOS candidates (a vocabulary smaller than 2k): an EOS candidate that fills a
        # live slot must not be continued past its EOS
        scores = scores.masked_fill(toks == EOS, float("-inf"))
        history = torch.cat(
            [history.gather(1, beams.unsqueeze(-1).expand(-1, -1, history.shape[2])), toks[..., None]], 2
        )
        flat = (torch.arange(n, device=dev).unsqueeze(1) * kc + beams).view(-1)

        if any(done):
            rows = torch.tensor([r for r in range(n) if not done[r]], dtype=torch.long, device=dev)
            active = [active[r] for r in rows.tolist()]
            scores, history, toks, limit = scores[rows], history[rows], toks[rows], limit[rows]
            flat = flat.view(n, k)[rows].reshape(-1)
        if not active:
            break
        if source_keys and not any(done) and kc == k:
            # Every row still decodes its own sentence: source-only entries stay as they are.
            moved = model.reorder_state({k: v for k, v in state.items() if k not in source_keys}, flat)
            state = {**moved, **{k: state[k] for k in source_keys}}
        else:
            state = model.reorder_state(state, flat)
        prev = toks.reshape(-1)
        t += 1
    return [max(f, key=lambda h: h.normalized) for f in finished]


def translate_ids(
    model,
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

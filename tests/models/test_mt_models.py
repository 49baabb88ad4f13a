"""Translation models: incremental decoding equals full decoding, beam 1 equals greedy, tying."""

import pytest
import torch

from embtie import sharing
from embtie.evaluation.beam_search import beam_search, greedy
from embtie.models.rnn_mt import RNNMT, RNNMTConfig
from embtie.models.seq2seq import PlainEmbedding
from embtie.models.transformer_mt import TransformerMT, TransformerMTConfig

V = 23


def make(kind: str, *, pre_norm: bool = True, joint: bool = True, strategy: str = "tied"):
    torch.manual_seed(0)
    tgt = sharing.build(strategy, vocab_size=V, dim=16)
    src = tgt if joint else PlainEmbedding(V + 5, 16)
    if kind == "transformer":
        cfg = TransformerMTConfig(
            dim=16, enc_layers=2, dec_layers=2, heads=2, ffn_dim=32, dropout=0.1, pre_norm=pre_norm
        )
        model = TransformerMT(cfg, tgt, src)
    else:
        model = RNNMT(
            RNNMTConfig(dim=16, enc_hidden=12, dec_hidden=20, dec_layers=2, attn_dim=8, dropout=0.1), tgt, src
        )
    return model.eval()


def batch():
    g = torch.Generator().manual_seed(1)
    src = torch.randint(4, V, (3, 7), generator=g)
    src[1, 5:] = 0  # padding
    src[2, 3:] = 0
    tgt_in = torch.randint(4, V, (3, 6), generator=g)
    tgt_in[:, 0] = 2
    return src, tgt_in


@pytest.mark.parametrize(
    "kind,pre_norm", [("transformer", True), ("transformer", False), ("rnn", True)], ids=["pre", "post", "rnn"]
)
def test_incremental_decoding_equals_full_decoding(kind, pre_norm):
    model = make(kind, pre_norm=pre_norm)
    src, tgt_in = batch()
    full = model(src, tgt_in)
    state = model.start(src)
    steps = []
    for t in range(tgt_in.shape[1]):
        h, state = model.step(tgt_in[:, t], state)
        steps.append(h)
    assert torch.allclose(torch.stack(steps, 1), full, atol=1e-5)


def test_padding_does_not_change_the_encoding():
    model = make("transformer")
    src, tgt_in = batch()
    h_batch = model(src, tgt_in)
    n = int((src[2] != 0).sum())
    h_alone = model(src[2:3, :n], tgt_in[2:3])
    assert torch.allclose(h_batch[2:3], h_alone, atol=1e-5)


@pytest.mark.parametrize("kind", ["transformer", "rnn"])
def test_beam_one_equals_greedy_on_a_model(kind):
    model = make(kind, joint=False, strategy="untied")
    src, _ = batch()
    g = greedy(model, src, max_len_ratio=1.0, max_len_extra=3)
    b = beam_search(model, src, beam=1, max_len_ratio=1.0, max_len_extra=3)
    assert [h.tokens for h in g] == [h.tokens for h in b]
    assert [h.score for h in g] == pytest.approx([h.score for h in b], abs=1e-4)


def test_beam_score_is_the_models_log_probability():
    model = make("transformer")
    src, _ = batch()
    hyps = beam_search(model, src, beam=3, max_len_ratio=1.0, max_len_extra=2)
    for i, h in enumerate(hyps):
        tgt_in = torch.tensor([[2, *h.tokens]])
        lp = torch.log_softmax(model.sharing.logits(model(src[i : i + 1], tgt_in)).float(), -1)[0]
        ref = lp.gather(1, torch.tensor([*h.tokens, 3])[:, None]).sum().detach()
        assert h.score == pytest.approx(float(ref), abs=1e-3)


def test_three_way_tying_is_one_tensor_and_separate_vocabularies_are_not():
    tied = make("transformer", joint=True)
    assert tied.src_embed.weight is tied.sharing.weight
    n_tied = sum(p.numel() for p in tied.parameters())
    sep = make("transformer", joint=False)
    assert sep.src_embed.weight.shape == (V + 5, 16)
    assert sum(p.numel() for p in sep.parameters()) == n_tied + (V + 5) * 16

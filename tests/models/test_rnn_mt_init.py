"""The `multi30k-rnn-small` preset starts its LSTMs at a useful scale, and padding does not leak.

Tied embeddings are initialised with std 1/sqrt(d); unscaled, they would feed the LSTMs token vectors
of std 1/16 (d = 256), so the encoder memory, the decoder state and h_t = tanh(W_o[s_t; c_t]) would
all start near zero and the first few hundred Adam steps would go into growing the scale (see the
preset's comment). The preset scales input embeddings by sqrt(d), as the transformer preset does.
"""

import torch

from embtie import sharing
from embtie.config import load_config
from embtie.models.rnn_mt import RNNMT, RNNMTConfig


def _preset_model(vocab_size: int = 600) -> RNNMT:
    cfg = load_config("multi30k-rnn-small")
    torch.manual_seed(0)
    s = sharing.build(cfg.sharing.name, vocab_size=vocab_size, dim=cfg.model.dim, **cfg.sharing.options)
    return RNNMT(cfg.model, s).eval()


def test_preset_feeds_the_lstms_unit_scale_token_vectors():
    model = _preset_model()
    ids = torch.randint(4, 600, (8, 12), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        x = model.sharing.embed(ids)
    assert 0.5 < float(x.std()) < 2.0  # unscaled: 1/sqrt(256) = 0.0625


def test_preset_signal_reaches_the_encoder_memory():
    model = _preset_model()
    g = torch.Generator().manual_seed(2)
    src = torch.randint(4, 600, (8, 12), generator=g)
    with torch.no_grad():
        memory = model.start(src)["memory"]
    assert float(memory.std()) > 0.1  # about 0.03 with unscaled embeddings


def test_rnn_padding_does_not_change_the_outputs():
    torch.manual_seed(0)
    s = sharing.build("tied", vocab_size=23, dim=16)
    model = RNNMT(RNNMTConfig(dim=16, enc_hidden=12, dec_hidden=20, attn_dim=8, dropout=0.0), s).eval()
    g = torch.Generator().manual_seed(3)
    src = torch.randint(4, 23, (1, 5), generator=g)
    tgt_in = torch.randint(4, 23, (1, 4), generator=g)
    padded = torch.cat([src, torch.zeros(1, 4, dtype=torch.long)], dim=1)
    with torch.no_grad():
        a = model(src, tgt_in)
        b = model(padded, tgt_in)
    assert torch.allclose(a, b, atol=1e-5)

"""Every vocabulary table (sharing object or a separate encoder embedding) gets embedding_weight_decay."""

from torch import nn

from embtie import sharing
from embtie.config import TrainConfig
from embtie.models.seq2seq import PlainEmbedding
from embtie.optim import param_groups


def test_separate_encoder_embedding_is_in_the_embedding_group():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.sharing = sharing.build("tied-proj", vocab_size=50, dim=8, bias=True)
            self.src_embed = PlainEmbedding(40, 8)
            self.body = nn.Linear(8, 8)

    m = Model()
    cfg = TrainConfig(weight_decay=0.1, embedding_weight_decay=0.01)
    groups = {g["name"]: g for g in param_groups(m, cfg)}
    emb = {id(p) for p in groups["embedding"]["params"]}
    assert emb == {id(m.sharing.weight), id(m.src_embed.weight)}
    assert groups["embedding"]["weight_decay"] == 0.01
    decay = {id(p) for p in groups["decay"]["params"]}
    assert decay == {id(m.sharing.proj.weight), id(m.body.weight)}
    no_decay = {id(p) for p in groups["no_decay"]["params"]}
    assert no_decay == {id(m.sharing.bias), id(m.body.bias)}

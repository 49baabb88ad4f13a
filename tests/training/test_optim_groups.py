"""Every vocabulary table (sharing object or a separate encoder embedding) gets embedding_weight_decay."""

from torch import nn

from embtie import sharing
from embtie.config import TrainConfig
from embtie.models.seq2seq import PlainEmbedding
from embtie.training.optim import param_groups


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


def test_logit_scale_lr_gives_the_learned_scale_its_own_learning_rate():
    import pytest
    import torch

    from embtie.errors import ConfigError
    from embtie.training.optim import build_optimizer, set_lr

    torch.manual_seed(0)
    head = sharing.build("fixed", vocab_size=50, dim=8, logit_scale="learned", logit_scale_lr=30)
    cfg = TrainConfig(lr=1e-3, weight_decay=0.1)
    groups = {g["name"]: g for g in param_groups(head, cfg)}
    assert [p is head.logit_scale_param for p in groups["lr_x30"]["params"]] == [True]
    assert groups["lr_x30"]["weight_decay"] == 0.0 and groups["lr_x30"]["lr_mult"] == 30.0
    opt = build_optimizer(head, cfg)
    set_lr(opt, 1e-3)
    lrs = {g["name"]: g["lr"] for g in opt.param_groups}
    assert lrs["lr_x30"] == pytest.approx(0.03) and lrs["embedding"] == pytest.approx(1e-3)
    # Adam's first step moves each parameter by lr (sign of its gradient): 0.03 for the scale
    h, t = torch.randn(16, 8), torch.randint(0, 50, (16,))
    before = head.logit_scale_param.item()
    head.loss(h, t).backward()
    opt.step()
    assert abs(head.logit_scale_param.item() - before) == pytest.approx(0.03, rel=1e-3)
    # without the option the scale stays in no_decay with train.lr
    plain = sharing.build("fixed", vocab_size=50, dim=8, logit_scale="learned")
    names = [g["name"] for g in param_groups(plain, cfg)]
    assert not any(n.startswith("lr_x") for n in names)
    with pytest.raises(ConfigError, match="logit_scale_lr=30 needs logit_scale=learned"):
        sharing.build("fixed", vocab_size=50, dim=8, logit_scale_lr=30)

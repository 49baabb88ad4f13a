"""resize_token_embeddings on a patched model grows or shrinks the one sharing object: every existing row
(E, an untied O, the bias, fixed targets) kept bit-exactly, new fixed rows drawn fresh, tying intact."""

import pytest
import torch

pytest.importorskip("transformers")

import embtie.hf as eh
from embtie.hf.tiny import tiny_model

V = 80


@pytest.mark.parametrize(("strategy", "options"), [("fixed", {"bias": True}), ("untied", {}), ("ngpt", {})])
def test_grow_keeps_every_row_and_the_old_logits(strategy, options):
    torch.manual_seed(0)
    model = eh.apply(tiny_model("gpt2", V), strategy, **options)
    old = {k: v.clone() for k, v in eh.sharing_of(model).state_dict().items()}
    ids = torch.randint(3, V, (2, 7))
    with torch.no_grad():
        before = model(input_ids=ids).logits
    emb = model.resize_token_embeddings(V + 20)
    s = eh.sharing_of(model)
    assert emb is model.get_input_embeddings() and emb.sharing is s and model.get_output_embeddings().sharing is s
    assert s.vocab_size == V + 20 and model.config.vocab_size == V + 20 == model.config.embtie["vocab_size"]
    for name, t in s.state_dict().items():
        if t.shape == old[name].shape:
            assert torch.equal(t, old[name]), name
        else:
            assert t.shape[0] == V + 20 and torch.equal(t[:V], old[name]), name
    with torch.no_grad():
        after = model(input_ids=ids).logits
    assert after.shape[-1] == V + 20
    torch.testing.assert_close(after[..., :V], before, rtol=0, atol=0)
    # mean resizing: new learned rows sit at the old rows' mean
    torch.testing.assert_close(s.weight[V:], old["weight"].mean(0).expand(20, -1), rtol=0, atol=1e-4)
    if strategy == "fixed":
        new_rows = s.fixed_weight[V:]
        torch.testing.assert_close(new_rows.norm(dim=1), torch.ones(20))  # drawn like the others: unit rows
        assert torch.linalg.matrix_rank(s.fixed_weight[V - 5 :].T @ s.fixed_weight[V - 5 :]) > 5  # not copies


def test_shrink_keeps_the_prefix_and_generation_works():
    torch.manual_seed(1)
    model = eh.apply(tiny_model("llama", V), "fixed", target_dim=16)
    t = eh.sharing_of(model).fixed_weight.clone()
    w = eh.sharing_of(model).weight.clone()
    model.resize_token_embeddings(60)
    s = eh.sharing_of(model)
    assert torch.equal(s.fixed_weight, t[:60]) and torch.equal(s.weight, w[:60])
    assert [n for n, p in model.named_parameters() if p.shape[0] == 60] == ["embtie_sharing.weight"]
    out = model.generate(torch.randint(3, 60, (1, 4)), max_new_tokens=5, do_sample=False)
    assert out.shape == (1, 9) and int(out.max()) < 60


def test_pad_to_multiple_and_marian_vocab_sizes(tmp_path):
    torch.manual_seed(2)
    model = eh.apply(tiny_model("marian", V), "l2norm")
    model.resize_token_embeddings(83, pad_to_multiple_of=16, mean_resizing=False)
    s = eh.sharing_of(model)
    assert s.vocab_size == 96 and model.config.vocab_size == 96 and model.config.decoder_vocab_size == 96
    ids = torch.randint(3, 96, (2, 5))
    with torch.no_grad():
        logits = model(input_ids=ids, decoder_input_ids=ids).logits
    assert logits.shape == (2, 5, 96)
    # a resized model saves and loads like any other
    model.save_pretrained(tmp_path)
    loaded = eh.load(tmp_path)
    with torch.no_grad():
        assert torch.equal(loaded(input_ids=ids, decoder_input_ids=ids).logits, logits)

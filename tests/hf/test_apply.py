"""embtie.hf.apply on tiny random transformers models: exact reproduction with `tied`, the strategies'
formulas on both sides, one shared object, and the model's embedding conventions made explicit."""

import copy
import math
import re

import pytest
import torch

pytest.importorskip("transformers")

import embtie.hf as eh
from embtie import sharing
from embtie.errors import ConfigError
from embtie.hf.modules import EmbtieEmbedding, EmbtieHead
from embtie.hf.tiny import tiny_model

V = 80
ENC_DEC = ("marian", "bart")


def _inputs(model_type, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, V, (2, 9), generator=g)
    if model_type in ENC_DEC:
        return {"input_ids": ids, "decoder_input_ids": torch.randint(3, V, (2, 7), generator=g)}
    return {"input_ids": ids}


def _hidden(model, kw):
    """(B, T, d) final hidden states from the model's body (after its final norm)."""
    return model.base_model(**kw).last_hidden_state


@pytest.mark.parametrize(
    ("model_type", "overrides"),
    [
        ("gpt2", {}),
        ("llama", {"tie_word_embeddings": True}),
        ("qwen2", {"tie_word_embeddings": True}),
        ("mistral", {"tie_word_embeddings": True}),
        ("qwen3", {"tie_word_embeddings": True}),
        ("gpt_neox", {"tie_word_embeddings": True}),
        ("marian", {}),
        ("bart", {}),
    ],
)
def test_tied_reproduces_the_unpatched_logits_exactly(model_type, overrides):
    torch.manual_seed(0)
    ref = tiny_model(model_type, V, **overrides)
    kw = _inputs(model_type)
    with torch.no_grad():
        expected = ref(**kw).logits
        patched = eh.apply(copy.deepcopy(ref), "tied")
        got = patched(**kw).logits
    assert got.shape == expected.shape
    assert torch.equal(got, expected), (got - expected).abs().max().item()


def test_untied_reproduces_an_untied_llama_exactly():
    torch.manual_seed(0)
    ref = tiny_model("llama", V, tie_word_embeddings=False)
    assert ref.lm_head.weight is not ref.model.embed_tokens.weight
    kw = _inputs("llama")
    with torch.no_grad():
        expected = ref(**kw).logits
        patched = eh.apply(copy.deepcopy(ref), "untied")
        assert torch.equal(patched(**kw).logits, expected)
        tied = eh.apply(copy.deepcopy(ref), "tied")
    assert any("not used" in c for c in tied.config.embtie["conventions"])


def _normalize(w):
    return w / w.norm(dim=-1, keepdim=True)


# logits of each strategy computed by hand from its tensors (h: (..., d))
HAND_LOGITS = {
    "tied": lambda s, h: h @ s.weight.T,
    "l2norm": lambda s, h: h @ _normalize(s.weight).T,
    "cosine": lambda s, h: (h @ s.weight.T) / s.weight.norm(dim=-1),
    "sqnorm": lambda s, h: (h @ s.weight.T) / s.weight.pow(2).sum(-1),
    "distance": lambda s, h: h @ s.weight.T - 0.5 * s.weight.pow(2).sum(-1),
    "fixed": lambda s, h: h @ s.fixed_weight.T,
    "untied": lambda s, h: h @ s.out_weight.T,
}


@pytest.mark.parametrize("model_type", ["gpt2", "llama", "marian"])
@pytest.mark.parametrize("strategy", [n for n in sharing.names() if sharing.get(n).flat_table])
def test_every_strategy_gives_its_formula(model_type, strategy):
    torch.manual_seed(1)
    model = eh.apply(tiny_model(model_type, V), strategy)
    s = eh.sharing_of(model)
    kw = _inputs(model_type)
    with torch.no_grad():
        logits = model(**kw).logits
        h = _hidden(model, kw)
        torch.testing.assert_close(logits, s.logits(h), rtol=0, atol=0)
        if strategy in HAND_LOGITS:
            torch.testing.assert_close(logits, HAND_LOGITS[strategy](s, h), rtol=1e-5, atol=1e-5)
        ids = kw["input_ids"]
        torch.testing.assert_close(model.get_input_embeddings()(ids), s.embed(ids), rtol=0, atol=0)


def test_l2norm_feeds_the_body_normalized_rows():
    """The input side of l2norm: the body sees e_i / ||e_i|| (exactly what the unpatched body computes from it)."""
    torch.manual_seed(2)
    ref = tiny_model("gpt2", V)
    patched = eh.apply(copy.deepcopy(ref), "l2norm")
    ids = _inputs("gpt2")["input_ids"]
    with torch.no_grad():
        e = ref.transformer.wte.weight
        h_ref = ref.transformer(inputs_embeds=_normalize(e)[ids]).last_hidden_state
        torch.testing.assert_close(patched(input_ids=ids).logits, h_ref @ _normalize(e).T, rtol=1e-5, atol=1e-5)


def test_marian_scale_moves_into_the_sharing_object_and_all_three_tables_are_one():
    torch.manual_seed(3)
    ref = tiny_model("marian", V)
    d = ref.config.d_model
    assert ref.model.encoder.embed_scale == math.sqrt(d)
    model = eh.apply(copy.deepcopy(ref), "l2norm")
    s = eh.sharing_of(model)
    rec = model.config.embtie
    assert rec["options"]["embed_scale"] == "sqrt_d" and s.embed_scale == math.sqrt(d)
    assert model.model.encoder.embed_scale == 1.0 and model.model.decoder.embed_scale == 1.0
    assert any("embed_scale" in c for c in rec["conventions"])
    assert sorted(rec["input_paths"]) == ["model.decoder.embed_tokens", "model.encoder.embed_tokens", "model.shared"]
    mods = {id(model.model.shared), id(model.model.encoder.embed_tokens), id(model.model.decoder.embed_tokens)}
    assert len(mods) == 1 and isinstance(model.model.shared, EmbtieEmbedding)
    assert isinstance(model.lm_head, EmbtieHead) and model.lm_head.sharing is s
    # the (V, d) table exists exactly once among the parameters: E of the sharing object
    vocab_tables = [n for n, p in model.named_parameters() if p.shape == (V, d)]
    assert vocab_tables == ["embtie_sharing.weight"]
    # input vectors: sqrt(d) * e_i / ||e_i||
    ids = torch.tensor([[5, 6, 7]])
    torch.testing.assert_close(model.model.shared(ids), math.sqrt(d) * _normalize(s.weight)[ids])


def test_nonzero_final_logits_bias_becomes_the_sharing_bias():
    torch.manual_seed(4)
    ref = tiny_model("marian", V)
    with torch.no_grad():
        ref.final_logits_bias.normal_()
    kw = _inputs("marian")
    with torch.no_grad():
        expected = ref(**kw).logits
        model = eh.apply(copy.deepcopy(ref), "tied")
        got = model(**kw).logits
    s = eh.sharing_of(model)
    assert s.bias is not None and torch.equal(s.bias, ref.final_logits_bias[0])
    assert model.final_logits_bias.shape == (1, 1) and not model.final_logits_bias.any()
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-6)


def test_gradients_reach_the_one_shared_matrix_from_both_sides():
    torch.manual_seed(5)
    model = eh.apply(tiny_model("gpt2", V), "tied").train()
    s = eh.sharing_of(model)
    ids = _inputs("gpt2")["input_ids"]
    assert [n for n, p in model.named_parameters() if p.shape == s.weight.shape] == ["embtie_sharing.weight"]
    model(input_ids=ids, labels=ids).loss.backward()
    g = s.weight.grad
    # rows of tokens never seen in the input still get gradient through the output side
    unseen = torch.ones(V, dtype=torch.bool)
    unseen[ids.flatten()] = False
    assert g[unseen].abs().sum() > 0 and g[ids.flatten()].abs().sum() > 0


def test_refusals_are_one_line_config_errors():
    transformers = pytest.importorskip("transformers")
    model = tiny_model("gpt2", V)
    with pytest.raises(ConfigError, match="unknown strategy"):
        eh.apply(copy.deepcopy(model), "nope")
    with pytest.raises(ConfigError, match="unknown option"):
        eh.apply(copy.deepcopy(model), "tied", colour="red")
    eh.apply(model, "tied")
    with pytest.raises(ConfigError, match="already uses embtie strategy 'tied'"):
        eh.apply(model, "l2norm")
    bert = transformers.BertForMaskedLM(
        transformers.BertConfig(
            vocab_size=V, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64
        )
    )
    with pytest.raises(ConfigError, match="supported model types"):
        eh.apply(bert, "tied")
    with pytest.raises(ConfigError, match="no embtie sharing object"):
        eh.sharing_of(bert)


def test_strategies_without_a_flat_table_or_with_factors_are_refused_in_one_line():
    for strategy, opts, words in (("adaptive", {}, "no single (V, d) embedding table"),
                                  ("tied", {"factor_rank": 4}, "factor_rank is not supported")):  # fmt: skip
        model = tiny_model("gpt2")
        with pytest.raises(ConfigError, match=re.escape(words)) as e:
            eh.apply(model, strategy, **opts)
        assert "\n" not in str(e.value)

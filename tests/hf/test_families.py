"""The families people tie (gemma, gemma2, gemma3 text, phi3, olmo2, smollm3, t5) under embtie.hf: `tied`
reproduces the stock model's logits and loss exactly with its conventions made explicit (Gemma's sqrt(d)
embedding scale, Gemma 2/3's final-logit soft cap, T5's d^-0.5 decoder rescale), and apply -> save -> load ->
export -> stock reload (transformers alone, embtie not importable) gives the same logits."""

import copy
import json
import math
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")

import embtie.hf as eh
from embtie.hf.tiny import tiny_model
from stock_reload import stock_logits

V = 80
TOL = 1e-5
NEW = ["gemma", "gemma2", "gemma3_text", "phi3", "olmo2", "smollm3", "t5"]
OVERRIDES = {"gemma3_text": {"final_logit_softcapping": 20.0}}  # gemma3's default has no cap: test one


def _stock(model_type: str, **extra):
    torch.manual_seed(0)
    return tiny_model(model_type, V, tie_word_embeddings=True, **OVERRIDES.get(model_type, {}), **extra)


def _inputs(model_type: str) -> dict:
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, V, (2, 9), generator=g)
    if model_type == "t5":
        return {"input_ids": ids, "decoder_input_ids": torch.randint(3, V, (2, 7), generator=g)}
    return {"input_ids": ids}


def _labels(model_type: str, kw: dict) -> torch.Tensor:
    return kw["decoder_input_ids"] if model_type == "t5" else kw["input_ids"]


@pytest.mark.parametrize("model_type", NEW)
def test_tied_reproduces_the_stock_logits_and_loss_exactly(model_type):
    ref = _stock(model_type)
    kw = _inputs(model_type)
    with torch.no_grad():
        want_logits = ref(**kw).logits
        want_loss = ref(**kw, labels=_labels(model_type, kw)).loss
        patched = eh.apply(copy.deepcopy(ref), "tied")
        got_logits = patched(**kw).logits
        got_loss = patched(**kw, labels=_labels(model_type, kw)).loss
    assert torch.equal(got_logits, want_logits), (got_logits - want_logits).abs().max().item()
    assert torch.equal(got_loss, want_loss), (got_loss - want_loss).item()


def test_conventions_are_made_explicit():
    gemma = eh.apply(_stock("gemma"), "tied")
    assert gemma.config.embtie["options"]["embed_scale"] == "sqrt_d"  # Gemma: x = sqrt(d) E[i]
    ids = torch.tensor([[5, 6]])
    e = gemma.embtie_sharing.weight[ids]
    assert torch.equal(gemma.get_input_embeddings()(ids), e * torch.tensor(math.sqrt(32), dtype=torch.float32))
    gemma2 = eh.apply(_stock("gemma2"), "l2norm")
    assert gemma2.embtie_sharing.softcap == 30.0 and gemma2.config.final_logit_softcapping is None
    h = torch.randn(3, 32) * 50
    with torch.no_grad():
        e = gemma2.embtie_sharing.weight
        raw = h @ (e / e.norm(dim=1, keepdim=True)).T
        z = gemma2.get_output_embeddings()(h)
    assert torch.allclose(z, 30.0 * torch.tanh(raw / 30.0), atol=1e-5)  # capped once, by the sharing object
    assert float(raw.abs().max()) > 60.0  # the cap mattered
    t5 = eh.apply(_stock("t5"), "tied")
    assert any("d_model^-0.5" in c for c in t5.config.embtie["conventions"])


def _trained_like(model_type: str, strategy: str):
    torch.manual_seed(1)
    model = eh.apply(_stock(model_type), strategy)
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.add_(torch.randn_like(p) * 0.05)
    return model


CASES = [(mt, "l2norm") for mt in NEW] + [(mt, "cosine") for mt in ("gemma2", "gemma3_text", "olmo2")]


@pytest.fixture(scope="module")
def round_trips(tmp_path_factory):
    """apply -> perturb -> save_pretrained -> embtie.hf.load -> export, for each case; the exported folders
    loaded in one clean subprocess. {dir: (patched logits, loaded logits, stock reload)}."""
    root = tmp_path_factory.mktemp("families")
    jobs, expected = [], {}
    for mt, strategy in CASES:
        model = _trained_like(mt, strategy)
        kw = _inputs(mt)
        saved, out = root / f"{mt}-{strategy}-saved", root / f"{mt}-{strategy}"
        model.save_pretrained(saved)
        loaded = eh.load(saved)
        with torch.no_grad():
            expected[str(out)] = (model(**kw).logits, loaded(**kw).logits)
        eh.export(loaded, out)
        jobs.append({"dir": str(out), "seq2seq": mt == "t5", "inputs": {k: v.tolist() for k, v in kw.items()}})
    got = stock_logits(jobs)
    return {d: (*expected[d], got[d]) for d in expected}


def test_apply_save_load_export_stock_reload_gives_the_same_logits(round_trips):
    assert len(round_trips) == len(CASES)
    for d, (patched, loaded, stock) in round_trips.items():
        assert torch.equal(loaded, patched), d
        diff = (torch.tensor(stock["logits"]) - patched).abs().max().item()
        assert diff <= TOL, f"{d}: max |dlogit| {diff:.2e}"
        assert stock["tied"] is d.endswith("l2norm"), d  # l2norm: one matrix; cosine: a scaled head


def test_the_exported_gemma2_and_gemma3_cap_their_logits_themselves(round_trips):
    for mt, cap in (("gemma2", 30.0), ("gemma3_text", 20.0)):
        d = next(k for k in round_trips if k.endswith(f"{mt}-cosine"))
        assert json.loads((Path(d) / "config.json").read_text())["final_logit_softcapping"] == cap
        assert float(torch.tensor(round_trips[d][2]["logits"]).abs().max()) < cap


def test_refusals_say_what_to_do_instead(tmp_path):
    model = eh.apply(tiny_model("llama", V), "tied", softcap=30.0)
    with pytest.raises(eh.NotFoldableError) as e:
        eh.export(model, tmp_path / "llama")
    assert "gemma2" in str(e.value) and "\n" not in str(e.value)
    t5 = _trained_like("t5", "cosine")
    with pytest.raises(eh.NotFoldableError) as e:
        eh.export(t5, tmp_path / "t5")
    assert "always ties" in str(e.value) and "l2norm" in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "t5").exists() and not (tmp_path / "llama").exists()

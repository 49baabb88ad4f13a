"""save_pretrained -> embtie.hf.load gives back the same model: identical logits for every strategy, fixed
target matrices bit-exactly (never re-drawn), and input and output still one tensor."""

import copy
import json
import subprocess
import sys
import textwrap

import pytest
import torch
from safetensors.torch import load_file

pytest.importorskip("transformers")

import embtie.hf as eh
from embtie import sharing
from embtie.errors import DataError
from embtie.hf.tiny import tiny_model

V = 80


def _kw(model_type):
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, V, (2, 8), generator=g)
    return {"input_ids": ids, "decoder_input_ids": ids[:, :6]} if model_type == "marian" else {"input_ids": ids}


def _perturb(model):
    """Move every learned tensor off its init, so a load that re-initialises anything would show."""
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.01)


@pytest.mark.parametrize("strategy", [n for n in sharing.names() if sharing.get(n).flat_table])
def test_save_load_gives_identical_logits_for_every_strategy(strategy, tmp_path):
    torch.manual_seed(0)
    model = eh.apply(tiny_model("gpt2", V), strategy, bias=True)
    _perturb(model)
    kw = _kw("gpt2")
    with torch.no_grad():
        expected = model(**kw).logits
    model.save_pretrained(tmp_path)
    torch.manual_seed(123)  # a load that re-draws anything would draw something else now
    loaded = eh.load(tmp_path)
    assert eh.is_patched(loaded) and loaded.config.embtie["strategy"] == strategy
    with torch.no_grad():
        assert torch.equal(loaded(**kw).logits, expected)
    before, after = eh.sharing_of(model).state_dict(), eh.sharing_of(loaded).state_dict()
    assert before.keys() == after.keys()
    for name in before:
        assert torch.equal(before[name], after[name]), name


@pytest.mark.parametrize("model_type", ["llama", "marian"])
def test_fixed_targets_are_restored_bit_exactly_and_tying_survives(model_type, tmp_path):
    torch.manual_seed(1)
    model = eh.apply(tiny_model(model_type, V), "fixed", target_dim=16)
    t = eh.sharing_of(model).fixed_weight.clone()
    model.save_pretrained(tmp_path)
    saved = load_file(str(tmp_path / "model.safetensors"))
    assert torch.equal(saved["embtie_sharing.fixed_weight"], t)
    assert not [k for k in saved if k.endswith("embed_tokens.weight") or k == "lm_head.weight"]
    loaded = eh.load(tmp_path)
    s = eh.sharing_of(loaded)
    assert torch.equal(s.fixed_weight, t) and not s.fixed_weight.requires_grad
    assert "embtie_sharing.fixed_weight" not in dict(loaded.named_parameters())
    emb, head = loaded.get_input_embeddings(), loaded.get_output_embeddings()
    assert emb.sharing is s and head.sharing is s
    with torch.no_grad():
        torch.testing.assert_close(model(**_kw(model_type)).logits, loaded(**_kw(model_type)).logits, rtol=0, atol=0)


def test_tied_is_one_tensor_after_loading_and_after_training(tmp_path):
    torch.manual_seed(2)
    model = eh.apply(tiny_model("marian", V), "tied")
    model.save_pretrained(tmp_path)
    loaded = eh.load(tmp_path).train()
    s = eh.sharing_of(loaded)
    tables = [loaded.model.shared, loaded.model.encoder.embed_tokens, loaded.model.decoder.embed_tokens]
    assert all(t.weight is s.weight for t in tables) and loaded.lm_head.sharing is s
    opt = torch.optim.SGD(loaded.parameters(), lr=1.0)
    ids = torch.randint(3, V, (2, 6))
    loaded(input_ids=ids, labels=ids).loss.backward()
    before = s.weight.detach().clone()
    opt.step()
    assert not torch.equal(before, s.weight)
    # one update moved the one matrix that all four places read: logits = tied formula on the new E
    loaded.eval()
    with torch.no_grad():
        h = loaded.model(input_ids=ids, decoder_input_ids=ids).last_hidden_state
        torch.testing.assert_close(loaded(input_ids=ids, decoder_input_ids=ids).logits, h @ s.weight.T)
        torch.testing.assert_close(loaded.model.decoder.embed_tokens(ids), s.embed(ids))


def test_saved_config_records_the_strategy_and_loads_in_the_saved_dtype(tmp_path):
    torch.manual_seed(3)
    model = eh.apply(tiny_model("marian", V), "l2norm", logits_with_labels=True).to(torch.bfloat16)
    model.save_pretrained(tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    assert cfg["architectures"] == ["MarianMTModel"]
    rec = cfg["embtie"]
    assert rec["strategy"] == "l2norm" and rec["options"]["embed_scale"] == "sqrt_d"
    assert rec["logits_with_labels"] is True and rec["conventions"]
    loaded = eh.load(tmp_path)
    assert eh.sharing_of(loaded).weight.dtype == torch.bfloat16
    assert torch.equal(eh.sharing_of(loaded).weight, eh.sharing_of(model).weight)
    assert loaded.model.encoder.embed_scale == 1.0


def test_load_refuses_a_plain_checkpoint(tmp_path):
    model = tiny_model("gpt2", V)
    model.save_pretrained(tmp_path)
    with pytest.raises(DataError, match="not saved from a model patched by embtie"):
        eh.load(tmp_path)
    with pytest.raises(DataError, match=r"no config\.json"):
        eh.load(tmp_path / "nowhere")
    patched = eh.apply(copy.deepcopy(model), "tied")
    patched.save_pretrained(tmp_path / "p")
    (tmp_path / "p" / "model.safetensors").unlink()
    with pytest.raises(DataError, match="save the model with"):
        eh.load(tmp_path / "p")


# transformers alone, in `python -I` with every sys.path entry that holds embtie removed (a script that
# never imports embtie): from_pretrained on a patched checkpoint must fail at once, not load a wrong model.
PLAIN_LOADER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    sys.path = [p for p in sys.path if not (Path(p) / "embtie").exists()]
    import transformers
    cls = getattr(transformers, sys.argv[2])
    try:
        cls.from_pretrained(sys.argv[1])
    except Exception as e:
        print(type(e).__name__ + ": " + str(e))
    else:
        print("loaded")
    assert "embtie" not in sys.modules
    """
)


@pytest.mark.parametrize(
    ("model_type", "loader"),
    [("gpt2", "AutoModelForCausalLM"), ("llama", "LlamaForCausalLM"), ("marian", "AutoModelForSeq2SeqLM")],
)
def test_from_pretrained_refuses_a_patched_checkpoint_in_one_line_naming_embtie_load(model_type, loader, tmp_path):
    transformers = pytest.importorskip("transformers")
    model = eh.apply(tiny_model(model_type, V), "l2norm")
    model.save_pretrained(tmp_path / "saved")
    with pytest.raises(ValueError, match=r"embtie\.hf\.load\(path\)") as info:
        getattr(transformers, loader).from_pretrained(tmp_path / "saved")
    assert "\n" not in str(info.value) and "'l2norm'" in str(info.value)
    # transformers' words call the file incorrect; embtie's answer, after them, says what the folder is
    said = str(info.value).split("nothing is wrong with the files: ", 1)
    assert len(said) == 2 and said[1].startswith("this folder is an embtie save")
    assert "the one call that loads it is embtie.hf.load(path)" in said[1]
    # embtie.hf.load reads the folder; the config it gives back is clean, and saving again guards again
    loaded = eh.load(tmp_path / "saved")
    assert "transformers_weights" not in loaded.config.to_dict()
    loaded.save_pretrained(tmp_path / "again")
    with pytest.raises(ValueError, match=r"embtie\.hf\.load"):
        getattr(transformers, loader).from_pretrained(tmp_path / "again")
    # stock weights (embtie.hf.export) load with from_pretrained as before
    eh.export(loaded, tmp_path / "stock")
    assert not eh.is_patched(getattr(transformers, loader).from_pretrained(tmp_path / "stock"))


def test_from_pretrained_refuses_without_embtie_installed(tmp_path):
    eh.apply(tiny_model("gpt2", V), "tied").save_pretrained(tmp_path)
    done = subprocess.run(
        [sys.executable, "-I", "-c", PLAIN_LOADER, str(tmp_path), "AutoModelForCausalLM"],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    printed = done.stdout.strip()
    assert printed.startswith("ValueError:") and "embtie.hf.load(path)" in printed and "\n" not in printed


def test_a_trainer_checkpoint_is_guarded_too(tmp_path):
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    model = eh.apply(tiny_model("gpt2", V), "tied")
    args = transformers.TrainingArguments(output_dir=str(tmp_path / "t"), report_to=[], use_cpu=True)
    transformers.Trainer(model=model, args=args).save_model(str(tmp_path / "saved"))
    with pytest.raises(ValueError, match=r"embtie\.hf\.load"):
        transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "saved")
    assert eh.load(tmp_path / "saved").config.embtie["strategy"] == "tied"

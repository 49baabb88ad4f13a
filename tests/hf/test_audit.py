"""embtie hf-audit: each kind of checkpoint, built here with transformers' save_pretrained, safetensors, peft
and embtie's own save and export, is classified as what it was made to be; "shares storage" agrees with what
from_pretrained actually does; --fix writes a copy that loads with the intended weights and audits
consistent, and never touches the original."""

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

pytest.importorskip("transformers")

import embtie.hf as eh
from embtie.cli import main as cli_main
from embtie.errors import ConfigError
from embtie.hf.audit import COPY_COSINE, VERDICTS, audit
from embtie.hf.audit_fix import repair
from embtie.hf.tiny import tiny_model

V = 80
EMB, HEAD = "model.embed_tokens.weight", "lm_head.weight"
IDS = torch.randint(3, V, (2, 8), generator=torch.Generator().manual_seed(0))


def _llama(tied: bool, seed: int = 0):
    torch.manual_seed(seed)
    return tiny_model("llama", V, tie_word_embeddings=tied)


def _set_flag(folder: Path, tied: bool) -> None:
    config = json.loads((folder / "config.json").read_text())
    config["tie_word_embeddings"] = tied
    (folder / "config.json").write_text(json.dumps(config))


def _rewrite(folder: Path, change) -> None:
    """Apply ``change(state)`` to model.safetensors (a state dict in, the state dict to write out)."""
    state = load_file(str(folder / "model.safetensors"))
    save_file(change(state), str(folder / "model.safetensors"), metadata={"format": "pt"})


def _logits(model) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=IDS).logits


def _from_pretrained(folder: Path):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(folder)).eval()


def _shares(model) -> bool:
    return model.get_input_embeddings().weight is model.get_output_embeddings().weight


def _diverged(root: Path):
    """transformers #45127: an untied model saved with tie_word_embeddings=True over two different matrices."""
    model = _llama(tied=False)
    model.save_pretrained(root)
    _set_flag(root, True)
    return model


def _missing_key(root: Path):
    """A tied model whose file holds the matrix under the head's key only (as some converters write it)."""
    model = _llama(tied=True)
    model.save_pretrained(root)
    _rewrite(root, lambda s: {(HEAD if k == EMB else k): v for k, v in s.items()})
    return model


def _untied_in_config(root: Path):
    """A tied save (one matrix stored) whose config says tie_word_embeddings=False."""
    model = _llama(tied=True)
    model.save_pretrained(root)
    _set_flag(root, False)
    return model


def _equal_copies(root: Path):
    model = _llama(tied=False)
    with torch.no_grad():
        model.lm_head.weight.copy_(model.model.embed_tokens.weight)
    model.save_pretrained(root)
    return model


def _peft_merged(root: Path):
    """peft #2777: modules_to_save=["lm_head"] on a tied model trains a copy of the head, merge_and_unload
    leaves it untied (and peft sets tie_word_embeddings=False)."""
    peft = pytest.importorskip("peft")
    base = _llama(tied=True)
    wrapped = peft.get_peft_model(base, peft.LoraConfig(r=2, target_modules=["q_proj"], modules_to_save=["lm_head"]))
    optimizer = torch.optim.SGD([p for p in wrapped.parameters() if p.requires_grad], lr=0.5)
    for _ in range(3):
        optimizer.zero_grad()
        wrapped(input_ids=IDS, labels=IDS).loss.backward()
        optimizer.step()
    model = wrapped.merge_and_unload().eval()
    model.save_pretrained(root)
    return model


def _embtie_export(root: Path):
    model = eh.apply(_llama(tied=False), "cosine")
    eh.export(model, root)
    return model


def _embtie_save(root: Path):
    model = eh.apply(_llama(tied=True), "l2norm")
    model.save_pretrained(root)
    return model


def _no_embedding(root: Path):
    model = _llama(tied=True)
    model.save_pretrained(root)
    _rewrite(root, lambda s: {k: v for k, v in s.items() if k != EMB})
    return model


MAKERS = {
    "consistent-tied": lambda root: _saved(_llama(tied=True), root),
    "consistent-untied": lambda root: _saved(_llama(tied=False), root),
    "flag-tied-diverged": _diverged,
    "tied-missing-key": _missing_key,
    "tied-on-disk-untied-in-config": _untied_in_config,
    "untied-equal-copies": _equal_copies,
    "peft-merged": _peft_merged,
    "embtie-export": _embtie_export,
    "embtie-save": _embtie_save,
    "no-embedding": _no_embedding,
}


def _saved(model, root: Path):
    model.save_pretrained(root)
    return model


PROBLEMS = {"flag-tied-diverged", "tied-missing-key", "tied-on-disk-untied-in-config", "no-embedding"}


def test_every_verdict_has_a_checkpoint_made_to_be_it():
    assert set(MAKERS) == set(VERDICTS)


@pytest.mark.parametrize("verdict", sorted(MAKERS))
def test_each_checkpoint_is_classified_as_made(verdict, tmp_path):
    MAKERS[verdict](tmp_path / "ckpt")
    found = audit(tmp_path / "ckpt")
    assert found.verdict == verdict
    assert found.described.problem is (verdict in PROBLEMS)
    if verdict not in ("embtie-save", "no-embedding"):  # from_pretrained refuses these / finds no matrix
        assert found.shares_storage is _shares(_from_pretrained(tmp_path / "ckpt")), verdict


def test_the_report_names_keys_flag_and_comparison(tmp_path):
    _diverged(tmp_path / "d")
    found = audit(tmp_path / "d")
    assert found.tie_flag is True and found.held_input == EMB and found.held_output == HEAD
    assert found.shapes == {EMB: [V, 32], HEAD: [V, 32]} and found.n_keys == 21
    assert found.comparison is not None and not found.comparison.equal
    state = load_file(str(tmp_path / "d" / "model.safetensors"))
    assert found.comparison.max_abs_diff == pytest.approx(float((state[EMB] - state[HEAD]).abs().max()))
    cosines = torch.nn.functional.cosine_similarity(state[EMB], state[HEAD], dim=1)
    assert found.comparison.median_row_cosine == pytest.approx(float(cosines.median()), abs=1e-6)
    assert abs(found.comparison.median_row_cosine) < COPY_COSINE  # two independent inits
    gemma = tmp_path / "g"
    tiny_model("gemma2", V).save_pretrained(gemma)
    g = audit(gemma)
    assert g.embed_scale == "5.65685 = sqrt(d)" and g.softcap == 30.0 and g.verdict == "consistent-tied"


def _fixed(tmp_path: Path, verdict: str, tie_from: str | None = None):
    original = MAKERS[verdict](tmp_path / "ckpt")
    before = {p.name: p.read_bytes() for p in (tmp_path / "ckpt").iterdir()}
    fixed = repair(audit(tmp_path / "ckpt"), tmp_path / "fixed", tie_from=tie_from)
    assert {p.name: p.read_bytes() for p in (tmp_path / "ckpt").iterdir()} == before  # never in place
    return original, fixed


def test_fix_unties_a_flag_tied_diverged_checkpoint_keeping_both_matrices(tmp_path):
    original, fixed = _fixed(tmp_path, "flag-tied-diverged")
    assert fixed.verdict == "consistent-untied" and fixed.tie_flag is False
    loaded = _from_pretrained(tmp_path / "fixed")
    assert not _shares(loaded) and torch.equal(_logits(loaded), _logits(original))


def test_fix_stores_a_missing_input_key_and_the_model_is_the_tied_original(tmp_path):
    original, fixed = _fixed(tmp_path, "tied-missing-key")
    assert fixed.verdict == "consistent-tied" and fixed.held_input == EMB and fixed.held_output is None
    loaded = _from_pretrained(tmp_path / "fixed")
    assert _shares(loaded) and torch.equal(_logits(loaded), _logits(original))


def test_fix_ties_a_tied_save_whose_config_says_untied(tmp_path):
    original, fixed = _fixed(tmp_path, "tied-on-disk-untied-in-config")
    broken = _from_pretrained(tmp_path / "ckpt")  # what the user gets without the fix: a random head
    assert not torch.allclose(_logits(broken), _logits(original), atol=1e-3)
    loaded = _from_pretrained(tmp_path / "fixed")
    assert fixed.verdict == "consistent-tied" and _shares(loaded)
    assert torch.equal(_logits(loaded), _logits(original))


def test_fix_ties_equal_copies_losslessly_in_a_sharded_checkpoint(tmp_path):
    model = _llama(tied=False)
    with torch.no_grad():
        model.lm_head.weight.copy_(model.model.embed_tokens.weight)
    model.save_pretrained(tmp_path / "ckpt", max_shard_size="12KB")
    assert (tmp_path / "ckpt" / "model.safetensors.index.json").is_file()
    found = audit(tmp_path / "ckpt")
    assert found.verdict == "untied-equal-copies" and len(found.weight_files) > 1
    fixed = repair(found, tmp_path / "fixed")
    assert fixed.verdict == "consistent-tied" and fixed.held_output is None
    index = json.loads((tmp_path / "fixed" / "model.safetensors.index.json").read_text())
    assert HEAD not in index["weight_map"] and EMB in index["weight_map"]
    loaded = _from_pretrained(tmp_path / "fixed")
    assert _shares(loaded) and torch.equal(_logits(loaded), _logits(model))


def test_fix_reties_a_peft_merged_checkpoint_from_the_trained_head(tmp_path):
    merged = MAKERS["peft-merged"](tmp_path / "ckpt")
    assert repair(audit(tmp_path / "ckpt"), tmp_path / "none") is None  # an untie may be meant: ask
    assert not (tmp_path / "none").exists()
    fixed = repair(audit(tmp_path / "ckpt"), tmp_path / "fixed", tie_from="output")
    loaded = _from_pretrained(tmp_path / "fixed")
    assert fixed.verdict == "consistent-tied" and _shares(loaded)
    assert torch.equal(loaded.model.embed_tokens.weight, merged.lm_head.weight)


def test_fix_of_an_embtie_save_is_its_export(tmp_path):
    original, fixed = _fixed(tmp_path, "embtie-save")
    assert fixed.verdict == "embtie-export" and fixed.embtie["strategy"] == "l2norm"
    assert torch.allclose(_logits(_from_pretrained(tmp_path / "fixed")), _logits(original), atol=1e-5)


def test_consistent_checkpoints_need_no_fix_and_refusals_are_one_line(tmp_path):
    _saved(_llama(tied=True), tmp_path / "ok")
    assert repair(audit(tmp_path / "ok"), tmp_path / "out") is None and not (tmp_path / "out").exists()
    with pytest.raises(ConfigError, match="never fixes in place"):
        repair(audit(tmp_path / "ok"), tmp_path / "ok")
    _no_embedding(tmp_path / "empty")
    with pytest.raises(Exception, match="nothing can fix"):
        repair(audit(tmp_path / "empty"), tmp_path / "out")


def test_cli_prints_the_verdict_and_refuses_bad_input_in_one_line(tmp_path, capsys):
    _diverged(tmp_path / "d")
    assert cli_main(["hf-audit", str(tmp_path / "d")]) == 0
    out = capsys.readouterr().out
    assert "verdict          flag-tied-diverged (PROBLEM)" in out and "transformers #45127" in out
    assert cli_main(["hf-audit", str(tmp_path / "d"), "--fix", str(tmp_path / "f")]) == 0
    assert "wrote" in capsys.readouterr().out and (tmp_path / "f" / "config.json").is_file()
    assert cli_main(["hf-audit", str(tmp_path / "d"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == "flag-tied-diverged"
    for argv, says in [
        (["hf-audit", str(tmp_path / "nothing")], "is not a folder"),
        (["hf-audit", str(tmp_path / "d"), "--fix", str(tmp_path / "d")], "never fixes in place"),
        (["hf-audit", str(tmp_path / "d"), "--tie-from", "input"], "--tie-from needs --fix"),
        (["hf-audit", str(tmp_path)], "no config.json"),
    ]:
        assert cli_main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert says in err and "\n" not in err, err


def test_a_diverged_t5_is_fixed_only_by_choosing_the_matrix_to_keep(tmp_path):
    """transformers 5 always ties T5's lm_head to shared, so the untie repair is refused; --tie-from works."""
    from transformers import AutoModelForSeq2SeqLM

    torch.manual_seed(0)
    tiny_model("t5", V).save_pretrained(tmp_path / "t5")
    head = torch.randn(V, 32)
    _rewrite(tmp_path / "t5", lambda s: {**s, HEAD: head})
    found = audit(tmp_path / "t5")
    assert found.verdict == "flag-tied-diverged" and found.held_input == "shared.weight"
    assert found.output_rescale is not None and "scale_decoder_outputs" in found.output_rescale
    with pytest.raises(ConfigError, match="--tie-from"):
        repair(found, tmp_path / "out")
    fixed = repair(found, tmp_path / "fixed", tie_from="output")
    loaded = AutoModelForSeq2SeqLM.from_pretrained(str(tmp_path / "fixed"))
    assert fixed.verdict == "consistent-tied" and _shares(loaded)
    assert torch.equal(loaded.shared.weight, head)


def test_non_finite_weights_are_named(tmp_path, capsys):
    _saved(_llama(tied=False), tmp_path / "nan")
    _rewrite(tmp_path / "nan", lambda s: {**s, HEAD: s[HEAD].index_fill(0, torch.tensor([1, 2]), float("nan"))})
    found = audit(tmp_path / "nan")
    assert found.notes == [f"{HEAD} holds 64 non-finite values (NaN or inf): the weights are broken, not only the tie"]
    assert cli_main(["hf-audit", str(tmp_path / "nan")]) == 0
    assert "64 non-finite values" in capsys.readouterr().out

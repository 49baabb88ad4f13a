"""Provenance by content: the files a run reads beyond its folder (a model config JSON, the user's data
files) are recorded by sha256 in RUN_DIR/run.json when the run starts; a config JSON is copied and loaded
from the copy; a changed data file is refused by loading, evaluation, test results and analyses (one line),
never answered from a result of the old content; runs of older code load with a note."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from embtie import cli
from embtie.analysis import quantization_table
from embtie.comparison import held_out
from embtie.config import load_config
from embtie.errors import ConfigError
from embtie.rundir import inputs
from embtie.training import train
from raw_corpus import raw_corpus
from tiny_runs import TINY_GPT_BODY, overridden

TINY = [*overridden(TINY_GPT_BODY, "data.eval_batch_size=4"), "data.tokenizer=word", "train.max_steps=2",
        "train.warmup_steps=0", "train.eval_every=2", "train.checkpoint_every=0", "train.threads=1",
        "train.progress=false"]  # fmt: skip


@pytest.fixture(scope="module")
def own_text(tmp_path_factory) -> tuple[Path, dict[str, Path]]:
    """A 2-step run on a user's train/valid/test files, and those files (split -> path)."""
    base = tmp_path_factory.mktemp("inputs")
    files = raw_corpus(base / "corpus", train=400, valid=60, test=60)
    out = base / "run"
    train(load_config("ptb-gpt-tiny", [*TINY, *(f"data.{s}_file={p}" for s, p in files.items())]), out)
    return out, files


@pytest.fixture
def own_text_run(own_text) -> Path:
    return own_text[0]


def _replace(path: Path) -> None:
    """The file at ``path`` replaced by other text (its lines in reverse order)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(reversed(lines)) + "\n", encoding="utf-8")


def _restore_after(path: Path):
    """A finalizer restoring ``path``'s current content (the module's run shares its files)."""
    text = path.read_bytes()
    return lambda: path.write_bytes(text)


def test_the_run_records_its_data_files_by_content(own_text_run):
    record = json.loads((own_text_run / inputs.RECORD).read_text(encoding="utf-8"))
    keys = [i["key"] for i in record["inputs"]]
    assert record["format"] == 1 and keys == ["data.test_file", "data.train_file", "data.valid_file"]
    assert all(len(i["sha256"]) == 64 and i["copy"] is None for i in record["inputs"])
    assert inputs.changes(own_text_run) == []


def test_a_replaced_test_file_is_not_answered_by_the_old_test_json(own_text, request):
    run, files = own_text
    first = held_out.evaluate(run)
    assert held_out.stored(run) == first
    request.addfinalizer(_restore_after(files["test"]))
    _replace(files["test"])
    assert held_out.stored(run) is None  # before: the old result, for the old text
    with pytest.raises(ConfigError, match=r"data\.test_file .*test\.txt changed since the run started .*restore"):
        held_out.evaluate(run)
    assert first["provenance"]["inputs"] == inputs.digests(run)  # the result names the content it came from


def test_a_test_file_given_to_compare_is_keyed_by_content_not_path(own_text, tmp_path):
    """``compare --test --test-file PATH``: a file replaced at the same path is evaluated again."""
    run, files = own_text
    other = tmp_path / "held-out.txt"
    other.write_bytes(files["test"].read_bytes())
    first = held_out.evaluate(run, str(other))
    assert held_out.stored(run, str(other)) == first
    _replace(other)
    assert held_out.stored(run, str(other)) is None  # before: the old result, for the old text
    again = held_out.evaluate(run, str(other))
    assert again["test_file_sha256"] != first["test_file_sha256"] and held_out.stored(run, str(other)) == again


def test_a_changed_validation_file_is_refused_by_eval_and_analyze_quantize_alike(own_text, request, capsys):
    run, files = own_text
    table = quantization_table.measure(run, ["int8"], ["both"], baseline=False)
    assert quantization_table.read(run) is not None
    assert cli.main(["analyze", str(run)]) == 0  # stored diagnostics too: a stale note must not precede the refusal
    request.addfinalizer(_restore_after(files["valid"]))
    _replace(files["valid"])
    assert quantization_table.read(run) is None  # before: the old table
    capsys.readouterr()
    for argv in (["analyze", str(run), "--quantize", "int8"], ["analyze", str(run)], ["eval", str(run)]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "data.valid_file" in err[0] and "changed since the run started" in err[0], err
    assert table.provenance is not None and table.provenance.inputs == inputs.digests(run)


def test_training_on_with_a_changed_training_file_is_refused(own_text, request, capsys):
    run, files = own_text
    argv = ["train", "ptb-gpt-tiny", *TINY, *(f"data.{s}_file={p}" for s, p in files.items()), "--out", str(run)]
    assert cli.main(argv) == 0  # finished: its summary, nothing trained
    request.addfinalizer(_restore_after(files["train"]))
    _replace(files["train"])
    capsys.readouterr()
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "data.train_file" in err[0] and "into a new --out" in err[0], err


def test_a_run_of_older_code_loads_with_a_note(own_text_run, tmp_path, capsys):
    import shutil

    old = tmp_path / "old"
    shutil.copytree(own_text_run, old)
    (old / inputs.RECORD).unlink()
    capsys.readouterr()
    assert cli.main(["eval", str(old)]) == 0
    err = capsys.readouterr().err
    assert err.count("its input files were not recorded") == 1, err


def test_a_changed_or_missing_file_is_named_with_the_fix(tmp_path):
    files = raw_corpus(tmp_path / "corpus", train=200, valid=40, test=40)
    config = load_config("ptb-gpt-tiny", [*TINY, *(f"data.{s}_file={p}" for s, p in files.items())]).to_dict()
    run = tmp_path / "run"
    run.mkdir()
    recorded = inputs.record(config, run)
    assert [i.key for i in recorded] == ["data.test_file", "data.train_file", "data.valid_file"]
    _replace(files["train"])
    (changed,) = inputs.changes(run)
    assert changed.startswith(f"data.train_file {files['train'].resolve()} changed since the run started (sha256 ")
    files["valid"].unlink()
    assert "data.valid_file" in inputs.changes(run)[1] and "is gone" in inputs.changes(run)[1]
    with pytest.raises(ConfigError, match=r"data\.train_file .* restore that file, or train a run on the new one"):
        inputs.check(run)


GPT2 = {"model_type": "gpt2", "n_embd": 16, "n_layer": 1, "n_head": 2, "n_positions": 16, "resid_pdrop": 0.0,
        "embd_pdrop": 0.0, "attn_pdrop": 0.0}  # fmt: skip
HF_SMALL = ["data.bptt=16", "data.batch_size=4", "data.eval_batch_size=8", "data.train_tokens=2000",
            "data.valid_tokens=256", "train.max_steps=2", "train.warmup_steps=0", "train.eval_every=2",
            "train.checkpoint_every=0", "train.threads=1", "train.progress=false"]  # fmt: skip


def test_a_model_config_json_is_copied_and_the_copy_is_loaded(tmp_path, capsys):
    pytest.importorskip("transformers")
    spec = tmp_path / "gpt2.json"
    spec.write_text(json.dumps(GPT2), encoding="utf-8")
    out = tmp_path / "run"
    assert cli.main(["train", "ptb-hf-gpt2-tiny", f"model.hf={spec}", *HF_SMALL, "--out", str(out)]) == 0

    def ppl() -> float:
        assert cli.main(["eval", str(out)]) == 0
        return json.loads((out / "eval.json").read_text(encoding="utf-8"))["valid"]["ppl"]

    before = ppl()
    spec.write_text(json.dumps({**GPT2, "n_head": 4, "activation_function": "relu"}), encoding="utf-8")
    assert ppl() == before  # before this change: the edited model, another perplexity, exit 0
    spec.unlink()
    assert ppl() == before
    (recorded,) = inputs.read(out) or []
    assert recorded.key == "model.hf" and recorded.copy == inputs.MODEL_CONFIG_COPY
    assert json.loads((out / inputs.MODEL_CONFIG_COPY).read_text(encoding="utf-8")) == GPT2
    (out / inputs.MODEL_CONFIG_COPY).write_text(json.dumps({**GPT2, "n_head": 4}), encoding="utf-8")
    capsys.readouterr()
    assert cli.main(["eval", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the run's copy" in err[0] and "model.hf" in err[0], err


def test_a_pretrained_folder_is_checked_by_its_config_json_and_a_packaged_name_is_not_recorded(tmp_path):
    folder = tmp_path / "pretrained"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(GPT2), encoding="utf-8")
    run = tmp_path / "run"
    run.mkdir()
    (recorded,) = inputs.record({"model": {"name": "hf", "hf": str(folder)}, "data": {"dataset": "ptb"}}, run)
    assert (recorded.key, recorded.path, recorded.copy) == ("model.hf", str(folder / "config.json"), None)
    assert not (run / inputs.MODEL_CONFIG_COPY).exists() and inputs.changes(run) == []
    (folder / "config.json").write_text(json.dumps({**GPT2, "n_head": 4}), encoding="utf-8")
    (changed,) = inputs.changes(run)
    assert changed.startswith(f"model.hf {folder / 'config.json'} changed since the run started")
    assert inputs.record({"model": {"name": "hf", "hf": "gpt2-tiny"}, "data": {}}, tmp_path / "run") == []

"""Without transformers, embtie.hf and `embtie hf-compare` fail with one line that says what to install,
and the rest of embtie (including the CLI parser) keeps working."""

import importlib
import sys

import pytest

from embtie import cli
from embtie.errors import EmbtieError


@pytest.fixture
def no_transformers(monkeypatch):
    for name in list(sys.modules):
        if name == "embtie.hf" or name.startswith("embtie.hf."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "transformers", None)  # makes `import transformers` raise ImportError


def test_import_embtie_hf_names_the_extra(no_transformers):
    with pytest.raises(ImportError, match=r"pip install 'embtie\[hf\]'") as info:
        importlib.import_module("embtie.hf")
    assert isinstance(info.value, EmbtieError) and "\n" not in str(info.value)


def test_hf_compare_command_prints_one_line(no_transformers, tmp_path, capsys):
    cfg = tmp_path / "gpt2.json"
    cfg.write_text('{"model_type": "gpt2"}')
    assert cli.main(["hf-compare", str(cfg), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("embtie hf-compare: error:") and "pip install 'embtie[hf]'" in err
    assert len(err.splitlines()) == 1


def test_an_hf_seq2seq_run_prints_one_line(no_transformers, tmp_path, capsys):
    """model.name=hf-seq2seq reads its transformers config when the config is checked: one line names the extra."""
    out = tmp_path / "out"
    assert cli.main(["train", "multi30k-hf-marian-tiny", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "pip install 'embtie[hf]'" in err and len(err.splitlines()) == 1
    assert not out.exists()

"""embtie.hf.export / `embtie export`: a patched model saved as stock transformers weights gives the same logits
when loaded by transformers alone, in a subprocess where embtie cannot be imported; strategies that a stock
model cannot express are refused with one line; the folded tensors match the strategies' formulas."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")

import embtie.hf as eh
from embtie.cli import main as cli_main
from embtie.hf.fold import fold
from embtie.hf.tiny import tiny_model

V = 80
TOL = 1e-5
FOLDABLE = ["untied", "tied", "tied-loginit", "l2norm", "sqnorm", "cosine", "fixed", "hadamard"]
FOLDABLE += ["tied-proj", "tied-bert", "tied-shuffle"]
TIED = {"tied", "tied-loginit", "l2norm"}  # input table == output matrix: exported tied
EXTRA = [  # non-default options: scales, projections, and a family (BART) whose logits bias holds a bias
    ("gpt2", "cosine", {"logit_scale": "learned"}),
    ("llama", "tied", {"embed_scale": "sqrt_d", "logit_scale": "inv_sqrt_d"}),
    ("gpt2", "fixed", {"target_dim": 16, "logit_scale": "learned"}),
    ("llama", "hadamard", {"target_dim": 16}),
    ("llama", "sqnorm", {"embed_scale": 3.0}),
    ("bart", "distance", {}),
    ("bart", "l2norm", {"bias": True}),
]
CASES = [(mt, s, {}) for mt in ("gpt2", "llama") for s in FOLDABLE] + EXTRA

# Runs in `python -I` (no cwd, no user site) with every sys.path entry that holds embtie removed.
LOADER = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    sys.path = [p for p in sys.path if not (Path(p) / "embtie").exists()]
    try:
        import embtie  # noqa: F401
        sys.exit("embtie is importable in the clean subprocess")
    except ImportError:
        pass
    import torch, transformers
    jobs = json.loads(sys.argv[1])
    out = {}
    for job in jobs:
        cls = transformers.AutoModelForSeq2SeqLM if job["seq2seq"] else transformers.AutoModelForCausalLM
        model = cls.from_pretrained(job["dir"]).eval()
        inputs = {k: torch.tensor(v) for k, v in job["inputs"].items()}
        with torch.no_grad():
            logits = model(**inputs).logits
        tied = model.get_input_embeddings().weight is model.get_output_embeddings().weight
        out[job["dir"]] = {"logits": logits.tolist(), "tied": tied}
    assert "embtie" not in sys.modules
    print(json.dumps(out))
    """
)


def _inputs(model_type: str) -> dict:
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, V, (2, 8), generator=g)
    if model_type == "bart":
        return {"input_ids": ids, "decoder_input_ids": ids[:, :6]}
    return {"input_ids": ids}


def _trained_like(model_type: str, strategy: str, options: dict):
    """An applied tiny model with every learned tensor moved off its init (learned scales included)."""
    torch.manual_seed(0)
    model = eh.apply(tiny_model(model_type, V), strategy, **options)
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.add_(torch.randn_like(p) * 0.05)
    return model


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Export every case (and one via the CLI), load all of them in one clean subprocess; returns
    {dir: (expected logits, expected tied, subprocess result)}."""
    root = tmp_path_factory.mktemp("export")
    jobs, expected = [], {}
    for i, (mt, strategy, options) in enumerate(CASES):
        model = _trained_like(mt, strategy, options)
        kw = _inputs(mt)
        with torch.no_grad():
            ref = model(**kw).logits
        out = root / f"{i}-{mt}-{strategy}"
        result = eh.export(model, out)
        expected[str(out)] = (ref, strategy in TIED and not options, result.tied)
        jobs.append({"dir": str(out), "seq2seq": mt == "bart", "inputs": {k: v.tolist() for k, v in kw.items()}})
    # the command line: a save_pretrained folder of a patched model -> stock folder
    model = _trained_like("llama", "l2norm", {})
    model.save_pretrained(root / "saved")
    assert cli_main(["export", str(root / "saved"), str(root / "cli")]) == 0
    with torch.no_grad():
        expected[str(root / "cli")] = (model(**_inputs("llama")).logits, True, True)
    jobs.append(
        {"dir": str(root / "cli"), "seq2seq": False, "inputs": {"input_ids": _inputs("llama")["input_ids"].tolist()}}
    )
    proc = subprocess.run(
        [sys.executable, "-I", "-c", LOADER, json.dumps(jobs)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    return {d: (*expected[d], loaded[d]) for d in expected}


def test_stock_transformers_without_embtie_gives_the_same_logits(exported):
    assert len(exported) == len(CASES) + 1
    for d, (ref, _, _, got) in exported.items():
        diff = (torch.tensor(got["logits"]) - ref).abs().max().item()
        assert diff <= TOL, f"{d}: max |dlogit| {diff:.2e}"


def test_tie_word_embeddings_is_set_right(exported):
    for d, (_, want_tied, reported, got) in exported.items():
        config = json.loads((Path(d) / "config.json").read_text())
        assert reported == want_tied, d
        assert config["tie_word_embeddings"] is want_tied, d
        assert got["tied"] is want_tied, d  # one Parameter for input and output in the stock model
        assert "embtie" not in config, d


@pytest.mark.parametrize(
    ("model_type", "strategy", "options", "reason"),
    [
        ("gpt2", "ngpt", {}, "normalizes h"),
        ("llama", "distance", {}, "has no bias"),
        ("gpt2", "tied", {"bias": True}, "has no bias"),
        ("llama", "tied", {"softcap": 30.0}, "soft-caps"),
        ("gemma2", "tied", {"softcap": 30.0, "softcap_form": "sigmoid"}, "sigmoid soft-cap"),
        ("gpt2", "tied-bert", {"norm": "layernorm"}, "activation or a norm"),
    ],
)
def test_unfoldable_strategies_are_refused_with_one_line(model_type, strategy, options, reason, tmp_path):
    model = _trained_like(model_type, strategy, options)
    with pytest.raises(eh.NotFoldableError) as e:
        eh.export(model, tmp_path / "out")
    assert reason in str(e.value) and strategy in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_cli_refuses_with_one_line_and_status_2(tmp_path, capsys):
    model = _trained_like("gpt2", "ngpt", {})
    model.save_pretrained(tmp_path / "saved")
    capsys.readouterr()
    assert cli_main(["export", str(tmp_path / "saved"), str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("embtie export: error: strategy 'ngpt'") and "\n" not in err
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.yaml").write_text("task: lm\n")
    assert cli_main(["export", str(tmp_path / "run"), str(tmp_path / "out")]) == 2
    assert "native embtie run" in capsys.readouterr().err


def test_folded_tensors_follow_the_formulas():
    torch.manual_seed(3)
    e = torch.randn(V, 32).double()  # float32 values: the sharing object holds them exactly
    for strategy, options, want_in, want_out in [
        ("cosine", {"logit_scale": 2.5}, lambda: e, lambda: 2.5 * e / e.norm(dim=1, keepdim=True)),
        ("sqnorm", {"embed_scale": 3.0}, lambda: 3.0 * e, lambda: e / e.pow(2).sum(1, keepdim=True)),
        ("l2norm", {}, lambda: e / e.norm(dim=1, keepdim=True), lambda: e / e.norm(dim=1, keepdim=True)),
    ]:
        s = eh.apply(tiny_model("gpt2", V), strategy, **options).embtie_sharing
        with torch.no_grad():
            s.weight.copy_(e)
        f = fold(s)
        assert torch.allclose(f.input_vectors, want_in(), atol=1e-12) and f.bias is None, strategy
        assert torch.allclose(f.weight, want_out(), atol=1e-12), strategy
    s = eh.apply(tiny_model("gpt2", V), "tied-proj", proj_bias=True).embtie_sharing
    with torch.no_grad():
        s.weight.copy_(e)
        s.proj.bias.normal_()
    f = fold(s)  # z = E (P h + c) = (E P) h + E c
    p, c = s.proj.weight.double(), s.proj.bias.double()
    assert torch.allclose(f.weight, e @ p, atol=1e-12)
    assert torch.allclose(f.bias, e @ c, atol=1e-12)

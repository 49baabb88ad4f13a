"""transformers' Trainer with ``compute_metrics`` on a patched model: evaluation hands the metric function
the logits (forward(labels=...) returns them in eval mode, as a stock model does), while every training
step keeps the memory-lean loss that never computes them. ``logits_with_labels`` says which."""

import json

import pytest
import torch

pytest.importorskip("transformers")
pytest.importorskip("accelerate")

import transformers

import embtie.hf as eh
from embtie.errors import ConfigError
from embtie.hf.tiny import tiny_model

V = 60


def _examples(n: int = 12, length: int = 10) -> list[dict[str, torch.Tensor]]:
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, V, (n, length), generator=g)
    return [{"input_ids": row, "labels": row} for row in ids]


def _next_token_accuracy(pred) -> dict[str, float]:
    logits, labels = pred.predictions, pred.label_ids  # the user's metric: what the trap broke
    return {"accuracy": float((logits[:, :-1].argmax(-1) == labels[:, 1:]).mean())}


def _count_logits(monkeypatch, model) -> list[bool]:
    """Record, for every call of the sharing object's full logits, whether the model was training."""
    sharing = eh.sharing_of(model)
    calls: list[bool] = []
    original = sharing.logits

    def counted(h):
        calls.append(model.training)
        return original(h)

    monkeypatch.setattr(sharing, "logits", counted)
    return calls


def test_trainer_compute_metrics_gets_logits_and_training_never_computes_them(tmp_path, monkeypatch):
    torch.manual_seed(0)
    model = eh.apply(tiny_model("gpt2", V), "l2norm").train()
    data = _examples()
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "trainer"),
        max_steps=3,
        per_device_train_batch_size=4,
        per_device_eval_batch_size=6,
        report_to=[],
        save_strategy="no",
        disable_tqdm=True,
        use_cpu=True,
    )
    trainer = transformers.Trainer(
        model=model, args=args, train_dataset=data, eval_dataset=data, compute_metrics=_next_token_accuracy
    )
    calls = _count_logits(monkeypatch, model)
    trainer.train()
    assert calls == []  # training steps: the chunked loss only, no (B, T, V) logits
    metrics = trainer.evaluate()
    assert calls and not any(calls)  # evaluation (eval mode) computed them for compute_metrics
    model.eval()
    with torch.no_grad():
        ids = torch.stack([e["input_ids"] for e in data])
        expected = _next_token_accuracy(transformers.EvalPrediction(model(input_ids=ids).logits.numpy(), ids.numpy()))
    assert metrics["eval_accuracy"] == pytest.approx(expected["accuracy"])
    assert metrics["eval_loss"] > 0


def test_forward_with_labels_returns_logits_in_eval_mode_only_by_default():
    torch.manual_seed(1)
    model = eh.apply(tiny_model("llama", V), "cosine")
    ids = torch.randint(3, V, (2, 7))
    with torch.no_grad():
        assert model.train()(input_ids=ids, labels=ids).logits is None
        out = model.eval()(input_ids=ids, labels=ids)
        assert torch.equal(out.logits, model(input_ids=ids).logits)
        assert torch.equal(out.loss, model.train()(input_ids=ids, labels=ids).loss)  # the same lean loss


def test_logits_with_labels_false_keeps_evaluation_lean_and_bad_values_are_one_line():
    model = eh.apply(tiny_model("gpt2", V), "tied", logits_with_labels=False).eval()
    ids = torch.randint(3, V, (2, 5))
    with torch.no_grad():
        assert model(input_ids=ids, labels=ids).logits is None
    for bad in ("always", 1, None):
        with pytest.raises(ConfigError, match="logits_with_labels") as info:
            eh.apply(tiny_model("gpt2", V), "tied", logits_with_labels=bad)
        assert "\n" not in str(info.value) and "'eval'" in str(info.value)


def test_a_checkpoint_saved_before_the_eval_default_gives_the_trainer_its_logits(tmp_path):
    """A format-1 record's ``logits_with_labels: false`` was the default then, not a choice."""
    eh.apply(tiny_model("gpt2", V), "tied").save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    config["embtie"].update(format=1, logits_with_labels=False)
    (tmp_path / "config.json").write_text(json.dumps(config))
    model = eh.load(tmp_path)
    assert model.config.embtie["logits_with_labels"] == "eval"
    ids = torch.randint(3, V, (2, 5))
    with torch.no_grad():
        assert model(input_ids=ids, labels=ids).logits is not None

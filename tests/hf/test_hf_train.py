"""A patched model's forward(labels=...) loss (the sharing object's loss + regularization), generate()
greedy and beam, and the Hugging Face Trainer on real PTB text."""

import copy
import inspect

import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("transformers")

import transformers

import embtie.hf as eh
from embtie.data.lm_corpora import Vocab, load_tokens
from embtie.hf.lm_data import LMBlocks
from embtie.hf.tiny import tiny_model

V = 80


def _labels_with_padding(ids):
    labels = ids.clone()
    labels[0, -2:] = -100
    return labels


@pytest.mark.parametrize("model_type", ["gpt2", "marian"])
def test_tied_loss_equals_the_unpatched_models_loss(model_type):
    torch.manual_seed(0)
    ref = tiny_model(model_type, V)
    ids = torch.randint(3, V, (2, 9))
    labels = _labels_with_padding(ids)
    with torch.no_grad():
        expected = ref(input_ids=ids, labels=labels)
        out = eh.apply(copy.deepcopy(ref), "tied")(input_ids=ids, labels=labels)
    torch.testing.assert_close(out.loss, expected.loss, rtol=1e-6, atol=1e-6)
    # eval mode: the logits come too, as from the stock model (a training step never computes them:
    # tests/hf/test_trainer_metrics.py)
    torch.testing.assert_close(out.logits, expected.logits, rtol=1e-6, atol=1e-6)


def test_loss_is_the_sharing_loss_of_the_next_tokens_plus_regularization():
    torch.manual_seed(1)
    model = eh.apply(tiny_model("gpt2", V), "tied-proj", proj_reg=5.0, proj_reg_tokens=1.0)
    s = eh.sharing_of(model)
    ids = torch.randint(3, V, (2, 9))
    labels = _labels_with_padding(ids)
    with torch.no_grad():
        h = model.transformer(input_ids=ids).last_hidden_state
        logits = s.logits(h)
        ce = F.cross_entropy(logits[:, :-1].reshape(-1, V), labels[:, 1:].reshape(-1), ignore_index=-100)
        reg = s.regularization()
        assert reg > 0.1
        out = model(input_ids=ids, labels=labels)
        torch.testing.assert_close(out.loss, ce + reg)
        # gradient accumulation: transformers passes the token count of the whole accumulated batch
        n = int(labels[:, 1:].ne(-100).sum())
        acc = model(input_ids=ids, labels=labels, num_items_in_batch=4 * n)
        torch.testing.assert_close(acc.loss, (ce + reg) / 4)
        as_tuple = model(input_ids=ids, labels=labels, return_dict=False)
        torch.testing.assert_close(as_tuple[0], ce + reg)


def test_logits_with_labels_returns_both():
    torch.manual_seed(2)
    model = eh.apply(tiny_model("llama", V), "cosine", logits_with_labels=True)
    ids = torch.randint(3, V, (2, 6))
    with torch.no_grad():
        out = model(input_ids=ids, labels=ids)
        assert torch.equal(out.logits, model(input_ids=ids).logits)


@pytest.mark.parametrize(
    ("model_type", "overrides"), [("gpt2", {}), ("llama", {"tie_word_embeddings": True}), ("marian", {})]
)
def test_tied_generates_the_same_tokens_greedy_and_beam(model_type, overrides):
    torch.manual_seed(3)
    ref = tiny_model(model_type, V, **overrides)
    patched = eh.apply(copy.deepcopy(ref), "tied")
    prompt = torch.randint(3, V, (2, 5))
    for kw in ({"do_sample": False}, {"do_sample": False, "num_beams": 3}):
        a = ref.generate(prompt, max_new_tokens=6, min_new_tokens=6, **kw)
        b = patched.generate(prompt, max_new_tokens=6, min_new_tokens=6, **kw)
        assert torch.equal(a, b), kw


@pytest.mark.parametrize("model_type", ["gpt2", "marian"])
def test_greedy_generation_follows_the_strategys_argmax(model_type):
    """generate() with the key/value cache picks, step by step, the argmax of a full forward pass."""
    torch.manual_seed(4)
    model = eh.apply(tiny_model(model_type, V), "l2norm")
    prompt = torch.randint(3, V, (1, 5))
    out = model.generate(prompt, max_new_tokens=5, min_new_tokens=5, do_sample=False)
    beams = model.generate(prompt, max_new_tokens=5, min_new_tokens=5, do_sample=False, num_beams=3)
    assert beams.shape == out.shape
    with torch.no_grad():
        if model_type == "gpt2":
            seq = prompt
            for _ in range(5):
                seq = torch.cat([seq, model(input_ids=seq).logits[:, -1:].argmax(-1)], dim=1)
        else:
            seq = out[:, :1]  # decoder_start_token
            for _ in range(5):
                nxt = model(input_ids=prompt, decoder_input_ids=seq).logits[:, -1:].argmax(-1)
                seq = torch.cat([seq, nxt], dim=1)
    assert torch.equal(out, seq)


def _ptb_blocks(n_tokens, block):
    tokens = load_tokens("ptb", "valid")[:n_tokens]
    vocab = Vocab.from_tokens(tokens)
    return vocab, LMBlocks(vocab.encode(tokens), block)


@pytest.mark.parametrize(
    "strategy", ["fixed", pytest.param("tied", marks=pytest.mark.slow), pytest.param("l2norm", marks=pytest.mark.slow)]
)
def test_hf_trainer_reduces_the_loss_on_ptb(strategy, tmp_path):
    vocab, blocks = _ptb_blocks(2000, 16)
    torch.manual_seed(0)
    model = eh.apply(tiny_model("gpt2", len(vocab)), strategy).train()
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path),
        max_steps=10,
        per_device_train_batch_size=8,
        gradient_accumulation_steps=2,
        learning_rate=1e-2,
        report_to=[],
        save_strategy="no",
        disable_tqdm=True,
        use_cpu=True,
        dataloader_pin_memory=False,
        prediction_loss_only=True,
        seed=0,
    )
    trainer = transformers.Trainer(model=model, args=args, train_dataset=blocks, eval_dataset=blocks)
    assert trainer.model_accepts_loss_kwargs and trainer.label_names == ["labels"]
    # the Trainer drops dataset columns the forward signature lacks: the patched forward keeps the original's
    assert {"input_ids", "attention_mask", "labels"} <= set(inspect.signature(model.forward).parameters)
    start = trainer.evaluate()["eval_loss"]
    trainer.train()
    end = trainer.evaluate()["eval_loss"]
    assert end < start - 0.3, (start, end)
    # the fixed targets stayed fixed: buffers are not trained
    if strategy == "fixed":
        assert "embtie_sharing.fixed_weight" not in dict(model.named_parameters())

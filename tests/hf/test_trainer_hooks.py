"""transformers' Trainer with embtie's hooks: EmbtieCallback runs the strategies' step hooks (tie-untie
unties at its step, with E's Adam moments carried to O), optimizer_cls_and_kwargs exempts the strategies'
scale parameters from weight decay as embtie's own optimizer does (and keeps logit_scale_lr), and
`embtie export` copies the tokenizer files of the folder it is given."""

import warnings
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")

import transformers

import embtie.hf as eh
from embtie.cli import main as cli_main
from embtie.errors import ConfigError
from embtie.hf.callback import EmbtieCallback
from embtie.hf.tiny import tiny_model
from embtie.loop import optimizer_cls_and_kwargs

V = 64
STEPS = 6


def _data(n: int = 48):
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, V, (n, 12), generator=g)
    return [{"input_ids": row, "labels": row} for row in ids]


def _args(tmp_path, **kw):
    base = dict(
        output_dir=str(tmp_path),
        max_steps=STEPS,
        per_device_train_batch_size=4,
        gradient_accumulation_steps=2,
        learning_rate=1e-2,
        weight_decay=0.1,
        report_to=[],
        save_strategy="no",
        disable_tqdm=True,
        use_cpu=True,
        dataloader_pin_memory=False,
        seed=0,
    )
    return transformers.TrainingArguments(**{**base, **kw})


class _Watch(transformers.TrainerCallback):
    """Records, after EmbtieCallback has run at each step, whether the sharing object is untied; at the
    untie step also whether O and its Adam moments are E's."""

    def __init__(self, sharing):
        self.sharing, self.untied, self.at_untie = sharing, [], None

    def on_step_begin(self, args, state, control, optimizer=None, **kwargs):
        s = self.sharing
        self.untied.append(s.is_untied)
        if s.is_untied and self.at_untie is None:
            moments = optimizer.state[s.out_weight], optimizer.state[s.weight]
            self.at_untie = (
                state.global_step,
                torch.equal(s.out_weight, s.weight),
                all(torch.equal(moments[0][k], moments[1][k]) for k in ("exp_avg", "exp_avg_sq")),
            )


def test_tie_untie_unties_at_its_step_under_the_trainer(tmp_path):
    torch.manual_seed(0)
    model = eh.apply(tiny_model("gpt2", V), "tie-untie", untie_at=0.5).train()
    sharing = eh.sharing_of(model)
    watch = _Watch(sharing)
    hook = EmbtieCallback()
    trainer = transformers.Trainer(model=model, args=_args(tmp_path), train_dataset=_data(), callbacks=[hook, watch])
    trainer.train()
    untie_step = sharing.untie_step(STEPS)  # round(0.5 * 6) = 3
    assert hook.calls == list(range(STEPS))  # once per optimizer step (2 micro-batches each)
    assert watch.untied == [step >= untie_step for step in range(STEPS)]
    assert watch.at_untie == (untie_step, True, True)
    assert not torch.equal(sharing.out_weight, sharing.weight)  # trained apart after the switch


def test_without_the_callback_tie_untie_never_unties_and_the_callback_refuses_a_plain_model(tmp_path):
    torch.manual_seed(0)
    model = eh.apply(tiny_model("gpt2", V), "tie-untie", untie_at=0.5).train()
    with pytest.warns(UserWarning, match=r"callbacks=\[EmbtieCallback\(\)\]"):  # no longer silent
        transformers.Trainer(model=model, args=_args(tmp_path), train_dataset=_data()).train()
    assert not eh.sharing_of(model).is_untied  # why the callback exists
    plain = tiny_model("gpt2", V).train()
    trainer = transformers.Trainer(
        model=plain, args=_args(tmp_path), train_dataset=_data(), callbacks=[EmbtieCallback()]
    )
    with pytest.raises(ConfigError, match=r"embtie\.hf\.apply"):
        trainer.train()


def _trained(tmp_path, callbacks: list) -> tuple[list[str], bool]:
    """(embtie's warnings naming EmbtieCallback, untied at the end) of 2 Trainer steps of tie-untie (untie at
    step round(0.5 x 2) = 1), one batch of 4 per step."""
    torch.manual_seed(0)
    model = eh.apply(tiny_model("gpt2", V), "tie-untie", untie_at=0.5).train()
    args = _args(tmp_path, max_steps=2, gradient_accumulation_steps=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        transformers.Trainer(model=model, args=args, train_dataset=_data(8), callbacks=callbacks).train()
    return [str(w.message) for w in caught if "EmbtieCallback" in str(w.message)], eh.sharing_of(model).is_untied


def test_a_trainer_without_the_callback_is_warned_once_how_to_add_it(tmp_path):
    warned, untied = _trained(tmp_path, [])
    assert len(warned) == 1 and not untied
    assert "it will never untie" in warned[0] and "callbacks=[EmbtieCallback()]" in warned[0]
    assert "from embtie.hf.callback import EmbtieCallback" in warned[0] and "\n" not in warned[0]
    assert _trained(tmp_path, [EmbtieCallback()]) == ([], True)


@pytest.mark.parametrize("hook", ["after_backward", "never"])
def test_an_own_loop_is_warned_only_when_it_never_calls_the_hook(hook):
    """A loop that calls on_train_step before optimizer.step(), after two accumulated forward passes, is
    within the contract (docs/your-loop.md) and is not warned; one that never calls it is, after its first
    optimizer step."""
    torch.manual_seed(0)
    model = eh.apply(tiny_model("gpt2", V), "tie-untie", untie_at=0.5).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    batches = [row["input_ids"].view(1, -1) for row in _data(8)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(4):
            for ids in batches[2 * step : 2 * step + 2]:
                model(input_ids=ids, labels=ids).loss.backward()
            if hook == "after_backward":
                model.embtie_sharing.on_train_step(step, 4, optimizer)
            optimizer.step()
            optimizer.zero_grad()
    warned = [w for w in caught if "EmbtieCallback" in str(w.message)]
    assert len(warned) == (0 if hook == "after_backward" else 1)
    assert eh.sharing_of(model).is_untied == (hook == "after_backward")


def _decay_of(trainer) -> dict[str, tuple[float, float]]:
    """{parameter name: (weight decay, lr)} of the optimizer the Trainer creates."""
    optimizer = trainer.create_optimizer()
    by_id = {id(p): (g["weight_decay"], g["lr"]) for g in optimizer.param_groups for p in g["params"]}
    return {n: by_id[id(p)] for n, p in trainer.model.named_parameters() if p.requires_grad}


@pytest.mark.parametrize(
    ("strategy", "options", "scales"),
    [
        ("cosine", {"logit_scale": "learned", "logit_scale_lr": 10.0}, {"embtie_sharing.logit_scale_param"}),
        ("tied", {"token_temperature": True}, {"embtie_sharing.temperature"}),
        ("ngpt", {}, {"embtie_sharing.token_scale"}),
    ],
)
def test_scale_parameters_are_not_decayed_as_in_embtie_s_own_optimizer(strategy, options, scales, tmp_path):
    torch.manual_seed(0)
    model = eh.apply(tiny_model("gpt2", V), strategy, **options).train()
    args = _args(tmp_path)
    default = _decay_of(transformers.Trainer(model=model, args=args, train_dataset=_data()))
    ours = _decay_of(
        transformers.Trainer(
            model=model,
            args=args,
            train_dataset=_data(),
            optimizer_cls_and_kwargs=optimizer_cls_and_kwargs(model, args),
        )
    )
    assert scales <= set(ours)
    assert {n for n in scales if default[n][0] > 0} == scales  # the Trainer's default decays them
    changed = {n for n in ours if ours[n][0] != default[n][0]}
    assert changed == scales  # embtie's rule differs exactly there: everything else as the Trainer does it
    for n in scales:
        mult = options.get("logit_scale_lr", 1.0) if n.endswith("logit_scale_param") else 1.0
        assert ours[n] == (0.0, pytest.approx(args.learning_rate * mult)), n
    assert ours["embtie_sharing.weight"] == (args.weight_decay, args.learning_rate)
    emb0 = optimizer_cls_and_kwargs(model, args, embedding_weight_decay=0.0)[1]["params"]
    assert next(g for g in emb0 if g["name"] == "embedding")["weight_decay"] == 0.0


def _tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {f"w{i}": i for i in range(V)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="w3"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="w3", pad_token="w2")


def test_export_copies_the_tokenizer_files_of_the_folder(tmp_path, capsys):
    torch.manual_seed(0)
    model = eh.apply(tiny_model("gpt2", V), "l2norm")
    model.save_pretrained(tmp_path / "saved")
    tokenizer = _tokenizer()
    written = tokenizer.save_pretrained(tmp_path / "saved")
    assert cli_main(["export", str(tmp_path / "saved"), str(tmp_path / "stock")]) == 0
    assert "tokenizer files copied" in capsys.readouterr().out
    names = {Path(p).name for p in written}
    assert names and all((tmp_path / "stock" / n).read_bytes() == (tmp_path / "saved" / n).read_bytes() for n in names)
    reloaded = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "stock"))
    text = "w5 w9 w63 w7"
    assert reloaded(text)["input_ids"] == tokenizer(text)["input_ids"] == [5, 9, 63, 7]

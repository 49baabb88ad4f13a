"""Config loading: presets, overrides, validation messages, round trip."""

import pytest

from embtie.config import config_from_dict, load_config, parse_override, preset_names, read_spec
from embtie.errors import ConfigError


def test_presets_load_and_round_trip():
    mine = ("ptb-gpt-tiny", "ptb-lstm-small", "ptb-lstm-medium", "wikitext2-gpt-small")
    assert set(mine) <= set(preset_names())
    for name in mine:
        cfg = load_config(name)
        again = config_from_dict(cfg.to_dict())
        assert again == cfg


def test_overrides_are_parsed_as_yaml_scalars_and_applied():
    cfg = load_config(
        "ptb-gpt-tiny",
        ["sharing.name=l2norm", "sharing.options.bias=true", "train.max_steps=50", "train.lr=3e-4", "seed=7"],
    )
    assert cfg.sharing.name == "l2norm"
    assert cfg.sharing.options == {"bias": True}
    assert cfg.train.max_steps == 50 and cfg.train.lr == pytest.approx(3e-4) and cfg.seed == 7
    assert parse_override("train.grad_clip=null") == ("train.grad_clip", None)
    assert load_config("ptb-gpt-tiny", ["train.grad_clip=null"]).train.grad_clip is None


def test_lstm_preset_is_press_and_wolf_small():
    cfg = load_config("ptb-lstm-small")
    m, d, t = cfg.model, cfg.data, cfg.train
    assert (m.n_layers, m.hidden, m.emb_dim, m.dropout, m.init_range) == (2, 200, 200, 0.0, 0.1)
    assert (d.bptt, d.batch_size, t.optimizer, t.epochs, t.decay_after_epochs) == (20, 20, "sgd", 13, 4)
    # lr 1 / clip 5 on a cost summed over the 20 steps == lr 20 / clip 0.25 on the per-token mean
    assert t.lr / d.bptt == pytest.approx(1.0) and t.grad_clip * d.bptt == pytest.approx(5.0)


def test_lstm_medium_preset_is_zarembas_medium():
    cfg = load_config("ptb-lstm-medium")
    m, d, t = cfg.model, cfg.data, cfg.train
    assert (m.n_layers, m.hidden, m.emb_dim, m.dropout, m.init_range) == (2, 650, 650, 0.5, 0.05)
    assert (d.bptt, d.batch_size, t.epochs, t.decay_after_epochs) == (35, 20, 39, 6)
    assert t.decay_factor == pytest.approx(1 / 1.2)
    # lr 1 / clip 5 on a cost summed over the 35 steps == lr 35 / clip 5/35 on the per-token mean
    assert t.lr / d.bptt == pytest.approx(1.0) and t.grad_clip * d.bptt == pytest.approx(5.0)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["train.max_step=5"], r"unknown key 'train.max_step'; did you mean 'max_steps'\?; valid keys: .*max_steps"),
        (["train.lr=fast"], r"train.lr='fast' must be a number"),
        (["train.optimizer=adam"], r"train.optimizer='adam' must be one of: adamw, sgd"),
        (["model.n_heads=3"], r"model.dim=128 must be divisible by model.n_heads=3"),
        (["model.name=lstm"], r"unknown key 'model.\w+' for model 'lstm'(; did you .*)?; valid keys: name, emb_dim"),
        (["model.name=nope"], r"unknown model 'nope'; choose one of: gpt, lstm"),
        (["sharing.name=nope"], r"unknown strategy 'nope'"),
        (["sharing.options.colour=red"], r"unknown option 'sharing.options.colour' for strategy 'tied'"),
        (["data.bptt=100"], r"data.bptt=100 > model.max_len=64"),
        (["task=mt9"], r"unknown task 'mt9'"),
        (["train.epochs=null", "train.max_steps=null"], r"set at least one"),
        (["colour=red"], r"unknown key 'colour'; valid keys: task, seed"),
        (["trainmax_steps"], r"must look like key=value"),
        (["train.max_steps=2.5"], r"must be an integer"),
        # every float key has a range: declared where the mathematics gives one, else the integers' magnitude
        (["train.lr=9.223372036854775808e18"], r"train.lr=9.223372036854776e\+18 must be in \(0, 100\]"),
        (["train.lr=1e308"], r"train.lr=1e\+308 must be in \(0, 100\]"),
        (["train.momentum=1"], r"train.momentum=1 must be in \[0, 1\)"),
        (["train.min_lr_ratio=2"], r"train.min_lr_ratio=2 must be in \[0, 1\]"),
        (
            ["train.weight_decay=1e308"],
            r"train.weight_decay=1e\+308 is too large: a number here must be <= 2,147,483,647",
        ),
        (
            [
                "sharing.options.softcap=30",
                "sharing.options.softcap_form=sigmoid",
                "sharing.options.softcap_scale=1e308",
            ],
            r"softcap_scale=1e\+308 is too large: a number here must be <= 2,147,483,647 in magnitude",
        ),
        (
            [
                "sharing.options.softcap=30",
                "sharing.options.softcap_form=sigmoid",
                "sharing.options.softcap_shift=-1e308",
            ],
            r"softcap_shift=-1e\+308 is too large",
        ),
        (["model.rope_base=1e300"], r"model.rope_base=1e\+300 is too large"),
    ],
)
def test_invalid_configs_give_one_line_errors(overrides, message):
    with pytest.raises(ConfigError, match=message) as e:
        load_config("ptb-gpt-tiny", overrides)
    assert "\n" not in str(e.value)


def test_unknown_preset_lists_presets(tmp_path):
    with pytest.raises(ConfigError, match=r"unknown preset 'ptb-gtp'; did you mean 'ptb-gpt-tiny'\?; choose one of"):
        load_config("ptb-gtp")
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(str(tmp_path / "missing.yaml"))
    p = tmp_path / "mine.yaml"
    p.write_text(load_config("ptb-lstm-small").to_yaml())
    assert load_config(str(p), ["sharing.name=tied"]).sharing.name == "tied"


def test_shuffle_with_stateful_model_is_refused():
    with pytest.raises(ConfigError, match=r"data.shuffle=true breaks the hidden state"):
        load_config("ptb-lstm-small", ["data.shuffle=true"])


def test_overrides_may_follow_options(capsys):
    from embtie.cli import main

    assert main(["train", "ptb-gpt-tiny", "--out", "unused", "--print-config", "model.dim=48"]) == 0
    assert "dim: 48" in capsys.readouterr().out


@pytest.mark.parametrize(
    "preset,model,kind",
    [
        ("ptb-gpt-tiny", "transformer", "language model"),
        ("multi30k-transformer-small", "gpt", "translation model"),
        ("flickr8k-show-tell", "lstm", "captioning model"),
    ],
)
def test_a_task_refuses_a_model_of_another_kind(preset, model, kind):
    raw = {**read_spec(preset), "model": {"name": model}}
    with pytest.raises(ConfigError, match=rf"^model '{model}' is not a {kind}; use model.name= one of: "):
        config_from_dict(raw)
    if kind == "language model":
        with pytest.raises(ConfigError, match=r"one of: gpt, lstm, hf$"):
            config_from_dict(raw)


# ---------------------------------------------------------------------------- numbers parse alike


def test_numbers_in_overrides_parse_alike():
    cfg = load_config(
        "ptb-gpt-tiny",
        [
            "train.lr=1E-3",
            "train.max_steps=1e4",
            "train.warmup_steps=1_000",
            "train.min_lr_ratio=.5",
            "seed=+3",
            "sharing.options.z_loss=1e-4",
            "sharing.options.softcap=3E1",
        ],
    )
    assert cfg.train.lr == pytest.approx(1e-3) and cfg.train.max_steps == 10_000 and cfg.train.warmup_steps == 1000
    assert cfg.train.min_lr_ratio == 0.5 and cfg.seed == 3
    assert cfg.sharing.options == {"z_loss": 1e-4, "softcap": 30.0}
    assert isinstance(cfg.train.max_steps, int) and isinstance(cfg.sharing.options["z_loss"], float)
    assert config_from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ConfigError, match=r"^train.lr=inf must be a finite number in \(0, 100\]"):
        load_config("ptb-gpt-tiny", ["train.lr=inf"])
    with pytest.raises(ConfigError, match=r"^sharing.options.z_loss=-0.0001 must be >= 0"):
        load_config("ptb-gpt-tiny", ["sharing.options.z_loss=-1e-4"])


def test_numbers_in_yaml_files_parse_alike(tmp_path):
    """YAML 1.1 reads 1e-4 and 1E4 as text; where a number is declared they are numbers all the same."""
    text = load_config("ptb-gpt-tiny").to_yaml()
    text = text.replace("lr: 0.003", "lr: 1e-4").replace("max_steps: 600", "max_steps: 1E3")
    assert "lr: 1e-4" in text and "max_steps: 1E3" in text
    text = text.replace("options: {}", "options: {z_loss: 1e-4, init_std: .02}")
    p = tmp_path / "mine.yaml"
    p.write_text(text)
    cfg = load_config(str(p))
    assert cfg.train.lr == pytest.approx(1e-4) and cfg.train.max_steps == 1000
    assert cfg.sharing.options == {"z_loss": 1e-4, "init_std": 0.02}
    assert "z_loss: 0.0001" in cfg.to_yaml()


def test_numbers_in_strategy_options_and_variants_parse_alike():
    from embtie import comparison, sharing
    from embtie.commands.hf_compare import parse_options

    assert sharing.build("tied", vocab_size=10, dim=8, z_loss="1e-4", softcap="3E1").z_loss == pytest.approx(1e-4)
    assert comparison.parse_strategy("zl=tied:z_loss=1e-4:init_std=.02:logit_scale=learned") == (
        "zl",
        "tied",
        {"z_loss": 1e-4, "init_std": 0.02, "logit_scale": "learned"},
    )
    assert parse_options(["tied.z_loss=1e-4", "fixed.target_dim=1_024"]) == {
        "tied": {"z_loss": 1e-4},
        "fixed": {"target_dim": 1024},
    }
    spec = comparison.CompareSpec(
        preset="ptb-gpt-tiny",
        strategies=["zl"],
        seeds=1,
        variants={"zl": ("tied", {"z_loss": 1e-4})},
        overrides=["sharing.options.init_std=1E-2"],
    )
    (run,) = comparison.plan(spec)
    assert run.cfg.sharing.options == {"z_loss": 1e-4, "init_std": 0.01}
    assert "zl=tied:z_loss=0.0001" in spec.command()

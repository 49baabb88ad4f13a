"""``model.name=hf-seq2seq``: a transformers encoder-decoder (Marian, BART) as a translation model. At init its
logits are the unpatched transformers model's own given the same weights (tied and untied with a logits bias,
the embedding scale included); decoding step by step gives teacher forcing's hidden states; source padding is
masked; and a config it cannot train is refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")

import transformers

from embtie import cli, sharing
from embtie.config import load_config
from embtie.data.subwords import BOS, PAD
from embtie.errors import ConfigError
from embtie.hf.seq2seq_body import seq2seq_config
from embtie.hf.sources import read_model_config
from embtie.models.hf_seq2seq import HFSeq2Seq, HFSeq2SeqConfig

V = 50
PRESET = "multi30k-hf-marian-tiny"
BART = {"model_type": "bart", "d_model": 32, "encoder_layers": 1, "decoder_layers": 2, "encoder_attention_heads": 2,
        "decoder_attention_heads": 4, "encoder_ffn_dim": 64, "decoder_ffn_dim": 64, "max_position_embeddings": 64,
        "scale_embedding": True}  # fmt: skip


def _spec(model_type: str, folder: Path) -> str:
    if model_type == "marian":
        return "marian-tiny"
    path = folder / "bart.json"
    path.write_text(json.dumps(BART))
    return str(path)


def _batch() -> tuple[torch.Tensor, torch.Tensor]:
    """src (3, 7) with padding in two rows, tgt_in (3, 5) starting with BOS."""
    g = torch.Generator().manual_seed(5)
    src = torch.randint(4, V, (3, 7), generator=g)
    src[1, 5:] = PAD
    src[2, 3:] = PAD
    tgt = torch.randint(4, V, (3, 5), generator=g)
    tgt[:, 0] = BOS
    return src, tgt


def _adapter(spec: str, strategy: str, **options: object) -> HFSeq2Seq:
    torch.manual_seed(0)
    config = HFSeq2SeqConfig(hf=spec)
    s = sharing.build(strategy, vocab_size=V, dim=config.embedding_dim, embed_scale="sqrt_d", **options)
    return HFSeq2Seq(config, s, sharing_options={"embed_scale": "sqrt_d", **options}).eval()


def _reference(model: HFSeq2Seq) -> torch.nn.Module:
    """The stock transformers model of the adapter's config with the adapter's weights: its body's, the
    sharing object's E as the shared, encoder and decoder tables, O (or E) as lm_head and the bias as
    final_logits_bias."""
    s = model.sharing
    out = s.separate_output_weight()
    config = seq2seq_config(read_model_config(model.config.hf), V)
    config.tie_word_embeddings = out is None
    ref = transformers.AutoModelForSeq2SeqLM.from_config(config).eval()
    own = ref.state_dict()
    body = {k: v for k, v in model.body.state_dict().items() if k in own and own[k].shape == v.shape}
    missing = set(own) - set(body)
    assert all("embed_tokens" in k or "shared" in k or "lm_head" in k or "final_logits_bias" in k for k in missing)
    ref.load_state_dict(body, strict=False)
    with torch.no_grad():
        for table in (ref.get_input_embeddings(), ref.get_encoder().embed_tokens, ref.get_decoder().embed_tokens):
            table.weight.copy_(s.weight)  # untied, transformers 5 ties none of these to the shared table
        ref.get_output_embeddings().weight.copy_(s.weight if out is None else out)
        ref.final_logits_bias.copy_(torch.zeros(1, V) if s.bias is None else s.bias[None])
    return ref


@pytest.mark.parametrize("model_type", ["marian", "bart"])
@pytest.mark.parametrize(("strategy", "options"), [("tied", {}), ("untied", {"bias": True})])
def test_logits_at_init_are_the_transformers_models_own(tmp_path, model_type, strategy, options):
    model = _adapter(_spec(model_type, tmp_path), strategy, **options)
    if model.sharing.bias is not None:
        with torch.no_grad():
            model.sharing.bias.normal_()  # a nonzero logits bias: final_logits_bias in the reference
    ref = _reference(model)
    assert (ref.config.pad_token_id, ref.config.decoder_start_token_id) == (PAD, BOS)
    src, tgt_in = _batch()
    with torch.no_grad():
        expected = ref(input_ids=src, attention_mask=src != PAD, decoder_input_ids=tgt_in).logits
        got = model.sharing.logits(model(src, tgt_in))
    assert got.shape == (3, 5, V)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("model_type", ["marian", "bart"])
def test_step_by_step_decoding_gives_teacher_forcings_states(tmp_path, model_type):
    """Decoding recomputes the decoder over the prefix; each step's h is forward's h at that position, also
    after beam search's row reordering (rows 2, 0, 0)."""
    model = _adapter(_spec(model_type, tmp_path), "tied")
    src, tgt_in = _batch()
    with torch.no_grad():
        h = model(src, tgt_in)
        state = model.start(src)
        for t in range(tgt_in.shape[1]):
            h_t, state = model.step(tgt_in[:, t], state)
            torch.testing.assert_close(h_t, h[:, t], rtol=1e-5, atol=1e-5)
        index = torch.tensor([2, 0, 0])
        reordered = model.reorder_state(state, index)
        nxt = torch.full((3,), 7)
        h_r, _ = model.step(nxt, reordered)
        h_full = model(src[index], torch.cat([tgt_in[index], nxt[:, None]], dim=1))
    torch.testing.assert_close(h_r, h_full[:, -1], rtol=1e-5, atol=1e-5)


def test_source_padding_is_masked():
    """A padded source row decodes as the same sentence without its padding."""
    model = _adapter("marian-tiny", "tied")
    src, tgt_in = _batch()
    with torch.no_grad():
        padded = model(src, tgt_in)[2]
        alone = model(src[2:3, :3], tgt_in[2:3])[0]
    torch.testing.assert_close(padded, alone, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "override",
    ["data.vocab=separate", "data.share_encoder_embedding=false"],
)
def test_a_vocabulary_the_one_table_cannot_serve_is_a_config_error(override, capsys):
    fix = r"set data\.vocab=joint and data\.share_encoder_embedding=true"
    with pytest.raises(ConfigError, match=rf"model 'hf-seq2seq' embeds source and target with one table.*{fix}"):
        load_config(PRESET, [override])
    assert cli.main(["train", PRESET, override, "--out", "/nonexistent/run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "data.share_encoder_embedding=true" in err[0]


def test_configs_hf_seq2seq_cannot_train_are_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"gpt2 is a causal LM: train it with model\.name=hf on the lm task"):
        load_config(PRESET, ["model.hf=gpt2-tiny"])
    with pytest.raises(ConfigError, match="is a save_pretrained folder; hf-seq2seq trains fresh weights"):
        load_config(PRESET, [f"model.hf={tmp_path}"])
    separate = tmp_path / "marian.json"
    separate.write_text(json.dumps({"model_type": "marian", "d_model": 16, "share_encoder_decoder_embeddings": False}))
    with pytest.raises(ConfigError, match="set share_encoder_decoder_embeddings to true"):
        load_config(PRESET, [f"model.hf={separate}"])
    with pytest.raises(ConfigError, match=r"data\.max_len=300 \+ 1 \(EOS\) > model\.max_len=256"):
        load_config(PRESET, ["data.max_len=300"])
    with pytest.raises(ConfigError, match=r"marian is an encoder-decoder.*model\.name=hf-seq2seq"):
        load_config("ptb-hf-gpt2-tiny", ["model.hf=marian-tiny"])


def test_an_embedding_scale_the_model_does_not_apply_is_one_line_and_no_run_folder(tmp_path, capsys):
    """marian-tiny scales its embeddings by sqrt(128) (scale_embedding): a sharing object without that scale is
    refused when the model is built, before anything is written."""
    out = tmp_path / "run"
    argv = ["train", PRESET, "sharing.options.embed_scale=1", "data.train_pairs=600", "data.vocab_size=200"]
    assert cli.main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "scales its embeddings by 11.3137" in err[0]
    assert "set sharing.options.embed_scale='sqrt_d'" in err[0]
    assert not out.exists()

"""Translation data: BPE round trip and cache, token-count batches, padding kept out of the loss, files."""

import pytest
import torch

from embtie import sharing
from embtie.data.pair_batches import BucketedPairs, make_batch
from embtie.data.parallel_corpora import load_parallel, load_user_files
from embtie.data.subwords import BOS, EOS, PAD, Subwords, train_subwords
from embtie.errors import DataError

TEXT = [
    "Ein Mann fährt mit dem Fahrrad.",
    "Zwei Hunde spielen im Schnee.",
    "A man rides a bicycle.",
    "Two dogs are playing in the snow.",
    "Eine Frau liest ein Buch im Park.",
    "A woman is reading a book in the park.",
] * 5


def test_bpe_round_trip_and_cache(tmp_path):
    model = train_subwords(TEXT, 60, cache_dir=tmp_path)
    sw = Subwords(model)
    assert (sw.pad_id, sw.unk_id, sw.bos_id, sw.eos_id) == (0, 1, 2, 3)
    for s in [*TEXT[:6], "Zwei Männer lesen."]:
        ids = sw.encode(s)
        assert all(i > EOS for i in ids)
        assert sw.decode(ids) == s
    assert len(sw.pieces("bicycle")) < len("bicycle")  # merges were learned
    mtime = model.stat().st_mtime_ns
    assert train_subwords(TEXT, 60, cache_dir=tmp_path) == model  # reused, not retrained
    assert model.stat().st_mtime_ns == mtime
    assert train_subwords(TEXT, 50, cache_dir=tmp_path) != model  # other settings: another model


def test_a_vocab_size_beyond_the_text_is_noted_with_the_size_learned(tmp_path, capsys):
    model = train_subwords(TEXT, 5000, cache_dir=tmp_path)
    got = len(Subwords(model))
    assert got < 5000
    note = capsys.readouterr().err.strip()
    assert note == (
        f"embtie: note: data.vocab_size=5000 is more than this training text supports; the subword model has "
        f"{got} pieces (set data.vocab_size={got} to make it explicit)"
    )
    train_subwords(TEXT, 5000, cache_dir=tmp_path)  # cached: noted again
    assert f"has {got} pieces" in capsys.readouterr().err
    train_subwords(TEXT, got, cache_dir=tmp_path)
    assert capsys.readouterr().err == ""


def test_batches_respect_the_token_budget_and_cover_every_pair():
    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(1, 30, (200,), generator=g).tolist()
    src = [[5] * n for n in lengths]
    tgt = [[6] * max(1, n // 2) for n in lengths]
    data = BucketedPairs(src, tgt, max_tokens=120, max_len=25)
    kept = [i for i, n in enumerate(lengths) if n <= 25]
    seen = []
    n_batches = None
    for epoch in range(2):
        batches = data.batches(torch.Generator().manual_seed(epoch))
        assert n_batches in (None, len(batches))  # same partition size every epoch
        n_batches = len(batches)
        seen = sorted(i for b in batches for i in b)
        assert seen == kept
        for idx in batches:
            b = make_batch([src[i] for i in idx], [tgt[i] for i in idx], idx)
            assert b.src.numel() <= 120 or len(idx) == 1
            assert (b.tgt_in[:, 0] == BOS).all()
            assert ((b.tgt_out == EOS).sum(1) == 1).all()
            # buckets: lengths in one batch are close (sorted before cutting)
            assert max(lengths[i] for i in idx) - min(lengths[i] for i in idx) <= 3


def test_padding_never_contributes_to_the_loss():
    torch.manual_seed(0)
    s = sharing.build("tied", vocab_size=20, dim=8)
    src = [[5, 6, 7], [8]]
    tgt = [[9, 10, 11, 12], [13]]
    b = make_batch(src, tgt, [0, 1])
    assert b.num_target_tokens == 5 + 2
    h = torch.randn(*b.tgt_out.shape, 8)
    batch_loss = s.loss(h, b.tgt_out, ignore_index=PAD, label_smoothing=0.1)
    # the same rows alone, without padding, weighted by their token counts
    l0 = s.loss(h[0:1, :5], b.tgt_out[0:1, :5], label_smoothing=0.1)
    l1 = s.loss(h[1:2, :2], b.tgt_out[1:2, :2], label_smoothing=0.1)
    assert torch.allclose(batch_loss, (5 * l0 + 2 * l1) / 7, atol=1e-6)
    h2 = h.clone()
    h2[1, 2:] = 1e3  # garbage hidden states at padded positions change nothing
    assert torch.allclose(s.loss(h2, b.tgt_out, ignore_index=PAD, label_smoothing=0.1), batch_loss)


def test_real_corpora_load_with_checksums():
    m = load_parallel("multi30k", "valid", "de", "en")
    assert len(m) == 1014 and len(m.ref) == 1014
    assert m.ref[0][0].isupper()  # truecased raw text
    iw = load_parallel("iwslt14", "valid", "en", "de")
    assert len(iw) == 7283
    with pytest.raises(DataError, match="train_src_file"):
        load_parallel("iwslt14", "train", "de", "en")
    with pytest.raises(DataError, match="--src-file"):
        load_parallel("multi30k", "test", "de", "en")
    with pytest.raises(DataError, match="de->en or en->de"):
        load_parallel("multi30k", "valid", "de", "de")


def test_user_files(tmp_path):
    (tmp_path / "s.txt").write_text("Hallo Welt.\nGuten Tag.\n", encoding="utf-8")
    (tmp_path / "r.txt").write_text("Hello world.\nGood day.\n", encoding="utf-8")
    (tmp_path / "bad.txt").write_text("one line\n", encoding="utf-8")
    pt = load_user_files(tmp_path / "s.txt", tmp_path / "r.txt")
    assert pt.src == ["Hallo Welt.", "Guten Tag."] and pt.ref == ["Hello world.", "Good day."]
    with pytest.raises(DataError, match="line-aligned"):
        load_user_files(tmp_path / "s.txt", tmp_path / "bad.txt")
    with pytest.raises(DataError, match="does not exist"):
        load_user_files(tmp_path / "missing.txt")

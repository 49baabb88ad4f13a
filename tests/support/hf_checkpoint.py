"""A pretrained Hugging Face checkpoint made in seconds: a tiny GPT-2 trained on the start of WikiText-2 with a
word-level tokenizer, saved with save_pretrained beside that tokenizer (what a user downloads from a hub)."""

from __future__ import annotations

from pathlib import Path

import torch

from embtie.data.lm_corpora import Corpus, Vocab, load_corpus_tokens

WORDS = 3000
"""the tokenizer keeps the most frequent WikiText-2 words (<unk> and <eos> included)."""


def _tokenizer(words: list[str]):
    import tokenizers
    import transformers

    table = {w: i for i, w in enumerate(words)}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab=table, unk_token="<unk>"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", eos_token="<eos>")


def make_checkpoint(folder: Path, steps: int = 60, tied: bool = True, seed: int = 0) -> Path:
    """Train a 1-layer, 32-wide GPT-2 for ``steps`` Adam steps on WikiText-2 (batch 8 x 32 tokens) and save it
    with its tokenizer in ``folder``. ``tied=False``: an untied checkpoint (its head drawn apart from E)."""
    import transformers

    torch.manual_seed(seed)
    train = load_corpus_tokens(Corpus("wikitext-2"), "train")[:200_000]
    vocab = Vocab.of_corpus(train)
    words = [*[w for w in vocab.itos if w not in ("<unk>", "<eos>")][: WORDS - 2], "<unk>", "<eos>"]
    tokenizer = _tokenizer(words)
    table = {w: i for i, w in enumerate(words)}
    ids = torch.tensor([table.get(w, table["<unk>"]) for w in train])
    config = transformers.GPT2Config(vocab_size=len(words), n_embd=32, n_layer=1, n_head=2, n_positions=64,
                                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, tie_word_embeddings=tied,
                                     bos_token_id=table["<eos>"], eos_token_id=table["<eos>"])  # fmt: skip
    model = transformers.GPT2LMHeadModel(config).train()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    windows = ids[: (len(ids) // 33) * 33].view(-1, 33)
    for _ in range(steps):
        batch = windows[torch.randint(0, len(windows), (8,))]
        loss = model(input_ids=batch, labels=batch).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder

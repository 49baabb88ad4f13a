"""Overrides that make ``ptb-gpt-tiny`` a run of a few seconds, shared by the training tests."""

TINY_GPT_BODY = [
    "model.dim=16",
    "model.n_layers=1",
    "model.n_heads=2",
    "model.max_len=16",
    "model.dropout=0.1",
    "data.bptt=16",
    "data.batch_size=4",
    "data.eval_batch_size=8",
    "data.train_tokens=20000",
    "data.valid_tokens=512",
    "train.progress=false",
    "train.threads=1",
    "train.log_every=2",
]
"""a 1-layer, 16-wide GPT on the first 20,000 PTB training tokens, validated on 512 tokens, one thread."""

TINY_GPT = [
    "model.dim=32",
    "model.n_layers=1",
    "model.n_heads=2",
    "model.max_len=32",
    "data.bptt=32",
    "data.batch_size=8",
    "data.eval_batch_size=8",
    "train.progress=false",
    "train.warmup_steps=10",
    "train.lr=0.01",
    "train.log_every=10",
    "train.threads=1",
    "data.valid_tokens=8192",
]
"""a 1-layer, 32-wide GPT on all PTB training tokens (learning-rate 0.01), validated on 8,192 tokens."""


def overridden(base: list[str], *extra: str) -> list[str]:
    """``base`` with the keys of ``extra`` replaced by ``extra``'s values: a command given a key twice prints a
    note on stderr (the last value is used), an extra line for tests that read its one error line."""
    keys = {word.split("=", 1)[0] for word in extra}
    return [word for word in base if word.split("=", 1)[0] not in keys] + list(extra)

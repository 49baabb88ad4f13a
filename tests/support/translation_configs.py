"""A tiny translation config (Multi30k De->En, a 1+1-layer 32-wide transformer, 200 BPE pieces, 600 training
pairs) that trains in seconds, shared by the translation tests."""

TINY = {
    "task": "translation",
    "seed": 0,
    "data": {"dataset": "multi30k", "vocab_size": 200, "train_pairs": 600, "max_tokens": 1200, "beam": 2},
    "model": {
        "name": "transformer",
        "dim": 32,
        "enc_layers": 1,
        "dec_layers": 1,
        "heads": 2,
        "ffn_dim": 64,
        "dropout": 0.0,
        "pre_norm": True,
        "max_positions": 128,
    },
    "sharing": {"name": "tied", "options": {"embed_scale": "sqrt_d"}},
    "train": {
        "lr": 3e-3,
        "betas": [0.9, 0.98],
        "schedule": "inverse_sqrt",
        "warmup_steps": 5,
        "epochs": None,
        "max_steps": 24,
        "checkpoint_every": 8,
        "keep_checkpoints": 3,
        "eval_batches": 1,
        "log_every": 4,
        "progress": False,
    },
}

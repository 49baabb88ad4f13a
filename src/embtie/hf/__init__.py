"""Hugging Face integration: any embtie sharing strategy on a transformers model.

    import embtie.hf
    model = GPT2LMHeadModel(config)               # or from_pretrained(...)
    embtie.hf.apply(model, "l2norm")              # E, and the logits, now come from one sharing object
    model(input_ids, labels=input_ids).loss       # = sharing.loss(h, next tokens) + sharing.regularization()
    model.generate(...); Trainer(model=model, ...).train()
    model.save_pretrained(path); model = embtie.hf.load(path)
    embtie.hf.export(model, out)                  # stock weights: AutoModelForCausalLM.from_pretrained(out)

Supported model types: see ``embtie.hf.families.FAMILIES``. Needs the ``hf`` extra:
``pip install 'embtie[hf]'``.
"""

from embtie.hf._require import MissingExtraError, require_transformers

require_transformers()

from embtie.hf.families import FAMILIES  # noqa: E402
from embtie.hf.fold import NotFoldableError  # noqa: E402
from embtie.hf.loading import load  # noqa: E402
from embtie.hf.patch import adopt, apply, is_patched, sharing_of  # noqa: E402
from embtie.hf.stock_weights import ExportResult, export  # noqa: E402

__all__ = [
    "FAMILIES",
    "ExportResult",
    "MissingExtraError",
    "NotFoldableError",
    "adopt",
    "apply",
    "export",
    "is_patched",
    "load",
    "require_transformers",
    "sharing_of",
]

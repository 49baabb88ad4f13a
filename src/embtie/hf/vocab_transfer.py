"""A pretrained checkpoint's token rows, rearranged to the vocabulary of embtie's task.

embtie's ``lm`` task numbers its tokens itself (by training frequency); a checkpoint numbers them by its
tokenizer. Each task token takes the checkpoint's row of the same string (``<eos>``/``<unk>`` also match the
tokenizer's eos/unk token); a token the checkpoint never saw starts at the mean of its rows (transformers'
``mean_resizing`` choice: no row far out of the trained distribution). A tied checkpoint stays tied (one
table), an untied one keeps its output matrix, rearranged the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor, nn

from embtie.errors import DataError
from embtie.hf._require import require_transformers

SPECIALS = {"<eos>": "eos_token", "<unk>": "unk_token"}
"""embtie's special tokens -> the tokenizer attribute naming the checkpoint's counterpart."""


TOKENIZER_FILES = ("tokenizer_config.json", "tokenizer.json")
"""one of them is in every folder ``tokenizer.save_pretrained`` writes (transformers 5 otherwise returns an
empty tokenizer of the model's family)."""


@dataclass(frozen=True)
class Transfer:
    """How the task's vocabulary met the checkpoint's."""

    rows: Tensor
    """(V_task,) long: the checkpoint row of each task token, -1 where it has none."""

    @property
    def missing(self) -> int:
        """Task tokens the checkpoint has no row for (they start at the mean row)."""
        return int(self.rows.lt(0).sum())


def checkpoint_tokens(folder: str | Path) -> dict[str, int]:
    """token -> row of the checkpoint's tokenizer (saved in ``folder`` with ``tokenizer.save_pretrained``),
    its eos/unk tokens also under embtie's ``<eos>``/``<unk>``."""
    transformers = require_transformers()
    fix = "the rows of a pretrained embedding belong to tokens: save the tokenizer beside the weights "
    fix += "(tokenizer.save_pretrained(folder))"
    if not any((Path(folder) / name).is_file() for name in TOKENIZER_FILES):
        raise DataError(f"{folder} holds no tokenizer (no {' or '.join(TOKENIZER_FILES)}); {fix}")
    try:
        tok = transformers.AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    except (OSError, ValueError) as e:
        why = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
        raise DataError(f"{folder} holds no tokenizer that loads ({why}); {fix}") from None
    table = dict(tok.get_vocab())
    for ours, attr in SPECIALS.items():
        theirs = getattr(tok, attr)  # foreign: a transformers tokenizer (None when it has no such token)
        if ours not in table and theirs is not None and theirs in table:
            table[ours] = table[theirs]
    return table


def match(vocabulary: Sequence[str], table: dict[str, int]) -> Transfer:
    """The checkpoint row of every task token (-1: none)."""
    return Transfer(torch.tensor([table.get(t, -1) for t in vocabulary], dtype=torch.long))


def _rearranged(weight: Tensor, transfer: Transfer) -> Tensor:
    """(V_ckpt, d) -> (V_task, d): row i is the checkpoint's row ``transfer.rows[i]``, or the mean row."""
    found = transfer.rows.ge(0)
    out = weight.detach().mean(dim=0, keepdim=True).expand(len(transfer.rows), -1).clone()
    out[found] = weight.detach()[transfer.rows[found]]
    return out


def transfer_tables(model: nn.Module, transfer: Transfer) -> None:
    """Give the stock ``model`` token tables of the task's vocabulary (in place), tied as they were."""
    inp, out = model.get_input_embeddings(), model.get_output_embeddings()
    tied = out.weight is inp.weight
    v = len(transfer.rows)
    new_in = nn.Embedding(v, inp.weight.shape[1], dtype=inp.weight.dtype, device=inp.weight.device)
    with torch.no_grad():
        new_in.weight.copy_(_rearranged(inp.weight, transfer))
    model.set_input_embeddings(new_in)
    new_out = nn.Linear(out.weight.shape[1], v, bias=False, dtype=out.weight.dtype, device=out.weight.device)
    if tied:
        new_out.weight = new_in.weight
    else:
        with torch.no_grad():
            new_out.weight.copy_(_rearranged(out.weight, transfer))
    model.set_output_embeddings(new_out)
    model.config.get_text_config().vocab_size = v

"""The Python API's bad-input class of the reliability campaign (bench/reliability_campaign.sh, issue 30):
every registered strategy fed wrong ids, shapes and dtypes, and ``sharing.build`` fed wrong sizes and
options. One line per case: NO ERROR, or the exception's type, the file it came from and its first line.

    python -m bench.reliability_api
"""

from __future__ import annotations

import traceback
from collections.abc import Callable

import torch

from embtie import sharing


def case(name: str, fn: Callable[[], object]) -> None:
    """Call ``fn`` and print how it ended: NO ERROR, or the exception and where it was raised."""
    try:
        fn()
        print(f"{name:42s} NO ERROR")
    except Exception as e:
        tb = traceback.extract_tb(e.__traceback__)
        where = tb[-1].filename.split("site-packages/")[-1].split("/src/")[-1]
        print(f"{name:42s} {type(e).__name__} @ {where}: {str(e).splitlines()[0][:160]}")


def strategy_cases(name: str, st: sharing.SharingStrategy) -> None:
    """The bad inputs of one strategy built at V=100, d=16 (h: a (2, 3, 16) batch of hidden states)."""
    h = torch.randn(2, 3, 16)
    case(f"{name}: embed float ids", lambda: st.embed(torch.rand(2, 3)))
    case(f"{name}: embed id out of range", lambda: st.embed(torch.tensor([[1, 100]])))
    case(f"{name}: embed negative id", lambda: st.embed(torch.tensor([[-1, 2]])))
    case(f"{name}: logits wrong dim", lambda: st.logits(torch.randn(2, 3, 17)))
    case(f"{name}: logits int h", lambda: st.logits(torch.ones(2, 3, 16, dtype=torch.long)))
    case(f"{name}: loss target shape", lambda: st.loss(h, torch.zeros(2, 4, dtype=torch.long)))
    case(f"{name}: loss target range", lambda: st.loss(h, torch.full((2, 3), 100)))
    case(f"{name}: loss float targets", lambda: st.loss(h, torch.zeros(2, 3)))
    case(f"{name}: logits list", lambda: st.logits([[0.0] * 16]))  # type: ignore[arg-type]


def main() -> None:
    names = sharing.names()
    print("strategies:", names)
    print(type(sharing.build("tied", vocab_size=100, dim=16)))
    for n in names:
        try:
            st = sharing.build(n, vocab_size=100, dim=16)
        except Exception as e:
            print(f"build {n}: {type(e).__name__}: {e}")
            continue
        strategy_cases(n, st)
    case("build vocab 0", lambda: sharing.build("tied", vocab_size=0, dim=16))
    case("build dim -1", lambda: sharing.build("tied", vocab_size=10, dim=-1))
    case("build unknown option", lambda: sharing.build("fixed", vocab_size=10, dim=4, colour=1))
    case("build vocab float", lambda: sharing.build("tied", vocab_size=10.5, dim=4))  # type: ignore[arg-type]


if __name__ == "__main__":
    main()

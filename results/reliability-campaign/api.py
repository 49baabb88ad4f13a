import traceback
import torch
import embtie
from embtie import sharing

def case(name, fn):
    try:
        fn(); print(f"{name:42s} NO ERROR")
    except Exception as e:  # noqa
        tb = traceback.extract_tb(e.__traceback__)
        where = tb[-1].filename.split("site-packages/")[-1].split("/src/")[-1]
        print(f"{name:42s} {type(e).__name__} @ {where}: {str(e).splitlines()[0][:160]}")

names = sharing.names() if hasattr(sharing, "names") else None
print("strategies:", names)
s = sharing.build("tied", vocab_size=100, dim=16) if hasattr(sharing, "build") else None
print(type(s))
for n in names:
    try:
        st = sharing.build(n, vocab_size=100, dim=16)
    except Exception as e:
        print(f"build {n}: {type(e).__name__}: {e}"); continue
    h = torch.randn(2, 3, 16)
    case(f"{n}: embed float ids", lambda: st.embed(torch.rand(2, 3)))
    case(f"{n}: embed id out of range", lambda: st.embed(torch.tensor([[1, 100]])))
    case(f"{n}: embed negative id", lambda: st.embed(torch.tensor([[-1, 2]])))
    case(f"{n}: logits wrong dim", lambda: st.logits(torch.randn(2, 3, 17)))
    case(f"{n}: logits int h", lambda: st.logits(torch.ones(2, 3, 16, dtype=torch.long)))
    case(f"{n}: loss target shape", lambda: st.loss(h, torch.zeros(2, 4, dtype=torch.long)))
    case(f"{n}: loss target range", lambda: st.loss(h, torch.full((2, 3), 100)))
    case(f"{n}: loss float targets", lambda: st.loss(h, torch.zeros(2, 3)))
    case(f"{n}: logits list", lambda: st.logits([[0.0] * 16]))
case("build vocab 0", lambda: sharing.build("tied", vocab_size=0, dim=16))
case("build dim -1", lambda: sharing.build("tied", vocab_size=10, dim=-1))
case("build unknown option", lambda: sharing.build("fixed", vocab_size=10, dim=4, colour=1))
case("build vocab float", lambda: sharing.build("tied", vocab_size=10.5, dim=4))

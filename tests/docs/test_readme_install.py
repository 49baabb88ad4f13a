"""The README installs torch one way (issue 52): the "Your own data" block takes CPU torch from PyTorch's CPU
index before embtie, as the Install section does, never a bare `pip install ./embtie` that resolves CUDA
wheels on a CPU machine."""

from __future__ import annotations

from doc_blocks import REPO, blocks_of


def _block_under(heading: str) -> list[str]:
    """The lines of the first bash block below ``heading`` in README.md."""
    readme = REPO / "README.md"
    start = readme.read_text(encoding="utf-8").splitlines().index(heading) + 1
    block = next(b for b in blocks_of(readme) if b.line > start and b.lang == "bash")
    return [line.split("  #")[0].strip() for line in block.code.splitlines()]


def test_your_own_data_installs_cpu_torch_as_the_install_section_does():
    install, own = _block_under("## Install"), _block_under("## Your own data")
    torch_line = next(line for line in install if line.startswith("pip install torch"))
    assert "--index-url https://download.pytorch.org/whl/cpu" in torch_line
    assert torch_line in own and own.index(torch_line) < own.index("pip install ./embtie")

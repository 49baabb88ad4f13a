"""BENCHMARKS-cuda.md's summary of the 2026-11-27 lending (an H200) is re-computed from the files of that
lending in results/campaign-gpu: the `first` and `lce` steps' sections and the `tests` step's pytest.xml."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CAMPAIGN = ROOT / "results" / "campaign-gpu"
DOC = ROOT / "BENCHMARKS-cuda.md"
SUMMARY = """What the second lending established (2026-11-27: an NVIDIA H200, 16 Xeon cores, the same PyTorch
2.11.0+cu130, TF32 off; `make gpu`'s steps `first`, `tests` and `lce`, their logs and status in
[results/campaign-gpu](results/campaign-gpu); the sections below whose line names the H200; figures re-computed from
those files by tests/docs/test_gpu_figures.py):
- The machine's torch 2.11 could not compile embtie's step at all at first: Dynamo refused the output
  layer's soft-cap shape, a CapShape instance used as a default value ("Unexpected type in sourceless
  builder"; torch 2.13 on the CPU compiles it). The head's defaults are now plain values (tested by
  tests/sharing/test_softcap.py), and a model that fails to compile is named in the section instead
  of ending it.
- Compiled vs eager at GPT-2 small (8 x 256 tokens, fp32): compiling speeds embtie's step up
  {ct_lo:.2f}-{ct_hi:.2f}x (tied, untied, l2norm, cosine; the nanoGPT-style reference {cn:.2f}x), and
  compiled embtie trains {tps_lo:,.0f}-{tps_hi:,.0f} tokens/s, {pct_lo:.1f}-{pct_hi:.1f}% of the reference's
  {tps_ref:,.0f} ({mfu_lo}-{mfu_hi} MFU against its {mfu_ref}): the normalized strategies cost no more than tied
  once compiled. Compiled and eager losses agree to {gap} after the same steps.
- The memory-lean loss against the fused losses (`lce` step): torch 2.11 has no
  `F.linear_cross_entropy`, so the anchor is plain cross-entropy. At 8192 x 32768 x 512 fp32 embtie
  takes {e32:.0f} MiB beyond plain's resident state against plain's {p32:.0f} ({r32:.3f}x) and Liger-Kernel's
  {l32:.0f} ({rl32:.3f}x); in bf16 {e16:.0f} MiB against Liger's {l16:.0f} and Cut Cross-Entropy's {c16:.0f}
  (CCE's backward accepts only bf16/fp16, so it is compared in bf16 alone). **The issue's memory target
  (at or below Liger's and CCE's) is missed**: embtie needs {xl:.1f}x Liger's extra memory (fp32) and {xc:.1f}x
  CCE's (bf16). **The time target (at most 1.0x plain's) is missed too**: {t32lo:.2f}-{t32hi:.2f}x in fp32,
  {t16lo:.2f}-{t16hi:.2f}x in bf16; embtie is faster than Liger-Kernel in every case (Liger
  {tl_lo:.2f}-{tl_hi:.2f}x plain) and than CCE in both bf16 cases. At small token counts chunking saves
  little or costs: {esmall:.3f}x plain's memory at N = 1024, V = 50257, and {ebf:.3f}x (more than plain) at
  N = 512 in bf16. At V = 131072 (8192 tokens, fp32) it takes {big:.3f}x plain's memory at {bigt:.3f}x its time.
- `tests/test_cuda.py` and the fused-loss anchor's tests: {passed} passed, {skipped} skipped (the anchor's
  module: no `F.linear_cross_entropy` in torch 2.11).

"""


def _rows(step: str, first: str) -> list[list[str]]:
    """The table rows of a step's section whose first cell starts with ``first``, as cells."""
    text = (CAMPAIGN / step / "BENCHMARKS-cuda.md").read_text(encoding="utf-8")
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines() if line.startswith("| ")]
    return [r for r in rows if r[0].startswith(first)]


def _cell(step: str, case: str, method: str, col: int, table: int = 0) -> float:
    """Column ``col`` of the ``table``-th row for (case, method) in a step's section."""
    found = [r for r in _rows(step, case) if r[0] == case and r[1] == method]
    return float(found[table][col])


def figures() -> dict[str, Any]:
    comp = {r[2]: r for r in _rows("first", "GPT-2 small")}
    ref, ours = comp.pop("nanoGPT (reference)"), list(comp.values())
    assert sorted(comp) == ["cosine", "l2norm", "tied", "untied"]
    tps = [float(r[7]) for r in ours]
    mfu = sorted(int(r[8].rstrip("%")) for r in ours)
    lce = "lce"
    f32, b16 = "tied N=8192 V=32768 d=512 fp32", "tied N=8192 V=32768 d=512 bf16"

    # the anchor's tables: time (col 4 = / plain wall) comes first, then memory (col 2 = extra MiB, col 4 = / plain)
    def time(case: str, m: str) -> float:
        return _cell(lce, case, m, 4, 0)

    def mem(case: str, m: str, col: int = 2) -> float:
        return _cell(lce, case, m, col, 1)

    cases = sorted({r[0] for r in _rows(lce, "tied N=") if "V=131072" not in r[0]})
    fp32 = [c for c in cases if c.endswith("fp32")]
    bf16 = [c for c in cases if c.endswith("bf16")]
    tests = (CAMPAIGN / "tests" / "pytest.xml").read_text(encoding="utf-8")
    n, skipped = (int(re.search(f'{k}="(\\d+)"', tests).group(1)) for k in ("tests", "skipped"))
    v131 = "tied N=8192 V=131072 d=512 fp32"
    return {
        "ct_lo": min(float(r[5]) for r in ours), "ct_hi": max(float(r[5]) for r in ours), "cn": float(ref[5]),
        "tps_lo": min(tps), "tps_hi": max(tps), "tps_ref": float(ref[7]),
        "pct_lo": 100 * min(tps) / float(ref[7]), "pct_hi": 100 * max(tps) / float(ref[7]),
        "mfu_lo": f"{mfu[0]}%", "mfu_hi": f"{mfu[-1]}%", "mfu_ref": ref[8],
        "gap": max((r[10] for r in ours), key=float),
        "e32": mem(f32, "embtie"), "p32": mem(f32, "plain"), "r32": mem(f32, "embtie", 4),
        "l32": mem(f32, "liger"), "rl32": mem(f32, "liger", 4),
        "e16": mem(b16, "embtie"), "l16": mem(b16, "liger"), "c16": mem(b16, "cce"),
        "xl": mem(f32, "embtie") / mem(f32, "liger"), "xc": mem(b16, "embtie") / mem(b16, "cce"),
        "t32lo": min(time(c, "embtie") for c in fp32), "t32hi": max(time(c, "embtie") for c in fp32),
        "t16lo": min(time(c, "embtie") for c in bf16), "t16hi": max(time(c, "embtie") for c in bf16),
        "tl_lo": min(time(c, "liger") for c in cases), "tl_hi": max(time(c, "liger") for c in cases),
        "esmall": mem("tied N=1024 V=50257 d=768 fp32", "embtie", 4),
        "ebf": mem("tied N=512 V=32768 d=512 bf16", "embtie", 4),
        "big": _cell(lce, v131, "chunked", 4, 0), "bigt": _cell(lce, v131, "chunked", 3, 1),
        "passed": n - skipped, "skipped": skipped,
        "_cce_faster": all(time(c, "embtie") < time(c, "cce") for c in bf16),
        "_liger_slower": all(time(c, "embtie") < time(c, "liger") for c in cases),
    }  # fmt: skip


def test_the_h200_summary_is_what_its_files_say():
    f = figures()
    assert f["_cce_faster"] and f["_liger_slower"]  # "faster than Liger-Kernel in every case and than CCE"
    assert f["xl"] > 1 and f["xc"] > 1 and f["t32lo"] > 1  # the stated misses
    text = DOC.read_text(encoding="utf-8")
    assert SUMMARY.format(**f) in text


def test_every_step_of_the_lending_is_ok_on_the_h200_and_not_a_dry_run():
    import json

    for step in ("first", "tests", "lce"):
        status = json.loads((CAMPAIGN / step / "status.json").read_text(encoding="utf-8"))
        assert status["ok"] and not status["dry_run"] and status["machine"]["gpu"] == "NVIDIA H200", step


def test_docs_gpu_quotes_each_steps_command_seconds():
    import json

    def seconds(step: str) -> float:
        status = json.loads((CAMPAIGN / step / "status.json").read_text(encoding="utf-8"))
        return sum(c["seconds"] for c in status["commands"])

    want = "`first` {:.0f} s of commands, `tests` {:.0f} s, `lce` {:.0f} s".format(
        *map(seconds, ("first", "tests", "lce"))
    )
    assert want in (ROOT / "docs" / "gpu.md").read_text(encoding="utf-8")

"""BENCHMARKS-cuda.md's summaries of the H200 lendings are re-computed from their files in results/campaign-gpu:
2026-11-27, the `first` step's version 1 (kept in first-v1), the `lce` step's sections and the `tests` step's
pytest.xml; 2026-11-28, the `first` step's version 2 and the `train` step's versions 1 (train-v1) and 2."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CAMPAIGN = ROOT / "results" / "campaign-gpu"
DOC = ROOT / "BENCHMARKS-cuda.md"
SUMMARY = """What the second lending established (2026-11-27: an NVIDIA H200, 16 Xeon cores, the same PyTorch
2.11.0+cu130, TF32 off; `make gpu`'s steps `first` (version 1, kept in results/campaign-gpu/first-v1), `tests`
and `lce`, their logs and status in [results/campaign-gpu](results/campaign-gpu); the sections below whose line
names the H200; figures re-computed from those files by tests/docs/test_gpu_figures.py):
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
    comp = {r[2]: r for r in _rows("first-v1", "GPT-2 small")}
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

    for step in ("first-v1", "tests", "lce", "first", "train-v1", "train"):
        status = json.loads((CAMPAIGN / step / "status.json").read_text(encoding="utf-8"))
        assert status["ok"] and not status["dry_run"] and status["machine"]["gpu"] == "NVIDIA H200", step


def test_docs_gpu_quotes_each_steps_command_seconds():
    import json

    def seconds(step: str) -> float:
        status = json.loads((CAMPAIGN / step / "status.json").read_text(encoding="utf-8"))
        return sum(c["seconds"] for c in status["commands"])

    want = "`first` {:.0f} s of commands, `tests` {:.0f} s, `lce` {:.0f} s".format(
        *map(seconds, ("first-v1", "tests", "lce"))
    )
    assert want in (ROOT / "docs" / "gpu.md").read_text(encoding="utf-8")


SUMMARY_1128 = """What the third lending established (2026-11-28: an NVIDIA H200, PyTorch 2.11.0+cu130, triton 3.6.0,
TF32 off; steps `first` (version 2) and `train` (versions 1 and 2, the first kept in results/campaign-gpu/train-v1),
their logs and status in [results/campaign-gpu](results/campaign-gpu); figures re-computed from those files by
tests/docs/test_gpu_figures.py):
- The tiled loss holds no more extra memory than any other method in every case measured ({tiled_lo:.0f}-{tiled_hi:.0f}
  MiB; plain {plain_lo:.0f}-{plain_hi:.0f} MiB where it fit), but **its time misses issue 53's target (at most
  plain's) by far**: {t16lo:.2f}-{t16hi:.2f}x plain's time in bf16 and {t32lo:.1f}-{t32hi:.1f}x in fp32 (Liger-Kernel
  {lg_lo:.2f}-{lg_hi:.2f}x, Cut Cross-Entropy {cce_lo:.2f}-{cce_hi:.2f}x, bf16 and fp32 together where each ran).
  `auto` picked it on CUDA, and embtie's GPT-2 small trained at {first_lo:.3f}-{first_hi:.3f}x the nanoGPT-style
  reference's tokens/s with it. `auto` now runs the plain loss on CUDA up to 2^31 logits (the chunked one
  beyond), and the tiled loss only when asked for by name.
- With that change (`train` step, GPT-2 small at 32 x 1024 tokens, bf16, compiled): tied {tied:.3f}x, untied
  {untied:.3f}x and l2norm {l2norm:.3f}x the reference's {ref:,.0f} tokens/s ({mfu_lo}-{mfu_hi} of the bf16
  datasheet peak; the reference {mfu_ref}): issue 53's training target (at least 0.97x) is met. Tied with the
  chunked loss trained at {chunked_v1:.3f}x in version 1: under torch.compile its operator ran the matmuls in float32
  despite bf16 autocast; fixed, {chunked:.3f}x in version 2 (still slower than plain at this size; open). The tiled
  loss: {tiled:.3f}x (version 1).

"""


def _train(step: str) -> dict[str, list[str]]:
    """The bf16 training table's rows of a step's section (8 cells: model, ms/step, tokens/s, / reference, ...)."""
    return {r[0]: r for r in _rows(step, "") if len(r) == 8 and r[0] != "model" and not r[0].startswith("-")}


def figures_1128() -> dict[str, Any]:
    grid = [r for r in _rows("first", "N=") if r[1] in ("plain", "chunked", "tiled", "liger", "cce")]

    def col(method: str, i: int, dtype: str = "") -> list[float]:
        return [float(r[i]) for r in grid if r[1] == method and r[0].endswith(dtype) and r[i]]

    v1, v2 = _train("train-v1"), _train("train")
    first = [float(r[3]) for k, r in _train("first").items() if k != "nanoGPT (reference)"]
    mfu = sorted(v2[k][4] for k in ("tied", "untied", "l2norm"))
    return {
        "tiled_lo": min(col("tiled", 4)), "tiled_hi": max(col("tiled", 4)),
        "plain_lo": min(col("plain", 4)), "plain_hi": max(col("plain", 4)),
        "t16lo": min(col("tiled", 3, "bf16")), "t16hi": max(col("tiled", 3, "bf16")),
        "t32lo": min(col("tiled", 3, "fp32")), "t32hi": max(col("tiled", 3, "fp32")),
        "lg_lo": min(col("liger", 3)), "lg_hi": max(col("liger", 3)),
        "cce_lo": min(col("cce", 3)), "cce_hi": max(col("cce", 3)),
        "first_lo": min(first), "first_hi": max(first),
        "tied": float(v2["tied"][3]), "untied": float(v2["untied"][3]), "l2norm": float(v2["l2norm"][3]),
        "ref": float(v2["nanoGPT (reference)"][2]), "mfu_lo": mfu[0], "mfu_hi": mfu[-1],
        "mfu_ref": v2["nanoGPT (reference)"][4],
        "chunked_v1": float(v1["tied (chunked loss)"][3]), "chunked": float(v2["tied (chunked loss)"][3]),
        "tiled": float(v1["tied (tiled loss)"][3]),
        "_least": all(c["tiled"] <= min(c.values()) for c in _memory_by_case(grid).values()),
    }  # fmt: skip


def _memory_by_case(grid: list[list[str]]) -> dict[str, dict[str, float]]:
    cases: dict[str, dict[str, float]] = {}
    for r in grid:
        cases.setdefault(r[0], {})[r[1]] = float(r[4])
    return cases


def test_the_third_lending_summary_is_what_its_files_say():
    f = figures_1128()
    assert f["_least"]  # "no more extra memory than any other method in every case"
    assert f["t16lo"] > 1 and min(f["tied"], f["untied"], f["l2norm"]) >= 0.97  # the stated miss and the met target
    assert SUMMARY_1128.format(**f) in DOC.read_text(encoding="utf-8")


def test_the_docs_quote_the_third_lending_as_its_files_say():
    """docs/reference.md and docs/gpu.md round the tiled loss's bf16 time and the first training table."""
    f = figures_1128()
    tiled = f"{f['t16lo']:.1f}-{f['t16hi']:.1f}x plain's time in bf16"
    assert tiled in (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    gpu = (ROOT / "docs" / "gpu.md").read_text(encoding="utf-8")
    assert tiled in gpu and f"trained at {f['first_hi']:.2f}x the reference" in gpu
    v1 = _train("train-v1")
    assert f"tied {float(v1['tied'][3]):.3f}x" in gpu
    assert f"{f['chunked_v1']:.3f}x -> {f['chunked']:.3f}x" in gpu

"""comparison.confirmation_report: a verdict re-run on fresh seeds reads confirmed when the fresh folder
agrees and contradicted when its difference goes the other way; the pooled column puts each folder's machine
in a block (here the default job's own folder, and a copy whose untied runs are made 20% worse); a folder of
another design is refused in one line. bench/confirm.py, the old entry point, prints the same table."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from bench.confirm import main as bench_confirm

from embtie.comparison.confirmation_report import confirmation_report
from embtie.errors import ConfigError

JOB = Path(__file__).resolve().parents[2] / "results" / "default-job" / "make-run"


def _copy(tmp: Path, name: str, untied_factor: float, command: str | None = None) -> Path:
    out = tmp / name
    out.mkdir()
    saved = json.loads((JOB / "results.json").read_text(encoding="utf-8"))
    for row in saved["rows"]:
        if row["strategy"] == "untied":
            row["valid_ppl"] *= untied_factor
    if command is not None:
        saved["command"] = command
    (out / "results.json").write_text(json.dumps(saved), encoding="utf-8")
    return out


def test_fresh_folders_confirm_or_contradict_and_pool(tmp_path):
    same, worse = _copy(tmp_path, "same", 1.0), _copy(tmp_path, "worse", 1.2)
    table = confirmation_report(JOB, [same]).splitlines()
    untied = next(line for line in table if line.startswith("| untied |"))
    assert "better (-9.14, 5 pairs): confirmed" in untied and "| better, -9.14 [" in untied
    assert table[-1].endswith("confirmed: untied, tied-loginit; contradicted: none; undecided: none.")
    table = confirmation_report(JOB, [same, worse]).splitlines()
    untied = next(line for line in table if line.startswith("| untied |"))
    loginit = next(line for line in table if line.startswith("| tied-loginit |"))
    assert ": contradicted" in untied and "10 pairs, 2 machines" in untied
    assert loginit.count(": confirmed") == 2
    assert table[-1].endswith("confirmed: tied-loginit; contradicted: untied; undecided: none.")
    out = tmp_path / "confirmation.md"
    assert bench_confirm([str(JOB), str(same), str(worse), "--out", str(out)]) == 0
    assert out.read_text().splitlines() == table
    shutil.rmtree(tmp_path / "same")


def test_a_folder_of_another_design_is_refused_in_one_line(tmp_path):
    other = _copy(
        tmp_path, "other", 1.0, command="embtie compare ptb-gpt-tiny --strategies tied,untied,l2norm --seeds 5"
    )
    with pytest.raises(ConfigError) as err:
        confirmation_report(JOB, [other])
    line = str(err.value)
    assert "\n" not in line and "another design" in line
    assert "strategies: tied,untied,tied-loginit -> tied,untied,l2norm" in line


def _subset(tmp: Path, name: str, keep: set[str], untied_factor: float = 1.0) -> Path:
    """A copy that re-ran only the strategies ``keep`` (its command says so, as `embtie compare` writes it)."""
    out = _copy(tmp, name, untied_factor)
    saved = json.loads((out / "results.json").read_text(encoding="utf-8"))
    saved["rows"] = [r for r in saved["rows"] if r["strategy"] in keep]
    saved["command"] = saved["command"].replace("tied,untied,tied-loginit", ",".join(sorted(keep)))
    (out / "results.json").write_text(json.dumps(saved), encoding="utf-8")
    return out


def test_a_subset_keeping_the_baseline_is_a_re_check_of_its_strategies_only(tmp_path):
    part = _subset(tmp_path, "part", {"tied", "untied"})
    table = confirmation_report(JOB, [part]).splitlines()
    untied = next(line for line in table if line.startswith("| untied |"))
    loginit = next(line for line in table if line.startswith("| tied-loginit |"))
    assert "better (-9.14, 5 pairs): confirmed" in untied and "5 pairs, 1 machine |" in untied
    assert loginit.endswith("| - | - (not re-run) |")
    no_baseline = _subset(tmp_path, "no-baseline", {"untied", "tied-loginit"})
    with pytest.raises(ConfigError, match="another design"):
        confirmation_report(JOB, [no_baseline])


def test_pool_original_adds_the_original_as_a_block_and_one_machine_is_one_block(tmp_path):
    """The original (5 pairs) and a copy 20% worse: pooled, the blocks' means are averaged, each counting once;
    two folders recorded as one machine are one block whose pairs are all counted."""
    worse = _subset(tmp_path, "worse", {"tied", "untied"}, 1.2)
    alone = next(line for line in confirmation_report(JOB, [worse]).splitlines() if line.startswith("| untied |"))
    pooled = confirmation_report(JOB, [worse], pool_original=True).splitlines()
    assert "pooled over machines, the original's included |" in pooled[2]
    untied = next(line for line in pooled if line.startswith("| untied |"))
    assert alone.endswith("5 pairs, 1 machine |") and untied.endswith("10 pairs, 2 machines |")
    saved = json.loads((JOB / "results.json").read_text(encoding="utf-8"))
    pairs = [(r["valid_ppl"], next(b["valid_ppl"] for b in saved["rows"]
              if b["strategy"] == "tied" and b["seed"] == r["seed"]))
             for r in saved["rows"] if r["strategy"] == "untied"]  # fmt: skip
    own = sum(100 * (u / t - 1) for u, t in pairs) / len(pairs)
    made_worse = sum(100 * (1.2 * u / t - 1) for u, t in pairs) / len(pairs)
    assert f", {(own + made_worse) / 2:+.2f} [" in untied  # the unweighted mean of the two blocks' means
    import embtie.comparison.confirmation_report as report

    twin = _subset(tmp_path, "twin", {"tied", "untied"}, 1.2)
    machines = {"worse": "one CPU", "twin": "one CPU"}
    original_machine = report.machine
    report.machine = lambda f: machines.get(Path(f).name, original_machine(f))  # type: ignore[assignment]
    try:
        merged = next(line for line in confirmation_report(JOB, [worse, twin]).splitlines()
                      if line.startswith("| untied |"))  # fmt: skip
    finally:
        report.machine = original_machine  # type: ignore[assignment]
    assert merged.endswith("10 pairs, 1 machine |")


def _recorded(folder: Path, cpu_id: str | None) -> Path:
    """Give a copied folder one run summary that records its machine (with or without the CPU's family)."""
    numerics = {"cpu": "AMD EPYC", "cpu_capability": "AVX512", "kernel_env": {}, "threads": 1, "torch": "2.13.0+cpu"}
    if cpu_id is not None:
        numerics["cpu_id"] = cpu_id
    run = folder / "runs" / "tied" / "seed0"
    run.mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps({"valid_ppl": 1.0, "numerics": numerics}), encoding="utf-8")
    return folder


def test_folders_that_name_one_cpu_without_its_family_are_a_block_each(tmp_path):
    """Zen 4 and Zen 5 runs made before the family was recorded both say "AMD EPYC (AVX512)": pooled, each
    folder is its own block (said under the table); with the same family and model recorded they are one."""
    a = _recorded(_subset(tmp_path, "a", {"tied", "untied"}, 1.2), None)
    b = _recorded(_subset(tmp_path, "b", {"tied", "untied"}, 1.2), None)
    table = confirmation_report(JOB, [a, b])
    untied = next(line for line in table.splitlines() if line.startswith("| untied |"))
    assert untied.endswith("10 pairs, 2 machines |") and "fresh: AMD EPYC (AVX512) | fresh: AMD EPYC (AVX512)" in table
    assert f"(one block each, though their runs name one CPU: {a}, {b};" in table
    c = _recorded(_subset(tmp_path, "c", {"tied", "untied"}, 1.2), "AuthenticAMD family 25 model 17")
    d = _recorded(_subset(tmp_path, "d", {"tied", "untied"}, 1.2), "AuthenticAMD family 25 model 17")
    table = confirmation_report(JOB, [c, d])
    untied = next(line for line in table.splitlines() if line.startswith("| untied |"))
    assert untied.endswith("10 pairs, 1 machine |") and "one block each" not in table
    assert "fresh: AMD EPYC family 25 model 17 (AVX512) |" in table

"""What summary.json records of the CPU and kernels that made a run, and how the report reads it back."""

from __future__ import annotations

import torch

from embtie.comparison.records import Numerics, TrainingSummary
from embtie.training.numerics import cpu_model, numerics


def test_numerics_names_cpu_capability_kernel_env_threads_and_torch(monkeypatch, tmp_path):
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx2")
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    monkeypatch.delenv("MKL_CBWR", raising=False)
    got = numerics()
    assert got["kernel_env"] == {"ATEN_CPU_CAPABILITY": "avx2"}
    assert got["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert got["threads"] == torch.get_num_threads() and got["torch"] == torch.__version__
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7763 64-Core Processor\n")
    assert cpu_model(info) == "AMD EPYC 7763 64-Core Processor"
    assert cpu_model(tmp_path / "missing") != ""  # the platform's name instead


def test_summary_reads_numerics_back_and_older_summaries_as_not_recorded():
    record = {"valid_ppl": 300.0, "seeding": 2, "numerics": {"cpu": "AMD EPYC", "cpu_capability": "AVX512",
              "kernel_env": {"ATEN_CPU_CAPABILITY": "avx2"}, "threads": 1, "torch": "2.13.0+cpu"}}  # fmt: skip
    s = TrainingSummary.from_json(record)
    assert isinstance(s.numerics, Numerics)
    assert s.numerics.text() == "AMD EPYC, AVX512 kernels, ATEN_CPU_CAPABILITY=avx2, 1 thread, torch 2.13.0+cpu"
    assert TrainingSummary.from_json({"valid_ppl": 300.0}).numerics is None

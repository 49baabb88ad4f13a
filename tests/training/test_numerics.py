"""What summary.json records of the CPU and kernels that made a run, and how the report reads it back."""

from __future__ import annotations

import torch

from embtie.comparison.records import Numerics, TrainingSummary
from embtie.training.numerics import cpu_id, cpu_model, numerics


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


def test_the_cpu_family_and_model_tell_one_model_name_apart(tmp_path):
    """Zen 4 and Zen 5 both call themselves "AMD EPYC" with AVX-512: the family and model numbers differ, and
    a pooled verdict's block (``Numerics.machine``) follows them; a record without them keeps its old block."""
    zen4, zen5, bare = tmp_path / "zen4", tmp_path / "zen5", tmp_path / "bare"
    block = "vendor_id\t: AuthenticAMD\ncpu family\t: {f}\nmodel\t\t: {m}\nmodel name\t: AMD EPYC\n\n"
    zen4.write_text("processor\t: 0\n" + block.format(f=25, m=17) + "processor\t: 1\n" + block.format(f=26, m=2))
    zen5.write_text(block.format(f=26, m=2))
    bare.write_text("processor\t: 0\nmodel name\t: AMD EPYC\n")
    assert cpu_id(zen4) == "AuthenticAMD family 25 model 17"  # the first processor's block
    assert cpu_id(zen5) == "AuthenticAMD family 26 model 2"
    assert cpu_id(bare) is None and cpu_id(tmp_path / "missing") is None
    common = {"cpu": "AMD EPYC", "cpu_capability": "AVX512", "kernel_env": {}, "threads": 1, "torch": "2.13.0+cpu"}
    machines = {Numerics.from_json({**common, "cpu_id": cpu_id(f)}).machine() for f in (zen4, zen5)}
    assert machines == {"AMD EPYC family 25 model 17 (AVX512)", "AMD EPYC family 26 model 2 (AVX512)"}
    old = Numerics.from_json(common)
    assert old.machine() == "AMD EPYC (AVX512)" and "cpu_id" not in old.to_json()
    made = Numerics.from_json({**common, "cpu_id": "family 25 model 1"})
    assert made.text() == "AMD EPYC family 25 model 1, AVX512 kernels, 1 thread, torch 2.13.0+cpu"


def test_summary_reads_numerics_back_and_older_summaries_as_not_recorded():
    record = {"valid_ppl": 300.0, "seeding": 2, "numerics": {"cpu": "AMD EPYC", "cpu_capability": "AVX512",
              "kernel_env": {"ATEN_CPU_CAPABILITY": "avx2"}, "threads": 1, "torch": "2.13.0+cpu"}}  # fmt: skip
    s = TrainingSummary.from_json(record)
    assert isinstance(s.numerics, Numerics)
    assert s.numerics.text() == "AMD EPYC, AVX512 kernels, ATEN_CPU_CAPABILITY=avx2, 1 thread, torch 2.13.0+cpu"
    assert TrainingSummary.from_json({"valid_ppl": 300.0}).numerics is None


def test_a_cuda_run_records_its_gpu_cuda_cudnn_and_tf32(monkeypatch):
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index: f"NVIDIA H200 #{index}")
    monkeypatch.setattr(torch.backends.cudnn, "is_available", lambda: True)
    monkeypatch.setattr(torch.backends.cudnn, "version", lambda: 91000)
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    got = numerics(torch.device("cuda", 0))
    assert got["gpu"]["name"] == "NVIDIA H200 #0" and got["gpu"]["cuda"] == "13.0" and got["gpu"]["cudnn"] == 91000
    assert got["gpu"]["tf32_matmul"] == torch.backends.cuda.matmul.allow_tf32
    assert "gpu" not in numerics(torch.device("cpu"))
    s = TrainingSummary.from_json({"valid_ppl": 3.0, "numerics": got})
    assert s.numerics is not None and s.numerics.machine() == "NVIDIA H200 #0"
    assert s.numerics.text().startswith("NVIDIA H200 #0, CUDA 13.0, cuDNN 91000, TF32 ")
    cpu = TrainingSummary.from_json({"valid_ppl": 3.0, "numerics": numerics()}).numerics
    assert cpu is not None and cpu.machine() == f"{cpu.cpu_name()} ({cpu.cpu_capability})"
    assert cpu.cpu_id == cpu_id()

"""A comparison as typed records: each run's saved results (``RunRecord``), the rows of results.csv
(``ResultRow``), per-strategy summaries over seeds (``StrategySummary``), the paired bootstrap over
evaluation units against the baseline (``UnitBootstrap``), the verdicts from paired seeds
(``MetricVerdicts``) and the whole (``Comparison``, which ``to_json`` writes as results.json).

Field order is the key order of results.json (see ``embtie.analysis.json_records``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from embtie import stats
from embtie.analysis.json_records import Record, optional
from embtie.analysis.records import RunArrays, RunDiagnostics
from embtie.analysis.update_dynamics import PathShares, SimilarityRow
from embtie.decisions import Decision, Margin


@dataclass(kw_only=True)
class Numerics(Record):
    """Which CPU and kernels made a run (``embtie.training.numerics``; summary.json's ``numerics``)."""

    cpu: str
    """the CPU's model name."""
    cpu_capability: str
    """the instruction set torch's CPU kernels dispatch to (e.g. AVX512, AVX2, DEFAULT)."""
    kernel_env: dict[str, str]
    """the kernel-changing environment variables that were set (ATEN_CPU_CAPABILITY, ONEDNN_MAX_CPU_ISA, MKL_CBWR)."""
    threads: int
    torch: str
    gpu: dict[str, Any] | None = None
    """a CUDA run's GPU: name, cuda, cudnn, tf32_matmul, tf32_cudnn (``numerics.gpu_numerics``)."""
    cpu_id: str | None = optional()
    """the CPU's vendor, family and model numbers ("AuthenticAMD family 25 model 17"); None: not recorded
    (runs made before embtie recorded it, or a CPU that does not tell)."""

    def cpu_name(self) -> str:
        """The CPU's model name with its family and model numbers where recorded ("AMD EPYC family 25
        model 17"; the vendor is left out: the model name says it)."""
        if self.cpu_id is None:
            return self.cpu
        at = self.cpu_id.find("family ")
        return f"{self.cpu} {self.cpu_id[at:] if at >= 0 else self.cpu_id}"

    def text(self) -> str:
        """One phrase: "AMD EPYC, AVX512 kernels, 1 thread, torch 2.13.0+cpu" (overrides named), or for a GPU
        run "NVIDIA H200, CUDA 13.0, cuDNN 91000, TF32 off, torch ..." """
        if self.gpu is not None:
            tf32 = "on" if self.gpu.get("tf32_matmul") else "off"
            return (f"{self.gpu.get('name')}, CUDA {self.gpu.get('cuda')}, cuDNN {self.gpu.get('cudnn')}, "
                    f"TF32 {tf32}, torch {self.torch}")  # fmt: skip
        env = "".join(f", {k}={v}" for k, v in self.kernel_env.items())
        threads = f"{self.threads} thread{'s' if self.threads != 1 else ''}"
        return f"{self.cpu_name()}, {self.cpu_capability} kernels{env}, {threads}, torch {self.torch}"

    def machine(self) -> str:
        """The block a pooled verdict puts this run's pairs in: the GPU's name, or the CPU model (with its
        family and model numbers where recorded) and its kernel path."""
        if self.gpu is not None:
            return str(self.gpu.get("name"))
        return f"{self.cpu_name()} ({self.cpu_capability})"


@dataclass(kw_only=True)
class TrainingSummary(Record):
    """What the report reads of a run's ``summary.json`` (written by training; other keys are ignored)."""

    valid_ppl: float | None = None
    best_valid_ppl: float | None = None
    valid_loss: float | None = None
    step0_loss: float | None = None
    params_learned: int | None = None
    params_fixed: int | None = None
    tokens_per_s: float | None = None
    steps: int | None = None
    tokens_seen: int | None = None
    epochs: float | None = None
    train_time_s: float | None = None
    device: str | None = None
    monitor: str | None = None
    """the validation metric early stopping watched (``train.monitor``)."""
    stopped_early: bool | None = None
    seeding: int | None = None
    """the seeding scheme (``embtie.seeding``); None: scheme 1, written before schemes were recorded."""
    numerics: Numerics | None = None
    """the CPU and kernels that made the run; None: not recorded (runs made before embtie recorded them)."""
    valid_bpb: float | None = optional()
    """bits per byte of the validation text (language models; summaries of older code lack it)."""


@dataclass(kw_only=True)
class LossCurves(Record):
    """Train and valid loss against step (finite values of full or capped validations)."""

    train_steps: list[int]
    train: list[float]
    valid_steps: list[int]
    valid: list[float]


@dataclass(kw_only=True)
class HeldOutResult(Record):
    """A run evaluated on the held-out test split (``RUN_DIR/test.json``, ``embtie compare --test``)."""

    loss: float
    ppl: float
    bpb: float | None = optional()
    """bits per byte of the test text (language models)."""


@dataclass(kw_only=True)
class RunRecord:
    """One finished and analysed run of the comparison, as read from its folder."""

    strategy: str
    """the comparison's label (the strategy's name, or a variant's label)."""
    seed: int
    summary: TrainingSummary
    diag: RunDiagnostics
    arrays: RunArrays
    curves: LossCurves
    path_shares: PathShares | None
    run_dir: str
    test: HeldOutResult | None = None
    """the run on the test split, when the comparison asked for it (``--test``)."""
    quantized_ppl: dict[str, float] = field(default_factory=dict)
    """format -> validation perplexity with both tables quantized, for the formats ``--metric`` asks for."""


@dataclass(kw_only=True)
class ResultRow(Record):
    """One run's row of results.csv (the columns are ``CSV_FIELDS``, in another order)."""

    strategy: str
    seed: int
    valid_ppl: float | None
    best_valid_ppl: float | None
    valid_loss: float | None
    step0_loss: float | None
    su_predicted: float
    ln_v: float
    params_learned: int | None
    params_fixed: int | None
    tokens_per_s: float | None
    steps: int | None
    rho_output_norm_freq: float | None
    rho_input_norm_freq: float | None
    input_rows_per_batch: float | None
    output_rows_per_batch: float | None
    run_dir: str
    bleu: float | None = None
    """translation: sacreBLEU; captioning: BLEU-4."""
    chrf: float | None = None
    vu: int | None = None
    rare_token_share: float | None = None
    bleu1: float | None = None
    meteor: float | None = None
    rouge_l: float | None = None
    cider: float | None = None
    valid_bpb: float | None = optional()
    """bits per byte of the validation text (language models)."""
    test_ppl: float | None = optional()
    """perplexity on the test split (``embtie compare --test``)."""
    test_bpb: float | None = optional()
    """bits per byte of the test text (``embtie compare --test``, language models)."""
    valid_ppl_int8: float | None = optional()
    """validation perplexity with the input table and the output matrix fake-quantized to int8, a shared
    matrix once (``embtie compare --metric ppl-int8``; ``embtie.analysis.quantized_tables``)."""
    valid_ppl_int4: float | None = optional()
    """the same with int4 (``--metric ppl-int4``)."""


@dataclass(kw_only=True)
class SeedSummary(Record):
    """Mean, standard deviation and Student-t 95% interval of per-seed values (NaN where undefined)."""

    n: int
    mean: float
    std: float
    ci_low: float
    ci_high: float
    half_width: float

    @classmethod
    def of(cls, values: Iterable[float | None]) -> SeedSummary:
        """The summary of the values that are there (None and non-finite values left out)."""
        return cls(**stats.seed_summary([v for v in values if v is not None]))


@dataclass(kw_only=True)
class StrategySummary(Record):
    """A strategy's seed summaries of the result columns that are compared."""

    valid_ppl: SeedSummary
    best_valid_ppl: SeedSummary
    step0_loss: SeedSummary
    tokens_per_s: SeedSummary
    rho_output_norm_freq: SeedSummary
    bleu: SeedSummary
    vu: SeedSummary
    bleu1: SeedSummary
    meteor: SeedSummary
    rouge_l: SeedSummary
    cider: SeedSummary
    valid_bpb: SeedSummary | None = optional()  # noqa: RUF009 (a field factory, as the others)
    """None when no run has it (older runs, other tasks); likewise the test-split summaries."""
    test_ppl: SeedSummary | None = optional()  # noqa: RUF009
    test_bpb: SeedSummary | None = optional()  # noqa: RUF009
    valid_ppl_int8: SeedSummary | None = optional()  # noqa: RUF009
    valid_ppl_int4: SeedSummary | None = optional()  # noqa: RUF009

    @classmethod
    def of(cls, rows: Sequence[ResultRow]) -> StrategySummary:
        """The summaries over ``rows`` (one strategy's runs)."""
        return cls(
            valid_ppl=SeedSummary.of(r.valid_ppl for r in rows),
            best_valid_ppl=SeedSummary.of(r.best_valid_ppl for r in rows),
            step0_loss=SeedSummary.of(r.step0_loss for r in rows),
            tokens_per_s=SeedSummary.of(r.tokens_per_s for r in rows),
            rho_output_norm_freq=SeedSummary.of(r.rho_output_norm_freq for r in rows),
            bleu=SeedSummary.of(r.bleu for r in rows),
            vu=SeedSummary.of(r.vu for r in rows),
            bleu1=SeedSummary.of(r.bleu1 for r in rows),
            meteor=SeedSummary.of(r.meteor for r in rows),
            rouge_l=SeedSummary.of(r.rouge_l for r in rows),
            cider=SeedSummary.of(r.cider for r in rows),
            valid_bpb=_summary_if_any([r.valid_bpb for r in rows]),
            test_ppl=_summary_if_any([r.test_ppl for r in rows]),
            test_bpb=_summary_if_any([r.test_bpb for r in rows]),
            valid_ppl_int8=_summary_if_any([r.valid_ppl_int8 for r in rows]),
            valid_ppl_int4=_summary_if_any([r.valid_ppl_int4 for r in rows]),
        )


def _summary_if_any(values: list[float | None]) -> SeedSummary | None:
    """The seed summary of ``values``, or None when no run has one (the key is then left out)."""
    return SeedSummary.of(values) if any(v is not None for v in values) else None


@dataclass(kw_only=True)
class UnitBootstrap(Record):
    """A strategy against the baseline by the paired bootstrap over evaluation units
    (``stats.paired_bootstrap``): it sees the noise of the evaluation sample only; the verdicts come from
    paired seeds (``MetricVerdicts``)."""

    system: float
    baseline: float
    delta: float
    """system - baseline (seed means)."""
    p_value: float
    delta_ci: list[float]
    """95% interval of the resampled delta: [low, high]."""
    n_units: int
    n_seeds: int
    n_samples: int

    @classmethod
    def of(cls, test: Mapping[str, Any]) -> UnitBootstrap:
        """From ``stats.paired_bootstrap``'s result."""
        return cls(**{k: test[k] for k in cls.__dataclass_fields__})


@dataclass(kw_only=True)
class MetricVerdicts(Record):
    """The verdicts of one tested metric (``embtie.comparison.verdicts``)."""

    metric: str
    label: str
    higher_is_better: bool
    margin: float
    relative: bool
    """the margin is a percentage of the baseline (and every Δ a percent difference)."""
    design: str
    """the looks and the level every test ran at."""
    decisions: dict[str, dict]
    """strategy -> the ``embtie.decisions.Decision`` as a JSON object."""
    role: str | None = optional()
    """"primary" (the metric that decides: its verdicts are one family with the choice) or "secondary"
    (drawn with the same tests, outside that family: exploratory); None in files written before."""
    choice: dict[str, Any] | None = optional()  # noqa: RUF009 (a field, as every optional() key)
    """the primary metric's choice among all the strategies (``comparison.choice.choice_to_json``)."""

    def decision(self, strategy: str) -> Decision | None:
        d = self.decisions.get(strategy)
        if d is None:
            return None
        return Decision(**{**d, "ci": tuple(d["ci"]), "tost_ci": tuple(d["tost_ci"])})

    def margin_text(self) -> str:
        return Margin(self.margin, self.relative).text()


@dataclass(kw_only=True)
class Comparison:
    """Everything the report needs, collected from a comparison's saved files."""

    preset: str
    runs_finished: int
    runs_planned: int
    strategies: list[str]
    seeds: int
    overrides: list[str]
    command: str
    baseline: str
    rows: list[ResultRow]
    summary: dict[str, StrategySummary]
    bootstrap: dict[str, dict[str, UnitBootstrap]]
    """metric -> strategy -> the paired bootstrap over its units (validation batches for perplexity,
    sentences or images for BLEU and vocabulary usage), for the metrics that declare units."""
    per_run: list[RunRecord]
    update_dynamics: list[SimilarityRow]
    verdicts: dict[str, MetricVerdicts]
    """tested metric -> every strategy's verdict against the baseline, from paired seeds."""
    seeding: dict[str, int]
    """seeding scheme -> runs trained with it (e.g. {"2": 15})."""
    metric: str | None = None
    """the tested metric that decides when ``--metric`` chose it (None: perplexity, or BLEU where runs decode)."""
    title: str | None = None
    """what the comparison compares (corpus, tokenizer, vocabulary), for the report's title; None: the preset."""
    family: dict[str, Any] | None = None
    """the design this report's tests belong to (``comparison.design_file.Design.content``): a report
    drawn with another baseline, metric or margin than the folder's design is exploratory."""
    decision_rule: str = "one-family"
    """how the verdicts' tests were corrected (``embtie.decisions.RULES``); results.json files without the
    key were decided under the rule before it (``decisions.rule_of``)."""

    def runs_of(self, strategy: str) -> list[RunRecord]:
        return [p for p in self.per_run if p.strategy == strategy]

    def bootstrap_of(self, metric: str, strategy: str) -> UnitBootstrap | None:
        """The paired bootstrap of ``metric`` for ``strategy`` against the baseline (None: none was made)."""
        return self.bootstrap.get(metric, {}).get(strategy)

    def rows_of(self, strategy: str) -> list[ResultRow]:
        return [r for r in self.rows if r.strategy == strategy]

    @property
    def captioning(self) -> bool:
        """The runs caption images (their BLEU is the COCO scorer's BLEU-4; their rows carry CIDEr)."""
        return any(p.diag.captioning is not None for p in self.per_run) or any(r.cider is not None for r in self.rows)

    def to_json(self) -> dict[str, Any]:
        """results.json: the rows, statistics, bootstraps and verdicts, and every run's diagnostics (no arrays)."""
        return {
            "preset": self.preset,
            "runs_finished": self.runs_finished,
            "runs_planned": self.runs_planned,
            "strategies": self.strategies,
            "seeds": self.seeds,
            "overrides": self.overrides,
            "command": self.command,
            "baseline": self.baseline,
            "rows": [r.to_json() for r in self.rows],
            "summary": {k: s.to_json() for k, s in self.summary.items()},
            "bootstrap": {m: {k: t.to_json() for k, t in by.items()} for m, by in self.bootstrap.items()},
            "verdicts": {k: v.to_json() for k, v in self.verdicts.items()},
            "decision_rule": self.decision_rule,
            "seeding": self.seeding,
            **({"metric": self.metric} if self.metric is not None else {}),
            **({"title": self.title} if self.title is not None else {}),
            "update_dynamics": [r.to_json() for r in self.update_dynamics],
            # the diagnostics' own "strategy" (the registered name) replaces the label in place
            "diagnostics": [{"strategy": p.strategy, "seed": p.seed, **p.diag.to_json()} for p in self.per_run],
        }

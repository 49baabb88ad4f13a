"""A comparison's design, fixed before its first run: DIR/design.json, and the record each run keeps.

A verdict can be trusted as a test only if what it tests was decided before the data: the strategies,
the baseline, the primary metric, the margins, the looks and their level, the rule that corrects the
tests, the seeds, the budget and every override. ``embtie compare`` writes them to DIR/design.json, with
a content hash and the time, before it trains anything; each run it then starts records that hash and
its own start time (DIR/design-runs.json, one entry per run, written by the comparison that holds the
folder's lock). Running the folder again with options that make another design is refused in one line (a
new design needs a new folder), except when only the strategies differ (a grid trained one strategy at a
time, as the GPU campaign does): that starts a new design beside the first (DIR/design-<hash>.json), said
in one note, and the runs of two designs make the folder exploratory. A ``--report-only`` with another
baseline or metric draws an exploratory family and says so.

The report's Summary then says, on its own line after the answer, either "confirmatory: design <hash>
fixed at <time>, before the first of its N runs" or "exploratory: <why>" (runs older than the design, runs
of another design, a folder without a design file, or a report of another family). The tool's evidence
is its own timestamps; in a repository, the commit order of design.json and the runs is the evidence too.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from embtie.comparison.arms import match_text
from embtie.comparison.grid import CompareSpec
from embtie.decisions import ONE_FAMILY
from embtie.errors import ConfigError
from embtie.files import write_atomic
from embtie.metrics import margins_with

DESIGN_FILE = "design.json"
RUN_LEDGER = "design-runs.json"


@dataclass(frozen=True)
class Design:
    """Everything a comparison's verdicts depend on, fixed before its runs."""

    preset: str
    strategies: tuple[str, ...]
    """as written in --strategies (labelled variants with their options)."""
    baseline: str
    metric: str | None
    margins: dict[str, str]
    rule: str
    alpha: float
    looks: tuple[int, ...]
    first_seed: int
    overrides: tuple[str, ...]
    match: str | None

    @classmethod
    def of(cls, spec: CompareSpec) -> Design:
        """The design of a comparison's options."""
        design = spec.design
        margins = {k: m.spec() for k, m in margins_with(spec.margins).items()}
        return cls(
            preset=spec.preset,
            strategies=tuple(spec.strategy_text(label) for label in spec.strategies),
            baseline=spec.baseline,
            metric=spec.metric,
            margins=margins,
            rule=design.rule if design is not None else ONE_FAMILY,
            alpha=design.alpha if design is not None else 0.05,
            looks=design.looks if design is not None else (spec.seeds,),
            first_seed=spec.first_seed,
            overrides=tuple(spec.overrides),
            match=None if spec.matching is None else match_text(spec.matching.mode, spec.matching.tolerance),
        )

    def content(self) -> dict[str, Any]:
        """The design as plain JSON values (what the hash is taken of)."""
        out = asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}

    @property
    def hash(self) -> str:
        """The first 12 hex digits of the SHA-256 of the canonical JSON of ``content``."""
        return content_hash(self.content())


def content_hash(content: Mapping[str, Any]) -> str:
    """The hash of a design's content (``Design.content``)."""
    text = json.dumps(dict(content), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


@dataclass(frozen=True)
class FixedDesign:
    """DIR/design.json: the design, its hash, when it was fixed, and how many runs the folder already held."""

    design: dict[str, Any]
    hash: str
    fixed_at: str
    runs_before: int

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def read_design(folder: Path) -> FixedDesign | None:
    """The folder's fixed design, or None when it has none (or an unreadable one: treated as none)."""
    return read_design_file(Path(folder) / DESIGN_FILE)


def read_design_file(path: Path) -> FixedDesign | None:
    """A design file read back (None when absent or unreadable)."""
    if not path.is_file():
        return None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return FixedDesign(dict(raw["design"]), str(raw["hash"]), str(raw["fixed_at"]), int(raw["runs_before"]))
    except (json.JSONDecodeError, KeyError, TypeError, ValueError):
        return None


def _differences(saved: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    keys = [k for k in sorted(set(saved) | set(new)) if saved.get(k) != new.get(k)]
    return "; ".join(f"{k}: {saved.get(k)!r} -> {new.get(k)!r}" for k in keys[:3]) + ("; ..." if len(keys) > 3 else "")


def fix_design(folder: Path, design: Design, runs_present: int) -> FixedDesign:
    """The folder's design: written now (before any run this command trains) when the folder has none;
    the saved one when it is the same design; a new design beside it, with a note, when only the
    strategies differ; a ConfigError in one line otherwise."""
    saved = read_design(folder)
    if saved is None:
        fixed = FixedDesign(design.content(), design.hash, _now(), runs_present)
        Path(folder).mkdir(parents=True, exist_ok=True)
        write_atomic(Path(folder) / DESIGN_FILE, fixed.to_json())
        return fixed
    if saved.hash == design.hash:
        return saved
    content = design.content()
    changed = {k for k in set(saved.design) | set(content) if saved.design.get(k) != content.get(k)}
    if changed == {"strategies"}:
        beside = Path(folder) / f"design-{design.hash}.json"
        fixed = read_design_file(beside) or FixedDesign(content, design.hash, _now(), runs_present)
        write_atomic(beside, fixed.to_json())
        print(f"embtie: note: {folder} was designed as {saved.hash} with other strategies; these runs start design "
              f"{design.hash} beside it ({beside.name}), so the folder's comparison is exploratory", file=sys.stderr)
        return fixed
    raise ConfigError(
        f"{folder} holds the comparison designed as {saved.hash} (fixed {saved.fixed_at}); these options "
        f"make another design ({_differences(saved.design, content)}): give a new --out for a new "
        f"design, or the options of {Path(folder) / DESIGN_FILE}"
    )


def _ledger(folder: Path) -> dict[str, Any]:
    try:
        return dict(json.loads((Path(folder) / RUN_LEDGER).read_text(encoding="utf-8")))
    except (OSError, json.JSONDecodeError, TypeError, ValueError):
        return {}


def _key(folder: Path, run_dir: Path) -> str:
    try:
        return Path(run_dir).resolve().relative_to(Path(folder).resolve()).as_posix()
    except ValueError:
        return Path(run_dir).as_posix()


def record_planned(folder: Path, run_dirs: Sequence[Path], fixed: FixedDesign) -> None:
    """DIR/design-runs.json: the design each run about to be trained starts under and when (the first
    start only: a resumed run keeps its entry). Written by the comparison, which holds the folder's lock;
    no run folder is created."""
    ledger = _ledger(folder)
    keys = [_key(folder, r) for r in run_dirs]
    new = {k: {"design": fixed.hash, "started_at": _now()} for k in keys if k not in ledger}
    if new:
        write_atomic(Path(folder) / RUN_LEDGER, json.dumps({**ledger, **new}, indent=1, sort_keys=True) + "\n")


def status_line(folder: Path, run_dirs: Sequence[Path], family: Mapping[str, Any] | None = None) -> str:
    """"confirmatory: ..." when the folder's design was fixed before every one of ``run_dirs`` started
    under it (and ``family``, the content of the design the report draws, is that design); else
    "exploratory: why"."""
    fixed = read_design(folder)
    if fixed is None:
        return "exploratory: this folder has no design file (its runs were not planned by a fixed design)"
    if family is not None and content_hash(family) != fixed.hash:
        return (f"exploratory: this report's tests ({_differences(fixed.design, family)}) are not "
                f"the family design {fixed.hash} fixed")  # fmt: skip
    if fixed.runs_before:
        return f"exploratory: {fixed.runs_before} runs were in the folder before design {fixed.hash} was fixed"
    ledger = _ledger(folder)
    records = [ledger.get(_key(folder, r)) for r in run_dirs]
    if any(r is None or r.get("design") != fixed.hash for r in records):
        return f"exploratory: some runs were not started under design {fixed.hash}"
    if any(str(r["started_at"]) < fixed.fixed_at for r in records if r is not None):
        return f"exploratory: some runs started before design {fixed.hash} was fixed"
    return f"confirmatory: design {fixed.hash} fixed at {fixed.fixed_at}, before the first of its {len(run_dirs)} runs"

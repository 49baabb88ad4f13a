"""The configuration reference: every key of a run config and every ``sharing.options`` entry with its type,
default, allowed values and meaning, read from the declarations (``embtie.schema``) that also validate
them, so the reference cannot disagree with the checks. ``embtie config`` prints it; docs/configuration.md
is its Markdown form (``embtie config --markdown``), and a test keeps the two equal."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from embtie.config.run import RunConfig, SharingConfig, task_sections
from embtie.config.train import TrainConfig
from embtie.schema import NO_DEFAULT, Declaration, Setting, allowed, declarations, show, type_name


@dataclass(frozen=True)
class Entry:
    """One key: as the reference writes it."""

    key: str
    type: str
    default: str
    allowed: str
    meaning: str


@dataclass(frozen=True)
class Table:
    """The keys of one section (``train``, the ``data`` of one task, the ``model`` of one model name, the
    options of one strategy), with a line that says what the section is."""

    title: str
    about: str
    entries: tuple[Entry, ...]


def _default(value: Any) -> str:
    if value is NO_DEFAULT:
        return "(required)"
    if isinstance(value, list) and len(value) > 3 and all(v == value[0] for v in value):
        return f"[{show(value[0])}] * {len(value)}"
    return show(value)


def _entry(key: str, d: Declaration) -> Entry:
    return Entry(key, type_name(d.type), _default(d.default), allowed(d.type, d.setting), d.setting.help)


def _first_line(doc: str | None) -> str:
    return (doc or "").strip().split("\n\n")[0].replace("\n", " ").strip()


def _section(prefix: str, cls: type, skip: tuple[str, ...] = ()) -> tuple[Entry, ...]:
    return tuple(_entry(f"{prefix}.{d.name}", d) for d in declarations(cls) if d.name not in skip)


def _top() -> Table:
    from embtie import models

    sections = {f.name for f in dataclasses.fields(RunConfig) if f.name in ("data", "model", "sharing", "train")}
    entries = [_entry(d.name, d) for d in declarations(RunConfig) if d.name not in sections]
    model_name = Declaration(
        "name",
        str,
        NO_DEFAULT,
        Setting("the model; picks the keys of model (the model tables below)", choices=models.names),
    )
    entries.append(_entry("model.name", model_name))
    entries.extend(_entry(f"sharing.{d.name}", d) for d in declarations(SharingConfig))
    return Table(
        "run", "The top keys of a run config, and the names that pick the other sections' keys.", tuple(entries)
    )


def _data_tables(task: str | None) -> list[Table]:
    out = []
    for name, section in sorted(task_sections().items()):
        if task is None or name == task:
            about = _first_line(section.data_config.__doc__)
            out.append(Table(f"data (task: {name})", about, _section("data", section.data_config)))
    return out


def _model_tables(model: str | None) -> list[Table]:
    from embtie import models

    out = []
    for name in models.names():
        if model is None or name == model:
            cls = models.config_class(name)
            out.append(
                Table(f"model (model.name: {name})", _first_line(cls.__doc__), _section("model", cls, ("name",)))
            )
    return out


def _option_entries(options: list[Any]) -> tuple[Entry, ...]:
    return tuple(
        Entry(
            f"sharing.options.{o.name}",
            type_name(o.type),
            _default(o.default),
            allowed(o.type, o.setting),
            o.setting.help,
        )
        for o in options
    )


def _strategy_tables(strategy: str | None) -> list[Table]:
    from embtie import sharing

    common = [o for o in sharing.options("tied").values() if o.owner is sharing.SharingStrategy]
    tables = [
        Table(
            "sharing.options (every strategy)",
            "Options every strategy takes; all default to off, so a strategy computes exactly its formula.",
            _option_entries(common),
        )
    ]
    for name in sharing.names():
        own = [o for o in sharing.options(name).values() if o.owner is not sharing.SharingStrategy]
        if (strategy is None or name == strategy) and own:
            cls = sharing.get(name)
            about = f"{cls.formula} [{cls.source}]"
            tables.append(Table(f"sharing.options (sharing.name: {name})", about, _option_entries(own)))
    return tables


def tables(task: str | None = None, model: str | None = None, strategy: str | None = None) -> list[Table]:
    """Every table of the reference; ``task``, ``model``, ``strategy`` keep only that task's data keys, that
    model's keys, that strategy's own options (the other tables are always there)."""
    train = Table("train", _first_line(TrainConfig.__doc__), _section("train", TrainConfig))
    return [
        _top(),
        *_data_tables(task),
        *_model_tables(model),
        *_strategy_tables(strategy),
        train,
    ]


# ---------------------------------------------------------------------------- rendering

INTRO_TEMPLATE = """\
Every key of a run config: its type, default, allowed values and meaning. Set them in a YAML file or
preset (sections `task`, `seed`, `data`, `model`, `sharing`, `train`) or as `key=value` overrides
(`embtie train ptb-gpt-tiny train.lr=3e-4 sharing.options.z_loss=1e-4`). Numbers are read alike
everywhere: `1e-4`, `1E4`, `.5`, `inf`, `-3` and `1_000` are numbers (and must be finite where a number
is expected; where a key states no upper bound, at most 2,147,483,647 in magnitude); `null` leaves an
optional value unset. A value out of range is refused with one line that
names the key, the value and what is allowed, before anything is written; so is a `train.*` key given
for an optimizer that never reads it ({unused})."""

INTRO = INTRO_TEMPLATE.format(
    unused="; ".join(
        f"`train.{key}` under {' or '.join(f'`{o}`' for o in optimizers)}"
        for key, optimizers in TrainConfig.UNUSED_BY.items()
    )
)
"""the reference's opening, with the optimizer keys each optimizer never reads (``TrainConfig.UNUSED_BY``)."""


def text(ts: list[Table]) -> str:
    """The reference for a terminal: per table a title line, then per key ``key: type = default; allowed``
    and its meaning indented below."""
    lines = [INTRO, ""]
    for t in ts:
        lines += [f"[{t.title}] {t.about}".rstrip()]
        for e in t.entries:
            lines += [f"  {e.key}: {e.type} = {e.default}; allowed: {e.allowed}"]
            if e.meaning:
                lines += [f"      {e.meaning}"]
        lines += [""]
    return "\n".join(lines)


def _cell(s: str, code: bool = False) -> str:
    s = s.replace("|", "\\|")
    if code:
        return f"`{s}`"
    return s.replace("<", "&lt;").replace("*", "\\*")


def markdown(ts: list[Table]) -> str:
    """The reference as Markdown (docs/configuration.md): one table per section."""
    out = [
        "# Configuration reference",
        "",
        "<!-- Generated by `embtie config --markdown` from the declarations in the code; do not edit by hand. "
        "tests/test_configuration_reference.py fails when this file differs from what the command prints. -->",
        "",
        INTRO,
        "",
    ]
    for t in ts:
        out += [
            f"## {t.title}",
            "",
            _cell(t.about),
            "",
            "| key | type | default | allowed | meaning |",
            "|---|---|---|---|---|",
        ]
        for e in t.entries:
            cells = [_cell(e.key, True), _cell(e.type), _cell(e.default, True), _cell(e.allowed), _cell(e.meaning)]
            out += ["| " + " | ".join(cells) + " |"]
        out += [""]
    return "\n".join(out)


__all__ = ["Entry", "Table", "markdown", "tables", "text"]

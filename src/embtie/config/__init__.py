"""Run configuration: typed dataclasses loaded from YAML presets or files, with ``key=value`` overrides.

A run config has six sections::

    task: lm                 # a registered task (embtie.tasks): picks the dataclass of ``data``
    seed: 0
    data: {...}              # the task's data config (e.g. embtie.tasks.lm.LMDataConfig)
    model: {name: gpt, ...}  # a registered model (embtie.models): ``name`` picks the dataclass
    sharing: {name: tied, options: {...}}   # any strategy of embtie.sharing and its options
    train: {...}             # TrainConfig: optimizer, schedule, steps, precision, logging

``load_config("ptb-gpt-tiny", ["sharing.name=l2norm", "train.max_steps=50"])`` reads the preset
``src/embtie/configs/ptb-gpt-tiny.yaml`` (package data, so it works from any folder) or a YAML path,
applies the overrides (dotted keys; values read by ``embtie.schema.parse_scalar``: ``1e-4`` is a number),
and validates everything: an unknown key, a wrong type or a value out of range is a one-line
``ConfigError`` that names the key, the value and what is allowed.

Every key is declared once, with its type, default, range and meaning (``embtie.schema.setting`` on the
fields of the section dataclasses, ``declared_options`` on the sharing strategies); ``embtie config``
prints them all (``reference``), and docs/configuration.md is its Markdown output.

Modules: ``train`` (TrainConfig), ``run`` (RunConfig, SharingConfig, overrides, ``config_from_dict``, the
tasks' data sections), ``files`` (presets, YAML files, ``load_config``), ``reference`` (the
configuration reference). New tasks and models add their own dataclasses through the registries in
``embtie.tasks`` and ``embtie.models``; nothing here needs to change.
"""

from embtie.config.files import load_config, preset_names, presets_dir, read_spec, read_yaml_mapping
from embtie.config.run import (
    TASK_PLUGINS,
    RunConfig,
    SharingConfig,
    TaskSection,
    check_strategy,
    config_from_dict,
    from_dict,
    parse_override,
    register_task_section,
    set_dotted,
    task_section,
    task_sections,
)
from embtie.config.train import TrainConfig
from embtie.schema import did_you_mean

__all__ = [
    "TASK_PLUGINS",
    "RunConfig",
    "SharingConfig",
    "TaskSection",
    "TrainConfig",
    "check_strategy",
    "config_from_dict",
    "did_you_mean",
    "from_dict",
    "load_config",
    "parse_override",
    "preset_names",
    "presets_dir",
    "read_spec",
    "read_yaml_mapping",
    "register_task_section",
    "set_dotted",
    "task_section",
    "task_sections",
]

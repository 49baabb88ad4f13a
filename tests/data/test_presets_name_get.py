"""Every preset names, in its header, the `embtie data get NAME` that brings its dataset (a user outside this
repository starts with an empty data root)."""

from __future__ import annotations

import pytest
import yaml

from embtie.config import preset_names, presets_dir
from embtie.data import catalogue


@pytest.mark.parametrize("name", preset_names())
def test_preset_header_names_the_data_get_command(name: str):
    text = (presets_dir() / f"{name}.yaml").read_text(encoding="utf-8")
    dataset = yaml.safe_load(text)["data"]["dataset"]
    assert dataset in catalogue.DATASETS, f"{name}: dataset {dataset!r} is not in embtie's catalogue"
    header = " ".join(line for line in text.splitlines() if line.startswith("#"))
    assert f"`embtie data get {dataset}" in header, f"{name}.yaml: its header must name `embtie data get {dataset}`"

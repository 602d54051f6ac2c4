"""docs/configuration.md is generated from the run configs (`python -m zoo.configs`): stale when they change."""

import os

from zoo import configs
from zoo.core import config as cfg

PAGE = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "configuration.md")


def test_the_configuration_page_lists_every_field_as_the_dataclasses_define_it():
    with open(PAGE, encoding="utf-8") as f:
        written = f.read()
    assert written == configs.page(), "docs/configuration.md is stale: python -m zoo.configs > docs/configuration.md"
    for cls in configs.RUN_CONFIGS.values():
        for name, _, _, _ in cfg.field_rows(cls()):
            assert f"| `{name}` |" in written


def test_each_recipe_config_round_trips_through_its_yaml():
    import yaml

    for cls in configs.RUN_CONFIGS.values():
        config = cls()
        assert cfg.from_dict(cls, yaml.safe_load(cfg.to_yaml(config))) == config

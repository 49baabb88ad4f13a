"""Models that take their sharing strategy in the constructor: ``build(config, sharing)``.

Each model module registers itself (``@register(name, ConfigClass)``); importing it here makes it
available by name in configs (``model.name``).
"""

from embtie.models import gpt, lstm_lm, rnn_mt, transformer_mt  # noqa: F401  (registers the models)
from embtie.models.registry import build, config_class, model_class, names, register

__all__ = ["build", "config_class", "model_class", "names", "register"]

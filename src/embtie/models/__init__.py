"""Models that take their sharing strategy in the constructor: ``build(config, sharing)``.

Each model module registers itself (``@register(name, ConfigClass)``); importing it here makes it
available by name in configs (``model.name``).
"""

# registration order = the order `unknown model` errors list them: the language models first
from embtie.models import gpt, lstm_lm, hf_causal_lm  # noqa: F401, I001  (registers the models; hf imports transformers on use)
from embtie.models import rnn_mt, transformer_mt, hf_seq2seq  # noqa: F401  (hf_seq2seq imports transformers on use)
from embtie.models import conv_mt, convs2s  # noqa: F401  (registers lightconv, dynamicconv, convs2s)
from embtie.models import show_attend_tell, show_tell  # noqa: F401  (registers the captioning models)
from embtie.models.base import ModelConfig
from embtie.models.registry import build, config_class, model_class, names, register

__all__ = ["ModelConfig", "build", "config_class", "model_class", "names", "register"]

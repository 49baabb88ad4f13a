"""Translation (``task: translation``): Multi30k / IWSLT14 De<->En with SentencePiece BPE subwords or words.

- ``config``: ``MTDataConfig``, the ``data`` section (corpus, vocabularies, batching, decoding).
- ``data``: the parallel text of a split (cached per data root), the vocabularies learned on the
  training text, the training batches of an epoch, the encoded evaluation pairs.
- ``evaluation``: teacher-forced loss, decoding into detokenized text, how references are scored.
- ``task``: ``TranslationTask``, which trains a ``Seq2Seq`` model on them and ties the pieces together.
"""

from embtie.tasks.translation.config import MTDataConfig
from embtie.tasks.translation.evaluation import PRETOKENIZED_DATASETS
from embtie.tasks.translation.task import TranslationTask

__all__ = ["PRETOKENIZED_DATASETS", "MTDataConfig", "TranslationTask"]

"""Word-level language modelling (``task: lm``) on PTB or WikiText-2, contiguous-stream batching.

- ``config``: ``LMDataConfig``, the ``data`` section (corpus, window length, batch, limits).
- ``data``: the token streams: the training tokens cut into parallel streams, the windows of an
  epoch, the evaluation streams.
- ``task``: ``LMTask``, which trains a ``LanguageModel`` on them and reports perplexity.
"""

from embtie.tasks.lm.config import LMDataConfig
from embtie.tasks.lm.streams import LMBatch
from embtie.tasks.lm.task import LMTask

__all__ = ["LMBatch", "LMDataConfig", "LMTask"]

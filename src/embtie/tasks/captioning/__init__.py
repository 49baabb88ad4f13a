"""Image captioning (``task: captioning``): Flickr8k or MSCOCO (Karpathy's split) with cached image features
(Shalev et al., Table 1).

- ``config``: ``CaptionDataConfig``, the ``data`` section (captions, image lists, feature cache,
  vocabulary, batching, decoding).
- ``data``: the captions and image lists of a split, the word vocabulary, the cached features.
- ``evaluation``: teacher-forced loss, decoding images into captions, COCO scores and vocabulary usage.
- ``task``: ``CaptioningTask``, which trains a ``Captioner`` on them and ties the pieces together.
"""

from embtie.tasks.captioning.config import CaptionDataConfig
from embtie.tasks.captioning.task import CaptioningTask

__all__ = ["CaptionDataConfig", "CaptioningTask"]

"""Evaluation building blocks: token-weighted loss and perplexity (``loss_meter``), greedy and beam
search (``beam_search``), corpus BLEU and chrF through sacreBLEU (``bleu``), the COCO caption scores
(``caption_scores``) and the vocabulary a model's outputs use (``vocab_usage``)."""

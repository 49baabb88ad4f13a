"""sacreBLEU scoring of tokenized text (word-level presets)."""

from __future__ import annotations

from embtie.evaluation.bleu import corpus_scores


def test_pretokenized_scoring_does_not_warn_about_detokenization(caplog) -> None:
    """Word-level presets score tokenized text on purpose: no "forgot to detokenize" warning then, the
    warning still comes for text given as detokenized, and the score is the same either way."""
    hyps = refs = ["a man is walking ."] * 120
    with caplog.at_level("WARNING", logger="sacrebleu"):
        quiet = corpus_scores(hyps, refs, "en", pretokenized=True)
    assert not [r for r in caplog.records if "detokenize" in r.getMessage()]
    with caplog.at_level("WARNING", logger="sacrebleu"):
        loud = corpus_scores(hyps, refs)
    assert [r for r in caplog.records if "detokenize" in r.getMessage()]
    assert quiet["bleu"] == loud["bleu"]


def test_sentence_statistics_do_not_warn(caplog) -> None:
    from embtie import stats

    with caplog.at_level("WARNING", logger="sacrebleu"):
        st = stats.bleu_sentence_stats(["a man is walking ."] * 120, ["a man is walking ."] * 120)
    assert st.shape[0] == 120 and not [r for r in caplog.records if "detokenize" in r.getMessage()]

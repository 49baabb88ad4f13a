"""The datasets made by a paper's preparation pipeline (``embtie.data.prepare``) from their original archives:
IWSLT14 De-En (fairseq's prepare-iwslt14.sh), WMT16 En-De (as Liu et al. used it), WMT14 En-De (fairseq's
ConvS2S recipe) and MSCOCO captions with Karpathy's split."""

from __future__ import annotations

from embtie.data.catalogue.model import DataEntry, Dataset, Pin, Source

# ------------------------------------------------------------------ IWSLT14 De-En
_IWSLT_FILES = {  # relpath -> (splits, sha256, pin, git blob, lines)
    "iwslt14/tok/train.de": (("train",), None, Pin.GIT_BLOB, "30660ed508af1be868cfd3f09a0bd7d71b4517c6", 160239),
    "iwslt14/tok/train.en": (("train",), None, Pin.GIT_BLOB, "3b48a76e28ede930fd5e177dce14686147a10ee3", 160239),
    "iwslt14/tok/valid.de": (("valid",), "3f051579c9d8c7281a6ea8c72ad4ae09dbaa9bb24dfd41166f2c3a3df7cd940a",
                             Pin.SHARED, None, 7283),
    "iwslt14/tok/valid.en": (("valid",), "e6d7317a9772cd1ed970910c611e9e7dada1f34439269b44a9d801334bff948d",
                             Pin.SHARED, None, 7283),
    "iwslt14/tok/test.de": (("test",), "e718c783e33160b7d72af8f733756a466e0d0c016eff8ab624c1b0d1d01cbbdf",
                            Pin.SNAPSHOT, None, 6750),
    "iwslt14/tok/test.en": (("test",), "4b127beb9050511a3e6209cd837ff36f623a3a423666b32aba6e208b7330cf4c",
                            Pin.SNAPSHOT, None, 6750),
    "iwslt14/bpe/code": (("train", "valid", "test"), "3dd02684b6693abce3ba59520425901b0b910abeec2ae6b15cc62e458441d503",
                         Pin.SHARED, None, 10001),
    "iwslt14/bpe/train.de": (("train",), None, Pin.GIT_BLOB, "f0a0c7d52fa302aed605f8e0fabe10217cf7b336", 160239),
    "iwslt14/bpe/train.en": (("train",), None, Pin.GIT_BLOB, "6cec12532b28da3d5f9b7251f8011f6d84604738", 160239),
    "iwslt14/bpe/valid.de": (("valid",), "27660c689b99b54f0f858775527ff351c520f7581be90aac84b6d16f14624c9e",
                             Pin.SHARED, None, 7283),
    "iwslt14/bpe/valid.en": (("valid",), "1b1f2246625cc907fbd9c8195776434b24687c3fc4e068c6f3d3ec542846823f",
                             Pin.SHARED, None, 7283),
    "iwslt14/bpe/test.de": (("test",), "0bca28e500495a4a9694ae134b0ae35526a280cb0966abbcf3c9af3edc3dfe10",
                            Pin.SNAPSHOT, None, 6750),
    "iwslt14/bpe/test.en": (("test",), "c2951533a0b03557599978ea1726c440bdbb8210454d1e9ef3b87c2b6228ac43",
                            Pin.SNAPSHOT, None, 6750),
}

IWSLT14 = Dataset(
    name="iwslt14",
    title="IWSLT14 German-English (TED), fairseq's prepare-iwslt14.sh: 160,239 / 7,283 / 6,750 pairs, "
    "tokenized, lowercased, joint BPE 10,000",
    licence="TED talks via WIT3: CC BY-NC-ND 3.0 (the archive's README)",
    citation="Cettolo, Girardi & Federico (2012), WIT3, EAMT; Cettolo et al. (2014), Report on the 11th IWSLT "
    "Evaluation Campaign; preparation: Ranzato et al. (2016), Ott et al. (2019, fairseq)",
    entries=tuple(
        DataEntry(path, splits, sha, pin, None, "prepare", git_blob=blob, lines=lines)
        for path, (splits, sha, pin, blob, lines) in _IWSLT_FILES.items()
    ),
    archives=(
        Source("http://dl.fbaipublicfiles.com/fairseq/data/iwslt14/de-en.tgz", None, Pin.GIT_BLOB,
               git_blob="aa8c3f40f8836f1d43701448f94fe7e230082b4c", name="de-en.tgz"),
    ),
    prepare="iwslt14",
    notes=(
        "the archive is pinned by the git blob id fairseq's commit b3f176a4 records for orig/de-en.tgz; the "
        "outputs by fairseq's own output of that commit (valid and code: the copies in ../shared/data; test: "
        "the commit's snapshot; train: its git blob ids)",
        "the archive first published at https://wit3.fbk.eu/archive/2014-01/texts/de/en/de-en.tgz",
    ),
)

# ------------------------------------------------------------------ WMT16 En-De (Liu et al.; Ott et al. 2018)
_STATMT = "http://www.statmt.org"
_WMT16_ARCHIVES = (
    Source(f"{_STATMT}/europarl/v7/de-en.tgz", name="europarl-v7-de-en.tgz"),
    Source(f"{_STATMT}/wmt13/training-parallel-commoncrawl.tgz"),
    Source("http://data.statmt.org/wmt16/translation-task/training-parallel-nc-v11.tgz"),
    Source("http://data.statmt.org/wmt16/translation-task/dev.tgz", name="wmt16-dev.tgz"),
    Source("http://data.statmt.org/wmt16/translation-task/test.tgz", name="wmt16-test.tgz"),
)


def _mt_outputs(name: str, with_code: bool = True) -> tuple[DataEntry, ...]:
    """tok/ and bpe/ files of train, valid and test (unverified here: their checksums are not published)."""
    out = [
        DataEntry(f"{name}/{form}/{split}.{lang}", (split,), None, Pin.UNVERIFIED, None, "prepare")
        for form in ("tok", "bpe")
        for split in ("train", "valid", "test")
        for lang in ("en", "de")
    ]
    if with_code:
        out.append(DataEntry(f"{name}/bpe/code", ("train", "valid", "test"), None, Pin.UNVERIFIED, None, "prepare"))
    return tuple(out)


WMT16 = Dataset(
    name="wmt16",
    title="WMT16 En-De as Liu et al. trained on it: Google's preprocessed WMT'16 (Europarl v7 + Common Crawl + "
    "News Commentary v11; Moses tokens; clean 1-80; joint BPE 32,000), valid newstest2013, test newstest2014",
    licence="WMT16 news task terms (research use; each corpus keeps its own licence)",
    citation="Bojar et al. (2016), Findings of WMT16; Ott et al. (2018), Scaling NMT; "
    "Liu, Zhai & Chen (weight tying in Transformer and DynamicConv)",
    entries=_mt_outputs("wmt16"),
    archives=_WMT16_ARCHIVES,
    prepare="wmt16",
    notes=(
        "why this preparation: Liu et al. train 'as Ott et al. (2018)', whose recipe (fairseq "
        "examples/scaling_nmt) reads Google's preprocessed WMT'16 En-De, the output of google/seq2seq's "
        "bin/data/wmt16_en_de.sh (commit 7f485894): that script is what `get wmt16` runs",
        "the archives' checksums are not published: unverified here; `get` prints the sha256 of what it downloaded",
    ),
)

# ------------------------------------------------------------------ WMT14 En-De (fairseq's ConvS2S recipe)
WMT14 = Dataset(
    name="wmt14",
    title="WMT14 En-De as fairseq's prepare-wmt14en2de.sh --icml17 (the ConvS2S paper's data): Europarl v7 + "
    "Common Crawl + News Commentary v9, normalized, Moses tokens (-a), joint BPE 40,000, clean 1-250 ratio 1.5; "
    "valid = every 100th training line, test newstest2014 (full)",
    licence="WMT14 news task terms (research use; each corpus keeps its own licence)",
    citation="Bojar et al. (2014), Findings of WMT14; Gehring et al. (2017), Convolutional Sequence to Sequence "
    "Learning",
    entries=_mt_outputs("wmt14"),
    archives=(
        Source(f"{_STATMT}/wmt13/training-parallel-europarl-v7.tgz"),
        Source(f"{_STATMT}/wmt13/training-parallel-commoncrawl.tgz"),
        Source(f"{_STATMT}/wmt14/training-parallel-nc-v9.tgz"),
        Source("http://data.statmt.org/wmt17/translation-task/dev.tgz", name="wmt17-dev.tgz"),
        Source(f"{_STATMT}/wmt14/test-full.tgz"),
    ),
    prepare="wmt14",
    notes=("the archives' checksums are not published: unverified here",),
)

# ------------------------------------------------------------------ MSCOCO captions, Karpathy split
MSCOCO = Dataset(
    name="mscoco",
    title="MSCOCO 2014 captions with Karpathy's split: train 113,287 images (train + restval), valid 5,000, "
    "test 5,000; captions as IMAGE#k<TAB>caption (images: not fetched)",
    licence="annotations CC BY 4.0 (COCO consortium); images under the Flickr terms of use",
    citation="Lin et al. (2014), Microsoft COCO; Karpathy & Fei-Fei (2015), Deep Visual-Semantic Alignments",
    entries=tuple(
        DataEntry(f"mscoco/{kind}.{split}.txt", (split,), None, Pin.UNVERIFIED, None, "prepare")
        for split in ("train", "valid", "test")
        for kind in ("captions", "images")
    ),
    archives=(Source("https://cs.stanford.edu/people/karpathy/deepimagesent/caption_datasets.zip"),),
    prepare="mscoco",
    notes=(
        "reads dataset_coco.json of Karpathy's caption_datasets.zip (unverified here)",
        "images (~19 GB) are not fetched: unzip COCO's train2014.zip and val2014.zip "
        "(http://images.cocodataset.org/zips/) into $EMBTIE_CACHE/mscoco/images (~/.cache/embtie/mscoco/images; "
        "or a folder DIR set as data.image_dir), then `embtie prepare-captions --dataset mscoco [--images DIR]`",
    ),
)

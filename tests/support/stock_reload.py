"""Load exported folders with transformers alone, in a clean subprocess where embtie cannot be imported, and
return their logits: the proof that an export needs nothing of embtie."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

# Runs in `python -I` (no cwd, no user site) with every sys.path entry that holds embtie removed.
LOADER = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    sys.path = [p for p in sys.path if not (Path(p) / "embtie").exists()]
    try:
        import embtie  # noqa: F401
        sys.exit("embtie is importable in the clean subprocess")
    except ImportError:
        pass
    import torch, transformers
    out = {}
    for job in json.loads(sys.argv[1]):
        cls = transformers.AutoModelForSeq2SeqLM if job["seq2seq"] else transformers.AutoModelForCausalLM
        model = cls.from_pretrained(job["dir"]).eval()
        inputs = {k: torch.tensor(v) for k, v in job["inputs"].items()}
        with torch.no_grad():
            logits = model(**inputs).logits
        tied = model.get_input_embeddings().weight is model.get_output_embeddings().weight
        out[job["dir"]] = {"logits": logits.tolist(), "tied": tied}
    assert "embtie" not in sys.modules
    print(json.dumps(out))
    """
)


def stock_logits(jobs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """{dir: {"logits": nested list, "tied": bool}} for each job {"dir", "seq2seq", "inputs": {name: list}},
    each folder loaded by ``AutoModelFor{CausalLM,Seq2SeqLM}.from_pretrained`` without embtie."""
    proc = subprocess.run(
        [sys.executable, "-I", "-c", LOADER, json.dumps(jobs)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])

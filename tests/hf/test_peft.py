"""peft LoRA on a model patched by embtie.hf.apply: trains, saves, reloads and merge_and_unload()s with the
input embedding and the output layer still one sharing object, and the logits unchanged by the merge; with
``modules_to_save=["embtie_sharing"]`` the trained copy of E is what both sides use (peft #2018, #2777)."""

import pytest
import torch

pytest.importorskip("transformers")
pytest.importorskip("peft", reason="peft is not installed: pip install 'embtie[hf]'")

import peft

import embtie.hf as eh
from embtie.hf.tiny import tiny_model

V = 80
TARGETS = {"gpt2": ["c_attn"], "llama": ["q_proj", "v_proj"]}


def _tie_intact(model) -> bool:
    emb, head = model.get_input_embeddings(), model.get_output_embeddings()
    sharing = eh.sharing_of(model)
    return emb.sharing is sharing and head.sharing is sharing and emb.weight.data_ptr() == sharing.weight.data_ptr()


@pytest.mark.parametrize(
    ("model_type", "strategy", "train_e"),
    [("gpt2", "tied", False), ("llama", "l2norm", True), ("gpt2", "cosine", True)],
)
def test_lora_trains_saves_reloads_and_merges_with_the_tie_intact(model_type, strategy, train_e, tmp_path):
    torch.manual_seed(0)
    base = eh.apply(tiny_model(model_type, V), strategy)
    base.save_pretrained(tmp_path / "base")
    e0 = eh.sharing_of(base).weight.detach().clone()
    config = peft.LoraConfig(
        r=4, lora_alpha=8, target_modules=TARGETS[model_type], modules_to_save=["embtie_sharing"] if train_e else None
    )
    model = peft.get_peft_model(base, config)
    ids = torch.randint(3, V, (4, 16), generator=torch.Generator().manual_seed(1))
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    model.train()
    losses = []
    for _ in range(6):
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    model.eval()
    with torch.no_grad():
        trained = model(input_ids=ids).logits
        # the memory-lean loss and the logits path use the same (trained) sharing object
        h_loss = model(input_ids=ids, labels=ids).loss
        ref_loss = torch.nn.functional.cross_entropy(trained[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1))
    assert torch.allclose(h_loss, ref_loss, atol=1e-5)
    model.save_pretrained(tmp_path / "adapter")

    reloaded = peft.PeftModel.from_pretrained(eh.load(tmp_path / "base"), tmp_path / "adapter").eval()
    with torch.no_grad():
        before = reloaded(input_ids=ids).logits
    assert (before - trained).abs().max().item() <= 1e-6
    merged = reloaded.merge_and_unload()
    assert eh.is_patched(merged) and _tie_intact(merged)
    with torch.no_grad():
        after = merged(input_ids=ids).logits
    assert (after - before).abs().max().item() <= 1e-5
    e1 = eh.sharing_of(merged).weight.detach()
    assert torch.equal(e1, e0) is not train_e  # E trained exactly when it was a module to save

#!/bin/sh
# The agreement table of docs/hf-agreement.md: HF GPT-2 (model.name=hf) vs embtie's GPT of the same shape
# (width 64, 2 layers, 4 heads, learned positions, LayerNorm with biases, GELU, init std 0.02), tied vs
# l2norm, 3 paired seeds, the same PTB words, batches, 300 AdamW steps and learning rate. (The Hugging Face
# Trainer rows of results/hf-agreement came from embtie.hf.trainer_comparison, removed with issue 51: the
# Trainer route is now the executed example of docs/your-loop.md; those rows are kept as committed.)
# About 4 minutes on 2 idle CPU cores (longer on a shared machine). Run from the repository root:
# sh bench/hf_agreement.sh (a fresh run elsewhere: HERE=DIR with results/hf-agreement/gpt2-64x2.json copied in).
set -e
HERE=${HERE:-results/hf-agreement}  # another folder (with gpt2-64x2.json copied in) for a fresh run
BUDGET="data.bptt=64 data.batch_size=16 data.valid_tokens=20000 train.max_steps=300 train.warmup_steps=30
        train.eval_every=300 train.checkpoint_every=0 train.threads=1"
export OMP_NUM_THREADS=1
embtie compare ptb-hf-gpt2-tiny model.hf=$HERE/gpt2-64x2.json $BUDGET \
    --strategies tied,l2norm --seeds 3 --jobs 2 --analysis light --no-progress --out $HERE/hf-gpt2
embtie compare ptb-gpt-tiny model.dim=64 model.n_layers=2 model.n_heads=4 model.max_len=64 \
    model.positions=learned model.norm=layernorm model.bias=true model.zero_init_residual=false $BUDGET \
    --strategies tied,l2norm --seeds 3 --jobs 2 --analysis light --no-progress --out $HERE/embtie-gpt

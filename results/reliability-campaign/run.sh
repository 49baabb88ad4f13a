#!/bin/bash
# Fresh bad-input/fault campaign for issue 30 (designed before reading the catalogue).
# Each case prints: CASE name | rc | last stderr line; a judge column is filled in by hand/heuristics.
cd /work/main
export EMBTIE_DATA=/work/shared/data OMP_NUM_THREADS=1
E=".venv/bin/embtie"
W=/tmp/campaign/w; rm -rf $W; mkdir -p $W
T="train.max_steps=30 train.threads=1 data.train_tokens=20000 data.valid_tokens=2000"
case_() { local name=$1; shift; local out; out=$("$@" 2>&1 >/tmp/campaign/stdout.txt); local rc=$?;
  local nl=$(printf '%s\n' "$out" | grep -c .); local tb=$(printf '%s' "$out" | grep -c "Traceback");
  printf '%-42s rc=%-3s lines=%-3s tb=%s | %s\n' "$name" "$rc" "$nl" "$tb" "$(printf '%s\n' "$out" | grep . | tail -1 | cut -c1-220)"; }

echo "== values"
case_ steps-negative $E train ptb-gpt-tiny --out $W/v1 train.max_steps=-5
case_ train-tokens-zero $E train ptb-gpt-tiny --out $W/v2 data.train_tokens=0
case_ train-tokens-neg $E train ptb-gpt-tiny --out $W/v3 data.train_tokens=-100
case_ out-empty $E train ptb-gpt-tiny --out "" $T
case_ out-space $E train ptb-gpt-tiny --out "  " $T
case_ seeds-zero $E compare --seeds 0 --out $W/v4
case_ seeds-neg $E compare --seeds -2 --out $W/v5
case_ seeds-text $E compare --seeds two --out $W/v6
case_ lr-zero $E train ptb-gpt-tiny --out $W/v7 train.lr=0
case_ lr-text $E train ptb-gpt-tiny --out $W/v8 train.lr=fast
case_ lr-sci $E train ptb-gpt-tiny --out $W/v9 train.lr=1e-3 train.max_steps=2 train.threads=1 data.train_tokens=20000 data.valid_tokens=2000
case_ dropout-2 $E train ptb-gpt-tiny --out $W/v10 model.dropout=2
case_ unknown-key $E train ptb-gpt-tiny --out $W/v11 train.lrr=1e-3
case_ unknown-strategy $E train ptb-gpt-tiny --out $W/v12 sharing.name=tide
case_ vocab-tiny-mt $E train multi30k-transformer-small --out $W/v13 data.vocab_size=10 data.train_pairs=200
case_ vocab-huge-mt $E train multi30k-transformer-small --out $W/v14 data.vocab_size=10000000 data.train_pairs=200
case_ bptt-zero $E train ptb-gpt-tiny --out $W/v15 data.bptt=0
case_ batch-float $E train ptb-gpt-tiny --out $W/v16 data.batch_size=2.5
case_ no-equals $E train ptb-gpt-tiny --out $W/v17 train.lr
case_ yaml-missing $E train /tmp/nope.yaml --out $W/v18
echo "-- folders left by refused commands:"; ls $W
echo "-- corrected command after a refused one"
case_ refused-then-ok-1 $E train ptb-gpt-tiny --out $W/fix train.max_steps=-1
case_ refused-then-ok-2 $E train ptb-gpt-tiny --out $W/fix $T

echo "== two writers"
$E train ptb-gpt-tiny --out $W/race train.max_steps=400 train.threads=1 data.train_tokens=20000 data.valid_tokens=2000 --quiet >/tmp/campaign/race1.log 2>&1 &
P1=$!; sleep 12
case_ second-trainer $E train ptb-gpt-tiny --out $W/race train.max_steps=400 train.threads=1 data.train_tokens=20000 data.valid_tokens=2000
case_ eval-while-training $E eval $W/race
case_ analyze-while-training $E analyze $W/race
kill -9 $P1; wait $P1 2>/dev/null
case_ after-sigkill-resume $E train ptb-gpt-tiny --out $W/race train.max_steps=400 train.threads=1 data.train_tokens=20000 data.valid_tokens=2000 --quiet
echo "-- metrics records duplicated?"; python3 - <<PY
import json
steps=[json.loads(l).get("step") for l in open("$W/race/metrics.jsonl")]
print("records", len(steps), "dup steps", len(steps)-len(set(map(str,steps))))
PY
case_ analyze-after-finish $E analyze $W/race
case_ eval-after-finish $E eval $W/race
grep -l checkpoint $W/race/eval*.json $W/race/analysis/*.json 2>/dev/null | head -3
echo "== wrong name"
printf 'the cat sat on the mat .\nthe dog ran .\n' > $W/mine.txt
case_ eval-test-file $E eval $W/race --test-file $W/mine.txt
ls $W/race/ | tr '\n' ' '; echo
case_ eval-split-test-missing $E eval $W/race --split test
case_ eval-test-file-missing $E eval $W/race --test-file $W/absent.txt
case_ eval-test-file-empty bash -c ": > $W/empty.txt; $E eval $W/race --test-file $W/empty.txt"

echo "== not-finite weights"
cp -r $W/race $W/nan
python3 - <<PY
import glob, os
from safetensors.torch import load_file, save_file
import torch
for f in glob.glob("$W/nan/checkpoints/*/*.safetensors"):
    sd = load_file(f)
    for k,v in sd.items():
        if v.is_floating_point() and v.dim()==2: v.fill_(float("nan")); break
    save_file(sd, f)
print("poisoned", len(glob.glob("$W/nan/checkpoints/*/*.safetensors")))
PY
rm -f $W/nan/eval*.json; rm -rf $W/nan/analysis
case_ eval-nan $E eval $W/nan
case_ analyze-nan $E analyze $W/nan
case_ resume-nan $E train ptb-gpt-tiny --out $W/nan train.max_steps=500 train.threads=1 data.train_tokens=20000 data.valid_tokens=2000
echo "== mismatch"
case_ resume-other-dim $E train ptb-gpt-tiny --out $W/race train.max_steps=500 model.dim=32 train.threads=1 data.train_tokens=20000 data.valid_tokens=2000
case_ resume-other-strategy $E train ptb-gpt-tiny --out $W/race train.max_steps=500 sharing.name=untied train.threads=1 data.train_tokens=20000 data.valid_tokens=2000
cp -r $W/race $W/edited; sed -i 's/^\(\s*dim:\).*/\1 48/' $W/edited/config.yaml
case_ eval-edited-config $E eval $W/edited
echo "== API"
.venv/bin/python /tmp/campaign/api.py

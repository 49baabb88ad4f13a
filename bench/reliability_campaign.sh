#!/bin/bash
# Bad-input / fault campaign (issues 30 and 44), run against this checkout's src/.
# Each case prints: CASE name | rc | stderr lines | traceback | last stderr line, and is judged:
#   FAIL when stderr holds a traceback, more than one non-empty line, the exit status is not 0 or 2 (or not
#   the one the case expects), or a refused command (status 2) left behind an --out folder it created.
# The script exits 1 when any case fails, 0 otherwise. Needs EMBTIE_DATA (default ../shared/data) and,
# for the disk-full class, root (a small tmpfs is mounted; the class is skipped, saying so, otherwise).
# Runs with EMBTIE_PYTHON (default: the python on PATH, e.g. your activated environment's), PYTHONPATH=src.
#   bash bench/reliability_campaign.sh > results/reliability-campaign/out-DATE.txt
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
PY=${EMBTIE_PYTHON:-python}
export PYTHONPATH="$ROOT/src" EMBTIE_DATA=${EMBTIE_DATA:-$(cd "$ROOT/.." && pwd)/shared/data} OMP_NUM_THREADS=1
export EMBTIE_QUIET=1
E="$PY -m embtie"
C=/tmp/campaign-$$; W=$C/w; rm -rf "$C"; mkdir -p "$W"
export EMBTIE_CACHE=$C/cache
T="train.max_steps=30 train.threads=1 data.train_tokens=20000 data.valid_tokens=2000"
TINY="model.dim=16 model.n_heads=2 model.n_layers=1 data.valid_tokens=500 train.eval_batches=1 train.threads=1"
FAILED=0; CASES=0
OUT=""   # set before case_ to the --out folder of a command: a refused start must not leave it behind

case_() {  # case_ NAME EXPECTED(0|2|any) COMMAND...
  local name=$1 want=$2; shift 2
  local existed=0; [ -n "$OUT" ] && [ -e "$OUT" ] && existed=1
  local err; err=$("$@" 2>&1 >"$C/stdout.txt"); local rc=$?
  local nl; nl=$(printf '%s\n' "$err" | grep -c .)
  local tb; tb=$(printf '%s' "$err" | grep -c "Traceback")
  local why=""
  [ "$tb" -gt 0 ] && why="traceback"
  [ "$nl" -gt 1 ] && why="$why ${nl}-stderr-lines"
  [ "$rc" -ne 0 ] && [ "$rc" -ne 2 ] && why="$why status-$rc"
  [ "$want" != any ] && [ "$rc" -ne "$want" ] && why="$why expected-$want"
  [ -n "$OUT" ] && [ "$rc" -eq 2 ] && [ $existed -eq 0 ] && [ -e "$OUT" ] && why="$why left-$OUT"
  local verdict=ok; [ -n "$why" ] && { verdict="FAIL($why )"; FAILED=$((FAILED + 1)); }
  CASES=$((CASES + 1))
  printf '%-46s rc=%-3s lines=%-2s tb=%s %-5s | %s\n' "$name" "$rc" "$nl" "$tb" "$verdict" \
    "$(printf '%s\n' "$err" | grep . | tail -1 | cut -c1-200)"
  OUT=""
}
out() { OUT=$1; }

echo "== values (issue 30)"
out $W/v1;  case_ steps-negative 2 $E train ptb-gpt-tiny --out $W/v1 train.max_steps=-5
out $W/v2;  case_ train-tokens-zero 2 $E train ptb-gpt-tiny --out $W/v2 data.train_tokens=0
out $W/v3;  case_ lr-text 2 $E train ptb-gpt-tiny --out $W/v3 train.lr=fast
out $W/v4;  case_ dropout-2 2 $E train ptb-gpt-tiny --out $W/v4 model.dropout=2
out $W/v5;  case_ unknown-key 2 $E train ptb-gpt-tiny --out $W/v5 train.lrr=1e-3
out $W/v6;  case_ vocab-tiny-mt 2 $E train multi30k-transformer-small --out $W/v6 data.vocab_size=10 data.train_pairs=200
case_ out-empty 2 $E train ptb-gpt-tiny --out "" $T
case_ seeds-zero 2 $E compare --seeds 0 --out $W/c0
case_ yaml-missing 2 $E train /tmp/nope-$$.yaml --out $W/v7
out $W/fix; case_ refused-then-ok-1 2 $E train ptb-gpt-tiny --out $W/fix train.max_steps=-1
out $W/fix; case_ refused-then-ok-2 0 $E train ptb-gpt-tiny --out $W/fix $T $TINY
RUN=$W/fix

echo "== provenance (issue 44)"
cp -r $RUN $W/twin
printf 'ein Hund läuft .\n' > $W/in.de
case_ eval-checkpoint-of-a-twin 2 $E eval $RUN --checkpoint $W/twin/checkpoints/$(cat $W/twin/checkpoints/latest)
case_ eval-checkpoint-dotdot-out 2 $E eval $RUN --checkpoint ../../twin/checkpoints/$(cat $W/twin/checkpoints/latest)
case_ eval-own-checkpoint-as-path 0 $E eval $RUN --checkpoint $RUN/checkpoints/$(cat $RUN/checkpoints/latest)
out $W/p1; case_ label-shadows-baseline 2 $E compare ptb-gpt-tiny --strategies tied=l2norm,untied --out $W/p1
out $W/p2; case_ label-shadows-other 2 $E compare ptb-gpt-tiny --strategies tied,l2norm=untied --out $W/p2
mkdir -p $W/p3/runs/tied; cp -r $RUN $W/p3/runs/tied/seed0
case_ compare-reuses-other-preset 2 $E compare ptb-lstm-small --strategies tied --seeds 1 --out $W/p3
case_ report-only-other-overrides 2 $E compare ptb-gpt-tiny --strategies tied --seeds 1 --out $W/p3 --report-only $T
case_ dry-run-other-overrides 2 $E compare ptb-gpt-tiny --strategies tied --seeds 1 --out $W/p3 --dry-run
case_ dry-run-same-config 0 $E compare ptb-gpt-tiny --strategies tied --seeds 1 --out $W/p3 --dry-run $T $TINY

echo "== disk full (issue 44)"
DISK=$C/disk; mkdir -p $DISK
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=256k tmpfs $DISK 2>/dev/null; then
  out $DISK/run; case_ train-disk-full 2 $E train ptb-gpt-tiny --out $DISK/run $T
  umount $DISK; mount -t tmpfs -o size=6m tmpfs $DISK; cp -r $RUN $DISK/run
  $PY -c "
f = open('$DISK/fill', 'wb', buffering=0)
try:
    while True: f.write(bytes(4096))
except OSError: pass"
  case_ average-disk-full 2 $E average $DISK/run --last 1
  case_ eval-disk-full 2 $E eval $DISK/run
  EMBTIE_CACHE=$DISK/cache; export EMBTIE_CACHE
  out $W/mt-full; case_ subword-cache-disk-full 2 $E train multi30k-transformer-small --out $W/mt-full data.vocab_size=100 data.train_pairs=200
  echo "-- temporaries left on the full disk: $(find $DISK -name '*.tmp*' -o -name '.tmp-*' | wc -l)"
  [ "$(find $DISK -name '*.tmp*' -o -name '.tmp-*' | wc -l)" -eq 0 ] || { echo "FAIL temporaries left"; FAILED=$((FAILED + 1)); }
  rm -f $DISK/fill
  out $W/mt-full; case_ subword-cache-after-freeing 0 $E train multi30k-transformer-small --out $W/mt-full data.vocab_size=100 data.train_pairs=200 train.max_steps=1 model.dim=16 model.ffn_dim=16 model.enc_layers=1 model.dec_layers=1 model.heads=2
  export EMBTIE_CACHE=$C/cache
  umount $DISK
else
  echo "-- skipped: mounting a tmpfs needs root (and mount permission) here"
fi

echo "== numbers in range (issue 44)"
case_ theory-trials-1e308 2 $E theory --trials 1e308
case_ theory-table-too-big 2 $E theory --vocab 5e6 --dim 5e4
case_ plan-gpus-1e308 2 $E plan ptb-gpt-tiny --hardware h100 --gpus 1e308
case_ plan-cores-huge 2 $E plan ptb-gpt-tiny --hardware cpu:99999999
case_ plan-width-1e308 2 $E plan ptb-gpt-tiny --hardware cpu model.dim=1e308
case_ plan-width-1e9 2 $E plan ptb-gpt-tiny --hardware cpu model.dim=1e9
case_ plan-batch-huge 2 $E plan ptb-gpt-tiny --hardware cpu data.batch_size=1e12
case_ compare-seeds-1e6 2 $E compare --seeds 1e6 --out $W/n1
case_ compare-first-seed-1e300 2 $E compare --first-seed 1e300 --out $W/n1
case_ hf-lr-1e308 2 $E hf-compare gpt2-tiny --lr 1e308
case_ hf-steps-1e15 2 $E hf-compare gpt2-tiny --steps 1e15
case_ eval-beam-1e9 2 $E eval $RUN --beam 1e9
case_ translate-lenpen-1e308 2 $E translate $RUN --lenpen 1e308
out $W/n2; case_ train-steps-1e308 2 $E train ptb-gpt-tiny --out $W/n2 train.max_steps=1e308
out $W/n3; case_ train-seed-minus-1e30 2 $E train ptb-gpt-tiny --out $W/n3 seed=-1e30
out $W/n4; case_ train-lr-neg-zero 2 $E train ptb-gpt-tiny --out $W/n4 train.lr=-0
out $W/n5; case_ train-lr-inf 2 $E train ptb-gpt-tiny --out $W/n5 train.lr=inf
out $W/n6; case_ train-warmup-huge 2 $E train ptb-gpt-tiny --out $W/n6 train.warmup_steps=1e100
# issue 54, class 5: every float key has a range (declared, or the integers' magnitude)
out $W/n7; case_ train-lr-2pow63 2 $E train ptb-gpt-tiny --out $W/n7 train.lr=9.223372036854775808e18
out $W/n7; case_ train-decay-1e308 2 $E train ptb-gpt-tiny --out $W/n7 train.weight_decay=1e308
out $W/n7; case_ train-softcap-scale-1e308 2 $E train ptb-gpt-tiny --out $W/n7 sharing.options.softcap=30 \
  sharing.options.softcap_form=sigmoid sharing.options.softcap_scale=1e308
out $W/n7; case_ train-momentum-1 2 $E train ptb-gpt-tiny --out $W/n7 train.optimizer=sgd train.momentum=1

echo "== no silent reinterpretation (issue 44)"
case_ max-seeds-without-sequential 2 $E compare --max-seeds 8 --out $W/r1
case_ seeds-per-round-alone 2 $E compare ptb-gpt-tiny --seeds-per-round 3 --out $W/r1
case_ seed-override-in-compare 2 $E compare ptb-gpt-tiny seed=7 --out $W/r1
case_ margin-twice 2 $E compare --margin valid_ppl=1% --margin valid_ppl=3% --out $W/r1
case_ margin-twice-one-list 2 $E compare --margin vu=1%,vu=2% --out $W/r1
case_ strategies-empty 2 $E compare --strategies '' --out $W/r1
case_ split-empty 2 $E data get ptb --split ''
case_ hf-option-unlisted 2 $E hf-compare gpt2-tiny --strategies tied --option l2norm.bias=true
case_ hf-strategies-empty 2 $E hf-compare gpt2-tiny --strategies ,
printf 'task: lm\nmodel: {name: gpt}\nmodel: {name: lstm}\n' > $W/dup.yaml
out $W/r2; case_ yaml-duplicate-section 2 $E train $W/dup.yaml --out $W/r2
printf 'task: lm\nmodel:\n  name: gpt\n  dim: 8\n  dim: 16\n' > $W/dup2.yaml
out $W/r3; case_ yaml-duplicate-key 2 $E train $W/dup2.yaml --out $W/r3
gzip -dc $EMBTIE_DATA/ptb/ptb.train.txt.gz 2>/dev/null | head -2000 > $W/mine.txt # 2,000 lines at data.vocab_size=2000: only the warning under test fires (8,000 pieces would add the too-large-vocabulary one)
out $W/r4; case_ valid-is-train-warns 0 $E train ptb-gpt-tiny --out $W/r4 data.train_file=$W/mine.txt data.valid_file=$W/mine.txt $TINY train.max_steps=2 data.vocab_size=2000
grep -q "same text as data.train_file" <(PYTHONPATH=$ROOT/src $E train ptb-gpt-tiny --out $W/r4 data.train_file=$W/mine.txt data.valid_file=$W/mine.txt $TINY train.max_steps=2 data.vocab_size=2000 2>&1) \
  && echo "valid-is-train-warning-text                    ok" || { echo "FAIL valid==train warning missing"; FAILED=$((FAILED + 1)); }

echo "== messages (issue 44)"
out $W/m1; case_ config-dev-null 2 $E train /dev/null --out $W/m1
out $W/m1; case_ config-a-folder 2 $E train $W --out $W/m1
case_ eval-test-file-dev-null 2 $E eval $RUN --test-file /dev/null
case_ mirror-not-a-url 2 env EMBTIE_DATA=$C/empty $E data get ptb --mirror mirror.local
mkdir -p $C/empty
case_ verify-nothing-here 2 env EMBTIE_DATA=$C/empty $E data verify ptb
cp -r $RUN $W/garbage; printf '\xff\xfe\x00\x01' > $W/garbage/checkpoints/latest
case_ latest-binary-garbage 0 $E eval $W/garbage
case_ export-a-path 2 $PY -c "
import sys
from embtie.errors import EmbtieError
from embtie.hf import export
try:
    export('$RUN', '$W/exp')
except EmbtieError as e:
    print('embtie: error:', e, file=sys.stderr); sys.exit(2)"

echo "== two writers, stale results, not-finite weights (issue 30)"
$E train ptb-gpt-tiny --out $W/race train.max_steps=400 train.threads=1 data.train_tokens=20000 $TINY >$C/race.log 2>&1 &
P1=$!; for _ in $(seq 60); do [ -f $W/race/checkpoints/latest ] && break; sleep 1; done
case_ second-trainer 2 $E train ptb-gpt-tiny --out $W/race train.max_steps=400 train.threads=1 data.train_tokens=20000 $TINY
case_ eval-while-training 0 $E eval $W/race
kill -9 $P1; wait $P1 2>/dev/null
case_ after-sigkill-resume 0 $E train ptb-gpt-tiny --out $W/race train.max_steps=400 train.threads=1 data.train_tokens=20000 $TINY
case_ resume-other-width 2 $E train ptb-gpt-tiny --out $W/race train.max_steps=400 train.threads=1 data.train_tokens=20000 ${TINY/model.dim=16/model.dim=32}
cp -r $RUN $W/nan
$PY - <<PY
import glob
from safetensors.torch import load_file, save_file
for f in glob.glob("$W/nan/checkpoints/*/model.safetensors"):
    sd = load_file(f)
    for k, v in sd.items():
        if v.is_floating_point() and v.dim() == 2:
            v.fill_(float("nan")); break
    save_file(sd, f)
PY
case_ eval-nan-weights 2 $E eval $W/nan

echo "== issue 54: one case or more per class of its catalogue (classes 1-8 of the issue)"
HT="train.max_steps=4 train.threads=1 data.train_tokens=4000 data.valid_tokens=512 data.bptt=16 data.batch_size=4 train.eval_batches=1"
printf '{"model_type": "gpt2", "n_layer": 1, "n_embd": 16, "n_head": 2, "n_positions": 64}\n' > $W/c54.json
$E train ptb-hf-gpt2-tiny --out $W/hf54 model.hf=$W/c54.json $HT >/dev/null 2>&1
case_ c1-hf-run-evaluated 0 $E eval $W/hf54; cp $C/stdout.txt $C/hf54-before.txt
printf '{"model_type": "gpt2", "n_layer": 2, "n_embd": 16, "n_head": 2, "n_positions": 64}\n' > $W/c54.json
case_ c1-hf-config-edited-after-training 0 $E eval $W/hf54
cmp -s $C/stdout.txt $C/hf54-before.txt || { echo "c1-hf-config-edited-after-training: FAIL(another model evaluated)"; FAILED=$((FAILED + 1)); }
printf 'the cat sat on the mat .\n%.0s' $(seq 50) > $W/t54.txt
case_ c1-test-file 0 $E eval $W/hf54 --test-file $W/t54.txt; cp $C/stdout.txt $C/t54-before.txt
printf 'a dog ran far away from the house .\n%.0s' $(seq 50) > $W/t54.txt
case_ c1-test-file-replaced 0 $E eval $W/hf54 --test-file $W/t54.txt
cmp -s $C/stdout.txt $C/t54-before.txt && { echo "c1-test-file-replaced: FAIL(the old file's result)"; FAILED=$((FAILED + 1)); }
case_ c2-variant-sets-valid-data 2 $E compare ptb-gpt-tiny --strategies tied,x=tied:data.valid_tokens=500 --out $W/r54
case_ c2-variant-sets-ladder-key 2 $E compare ptb-gpt-tiny --ladder model.n_layers=1,2 --strategies tied,x=untied:model.n_layers=3 --out $W/r54
case_ c2-muon-reaches-nothing 2 $E train ptb-hf-gpt2-tiny --out $W/r54 train.optimizer=muon $HT
case_ c3-bleu-on-lm 2 $E compare ptb-gpt-tiny --metric bleu --out $W/r54
case_ c3-bpb-on-translation 2 $E compare multi30k-transformer-small --metric bpb --out $W/r54
case_ c4-ladder-rung-spellings 2 $E compare ptb-gpt-tiny --ladder model.n_layers=1,1.0,01 --out $W/r54
case_ c4-label-dotdot 2 $E compare ptb-gpt-tiny --strategies tied,..=untied --out $W/r54
case_ c4-label-300-chars 2 $E compare ptb-gpt-tiny --strategies tied,$(printf 'a%.0s' $(seq 300))=untied --out $W/r54
case_ c5-extrapolated-rung-2pow31 2 $E compare ptb-gpt-tiny --ladder model.n_layers=1,2 --extrapolate 2147483647 --dry-run --out $W/r54
printf '{"model_type": "gpt2", "n_layer": -1, "n_embd": 16, "n_head": 2, "n_positions": 64}\n' > $W/neg54.json
out $W/r55; case_ c5-hf-config-no-blocks 2 $E train ptb-hf-gpt2-tiny --out $W/r55 model.hf=$W/neg54.json $HT
printf 'the cat sat on the mat %.0s' $(seq 800) > $W/one54.txt
out $W/r56; case_ c6-corpus-on-one-line-bpe 2 $E train ptb-gpt-tiny --out $W/r56 data.train_file=$W/one54.txt \
  data.valid_file=$W/one54.txt data.tokenizer=bpe data.vocab_size=64 ${T/ data.valid_tokens=2000/} $TINY
out $W/r57; case_ c6-compile-trains 0 $E train ptb-gpt-tiny --out $W/r57 train.compile=true train.max_steps=3 \
  train.threads=1 data.train_tokens=20000 data.valid_tokens=500 $TINY
case_ c8-variant-key-twice 2 $E compare ptb-gpt-tiny --strategies tied,x=untied:train.lr=1e-3:train.lr=2e-3 --out $W/r54
case_ c8-theory-strategies-empty 2 $E theory --strategies ''
out $W/r58; case_ c8-vocab-size-with-words 2 $E train ptb-gpt-tiny --out $W/r58 data.vocab_size=5000
case_ c8-data-root-missing 2 env EMBTIE_DATA=/nonexistent-$$ $E data verify

echo "== API (issue 30)"
PYTHONPATH="$ROOT/src:$ROOT" $PY -m bench.reliability_api > $C/api.txt 2>&1 || true
echo "reliability_api.py: $(grep -c . $C/api.txt) lines; $(grep -c 'Traceback' $C/api.txt) tracebacks"

echo
echo "$CASES cases, $FAILED failed"
rm -rf "$C"
[ "$FAILED" -eq 0 ]

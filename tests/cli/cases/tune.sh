# neardup tune: the two target forms, JSON, the SVG plot, a sample's predictions, and misuse.
$NEARDUP tune --low 0.05:0.001 --high 0.5:0.99; echo "exit=$?"
echo "--- threshold and margins, met"
$NEARDUP tune --threshold 0.8 --margin 0.15 --fn-rate 0.01 --fp-rate 0.05 --num-perm 256 | head -7
echo "--- json"
$NEARDUP tune --threshold 0.7 --margin 0.2 --json
echo "--- plot"
$NEARDUP tune --threshold 0.7 --margin 0.2 --plot curve.svg | tail -1
head -c 38 curve.svg; echo; grep -c "<polyline" curve.svg
echo "--- sample"
$NEARDUP tune --threshold 0.5 --margin 0.2 --sample "$DATA/small.jsonl" --shingle 3 | sed -n '/^Sample/,/^$/p'
$NEARDUP tune --threshold 0.5 --margin 0.2 --sample "$DATA/small.jsonl" --shingle 3 --json
echo "--- misuse"
$NEARDUP tune --low 0.5:0.01; echo "exit=$?"
$NEARDUP tune --low 0.5:0.01 --high 0.4:0.99; echo "exit=$?"
$NEARDUP tune --low 0.1 --high 0.5:0.99; echo "exit=$?"
$NEARDUP tune --threshold 0.95 --margin 0.1; echo "exit=$?"
$NEARDUP tune --threshold 0.5 --low 0.1:0.01 --high 0.6:0.9; echo "exit=$?"
$NEARDUP tune --sample missing.jsonl; echo "exit=$?"

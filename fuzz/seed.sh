#!/usr/bin/env bash
# Builds the seed corpora of every fuzz target (fuzz/seeds/<target>/) from
# the examples and the shared real-world data. Run from the repository root
# after `cargo build`; TROUPE_SHARED_DIR defaults to ../shared.
# The minimized corpora that fuzzing grew from these are committed in
# fuzz/regressions/ and replayed by tests/it/fuzz_regressions.rs.
set -euo pipefail
cd "$(dirname "$0")/.."
shared="${TROUPE_SHARED_DIR:-../shared}/data/real"
troupe="${TROUPE:-target/debug/troupe}"
out=fuzz/seeds
rm -rf "$out"
mkdir -p "$out"/{load_json,load_yaml,session,package,template,card,chat,cel,cel_parse}
i=0
put() { i=$((i + 1)); cp "$2" "$out/$1/$(basename "$2")"; }
for f in $(find examples -name '*.json' -size -64k); do put load_json "$f"; done
for f in $(find examples -name '*.yaml' -size -64k); do put load_yaml "$f"; done
for f in $(find examples -name '*.jsonl' -size -64k); do put session "$f"; done
for f in "$shared"/*.json; do put card "$f"; put load_json "$f"; done
for f in "$shared"/*.jsonl; do put chat "$f"; done
# Templates: every string of the example packs that holds a macro.
grep -rhoE '\{\{[^"]*\}\}[^"]*' examples | sort -u | head -200 | split -l 1 - "$out/template/t"
# Conditions: the `when` strings of the example packs.
grep -rhoE 'when: .*' examples | sed 's/^when: //' | sort -u | head -200 | split -l 1 - "$out/cel/c"
cp "$out"/cel/* "$out/cel_parse/"
# Packages: each example pack compiled.
for p in examples/packs/*/; do
  n=$(basename "$p")
  "$troupe" compile "$p" -o "$out/package/$n.troupe" > /dev/null
done
# Small PNG cards (a 1-pixel picture) and a CHARX, from the example bundle's characters.
"$troupe" export card examples/bundles/tiny.bundle.json --character pip -o "$out/card/pip.png" > /dev/null
tmp=$(mktemp -d)
cp "$shared/st_default_CodingSensei.v2.chara.json" "$tmp/card.json"
(cd "$tmp" && python3 -c "import zipfile; z=zipfile.ZipFile('c.charx','w'); z.write('card.json'); z.writestr('assets/icon/images/main.png', b'x'); z.close()")
cp "$tmp/c.charx" "$out/card/sensei.charx"
rm -rf "$tmp"
echo "seeds written to $out"

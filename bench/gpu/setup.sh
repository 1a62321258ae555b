# Sourced by the GPU scripts (check.sh, seed.sh): from the repository root,
# builds fusec and fusec-run when build/ has none, sets `runs` (the first
# argument, default 100) and a scratch directory `work` removed on exit.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
runs=${1:-100}
if [ ! -x build/bin/fusec ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFUSEC_BUILD_TESTS=OFF >/dev/null
  ninja -C build fusec fusec-run
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

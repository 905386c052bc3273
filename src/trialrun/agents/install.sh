#!/usr/bin/env bash
# Install ready-made coding agents into trialrun's agent cache, at the versions in the one pinned list,
# pinned.txt beside this script (each preset's contract reads its package from there): npm packages into
# $DIR/node_modules, each PyPI agent into its own venv $DIR/venvs/<name> (its program linked into $DIR/bin, so that
# PATH gets the agent and not the venv's python). Every pinned agent, or only those named as arguments
# (`install.sh pi codex`): `trialrun agents install NAME` runs this for one, `.ci/install-agents` for all. The
# cache is where `trialrun run` and `trialrun agents` look first (`trialrun.agents._pins.find_program`).
# Prints the folders holding the agents' executables, one a line: $DIR/node_modules/.bin when an npm agent is
# installed, $DIR/bin when a PyPI one is. Idempotent and quiet: when every package asked for is already installed
# at its pinned version it only prints the folders.
# The folder: $TRIALRUN_AGENTS_DIR, default ~/.cache/trialrun-agents; the list: $TRIALRUN_PINNED, default the
# pinned.txt beside this script. Needs node and npm (the npm registry) for npm agents, python3 (>= 3.10, PyPI) for
# PyPI ones.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PINNED="${TRIALRUN_PINNED:-$HERE/pinned.txt}"
DIR="${TRIALRUN_AGENTS_DIR:-$HOME/.cache/trialrun-agents}"
BIN="$DIR/node_modules/.bin"
LINKS="$DIR/bin"

# The pinned list: `name registry package version program [python>=X.Y]` a line, `#` comments; only the agents
# named as arguments when there are some.
WANTED=" $* " KNOWN=()
NPM=() NPM_PROGRAMS=() PYPI=()
number=0
while IFS= read -r line || [ -n "$line" ]; do
  number=$((number + 1))
  line="${line%%#*}"
  read -r name registry package version program python extra <<<"$line" || true
  [ -n "${name:-}" ] || continue
  if [ -z "${program:-}" ] || [ -n "${extra:-}" ] || { [ -n "${python:-}" ] && [ "${python#python>=}" = "$python" ]; }; then
    echo "install-agents: $PINNED:$number: expected \`name registry package version program [python>=X.Y]\`, got: $line" >&2
    exit 1
  fi
  python="${python#python>=}"
  case "$registry" in
    npm | pypi) KNOWN+=("$name") ;;
    *) echo "install-agents: $PINNED:$number: $name: registry '$registry' is not npm or pypi" >&2; exit 1 ;;
  esac
  [ "$#" -eq 0 ] || [ "${WANTED/ $name /}" != "$WANTED" ] || continue
  if [ "$registry" = npm ]; then
    NPM+=("$package@$version") NPM_PROGRAMS+=("$program")
  else
    PYPI+=("$name $package $version $program ${python:-3.10}")
  fi
done <"$PINNED"
for wanted in "$@"; do
  if [[ " ${KNOWN[*]} " != *" $wanted "* ]]; then
    echo "install-agents: no agent '$wanted' in $PINNED (known: ${KNOWN[*]})" >&2
    exit 1
  fi
done

install_npm() {
  # The pinned packages not installed at their pinned version (one node call reads every package.json).
  local missing=()
  if command -v node >/dev/null 2>&1; then
    mapfile -t missing < <(DIR="$DIR" node -e '
      const fs = require("fs"), path = require("path");
      for (const spec of process.argv.slice(1)) {
        const at = spec.lastIndexOf("@"), name = spec.slice(0, at), version = spec.slice(at + 1);
        let found = "";
        try { found = JSON.parse(fs.readFileSync(path.join(process.env.DIR, "node_modules", name, "package.json"))).version; } catch (e) {}
        if (found !== version) console.log(spec);
      }' "${NPM[@]}")
  else
    missing=("${NPM[@]}")
  fi
  if [ "${#missing[@]}" -gt 0 ]; then
    if ! command -v npm >/dev/null 2>&1; then
      echo "install-agents: npm (and node) is not on PATH; install Node.js >= 20 with npm to run the real-agent tests" >&2
      exit 1
    fi
    mkdir -p "$DIR"
    [ -f "$DIR/package.json" ] || echo '{"name": "trialrun-agents", "private": true}' > "$DIR/package.json"
    local log="$DIR/npm-install.log"
    if ! npm install --prefix "$DIR" --save-exact --no-fund --no-audit --loglevel=error "${NPM[@]}" >"$log" 2>&1; then
      echo "install-agents: npm install failed (log: $log):" >&2
      tail -n 20 "$log" >&2
      exit 1
    fi
  fi
  local program
  for program in "${NPM_PROGRAMS[@]}"; do
    if [ ! -x "$BIN/$program" ]; then
      echo "install-agents: $BIN/$program is missing after the install" >&2
      exit 1
    fi
  done
}

# The NEWEST Python at least as new as $1 ("3.12") among python3 and python3.N on PATH and pyenv's versions: the
# first one found could be an early release of its series (kimi-cli 1.51.0 crashes at start on 3.12.1, a TypeError
# in its slots dataclasses, and runs on 3.13.0: seen in a fresh CI install).
python_at_least() {
  local candidate minor version best="" best_version=""
  local -a candidates=(python3)
  for minor in 14 13 12 11 10; do candidates+=("python3.$minor"); done
  candidates+=("${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.*/bin/python3)
  for candidate in "${candidates[@]}"; do
    command -v "$candidate" >/dev/null 2>&1 || continue
    version="$("$candidate" -c 'import sys
wanted = tuple(map(int, sys.argv[1].split(".")))
print("%03d%03d%03d" % sys.version_info[:3] if sys.version_info[:2] >= wanted else "")' "$1" 2>/dev/null)" || continue
    [ -n "$version" ] || continue
    if [ -z "$best" ] || [[ "$version" > "$best_version" ]]; then
      best="$(command -v "$candidate")" best_version="$version"
    fi
  done
  [ -n "$best" ] && echo "$best"
}

install_pypi() {
  # One venv per agent (its own dependencies never meet another's), left alone when it holds the pinned version.
  local entry name package version program minimum python venv found log
  for entry in "${PYPI[@]}"; do
    read -r name package version program minimum <<<"$entry"
    venv="$DIR/venvs/$name"
    found=""
    if [ -x "$venv/bin/python" ]; then
      found="$("$venv/bin/python" -c 'import importlib.metadata as m, sys; print(m.version(sys.argv[1]))' "$package" 2>/dev/null || true)"
    fi
    if [ "$found" != "$version" ]; then
      if ! python="$(python_at_least "$minimum")"; then
        echo "install-agents: no Python >= $minimum here (python3 on PATH, python3.N, pyenv's); it is needed to" \
             "install $name ($package==$version)" >&2
        exit 1
      fi
      mkdir -p "$DIR/venvs"
      log="$DIR/venvs/$name-install.log"
      if ! { [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"; } >"$log" 2>&1 \
          || ! "$venv/bin/python" -m pip install --disable-pip-version-check --no-input -q "$package==$version" >>"$log" 2>&1; then
        echo "install-agents: installing $package==$version into $venv failed (log: $log):" >&2
        tail -n 20 "$log" >&2
        exit 1
      fi
    fi
    if [ ! -x "$venv/bin/$program" ]; then
      echo "install-agents: $venv/bin/$program is missing after the install" >&2
      exit 1
    fi
    mkdir -p "$LINKS"
    [ "$(readlink "$LINKS/$program" 2>/dev/null || true)" = "$venv/bin/$program" ] || ln -sfn "$venv/bin/$program" "$LINKS/$program"
  done
}

if [ "${#NPM[@]}" -gt 0 ]; then install_npm; fi
if [ "${#PYPI[@]}" -gt 0 ]; then install_pypi; fi
if [ "${#NPM[@]}" -gt 0 ]; then echo "$BIN"; fi
if [ "${#PYPI[@]}" -gt 0 ]; then echo "$LINKS"; fi

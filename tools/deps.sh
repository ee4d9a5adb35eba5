#!/bin/sh
# Installs the Debian packages perceive builds and tests with, when any is missing.
set -e
PKGS="build-essential cmake pkg-config libprotobuf-c-dev protobuf-c-compiler libonnx-dev
libonnx-testdata libzip-dev zlib1g-dev libcmocka-dev libdnnl-dev libyaml-dev libcjson-dev libpng-dev
libssl-dev libmicrohttpd-dev libcurl4-openssl-dev libturbojpeg0-dev curl python3-numpy"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
if [ -n "$missing" ]; then
echo "deps: installing$missing" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
fi

# The viewer (web/): three.js, embedded in `perceive serve` at build time, and playwright-core,
# the browser test's driver, from npm (web/package-lock.json pins both); Debian's chromium for
# that test. Optional: without them the build still succeeds (the page says the 3D view is
# unavailable) and the browser test skips with the reason.
for p in node:nodejs npm:npm chromium:chromium; do
  command -v "${p%%:*}" >/dev/null && continue
  p=${p#*:}
  echo "deps: installing $p (optional: the viewer)" >&2
  { [ -n "${updated:-}" ] || $SUDO apt-get update -qq; } && updated=1 &&
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$p" ||
    echo "deps: $p could not be installed: the viewer is built without it / its test skips" >&2
done
# nginx for the scale-out test (tests/serve/cluster_test.py, deploy/local-cluster.sh): optional,
# the test skips without it.
if ! command -v nginx >/dev/null && ! [ -x /usr/sbin/nginx ]; then
  echo "deps: installing nginx-light (optional: the scale-out test)" >&2
  { [ -n "${updated:-}" ] || $SUDO apt-get update -qq; } && updated=1 &&
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nginx-light ||
    echo "deps: nginx-light could not be installed: the scale-out test skips" >&2
fi
WEB="$(dirname "$0")/../web"
if command -v npm >/dev/null && ! [ "$WEB/node_modules/.package-lock.json" -nt "$WEB/package-lock.json" ]; then
  (cd "$WEB" && npm ci --no-audit --no-fund --loglevel=error) ||
    echo "deps: npm ci in web/ failed: the viewer is built without three.js, its test skips" >&2
fi

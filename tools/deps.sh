#!/bin/sh
# Installs the Debian packages perceive builds and tests with, when any is missing.
set -e
PKGS="build-essential cmake pkg-config libprotobuf-c-dev protobuf-c-compiler libonnx-dev
libonnx-testdata libzip-dev zlib1g-dev libcmocka-dev libdnnl-dev libyaml-dev libcjson-dev libpng-dev
libssl-dev libmicrohttpd-dev libcurl4-openssl-dev libturbojpeg0-dev curl"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing" >&2
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
